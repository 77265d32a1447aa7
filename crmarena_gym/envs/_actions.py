"""Parsing an agent's text into an action: execute a query, call a function, or submit an answer.

Accepted forms (thoughts may surround the tag forms; code fences are unwrapped):

- ``execute SELECT Id FROM Case`` and ``submit 005Ws000001xSR9IAM``;
- the paper's tags: ``<execute> ... </execute>``, ``<submit> ... </submit>`` and CRMArena-Pro's
  ``<respond> ... </respond>``; when a reply has both an execute and a submit tag, execute wins;
- function calls: ``execute get_cases({"start_date": "..."})``, ``get_cases({...})`` inside an
  execute tag, or a JSON tool call ``{"name": "get_cases", "arguments": {...}}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from crmarena_gym._json import JSONNumberError, read_json
from crmarena_gym.tools import ToolCallText

ActionKind = Literal["query", "call", "submit", "invalid"]
#: The error of a reply that holds no action at all (the environment restates the action rule).
NO_ACTION = "no action found"

_TAG_RE = {
    tag: re.compile(rf"<{tag}>(.*?)(?:</{tag}>|$)", re.DOTALL | re.IGNORECASE)
    for tag in ("execute", "submit", "respond")
}
_NO_TAGS: dict[str, re.Match[str] | None] = dict.fromkeys(_TAG_RE)
_PLAIN_RE = re.compile(r"^\s*(execute|submit|respond)\b[ \t]*:?[ \t]*(.*)$", re.DOTALL | re.IGNORECASE)
# A language tag counts only when a newline follows it: in ```005Ws...``` the word is the content.
_FENCE_RE = re.compile(r"^\s*```(?:[A-Za-z0-9_+-]*[ \t]*\n)?(.*?)\n?```\s*$", re.DOTALL)
_CALL_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*;?\s*$", re.DOTALL)
_SOQL_START = re.compile(r"^\s*(SELECT|FIND)\b", re.IGNORECASE)
# Without a "<" (no tag), two forms read directly as the general path reads them (no fence, nothing to
# strip): a JSON tool call, and ``execute name({...})`` (or ``name()``) in one match, except for the names
# SELECT and FIND, which start queries.
_QUICK_CALL_RE = re.compile(r"execute[ \t]+([A-Za-z_][A-Za-z0-9_]*)\((\{.*\}|)\)", re.DOTALL)
_QUERY_WORDS = frozenset({"select", "find"})


_NO_ARGUMENTS: Any = object()


@dataclass(frozen=True, init=False)
class Action:
    """A parsed action.

    Attributes:
        kind: ``query`` (SOQL or SOSL text), ``call`` (a function with arguments), ``submit``, or
            ``invalid`` (the text could not be read; ``error`` says why).
        text: The query text, the submitted answer, or the raw text of an invalid action.
        language: For a query, ``soql`` or ``sosl`` (a query is SOSL when it starts with ``FIND``).
        name: For a call, the function's name.
        arguments: For a call, its arguments.
        error: For an invalid action, what was wrong.
    """

    # The defaults are __init__'s (the dataclass writes no __init__ of its own).
    kind: ActionKind
    text: str
    language: Literal["soql", "sosl"] | None
    name: str | None
    arguments: dict[str, Any]
    error: str | None

    def __init__(
        self,
        kind: ActionKind,
        text: str = "",
        language: Literal["soql", "sosl"] | None = None,
        name: str | None = None,
        arguments: dict[str, Any] = _NO_ARGUMENTS,  # type: ignore[assignment]
        error: str | None = None,
    ) -> None:
        # The fields written straight into the instance's dict: a frozen dataclass's own __init__ sets each
        # through object.__setattr__, a fifth of reading a small tool call. Every step makes one.
        fields = self.__dict__
        fields["kind"] = kind
        fields["text"] = text
        fields["language"] = language
        fields["name"] = name
        fields["arguments"] = {} if arguments is _NO_ARGUMENTS else arguments
        fields["error"] = error


def unwrap_code(text: str) -> str:
    """Strip surrounding whitespace and a code fence around the whole text.

    Example:
        >>> unwrap_code("```sql\\nSELECT Id FROM Case\\n```")
        'SELECT Id FROM Case'
    """
    match = _FENCE_RE.match(text)
    return (match.group(1) if match else text).strip()


_TOO_DEEP = "the arguments are nested too deeply to be read (keep JSON values a few levels deep)"


def _json_value(text: str) -> Any:
    """``read_json(text)`` for a text that starts with ``{`` and ends with ``}``: json's C scanner called
    directly (json.loads strips whitespace there is none of, then calls it); any failure is read_json's own.
    """
    try:
        value, end = _SCAN(text, 0)
    except Exception:  # read_json raises it again, in its own words
        return read_json(text)
    return value if end == len(text) else read_json(text)


_SCAN = json.decoder.JSONDecoder().scan_once


def _parse_call(body: str) -> Action | None:
    """A function call written as ``name({...})`` or a JSON tool call; None if the text is neither."""
    stripped = body.strip()
    if stripped.startswith("{"):
        try:
            payload = _json_value(stripped) if stripped.endswith("}") else read_json(stripped)
        except json.JSONDecodeError as err:
            return Action("invalid", text=body, error=f"the tool call is not valid JSON: {err.msg}")
        except JSONNumberError as err:
            return Action("invalid", text=body, error=f"the tool call cannot be read: {err}")
        except RecursionError:
            return Action("invalid", text=body, error=_TOO_DEEP)
        if not isinstance(payload, dict) or "name" not in payload:
            return Action("invalid", text=body, error='a JSON tool call needs "name" and "arguments" keys')
        arguments = payload.get("arguments", {})
        if isinstance(arguments, str):  # OpenAI sends arguments as a JSON string
            try:
                arguments = read_json(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as err:
                return Action("invalid", text=body, error=f"the arguments are not valid JSON: {err.msg}")
            except JSONNumberError as err:
                return Action("invalid", text=body, error=f"the arguments cannot be read: {err}")
            except RecursionError:
                return Action("invalid", text=body, error=_TOO_DEEP)
        if not isinstance(arguments, dict):
            return Action("invalid", text=body, error="the arguments must be a JSON object")
        return Action("call", text=body, name=str(payload["name"]), arguments=arguments)
    match = _CALL_RE.match(stripped)
    if match is None or _SOQL_START.match(stripped):
        return None
    return _call(body, match.group(1), match.group(2).strip())


def _call(body: str, name: str, inner: str) -> Action:
    """The call ``name(inner)``: its arguments read from ``inner`` (stripped), one JSON object or nothing."""
    if not inner:
        return Action("call", text=body, name=name)
    try:
        arguments = _json_value(inner) if inner.endswith("}") and inner.startswith("{") else read_json(inner)
    except RecursionError:
        return Action("invalid", text=body, error=_TOO_DEEP)
    except JSONNumberError as err:
        return Action("invalid", text=body, error=f"the arguments of {name} cannot be read: {err}")
    except json.JSONDecodeError as err:
        return Action(
            "invalid",
            text=body,
            error=f'the arguments of {name} must be one JSON object, as in {name}({{"arg": value}}): ' + err.msg,
        )
    if not isinstance(arguments, dict):
        return Action("invalid", text=body, error=f"the arguments of {name} must be a JSON object")
    return Action("call", text=body, name=name, arguments=arguments)


def _execute(body: str, functions: bool) -> Action:
    code = unwrap_code(body)
    if not code:
        return Action("invalid", text=body, error="execute needs a query or a function call")
    if functions:
        call = _parse_call(code)
        if call is not None:
            return call
    language: Literal["soql", "sosl"] = "sosl" if code.startswith("FIND") else "soql"
    return Action("query", text=code, language=language)


def parse_action(text: str, *, functions: bool = False) -> Action:
    """Read an agent's reply as an action.

    Args:
        text: The reply.
        functions: Whether function calls are allowed (the ``functions`` and ``flex`` toolsets).

    Returns:
        The action; an ``invalid`` action carries the reason, which the environment shows the agent.

    Example:
        >>> parse_action("Thought: count them.\\n<execute>SELECT COUNT() FROM Case</execute>").text
        'SELECT COUNT() FROM Case'
        >>> parse_action("submit None").kind
        'submit'
        >>> parse_action('{"name": "get_issues", "arguments": {}}', functions=True).name
        'get_issues'
    """
    if not isinstance(text, str):
        return Action("invalid", text=repr(text), error=f"an action must be text, got {type(text).__name__}")
    if functions and "<" not in text:
        if type(text) is ToolCallText and text.arguments is not None:  # the call its JSON text spells
            return Action("call", text=text, name=text.name, arguments=text.arguments)
        if text[:1] == "{" and text[-1:] == "}":  # a JSON tool call with nothing around it
            return _parse_call(text)
        quick = _QUICK_CALL_RE.fullmatch(text)
        if quick is not None and quick.group(1).lower() not in _QUERY_WORDS:
            return _call(text[quick.start(1) :], quick.group(1), quick.group(2))
    return _parse_text(text, functions)


def _parse_text(text: str, functions: bool) -> Action:
    """:func:`parse_action`'s reading of every form."""
    # A tag needs a "<": most actions have none (a JSON call pasting back kilobytes of rows), and one
    # scan for it costs less than the three searches.
    tagged = {tag: rx.search(text) for tag, rx in _TAG_RE.items()} if "<" in text else _NO_TAGS
    if tagged["execute"]:
        return _execute(tagged["execute"].group(1), functions)
    for tag in ("submit", "respond"):
        match = tagged[tag]
        if match:
            return Action("submit", text=unwrap_code(match.group(1)))
    plain = _PLAIN_RE.match(text)
    if plain:
        verb, body = plain.group(1).lower(), plain.group(2)
        if verb == "execute":
            return _execute(body, functions)
        return Action("submit", text=unwrap_code(body))
    if functions:
        call = _parse_call(unwrap_code(text))
        if call is not None:
            return call
    return Action("invalid", text=text, error=NO_ACTION)
