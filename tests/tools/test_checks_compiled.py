"""Argument checks are built once per type hint, and our own callers' arguments skip them."""

from __future__ import annotations

from typing import Any

import pytest

from crmarena_gym.tools import toolset
from crmarena_gym.tools._signature import _BadValue, _check, _validator


@pytest.mark.parametrize(
    ("value", "hint", "expected"),
    [
        (3.0, int, 3),
        ([1, 2.0], list[int], [1, 2]),
        ({"a": [1.0]}, dict[str, list[int]], {"a": [1]}),
        (None, int | None, None),
        ("Q1", int | str, "Q1"),
        ([{"x": object}], list[dict[str, Any]], [{"x": object}]),
    ],
)
def test_values_that_fit_are_returned_normalised(value: Any, hint: Any, expected: Any) -> None:
    assert _check(value, hint, "argument 'a'") == expected


@pytest.mark.parametrize(
    ("value", "hint", "message"),
    [
        (True, int, "argument 'a' must be an integer, got bool True"),
        ([1, "2"], list[int], "argument 'a' item 1 must be an integer, got str '2'"),
        ({"k": [1, None]}, dict[str, list[int]], "argument 'a' value for key 'k' item 1 must be an integer, got null"),
        ({1: 2}, dict[str, int], "argument 'a' keys must be strings, got int 1"),
        (float("nan"), float, "argument 'a' must be a finite number, got nan"),
        (None, str, "argument 'a' must be a string, got null"),
    ],
)
def test_values_that_do_not_fit_say_where_and_what(value: Any, hint: Any, message: str) -> None:
    with pytest.raises(_BadValue) as err:
        _check(value, hint, "argument 'a'")
    assert err.value.args[0] == message


def test_a_hint_is_compiled_once() -> None:
    assert _validator(list[dict[str, Any]]) is _validator(list[dict[str, Any]])


def test_trusted_calls_skip_the_check_and_answer_the_same() -> None:
    tools = toolset("functions")
    args = {"period_name": "Q1", "year": 2022}
    assert (
        tools.call("get_period", args, trusted=True)
        == tools.call("get_period", args)
        == {
            "start_date": "2022-01-01T00:00:00Z",
            "end_date": "2022-04-01T00:00:00Z",
        }
    )
    # A model's ill-typed value is refused with the argument named.
    assert tools.call("get_period", {"period_name": "Q1", "year": "2022"}).startswith("Error: get_period() argument")
