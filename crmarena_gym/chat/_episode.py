"""A CRMArena episode as an OpenAI-format conversation: messages in, env actions out.

:class:`ChatEpisode` holds the conversation of one episode and defines, once for every path (the litellm
policy of evaluation, OpenEnv, TRL, SkyRL, verifiers), what a model's reply does:

- **Every tool call of a reply runs**, in the order given, each as one environment action (one turn of
  the budget); each is answered by a ``tool`` message. Calls left when the episode ends (after a
  ``submit``, or when the turn budget runs out) are not run and are answered with :data:`NOT_RUN`.
  This is what TRL's and verifiers' own tool loops do, so every path does it.
- **In function calling, a reply without a tool call ends the episode without an answer** (reward 0,
  end reason ``no_tool_call``): only a call of ``submit`` gives an answer; a text ``submit X`` is refused
  the same way everywhere. (TRL and verifiers end a rollout at such a reply; evaluation does the same.)
- In the text frameworks (Act, ReAct) a reply is one action. The reply is kept up to the end of the
  action the environment reads (the first ``</execute>``, else the first ``</submit>``/``</respond>``):
  text a model writes after it (a made-up observation, say) is dropped from the conversation, since the
  environment never acts on it.
- Tool-call ids are the core's own (``call_0``, ``call_1`` ... over the episode) and JSON arguments are
  written back as ``json.dumps`` writes them, so that every path records the same messages whatever
  ids and spacing the model or the trainer used.
- **A call of ``respond`` (conversations) is answered by the user**: the call gets the ``tool`` message
  :data:`DELIVERED`, and the user's reply follows as a ``user`` message once every call of the reply is
  answered; so every path (OpenEnv, TRL, SkyRL, verifiers) carries the user's turns as user turns. In the
  text frameworks the user's reply is the next ``user`` message, as every observation is.
- The turn budget is the environment's (:data:`~crmarena_gym.envs.MAX_TURNS` actions).

It is deterministic: the same observations and replies give the same messages and actions.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from crmarena_gym.chat._prompt import FRAMEWORKS, Framework, system_prompt
from crmarena_gym.chat._tools import chat_tool_schemas

__all__ = [
    "DELIVERED",
    "NOT_RUN",
    "NO_TOOL_CALL",
    "ChatEpisode",
    "Reply",
    "react_action",
    "read_text_reply",
    "text_action",
    "tool_call_action",
]

#: The answer to a tool call left over when the episode ended (after a submit, or out of turns).
NOT_RUN = "Not run: the episode is over."
#: The ``tool`` message answering a call of ``respond``: the user's reply follows as a ``user`` message.
DELIVERED = "Delivered to the user; their reply follows."
#: What a function-calling reply without a tool call gets: the episode ends without an answer.
NO_TOOL_CALL = (
    "NO_TOOL_CALL: the reply made no function call; in function calling only a call of submit gives the answer, "
    "so the episode ends without one."
)

_TAGGED = re.compile(r"<(execute|submit|respond)>", re.IGNORECASE)
_THOUGHT_LINE = re.compile(r"^\s*thought\s*:.*$", re.IGNORECASE | re.MULTILINE)
_ACTION_PREFIX = re.compile(r"^\s*action\s*:\s*", re.IGNORECASE)
_CLOSED = {
    tag: re.compile(rf"<{tag}>.*?</{tag}>", re.DOTALL | re.IGNORECASE) for tag in ("execute", "submit", "respond")
}


def react_action(text: str) -> str:
    """A ReAct reply without tags: drop the thought line and an ``Action:`` prefix, keep the action.

    Example:
        >>> react_action("Thought: done.\\nAction: submit OR")
        'submit OR'
        >>> react_action("Thought: count.\\n<execute>SELECT COUNT() FROM Case</execute>")[:8]
        'Thought:'
    """
    if _TAGGED.search(text):
        return text  # the environment reads the tag itself
    return _ACTION_PREFIX.sub("", _THOUGHT_LINE.sub("", text).strip(), count=1)


def read_text_reply(text: str) -> str:
    """A text reply as the conversation keeps it: up to the end of the action the environment reads.

    The environment acts on the first execute tag when there is one, else on the first submit (or
    respond) tag; what follows that tag's close never reaches it, so it is dropped. Untagged replies
    are kept whole. Surrounding whitespace is stripped.

    Example:
        >>> read_text_reply("Thought: x.\\n<execute>SELECT Id FROM Case</execute>\\nSalesforce instance output: []")
        'Thought: x.\\n<execute>SELECT Id FROM Case</execute>'
        >>> read_text_reply("  submit OR \\n")
        'submit OR'
    """
    for tag in ("execute", "submit", "respond"):
        match = _CLOSED[tag].search(text)
        if match is not None and (tag != "submit" or not _CLOSED["execute"].search(text)):
            return text[: match.end()].strip()
    return text.strip()


def text_action(text: str, framework: Framework) -> str:
    """The env action of a text reply: ReAct's thought is dropped, other replies are stripped.

    Example:
        >>> text_action("  submit None\\n", "act")
        'submit None'
    """
    return react_action(text) if framework == "react" else text.strip()


def _arguments(arguments: Any) -> tuple[Any, str]:
    """The arguments as the env gets them (a dict when they are a JSON object) and as the message keeps them."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        arguments = {}
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError):  # not JSON, or a number past Python's digit limit
            return arguments, arguments  # as sent: the environment answers with a FORMAT_ERROR saying why
        if not isinstance(parsed, dict):
            return arguments, arguments
        arguments = parsed
    try:
        return arguments, json.dumps(arguments)
    except (TypeError, ValueError, RecursionError):
        return arguments, str(arguments)


def tool_call_action(name: str, arguments: str | dict[str, Any] | None) -> str:
    """The env action of a tool call: a JSON tool call (arguments that are not a JSON object as sent).

    Arguments that are not valid JSON reach the environment as they are, and it answers with a
    ``FORMAT_ERROR`` observation that says so.

    Example:
        >>> tool_call_action("get_period", {"period_name": "Q1", "year": 2022})
        '{"name": "get_period", "arguments": {"period_name": "Q1", "year": 2022}}'
        >>> tool_call_action("get_issues", None)
        '{"name": "get_issues", "arguments": {}}'
    """
    value, _ = _arguments(arguments)
    try:
        return json.dumps({"name": name, "arguments": value})
    except (TypeError, ValueError, RecursionError):
        return json.dumps({"name": name, "arguments": str(value)})


@dataclass(frozen=True)
class Reply:
    """A model's reply as the episode reads it.

    Attributes:
        message: The assistant message the conversation keeps (content read, tool calls with the core's ids).
        actions: The env actions to carry out, in order: one per tool call, or the text reply's one action.
            Empty when a function-calling reply has no tool call: the episode ends without an answer.
    """

    message: dict[str, Any]
    actions: tuple[str, ...]

    @property
    def ends_unanswered(self) -> bool:
        """A function-calling reply without a tool call: the episode ends here, with no answer."""
        return not self.actions


class ChatEpisode:
    """The conversation of one episode (see the module docs for what a reply does).

    Args:
        framework: ``"act"`` or ``"react"`` (text replies) or ``"fc"`` (native tool calls).

    Attributes:
        messages: The conversation so far, in OpenAI's format.
        tools: The tool schemas to send with each request (function calling; :func:`chat_tool_schemas`), or None.

    Example:
        >>> chat = ChatEpisode("fc")
        >>> info = {"persona": "service agent", "schema": "", "tools": [{"type": "function",
        ...     "function": {"name": "submit", "parameters": {"type": "object", "properties": {}}}}]}
        >>> chat.start(info)
        >>> chat.observe("Which state?")
        >>> [m["role"] for m in chat.messages]
        ['system', 'user']
        >>> chat.reply({"content": None, "tool_calls": [{"id": "x7", "type": "function",
        ...     "function": {"name": "submit", "arguments": '{"content":"OR"}'}}]}).actions
        ('{"name": "submit", "arguments": {"content": "OR"}}',)
        >>> chat.observe("Answer submitted.")
        >>> chat.messages[-1]
        {'role': 'tool', 'tool_call_id': 'call_0', 'content': 'Answer submitted.'}
    """

    def __init__(self, framework: Framework = "fc") -> None:
        if framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
        self.framework: Framework = framework
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] | None = None
        self._pending_calls: list[str] = []
        self._respond_calls: set[str] = set()
        self._user_turns: list[str] = []
        self._calls = 0

    @property
    def system_prompt(self) -> str | None:
        """The episode's system prompt (None before :meth:`start`)."""
        return self.messages[0]["content"] if self.messages else None

    @property
    def pending_calls(self) -> int:
        """Tool calls of the last reply not answered yet."""
        return len(self._pending_calls)

    def start(self, info: dict[str, Any]) -> None:
        """Begin the conversation with the system prompt built from the reset ``info``."""
        self.messages = [{"role": "system", "content": system_prompt(info, self.framework)}]
        self.tools = chat_tool_schemas(info.get("tools")) if self.framework == "fc" else None
        self._pending_calls = []
        self._respond_calls = set()
        self._user_turns = []
        self._calls = 0

    def observe(self, observation: str) -> None:
        """Add an observation: the ``tool`` message answering the next call of the last reply (for a call of
        ``respond``, :data:`DELIVERED`, the user's reply following as a ``user`` message once the reply's
        calls are all answered), else a ``user`` message (the question, the user's reply, or the answer to a
        text reply)."""
        if not self.messages:
            raise RuntimeError("call start() before observe()")
        if self._pending_calls:
            call_id = self._pending_calls.pop(0)
            if call_id in self._respond_calls and not observation.startswith(("Error:", "FORMAT_ERROR")):
                self.messages.append({"role": "tool", "tool_call_id": call_id, "content": DELIVERED})
                self._user_turns.append(observation)
            else:
                self.messages.append({"role": "tool", "tool_call_id": call_id, "content": observation})
            if not self._pending_calls:
                self._flush_user_turns()
        else:
            self.messages.append({"role": "user", "content": observation})

    def _flush_user_turns(self) -> None:
        self.messages.extend({"role": "user", "content": text} for text in self._user_turns)
        self._user_turns = []

    def close_calls(self) -> list[dict[str, Any]]:
        """Answer the calls left when the episode ended with :data:`NOT_RUN`; returns the messages added."""
        added = [{"role": "tool", "tool_call_id": call_id, "content": NOT_RUN} for call_id in self._pending_calls]
        self.messages.extend(added)
        self._pending_calls = []
        self._flush_user_turns()
        return added

    def reply(self, message: dict[str, Any]) -> Reply:
        """Add the model's reply (``content`` and ``tool_calls`` in OpenAI's format, or ``{"name",
        "arguments"}`` dicts as a trainer parses them) and return what to carry out."""
        if not self.messages:
            raise RuntimeError("call start() before reply()")
        if self._pending_calls:
            raise RuntimeError("the last reply's tool calls are not all answered: observe() each first")
        content = message.get("content") or ""
        if not isinstance(content, str):
            raise TypeError(f"a reply's content must be text, got {type(content).__name__}")
        tool_calls = message.get("tool_calls") or [] if self.framework == "fc" else []
        if self.framework != "fc":
            content = read_text_reply(content)
            self.messages.append({"role": "assistant", "content": content})
            return Reply(dict(self.messages[-1]), (text_action(content, self.framework),))
        entry: dict[str, Any] = {"role": "assistant", "content": content or None}
        actions = []
        calls = []
        for call in tool_calls:
            function = call.get("function", call) if isinstance(call, dict) else {}
            name = function.get("name") if isinstance(function.get("name"), str) else ""
            value, text = _arguments(function.get("arguments"))
            call_id = f"call_{self._calls}"
            self._calls += 1
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": text}})
            actions.append(tool_call_action(name, value) if name else text)
            self._pending_calls.append(call_id)
            if name == "respond":
                self._respond_calls.add(call_id)
        if calls:
            entry["tool_calls"] = calls
        self.messages.append(entry)
        return Reply(dict(entry), tuple(actions))
