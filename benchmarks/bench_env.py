"""Environment speed: oracle episodes through the env, fresh and warm, against a baseline in the same run.

Runs the oracle's actions (precomputed) through a ``CRMArenaEnv`` for three sets of instances of the
org: the default test set (``seed`` 0, 1,170 by default) is played first, as a process that has seen some
instances; then a second set (``seed`` 1, never seen in the process) is timed *fresh*, twice from the
same starting point: with plans cached by query text only (the baseline: the engine before plans by
shape; 1,024 plans kept, one shaper generated per plan) and with plans by shape (each per-instance query
answered from the plan of its shape, IN lists of any length included). The
fresh set is then played again, *warm* (every plan cached), and its queries are run on the bare engine
(same task dates) for the env's overhead. Figures are ratios within this run.

Usage:
    python benchmarks/bench_env.py [--per-task N] [--scale X]

Targets: fresh instances at least 2x faster with plans by shape than the baseline; the warm env time
under 1.5x the time its queries take on the bare engine.
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
from crmarena_gym.org import LocalOrg, Org, _local
from crmarena_gym.org.soql import _compiler, compile_shaped, lift
from crmarena_gym.tasks import default_tasks, oracle_trace


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


def play(env: CRMArenaEnv, instances: list[Any], traces: dict[int, list[str]]) -> tuple[float, int, float, list[float]]:
    """Play every instance's oracle actions: (seconds, steps, reward summed, reset times)."""
    seconds, steps, solved, resets = 0.0, 0, 0.0, []
    for inst in instances:
        start = time.perf_counter()
        env.reset(options={"task_id": inst.idx})
        after_reset = time.perf_counter()
        reward = 0.0
        for action in traces[inst.idx]:
            _, reward, *_ = env.step(action)
            steps += 1
        seconds += time.perf_counter() - start
        resets.append(after_reset - start)
        solved += float(reward)
    return seconds, steps, solved, resets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-task", type=int, default=130)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()

    path = Path(tempfile.mkdtemp()) / "org.sqlite"
    generate_org(path, seed=0, scale=args.scale)
    seen = default_tasks(path, per_task=args.per_task)
    fresh = default_tasks(path, seed=1, per_task=args.per_task)
    org = LocalOrg(path)
    backend = org._live()

    def traces_of(instances: list[Any]) -> dict[int, list[str]]:
        return {
            i.idx: [c.to_action() for c in oracle_trace(i, org.with_today(i.params["today"])).actions]
            for i in instances
        }

    seen_traces, fresh_traces = traces_of(seen), traces_of(fresh)
    seen_keys = {(i.params["today"], a) for i in seen for a in seen_traces[i.idx]}
    repeated = sum((i.params["today"], a) in seen_keys for i in fresh for a in fresh_traces[i.idx])
    log: list[tuple[Any, str, str]] = []
    seen_env = CRMArenaEnv(org=RecordingOrg(org, log), tasks=seen, toolset="flex")
    fresh_env = CRMArenaEnv(org=RecordingOrg(org, log), tasks=fresh, toolset="flex")

    fresh_seconds: dict[bool, float] = {}
    shaper = _compiler._generate_shaper
    for by_shape in (False, True):  # the baseline first, then plans by shape, each from the same start
        backend.plans.clear()
        shaper.cache_clear()
        # The baseline is the engine before plans by shape: 1,024 plans by text, a shaper per plan.
        backend.by_shape = by_shape
        backend.plans.max_entries = _local.PLAN_CACHE_SIZE if by_shape else 1024
        _compiler._generate_shaper = shaper if by_shape else shaper.__wrapped__  # type: ignore[attr-defined]
        play(seen_env, seen, seen_traces)
        fresh_seconds[by_shape], steps, solved, _ = play(fresh_env, fresh, fresh_traces)
    compiled = 0

    def counting(*a: Any, **k: Any) -> Any:
        nonlocal compiled
        compiled += 1
        return compile_shaped(*a, **k)

    _local.compile_shaped, _local.compile_query = counting, counting  # type: ignore[assignment]
    log.clear()
    warm_seconds, steps, solved, reset_times = play(fresh_env, fresh, fresh_traces)
    warm_log = list(log)

    engine_seconds = 0.0
    for _ in range(2):  # the second pass is the one reported
        engine_seconds = 0.0
        for today, kind, text in warm_log:
            view = org.with_today(today)
            start = time.perf_counter()
            view.query(text) if kind == "query" else view.search(text)
            engine_seconds += time.perf_counter() - start

    n = len(fresh)
    queries = [t for _, k, t in warm_log if k == "query"]
    shapes = {lift(t).key if lift(t) is not None else t for t in queries}
    print(f"org scale {args.scale}; {len(seen)} instances seen first, then {n} fresh ones (task seed 1)")
    print(
        f"fresh set: {steps} env steps, {len(warm_log)} org calls, "
        f"{len(set(queries))} distinct queries of {len(shapes)} shapes"
    )
    print(f"  actions also played in the seen set (same text and date): {repeated}/{steps}")
    print(f"oracle solved {solved:.0f}/{n}")
    base, shaped = fresh_seconds[False], fresh_seconds[True]
    print(f"fresh, plans by text (the engine before): {base:.3f} s, {base / n * 1e3:.2f} ms/episode")
    print(f"fresh, plans by shape:                    {shaped:.3f} s, {shaped / n * 1e3:.2f} ms/episode")
    print(f"  speedup on fresh instances: {base / shaped:.2f}x (target >= 2x)")
    print(f"warm (the fresh set again):               {warm_seconds:.3f} s, {warm_seconds / n * 1e3:.2f} ms/episode")
    print(f"  queries compiled in the warm pass: {compiled} (every plan cached: 0)")
    print(
        f"  speedup warm vs fresh baseline: {base / warm_seconds:.2f}x, vs fresh by shape: {shaped / warm_seconds:.2f}x"
    )
    print(
        f"engine alone on the warm pass's calls: {engine_seconds:.3f} s, {len(warm_log) / engine_seconds:,.0f} calls/s"
    )
    print(f"  env time / engine time on the same calls (warm): {warm_seconds / engine_seconds:.2f}x (target < 1.5x)")
    print(
        f"reset: median {statistics.median(reset_times) * 1e3:.3f} ms, max {max(reset_times) * 1e3:.3f} ms"  # type: ignore[type-var]
    )


if __name__ == "__main__":
    main()
