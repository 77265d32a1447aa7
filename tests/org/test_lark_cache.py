"""Parsers saved in the cache directory: loaded only when built from the same grammar, options and lark."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import lark
import pytest

from crmarena_gym.org.soql import _lark_cache, _parser, parse
from crmarena_gym.org.soql._grammar import SOQL_GRAMMAR
from crmarena_gym.org.soql._lark_cache import cached_parser, parser_key

GRAMMAR_A = r"""
start: WORD ("," WORD)*
WORD: /[a-z]+/
%ignore " "
"""
GRAMMAR_B = r"""
start: WORD (";" WORD)*
WORD: /[a-z]+/
%ignore " "
"""
OPTIONS: dict[str, Any] = {"parser": "lalr", "maybe_placeholders": True}


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The grammars built (not loaded) while the test runs."""
    built: list[str] = []
    real = lark.Lark

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, grammar: str, **options: Any) -> None:
            built.append(grammar)
            super().__init__(grammar, **options)

    monkeypatch.setattr(_lark_cache.lark, "Lark", Counting)
    return built


def _files(directory: Path) -> list[Path]:
    return sorted(directory.iterdir())


def test_a_saved_parser_is_loaded_and_parses_as_the_built_one(tmp_path: Path, builds: list[str]) -> None:
    first = cached_parser(GRAMMAR_A, tmp_path, **OPTIONS)
    assert builds == [GRAMMAR_A]
    (saved,) = _files(tmp_path)
    assert saved.name == f"lark-parser-{parser_key(GRAMMAR_A, OPTIONS)[:16]}.pickle"
    again = cached_parser(GRAMMAR_A, tmp_path, **OPTIONS)
    assert builds == [GRAMMAR_A]  # loaded, not built
    assert again.parse("ab, cd ,e") == first.parse("ab, cd ,e")
    with pytest.raises(lark.exceptions.UnexpectedInput):
        again.parse("ab; cd")


def test_another_grammar_options_or_lark_never_load_a_saved_parser(
    tmp_path: Path, builds: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cached_parser(GRAMMAR_A, tmp_path, **OPTIONS)
    keys = {
        parser_key(GRAMMAR_A, OPTIONS),
        parser_key(GRAMMAR_B, OPTIONS),
        parser_key(GRAMMAR_A, {**OPTIONS, "maybe_placeholders": False}),
    }
    with monkeypatch.context() as patch:
        patch.setattr(lark, "__version__", lark.__version__ + ".post1")
        keys.add(parser_key(GRAMMAR_A, OPTIONS))
    assert len(keys) == 4

    # A's tables under B's file name (as an older grammar's file would be): the key inside tells them apart.
    saved = _files(tmp_path)[0]
    b_file = tmp_path / f"lark-parser-{parser_key(GRAMMAR_B, OPTIONS)[:16]}.pickle"
    b_file.write_bytes(saved.read_bytes())
    b = cached_parser(GRAMMAR_B, tmp_path, **OPTIONS)
    assert builds == [GRAMMAR_A, GRAMMAR_B]
    assert b.parse("ab; cd").children[1] == "cd"
    assert cached_parser(GRAMMAR_B, tmp_path, **OPTIONS).parse("x;y")  # replaced by B's own: loaded now
    assert builds == [GRAMMAR_A, GRAMMAR_B]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-200],  # truncated
        lambda data: data[:-5] + bytes(5),  # a changed byte of the tables
        lambda data: data.replace(b"\n", b"\r\n", 1),  # another header
        lambda data: b"",
    ],
)
def test_a_damaged_file_is_built_again_and_replaced(tmp_path: Path, builds: list[str], damage: Any) -> None:
    cached_parser(GRAMMAR_A, tmp_path, **OPTIONS)
    (saved,) = _files(tmp_path)
    good = saved.read_bytes()
    saved.write_bytes(damage(good))
    assert cached_parser(GRAMMAR_A, tmp_path, **OPTIONS).parse("a,b")
    assert builds == [GRAMMAR_A, GRAMMAR_A]
    assert _files(tmp_path) == [saved]  # replaced, no temporary file left
    cached_parser(GRAMMAR_A, tmp_path, **OPTIONS)
    assert builds == [GRAMMAR_A, GRAMMAR_A]


def test_tables_that_pass_the_digest_but_do_not_load_are_built_again(tmp_path: Path, builds: list[str]) -> None:
    key = parser_key(GRAMMAR_A, OPTIONS)
    junk = b"not a pickle"
    path = tmp_path / f"lark-parser-{key[:16]}.pickle"
    digest = hashlib.sha256(junk).hexdigest().encode()
    path.write_bytes(_lark_cache._MAGIC + key.encode() + b"\n" + digest + b"\n" + junk)
    assert cached_parser(GRAMMAR_A, tmp_path, **OPTIONS).parse("a")
    assert builds == [GRAMMAR_A]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs POSIX permissions that bind (not root)")
def test_a_read_only_cache_costs_only_the_build(tmp_path: Path, builds: list[str]) -> None:
    tmp_path.chmod(0o500)
    try:
        assert cached_parser(GRAMMAR_A, tmp_path, **OPTIONS).parse("a")
        assert _files(tmp_path) == []
    finally:
        tmp_path.chmod(0o700)


def test_a_cache_path_that_is_a_file_costs_only_the_build(tmp_path: Path, builds: list[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert cached_parser(GRAMMAR_A, blocker, **OPTIONS).parse("a")
    assert builds == [GRAMMAR_A]
    assert _files(tmp_path) == [blocker]


def test_the_soql_parser_is_saved_in_the_cache_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(tmp_path))
    monkeypatch.setattr(_parser, "_lark", _parser._lark.__wrapped__)  # no parser kept from earlier tests
    options = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": True}
    query = "SELECT Id, (SELECT Id FROM Cases) FROM Account a WHERE Name LIKE 'A%' ORDER BY Name LIMIT 3"
    built = parse(query)
    assert [p.name for p in _files(tmp_path)] == [f"lark-parser-{parser_key(SOQL_GRAMMAR, options)[:16]}.pickle"]
    assert parse(query) == built  # from the saved tables
    with pytest.raises(Exception, match="unexpected token: 'WHERE'"):
        parse("SELECT Id FROM Case LIMIT 5 WHERE Name = 'x'")
