from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crmarena_gym.envs import parse_action
from crmarena_gym.envs._actions import _json_value, _parse_text
from crmarena_gym.tools import ToolCallText


@pytest.mark.parametrize(
    ("reply", "kind", "text", "language"),
    [
        ("execute SELECT Id FROM Case", "query", "SELECT Id FROM Case", "soql"),
        ("EXECUTE: SELECT Id FROM Case", "query", "SELECT Id FROM Case", "soql"),
        ("submit 005Ws000001xSR9IAM", "submit", "005Ws000001xSR9IAM", None),
        ("submit   None  ", "submit", "None", None),
        ("<execute>SELECT Id FROM Case</execute>", "query", "SELECT Id FROM Case", "soql"),
        (
            "Thought: look.\n<execute>\n```sql\nSELECT Id FROM Case\n```\n</execute>",
            "query",
            "SELECT Id FROM Case",
            "soql",
        ),
        ("<execute>FIND {shoe} IN ALL FIELDS</execute>", "query", "FIND {shoe} IN ALL FIELDS", "sosl"),
        ("<execute>find {shoe}</execute>", "query", "find {shoe}", "soql"),  # FIND is case-sensitive
        ("<submit>March</submit>", "submit", "March", None),
        ("I am done. <respond> OR </respond>", "submit", "OR", None),
        ("<submit>X</submit> wait <execute>SELECT Id FROM User</execute>", "query", "SELECT Id FROM User", "soql"),
        ("<execute>SELECT Id FROM Case", "query", "SELECT Id FROM Case", "soql"),  # unclosed tag at the end
        # A fence on one line has no language tag: its first word is content.
        ("<submit>```005Ws000001iZUFIA2```</submit>", "submit", "005Ws000001iZUFIA2", None),
        ("execute ```SELECT Id FROM Case```", "query", "SELECT Id FROM Case", "soql"),
        ("<execute>```FIND {x} RETURNING Case```</execute>", "query", "FIND {x} RETURNING Case", "sosl"),
        ("<execute>```soql\nSELECT Id FROM Case\n```</execute>", "query", "SELECT Id FROM Case", "soql"),
    ],
)
def test_text_forms(reply: str, kind: str, text: str, language: str | None) -> None:
    action = parse_action(reply)
    assert (action.kind, action.text, action.language) == (kind, text, language)


def test_function_calls_only_when_allowed() -> None:
    call = parse_action(
        'execute get_cases({"start_date": "2021-01-01T00:00:00Z", "statuses": ["Closed"]})', functions=True
    )
    assert (call.kind, call.name, call.arguments) == (
        "call",
        "get_cases",
        {"start_date": "2021-01-01T00:00:00Z", "statuses": ["Closed"]},
    )
    assert parse_action("<execute>get_issues()</execute>", functions=True).name == "get_issues"
    tool = parse_action(
        '{"name": "find_id_with_max_value", "arguments": "{\\"values_by_id\\": {\\"a\\": 1}}"}', functions=True
    )
    assert (tool.kind, tool.arguments) == ("call", {"values_by_id": {"a": 1}})
    # Without functions the same text is a query, which the engine will refuse.
    assert parse_action("execute get_issues()").kind == "query"
    # A SOQL query is never read as a call, even in the flexible toolset.
    assert parse_action("execute SELECT COUNT(Id) FROM Case", functions=True).kind == "query"


@pytest.mark.parametrize(
    ("reply", "functions", "error"),
    [
        ("I think the answer is March.", False, "no action found"),
        ("execute", False, "needs a query"),
        ("execute get_cases({'start_date': 1})", True, "must be one JSON object"),
        ("execute get_cases([1, 2])", True, "must be a JSON object"),
        ('{"name": "x", "arguments": [1]}', True, "must be a JSON object"),
        ('{"arguments": {}}', True, '"name"'),
        ("{not json", True, "not valid JSON"),
    ],
)
def test_invalid_actions_say_why(reply: str, functions: bool, error: str) -> None:
    action = parse_action(reply, functions=functions)
    assert action.kind == "invalid"
    assert error in (action.error or "")


def test_non_text_is_invalid_not_an_exception() -> None:
    assert parse_action(None).kind == "invalid"  # type: ignore[arg-type]


@given(st.text(max_size=300), st.booleans())
def test_any_text_parses_without_raising(text: str, functions: bool) -> None:
    action = parse_action(text, functions=functions)
    assert action.kind in ("query", "call", "submit", "invalid")
    assert (action.kind == "invalid") == (action.error is not None)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(
    st.sampled_from(["execute ", "execute\t ", "execute  ", "Execute ", "execute:", "execute", ""]),
    st.sampled_from(["get_cases", "select", "FIND", "Select_x", "_x1", "find2", "get cases", "1x"]),
    st.one_of(
        st.dictionaries(st.text(max_size=6), _JSON, max_size=3).map(json.dumps),
        st.sampled_from(["", "{", "{}}", "[1]", '{"a": "<execute>SELECT Id FROM Case</execute>"}', ' {"a": 1} ']),
        st.text(max_size=12),
    ),
    st.sampled_from(["", " ", ";", "\n", ")"]),
)
def test_the_quick_call_form_reads_as_the_general_path_does(prefix: str, name: str, inner: str, tail: str) -> None:
    text = f"{prefix}{name}({inner}){tail}"
    for functions in (True, False):
        assert parse_action(text, functions=functions) == _parse_text(text, functions)


def _loaded(read: Any, text: str) -> tuple[str, str]:
    try:
        return "ok", repr(read(text))
    except (ValueError, RecursionError) as err:
        return type(err).__name__, str(err)


@given(
    st.one_of(
        st.dictionaries(st.text(max_size=4), _JSON, max_size=3).map(json.dumps),
        st.text(alphabet='{}[]":,0123456789.eE+- abtrunlfsNI\\', max_size=20).map(lambda t: "{" + t + "}"),
    )
)
def test_a_json_object_is_read_as_json_loads_reads_it(text: str) -> None:
    assert _loaded(_json_value, text) == _loaded(json.loads, text)


def test_json_loads_errors_are_kept_word_for_word() -> None:
    for text in ('{"a": 1}{}', '{"a": 1, }', '{"a": NaN}', '{"a": "\\ud800"}', "{" * 5000 + "}" * 5000):
        assert _loaded(_json_value, text) == _loaded(json.loads, text)


def _typed(value: Any) -> Any:
    """A value with the type of every part spelled out (so that 1 and 1.0, or a tuple and a list, differ)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, value)


@pytest.mark.parametrize(
    ("name", "arguments", "carried"),
    [
        ("get_issues", {}, True),
        ("get_cases", {"start_date": "2023-01-01T00:00:00Z", "statuses": ["Closed", "New"], "agent_ids": None}, True),
        ("submit", {"content": 'Ünïcode \u2014 and "quotes" and \\ backslash'}, True),
        ("submit", {"content": "<submit>tags inside</submit>"}, True),  # read as the text is read: by its tags
        ("calc", {"values": [1, 2.5, True, None, {"nested": ["x"]}]}, True),
        ("calc", {"pair": (1, 2)}, False),  # a tuple: the text decodes to a list
        ("calc", {"big": 2**80, "neg": -3}, True),
        ("calc", {"nan": float("nan")}, False),
        ("calc", {"key": {1: "x"}}, False),  # a number key: the text decodes to "1"
        (7, {}, False),
    ],
)
def test_a_tool_call_text_reads_as_its_text_reads(name: Any, arguments: dict[str, Any], carried: bool) -> None:
    call = ToolCallText(name, arguments)
    text = str(call)
    assert text == json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    assert (call.arguments is not None) is carried
    for functions in (True, False):
        fast, plain = parse_action(call, functions=functions), parse_action(text, functions=functions)
        assert fast == plain and _typed(fast.arguments) == _typed(plain.arguments)
    assert type(pickle.loads(pickle.dumps(call))) is str and pickle.loads(pickle.dumps(call)) == text
    assert type(copy.deepcopy(call)) is str
    assert json.loads(json.dumps({"action": call}))["action"] == text
