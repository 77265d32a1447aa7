"""Evaluation benchmark: episodes per second of the oracle over the default instances, serially and with
concurrency.

The baseline, measured in the same run, is the oracle's solver alone (``oracle_trace`` on each
instance, no environment, no runner): the tool calls every episode must make. The oracle policy plays
step by step (each call runs once, in the environment, and the solver reads its result); the runner
is also timed with the oracle as it played before (the whole solution solved at reset, then replayed
through the environment: every call ran twice), for the gain. Threads share one org whose connection
is guarded by a lock, so concurrency helps only where work happens outside it.

Usage:
    python benchmarks/bench_eval.py [--limit N] [--concurrency N] [--org PATH] [--tasks FILE]

The concurrent run uses every CPU, and is skipped below 4 CPUs unless --concurrency is given.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from crmarena_gym.eval import evaluate
from crmarena_gym.org import LocalOrg, default_org_path
from crmarena_gym.policies import OraclePolicy, episode_instance
from crmarena_gym.tasks import default_tasks, load_tasks, oracle_trace

#: Below this many CPUs the concurrent run measures contention for cores, not the runner.
MIN_CPUS_FOR_CONCURRENCY = 4


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
    args = parser.parse_args()

    org_path = Path(args.org) if args.org else default_org_path()
    started = time.perf_counter()
    instances = load_tasks(args.tasks) if args.tasks else default_tasks(org_path)
    print(f"task set: {len(instances)} instances, loaded in {time.perf_counter() - started:.1f}s")
    if args.limit:
        instances = instances[: args.limit]
    n = len(instances)

    org = LocalOrg(org_path)
    started = time.perf_counter()
    for instance in instances:
        oracle_trace(instance, org)
    baseline = time.perf_counter() - started
    print(f"baseline (solver alone):     {n / baseline:8.1f} instances/s  ({baseline:.2f}s)")

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
            started = time.perf_counter()
            run = evaluate(
                policy,  # type: ignore[arg-type]
                tasks=instances,
                org=org,
                concurrency=concurrency,
                out=Path(out) / "run",
                progress=False,
            )
            seconds = time.perf_counter() - started
        accuracy = run.summary["all"]["accuracy"]
        figures[label] = n / seconds
        print(
            f"runner, {label + ':':<19} {n / seconds:8.1f} episodes/s   ({seconds:.2f}s, accuracy {accuracy:.3f}, "
            f"{baseline / seconds:.2f}x the baseline's rate)"
        )
    replayed, serial = figures["serial, replayed (before)"], figures["serial"]
    print(f"step by step vs replayed: {serial / replayed:.2f}x the episodes per second")
    if len(figures) == 3:
        concurrent = list(figures.values())[-1]
        print(f"concurrency speed-up: {concurrent / serial:.2f}x on {cpus} CPUs")


if __name__ == "__main__":
    main()
