"""Scale benchmark: the tasks' access paths at 10x and 100x the original org, with and without the
composite indexes, the planner's statistics and memory-mapped reads.

For each scale it generates an org (seed 0; the generation time and file size are reported), draws a
few answerable instances of each task from it, records every query and search the oracle's tool
calls send, and times each (best of 3) through ``LocalOrg``. The baseline, measured in the same run on
a copy of the same org, drops the composite indexes and the statistics (``sqlite_stat1``) and reads
without a memory map: the org as the generator wrote it before them.

Reported per task: milliseconds per row returned at each scale, and the scale-100 / scale-10 ratio
of that figure (target: within 3x, that is the access path grows with what it returns, not with the
org), for the baseline and the current layout.

Usage:
    python benchmarks/bench_scale.py [--scales 10 100] [--per-task 3] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_env import RecordingOrg  # beside this file: the benchmarks directory is not a package

import crmarena_gym.org._local as local_module
from crmarena_gym.datagen import generate_org
from crmarena_gym.org import LocalOrg
from crmarena_gym.schema import COMPOSITE_INDEXES
from crmarena_gym.tasks import TASK_ABBREVS, generate_tasks, oracle_trace


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
    instances = generate_tasks(org_path, seed=0, per_task=per_task, null_share=0.0)
    org = LocalOrg(org_path)
    calls: list[tuple[str, object, str, str]] = []
    for inst in instances:
        log: list[tuple[object, str, str]] = []
        oracle_trace(inst, RecordingOrg(org.with_today(inst.params["today"]), log))
        calls.extend((inst.abbrev, today, kind, text) for today, kind, text in log)
    org.close()
    return calls


def per_row(org_path: Path, calls: list[tuple[str, object, str, str]], mmap: bool) -> dict[str, tuple[float, int]]:
    """Per task: (seconds, rows returned) summed over its calls, each the best of 3 runs."""
    local_module.MMAP_BYTES = (1 << 30) if mmap else 0
    org = LocalOrg(org_path)
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for task, today, kind, text in calls:
        view = org.with_today(today)  # type: ignore[arg-type]
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            result = view.query(text) if kind == "query" else view.search(text)
            best = min(best, time.perf_counter() - started)
        rows = result.get("totalSize", len(result.get("searchRecords", [])))
        totals[task][0] += best
        totals[task][1] += max(1, int(rows))
    org.close()
    return {task: (t[0], int(t[1])) for task, t in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", type=float, nargs=2, default=[10.0, 100.0], metavar=("SMALL", "LARGE"))
    parser.add_argument("--per-task", type=int, default=3, help="instances per task whose calls are timed")
    parser.add_argument("--workdir", default=None, help="where the orgs are written (default: a temporary dir)")
    args = parser.parse_args()
    workdir = Path(args.workdir).resolve() if args.workdir else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)

    figures: dict[tuple[float, str], dict[str, tuple[float, int]]] = {}
    for scale in args.scales:
        path = workdir / f"org-scale{scale:g}.sqlite"
        path.unlink(missing_ok=True)
        started = time.perf_counter()
        generate_org(path, seed=0, scale=scale)
        seconds = time.perf_counter() - started
        size = path.stat().st_size / 1024**2
        print(f"scale {scale:g}: generated in {seconds:.1f} s, {size:.0f} MiB", flush=True)
        calls = access_paths(path, args.per_task)
        baseline = baseline_copy(path)
        figures[(scale, "baseline")] = per_row(baseline, calls, mmap=False)
        figures[(scale, "current")] = per_row(path, calls, mmap=True)
        print(f"scale {scale:g}: {len(calls)} org calls timed", flush=True)

    small, large = args.scales
    print(f"\nms per row returned; ratio = scale {large:g} / scale {small:g} (target: within 3x)")
    print(f"{'task':5} {'baseline':>28} {'current':>28}  {'current/baseline at ' + format(large, 'g'):>22}")
    worst = {"baseline": 0.0, "current": 0.0}
    for task in TASK_ABBREVS:
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
        f"({total['baseline'] / total['current']:.2f}x faster)"
    )


if __name__ == "__main__":
    main()
