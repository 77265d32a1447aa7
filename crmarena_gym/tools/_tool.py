"""The :class:`Tool` record and the decorator that turns a documented function into one.

Every tool function is wrapped by :func:`tool_function`, so that a direct Python call
(``get_cases(org, start_date=...)``) and a model's call through a toolset run the same argument
checks and answer bad input the same way: with a string starting ``Error: ``, never an exception.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from crmarena_gym.org import Org, OrgError
from crmarena_gym.tools._common import ToolInputError
from crmarena_gym.tools._signature import ParamSpec, argument_checker, function_schema, param_specs

__all__ = ["Dependency", "Kind", "Tool", "tool_function"]

#: ``"query"``: the tool reads the org; ``"calculation"``: it computes from its arguments alone; ``"write"``: it
#: changes the episode's session (create, update, delete).
Kind = Literal["query", "calculation", "write"]
#: ``"independent"``: its arguments come from the task itself (ids, dates, names);
#: ``"dependent"``: an argument is normally an earlier function's output pasted back in.
Dependency = Literal["independent", "dependent"]


@dataclass(frozen=True, eq=False)
class Tool:
    """One function an agent can call, with what the ablations need to know about it.

    Attributes:
        name: The function's name, as the model calls it.
        function: The checked Python function (org first when ``needs_org``).
        schema: The OpenAI-style schema ``{"type": "function", "function": {...}}``, generated from the
            signature and docstring. Treat it as read-only (:meth:`Toolset.schemas` hands out copies).
        kind: ``"query"`` or ``"calculation"``.
        dependency: ``"independent"`` or ``"dependent"``.
        needs_org: Whether the function takes the org as its first argument.
        terminal: Whether calling it ends the episode (``submit``).
        general: Whether it is one of the general-purpose query tools (SOQL, SOSL).
        params: The model-facing parameters.
    """

    name: str
    function: Callable[..., Any]
    schema: dict[str, Any]
    kind: Kind
    dependency: Dependency
    needs_org: bool
    terminal: bool = False
    general: bool = False
    params: tuple[ParamSpec, ...] = field(default=(), repr=False)

    @property
    def description(self) -> str:
        """The description the model reads."""
        return self.schema["function"]["description"]

    @property
    def groups(self) -> frozenset[str]:
        """The paper's ablation groups the tool belongs to.

        A task-specific function is in its kind (``"query"``/``"calculation"``), its dependency
        (``"independent"``/``"dependent"``) and their combination (``"dependent_calculation"``).
        ``submit`` and the general SOQL/SOSL tools are in no group, so that removing a group never
        takes away the way to answer or the raw query access. The write tools are in the group ``write``
        alone (they are no part of the paper's ablations).
        """
        if self.terminal or self.general:
            return frozenset()
        if self.kind == "write":
            return frozenset({"write"})
        return frozenset({self.kind, self.dependency, f"{self.dependency}_{self.kind}"})

    @functools.cached_property
    def check(self) -> Callable[[Any], dict[str, Any] | str]:
        """The check of a model's arguments (:func:`~crmarena_gym.tools.check_arguments`), built once."""
        return argument_checker(self.name, self.params)

    def call(self, arguments: Any, org: Org | None = None, *, trusted: bool = False) -> Any:
        """Check a model's arguments and run the function.

        Args:
            arguments: The model's arguments (a dict of name to JSON value).
            org: The org to read; required when :attr:`needs_org`.
            trusted: The arguments come from our own code (the oracle's solvers), built from earlier
                results of the tools: skip their check. A model's arguments are always checked.

        Returns:
            The function's JSON-able result, or an ``Error: ...`` string for bad arguments.

        Raises:
            ValueError: The tool reads the org and ``org`` is None (a wiring mistake, not bad input).
        """
        if trusted:
            return _invoke(self, org, dict(arguments))
        checked = self.check(arguments)
        if isinstance(checked, str):
            return checked
        return _invoke(self, org, checked)

    def __reduce__(self) -> tuple[Any, ...]:
        # The wrapped function object is reachable by module and name; pickling by reference keeps
        # toolsets (and the environments holding them) picklable.
        return (_tool_of, (self.function.__module__, self.function.__name__))


def _tool_of(module: str, name: str) -> Tool:
    return getattr(importlib.import_module(module), name).tool


def _invoke(tool: Tool, org: Org | None, arguments: dict[str, Any]) -> Any:
    raw = tool.function.__wrapped__  # type: ignore[attr-defined]
    if tool.needs_org and org is None:
        raise ValueError(f"the tool {tool.name!r} reads the org, but no org was given")
    if tool.kind == "query" and not tool.general and isinstance(org, Org):
        # The task functions are the org's maintained API: after schema drift they still read the fields
        # they were written against (the drift map), where an agent's own SOQL must use the new names.
        org = org.declared()
    try:
        return raw(org, **arguments) if tool.needs_org else raw(**arguments)
    except ToolInputError as err:
        return f"Error: {err}"
    except OrgError as err:
        # The general tools answer exactly as an ``execute`` observation does; the task-specific
        # functions mark the org's refusal as their own error.
        text = f"{err.code}: {err.message}"
        return text if tool.general else f"Error: {text}"


def tool_function(
    *,
    kind: Kind,
    dependency: Dependency,
    needs_org: bool = True,
    terminal: bool = False,
    general: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make a documented function a tool: checked arguments, a generated schema, ablation metadata.

    The decorated function keeps its name and signature; calling it validates the arguments like a
    toolset call does (an ``Error: ...`` string for an unknown, missing or ill-typed argument) and
    turns an :class:`OrgError` into text. Its :class:`Tool` is attached as ``.tool``.

    Args:
        kind: ``"query"`` if it reads the org, ``"calculation"`` if it is pure, ``"write"`` for act mode's
            record tools (they change the org; ``get_record`` reads one record under the org's own names).
        dependency: ``"dependent"`` if an argument is normally an earlier function's output.
        needs_org: Whether the first parameter is the org (left out of the schema).
        terminal: Whether calling it ends the episode.
        general: Whether it is a general-purpose SOQL/SOSL tool.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        schema = function_schema(fn, skip_first=needs_org)
        specs = tuple(param_specs(fn, skip_first=needs_org))
        names = [s.name for s in specs]

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            org: Org | None = None
            if needs_org:
                if not args:
                    raise TypeError(f"{fn.__name__}() takes the org as its first argument")
                org, args = args[0], args[1:]
            if len(args) > len(names):
                return f"Error: {fn.__name__}() takes {len(names)} arguments, got {len(args)}"
            arguments = dict(zip(names, args, strict=False))
            for key, value in kwargs.items():
                if key in arguments:
                    return f"Error: {fn.__name__}() got two values for the argument {key!r}"
                arguments[key] = value
            return checked.tool.call(arguments, org)  # type: ignore[attr-defined]

        checked.tool = Tool(  # type: ignore[attr-defined]
            name=fn.__name__,
            function=checked,
            schema=schema,
            kind=kind,
            dependency=dependency,
            needs_org=needs_org,
            terminal=terminal,
            general=general,
            params=specs,
        )
        return checked

    return decorate
