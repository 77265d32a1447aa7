"""Generated orgs shared by the datagen tests (each generated once per session)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from crmarena_gym.datagen import generate_org


@pytest.fixture(scope="session")
def org_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default-size org (seed 0, scale 1, latent variables on)."""
    path = tmp_path_factory.mktemp("org") / "org.sqlite"
    generate_org(path, seed=0, scale=1.0)
    return path


@pytest.fixture(scope="session")
def flat_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same org with every latent variable flat."""
    path = tmp_path_factory.mktemp("flat") / "flat.sqlite"
    generate_org(path, seed=0, scale=1.0, latent=False)
    return path


@pytest.fixture(scope="session")
def db(org_path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the default-size org."""
    conn = sqlite3.connect(f"file:{org_path}?mode=ro", uri=True)
    yield conn
    conn.close()


@pytest.fixture(scope="session")
def flat_db(flat_path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the flat org."""
    conn = sqlite3.connect(f"file:{flat_path}?mode=ro", uri=True)
    yield conn
    conn.close()
