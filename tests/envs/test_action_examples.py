"""The environment's own action examples run as written, in every toolset."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import crmarena_gym  # noqa: F401 - registers the environments


@pytest.mark.parametrize("toolset", ["soql", "functions", "flex"])
def test_every_action_example_is_answered_without_an_error(toolset: str, env_org: Path, env_tasks: list) -> None:
    # Issue 11: one example called get_start_date with "period": "month", which the function refused.
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset=toolset)
    examples = env.action_space.examples
    assert any(e.startswith("submit") for e in examples)
    for example in examples:
        env.reset(seed=0)
        obs, _reward, _terminated, _truncated, info = env.step(example)
        assert "error" not in info, (example, obs)
