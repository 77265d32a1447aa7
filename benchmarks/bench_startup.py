"""Start-up: a fresh ``crmarena-gym eval --limit 1`` and the SOQL parser's build, against an older commit.

Each round runs, for this checkout and for the older commit (default c0821b3, checked out into a
temporary git worktree), in fresh processes:

* ``crmarena-gym eval --env CRMArena-v0 --policy oracle --limit 1 --out <tmp>``: the whole command,
  imports and interpreter exit included (its CPU time from ``getrusage(RUSAGE_CHILDREN)``, beside wall);
* a probe that imports ``lark``, then the parser module, then makes the SOQL parser: its own CPU time
  (``time.process_time`` around it, in the child) and lark's import; once with an empty cache directory
  (the parser built) and once with the run's cache (this checkout loads the tables it saved there; the
  older commit builds them every time).

The sides alternate within each round and which goes first alternates between rounds; the medians are
compared. Before the rounds each side runs once untimed: it builds what its cache lacks (the older
commit generates the org of its own generator version) and writes its bytecode (see ``_old_commit``).

Targets (issue 32): eval --limit 1 at most 0.8 s CPU and at most the older commit's; the parser built
in under 0.1 s CPU.

Usage:
    python benchmarks/bench_startup.py [--rounds 7] [--commit c0821b3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from _old_commit import OLD_COMMIT, REPO_ROOT, Sides, alternating, load_line, old_checkout

CACHE_ENV = "CRMARENA_GYM_CACHE"
EVAL_TARGET_CPU = 0.8
PARSER_TARGET_CPU = 0.1

# ``python -m crmarena_gym.cli`` needs a ``__main__`` the older commit does not have: both run this.
_CLI = "import sys; from crmarena_gym.cli import main; sys.exit(main())"

_PARSER_PROBE = """
import json, time
t0 = time.process_time()
import lark
t1 = time.process_time()
from crmarena_gym.org.soql import _parser
t2 = time.process_time()
parser = _parser._lark()
t3 = time.process_time()
parser.parse("SELECT Id FROM Case WHERE Status = 'New' ORDER BY CreatedDate DESC LIMIT 5")
print(json.dumps({"import_lark": t1 - t0, "build": t3 - t2, "rules": len(parser.rules)}))
"""


def _eval(sides: Sides, side: str, workdir: Path, n: int) -> tuple[float, float]:
    out = workdir / f"run-{side}-{n}"
    args = ["-c", _CLI, "eval", "--env", "CRMArena-v0", "--policy", "oracle", "--limit", "1", "--out", str(out)]
    run = sides.run(side, args)
    summary = [line.split() for line in run.stdout.splitlines() if line.startswith("all ")]
    if not summary or summary[0][2] != "1":  # the table's "all" row: instances, episodes, accuracy ...
        raise RuntimeError(f"{side}: eval --limit 1 did not play one episode:\n{run.stdout}")
    return run.cpu, run.wall


def _parser(sides: Sides, side: str, workdir: Path, n: int) -> dict[str, float]:
    empty = workdir / f"empty-cache-{side}-{n}"
    cold = json.loads(sides.run(side, ["-c", _PARSER_PROBE], env={CACHE_ENV: str(empty)}).stdout)
    warm = json.loads(sides.run(side, ["-c", _PARSER_PROBE]).stdout)
    return {"import_lark": cold["import_lark"], "build": cold["build"], "ready": warm["build"], "rules": cold["rules"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds (default 7)")
    parser.add_argument("--commit", default=OLD_COMMIT, help=f"the older commit (default {OLD_COMMIT})")
    args = parser.parse_args()

    print(f"before: {load_line()}")
    with old_checkout(args.commit) as old_root, tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        workdir = Path(tmp)
        sides = Sides({"new": REPO_ROOT, "old": old_root}, workdir)
        names = ("new", "old")
        for side in names:  # untimed: caches and bytecode
            sides.check(side)
            cpu, wall = _eval(sides, side, workdir, -1)
            print(f"warm-up {side}: eval {cpu:.3f} s CPU ({wall:.3f} s wall)")
        evals: dict[str, list[tuple[float, float]]] = {s: [] for s in names}
        probes: dict[str, list[dict[str, float]]] = {s: [] for s in names}
        for n, side in alternating(names, args.rounds):
            evals[side].append(_eval(sides, side, workdir, n))
            probes[side].append(_parser(sides, side, workdir, n))
            cpu, wall = evals[side][-1]
            probe = probes[side][-1]
            print(
                f"round {n + 1} {side}: eval {cpu:.3f} s CPU ({wall:.3f} s wall); parser built "
                f"{probe['build'] * 1000:.1f} ms CPU ({int(probe['rules'])} rules), from the cache "
                f"{probe['ready'] * 1000:.1f} ms, lark import {probe['import_lark'] * 1000:.1f} ms; {load_line()}"
            )

    print()
    med: dict[str, dict[str, float]] = {}
    for side in names:
        med[side] = {
            "cpu": statistics.median(c for c, _ in evals[side]),
            "wall": statistics.median(w for _, w in evals[side]),
            "build": statistics.median(p["build"] for p in probes[side]),
            "ready": statistics.median(p["ready"] for p in probes[side]),
            "lark": statistics.median(p["import_lark"] for p in probes[side]),
        }
    label = {"new": "this checkout", "old": f"commit {args.commit}"}
    print(f"medians of {args.rounds} rounds    eval CPU   eval wall   parser built   from the cache   lark import")
    for side in names:
        m = med[side]
        print(
            f"{label[side]:<22} {m['cpu']:8.3f} s {m['wall']:9.3f} s {m['build'] * 1000:11.1f} ms"
            f" {m['ready'] * 1000:13.1f} ms {m['lark'] * 1000:10.1f} ms"
        )
    ratio, wall_ratio = (med["new"][k] / med["old"][k] for k in ("cpu", "wall"))
    print(f"eval --limit 1 CPU, this checkout / {args.commit}: {ratio:.2f}x (wall {wall_ratio:.2f}x)")
    print(
        f"parser CPU, this checkout / {args.commit}: built {med['new']['build'] / med['old']['build']:.2f}x, "
        f"from the cache {med['new']['ready'] / med['old']['ready']:.2f}x"
    )
    eval_ok = med["new"]["cpu"] <= EVAL_TARGET_CPU and med["new"]["cpu"] <= med["old"]["cpu"]
    print(
        f"target eval --limit 1 <= {EVAL_TARGET_CPU} s CPU and <= {args.commit}'s: "
        f"{med['new']['cpu']:.3f} s vs {med['old']['cpu']:.3f} s -> {'met' if eval_ok else 'NOT met'}"
    )
    build_ok = med["new"]["build"] < PARSER_TARGET_CPU
    print(
        f"target parser build < {PARSER_TARGET_CPU * 1000:.0f} ms CPU (built, no cache): "
        f"{med['new']['build'] * 1000:.1f} ms -> {'met' if build_ok else 'NOT met'}"
    )
    print(f"after: {load_line()}")


if __name__ == "__main__":
    main()
