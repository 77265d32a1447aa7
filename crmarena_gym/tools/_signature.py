"""JSON schemas generated from Python signatures and Google-style docstrings, and argument checks.

A tool's schema is never written by hand: :func:`function_schema` reads the type hints for the JSON
types and the docstring's ``Args:`` section for the parameter descriptions, so the schema an LLM sees
cannot drift from the code that runs. :func:`check_arguments` validates a model's arguments against
the same hints and answers bad input with an ``Error: ...`` string instead of raising.

Example:
    >>> def scale(values: list[float], factor: float = 2.0) -> list[float]:
    ...     '''Multiply every value by a factor.
    ...
    ...     Args:
    ...         values: The numbers to scale.
    ...         factor: What to multiply by.
    ...     '''
    ...     return [v * factor for v in values]
    >>> schema = function_schema(scale)
    >>> schema["function"]["parameters"]["properties"]["values"]
    {'type': 'array', 'items': {'type': 'number'}, 'description': 'The numbers to scale.'}
    >>> schema["function"]["parameters"]["required"]
    ['values']
    >>> check_arguments(scale, {"values": "1, 2"})
    "Error: scale() argument 'values' must be a list, got str '1, 2'"
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union

__all__ = [
    "ParamSpec",
    "argument_checker",
    "check_arguments",
    "function_schema",
    "json_type",
    "param_specs",
    "parse_docstring",
]

_SECTION_NAMES = (
    "Args",
    "Arguments",
    "Parameters",
    "Returns",
    "Return",
    "Yields",
    "Raises",
    "Example",
    "Examples",
    "Note",
    "Notes",
    "Attributes",
    "See Also",
    "Warning",
    "Warnings",
    "Todo",
)
_SECTION_RE = re.compile(r"^(" + "|".join(_SECTION_NAMES) + r"):\s*$")
# ``name: text`` or ``name (type): text``; the type in parentheses is ignored (the hint rules).
_ARG_RE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REPR_LIMIT = 80


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary and its argument descriptions.

    Args:
        doc: The docstring (indentation as written; it is normalised first).

    Returns:
        ``(description, {argument: description})``. The description is the first paragraph with its
        lines joined by spaces; each argument's description joins its continuation lines likewise.

    Example:
        >>> parse_docstring('''Add two numbers.
        ...
        ...     Args:
        ...         a: The first one.
        ...         b (int): The second
        ...             one.
        ...
        ...     Returns:
        ...         The sum.
        ...     ''')
        ('Add two numbers.', {'a': 'The first one.', 'b': 'The second one.'})
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION_RE.match(line.strip()):
            break
        summary.append(line.strip())
    args: dict[str, str] = {}
    in_args = False
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if _SECTION_RE.match(stripped) and indent == 0:
            in_args = stripped[:-1] in ("Args", "Arguments", "Parameters")
            entry_indent, current = None, None
            continue
        if not in_args or not stripped:
            continue
        if entry_indent is None:
            entry_indent = indent
        match = _ARG_RE.match(stripped)
        if indent == entry_indent and match:
            current = match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif current is not None and indent > entry_indent:
            args[current] = (args[current] + " " + stripped).strip()
        elif indent <= entry_indent:
            raise ValueError(f"cannot read the docstring's Args line {stripped!r}: expected 'name: description'")
    return " ".join(summary), args


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (Union, types.UnionType)


def _without_none(hint: Any) -> tuple[Any, bool]:
    """The hint with ``None`` taken out of a union, and whether ``None`` was in it."""
    if not _is_union(hint):
        return hint, hint is type(None)
    members = [a for a in typing.get_args(hint) if a is not type(None)]
    nullable = len(members) != len(typing.get_args(hint))
    if len(members) == 1:
        return members[0], nullable
    return Union[tuple(members)], nullable  # noqa: UP007 - rebuilding a union from a runtime tuple


def json_type(hint: Any) -> dict[str, Any]:
    """The JSON schema of values of a Python type hint.

    Supported: ``str``, ``int``, ``float``, ``bool``, ``Any``, ``list[X]``, ``dict[str, X]``,
    ``Literal[...]`` of strings or integers, unions (``X | Y``) and ``Optional[X]`` (``X | None``:
    the schema of ``X``; whether the argument may be left out is decided by its default).

    Raises:
        TypeError: The hint has no JSON counterpart (a class, a set, a tuple, ...).

    Example:
        >>> json_type(dict[str, list[int]])
        {'type': 'object', 'additionalProperties': {'type': 'array', 'items': {'type': 'integer'}}}
    """
    inner, _ = _without_none(hint)
    if inner is Any:
        return {}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if inner in simple:
        return {"type": simple[inner]}
    origin, args = typing.get_origin(inner), typing.get_args(inner)
    if inner is list or origin is list:
        return {"type": "array", "items": json_type(args[0])} if args else {"type": "array"}
    if inner is dict or origin is dict:
        if args and args[0] is not str:
            raise TypeError(f"JSON object keys are strings; cannot describe {hint!r}")
        if not args or args[1] is Any:
            return {"type": "object"}
        return {"type": "object", "additionalProperties": json_type(args[1])}
    if origin is Literal:
        if all(isinstance(a, str) for a in args):
            return {"type": "string", "enum": list(args)}
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return {"type": "integer", "enum": list(args)}
        raise TypeError(f"a Literal must hold only strings or only integers, got {hint!r}")
    if _is_union(inner):
        return {"anyOf": [json_type(a) for a in typing.get_args(inner)]}
    raise TypeError(f"no JSON schema for the type hint {hint!r}")


class ParamSpec(typing.NamedTuple):
    """One model-facing parameter of a function.

    Attributes:
        name: The parameter's name.
        hint: Its type hint (evaluated).
        required: Whether it has no default.
        description: Its description from the docstring.
    """

    name: str
    hint: Any
    required: bool
    description: str


def param_specs(fn: Callable[..., Any], *, skip_first: bool = False) -> list[ParamSpec]:
    """The model-facing parameters of ``fn``, checked against its docstring.

    Args:
        fn: A function with type hints on every parameter and a Google-style docstring.
        skip_first: Leave out the first parameter (the org, which the model never passes).

    Raises:
        TypeError: A parameter has no type hint, or is ``*args``/``**kwargs``.
        ValueError: A parameter is not described in ``Args:``, or ``Args:`` names one that does not
            exist (descriptions of a skipped first parameter are allowed).
    """
    fn = inspect.unwrap(fn)
    hints = typing.get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())
    skipped = params[0].name if skip_first and params else None
    if skip_first:
        params = params[1:]
    _, docs = parse_docstring(fn.__doc__)
    specs = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"{fn.__name__}: *args and **kwargs cannot be described to a model")
        if p.name not in hints:
            raise TypeError(f"{fn.__name__}: parameter {p.name!r} has no type hint")
        if not docs.get(p.name):
            raise ValueError(f"{fn.__name__}: parameter {p.name!r} is not described in the docstring's Args")
        specs.append(ParamSpec(p.name, hints[p.name], p.default is p.empty, docs[p.name]))
    extra = set(docs) - {p.name for p in params} - {skipped}
    if extra:
        raise ValueError(f"{fn.__name__}: the docstring describes unknown parameters {sorted(extra)}")
    return specs


def function_schema(fn: Callable[..., Any], *, skip_first: bool = False) -> dict[str, Any]:
    """The OpenAI-style tool schema of ``fn``.

    Args:
        fn: A function with type hints and a Google-style docstring (see :func:`param_specs`).
        skip_first: Leave out the first parameter (the org).

    Returns:
        ``{"type": "function", "function": {"name", "description", "parameters"}}`` where
        ``description`` is the docstring's first paragraph and ``parameters`` is a JSON schema object
        whose ``required`` lists the parameters without a default.

    Raises:
        ValueError: The docstring has no summary, or does not match the signature.
        TypeError: A type hint has no JSON counterpart.
    """
    description, _ = parse_docstring(inspect.unwrap(fn).__doc__)
    if not description:
        raise ValueError(f"{fn.__name__}: the docstring needs a first paragraph to describe the function")
    properties: dict[str, Any] = {}
    for spec in param_specs(fn, skip_first=skip_first):
        properties[spec.name] = {**json_type(spec.hint), "description": spec.description}
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": [s.name for s in param_specs(fn, skip_first=skip_first) if s.required],
        "additionalProperties": False,
    }
    return {"type": "function", "function": {"name": fn.__name__, "description": description, "parameters": parameters}}


# --- argument checks ---------------------------------------------------------------------------


class _BadValue(Exception):
    """A value does not fit its hint; ``args[0]`` completes "argument 'x' ..."."""


def _show(value: Any) -> str:
    """``type 'repr'`` of a value, shortened, for error messages."""
    text = repr(value)
    if len(text) > _REPR_LIMIT:
        text = text[: _REPR_LIMIT - 3] + "..."
    return f"{type(value).__name__} {text}" if value is not None else "null"


def _expected(hint: Any) -> str:
    inner, _ = _without_none(hint)
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}
    if inner in names:
        return names[inner]
    origin = typing.get_origin(inner)
    if inner is list or origin is list:
        return "a list"
    if inner is dict or origin is dict:
        return "an object (a dict)"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(inner))
    if _is_union(inner):
        return " or ".join(_expected(a) for a in typing.get_args(inner))
    return repr(inner)


def _check(value: Any, hint: Any, where: str) -> Any:
    """``value`` checked against ``hint`` (integral floats become ints); raises :class:`_BadValue`."""
    return _validator(hint)(value, where)


_Validator = Callable[[Any, str], Any]
#: ``SET.issuperset(map(type, values))``: every value is exactly of that type, decided at C speed (the tools' checks).
_STR_ONLY = frozenset({str})
_DICT_ONLY = frozenset({dict})


@functools.lru_cache(maxsize=256)
def _validator(hint: Any) -> _Validator:
    """The check of values against ``hint``, built once per hint: the hint's introspection (unions,
    origins, literal members) happens here, not on every value of every call."""
    inner, nullable = _without_none(hint)
    if inner is Any:
        return lambda value, where: value
    expected = _expected(inner)

    def fail(value: Any, where: str) -> Any:
        if value is None:
            raise _BadValue(f"{where} must be {expected}, got null")
        raise _BadValue(f"{where} must be {expected}, got {_show(value)}")

    check = _value_check(inner, fail)
    if nullable:
        return lambda value, where: None if value is None else check(value, where)
    return check


def _value_check(inner: Any, fail: _Validator) -> _Validator:
    """The check of a non-null value against ``inner`` (a hint without None); ``fail`` raises."""
    origin = typing.get_origin(inner)
    if inner is bool:
        return lambda value, where: value if isinstance(value, bool) else fail(value, where)
    if inner is int:

        def check_int(value: Any, where: str) -> Any:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, float) and value.is_integer():  # JSON does not tell 3 from 3.0
                return int(value)
            return fail(value, where)

        return check_int
    if inner is float:

        def check_float(value: Any, where: str) -> Any:
            if isinstance(value, int | float) and not isinstance(value, bool):
                # JSON parsers accept NaN and Infinity; no comparison or average means anything with them.
                if isinstance(value, float) and not math.isfinite(value):
                    raise _BadValue(f"{where} must be a finite number, got {value!r}")
                return value
            return fail(value, where)

        return check_float
    if inner is str:
        return lambda value, where: value if isinstance(value, str) else fail(value, where)
    if origin is Literal:
        members = typing.get_args(inner)
        kinds = {type(a) for a in members}

        def check_literal(value: Any, where: str) -> Any:
            if value in members and type(value) in kinds:
                return value
            return fail(value, where)

        return check_literal
    if inner is list or origin is list:
        args = typing.get_args(inner)
        item = _validator(args[0]) if args else None
        plain = item is None or args[0] is Any
        unchanged = _unchanged(args[0]) if args else None

        def check_list(value: Any, where: str) -> Any:
            if not isinstance(value, list):
                return fail(value, where)
            if item is None:
                return value
            if plain:  # a list is passed on as it is (no tool changes its arguments); a subclass becomes one
                return value if type(value) is list else list(value)
            if unchanged is not None and type(value) is list and unchanged(value):
                return value  # every item passes its check as it is (decided at C speed)
            try:  # the items' places are written into the message only when one fails
                return [item(v, where) for v in value]
            except _BadValue:
                return [item(v, f"{where} item {i}") for i, v in enumerate(value)]

        return check_list
    if inner is dict or origin is dict:
        args = typing.get_args(inner)
        entry = _validator(args[1]) if args else None
        plain = entry is None or args[1] is Any
        unchanged = _unchanged(args[1]) if args else None

        def check_dict(value: Any, where: str) -> Any:
            if type(value) is not dict and not isinstance(value, Mapping):  # a dict skips the ABC's check
                return fail(value, where)
            if not _STR_ONLY.issuperset(map(type, value)):  # JSON's keys are str: one pass at C speed
                for k in value:
                    if not isinstance(k, str):
                        raise _BadValue(f"{where} keys must be strings, got {_show(k)}")
            if plain:  # a dict is passed on as it is (no tool changes its arguments); another mapping becomes one
                return value if type(value) is dict else dict(value)
            if unchanged is not None and type(value) is dict and unchanged(value.values()):
                return value  # every value passes its check as it is (decided at C speed)
            try:  # the keys are written into the message only when a value fails
                return {k: entry(v, where) for k, v in value.items()}
            except _BadValue:
                return {k: entry(v, f"{where} value for key {k!r}") for k, v in value.items()}

        return check_dict
    if _is_union(inner):
        members = [_validator(m) for m in typing.get_args(inner)]

        def check_union(value: Any, where: str) -> Any:
            for member in members:
                try:
                    return member(value, where)
                except _BadValue:
                    continue
            return fail(value, where)

        return check_union
    return fail


_INT_ONLY = frozenset({int})
_FLOAT_ONLY = frozenset({float})


def _finite_numbers(values: Any) -> bool:
    """Whether every value passes a float check as it is: all ints, or all finite floats."""
    kinds = set(map(type, values))
    if kinds <= _FLOAT_ONLY:
        return all(map(math.isfinite, values))
    return kinds <= _INT_ONLY


def _unchanged(hint: Any) -> Callable[[Any], bool] | None:
    """For the items of a list (or the values of a dict) of ``hint``: a test, run at C speed over all of them,
    that is true only when each item's check would pass it back as it is; None when ``hint`` has none.

    A false answer decides nothing: the items are then checked one by one, naming any that fails.
    ``bool`` is no ``int`` here (``type(True) is bool``), as the item checks refuse it.
    """
    if hint is str:
        return lambda values: _STR_ONLY.issuperset(map(type, values))
    if hint is int:
        return lambda values: _INT_ONLY.issuperset(map(type, values))
    if hint is float:
        return _finite_numbers
    if typing.get_origin(hint) is dict and typing.get_args(hint) in ((str, Any),):
        # dicts (not other mappings, which the check copies) whose keys are all strings
        return lambda values: (
            _DICT_ONLY.issuperset(map(type, values))
            and _STR_ONLY.issuperset(map(type, itertools.chain.from_iterable(values)))
        )
    return None


def check_arguments(
    fn: Callable[..., Any],
    arguments: Any,
    *,
    skip_first: bool = False,
    specs: list[ParamSpec] | None = None,
) -> dict[str, Any] | str:
    """Validate a model's arguments for ``fn`` against its signature.

    Args:
        fn: The function (its ``__name__`` appears in the messages).
        arguments: What the model passed: should be a dict of argument name to JSON value.
        skip_first: The first parameter (the org) is not the model's to pass.
        specs: The parameters, if already computed by :func:`param_specs`.

    Returns:
        The arguments, with integral floats for integer parameters turned into ints; or a string
        starting ``Error: `` that names the unknown, missing or ill-typed argument and quotes the
        value.
    """
    specs = param_specs(fn, skip_first=skip_first) if specs is None else specs
    return argument_checker(fn.__name__, specs)(arguments)


def argument_checker(name: str, specs: Sequence[ParamSpec]) -> Callable[[Any], dict[str, Any] | str]:
    """:func:`check_arguments` for one function, built once: the parameters' names, validators and the
    places named in messages are worked out here, not on every call.

    Args:
        name: The function's name, as the messages show it.
        specs: Its model-facing parameters (:func:`param_specs`).

    Example:
        >>> from typing import Literal
        >>> check = argument_checker("get_period", [ParamSpec("period_name", Literal["Q1", "Q2"], True, "a"),
        ...     ParamSpec("year", int, True, "b")])
        >>> check({"period_name": "Q1", "year": 2022.0})
        {'period_name': 'Q1', 'year': 2022}
        >>> check({"period_name": "Q3", "year": 2022})
        "Error: get_period() argument 'period_name' must be one of 'Q1', 'Q2', got str 'Q3'"
    """
    known = frozenset(s.name for s in specs)
    takes = ", ".join(s.name for s in specs) if specs else "no arguments"
    checks = tuple((s.name, s.required, _validator(s.hint), f"argument {s.name!r}") for s in specs)

    def check(arguments: Any) -> dict[str, Any] | str:
        if type(arguments) is not dict and not isinstance(arguments, Mapping):
            return f"Error: the arguments of {name}() must be a JSON object, got {_show(arguments)}"
        if not known.issuperset(arguments):  # one pass at C speed; the first unknown key is named below
            for key in arguments:
                if key not in known:
                    return f"Error: {name}() got an unknown argument {key!r}; it takes {takes}"
        checked: dict[str, Any] = {}
        for param, required, validate, where in checks:
            if param not in arguments:
                if required:
                    return f"Error: {name}() is missing the required argument {param!r}"
                continue
            try:
                checked[param] = validate(arguments[param], where)
            except _BadValue as bad:
                return f"Error: {name}() {bad.args[0]}"
        return checked

    return check
