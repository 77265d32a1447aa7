"""The schema generator and the argument checker, on small functions written for the tests."""

from __future__ import annotations

from typing import Any, Literal, Optional

import pytest

from crmarena_gym.tools import check_arguments, function_schema, json_type, parse_docstring


def sample(org: object, name: str, count: int, ratio: float = 1.0, tags: list[str] | None = None) -> None:
    """Do a sample thing
    over two lines.

    A second paragraph that is not part of the description.

    Args:
        org: The hidden first argument.
        name: The name
            to use.
        count (int): How many.
        ratio: A ratio.
        tags: Labels.

    Returns:
        Nothing.

    Example:
        >>> 1 + 1
        2
    """


def test_parse_docstring_summary_and_args() -> None:
    summary, args = parse_docstring(sample.__doc__)
    assert summary == "Do a sample thing over two lines."
    assert args == {
        "org": "The hidden first argument.",
        "name": "The name to use.",
        "count": "How many.",
        "ratio": "A ratio.",
        "tags": "Labels.",
    }


def test_parse_docstring_empty_and_without_args() -> None:
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("Only a line.") == ("Only a line.", {})
    assert parse_docstring("Summary.\n\nReturns:\n    x: not an argument.\n") == ("Summary.", {})


def test_parse_docstring_rejects_an_unreadable_args_line() -> None:
    with pytest.raises(ValueError, match="'not an entry'"):
        parse_docstring("Summary.\n\nArgs:\n    a: fine.\nnot an entry\n")


def test_function_schema_skips_the_org_and_marks_required() -> None:
    schema = function_schema(sample, skip_first=True)
    assert schema == {
        "type": "function",
        "function": {
            "name": "sample",
            "description": "Do a sample thing over two lines.",
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The name to use."},
                    "count": {"type": "integer", "description": "How many."},
                    "ratio": {"type": "number", "description": "A ratio."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels."},
                },
                "required": ["name", "count"],
                "additionalProperties": False,
            },
        },
    }


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (Any, {}),
        (list, {"type": "array"}),
        (dict, {"type": "object"}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (dict[str, Any], {"type": "object"}),
        (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (list[dict[str, Any]], {"type": "array", "items": {"type": "object"}}),
        (Optional[str], {"type": "string"}),  # noqa: UP045 - the typing spelling must work too
        (int | None, {"type": "integer"}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
        (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
    ],
)
def test_json_type(hint: Any, expected: dict[str, Any]) -> None:
    assert json_type(hint) == expected


@pytest.mark.parametrize("hint", [set[int], tuple[int, int], dict[int, str], Literal["a", 1], bytes])
def test_json_type_refuses_types_without_a_json_form(hint: Any) -> None:
    with pytest.raises(TypeError):
        json_type(hint)


def _no_hint(x) -> None:  # type: ignore[no-untyped-def]
    """Summary.

    Args:
        x: Something.
    """


def _undocumented(x: int) -> None:
    """Summary."""


def _extra_doc(x: int) -> None:
    """Summary.

    Args:
        x: Something.
        y: Not a parameter.
    """


def _no_summary(x: int) -> None:
    """
    Args:
        x: Something.
    """


def _varargs(*xs: int) -> None:
    """Summary.

    Args:
        xs: Numbers.
    """


@pytest.mark.parametrize(
    ("fn", "error", "match"),
    [
        (_no_hint, TypeError, "'x' has no type hint"),
        (_undocumented, ValueError, "'x' is not described"),
        (_extra_doc, ValueError, r"unknown parameters \['y'\]"),
        (_no_summary, ValueError, "first paragraph"),
        (_varargs, TypeError, r"\*args"),
    ],
)
def test_function_schema_refuses_inconsistent_functions(fn: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        function_schema(fn)


def typed(
    s: str,
    i: int,
    f: float,
    b: bool,
    items: list[dict[str, Any]],
    scores: dict[str, int],
    mode: Literal["x", "y"] = "x",
    maybe: str | None = None,
    either: int | str = 0,
    anything: Any = None,
) -> None:
    """Take every kind of argument.

    Args:
        s: A string.
        i: An integer.
        f: A number.
        b: A flag.
        items: Records.
        scores: Counts by key.
        mode: A mode.
        maybe: Perhaps a string.
        either: A number or a string.
        anything: Whatever.
    """


GOOD = {"s": "a", "i": 3, "f": 1.5, "b": True, "items": [{"k": 1}], "scores": {"a": 1}}


def test_check_arguments_accepts_good_values_and_normalises_integral_floats() -> None:
    assert check_arguments(typed, GOOD) == GOOD
    out = check_arguments(typed, {**GOOD, "i": 4.0, "f": 2, "scores": {"a": 2.0}, "maybe": None, "either": "z"})
    assert out == {**GOOD, "i": 4, "f": 2, "scores": {"a": 2}, "maybe": None, "either": "z"}
    assert type(out["i"]) is int and type(out["scores"]["a"]) is int  # type: ignore[index]
    assert check_arguments(typed, {**GOOD, "anything": [1, None]})["anything"] == [1, None]  # type: ignore[index]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([1, 2], "Error: the arguments of typed() must be a JSON object, got list [1, 2]"),
        ({**GOOD, "zz": 1}, "Error: typed() got an unknown argument 'zz'; it takes s, i, f, b, items, scores, mode,"),
        ({k: v for k, v in GOOD.items() if k != "i"}, "Error: typed() is missing the required argument 'i'"),
        ({**GOOD, "s": 5}, "Error: typed() argument 's' must be a string, got int 5"),
        ({**GOOD, "s": None}, "Error: typed() argument 's' must be a string, got null"),
        ({**GOOD, "i": "3"}, "Error: typed() argument 'i' must be an integer, got str '3'"),
        ({**GOOD, "i": 2.5}, "Error: typed() argument 'i' must be an integer, got float 2.5"),
        ({**GOOD, "i": True}, "Error: typed() argument 'i' must be an integer, got bool True"),
        ({**GOOD, "f": "1.5"}, "Error: typed() argument 'f' must be a number, got str '1.5'"),
        ({**GOOD, "f": False}, "Error: typed() argument 'f' must be a number, got bool False"),
        ({**GOOD, "b": 1}, "Error: typed() argument 'b' must be a boolean, got int 1"),
        ({**GOOD, "items": {"k": 1}}, "Error: typed() argument 'items' must be a list, got dict {'k': 1}"),
        (
            {**GOOD, "items": [{"k": 1}, "x"]},
            "Error: typed() argument 'items' item 1 must be an object (a dict), got str 'x'",
        ),
        ({**GOOD, "scores": ["a"]}, "Error: typed() argument 'scores' must be an object (a dict), got list ['a']"),
        (
            {**GOOD, "scores": {"a": "1"}},
            "Error: typed() argument 'scores' value for key 'a' must be an integer, got str '1'",
        ),
        ({**GOOD, "scores": {1: 1}}, "Error: typed() argument 'scores' keys must be strings, got int 1"),
        ({**GOOD, "mode": "z"}, "Error: typed() argument 'mode' must be one of 'x', 'y', got str 'z'"),
        ({**GOOD, "maybe": 3}, "Error: typed() argument 'maybe' must be a string, got int 3"),
        ({**GOOD, "either": 1.5}, "Error: typed() argument 'either' must be an integer or a string, got float 1.5"),
    ],
)
def test_check_arguments_errors_name_the_argument_and_quote_the_value(arguments: Any, message: str) -> None:
    out = check_arguments(typed, arguments)
    assert isinstance(out, str)
    assert out.startswith(message)


def test_check_arguments_shortens_long_values() -> None:
    out = check_arguments(typed, {**GOOD, "i": "y" * 500})
    assert isinstance(out, str) and out.endswith("...") and len(out) < 160
