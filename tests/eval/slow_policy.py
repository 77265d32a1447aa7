"""A policy for the kill-and-resume tests: the oracle, slowed down so that a run can be killed mid-way."""

from __future__ import annotations

import time

from crmarena_gym.policies import OraclePolicy


class SlowOracle(OraclePolicy):
    """The oracle, sleeping ``delay`` seconds before each action."""

    def __init__(self, delay: float = 0.05) -> None:
        super().__init__()
        self.delay = delay

    def act(self, observation: str) -> str:
        time.sleep(self.delay)
        return super().act(observation)
