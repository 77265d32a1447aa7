"""A policy for the interrupt tests: it keeps SQLite busy, so that a signal often lands inside a query."""

from __future__ import annotations

import time

from crmarena_gym.policies import Policy

# A scan of every email with a pattern no index serves, joined to its cases: tens of milliseconds.
HEAVY_QUERY = (
    "execute SELECT Id, Subject FROM Case WHERE Id IN (SELECT ParentId FROM EmailMessage WHERE Subject LIKE '%e%a%') "
    "AND Subject LIKE '%e%' ORDER BY Subject"
)


class HeavyQueries(Policy):
    """Runs :data:`HEAVY_QUERY` ``queries`` times, thinking ``delay`` seconds before each, then submits None."""

    def __init__(self, queries: int = 8, delay: float = 0.004) -> None:
        super().__init__()
        self.queries = queries
        self.delay = delay
        self._sent = 0

    def reset(self, observation: str, info: dict, *, seed: int | None = None) -> None:
        super().reset(observation, info, seed=seed)
        self._sent = 0

    def act(self, observation: str) -> str:
        time.sleep(self.delay)  # a run lasts seconds, so that a signal finds it under way
        self._sent += 1
        return HEAVY_QUERY if self._sent <= self.queries else "submit None"
