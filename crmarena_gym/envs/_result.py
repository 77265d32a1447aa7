"""The structured result of a step, as ``info["result"]`` carries it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["StepResult"]


@dataclass(frozen=True, slots=True)
class StepResult:
    """What a query or a function call returned, before it was rendered as the observation.

    ``info["result"]`` holds one of these for every step that ran a query or a call (and nothing for a
    submission, a format error or a refused query). Results are lists, dicts, text or numbers depending
    on the call; wrapping them gives the key a single type, which Gymnasium's vector environments need
    to batch ``info`` (they merge a dict key by key and a value by the type first seen, so a list in one
    sub-environment and a dict in the next would not merge).

    Attributes:
        value: The result: a query's or search's rows (as the observation shows them), or a function's
            return value.

    Example:
        >>> import gymnasium as gym
        >>> env = gym.make("CRMArena-BRI-v0", tasks=[{"idx": 0, "task": "BRI", "query": "Which state?",
        ...     "answer": "OR", "metadata": {"required": "- Today's date: 2021-03-01"}}], org=getfixture("tiny_org"))
        >>> _ = env.reset(seed=0)
        >>> info = env.step("execute SELECT Id FROM Case")[-1]
        >>> len(info["result"].value)
        2
    """

    value: Any
