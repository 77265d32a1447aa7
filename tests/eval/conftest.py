"""Fixtures for the runner tests: a generated test set of all nine tasks on the shared generated org."""

from __future__ import annotations

from pathlib import Path

import pytest

from crmarena_gym.tasks import TaskInstance, generate_tasks


@pytest.fixture(scope="session")
def nine_tasks(env_org: Path) -> list[TaskInstance]:
    """Three generated instances of each of the nine tasks (some unanswerable)."""
    return generate_tasks(env_org, seed=5, per_task=3)
