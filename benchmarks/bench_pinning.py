"""Memory that queries cannot pin: resident memory over 10,000 refused and 10,000 distinct accepted SOQL
queries, in process (``LocalOrg``) and through the served org (``crmarena-gym serve-org``), issue 36 item 1.

Before, a refused, deeply nested query was kept in the plan cache with its traceback: about 4 MB for a
6 KB query in process, 7.5 MB for a 12 KB ``GET /query?q=``. Now the caches keep a refusal as its code and
message and are bounded by measured bytes (plan cache 64 MB, shapers 16 MB), so the memory grows while the
caches fill and then stays flat.

Each run is a fresh process: the in-process one runs the queries itself; the served one is the real
``serve-org`` command (plain http on a free port) driven by this script through ``requests``, its
resident memory read from ``/proc/PID/status`` (Linux). The refused queries are distinct: nested
parentheses (about 12 KB), a statement over 100,000 characters, an unknown field, a syntax error after 400
conditions. The accepted ones are distinct shapes (their LIMIT is part of the shape), each compiled
once. Printed: resident MiB every 1,000 queries, CPU and wall seconds, and the growth over each phase's
second half (flat: within a few MiB).

Usage:
    python benchmarks/bench_pinning.py [--org PATH] [--queries 10000] [--only local|served]
        [--baseline /path/to/checkout-before [--baseline-queries 200]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

TODAY = "2025-07-29"
_FIELDS = ["Id", "Subject", "Status", "Priority", "Channel", "CreatedDate", "ClosedDate", "OwnerId", "AccountId"]


def refused(i: int, served: bool = False) -> str:
    """The i-th distinct refused query (four kinds in turn)."""
    kind = i % 4
    if kind == 0:  # nested parentheses, about 12 KB: the served reproducer
        depth = 6000 + i // 4 % 50
        return "SELECT Id FROM Case WHERE " + "(" * depth + f"Subject = 'n{i}'" + ")" * depth
    if kind == 1 and not served:  # over the statement bound (refused before it is parsed)
        return f"SELECT Id FROM Case WHERE Subject = 'l{i}'" + " " * 100_000
    if kind == 1:  # a request line has room for 16 KB: a string literal over its bound instead
        return f"SELECT Id FROM Case WHERE Subject = 'l{i}{'x' * 5000}'"
    if kind == 2:  # an unknown field
        return f"SELECT Id, NoSuchField{i}__c FROM Case"
    # A syntax error at the end of 400 conditions: the parser's error holds its state (every token before it).
    return "SELECT Id FROM Case WHERE " + " OR ".join(f"Subject = 'c{i}-{j}'" for j in range(400)) + " OR OR"


def accepted(i: int) -> str:
    """The i-th distinct accepted query: another select list, filter and LIMIT, so another shape and plan."""
    fields = ", ".join(_FIELDS[j] for j in range(len(_FIELDS)) if (i >> j) & 1 or j == 0)
    where = ("Status = 'Closed'", "Priority != 'Low'", "CreatedDate = LAST_N_DAYS:90", "Channel LIKE 'W%'")[i % 4]
    return f"SELECT {fields} FROM Case WHERE {where} ORDER BY CreatedDate DESC LIMIT {1 + i // 8}"


def rss_mib(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_phases(run, n: int, probe, served: bool = False, check: bool = True) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    """Refused then accepted queries through ``run(soql) -> refused?``; RSS every tenth of them."""
    out = []
    step = max(1, n // 10)
    phases = (("refused", lambda i: refused(i, served), True), ("accepted", accepted, False))
    for name, make, expect_refused in phases:
        points = [(0, probe())]
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(n):
            was_refused = run(make(i))
            if check and was_refused != expect_refused:
                raise SystemExit(f"{name} query {i} was {'refused' if was_refused else 'accepted'}: {make(i)[:120]}")
            if (i + 1) % step == 0 or i + 1 == n:
                points.append((i + 1, probe()))
        out.append(
            {
                "phase": name,
                "points": points,
                "wall": time.perf_counter() - wall,
                "cpu": time.process_time() - cpu,
            }
        )
    return out


def local_child(org: str, n: int, check: bool = True) -> None:
    from crmarena_gym.org import LocalOrg, OrgError

    local = LocalOrg(org, today=TODAY)

    def run(soql: str) -> bool:
        try:
            local.query(soql)
        except OrgError:
            return True
        return False

    print(json.dumps(run_phases(run, n, rss_mib, check=check)))


def served_child(org: str, n: int) -> None:
    import requests

    # The crmarena-gym command of this checkout (the installed script may import another copy).
    cli = "import sys; from crmarena_gym.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", cli, "serve-org", "--org", org, "--http", "--port", "0"]
    cmd += ["--token", "bench", "--today", TODAY]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()  # type: ignore[union-attr]
        match = re.search(r"(http://\S+?);", line)
        if match is None:
            raise SystemExit(f"serve-org did not start: {line}{server.stderr.read()}")  # type: ignore[union-attr]
        url = match.group(1) + "/services/data/v60.0/query"
        session = requests.Session()
        session.headers["Authorization"] = "Bearer bench"

        def run(soql: str) -> bool:
            r = session.get(url, params={"q": soql})
            if r.status_code != 200 and (r.status_code != 400 or not isinstance(r.json(), list)):
                raise SystemExit(f"the server answered {r.status_code}: {r.text[:200]}")  # not a query's refusal
            return r.status_code != 200

        phases = run_phases(run, n, lambda: rss_mib(server.pid), served=True)
        with open(f"/proc/{server.pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        phases.append({"server_cpu": (int(fields[11]) + int(fields[12])) / ticks})
        print(json.dumps(phases))
    finally:
        server.terminate()
        server.wait(timeout=30)


def report(label: str, phases: list[dict[str, object]]) -> None:
    extra = [p for p in phases if "server_cpu" in p]
    for p in phases:
        if "phase" not in p:
            continue
        points: list[tuple[int, float]] = p["points"]  # type: ignore[assignment]
        half = points[len(points) // 2][1]
        last, first = points[-1][1], points[0][1]
        shown = " ".join(f"{mib:.0f}" for _, mib in points)
        step = points[1][0] if len(points) > 1 else 0
        print(f"{label} {p['phase']:>8}: RSS MiB every {step:,}: {shown}")
        print(
            f"{'':>{len(label)}} {'':>8}  grew {last - first:+.1f} MiB in all, {last - half:+.1f} MiB over the second "
            f"half; {p['wall']:.1f} s wall, {p['cpu']:.1f} s CPU (this process)"
        )
    if extra:
        print(f"{label} server CPU {extra[0]['server_cpu']:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--org", type=Path, default=None, help="the org file (default: the embedded default org)")
    parser.add_argument("--queries", type=int, default=10_000, help="refused queries, then as many accepted ones")
    parser.add_argument("--only", choices=("local", "served"), default=None)
    parser.add_argument(
        "--baseline", type=Path, default=None, help="another checkout (e.g. before issue 36) run in process first"
    )
    parser.add_argument("--baseline-queries", type=int, default=200, help="queries of each kind for the baseline")
    parser.add_argument("--child", choices=("local", "served", "baseline"), default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child == "served":
            served_child(str(args.org), args.queries)
        else:
            local_child(str(args.org), args.queries, check=args.child == "local")
        return
    if args.org is None:
        from crmarena_gym.org import default_org_path

        args.org = default_org_path()
    print(f"org {str(args.org)!r}; {args.queries:,} refused then {args.queries:,} accepted queries; load {load()}")
    here = Path(__file__).resolve().parents[1]
    runs = [("baseline", args.baseline, args.baseline_queries)] if args.baseline else []
    runs += [(kind, here, args.queries) for kind in ("local", "served") if args.only in (None, kind)]
    for kind, checkout, n in runs:
        cmd = [sys.executable, __file__, "--child", kind, "--org", str(args.org), "--queries", str(n)]
        env = dict(os.environ, PYTHONPATH=str(checkout))  # that checkout's package
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if out.returncode != 0:
            raise SystemExit(f"the {kind} run failed: {out.stdout[-2000:]}{out.stderr[-2000:]}")
        label = {"baseline": f"baseline {checkout}", "local": "in process", "served": "serve-org"}[kind]
        report(label, json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"load {load()}")


if __name__ == "__main__":
    main()
