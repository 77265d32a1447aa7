"""Fixtures for the trainer adapters: oracle calls of training instances, computed in-process."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.chat import instance_org, make_chat_env
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import TaskInstance, oracle_trace

#: Training instances per task in the adapters' tests (KQA has fewer: its pool is small).
PER_TASK = 8


def oracle_calls(org: LocalOrg, instance: TaskInstance) -> list[tuple[str, dict[str, Any]]]:
    """The oracle's tool calls for an instance, solved against the org at the instance's date."""
    env = make_chat_env(org, instances=[instance], toolset="functions")
    _, info = env.reset(seed=0)
    home = LocalOrg(instance_org(instance, org.path))  # a sibling org's instance is solved on that org
    trace = oracle_trace(instance, home.with_today(info["today"]))
    return [(call.name, dict(call.arguments)) for call in trace.actions]


def default_signals() -> None:
    """``preexec_fn`` for a server child process: SIGINT and SIGTERM as by default, whatever this process
    inherited (a CI job run in the background may ignore SIGINT, and a child would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.fixture(scope="session")
def adapter_org(env_org: Path) -> LocalOrg:
    """The shared generated org, opened once."""
    return LocalOrg(env_org)
