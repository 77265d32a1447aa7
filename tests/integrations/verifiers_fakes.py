"""A scripted player for verifiers environments: the seat's interaction answers each turn with the next
scripted reply (no model, no harness, no network), recording the user turns it was sent."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class FakeTrace:
    """The parts of a verifiers trace an environment writes: rewards and info."""

    def __init__(self) -> None:
        self.rewards: dict[str, float] = {}
        self.info: dict[str, Any] = {}

    def record_reward(self, name: str, value: float, weight: float = 1.0) -> None:
        self.rewards[name] = value


class ScriptedInteraction:
    """``async with player.interaction(task)``: each ``turn`` returns the next reply as a verifiers Segment."""

    def __init__(self, task: Any, replies: Iterable[str]) -> None:
        from verifiers.v1.agent import Segment

        self._segment = Segment  # its last_reply is the last assistant message's text (verifiers 0.3.1 and 0.4)
        self.task = task
        self.replies = list(replies)
        self.sent: list[str | None] = []
        self.trace = FakeTrace()

    async def __aenter__(self) -> ScriptedInteraction:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def turn(self, message: str | None = None) -> Any:
        from verifiers.v1.types import AssistantMessage

        self.sent.append(message)
        if len(self.sent) > len(self.replies):
            return self._segment(messages=[], terminated=True)
        reply = AssistantMessage(content=self.replies[len(self.sent) - 1])
        return self._segment(messages=[reply])


class ScriptedAgents:
    """``agents.player``: hands out one scripted interaction (kept in ``interactions``)."""

    def __init__(self, replies: Iterable[str]) -> None:
        self.replies = list(replies)
        self.interactions: list[ScriptedInteraction] = []

    @property
    def player(self) -> ScriptedAgents:
        return self

    def interaction(self, task: Any) -> ScriptedInteraction:
        self.interactions.append(ScriptedInteraction(task, self.replies))
        return self.interactions[-1]
