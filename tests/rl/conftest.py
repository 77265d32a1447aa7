"""Fixtures of the RL tests: instance files for remote env runners (Ray: ``ray_session``, tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crmarena_gym.tasks import TaskInstance, save_tasks


@pytest.fixture(scope="session")
def env_tasks_file(env_tasks: list[TaskInstance], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`env_tasks` saved as JSON Lines, for environments built in other processes."""
    path = tmp_path_factory.mktemp("rl") / "tasks.jsonl"
    save_tasks(env_tasks, path)
    return path
