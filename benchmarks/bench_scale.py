"""Scale benchmark: the tasks' access paths at 10x and 100x the original org, with and without the
composite indexes, the planner's statistics and memory-mapped reads.

For each scale it generates an org (seed 0; the generation time and file size are reported), draws a
few answerable instances of each task from it, records every query and search the oracle's tool
calls send, and times each through ``LocalOrg``: the best of ``--rounds``, each round going over
both scales and both layouts in turn, so that the shared machine's busy spells fall on all alike. The
baseline, measured in the same run on a copy of the same org, drops the composite indexes and the
statistics (``sqlite_stat1``) and reads without a memory map: the org as the generator wrote it
before them.

Every call is timed in CPU time (this process's, ``time.process_time``: what the shared machine's other
work does not inflate) and in wall-clock time; the figures below are CPU, with the wall-clock totals
beside them. The machine's load average is printed before and after.

Reported per task: CPU milliseconds per row returned at each scale, and the scale-100 / scale-10 ratio
of that figure (target: within 3x, that is the access path grows with what it returns, not with the
org), for the baseline and the current layout.

Usage:
    python benchmarks/bench_scale.py [--scales 10 100] [--per-task 3] [--rounds 7] [--workdir DIR [--reuse]]

``--reuse`` keeps an org already generated in ``--workdir`` by this generator version (same seed and
scale) instead of generating it again (generating scale 100 takes about 40 s); its generation time is
then not reported.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_env import RecordingOrg  # beside this file: the benchmarks directory is not a package

import crmarena_gym.org._local as local_module
from crmarena_gym.datagen import GENERATOR_VERSION, generate_org, read_manifest
from crmarena_gym.org import LocalOrg
from crmarena_gym.schema import COMPOSITE_INDEXES
from crmarena_gym.tasks import TASK_ABBREVS, OracleError, generate_tasks, oracle_trace


def reusable(path: Path, scale: float) -> bool:
    """Whether ``path`` holds the org this generator writes for seed 0 at ``scale``."""
    try:
        manifest = read_manifest(path)
    except (FileNotFoundError, ValueError):
        return False
    return (manifest.generator_version, manifest.seed, manifest.scale, manifest.latent) == (
        GENERATOR_VERSION,
        0,
        scale,
        True,
    )


def baseline_copy(path: Path) -> Path:
    """A copy of the org without the composite indexes and the planner's statistics."""
    copy = path.with_name(path.stem + "-baseline.sqlite")
    shutil.copyfile(path, copy)
    conn = sqlite3.connect(copy)
    for obj, indexes in COMPOSITE_INDEXES.items():
        for suffix, _ in indexes:
            conn.execute(f'DROP INDEX IF EXISTS "ix_{obj}_{suffix}"')
    conn.execute("DROP TABLE IF EXISTS sqlite_stat1")
    conn.commit()
    conn.execute("VACUUM")
    conn.close()
    return copy


def access_paths(org_path: Path, per_task: int) -> list[tuple[str, object, str, str]]:
    """(task, today, kind, text) of every org call the oracle's tools make on a few instances per task."""
    # allow_fewer: a task the org has fewer answerable instances of (TCU at scale 100) is timed on those it has.
    instances = generate_tasks(org_path, seed=0, per_task=per_task, null_share=0.0, allow_fewer=True)
    org = LocalOrg(org_path)
    calls: list[tuple[str, object, str, str]] = []
    failed: list[str] = []
    for inst in instances:
        log: list[tuple[object, str, str]] = []
        try:
            oracle_trace(inst, RecordingOrg(org.with_today(inst.params["today"]), log))
        except OracleError as err:  # not this benchmark's to fix: said, and the instance left out
            failed.append(f"{inst.abbrev} {inst.idx}: {str(err)[:200]}")
            continue
        calls.extend((inst.abbrev, today, kind, text) for today, kind, text in log)
    org.close()
    for line in failed:
        print(f"  the oracle failed on {line} (its calls are not timed)", flush=True)
    return calls


Call = tuple[str, object, str, str]  # (task, today, "query" or "search", text)


def open_org(path: Path, mmap: bool) -> LocalOrg:
    """The org at ``path``, read through a memory map or not (the map is set when the file is opened)."""
    default = local_module.MMAP_BYTES
    local_module.MMAP_BYTES = default if mmap else 0
    try:
        return LocalOrg(path)
    finally:
        local_module.MMAP_BYTES = default


def load() -> str:
    """The machine's load average (the machine may be shared)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def per_row(
    runs: dict[Any, tuple[LocalOrg, list[Call]]], rounds: int
) -> tuple[dict[Any, dict[str, tuple[float, int]]], dict[Any, float]]:
    """For each run: per task, (CPU seconds, rows returned) summed over its calls, each call's CPU time the
    best of ``rounds``; and per run, the wall-clock seconds of its calls (each the best of ``rounds``).
    The rounds go over every run in turn, so that a busy spell of the shared machine slows every org
    alike rather than one of them."""
    best = {key: [float("inf")] * len(calls) for key, (_, calls) in runs.items()}
    best_wall = {key: [float("inf")] * len(calls) for key, (_, calls) in runs.items()}
    rows = {key: [1] * len(calls) for key, (_, calls) in runs.items()}
    views = {key: [org.with_today(today) for _, today, _, _ in calls] for key, (org, calls) in runs.items()}  # type: ignore[arg-type]
    for _ in range(rounds):
        for key, (_, calls) in runs.items():
            # As timeit does: no garbage collection inside a timing (it would strike the same calls each round).
            gc.collect()
            gc.disable()
            try:
                for i, (_, _, kind, text) in enumerate(calls):
                    view = views[key][i]
                    started, wall = time.process_time(), time.perf_counter()
                    result = view.query(text) if kind == "query" else view.search(text)
                    best[key][i] = min(best[key][i], time.process_time() - started)
                    best_wall[key][i] = min(best_wall[key][i], time.perf_counter() - wall)
                    rows[key][i] = max(1, int(result.get("totalSize", len(result.get("searchRecords", [])))))
                    del result  # freed here, not inside the next call's timing
            finally:
                gc.enable()
    figures: dict[Any, dict[str, tuple[float, int]]] = {}
    for key, (_, calls) in runs.items():
        totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
        for i, (task, *_) in enumerate(calls):
            totals[task][0] += best[key][i]
            totals[task][1] += rows[key][i]
        figures[key] = {task: (t[0], int(t[1])) for task, t in totals.items()}
    return figures, {key: sum(times) for key, times in best_wall.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", type=float, nargs=2, default=[10.0, 100.0], metavar=("SMALL", "LARGE"))
    parser.add_argument("--per-task", type=int, default=3, help="instances per task whose calls are timed")
    parser.add_argument("--rounds", type=int, default=7, help="times each call is timed (the best is kept)")
    parser.add_argument("--workdir", default=None, help="where the orgs are written (default: a temporary dir)")
    parser.add_argument("--reuse", action="store_true", help="keep the orgs of this generator already in --workdir")
    args = parser.parse_args()
    if args.reuse and not args.workdir:
        parser.error("--reuse needs --workdir (the directory whose orgs are reused)")
    workdir = Path(args.workdir).resolve() if args.workdir else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(load(), flush=True)

    runs: dict[tuple[float, str], tuple[LocalOrg, list[Call]]] = {}
    for scale in args.scales:
        path = workdir / f"org-scale{scale:g}.sqlite"
        if args.reuse and reusable(path, scale):
            print(f"scale {scale:g}: reused {path} ({path.stat().st_size / 1024**2:.0f} MiB)", flush=True)
        else:
            path.unlink(missing_ok=True)
            started = time.perf_counter()
            generate_org(path, seed=0, scale=scale)
            seconds = time.perf_counter() - started
            size = path.stat().st_size / 1024**2
            print(f"scale {scale:g}: generated in {seconds:.1f} s, {size:.0f} MiB", flush=True)
        calls = access_paths(path, args.per_task)
        runs[(scale, "baseline")] = (open_org(baseline_copy(path), mmap=False), calls)
        runs[(scale, "current")] = (open_org(path, mmap=True), calls)
        print(f"scale {scale:g}: {len(calls)} org calls", flush=True)
    figures, walls = per_row(runs, args.rounds)
    print(
        f"each call timed {args.rounds} times in CPU time (the best kept), the rounds going over both scales "
        "and layouts"
    )

    small, large = args.scales
    print(f"\nCPU ms per row returned; ratio = scale {large:g} / scale {small:g} (target: within 3x)")
    print(f"{'task':5} {'baseline':>28} {'current':>28}  {'current/baseline at ' + format(large, 'g'):>22}")
    worst = {"baseline": 0.0, "current": 0.0}
    for task in TASK_ABBREVS:
        if any(task not in figures[(scale, "current")] for scale in (small, large)):
            print(f"{task:5} no calls timed at one of the scales")
            continue
        cells = []
        for layout in ("baseline", "current"):
            t_small, r_small = figures[(small, layout)][task]
            t_large, r_large = figures[(large, layout)][task]
            a, b = t_small * 1000 / r_small, t_large * 1000 / r_large
            worst[layout] = max(worst[layout], b / a)
            cells.append(f"{a:8.4f} {b:8.4f} {b / a:7.2f}x")
        speedup = figures[(large, "baseline")][task][0] / figures[(large, "current")][task][0]
        print(f"{task:5} {cells[0]:>28} {cells[1]:>28}  {speedup:21.2f}x")
    print(f"worst ratio: baseline {worst['baseline']:.2f}x, current {worst['current']:.2f}x")
    total = {layout: sum(t for t, _ in figures[(large, layout)].values()) for layout in ("baseline", "current")}
    print(
        f"all calls at scale {large:g}: baseline {total['baseline']:.2f} s, current {total['current']:.2f} s "
        f"CPU ({total['baseline'] / total['current']:.2f}x faster); wall clock: baseline "
        f"{walls[(large, 'baseline')]:.2f} s, current {walls[(large, 'current')]:.2f} s"
    )
    print(load())


if __name__ == "__main__":
    main()
