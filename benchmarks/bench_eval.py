"""Evaluation benchmark: the whole oracle evaluation in a fresh process against an older commit, then
episodes per second of the oracle in process, serially and with concurrency.

The whole evaluation: ``crmarena-gym eval --env CRMArena-v0 --policy oracle --out <tmp> --no-progress``
(the 1,170 default instances, start-up and interpreter exit included) in a fresh process, for this checkout
and for an older commit (default c0821b3, checked out into a temporary git worktree; each side on its own
default org and instances unless --org/--tasks are given), the sides alternating over ``--rounds`` rounds;
the CPU time of each process (``getrusage(RUSAGE_CHILDREN)``) beside its wall time, medians compared, the
load printed. Each side runs once untimed first (caches, bytecode: see ``_old_commit``). Target (issue
32): at most 2.5 s CPU.

In process, the baseline, measured in the same run, is the oracle's solver alone (``oracle_trace`` on each
instance, no environment, no runner): the tool calls every episode must make. The oracle policy plays
step by step (each call runs once, in the environment, and the solver reads its result); the runner
is also timed with the oracle as it played before (the whole solution solved at reset, then replayed
through the environment: every call ran twice), for the gain. Threads share one org whose connection
is guarded by a lock, so concurrency helps only where work happens outside it. CPU time (this process)
is printed beside wall time.

Usage:
    python benchmarks/bench_eval.py [--rounds 3] [--commit c0821b3] [--whole-only] [--limit N]
                                    [--concurrency N] [--org PATH] [--tasks FILE]

The concurrent run uses every CPU, and is skipped below 4 CPUs unless --concurrency is given.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _old_commit import OLD_COMMIT, REPO_ROOT, Sides, alternating, load_line, old_checkout

from crmarena_gym.eval import evaluate
from crmarena_gym.org import LocalOrg, default_org_path
from crmarena_gym.policies import OraclePolicy, episode_instance
from crmarena_gym.tasks import default_tasks, load_tasks, oracle_trace

#: Below this many CPUs the concurrent run measures contention for cores, not the runner.
MIN_CPUS_FOR_CONCURRENCY = 4
#: The whole default evaluation's CPU seconds in one process, start-up included (issue 32).
WHOLE_TARGET_CPU = 2.5
# ``python -m crmarena_gym.cli`` needs a ``__main__`` the older commit does not have: both run this.
_CLI = "import sys; from crmarena_gym.cli import main; sys.exit(main())"


def _whole_run(sides: Sides, side: str, out: Path, args: argparse.Namespace) -> tuple[float, float, int]:
    """One whole evaluation in a fresh process: CPU and wall seconds, and the episodes it played."""
    argv = ["-c", _CLI, "eval", "--env", "CRMArena-v0", "--policy", "oracle", "--out", str(out), "--no-progress"]
    for flag, value in (("--org", args.org), ("--tasks", args.tasks), ("--limit", args.limit)):
        if value is not None:
            argv += [flag, str(value)]
    run = sides.run(side, argv)
    (row,) = [line.split() for line in run.stdout.splitlines() if line.startswith("all ")]
    episodes, accuracy = int(row[2]), float(row[3])
    if accuracy != 1.0:
        raise RuntimeError(f"{side}: the oracle did not solve every instance (accuracy {accuracy}):\n{run.stdout}")
    return run.cpu, run.wall, episodes


def whole(args: argparse.Namespace) -> None:
    """The whole evaluation in fresh processes, this checkout against ``args.commit``, alternating."""
    print(f"the whole evaluation in a fresh process, against {args.commit}; before: {load_line()}")
    names = ("new", "old")
    label = {"new": "this checkout", "old": f"commit {args.commit}"}
    runs: dict[str, list[tuple[float, float, int]]] = {n: [] for n in names}
    with old_checkout(args.commit) as old_root, tempfile.TemporaryDirectory(prefix="bench_eval_") as tmp:
        workdir = Path(tmp)
        sides = Sides({"new": REPO_ROOT, "old": old_root}, workdir)
        for side in names:
            sides.check(side)
            cpu, wall, episodes = _whole_run(sides, side, workdir / f"warm-{side}", args)
            print(f"warm-up {label[side]}: {episodes} episodes, {cpu:.2f} s CPU ({wall:.2f} s wall)")
        for n, side in alternating(names, args.rounds):
            runs[side].append(_whole_run(sides, side, workdir / f"run-{side}-{n}", args))
            cpu, wall, episodes = runs[side][-1]
            print(f"round {n + 1} {label[side]}: {episodes} episodes, {cpu:.2f} s CPU ({wall:.2f} s wall); ", end="")
            print(load_line())
    med = {
        side: (statistics.median(r[0] for r in runs[side]), statistics.median(r[1] for r in runs[side]))
        for side in names
    }
    for side in names:
        cpu, wall = med[side]
        print(f"{label[side]:<22} median {cpu:.2f} s CPU ({wall:.2f} s wall), {runs[side][0][2]} episodes")
    print(
        f"this checkout / {args.commit}: {med['new'][0] / med['old'][0]:.2f}x the CPU "
        f"({med['new'][1] / med['old'][1]:.2f}x the wall time)"
    )
    ok = med["new"][0] <= WHOLE_TARGET_CPU
    verdict = "met" if ok else "NOT met"
    print(f"target the whole evaluation <= {WHOLE_TARGET_CPU} s CPU: {med['new'][0]:.2f} s -> {verdict}")
    print(f"after: {load_line()}")


class ReplayedOracle(OraclePolicy):
    """The oracle as it played before: the solution solved at reset (every call run), then replayed."""

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        self.info = info
        instance = episode_instance(observation, info)
        trace = oracle_trace(instance, self.org.with_today(dt.date.fromisoformat(info["today"])))  # type: ignore[union-attr]
        self._replay = [c.to_action() for c in reversed(trace.actions)]

    def observe(self, info: dict[str, Any]) -> None:
        pass

    def act(self, observation: str) -> str:
        return self._replay.pop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--org", default=None, help="an org database (default: the embedded org)")
    parser.add_argument("--tasks", default=None, help="a task file (default: the 1,170 default instances)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N instances")
    parser.add_argument(
        "--concurrency", type=int, default=None, help="threads of the concurrent run (default: the CPU count)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of the whole evaluation")
    parser.add_argument("--commit", default=OLD_COMMIT, help=f"the older commit (default {OLD_COMMIT})")
    parser.add_argument("--whole-only", action="store_true", help="only the whole evaluation in fresh processes")
    args = parser.parse_args()

    whole(args)
    if args.whole_only:
        return
    print()

    org_path = Path(args.org) if args.org else default_org_path()
    started = time.perf_counter()
    instances = load_tasks(args.tasks) if args.tasks else default_tasks(org_path)
    print(f"task set: {len(instances)} instances, loaded in {time.perf_counter() - started:.1f}s")
    if args.limit:
        instances = instances[: args.limit]
    n = len(instances)

    org = LocalOrg(org_path)
    started, cpu = time.perf_counter(), time.process_time()
    for instance in instances:
        oracle_trace(instance, org)
    baseline = time.perf_counter() - started
    print(
        f"baseline (solver alone):     {n / baseline:8.1f} instances/s  ({baseline:.2f}s, "
        f"{time.process_time() - cpu:.2f}s CPU)"
    )

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    runs = [("serial, replayed (before)", 1, ReplayedOracle), ("serial", 1, "oracle")]
    if args.concurrency is not None:
        runs.append((f"concurrency {args.concurrency}", args.concurrency, "oracle"))
    elif cpus >= MIN_CPUS_FOR_CONCURRENCY:
        runs.append((f"concurrency {cpus}", cpus, "oracle"))
    else:
        print(
            f"concurrent run skipped: {cpus} CPUs; its figure means something with at least "
            f"{MIN_CPUS_FOR_CONCURRENCY}, where the workers do not share cores with the main thread "
            "(--concurrency N runs it anyway)"
        )
    figures = {}
    for label, concurrency, policy in runs:
        with tempfile.TemporaryDirectory() as out:
            started, cpu = time.perf_counter(), time.process_time()
            run = evaluate(
                policy,  # type: ignore[arg-type]
                tasks=instances,
                org=org,
                concurrency=concurrency,
                out=Path(out) / "run",
                progress=False,
            )
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        accuracy = run.summary["all"]["accuracy"]
        figures[label] = n / seconds
        print(
            f"runner, {label + ':':<19} {n / seconds:8.1f} episodes/s   ({seconds:.2f}s, {cpu:.2f}s CPU, accuracy "
            f"{accuracy:.3f}, {baseline / seconds:.2f}x the baseline's rate)"
        )
    replayed, serial = figures["serial, replayed (before)"], figures["serial"]
    print(f"step by step vs replayed: {serial / replayed:.2f}x the episodes per second")
    if len(figures) == 3:
        concurrent = list(figures.values())[-1]
        print(f"concurrency speed-up: {concurrent / serial:.2f}x on {cpus} CPUs")


if __name__ == "__main__":
    main()
