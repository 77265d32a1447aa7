"""Fixtures for the policy tests: a scripted chat server, one instance with a known gold answer, plain SQLite."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from crmarena_gym.tasks import TaskInstance
from tests.policies.scripted_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (add steps with ``server.add``)."""
    with ScriptedServer() as running:
        yield running


@pytest.fixture(scope="session")
def bri_instance(env_tasks: list[TaskInstance]) -> TaskInstance:
    """A best-region instance with an answer (a state code)."""
    return next(i for i in env_tasks if i.abbrev == "BRI" and i.answer)


@pytest.fixture(scope="session")
def policy_org(env_org: Path) -> Path:
    """The generated org the instances come from."""
    return env_org


@pytest.fixture(scope="module")
def conn(env_org: Path) -> Iterator[sqlite3.Connection]:
    """Plain read-only SQLite over the environment tests' org: the golds the reading tests expect."""
    connection = sqlite3.connect(f"file:{env_org}?mode=ro", uri=True)
    yield connection
    connection.close()
