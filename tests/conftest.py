"""Shared test fixtures: where the original benchmark's data lies."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.datagen import generate_org
from crmarena_gym.tasks import TaskInstance
from crmarena_gym.tasks._generate import generate_tasks

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared" / "crmarena"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared/crmarena`` beside the checkout (the original's data; read, never copied)."""
    return require_shared()


def require_shared() -> Path:
    """``../shared/crmarena``, or skip the calling test with a message naming what is missing and where from."""
    if not SHARED_DIR.is_dir():
        pytest.skip(
            f"the original benchmark's data is not beside the checkout (expected {SHARED_DIR}): "
            f"crmarena-gym fetch-original --out {SHARED_DIR} gets tasks_original.json and schema.json where the "
            "Hugging Face hub can be reached (org_rows_sample.json is not published)"
        )
    return SHARED_DIR


@pytest.fixture(scope="session")
def env_org(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated org (seed 3, half the original's size) for environment and wrapper tests."""
    path = tmp_path_factory.mktemp("envs") / "org.sqlite"
    generate_org(path, seed=3, scale=0.5)
    return path


@pytest.fixture(scope="session")
def env_tasks(env_org: Path) -> list[TaskInstance]:
    """Six generated instances of each of HTU, TCU, TII, MTA and BRI on :func:`env_org`."""
    return generate_tasks(env_org, seed=1, per_task=6, tasks=["HTU", "TCU", "TII", "MTA", "BRI"])


@pytest.fixture(scope="session")
def ray_session() -> Iterator[Any]:
    """Ray, started once for the whole test session (2 CPUs, no dashboard, no auth) and shut down at its end.

    One fixture for every test that needs Ray: a second ``ray.init`` in the same process fails.
    """
    import ray

    previous = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    started = not ray.is_initialized()
    if started:
        # A Ray of its own: a bare init() joins any cluster already running on the (shared) machine.
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()
        if previous is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = previous


@pytest.fixture(scope="session")
def pro_env_orgs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CRMArena-Pro B2B and B2C org (seed 7, scale 1) for the Pro environment, policy and runner tests."""
    paths = {}
    for kind in ("b2b", "b2c"):
        path = tmp_path_factory.mktemp(f"pro-env-{kind}") / "org.sqlite"
        generate_org(path, kind=kind, seed=7, scale=1.0)
        paths[kind] = path
    return paths
