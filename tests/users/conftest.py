"""Fixtures for the conversation tests: generated instances of all nine families."""

from __future__ import annotations

from pathlib import Path

import pytest

from crmarena_gym.tasks import TaskInstance, generate_tasks


@pytest.fixture(scope="session")
def all_tasks(env_org: Path) -> list[TaskInstance]:
    """Four generated instances of each of the nine families on :func:`env_org`."""
    return generate_tasks(env_org, seed=5, per_task=4)
