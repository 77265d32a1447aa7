"""A policy for the interrupt tests: it keeps SQLite busy, so that a signal often lands inside a query."""

from __future__ import annotations

import os
import time

from crmarena_gym.policies import Policy

# A scan of every email with a pattern no index serves, joined to its cases: a millisecond or more of SQLite
# (landing a signal inside SQLite for sure is the job of the direct test with a cross join).
HEAVY_QUERY = (
    "execute SELECT Id, Subject FROM Case WHERE Id IN (SELECT ParentId FROM EmailMessage WHERE Subject LIKE '%e%a%') "
    "AND Subject LIKE '%e%' ORDER BY Subject"
)
# Seconds to think before each action: long enough that a run of 120 episodes lasts tens of seconds (so a
# signal always finds it under way, however loaded the machine), and 0 for a resumed run to finish fast.
DELAY_ENV = "HEAVY_POLICY_DELAY"


class HeavyQueries(Policy):
    """Runs :data:`HEAVY_QUERY` ``queries`` times, thinking ``delay`` seconds before each, then submits None
    (``delay`` defaults to ``$HEAVY_POLICY_DELAY``, else 0.02)."""

    def __init__(self, queries: int = 8, delay: float | None = None) -> None:
        super().__init__()
        self.queries = queries
        self.delay = float(os.environ.get(DELAY_ENV, "0.02")) if delay is None else delay
        self._sent = 0

    def reset(self, observation: str, info: dict, *, seed: int | None = None) -> None:
        super().reset(observation, info, seed=seed)
        self._sent = 0

    def act(self, observation: str) -> str:
        time.sleep(self.delay)  # a run lasts seconds, so that a signal finds it under way
        self._sent += 1
        return HEAVY_QUERY if self._sent <= self.queries else "submit None"
