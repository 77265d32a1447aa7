"""Viewer benchmark: how fast the viewer opens a large run and follows a run that is writing.

A run of the reactive oracle over the 1,170 default instances, 3 trials each (3,510 episodes, written once
into a temporary directory), is opened by the viewer. The baseline, measured in the same run, is
``read_results`` on the same file: parsing the JSON lines, which any reader of the run must do.

Figures (ratios to the baseline):

- open: ``ViewerData`` reading the run (tolerant parsing, indexing);
- first table: the runs document on a cold cache (summaries, pass^k and a bootstrap interval per task);
- cached table: the same document again (what every poll of an unchanged run costs);
- one more episode: an episode appended, read (the file is read from where it was left, not from the
  start), then the runs document worked out again.

Usage:
    python benchmarks/bench_viewer.py [--per-task N] [--trials K]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from crmarena_gym.eval import RESULTS_FILE, ViewerData, evaluate, read_results


def _best(function: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-task", type=int, default=None, help="instances per task (default: all 1,170)")
    parser.add_argument("--trials", type=int, default=3, help="trials per instance (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        start = time.perf_counter()
        result = evaluate("reactive-oracle", out=run, trials=args.trials, per_task=args.per_task, progress=False)
        print(f"wrote {len(result.results)} episodes in {time.perf_counter() - start:.1f} s")
        results = run / RESULTS_FILE
        size = results.stat().st_size
        baseline = _best(lambda: read_results(results))
        print(f"baseline: read_results on {size / 2**20:.1f} MiB: {baseline * 1000:.0f} ms")
        opened = _best(lambda: ViewerData([run]))
        print(f"open: {opened * 1000:.0f} ms, {opened / baseline:.2f}x the baseline")

        def cold() -> None:
            ViewerData([run]).api("/api/runs")

        first = _best(cold) - opened
        print(f"first table: {first * 1000:.0f} ms, {first / baseline:.2f}x")
        data = ViewerData([run])
        data.api("/api/runs")
        cached = _best(lambda: (data.refresh(), data.api("/api/runs")), repeat=20)
        print(f"cached table (a poll of an unchanged run): {cached * 1000:.2f} ms, {cached / baseline:.4f}x")
        line = results.read_bytes().splitlines(keepends=True)[-1]
        reads, tables = [], []
        for trial in range(3):
            extra = line.replace(b'"trial": ', f'"trial": {100 + trial}, "was_trial": '.encode(), 1)
            with open(results, "ab") as handle:
                handle.write(extra)
            start = time.perf_counter()
            data.refresh()
            read = time.perf_counter()
            data.api("/api/runs")
            reads.append(read - start)
            tables.append(time.perf_counter() - read)
        read, table = min(reads), min(tables)
        print(f"one more episode: read {read * 1000:.1f} ms ({read / baseline:.4f}x), ", end="")
        print(f"tables again {table * 1000:.0f} ms ({table / baseline:.2f}x)")


if __name__ == "__main__":
    main()
