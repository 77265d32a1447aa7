"""The SOQL grammar's factored form against the flat form it replaces.

``select`` lists its optional clauses as inlined rules of their own (``_where: [where_clause]``) so that
lark does not expand them into 1,024 alternatives. The flat form (the same clauses written as ``[...]``
in ``select`` itself) is rebuilt here from the grammar's text and is the reference: at every prefix
the two parsers must accept the same tokens, since lark's contextual lexer lexes each token with the
terminals the parser's state accepts (a keyword is a NAME where no keyword is expected), and refuse the
same ones, so that errors name the same token.
"""

from __future__ import annotations

import random
import re

import lark
import pytest
from lark import Token

from crmarena_gym.org.soql._grammar import SOQL_GRAMMAR
from crmarena_gym.org.soql._parser import _lark

#: ``_name: [body]``: an optional clause of ``select`` as a rule of its own.
_OPTIONAL_RULE = re.compile(r"^(_\w+): (\[\w+\])\n", re.MULTILINE)


def _flat_grammar() -> str:
    """The grammar with each optional clause written back into ``select`` as ``[...]``."""
    rules = dict(_OPTIONAL_RULE.findall(SOQL_GRAMMAR))
    assert len(rules) == 10, rules
    text = _OPTIONAL_RULE.sub("", SOQL_GRAMMAR)
    head, select, tail = re.split(r"^(select: .*)$", text, maxsplit=1, flags=re.MULTILINE)
    select = re.sub(r"\b_\w+\b", lambda m: rules[m.group()], select)
    return head + select + tail


@pytest.fixture(scope="module")
def parsers() -> tuple[lark.Lark, lark.Lark]:
    flat = lark.Lark(_flat_grammar(), parser="lalr", propagate_positions=True, maybe_placeholders=True)
    return flat, _lark()


def test_optional_clauses_do_not_multiply(parsers: tuple[lark.Lark, lark.Lark]) -> None:
    flat, factored = parsers
    assert len(flat.rules) > 1024  # ten optional parts in one rule: 2**10 alternatives
    assert len(factored.rules) < 200


def _terminals(ip: lark.parsers.lalr_interactive_parser.InteractiveParser) -> frozenset[str]:
    return frozenset(name for name in ip.choices() if name.isupper() or name == "$END")


def _feeds(ip: lark.parsers.lalr_interactive_parser.InteractiveParser, terminal: str) -> bool:
    try:
        if terminal == "$END":
            ip.feed_eof()
        else:
            ip.feed_token(Token(terminal, "x"))
    except lark.exceptions.UnexpectedInput:
        return False
    return True


def test_every_prefix_accepts_and_refuses_the_same_tokens(parsers: tuple[lark.Lark, lark.Lark]) -> None:
    flat, factored = parsers
    rng = random.Random(20240932)
    prefixes = 0
    for _ in range(120):
        a, b = flat.parse_interactive(""), factored.parse_interactive("")
        path: list[str] = []
        for depth in range(rng.randint(3, 40)):
            accepted = _terminals(a)
            assert _terminals(b) == accepted, path
            valid = []
            for terminal in sorted(accepted):
                fed = _feeds(a.copy(), terminal)
                assert _feeds(b.copy(), terminal) == fed, [*path, terminal]
                if fed and terminal != "$END":
                    valid.append(terminal)
            prefixes += 1
            if not valid:
                break
            terminal = "RPAR" if depth > 25 and "RPAR" in valid else rng.choice(valid)
            path.append(terminal)
            assert _feeds(a, terminal) and _feeds(b, terminal)
    assert prefixes > 1500


def _plain(node: object) -> object:
    """A tree as nested tuples: rule names, and each token's type, text and position."""
    if isinstance(node, lark.Tree):
        return (str(node.data), tuple(_plain(child) for child in node.children))
    if isinstance(node, Token):
        return (node.type, str(node), node.start_pos)
    return node


@pytest.mark.parametrize(
    "text",
    [
        "SELECT Id FROM Case WHERE Status = 'New' LIMIT 5",
        "SELECT Id FROM Case c USING SCOPE mine WHERE c.Status = 'New' WITH SECURITY_ENFORCED GROUP BY Status "
        "HAVING COUNT(Id) > 1 ORDER BY Status DESC NULLS LAST LIMIT 5 OFFSET 2 FOR VIEW",
        "SELECT Id FROM Case LIMIT 5 WHERE Status = 'New'",
        "SELECT Id FROM Case ORDER BY Id GROUP BY Id",
        "SELECT Id FROM Case OFFSET 1 LIMIT 2",
        "SELECT Id FROM Case FOR VIEW LIMIT 1",
        "SELECT Id FROM Case WITH x USING SCOPE y",
        "SELECT Id FROM Case c d",
        "SELECT Id FROM Case WHERE",
        "SELECT Id FROM Case Limit",
        "SELECT Id FROM Case Where Order = 1",
        "SELECT Id FROM Case ORDER BY Order LIMIT 1",
        "SELECT Id, (SELECT Id FROM Cases LIMIT 1 WHERE x = 1) FROM Account",
    ],
)
def test_clause_order_and_keywords_parse_as_before(parsers: tuple[lark.Lark, lark.Lark], text: str) -> None:
    flat, factored = parsers

    def outcome(parser: lark.Lark) -> tuple[object, ...]:
        try:
            return ("tree", _plain(parser.parse(text)))
        except lark.exceptions.UnexpectedInput as exc:
            token = getattr(exc, "token", None)
            return ("error", type(exc).__name__, str(token), str(getattr(exc, "pos_in_stream", None)))

    assert outcome(factored) == outcome(flat)
