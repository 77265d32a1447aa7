"""The policy interface: what an agent must do to be run by the evaluation runner.

A policy plays one episode at a time: :meth:`Policy.reset` with the first observation and the reset
``info`` (task, persona, schema, tools, action format ...), then :meth:`Policy.act` on every
observation, the first one included, until the episode ends. :meth:`Policy.usage` reports what the
episode cost in model calls.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from crmarena_gym.tasks import TaskInstance

__all__ = ["CallUsage", "EpisodeEnded", "EpisodeUsage", "Policy", "PolicyError"]


class PolicyError(RuntimeError):
    """The policy cannot go on with the episode (the runner records the episode as an error).

    Attributes:
        end_reason: How the runner records the episode's end (``"llm_error"``, ``"policy_error"``).
        fatal: The error will recur in every episode (a missing or rejected API key, an unknown model),
            so the runner records the episode and then stops the run instead of playing the others.
        unreachable: The model could not be reached at all (no connection, timeouts past the retry
            budget); the runner stops a run whose episodes keep failing so.
    """

    end_reason: str = "policy_error"
    fatal: bool = False
    unreachable: bool = False
    #: Whether the runner records the episode as an error (with the message in ``error``).
    is_error: bool = True


class EpisodeEnded(PolicyError):
    """The policy ends the episode without an action, which is not an error: a function-calling model
    replied without a tool call (see :mod:`crmarena_gym.chat`), so the episode ends with no answer.

    Attributes:
        final_reply: The reply that ended it (kept in the record).
    """

    end_reason = "no_tool_call"
    is_error = False

    def __init__(self, message: str, final_reply: str = "") -> None:
        super().__init__(message)
        self.final_reply = final_reply


@dataclass(frozen=True)
class CallUsage:
    """The tokens and cost of one model call.

    Attributes:
        prompt_tokens: Input tokens (None when the provider does not say).
        completion_tokens: Output tokens (None when the provider does not say).
        total_tokens: Both (None when the provider does not say).
        cost: The cost in US dollars; None when neither the provider nor litellm's price table knows
            the model ("unpriced"), never a made-up 0.
        cost_source: ``"provider"`` (the provider's own figure), ``"litellm"`` (litellm's price
            table) or None (unpriced).
        attempts: How many requests the call took (1 plus its retries).
    """

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None
    cost_source: str | None = None
    attempts: int = 1


@dataclass
class EpisodeUsage:
    """Model calls of one episode, summed.

    Attributes:
        calls: Model calls that returned a reply.
        prompt_tokens: Input tokens over the calls.
        completion_tokens: Output tokens over the calls.
        total_tokens: All tokens over the calls.
        cost: The summed cost of the priced calls; None when some call was made and none was priced.
        unpriced_calls: Calls whose cost is unknown (their cost is not in ``cost``).
        retries: Requests retried after a rate limit, a timeout or a server error.
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = 0.0
    unpriced_calls: int = 0
    retries: int = 0
    per_call: list[CallUsage] = field(default_factory=list, repr=False)

    def add(self, call: CallUsage) -> None:
        """Count one call."""
        self.calls += 1
        self.prompt_tokens += call.prompt_tokens or 0
        self.completion_tokens += call.completion_tokens or 0
        self.total_tokens += call.total_tokens or 0
        self.retries += call.attempts - 1
        self.per_call.append(call)
        if call.cost is None:
            self.unpriced_calls += 1
        priced = [c.cost for c in self.per_call if c.cost is not None]
        self.cost = sum(priced) if priced else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary (without the per-call list).

        Example:
            >>> EpisodeUsage(calls=1, total_tokens=9).to_dict()["total_tokens"]
            9
        """
        # The fields are numbers: no deep copy (asdict copied the per-call list only to drop it).
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "per_call"}


class Policy(ABC):
    """An agent that plays CRMArena episodes.

    Subclasses implement :meth:`act`, and usually :meth:`reset`. Class attributes tell the runner how to
    build the environment: ``toolset`` (None: the environment's default) and ``privileged`` (the policy
    needs the hidden parameters in ``info``, as the oracle does).

    Example:
        >>> class AlwaysNone(Policy):
        ...     def act(self, observation):
        ...         return "submit None"
        >>> policy = AlwaysNone()
        >>> policy.reset("Which agent ...?", {"task": "handle_time"})
        >>> policy.act("Which agent ...?"), policy.usage().calls
        ('submit None', 0)
    """

    #: The toolset the policy is written for (``"soql"``, ``"functions"``, ``"flex"``), or None.
    toolset: ClassVar[str | None] = None
    #: Whether the policy needs ``privileged=True`` (the gold and hidden parameters in ``info``).
    privileged: ClassVar[bool] = False

    def __init__(self) -> None:
        self._usage = EpisodeUsage()
        self.info: dict[str, Any] = {}

    def attach(self, env: Any) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Called once with the environment the policy will play in, before the first episode."""

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        """Start an episode.

        Args:
            observation: The first observation (the question and its context).
            info: The environment's reset ``info``.
            seed: A seed for the policy's own randomness in this episode.
        """
        self._usage = EpisodeUsage()
        self.info = info

    @abstractmethod
    def act(self, observation: str) -> str:
        """The next action for the latest observation (the first observation on the first call).

        Raises:
            PolicyError: The policy cannot go on (a model that keeps failing, say).
        """

    def observe(self, info: dict[str, Any]) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Called by the runner after each step with the step's ``info`` (``info["result"]`` holds what a
        query or call returned), for policies that read results rather than observations."""

    def unplayable(self, instances: Sequence[TaskInstance]) -> dict[int, str]:
        """The instances this policy cannot play, by ``idx``, each with the reason; none by default.

        The runner asks before the first episode and refuses the run rather than recording failures.
        """
        return {}

    def settings(self) -> dict[str, Any]:
        """The settings in effect (the model, its sampling, the server it calls), for the run's metadata."""
        return {}

    def check_ready(self) -> None:  # noqa: B027 - optional hook
        """Raise :class:`PolicyError` when no episode can be played (a model's key is missing).

        The runner calls it once before the first episode, so that such a run is refused up front rather
        than recorded as failed episodes.
        """

    def usage(self) -> EpisodeUsage:
        """The model usage of the current episode so far."""
        return self._usage

    def system_prompt(self) -> str | None:
        """The current episode's system prompt, for policies that prompt a model (None otherwise).

        The runner records its hash with each episode and the prompt itself once per run.
        """
        return None

    def step_details(self) -> dict[str, Any]:
        """Extra details of the last :meth:`act` worth keeping in the trajectory (the model's reply)."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (connections ...)."""
