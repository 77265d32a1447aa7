"""Ctrl-C and SIGTERM stop a run promptly, keep every finished episode, say how to resume, and never
reach an agent as a query timeout."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from crmarena_gym._signals import watch_signals
from crmarena_gym.eval import evaluate, read_results
from crmarena_gym.org import LocalOrg, OrgError
from crmarena_gym.tasks import TaskInstance, save_tasks
from tests.cli.heavy_policy import HeavyQueries
from tests.processes import popen

REPO_ROOT = Path(__file__).resolve().parents[2]
# Three copies of the cases crossed: seconds of SQLite work, enough for a signal to land inside it.
CROSS = 'SELECT COUNT(*) FROM "Case" a, "Case" b, "Case" c'


def test_a_signal_inside_sqlite_interrupts_the_program_and_a_deadline_still_times_out(env_org: Path) -> None:
    backend = LocalOrg(env_org)._live()  # type: ignore[attr-defined]
    # Python's own Ctrl-C handling, whatever the shell that started pytest did with SIGINT.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            backend.execute(CROSS, (), 60.0)
        assert time.monotonic() - started < 5
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    with pytest.raises(OrgError) as err:
        backend.execute(CROSS, (), 0.2)
    assert err.value.code == "QUERY_TIMEOUT"


def test_a_signal_swallowed_by_sqlites_authorizer_stops_the_program_while_signals_are_watched(
    tmp_path: Path, env_org: Path
) -> None:
    copy = tmp_path / "org.sqlite"  # a backend of its own: the authorizer below must not reach other tests
    shutil.copyfile(env_org, copy)
    org = LocalOrg(copy)
    backend = org._live()  # type: ignore[attr-defined]

    def authorize(*_: object) -> int:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the KeyboardInterrupt comes here, and SQLite swallows it: it denies the statement
        return sqlite3.SQLITE_OK

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        backend.conn.set_authorizer(authorize)
        # Unwatched, the swallowed signal is indistinguishable from a denial (what an agent was once answered).
        with pytest.raises(OrgError, match="not authorized"):
            backend.execute('SELECT COUNT(*) FROM "Case" WHERE 1 = 1', (), 60.0)
        with watch_signals() as signalled, pytest.raises(KeyboardInterrupt):
            backend.execute('SELECT COUNT(*) FROM "Case" WHERE 2 = 2', (), 60.0)
        assert signalled.signum == signal.SIGINT
    finally:
        backend.conn.set_authorizer(None)
        signal.signal(signal.SIGINT, previous)
        org.close()


@pytest.mark.parametrize(
    ("signum", "delay", "resume"),
    [(signal.SIGINT, 0.0, False), (signal.SIGTERM, 0.3, True), (signal.SIGINT, 0.7, False)],
)
def test_a_signal_stops_the_run_keeps_its_episodes_and_says_how_to_resume(
    signum: int, delay: float, resume: bool, tmp_path: Path, env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    save_tasks(env_tasks, tasks)
    out = tmp_path / "run"
    argv = ["eval", "--env", "CRMArena-v0", "--tasks", str(tasks), "--org", str(env_org), "--limit", "10"]
    argv += ["--trials", "12"]  # 120 episodes of 9 steps: tens of seconds of work
    argv += ["--policy", "python:tests.cli.heavy_policy:HeavyQueries", "--no-progress", "--out", str(out)]
    command = [sys.executable, "-c", "from crmarena_gym.cli import main; raise SystemExit(main())", *argv]
    process = popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = out / "results.jsonl"
    try:
        deadline = time.monotonic() + 60
        while not (results.exists() and results.stat().st_size > 0):  # the run is under way
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.02)
        time.sleep(delay)
        os.kill(process.pid, signum)
        sent = time.monotonic()
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    # Promptly, not after the other episodes (which the count of kept ones checks): a loaded machine may
    # take tens of seconds to schedule the child, so the bound is loose.
    assert time.monotonic() - sent < 60
    assert process.returncode == 128 + signum, err
    assert f"stopped by {signal.Signals(signum).name}" in err and "Traceback" not in err
    assert "To play the rest: crmarena-gym eval" in err and err.rstrip().count("--resume") >= 1
    kept = read_results(results)
    assert kept and len(kept) < 120
    assert "QUERY_TIMEOUT" not in json.dumps(kept)
    if not resume:
        return
    quick = dict(os.environ, HEAVY_POLICY_DELAY="0")
    resumed = subprocess.run(
        [*command, "--resume"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, env=quick
    )
    assert resumed.returncode == 0, resumed.stderr
    final = read_results(results)
    assert len(final) == 120 and final[: len(kept)] == kept
    assert "QUERY_TIMEOUT" not in json.dumps(final)


class _SwallowsASignal(HeavyQueries):
    """On its ``at``-th action sends its process SIGINT inside a block that swallows the KeyboardInterrupt,
    as SQLite's progress callback does with one that lands in it; counts every action."""

    def __init__(self, at: int) -> None:
        super().__init__(delay=0.0)
        self.at = at
        self.acted = 0

    def act(self, observation: str) -> str:
        self.acted += 1
        if self.acted == self.at:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(5)  # the handler runs here at the latest (a signal ends the sleep)
            except KeyboardInterrupt:
                pass
        return super().act(observation)


def test_a_swallowed_interrupt_still_stops_the_run_before_its_next_step(
    tmp_path: Path, env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    # 9 actions an episode (8 queries, then submit): the signal lands in the second episode's third step.
    policy = _SwallowsASignal(at=12)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            evaluate(lambda: policy, tasks=env_tasks, org=env_org, limit=4, out=tmp_path / "run", progress=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert policy.acted == 12  # no step after the signal's
    kept = read_results(tmp_path / "run" / "results.jsonl")
    assert [(r["idx"], r["trial"], r["turns"]) for r in kept] == [(env_tasks[0].idx, 0, 9)]
    assert signal.getsignal(signal.SIGINT) is previous  # the run's own handler is gone
