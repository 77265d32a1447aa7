"""Benchmarks against an older commit of this repository, in the same run, in fresh processes.

The older commit is checked out into a temporary git worktree (removed afterwards) and each side runs in
a child process with ``PYTHONPATH`` pointing at its checkout. A child's CPU time is what
``resource.getrusage(RUSAGE_CHILDREN)`` adds up for it (user and system time of the process and of the
children it waited for), so other processes that share the cores do not count. Bytecode is cached for
the children under a temporary ``PYTHONPYCACHEPREFIX``, as an installed package has it, whatever
``PYTHONDONTWRITEBYTECODE`` says: the first run of each side writes it (run it as a warm-up).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: The commit before the round that issue 32 measured (start-up 0.71 s CPU, a knowledge search 279 us).
OLD_COMMIT = "c0821b3"
REPO_ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def old_checkout(commit: str = OLD_COMMIT) -> Iterator[Path]:
    """A temporary worktree of ``commit`` (detached), removed when the block ends."""
    parent = Path(tempfile.mkdtemp(prefix="crmarena_gym_old_"))
    path = parent / "checkout"
    subprocess.run(
        ["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", "--quiet", str(path), commit],
        check=True,
    )
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(path)], check=False)
        shutil.rmtree(parent, ignore_errors=True)
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "prune"], check=False)


@dataclass(frozen=True)
class ChildRun:
    """One finished child process: its CPU and wall seconds and its output."""

    cpu: float
    wall: float
    stdout: str


class Sides:
    """Runs Python children against either checkout, in ``workdir`` (so that ``python -c`` finds no package in
    its working directory) with bytecode cached under ``workdir/pycache``."""

    def __init__(self, checkouts: dict[str, Path], workdir: Path) -> None:
        self.checkouts = checkouts
        self.workdir = workdir
        self.pycache = workdir / "pycache"

    def env(self, side: str) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(self.pycache)
        env["PYTHONPATH"] = str(self.checkouts[side])
        return env

    def check(self, side: str) -> None:
        """Make sure ``side``'s children import its checkout (not an installed copy of the package)."""
        code = "import crmarena_gym; print(crmarena_gym.__file__)"
        imported = Path(self.run(side, ["-c", code]).stdout.strip()).resolve()
        if not imported.is_relative_to(self.checkouts[side].resolve()):
            raise RuntimeError(f"{side}: the children import {imported}, not {self.checkouts[side]}")

    def run(self, side: str, args: Sequence[str], *, env: dict[str, str] | None = None) -> ChildRun:
        """Run ``python args`` against ``side``'s checkout (``env``: variables to add or override); raise with
        its output when it fails."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, *args],
            env={**self.env(side), **(env or {})},
            cwd=self.workdir,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(f"{side}: python {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return ChildRun(cpu, wall, proc.stdout)


def load_line() -> str:
    """The machine's load averages and its CPU count, for the report."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min) on {os.cpu_count()} CPUs"


def alternating(sides: Sequence[str], rounds: int) -> Iterator[tuple[int, str]]:
    """``(round, side)`` for every round, the sides in turn and the first side alternating."""
    for n in range(rounds):
        order = list(sides) if n % 2 == 0 else list(reversed(sides))
        for side in order:
            yield n, side
