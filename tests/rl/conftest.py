"""Fixtures of the RL tests: instance files for remote env runners, and one Ray instance per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.tasks import TaskInstance, save_tasks


@pytest.fixture(scope="session")
def env_tasks_file(env_tasks: list[TaskInstance], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`env_tasks` saved as JSON Lines, for environments built in other processes."""
    path = tmp_path_factory.mktemp("rl") / "tasks.jsonl"
    save_tasks(env_tasks, path)
    return path


@pytest.fixture(scope="session")
def ray_session() -> Iterator[Any]:
    """Ray started once for the whole test session (2 CPUs, no dashboard, no auth), shut down at the end."""
    import ray

    previous = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        if previous is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = previous
