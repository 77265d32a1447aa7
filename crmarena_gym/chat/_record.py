"""The episode record: one shape for an evaluation's ``results.jsonl`` line and every trainer adapter.

:class:`EpisodeRecorder` builds it step by step. The evaluation runner (:func:`crmarena_gym.eval.run_episode`)
and :class:`~crmarena_gym.chat.ChatSession` (OpenEnv, TRL, SkyRL, verifiers) both use it, so a training
rollout is recorded with the fields an evaluated episode has: task, abbrev, idx, trial, seed, reward, f1,
success, turns, end_reason, error, fatal, submitted, gold, answerable, reward_breakdown, usage and the
trajectory (plus ``final_reply`` when a function-calling reply without a call ended the episode).

The end reasons: ``submitted``, ``max_turns`` (the turn budget ran out), ``no_tool_call`` (a
function-calling reply without a tool call), ``stopped`` (a trainer ended the rollout without saying why:
TRL), and the runner's errors (``llm_error``, ``policy_error``,
``env_error``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["END_REASONS", "RECORD_FIELDS", "EpisodeRecorder", "jsonable"]

#: The fields of every episode record, in order.
RECORD_FIELDS = (
    "task",
    "abbrev",
    "idx",
    "trial",
    "seed",
    "reward",
    "f1",
    "success",
    "turns",
    "end_reason",
    "error",
    "fatal",
    "submitted",
    "gold",
    "answerable",
    "reward_breakdown",
    "usage",
    "trajectory",
)
#: How an episode can end without an error: the answer graded, the agent's turn budget spent, a
#: function-calling reply without a call, a stop; in a conversation also the simulated user's turn budget
#: spent (``user_turns``; the conversation's own ``end`` says whether the user or the agent ended it).
END_REASONS = ("submitted", "max_turns", "no_tool_call", "stopped", "user_turns")
# Step info kept in the trajectory: everything but the raw result (the observation shows it), the turn
# (the step has it) and the submission (the record has it). Wrapper effects (``dropout``,
# ``turns_left`` ...) are kept whatever their key.
_STEP_INFO_SKIPPED = frozenset({"result", "turn", "submitted", "reward_breakdown"})


def jsonable(value: Any) -> Any:
    """``value`` with every part JSON can hold kept and anything else as its ``repr``.

    Example:
        >>> jsonable({"a": (1, None), 2: object})
        {'a': [1, None], '2': "<class 'object'>"}
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return repr(value)


class EpisodeRecorder:
    """Builds the record of one episode.

    Args:
        observation: The reset observation.
        info: The reset ``info``.
        instance: The instance played (its gold answer goes in the record), when known.
        idx: The instance's idx.
        trial: The trial number.
        seed: The episode's reset seed.

    Example:
        >>> rec = EpisodeRecorder("Which state?", {"task": "best_region_identification", "abbrev": "BRI",
        ...     "reward_metric": "exact_match"}, idx=3)
        >>> rec.step("submit OR", "Answer submitted.", 1.0, True, False, {"submitted": "OR"})
        >>> record = rec.finish()
        >>> record["end_reason"], record["success"], record["turns"], len(record["trajectory"])
        ('submitted', True, 1, 2)
    """

    def __init__(
        self,
        observation: str,
        info: Mapping[str, Any],
        *,
        instance: Any = None,
        idx: int | None = None,
        trial: int = 0,
        seed: int | None = None,
    ) -> None:
        self.record: dict[str, Any] = dict.fromkeys(RECORD_FIELDS)
        self.record.update(
            task=info.get("task"),
            abbrev=info.get("abbrev"),
            idx=idx if idx is not None else info.get("idx"),
            trial=trial,
            seed=seed,
            reward=0.0,
            success=False,
            turns=0,
            fatal=False,
            trajectory=[{"observation": observation}],
        )
        if instance is not None and hasattr(instance, "answerable"):
            self.record["gold"] = instance.answer
            self.record["answerable"] = instance.answerable
        self._fuzzy = info.get("reward_metric") == "fuzzy_match"
        user = info.get("user")
        if isinstance(user, Mapping):  # a conversation: the user's messages and the criteria they revealed
            self.record["conversation"] = {
                "user": user.get("kind"),
                "opening": user.get("opening"),
                "messages": [{"turn": 0, "role": "user", "content": user.get("opening")}],
                "revealed": [],
                "user_turns": 0,
                "end": None,
                "user_summary": None,
            }

    def step(
        self,
        action: str,
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: Mapping[str, Any],
        details: Mapping[str, Any] | None = None,
    ) -> None:
        """Record one environment step (``details``: what the policy adds, such as the model's reply)."""
        record = self.record
        record["turns"] += 1
        entry: dict[str, Any] = {"turn": record["turns"], "action": action, "observation": observation}
        entry.update({k: jsonable(v) for k, v in info.items() if k not in _STEP_INFO_SKIPPED})
        if details:
            entry["policy"] = dict(details)
        record["trajectory"].append(entry)
        conversation = record.get("conversation")
        if conversation is not None and "user_reply" in info:
            turn = record["turns"]
            conversation["messages"].append({"turn": turn, "role": "agent", "content": info.get("message")})
            conversation["messages"].append({"turn": turn, "role": "user", "content": info["user_reply"]})
            conversation["revealed"] += [
                name for name in info.get("revealed") or () if name not in conversation["revealed"]
            ]
            conversation["user_turns"] = info.get("user_turns", conversation["user_turns"] + 1)
        if conversation is not None and (terminated or truncated):
            conversation["end"] = info.get("end_reason") or ("max_turns" if truncated else "submitted")
            conversation["user_summary"] = jsonable(info.get("user"))
        if terminated:
            record["reward"] = float(reward)
            record["submitted"] = info.get("submitted")
            record["reward_breakdown"] = info.get("reward_breakdown")
            record["end_reason"] = "submitted"
        elif truncated:
            record["end_reason"] = "user_turns" if info.get("end_reason") == "user_turns" else "max_turns"

    def end(
        self, end_reason: str, *, error: str | None = None, fatal: bool = False, final_reply: str | None = None
    ) -> None:
        """End the episode without a step: an error, or a function-calling reply without a tool call."""
        self.record["end_reason"] = end_reason
        self.record["error"] = error
        self.record["fatal"] = fatal
        if final_reply is not None:
            self.record["final_reply"] = final_reply

    @property
    def ended(self) -> bool:
        """The record has its end reason."""
        return self.record["end_reason"] is not None

    def finish(self, usage: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The record, with f1 (knowledge questions), success and usage filled in."""
        record = self.record
        if self._fuzzy:
            record["f1"] = record["reward"]
        record["success"] = record["reward"] >= 1.0
        record["usage"] = dict(usage) if usage is not None else None
        return record
