"""Playing a discrete policy on held-out instances, and the random-candidate baseline."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crmarena_gym.rl._wrapper import CandidateActionWrapper

__all__ = ["EvaluationResult", "RandomCandidatePolicy", "evaluate_policy"]

#: A policy: the observation dict (``observations`` and ``action_mask``) to a slot number. A policy with a
#: ``begin_episode(info)`` method is told each episode's reset ``info`` (:class:`~crmarena_gym.rl.FixedSlotOrder`).
Policy = Callable[[dict[str, np.ndarray]], int]


class RandomCandidatePolicy:
    """The baseline: a uniformly random candidate among the slots that hold one.

    Example:
        >>> policy = RandomCandidatePolicy(seed=0)
        >>> policy({"action_mask": np.array([0.0, 1.0, 0.0], dtype=np.float32)})
        1
    """

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: dict[str, np.ndarray]) -> int:
        available = np.flatnonzero(np.asarray(obs["action_mask"]) > 0)
        if available.size == 0:
            raise ValueError("no candidate slot holds an action (the action mask is all zeros)")
        return int(self.rng.choice(available))


@dataclass
class EvaluationResult:
    """Success over a set of instances.

    Attributes:
        rewards: Per task family, each episode's reward.
        turns: Per task family, each episode's number of actions.
        level: The help level the episodes were played at (``info["help_level"]``).
    """

    rewards: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    turns: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    level: str | None = None

    def success(self) -> dict[str, float]:
        """The mean reward per task family (exact-match tasks: the success rate)."""
        return {task: float(np.mean(r)) for task, r in sorted(self.rewards.items())}

    def overall(self) -> float:
        """The mean reward over every episode."""
        every = [r for rewards in self.rewards.values() for r in rewards]
        return float(np.mean(every)) if every else 0.0


def evaluate_policy(
    env: CandidateActionWrapper, policy: Policy, task_ids: Iterable[int], *, repeats: int = 1
) -> EvaluationResult:
    """Play one episode per instance (``repeats`` times each) and record the rewards.

    Args:
        env: The wrapped environment holding the instances.
        policy: Observation to slot number.
        task_ids: The ``idx`` of each instance to play.
        repeats: Episodes per instance (for a stochastic policy).

    Returns:
        Rewards and turns per task family.
    """
    result = EvaluationResult()
    for task_id in task_ids:
        for _ in range(repeats):
            obs, info = env.reset(options={"task_id": task_id})
            family: Any = info["abbrev"]
            result.level = info.get("help_level", result.level)
            begin = getattr(policy, "begin_episode", None)
            if callable(begin):
                begin(info)
            reward, turns, done = 0.0, 0, False
            while not done:
                obs, r, terminated, truncated, info = env.step(policy(obs))
                reward += float(r)
                turns += 1
                done = terminated or truncated
            result.rewards[family].append(reward)
            result.turns[family].append(turns)
    return result
