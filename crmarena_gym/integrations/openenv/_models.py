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
    """One agent action: a tool call, or a text reply (``execute <query>``, ``submit <answer>`` ...).

    Attributes:
        tool_call: A function call (exactly one of ``tool_call`` and ``text``).
        text: A text reply, read as the environment reads actions (ReAct's thought line dropped in the
            ``react`` framework).
        episode_id: Over stateless HTTP, the episode to act in (the reset observation's ``episode_id``);
            a WebSocket session needs none.
    """

    tool_call: ToolCall | None = None
    text: str | None = None
    episode_id: str | None = Field(default=None, max_length=255)

    @model_validator(mode="after")
    def _one_kind(self) -> CRMArenaAction:
        if (self.tool_call is None) == (self.text is None):
            # A PydanticCustomError keeps the error JSON-able (a ValueError's context is an exception object,
            # which the server could not put in its 422 answer).
            raise PydanticCustomError(
                "one_action", "an action is either a tool_call {{name, arguments}} or a text reply, exactly one of them"
            )
        return self


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
        messages: At reset, the conversation to start from: the system prompt and the question.
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
