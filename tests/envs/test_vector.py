"""Vector environments (sync and async) stepping every action kind, mixed across sub-environments."""

from __future__ import annotations

import threading
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.envs import StepResult
from crmarena_gym.tasks import TaskInstance

# Each kind of action, with the type of its structured result (None: the step has no result).
KINDS: list[tuple[str, type | None]] = [
    ("execute SELECT Id, Name FROM Issue__c", list),  # a query: its rows
    ("execute FIND {delivery} IN ALL FIELDS RETURNING Knowledge__kav(Id)", list),  # a search: its rows
    ('get_period({"period_name": "Q1", "year": 2022})', dict),  # a call answering a mapping
    ("get_issues({})", list),  # a call answering a list
    ('get_start_date({"end_date": "2022-03-01T00:00:00Z", "period": "months", "interval_count": 2})', str),
    ("execute SELECT Nope FROM Case", None),  # a refused query
    ("not an action", None),  # a format error
    ("submit None", None),  # the end of the episode
]


def _close_within(envs: gym.vector.VectorEnv, seconds: float) -> None:
    closer = threading.Thread(target=envs.close, daemon=True)
    closer.start()
    closer.join(seconds)
    assert not closer.is_alive(), "the vector environment did not close"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_action_kind_next_to_every_other(mode: str, env_org: Path, env_tasks: list[TaskInstance]) -> None:
    n = 3
    envs = gym.make_vec(
        "CRMArena-v0",
        num_envs=n,
        vectorization_mode=mode,
        vector_kwargs={"shared_memory": False} if mode == "async" else {},
        org=env_org,
        tasks=env_tasks,
        toolset="flex",
    )
    try:
        envs.reset(seed=0)
        ended = [False] * n
        for step in range(len(KINDS)):
            chosen = [KINDS[(step + 3 * i) % len(KINDS)] for i in range(n)]
            obs, _, terminated, truncated, info = envs.step([action for action, _ in chosen])
            assert len(obs) == n and all(isinstance(o, str) and o for o in obs)
            for i, (action, kind) in enumerate(chosen):
                if ended[i]:  # the sub-environment was reset by this step (its action was not played)
                    assert not terminated[i] and not info.get("_result", np.zeros(n, bool))[i]
                    continue
                has_result = bool(info.get("_result", np.zeros(n, bool))[i])
                assert has_result == (kind is not None), (action, info.get("_result"))
                if kind is not None:
                    result = info["result"][i]
                    assert isinstance(result, StepResult) and isinstance(result.value, kind), (action, result)
                assert bool(terminated[i]) == action.startswith("submit")
            ended = [bool(t or u) for t, u in zip(terminated, truncated, strict=True)]
    finally:
        _close_within(envs, 60)
