"""Issue 36's fuzz harness, the test-suite size: seeded hostile actions over env ids and every toolset, and
nothing raises out of ``step`` (``benchmarks/bench_fuzz.py`` plays 100,000 with a memory probe)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import gymnasium as gym
import pytest

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.tasks import TaskInstance
from tests import fuzz_actions

# The env ids env_tasks has instances for (HTU, TCU, TII, MTA, BRI), and the all-task one.
ENV_IDS = ["CRMArena-HTU-v0", "CRMArena-TCU-v0", "CRMArena-TII-v0", "CRMArena-MTA-v0", "CRMArena-BRI-v0", "CRMArena-v0"]


def test_the_harness_is_seeded() -> None:
    tools = [{"function": {"name": "get_period", "parameters": {"properties": {"period_name": {}, "year": {}}}}}]
    draw = [fuzz_actions.action(r, tools) for r in [fuzz_actions.random.Random(5)] for _ in range(200)]
    again = [fuzz_actions.action(r, tools) for r in [fuzz_actions.random.Random(5)] for _ in range(200)]
    assert draw == again
    assert {kind for kind, _ in draw} == set(fuzz_actions.KINDS)  # every kind is drawn


@pytest.mark.parametrize("seed", [0, 1])
def test_fuzzed_actions_never_raise_out_of_step(seed: int, env_org: Path, env_tasks: list[TaskInstance]) -> None:
    before = hashlib.sha256(env_org.read_bytes()).hexdigest()

    def make(env_id: str, toolset: str) -> gym.Env:
        return gym.make(env_id, org=env_org, tasks=env_tasks, toolset=toolset)

    report = fuzz_actions.run(make, list(fuzz_actions.combos(ENV_IDS)), 900, seed)
    assert report.actions == 900 and report.exceptions == []
    assert hashlib.sha256(env_org.read_bytes()).hexdigest() == before  # the org file never changed
