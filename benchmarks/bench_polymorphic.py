"""Benchmark of polymorphic relationships read through Salesforce's Name object (``What.Name``, ``Who.Name``).

On a B2B org (a task's What may name an opportunity, an account, a case, a contract, a quote or an order; its Who a
contact or a lead), it times warm ``LocalOrg.query`` of every task's What and Who names and types (one LEFT JOIN per
object the org has a table for, a CASE on the id's key prefix), in SELECT, WHERE and GROUP BY, against two baselines
in the same run: the same rows without any parent (``WhatId, WhoId``) and with one single-object parent
(``Account.Name``). Rounds alternate between the queries; the medians of wall and CPU time are printed with their
ratios and the machine's load.

Run: ``python benchmarks/bench_polymorphic.py [--scale 1] [--rounds 40] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from crmarena_gym.datagen import generate_org
from crmarena_gym.org import LocalOrg

QUERIES = {
    "ids only": "SELECT Id, WhatId, WhoId FROM Task",
    "one parent": "SELECT Id, Account.Name FROM Task",
    "What.Name, Who.Name": "SELECT Id, What.Name, Who.Name FROM Task",
    "WHERE What.Type + ORDER BY What.Name": (
        "SELECT Id, What.Name FROM Task WHERE What.Type IN ('Opportunity', 'Account') ORDER BY What.Name"
    ),
    # Type alone: the record's object, null when no record has the id (it must look the record up).
    "What.Type, Who.Type": "SELECT Id, What.Type, Who.Type FROM Task",
    "WHERE What.Type": "SELECT Id FROM Task WHERE What.Type = 'Opportunity'",
    "GROUP BY What.Type": "SELECT What.Type, COUNT(Id) FROM Task GROUP BY What.Type",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--workdir", type=Path, default=None, help="where the generated org is kept (reused)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_polymorphic_"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"b2b_seed0_scale{args.scale:g}.sqlite"
    if not path.exists():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            generate_org(path, kind="b2b", seed=0, scale=args.scale)
    org = LocalOrg(path, today="2024-06-30")
    rows = {name: org.query(soql)["totalSize"] for name, soql in QUERIES.items()}  # warms the plans
    wall: dict[str, list[float]] = {name: [] for name in QUERIES}
    cpu: dict[str, list[float]] = {name: [] for name in QUERIES}
    for _ in range(args.rounds):
        for name, soql in QUERIES.items():
            w, c = time.perf_counter(), time.process_time()
            org.query(soql)
            wall[name].append(time.perf_counter() - w)
            cpu[name].append(time.process_time() - c)
    org.close()
    print(f"b2b org, scale {args.scale:g}: {path}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    base = statistics.median(wall["ids only"])
    one = statistics.median(wall["one parent"])
    print(f"{'query':40} {'rows':>6} {'wall ms':>8} {'cpu ms':>8} {'/ids':>6} {'/one':>6}")
    for name in QUERIES:
        mw, mc = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"{name:40} {rows[name]:6} {mw * 1e3:8.2f} {mc * 1e3:8.2f} {mw / base:6.2f} {mw / one:6.2f}")


if __name__ == "__main__":
    main()
