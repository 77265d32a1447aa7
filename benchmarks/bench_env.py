"""Environment overhead: oracle episodes through the env against the bare engine on the same queries.

Runs the oracle's actions for every instance of the default test set (1,170 by default) through a
``CRMArenaEnv``, recording every SOQL/SOSL text the tools send to the org; then runs exactly those
queries on the bare ``LocalOrg`` (same task dates). Both passes run twice and the second (warm plan
cache: every query of the first pass is cached) is reported. Also reports the time of ``reset``.

Then a fresh-instances pass: the oracle (its solver and its actions through the env) on training
instances never seen in the process, so that no query text is in the plan cache, once with parse trees
reused by query shape (the engine as it is) and once without (the baseline: every new text parsed by
lark), in the same process on the same org.

Usage:
    python benchmarks/bench_env.py [--per-task N] [--scale X]

Target: the env's time per episode under 2x the time its queries take on the bare engine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from crmarena_gym.datagen import generate_org
from crmarena_gym.envs import CRMArenaEnv
from crmarena_gym.org import LocalOrg, Org
from crmarena_gym.org.soql import _parser
from crmarena_gym.tasks import default_tasks, oracle_trace, training_tasks


class RecordingOrg(Org):
    """Passes every call to a LocalOrg and records (today, kind, text)."""

    def __init__(self, inner: LocalOrg, log: list[tuple[Any, str, str]]) -> None:
        self.inner = inner
        self.log = log

    def query(self, soql: str) -> dict[str, Any]:
        self.log.append((self.inner.today, "query", soql))
        return self.inner.query(soql)

    def search(self, sosl: str) -> dict[str, Any]:
        self.log.append((self.inner.today, "search", sosl))
        return self.inner.search(sosl)

    @property
    def today(self) -> dt.date | None:
        return self.inner.today

    def with_today(self, today: dt.date | str | None) -> RecordingOrg:
        return RecordingOrg(self.inner.with_today(today), self.log)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-task", type=int, default=130)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()

    path = Path(tempfile.mkdtemp()) / "org.sqlite"
    generate_org(path, seed=0, scale=args.scale)
    instances = default_tasks(path, per_task=args.per_task)
    org = LocalOrg(path)
    traces = {
        i.idx: [c.to_action() for c in oracle_trace(i, org.with_today(i.params["today"])).actions] for i in instances
    }

    log: list[tuple[Any, str, str]] = []
    env = CRMArenaEnv(org=RecordingOrg(org, log), tasks=instances, toolset="flex")
    warm_log: list[tuple[Any, str, str]] = []
    reset_times: list[float] = []
    for attempt in range(2):
        log.clear()
        env_seconds, steps, solved, reset_times = 0.0, 0, 0.0, []
        for inst in instances:
            start = time.perf_counter()
            env.reset(options={"task_id": inst.idx})
            after_reset = time.perf_counter()
            reward = 0.0
            for action in traces[inst.idx]:
                _, reward, *_ = env.step(action)
                steps += 1
            end = time.perf_counter()
            reset_times.append(after_reset - start)
            env_seconds += end - start
            solved += float(reward)
        if attempt == 0:
            warm_log = list(log)

    engine_seconds = 0.0
    for _ in range(2):  # the second pass, with the plan cache warm, is the one reported
        engine_seconds = 0.0
        for today, kind, text in warm_log:
            view = org.with_today(today)
            start = time.perf_counter()
            view.query(text) if kind == "query" else view.search(text)
            engine_seconds += time.perf_counter() - start

    n = len(instances)
    print(f"org scale {args.scale}, {n} oracle episodes, {steps} env steps, {len(warm_log)} org calls")
    print(f"oracle solved {solved:.0f}/{n}")
    print(f"env:    {env_seconds:.3f} s total, {steps / env_seconds:,.0f} steps/s, {n / env_seconds:,.0f} episodes/s")
    print(f"engine: {engine_seconds:.3f} s total for the same calls, {len(warm_log) / engine_seconds:,.0f} calls/s")
    print(f"env time / engine time on the same queries: {env_seconds / engine_seconds:.2f}x (target < 2x)")
    print(
        f"reset: median {statistics.median(reset_times) * 1e3:.3f} ms, max {max(reset_times) * 1e3:.3f} ms"  # type: ignore[type-var]
    )

    # Fresh instances: two disjoint training sets (one per variant), each new to the process.
    fresh = {
        label: training_tasks(path, seed=seed, per_task=max(1, args.per_task // 3))
        for label, seed in (("shapes", 1), ("baseline", 2))
    }
    cached_tree = _parser._cached_tree
    seconds = {}
    for label, instances in fresh.items():
        if label == "baseline":
            _parser._cached_tree = lambda text: _parser._lark().parse(text)
        seconds[label] = fresh_pass(org, instances)
        _parser._cached_tree = cached_tree
    for label, instances in fresh.items():
        print(
            f"fresh instances ({label}): {len(instances)} episodes in {seconds[label]:.3f} s, "
            f"{len(instances) / seconds[label]:,.0f} episodes/s"
        )
    per = {label: seconds[label] / len(fresh[label]) for label in fresh}
    print(f"fresh instances, time per episode: baseline / shapes {per['baseline'] / per['shapes']:.2f}x")


def fresh_pass(org: LocalOrg, instances: list[Any]) -> float:
    """Seconds to solve ``instances`` with the oracle and play its actions through an env."""
    env = CRMArenaEnv(org=org, tasks=instances, toolset="flex")
    start = time.perf_counter()
    for inst in instances:
        actions = [c.to_action() for c in oracle_trace(inst, org.with_today(inst.params["today"])).actions]
        env.reset(options={"task_id": inst.idx})
        for action in actions:
            env.step(action)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
