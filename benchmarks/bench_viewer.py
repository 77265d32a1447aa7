"""Viewer benchmark: how fast the viewer opens a large run, answers its pages, and writes a static copy.

The run is synthetic by default (``tests/eval/viewer_runs.synthetic_run``: 20,000 episodes with queries,
calls, dropout effects and timing, written in a few seconds), or a real one with ``--real`` (the reactive
oracle over the 1,170 default instances, ``--trials`` each, played first). The baseline, measured in the same
rounds, is ``read_results`` on the same file: parsing the JSON lines, which any reader of the run must do.

Figures, each the best of ``--rounds`` rounds that alternate with the baseline's, wall and CPU time, and the
ratio of wall time to the baseline's:

- open: ``ViewerData`` reading the run (tolerant parsing, indexing);
- warm: the tables, episode list and solved-by matrix worked out (the server does this before answering);
- first page: 50 episodes sorted by turns, most first (what the run page asks first);
- filtered page: failed HTU episodes matching a search, 50 of them;
- solved-by page: 50 instances;
- poll: the state of an unchanged run, answered from the cache;
- one more episode: an episode appended, read from where the file was left, and the lists worked out again;
- static copy: ``export_viewer`` (once), with the size of ``data.js`` and of the largest chunk.

Usage:
    python benchmarks/bench_viewer.py [--episodes N] [--rounds R] [--real [--trials K]]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's tests/ (its synthetic runs)

from crmarena_gym.eval import RESULTS_FILE, ViewerData, evaluate, export_viewer, read_results


def _timed(function: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def _rounds(tasks: dict[str, Callable[[], object]], rounds: int) -> dict[str, tuple[float, float]]:
    """The best (wall, CPU) of each task over ``rounds`` rounds, the tasks alternating within each round."""
    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        for name, function in tasks.items():
            wall, cpu = _timed(function)
            if name not in best or wall < best[name][0]:
                best[name] = (wall, cpu)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=20000, help="a synthetic run's episodes (default 20,000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per figure (default 3)")
    parser.add_argument("--real", action="store_true", help="play the reactive oracle over the default test set")
    parser.add_argument("--trials", type=int, default=3, help="with --real: trials per instance (default 3)")
    args = parser.parse_args()
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        start = time.perf_counter()
        if args.real:
            evaluate("reactive-oracle", out=run, trials=args.trials, progress=False)
        else:
            from tests.eval.viewer_runs import synthetic_run

            synthetic_run(run, args.episodes // 2, 2, dropout="corrupt", seed=0)
        results = run / RESULTS_FILE
        lines = sum(1 for _ in open(results, "rb"))
        size = results.stat().st_size / 2**20
        print(f"wrote {lines:,} episodes ({size:.1f} MiB) in {time.perf_counter() - start:.1f} s")

        data = ViewerData([run])
        data.warm()
        run_id = data.sources[0].id

        def cold_open() -> None:
            ViewerData([run])

        def cold_warm() -> None:
            ViewerData([run]).warm()

        def page(query: str) -> Callable[[], object]:
            return lambda: data.api(f"/api/runs/{run_id}/episodes?{query}")

        figures = _rounds(
            {
                "baseline": lambda: read_results(results),
                "open": cold_open,
                "open and warm": cold_warm,
                "first page": page("sort=turns&order=desc&limit=50"),
                "filtered page": page("task=HTU&outcome=failure&q=late&limit=50"),
                "solved-by page": lambda: data.api("/api/instances?limit=50"),
                "poll": lambda: (data.refresh(), data.api("/api/state")),
            },
            args.rounds,
        )
        base = figures.pop("baseline")
        print(f"baseline (read_results): wall {base[0] * 1000:.0f} ms, CPU {base[1] * 1000:.0f} ms")
        warm = figures.pop("open and warm")
        figures["warm"] = (warm[0] - figures["open"][0], warm[1] - figures["open"][1])
        for name in ("open", "warm", "first page", "filtered page", "solved-by page", "poll"):
            wall, cpu = figures[name]
            print(f"{name}: wall {wall * 1000:.1f} ms, CPU {cpu * 1000:.1f} ms, {wall / base[0]:.4f}x the baseline")

        line = results.read_bytes().splitlines(keepends=True)[-1]
        appended = []
        for trial in range(args.rounds):
            extra = line.replace(b'"trial": ', f'"trial": {100 + trial}, "was_trial": '.encode(), 1)
            with open(results, "ab") as handle:
                handle.write(extra)
            appended.append(_timed(lambda: (data.refresh(), data.api(f"/api/runs/{run_id}/episodes?limit=50"))))
        wall, cpu = min(appended)
        print(
            f"one more episode, then a page: wall {wall * 1000:.0f} ms, CPU {cpu * 1000:.0f} ms, {wall / base[0]:.3f}x"
        )

        copy = Path(tmp) / "copy"
        wall, cpu = _timed(lambda: export_viewer(data, copy))
        sizes = {p.relative_to(copy).as_posix(): p.stat().st_size for p in copy.rglob("*.js")}
        largest = max((v, k) for k, v in sizes.items() if k.startswith("data/"))
        print(
            f"static copy: wall {wall:.1f} s, CPU {cpu:.1f} s; {len(sizes)} files, "
            f"{sum(sizes.values()) / 2**20:.0f} MiB; "
            f"data.js {sizes['data.js'] / 1024:.0f} KiB, the largest chunk {largest[0] / 2**20:.2f} MiB ({largest[1]})"
        )
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
