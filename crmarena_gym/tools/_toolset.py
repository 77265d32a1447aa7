"""Toolsets: the tools an agent may call, their schemas, checked calls and the paper's ablations.

Example:
    >>> ts = toolset("functions")
    >>> len(ts), "submit" in ts, "issue_soql_query" in ts
    (25, True, False)
    >>> ts.call("get_period", {"period_name": "Q3", "year": 2022})
    {'start_date': '2022-07-01T00:00:00Z', 'end_date': '2022-10-01T00:00:00Z'}
    >>> ts.call("get_period", {"period_name": "Q3"})
    "Error: get_period() is missing the required argument 'year'"
    >>> small = ts.without(groups=["dependent_calculation"])
    >>> len(small), "find_id_with_max_value" in small
    (17, False)
"""

from __future__ import annotations

import copy
import functools
import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

from crmarena_gym._json import json_problem, read_json
from crmarena_gym.org import Org
from crmarena_gym.tools import _calculations as calc
from crmarena_gym.tools import _general as general
from crmarena_gym.tools import _queries as queries
from crmarena_gym.tools import _writes as write_functions
from crmarena_gym.tools._tool import Tool

__all__ = [
    "ABLATION_GROUPS",
    "ALL_TOOLS",
    "TOOLSET_NAMES",
    "WRITE_TOOLS",
    "ToolCallText",
    "Toolset",
    "get_tool",
    "toolset",
]

#: The paper's ablation groups: by kind, by dependency, and by both.
ABLATION_GROUPS = (
    "query",
    "calculation",
    "independent",
    "dependent",
    "independent_query",
    "dependent_query",
    "independent_calculation",
    "dependent_calculation",
)

_TASK_FUNCTIONS = (
    calc.get_agents_with_max_cases,
    calc.get_agents_with_min_cases,
    calc.calculate_average_handle_time,
    calc.get_start_date,
    calc.get_period,
    queries.get_agent_handled_cases_by_period,
    calc.get_qualified_agent_ids_by_case_count,
    queries.get_cases,
    queries.get_non_transferred_case_ids,
    queries.get_agent_transferred_cases_by_period,
    queries.get_shipping_state,
    calc.calculate_region_average_closure_times,
    queries.get_order_item_ids_by_product,
    queries.get_issue_counts,
    calc.find_id_with_max_value,
    calc.find_id_with_min_value,
    queries.get_account_id_by_contact_id,
    queries.get_purchase_history,
    calc.get_month_to_case_count,
    queries.search_knowledge_articles,
    queries.search_products,
    queries.get_issues,
    queries.get_livechat_transcript_by_case_id,
    queries.get_email_messages_by_case_id,
    general.submit,
)
_GENERAL_FUNCTIONS = (general.issue_soql_query, general.issue_sosl_query)

#: Every tool: the two general ones, then the 25 task-specific ones (``submit`` last).
ALL_TOOLS: tuple[Tool, ...] = tuple(f.tool for f in _GENERAL_FUNCTIONS + _TASK_FUNCTIONS)  # type: ignore[attr-defined]
#: The write tools (create, update, delete a record), given to act-mode episodes only (``toolset(..., writes=True)``).
WRITE_TOOLS: tuple[Tool, ...] = tuple(
    f.tool  # type: ignore[attr-defined]
    for f in (
        write_functions.get_record,
        write_functions.create_record,
        write_functions.update_record,
        write_functions.delete_record,
    )
)
_BY_NAME = {t.name: t for t in ALL_TOOLS + WRITE_TOOLS}
_TASK_NAMES = frozenset(f.tool.name for f in _TASK_FUNCTIONS if f is not general.submit)  # type: ignore[attr-defined]

_PRESETS = {
    "soql": ("issue_soql_query", "issue_sosl_query", "submit"),
    "functions": tuple(f.__name__ for f in _TASK_FUNCTIONS),
    "flex": tuple(t.name for t in ALL_TOOLS),
}
#: The names :func:`toolset` accepts.
TOOLSET_NAMES = tuple(_PRESETS)


def get_tool(name: str) -> Tool:
    """The tool called ``name``.

    Raises:
        KeyError: No tool has that name.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no tool is called {name!r}; the tools are {', '.join(_BY_NAME)}") from None


class Toolset:
    """An ordered set of tools with lookup, schemas and checked calls.

    Toolsets are immutable: :meth:`without` returns a new one.

    Args:
        tools: The tools, in the order their schemas are listed; names must be unique.

    Raises:
        ValueError: Two tools share a name.
    """

    def __init__(self, tools: Iterable[Tool]) -> None:
        items = tuple(tools)
        names = [t.name for t in items]
        if len(set(names)) != len(names):
            raise ValueError(f"tool names must be unique, got {names}")
        self._tools = items
        self._by_name = {t.name: t for t in items}

    @property
    def names(self) -> tuple[str, ...]:
        """The tool names, in order."""
        return tuple(self._by_name)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Tool:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"this toolset has no tool {name!r}; it has {', '.join(self._by_name)}") from None

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None when the toolset lacks it."""
        return self._by_name.get(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Toolset) and self.names == other.names

    def __hash__(self) -> int:
        return hash(self.names)

    def __repr__(self) -> str:
        return f"Toolset({list(self.names)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Toolset, (self._tools,))

    def schemas(self) -> list[dict[str, Any]]:
        """The OpenAI-style schemas of the tools, in order (copies: changing them changes nothing here)."""
        return [copy.deepcopy(t.schema) for t in self._tools]

    def call(self, name: str, arguments: Any, org: Org | None = None, *, trusted: bool = False) -> Any:
        """Call a tool the way a model does: by name, with JSON arguments.

        Never raises on the model's input: an unknown name, arguments that are not an object (or a
        JSON text of one), and unknown, missing or ill-typed arguments all answer with a string
        starting ``Error: ``.

        Args:
            name: The tool's name.
            arguments: A dict of argument name to value, or its JSON text (as chat APIs deliver it).
            org: The org the query tools read.
            trusted: The arguments were built by our own code (see :meth:`Tool.call`): not checked.

        Returns:
            The tool's JSON-able result, or an ``Error: ...`` string.

        Raises:
            ValueError: The tool reads the org and ``org`` is None.
        """
        tool = self._by_name.get(name) if isinstance(name, str) else None
        if tool is None:
            available = ", ".join(self._by_name) or "none"
            hint = ""
            soql_only = "issue_soql_query" in self._by_name and not _TASK_NAMES & self._by_name.keys()
            if name in _TASK_NAMES and soql_only:
                # The SOQL toolset (gym.make's default): the call is right, the environment lacks it.
                hint = " (it is a task function: make the environment with toolset='functions' or 'flex')"
            return f"Error: unknown function {name!r}; the available functions are: {available}{hint}"
        if type(arguments) is not dict:  # a dict (the common case) needs none of these
            if isinstance(arguments, (str, bytes)):
                try:
                    arguments = read_json(arguments) if arguments.strip() else {}
                except ValueError as err:
                    return (
                        f"Error: the arguments of {name}() are not valid JSON ({json_problem(err)}): {arguments[:80]!r}"
                    )
                except RecursionError:
                    return f"Error: the arguments of {name}() are nested too deeply to be read: {arguments[:80]!r}"
            if arguments is None:
                arguments = {}
        return tool.call(arguments, org, trusted=trusted)

    def without(self, names: Iterable[str] = (), groups: Iterable[str] = ()) -> Toolset:
        """A toolset without the named tools and without the tools of the given ablation groups.

        Args:
            names: Tool names to remove (each must be in this toolset).
            groups: Ablation groups to remove (see :data:`ABLATION_GROUPS`); ``submit`` and the general
                SOQL/SOSL tools belong to no group, so they stay unless named.

        Raises:
            ValueError: A name is not in the toolset, or a group is unknown.
        """
        names = [names] if isinstance(names, str) else list(names)
        groups = [groups] if isinstance(groups, str) else list(groups)
        missing = [n for n in names if n not in self._by_name]
        if missing:
            raise ValueError(f"cannot remove {missing}: not in this toolset ({', '.join(self._by_name)})")
        unknown = [g for g in groups if g not in ABLATION_GROUPS]
        if unknown:
            raise ValueError(f"unknown ablation groups {unknown}; the groups are {', '.join(ABLATION_GROUPS)}")
        drop = set(names)
        return Toolset(t for t in self._tools if t.name not in drop and not (t.groups & set(groups)))


# json.dumps(obj, ensure_ascii=False) builds an encoder per call; this one is built once (same output).
_CALL_ENCODER = json.JSONEncoder(ensure_ascii=False)
# Deeper arguments are left to the JSON reader, which refuses what is nested too deeply.
_PLAIN_DEPTH = 32


def _plain_json(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is what decoding its JSON gives back: dicts with text keys, lists, text, integers,
    finite floats, booleans and None (no tuple, no other key or value type), not deeply nested."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    if depth >= _PLAIN_DEPTH or (kind is not dict and kind is not list):
        return False
    for key, item in value.items() if kind is dict else enumerate(value):
        if kind is dict and type(key) is not str:
            return False
        if type(item) is not str and not _plain_json(item, depth + 1):  # text, the usual value, checked inline
            return False
    return True


class ToolCallText(str):
    """A JSON tool call, ``{"name": ..., "arguments": {...}}``: its text, carrying the call as values.

    It is the text a model would send (``json.dumps`` with ``ensure_ascii=False``), so it is shown, recorded
    and compared as any reply is; an environment reads the call from it without decoding the JSON again
    (see :func:`~crmarena_gym.envs.parse_action`). Code that holds the call as values makes it (the
    oracle's :meth:`~crmarena_gym.tasks.ToolCall.to_action`). ``arguments`` is None unless the name is
    text and the arguments are plain JSON values (what decoding the text gives back), so reading the call
    from it never differs from reading the text. Copied or pickled, it is plain text.

    Example:
        >>> call = ToolCallText("get_issues", {})
        >>> call, call.name, call.arguments
        ('{"name": "get_issues", "arguments": {}}', 'get_issues', {})
    """

    name: str
    arguments: dict[str, Any] | None

    def __new__(cls, name: str, arguments: dict[str, Any]) -> ToolCallText:
        text = super().__new__(cls, _CALL_ENCODER.encode({"name": name, "arguments": arguments}))
        text.name = name
        text.arguments = arguments if type(name) is str and type(arguments) is dict and _plain_json(arguments) else None
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return (str, (str(self),))


def _toolset_from_names(names: tuple[str, ...]) -> Toolset:
    return Toolset(get_tool(n) for n in names)


@functools.cache
def _preset(name: str, writes: bool = False) -> Toolset:
    names = _PRESETS[name]
    if writes:  # before submit, which stays last
        names = (*names[:-1], *write_functions.WRITE_TOOL_NAMES, names[-1])
    return _toolset_from_names(names)


def toolset(name: str = "flex", *, writes: bool = False) -> Toolset:
    """One of the paper's toolsets.

    Args:
        name: ``"soql"``: ``issue_soql_query``, ``issue_sosl_query`` and ``submit`` (the Act/ReAct
            setting); ``"functions"``: the 25 task-specific functions, ``submit`` included;
            ``"flex"``: all 27.
        writes: Add the record tools (``get_record``, ``create_record``, ``update_record``, ``delete_record``)
            before ``submit``: for act-mode episodes, which own a writable session. SOQL itself stays read-only.

    Returns:
        The toolset, built once: toolsets are immutable, so every call shares it (an environment or an
        oracle step asks for one each time).

    Raises:
        ValueError: Another name.
    """
    try:
        return _preset(name, bool(writes))
    except KeyError:
        raise ValueError(f"unknown toolset {name!r}; choose one of {', '.join(_PRESETS)}") from None
