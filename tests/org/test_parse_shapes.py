"""Parse trees reused by query shape (issue 17 item 1): a query whose string, date and datetime literals
differ from an earlier one's parses exactly as it would fresh, errors and their positions included."""

from __future__ import annotations

import random
import re

import pytest

from crmarena_gym.org.soql import _parser
from crmarena_gym.org.soql._errors import SoqlError

BASES = [
    "SELECT Id FROM Case WHERE Id = '500Ws000001i9uIIAQ'",
    "SELECT Id, Subject FROM Case WHERE OwnerId = '005Ws000001' AND CreatedDate >= 2023-01-01T00:00:00Z "
    "AND CreatedDate < 2023-04-01T00:00:00Z ORDER BY CreatedDate DESC LIMIT 5",
    "SELECT NewValue__c, COUNT(Id) cnt FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND "
    "CreatedDate >= 2022-10-01T00:00:00.000+0000 GROUP BY NewValue__c",
    "SELECT Id FROM Knowledge__kav WHERE Id IN ('ka0a', 'ka0b', 'ka0c')",
    "SELECT Id, Name FROM Account WHERE Name LIKE 'A\\_%' AND CreatedDate > 2020-01-01",
    "SELECT Id FROM Order WHERE EffectiveDate = 2021-06-15 AND Status != 'Draft'",
    "SELECT Id, (SELECT Id FROM EmailMessages WHERE Subject = 'Re: hi') FROM Case WHERE Subject = 'x'",
    "SELECT Id\nFROM Case\nWHERE Subject = 'two\\nlines' AND Status IN ('New', 'Closed')\nLIMIT 3",
    "SELECT Id FROM Case WHERE Subject = 'it\\'s' AND Foo__c = 'after the literal'",
]
REPLACEMENTS = {
    "STRING": [
        "''",
        "'a'",
        "'a much longer value than before, with spaces'",
        "'\\u00e9t\\u00e9'",
        "'é'",
        "'bad \\q escape'",
        "'\\ud83d'",
        "'quote \\' inside'",
        "'%\\_x'",
    ],
    "DATETIME": [
        "2024-02-29T23:59:59Z",
        "2023-02-30T00:00:00Z",
        "2023-01-01T00:00:00.123456+05:30",
        "2023-01-01t00:00:00z",
        "9999-12-31T23:59:59-0800",
    ],
    "DATE": ["2024-02-29", "2023-02-30", "0001-01-01", "2023-13-01"],
}


def outcome(text: str) -> object:
    try:
        return _parser.parse(text)
    except SoqlError as exc:
        return ("error", exc.code, str(exc))


def fresh(text: str) -> object:
    _parser._SHAPES.clear()
    return outcome(text)


def variants(base: str, rng: random.Random, n: int) -> list[str]:
    literals = list(_parser._LITERALS.finditer(base))
    out = []
    for _ in range(n):
        parts, last = [], 0
        for m in literals:
            parts += [base[last : m.start()], rng.choice(REPLACEMENTS[m.lastgroup or ""] + [m.group()])]
            last = m.end()
        out.append("".join([*parts, base[last:]]))
    return out


@pytest.mark.parametrize("base", BASES)
def test_a_query_of_a_known_shape_parses_as_it_would_fresh(base: str) -> None:
    rng = random.Random(len(base))
    for text in variants(base, rng, 25):
        expected = fresh(text)
        _parser._SHAPES.clear()
        outcome(base)  # the shape's tree comes from the base query
        assert _parser._scan(text)[0] == _parser._scan(base)[0]
        assert outcome(text) == expected, text


def test_shapes_are_reused_and_lookalikes_are_not(monkeypatch: pytest.MonkeyPatch) -> None:
    _parser._SHAPES.clear()
    outcome(BASES[1])
    (shape,) = _parser._SHAPES
    assert _parser._SHAPES[shape] is not None
    real = _parser._lark()
    parsed: list[str] = []

    class Counting:
        def parse(self, text: str) -> object:
            parsed.append(text)
            return real.parse(text)

    monkeypatch.setattr(_parser, "_lark", lambda: Counting())
    other = BASES[1].replace("005Ws000001", "005Ws0000099").replace("2023-01-01T00:00:00Z", "2024-07-01T00:00:00Z")
    assert outcome(other) == fresh(other)
    assert parsed == [other]  # only the fresh parse: the first one reused the shape's tree
    monkeypatch.undo()
    # Digits that lark reads as a number, not a date: a syntax error, never kept.
    odd = "SELECT Id FROM Case LIMIT 12023-01-01"
    assert fresh(odd) == outcome(odd)
    assert _parser._scan(odd)[0] not in _parser._SHAPES
    # A shape whose literals were not lark's tokens (marked None) is parsed fresh every time.
    marked = "SELECT Id FROM Case WHERE Subject = 'b'"
    _parser._SHAPES[_parser._scan(marked)[0]] = None
    assert outcome(marked) == fresh(marked)


def test_error_positions_follow_the_new_literals() -> None:
    _parser._SHAPES.clear()
    outcome("SELECT Id FROM Case WHERE Subject = 'a' AND CreatedDate > 2023-02-01 AND")
    longer = "SELECT Id FROM Case WHERE Subject = 'a much longer subject' AND CreatedDate > 2023-02-30 AND"
    got = outcome(longer)
    assert got == fresh(longer)
    assert isinstance(got, tuple) and "2023-02-30" in got[2]
    caret = re.search(r"\n( *)\^", got[2])
    assert caret is not None
