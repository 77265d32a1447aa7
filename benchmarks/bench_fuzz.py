"""Issue 36's fuzz run: 100,000 seeded hostile actions over the ten env ids and the three toolsets, the
exceptions out of ``env.step`` counted (the target is 0), resident memory probed every 5,000 actions.

The actions come from ``tests/fuzz_actions.py`` (mutated and hostile SOQL, SOSL, tool calls with numbers of
thousands of digits and deep JSON, malformed calls, answers, garbage); each (env id, toolset) gets an equal
share, played on the embedded org and its default task set. Printed: the actions by kind, the exceptions (the
first ten with their actions), the slowest step, CPU and wall time, the load, the org file's hash before and
after (it must not change), and RSS along the run with its growth over the second half (flat: within a few MiB).

Usage:
    python benchmarks/bench_fuzz.py [--actions 100000] [--seed 0] [--probe 5000]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's tests package (the harness)

import gymnasium as gym

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym._files import file_sha256
from crmarena_gym.envs import env_ids
from crmarena_gym.org import default_org_path
from tests import fuzz_actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actions", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--probe", type=int, default=5000, help="actions between two memory probes")
    args = parser.parse_args()
    org = default_org_path()
    before = file_sha256(org)
    combos = list(fuzz_actions.combos(env_ids()))
    mib = 2**20
    print(f"{args.actions:,} actions, seed {args.seed}, {len(combos)} env id x toolset pairs; org {str(org)!r}")
    print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)

    def progress(report: fuzz_actions.Report) -> None:
        n, rss = report.rss[-1]
        print(
            f"  {n:>7,} actions  RSS {rss / mib:7.1f} MiB  exceptions {len(report.exceptions)}  "
            f"{report.cpu:7.1f} s CPU  {report.wall:7.1f} s wall",
            flush=True,
        )

    report = fuzz_actions.run(lambda e, t: gym.make(e, toolset=t), combos, args.actions, args.seed,
                              probe_every=args.probe, progress=progress)  # fmt: skip
    after = file_sha256(org)
    print(f"actions by kind: {dict(sorted(report.by_kind.items()))}")
    print(f"exceptions out of step: {len(report.exceptions)}")
    for kind, detail, text in report.exceptions[:10]:
        print(f"  {kind}: {detail} <- {text}")
    print(f"slowest step: {report.slowest[0]:.2f} s ({report.slowest[1]})")
    print(f"{report.cpu:.1f} s CPU, {report.wall:.1f} s wall; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"org file unchanged: {before == after}")
    if report.rss:
        first, half, last = report.rss[0][1], report.rss[len(report.rss) // 2][1], report.rss[-1][1]
        print(
            f"RSS: {first / mib:.1f} MiB after {report.rss[0][0]:,} actions, {last / mib:.1f} MiB at the end; "
            f"{(last - half) / mib:+.1f} MiB over the second half"
        )
    if report.exceptions or before != after:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
