"""The rendering of rows with long texts from a cache of their ``repr`` is ``str()`` of the rows, exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crmarena_gym.envs import _render
from crmarena_gym.envs._render import LONG_TEXT, MANY_ROWS, python_text, render_head
from crmarena_gym.org import LocalOrg
from crmarena_gym.tools import get_email_messages_by_case_id, get_livechat_transcript_by_case_id
from crmarena_gym.tools import search_knowledge_articles as search_articles


def _real_rows(org_path: Path) -> list[list[dict[str, Any]]]:
    """Results of the tools whose rows carry long texts (articles, chats, emails), on a generated org."""
    org = LocalOrg(org_path)
    cases = [r["CaseId"] for r in org.query("SELECT CaseId FROM LiveChatTranscript LIMIT 5")["records"]]
    cases += [r["ParentId"] for r in org.query("SELECT ParentId FROM EmailMessage LIMIT 5")["records"]]
    results = [search_articles(org, term) for term in ("return", "warranty", "shipping", "gift card")]
    results += [get_livechat_transcript_by_case_id(org, c) for c in cases]
    results += [get_email_messages_by_case_id(org, c) for c in cases]
    return [r for r in results if r]


def test_real_rows_with_long_texts_render_as_str_does(env_org: Path) -> None:
    results = _real_rows(env_org)
    long = [r for r in results if any(type(v) is str and len(v) >= LONG_TEXT for v in r[0].values())]
    assert len(long) >= 5  # the cached path is exercised, not only the plain one
    _render._REPRS.cache_clear()
    for _ in range(2):  # filling the cache, then reading from it
        for rows in results:
            assert python_text(rows) == str(rows)
            copied = [{k: (v.encode().decode() if type(v) is str else v) for k, v in r.items()} for r in rows]
            assert python_text(copied) == str(rows)  # equal texts that are other objects hit the same entries
    assert _render._REPRS  # the long texts were kept


def test_the_cache_is_bounded(env_org: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = _real_rows(env_org)
    longest = max(len(v) for rows in results for r in rows for v in r.values() if type(v) is str)
    monkeypatch.setattr(_render._Reprs, "limit", 2 * LONG_TEXT)
    _render._REPRS.cache_clear()
    for rows in results * 2:
        assert python_text(rows) == str(rows)
        # Forgotten at once past the limit: never more than the limit and the text just added.
        assert _render._REPRS.chars <= 2 * LONG_TEXT + longest
        assert _render._REPRS.chars == sum(map(len, _render._REPRS))
    _render._REPRS.cache_clear()


_LONG = "x" * LONG_TEXT
_TEXTS = st.one_of(
    st.text(max_size=3),
    st.sampled_from([_LONG, _LONG + "'", _LONG + "'\"", _LONG + "\n\\\t\x00é€\U0001f600", "%s" + _LONG]),
)
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _TEXTS, st.lists(_TEXTS, max_size=2))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["Id", "Content", "%d", "'q'", 'say "hi"']), min_size=1, max_size=4, unique=True),
    st.lists(st.lists(_VALUES, min_size=4, max_size=4), min_size=1, max_size=7),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_any_rows_render_as_str_does(
    keys: list[str], values: list[list[Any]], long_first: bool, shuffle: bool, subclass: bool
) -> None:
    rows: list[Any] = [dict(zip(keys, v, strict=False)) for v in values]
    if long_first:  # the first row has a long text: the cached path is taken however few the rows
        rows[0][keys[0]] = _LONG + "'"
    if shuffle and len(rows) > 1 and len(keys) > 1:
        rows[-1] = dict(reversed(rows[-1].items()))  # another key order: rendered by str()
    if subclass:
        rows.append(type("Row", (dict,), {"__repr__": lambda self: "<row>"})(rows[0]))
    assert python_text(rows) == str(rows)
    assert render_head(rows, "python", None) == (str(rows), True)


def test_many_rows_render_as_str_does(env_org: Path) -> None:
    org = LocalOrg(env_org)
    for soql in (
        "SELECT Id, OwnerId, CreatedDate, ClosedDate, AccountId, Subject FROM Case",
        "SELECT Id, Name, ShippingState FROM Account",
        "SELECT Id, Product2Id, UnitPrice, Quantity FROM OrderItem",
    ):
        rows = [{k: v for k, v in r.items() if k != "attributes"} for r in org.query(soql)["records"]]
        assert len(rows) >= MANY_ROWS
        for n in (1, MANY_ROWS - 1, MANY_ROWS, 64, 200, len(rows)):
            assert python_text(rows[:n]) == str(rows[:n])


def test_other_values_render_as_str_does() -> None:
    for value in ([], [[_LONG]], [_LONG, {"a": _LONG}], {"a": _LONG}, _LONG, 3, None, [{}], [{}, {"a": _LONG}]):
        assert python_text(value) == str(value)
