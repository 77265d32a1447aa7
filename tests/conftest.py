"""Shared test fixtures: where the original benchmark's data lies."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared" / "crmarena"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared/crmarena`` beside the checkout (the original's data; read, never copied)."""
    if not SHARED_DIR.is_dir():
        pytest.fail(f"the original benchmark's data is missing: expected {SHARED_DIR}")
    return SHARED_DIR
