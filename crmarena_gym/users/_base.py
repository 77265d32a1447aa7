"""What every simulated user is: it opens a conversation and answers the agent's messages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from crmarena_gym.tasks import InteractiveSplit, TaskInstance

__all__ = ["END_MARKER", "UserReply", "UserSimulator", "parse_end_marker"]

#: The user's end of the conversation: its reply's last line, alone (Pro's marker).
END_MARKER = "###STOP###"


@dataclass(frozen=True)
class UserReply:
    """One user turn.

    Attributes:
        text: What the user says (the end marker taken off).
        ended: The user ended the conversation (its goal met, or the agent answered None).
        revealed: The criteria (names) this reply revealed.
        usage: The LLM call's usage (tokens, cost), for an LLM user; empty otherwise.
    """

    text: str
    ended: bool = False
    revealed: tuple[str, ...] = ()
    usage: dict[str, Any] = field(default_factory=dict)


class UserSimulator(Protocol):
    """A simulated user: :meth:`start` gives its first message, :meth:`reply` answers each agent message."""

    kind: str

    def start(self, instance: TaskInstance, split: InteractiveSplit, *, seed: int) -> UserReply:
        """Open the conversation about ``instance`` (whose request ``split`` divides)."""
        ...

    def reply(self, message: str) -> UserReply:
        """Answer the agent's ``message``."""
        ...

    def summary(self) -> dict[str, Any]:
        """What the user did this episode (kind, revealed criteria, usage) for records."""
        ...


_MARKER_LINE = re.compile(r"\n?[ \t]*" + re.escape(END_MARKER) + r"[ \t]*\Z")


def parse_end_marker(text: str) -> tuple[str, bool]:
    """Split a user's reply into its text and whether it ends the conversation, strictly.

    The conversation ends only when the reply's last line is the marker alone; a marker elsewhere (quoted,
    inside a sentence) ends nothing and is left in the text.

    Example:
        >>> parse_end_marker("###STOP###")
        ('', True)
        >>> parse_end_marker("Thanks!\\n###STOP###")
        ('Thanks!', True)
        >>> parse_end_marker("Say ###STOP### when done")
        ('Say ###STOP### when done', False)
    """
    stripped = text.strip()
    match = _MARKER_LINE.search(stripped)
    if match is None or (match.start() > 0 and "\n" not in match.group(0)):
        return stripped, False
    return stripped[: match.start()].strip(), True
