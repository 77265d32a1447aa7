"""Runaway results: a query matching tens of thousands of rows, through the environment, against the
way the environment answered it before bounded results (issue 14 item 6).

The baseline, measured in the same run on the same org, is what the env did before: the org shapes
every row (``LocalOrg.query``), the rows are cleaned and rendered whole (``str()``), then the text is
cut to the observation bound. Now the org shapes only the rows the bound can show
(``Org.query_head``) and the env renders only as far as the bound. Both produce the same visible
text (the note at the end differs); the script checks that before timing.

Reported per query and scale: rows matched, time (best of 3) and peak traced memory for the baseline
and now, and their ratios. The orgs are generated into ``--workdir`` (kept between runs).

Usage:
    python benchmarks/bench_bounded.py [--scales 1 10] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from crmarena_gym.datagen import generate_org
from crmarena_gym.envs import CRMArenaEnv
from crmarena_gym.org import LocalOrg
from crmarena_gym.tools import clean_records

QUERIES = {
    "3-hop LIKE": "SELECT Id, Product2.Name, Order.Account.Name FROM OrderItem WHERE Order.Account.Name LIKE '%a%'",
    "cases with parents": "SELECT Id, Subject, Status, Contact.Name, Account.Name, Owner.Name FROM Case",
    "tiny rows": "SELECT Id FROM PricebookEntry",
}
PREFIX = "Salesforce instance output: "
TASK = {"idx": 0, "task": "BRI", "query": "Which state?", "answer": "CA"}


def measure(run: Callable[[], str]) -> tuple[float, float, str]:
    """Best-of-3 seconds, the peak traced MiB of one more run, and the text."""
    best = float("inf")
    text = ""
    for _ in range(3):
        start = time.perf_counter()
        text = run()
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "crmarena-bench-bounded")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(
        f"{'scale':>5}  {'query':<19} {'rows':>7}  {'before s':>8} {'now s':>7} {'x':>6}"
        f"  {'before MiB':>10} {'now MiB':>8} {'x':>6}"
    )
    for scale in args.scales:
        path = args.workdir / f"org-seed0-scale{scale:g}.sqlite"
        if not path.exists():
            generate_org(path, seed=0, scale=scale)
        org = LocalOrg(path)
        env = CRMArenaEnv(org=org, tasks=[TASK])
        env.reset(seed=0)
        limit = env.max_observation_chars
        for name, soql in QUERIES.items():
            rows = org.query(f"SELECT COUNT() FROM {soql.split(' FROM ')[1]}")["totalSize"]

            def before(soql: str = soql, org: LocalOrg = org, limit: int = limit) -> str:
                text = PREFIX + str(clean_records(org.query(soql)["records"]))
                return text[:limit]

            def now(soql: str = soql, env: CRMArenaEnv = env) -> str:
                return env.step("execute " + soql)[0]

            b_time, b_mem, b_text = measure(before)
            n_time, n_mem, n_text = measure(now)
            assert n_text.startswith(b_text), f"{name}: the visible text changed"
            print(
                f"{scale:>5g}  {name:<19} {rows:>7}  {b_time:>8.3f} {n_time:>7.3f} {b_time / n_time:>5.1f}x"
                f"  {b_mem:>10.1f} {n_mem:>8.1f} {b_mem / n_mem:>5.1f}x"
            )
        org.close()


if __name__ == "__main__":
    main()
