"""A CRMArena episode as an OpenAI-format conversation: messages in, env actions out.

:class:`ChatEpisode` holds the conversation of one episode. It starts with the system prompt
(:func:`~crmarena_gym.chat.system_prompt`), takes each observation as the next message (a ``user``
message, or ``tool`` messages answering the model's tool calls), and turns each model reply (text, or
tool calls) into the text action the environment reads. It is deterministic: the same observations and
replies give the same messages and actions.
"""

from __future__ import annotations

import json
import re
from typing import Any

from crmarena_gym.chat._prompt import FRAMEWORKS, Framework, system_prompt

__all__ = ["NOT_RUN", "ChatEpisode", "react_action", "text_action", "tool_call_action"]

#: The answer to every tool call of a reply but the first (one call per reply is carried out).
NOT_RUN = "Not run: make one function call per reply."

_TAGGED = re.compile(r"<(execute|submit|respond)>", re.IGNORECASE)
_THOUGHT_LINE = re.compile(r"^\s*thought\s*:.*$", re.IGNORECASE | re.MULTILINE)
_ACTION_PREFIX = re.compile(r"^\s*action\s*:\s*", re.IGNORECASE)


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


def text_action(text: str, framework: Framework) -> str:
    """The env action of a text reply: ReAct's thought is dropped, other replies are stripped.

    Example:
        >>> text_action("  submit None\\n", "act")
        'submit None'
    """
    return react_action(text) if framework == "react" else text.strip()


def tool_call_action(name: str, arguments: str | dict[str, Any] | None) -> str:
    """The env action of a tool call: a JSON tool call (arguments as the model sent them).

    Arguments that are not valid JSON reach the environment as they are, and it answers with a
    ``FORMAT_ERROR`` observation that says so.

    Example:
        >>> tool_call_action("get_period", {"period_name": "Q1", "year": 2022})
        '{"name": "get_period", "arguments": {"period_name": "Q1", "year": 2022}}'
        >>> tool_call_action("get_issues", None)
        '{"name": "get_issues", "arguments": "{}"}'
    """
    return json.dumps({"name": name, "arguments": "{}" if arguments is None else arguments})


class ChatEpisode:
    """The conversation of one episode.

    Args:
        framework: ``"act"`` or ``"react"`` (text replies) or ``"fc"`` (native tool calls).

    Attributes:
        messages: The conversation so far, in OpenAI's format.
        tools: The tool schemas to send with each request (function calling), or None.

    Example:
        >>> chat = ChatEpisode("fc")
        >>> info = {"persona": "service agent", "schema": "", "tools": [{"type": "function",
        ...     "function": {"name": "submit", "parameters": {"type": "object", "properties": {}}}}]}
        >>> chat.start(info)
        >>> chat.observe("Which state?")
        >>> [m["role"] for m in chat.messages]
        ['system', 'user']
        >>> chat.reply({"content": None, "tool_calls": [{"id": "c1", "type": "function",
        ...     "function": {"name": "submit", "arguments": '{"content": "OR"}'}}]})
        '{"name": "submit", "arguments": "{\\\\"content\\\\": \\\\"OR\\\\"}"}'
        >>> chat.observe("Answer submitted.")
        >>> chat.messages[-1]
        {'role': 'tool', 'tool_call_id': 'c1', 'content': 'Answer submitted.'}
    """

    def __init__(self, framework: Framework = "fc") -> None:
        if framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
        self.framework: Framework = framework
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] | None = None
        self._pending_calls: list[str] = []

    @property
    def system_prompt(self) -> str | None:
        """The episode's system prompt (None before :meth:`start`)."""
        return self.messages[0]["content"] if self.messages else None

    def start(self, info: dict[str, Any]) -> None:
        """Begin the conversation with the system prompt built from the reset ``info``."""
        self.messages = [{"role": "system", "content": system_prompt(info, self.framework)}]
        self.tools = list(info.get("tools") or []) if self.framework == "fc" else None
        self._pending_calls = []

    def observe(self, observation: str) -> None:
        """Add an observation: ``tool`` messages answering the last reply's calls, else a ``user`` message.

        Every tool call needs an answer; only the first call of a reply is carried out, the others are
        answered with :data:`NOT_RUN`.
        """
        if not self.messages:
            raise RuntimeError("call start() before observe()")
        if not self._pending_calls:
            self.messages.append({"role": "user", "content": observation})
            return
        first, *others = self._pending_calls
        self.messages.append({"role": "tool", "tool_call_id": first, "content": observation})
        self.messages.extend({"role": "tool", "tool_call_id": call_id, "content": NOT_RUN} for call_id in others)
        self._pending_calls = []

    def reply(self, message: dict[str, Any]) -> str:
        """Add the model's reply (``content`` and ``tool_calls`` in OpenAI's format); return the env action.

        The action is the first tool call as a JSON tool call, else the text reply (ReAct's thought
        dropped when it has no tags).
        """
        content = message.get("content") or ""
        tool_calls = message.get("tool_calls") or []
        entry: dict[str, Any] = {"role": "assistant", "content": content or None}
        if tool_calls:
            entry["tool_calls"] = tool_calls
            self._pending_calls = [call["id"] for call in tool_calls]
            self.messages.append(entry)
            first = tool_calls[0]["function"]
            return tool_call_action(first["name"], first.get("arguments") or "{}")
        self.messages.append(entry)
        return text_action(content, self.framework)
