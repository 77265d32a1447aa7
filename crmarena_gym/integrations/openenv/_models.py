"""The OpenEnv data models: a tool call or a text reply in, the next chat message out."""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

__all__ = ["CRMArenaAction", "CRMArenaObservation", "CRMArenaState", "ToolCall"]


class ToolCall(BaseModel):
    """A function call, as a model makes it.

    Attributes:
        name: The function's name (one of the reset observation's ``tools``).
        arguments: The arguments: a JSON object, or its text as OpenAI sends it.
        id: The call's id (it comes back as the ``tool_call_id`` of the answering message).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = Field(default=None, max_length=200)


class CRMArenaAction(Action):
    """One model reply: a tool call, several (``tool_calls``, run in order), or a text reply.

    The episode semantics are the chat core's (:mod:`crmarena_gym.chat`): every call of a reply runs, one
    turn each; in function calling a reply without a call (``text`` alone) ends the episode unanswered.
    The core numbers the calls itself (``call_0``, ``call_1`` ... over the episode): the answering
    messages carry those ids, whatever ``id`` a call was sent with.

    Attributes:
        tool_call: A function call.
        tool_calls: The function calls of one reply (not with ``tool_call``).
        text: A text reply, read as the environment reads actions (ReAct's thought line dropped in the
            ``react`` framework); with tool calls, the reply's content.
        episode_id: Over stateless HTTP, the episode to act in (the reset observation's ``episode_id``);
            a WebSocket session needs none.
    """

    tool_call: ToolCall | None = None
    tool_calls: list[ToolCall] | None = Field(default=None, min_length=1, max_length=64)
    text: str | None = None
    episode_id: str | None = Field(default=None, max_length=255)

    @model_validator(mode="after")
    def _one_kind(self) -> CRMArenaAction:
        if (self.tool_call is not None and self.tool_calls is not None) or (
            self.tool_call is None and self.tool_calls is None and self.text is None
        ):
            # A PydanticCustomError keeps the error JSON-able (a ValueError's context is an exception object,
            # which the server could not put in its 422 answer).
            raise PydanticCustomError(
                "one_action",
                "an action is a reply: a tool_call {{name, arguments}}, or tool_calls [...], and/or a text reply",
            )
        return self

    def reply(self) -> dict[str, Any]:
        """The reply as an OpenAI-format assistant message."""
        calls = self.tool_calls or ([self.tool_call] if self.tool_call is not None else [])
        return {
            "role": "assistant",
            "content": self.text,
            "tool_calls": [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls],
        }


class CRMArenaObservation(Observation):
    """What the agent sees after a reset or a step (``done`` and ``reward`` are OpenEnv's).

    Attributes:
        text: The environment's observation (the question and its context at reset, then each result).
        message: The same as the next chat message: ``user`` (reset, text replies) or ``tool`` (after a
            tool call, with its ``tool_call_id``).
        episode_id: The episode's id (send it back with each HTTP step).
        task: The task's abbreviation.
        task_id: The instance's ``idx`` in its split.
        split: ``train`` or ``test``.
        turn: Turns used so far.
        truncated: The turn budget ran out.
        error: What went wrong, when it did: an environment code (``FORMAT_ERROR``, ``FUNCTION_ERROR``,
            ``MALFORMED_QUERY`` ...) or a session code (``NO_EPISODE``, ``EPISODE_OVER``, ``BAD_RESET``); the
            message is in ``text``. (A server at capacity refuses the reset itself: ``CAPACITY_REACHED``.)
        system_prompt: At reset, the system prompt (the one the litellm policy is evaluated with).
        tools: At reset, the tool schemas (OpenAI format).
        messages: At reset, the conversation to start from: the system prompt and the question; after a
            step, the messages the reply added (one ``tool`` message per call, calls not run included).
        end_reason: Once the episode is over: ``submitted``, ``max_turns`` or ``no_tool_call``.
        record: Once the episode is over, its record: the fields of an evaluation record (the gold answer,
            the score breakdown, the trajectory ...; see :class:`~crmarena_gym.chat.EpisodeRecorder`).
    """

    text: str = ""
    message: dict[str, Any] = Field(default_factory=dict)
    episode_id: str | None = None
    task: str | None = None
    task_id: int | None = None
    split: str | None = None
    turn: int = 0
    truncated: bool = False
    error: str | None = None
    system_prompt: str | None = None
    tools: list[dict[str, Any]] | None = None
    messages: list[dict[str, Any]] | None = None
    end_reason: str | None = None
    record: dict[str, Any] | None = None


class CRMArenaState(State):
    """The session's state (``episode_id`` and ``step_count`` are OpenEnv's).

    Attributes:
        task: The task's abbreviation, None before the first reset.
        task_id: The instance's ``idx``.
        split: ``train`` or ``test``.
        done: The episode is over.
        reward: The reward so far (set at the submission).
        framework: ``fc``, ``act`` or ``react``.
        toolset: The environment's toolset.
    """

    task: str | None = None
    task_id: int | None = None
    split: str | None = None
    done: bool = True
    reward: float = 0.0
    framework: str = "fc"
    toolset: str = "functions"
