"""The discrete step against the implementation it replaced: the same candidates, features and observations.

Commit 334e9d2 computed every slot, span and feature afresh at each step; the step now caches them per record
and article and hashes with numpy (issue 32). This test plays the same episodes with that commit's code (its
package extracted with ``git archive``, run in a child process) and with this checkout's, at every discrete
help level, and requires every step's observation arrays, mask, features, rewards and ``info`` (each slot's
text, the text sent) to be equal. It skips where the checkout has no git history holding that commit.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crmarena_gym.tasks import TaskInstance, generate_tasks, save_tasks
from tests.rl._step_trace import LEVELS, trace

#: The commit whose step the current one must reproduce (the last before the step was made fast).
REFERENCE_COMMIT = "334e9d2"
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("_step_trace.py")


def _reference_package(dest: Path) -> Path:
    """``crmarena_gym`` as :data:`REFERENCE_COMMIT` had it, extracted under ``dest``; skip without git or the commit."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed: the reference implementation cannot be checked out")
    known = subprocess.run(
        [git, "-C", str(ROOT), "cat-file", "-e", f"{REFERENCE_COMMIT}^{{commit}}"], capture_output=True, check=False
    )
    if known.returncode != 0:
        pytest.skip(f"commit {REFERENCE_COMMIT} is not in this checkout's git history (a shallow clone or an sdist)")
    archive = subprocess.run(
        [git, "-C", str(ROOT), "archive", "--format=tar", REFERENCE_COMMIT, "crmarena_gym"],
        capture_output=True,
        check=True,
    )
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        try:
            tar.extractall(dest, filter="data")
        except TypeError:  # Python before 3.11.4 has no filters (the archive is this repository's own commit)
            tar.extractall(dest)
    return dest


@pytest.fixture(scope="module")
def recorded_tasks(env_org: Path, env_tasks: list[TaskInstance], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every family: the shared instances of five families, four of each of the other four (PVI and KQA: six)."""
    others = generate_tasks(env_org, seed=6, per_task=4, tasks=["NCR", "NED"])
    others += generate_tasks(env_org, seed=6, per_task=6, tasks=["PVI", "KQA"])
    chosen = list(env_tasks) + [i.model_copy(update={"idx": 1000 + n}) for n, i in enumerate(others)]
    path = tmp_path_factory.mktemp("step_reference") / "tasks.jsonl"
    save_tasks(chosen, path)
    return path


@pytest.fixture(scope="module")
def reference_trace(env_org: Path, recorded_tasks: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The episodes as the reference commit's code plays them."""
    where = tmp_path_factory.mktemp("reference")
    package = _reference_package(where / "checkout")
    out = where / "trace.pickle"
    env = {**os.environ, "PYTHONPATH": str(package)}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(env_org), str(recorded_tasks), str(out)],
        env=env,
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with out.open("rb") as f:
        return pickle.load(f)


def _array(value: Any) -> np.ndarray | None:
    """An array as :mod:`tests.rl._step_trace` records it, decoded (None for anything else)."""
    if isinstance(value, tuple) and len(value) == 4 and value[0] == "array":
        return np.frombuffer(value[3], dtype=value[1]).reshape(value[2])
    return None


def _first_difference(a: Any, b: Any, path: str = "") -> str | None:
    old, new = _array(a), _array(b)
    if old is not None and new is not None and old.shape == new.shape and old.dtype == new.dtype:
        differs = np.argwhere(old != new)
        if not len(differs):
            return None
        at = tuple(int(i) for i in differs[0])
        return f"{path}{list(at)}: {old[at]!r} against {new[at]!r} ({len(differs)} values differ)"
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} against {type(b).__name__}"
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(a)} against {sorted(b)}"
        for key in a:
            found = _first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list | tuple):
        if len(a) != len(b):
            return f"{path}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r:.300} against {b!r:.300}"


@pytest.mark.slow  # ~10 s a level, and the reference commit's episodes once (~20 s)
@pytest.mark.parametrize("level", LEVELS)
def test_the_step_gives_what_the_reference_commit_gave(
    level: str, env_org: Path, recorded_tasks: Path, reference_trace: dict[str, Any]
) -> None:
    expected = reference_trace[level]
    got = trace(str(env_org), str(recorded_tasks), level)
    steps = [step for step in expected if len(step) == 6]
    assert len(steps) > 200  # the episodes went deep: many steps past each reset
    for n, (old, new) in enumerate(zip(expected, got, strict=False)):
        difference = _first_difference(old, new)
        assert difference is None, f"{level}, step {n} of the recording: {difference}"
    assert len(got) == len(expected)
    # The episodes reached what the caches serve: answer phrases, articles, pasted results, chosen records.
    sent = [step[5].get("action_text", "") for step in steps]
    for needed in ("search_knowledge_articles", "get_cases", "submit "):
        assert any(needed in text for text in sent), needed
