"""Benchmark of the SOQL engine: LocalOrg.query against its own compiled SQL run directly on sqlite3.

For a corpus of realistic queries (those the tools and agents write, ORIGINAL.md section 5) it prints
the median time per query of

* raw: the compiled SQL and parameters, executed and fetched on a plain sqlite3 connection (for a query
  with parent-to-child subqueries, its statement and each subquery's);
* cold: ``LocalOrg.query`` with an empty plan cache (parse, check, compile, run, shape);
* warm: ``LocalOrg.query`` with the plan cached (bind, run, shape);

at scale 1 and scale 10 (orgs generated with seed 0), and the memory of 64 environments' worth of
orgs (64 ``LocalOrg`` objects and ``with_today`` views over one file) in one process. Target: warm
overhead at most 1.5 times raw.

SOSL: the median time of ordinary searches (those the tools and agents write) as the baseline, the
worst wildcard cases against it (issue 16's reproducer, 200 mid-word wildcard terms, took 143 s on
the default org before the wildcard expansion, 80 s measured here on the shared machine, over 17
minutes at scale 10; every search now runs under QUERY_TIMEOUT), and the time of a small search while
another thread runs the worst cases over and over (against the same small search alone).

Run: ``python benchmarks/bench_engine.py [--scales 1 10] [--reps 15] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import sqlite3
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

from crmarena_gym.org import LocalOrg, OrgError
from crmarena_gym.org.soql import RelativeParam

TODAY = "2023-06-01"


def corpus(conn: sqlite3.Connection) -> list[str]:
    """About 30 realistic queries, with ids taken from the org."""

    def one(sql: str) -> str:
        row = conn.execute(sql).fetchone()
        if row is None:
            raise SystemExit(f"the org has no row for {sql!r}")
        return row[0]

    product = one('SELECT "Product2Id" FROM "OrderItem" GROUP BY "Product2Id" ORDER BY COUNT(*) DESC LIMIT 1')
    account = one('SELECT "AccountId" FROM "Order" LIMIT 1')
    contact = one('SELECT "Id" FROM "Contact" WHERE "AccountId" IS NOT NULL LIMIT 1')
    case = one('SELECT "Id" FROM "Case" WHERE "Id" IN (SELECT "CaseId" FROM "LiveChatTranscript") LIMIT 1')
    agent = one('SELECT "OwnerId" FROM "Case" GROUP BY "OwnerId" ORDER BY COUNT(*) DESC LIMIT 1')
    issue = one('SELECT "Id" FROM "Issue__c" LIMIT 1')
    day = one('SELECT "EffectiveDate" FROM "Order" LIMIT 1')
    window = "CreatedDate >= 2022-01-01T00:00:00Z AND CreatedDate < 2022-07-01T00:00:00Z"
    return [
        # the task-specific tools
        f"SELECT NewValue__c, COUNT(Id) FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND {window} "
        "GROUP BY NewValue__c",
        f"SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE {window} AND Status = 'Closed'",
        f"SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND {window} GROUP BY CaseId__c "
        "HAVING COUNT(Id) = 1",
        "SELECT OldValue__c, COUNT(Id) FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' "
        f"AND OldValue__c != null AND {window} GROUP BY OldValue__c",
        f"SELECT Id, ShippingState FROM Account WHERE Id IN (SELECT AccountId FROM Case WHERE {window})",
        f"SELECT Id FROM OrderItem WHERE Product2Id = '{product}'",
        f"SELECT IssueId__c, COUNT(Id) FROM Case WHERE OrderItemId__r.Product2Id = '{product}' AND {window} "
        "GROUP BY IssueId__c ORDER BY COUNT(Id) DESC",
        f"SELECT AccountId FROM Contact WHERE Id = '{contact}'",
        f"SELECT Product2Id FROM OrderItem WHERE Order.AccountId = '{account}' AND Order.EffectiveDate = {day} "
        "AND Order.Status = 'Activated'",
        "SELECT Id, Name FROM Issue__c",
        f"SELECT Body, EndTime FROM LiveChatTranscript WHERE CaseId = '{case}'",
        f"SELECT Subject, TextBody, FromAddress, ToAddress, MessageDate FROM EmailMessage WHERE ParentId = '{case}'",
        # what agents write
        "SELECT Id, Subject, Status, Owner.Name FROM Case WHERE CreatedDate = LAST_N_MONTHS:6 "
        "ORDER BY CreatedDate DESC",
        "SELECT COUNT() FROM Case WHERE Status = 'Closed'",
        f"SELECT COUNT(Id) cnt FROM Case WHERE OwnerId = '{agent}'",
        "SELECT Account.ShippingState, COUNT(Id) FROM Case WHERE Status = 'Closed' GROUP BY Account.ShippingState",
        "SELECT CALENDAR_MONTH(CreatedDate) m, COUNT(Id) n FROM Case WHERE CreatedDate = LAST_N_YEARS:2 "
        "GROUP BY CALENDAR_MONTH(CreatedDate) ORDER BY COUNT(Id) DESC",
        "SELECT CALENDAR_YEAR(CreatedDate), CALENDAR_QUARTER(CreatedDate), COUNT(Id) FROM Case "
        "GROUP BY CALENDAR_YEAR(CreatedDate), CALENDAR_QUARTER(CreatedDate)",
        "SELECT Id, Subject FROM Case WHERE Id IN (SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = "
        "'Owner Assignment' AND OldValue__c != null) LIMIT 50",
        f"SELECT Id FROM Case WHERE IssueId__c = '{issue}' AND Id NOT IN (SELECT CaseId__c FROM CaseHistory__c "
        "WHERE Field__c = 'Case Closed')",
        "SELECT Id, Title, Summary FROM Knowledge__kav WHERE Title LIKE '%return%' AND PublishStatus = 'Online'",
        "SELECT Id, Name FROM Product2 WHERE Name LIKE '%running shoe%'",
        "SELECT OwnerId, COUNT_DISTINCT(AccountId), MIN(CreatedDate), MAX(ClosedDate) FROM Case GROUP BY OwnerId",
        "SELECT Status, Priority, COUNT(Id) FROM Case GROUP BY Status, Priority ORDER BY Status, Priority",
        "SELECT Id, CreatedDate, ClosedDate FROM Case WHERE ClosedDate != null AND (Priority = 'High' OR "
        "Priority = 'Critical') ORDER BY ClosedDate DESC NULLS LAST LIMIT 100",
        "SELECT OrderId, SUM(Quantity), AVG(UnitPrice) FROM OrderItem GROUP BY OrderId HAVING SUM(Quantity) > 2 "
        "LIMIT 200",
        "SELECT Id, OrderItemId__r.Order.Account.ShippingState, Owner.Email FROM Case WHERE CreatedDate = THIS_YEAR",
        "SELECT DAY_ONLY(CreatedDate), COUNT(Id) FROM Case WHERE CreatedDate = LAST_90_DAYS "
        "GROUP BY DAY_ONLY(CreatedDate)",
        "SELECT Id, Name, Email FROM User ORDER BY Name LIMIT 20 OFFSET 10",
        "SELECT Id, Status, EffectiveDate FROM Order WHERE EffectiveDate = LAST_N_MONTHS:3 AND Status = 'Activated'",
        # parent-to-child subqueries, FIELDS(), the standard fields the dump lacks, ROLLUP
        "SELECT Id, Name, (SELECT Id, Subject, Status FROM Cases ORDER BY CreatedDate DESC LIMIT 3) FROM Account "
        "WHERE ShippingState = 'CA'",
        "SELECT Id, Subject, (SELECT Id, Subject, MessageDate FROM EmailMessages ORDER BY MessageDate) FROM Case "
        "WHERE CreatedDate = LAST_N_MONTHS:6",
        f"SELECT Id, EffectiveDate, (SELECT Product2Id, Quantity, UnitPrice FROM OrderItems) FROM Order "
        f"WHERE AccountId = '{account}'",
        "SELECT Id, Name, (SELECT Id, Owner.Name FROM Cases__r WHERE Status != 'Closed') FROM Issue__c",
        "SELECT FIELDS(ALL) FROM Case ORDER BY CreatedDate DESC LIMIT 200",
        "SELECT FIELDS(STANDARD) FROM Contact",
        "SELECT FIELDS(CUSTOM) FROM CaseHistory__c LIMIT 200",
        "SELECT Id, CaseNumber, IsClosed, LastModifiedDate FROM Case WHERE IsClosed = false",
        "SELECT Status, Priority, GROUPING(Priority) g, COUNT(Id) FROM Case GROUP BY ROLLUP(Status, Priority)",
    ]


def _statements(plan) -> list[tuple[str, tuple]]:
    """The plan's statement and its subqueries', with parameters bound for TODAY."""
    today = dt.date.fromisoformat(TODAY)
    out = [(plan.sql, plan.bind(today))]
    pending = list(plan.children)
    while pending:
        child = pending.pop(0)
        out.append((child.sql, tuple(p.resolve(today) if isinstance(p, RelativeParam) else p for p in child.params)))
        pending.extend(child.children)
    return out


def _median_time(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_scale(path: Path, reps: int) -> dict[str, float]:
    raw = sqlite3.connect(path.as_uri() + "?mode=ro", uri=True)
    queries = corpus(raw)
    org = LocalOrg(path, today=TODAY)
    backend = org._live()
    rows = []
    for soql in queries:
        statements = _statements(backend.plan(soql))
        org.query(soql)  # warms SQLite's page cache for all three measurements alike

        def run_raw(statements: list[tuple[str, tuple]] = statements) -> None:
            for sql, params in statements:
                raw.execute(sql, params).fetchall()

        raw_t = _median_time(run_raw, reps)

        def cold(soql: str = soql) -> None:
            backend.plans.clear()
            org.query(soql)

        cold_t = _median_time(cold, reps)
        org.query(soql)
        warm_t = _median_time(lambda soql=soql: org.query(soql), reps)
        n = org.query(soql)["totalSize"]
        rows.append((soql, n, raw_t, cold_t, warm_t))
    print(f"{'rows':>6} {'raw ms':>8} {'cold ms':>8} {'warm ms':>8} {'warm/raw':>8}  query")
    for soql, n, raw_t, cold_t, warm_t in rows:
        print(f"{n:>6} {raw_t * 1e3:8.3f} {cold_t * 1e3:8.3f} {warm_t * 1e3:8.3f} {warm_t / raw_t:8.2f}  {soql[:70]}")
    med = {k: statistics.median(r[i] for r in rows) for k, i in (("raw", 2), ("cold", 3), ("warm", 4))}
    total = {k: sum(r[i] for r in rows) for k, i in (("raw", 2), ("cold", 3), ("warm", 4))}
    ratios = [r[4] / r[2] for r in rows]
    print(
        f"median per query: raw {med['raw'] * 1e3:.3f} ms, cold {med['cold'] * 1e3:.3f} ms, "
        f"warm {med['warm'] * 1e3:.3f} ms"
    )
    print(
        f"warm/raw: median of per-query ratios {statistics.median(ratios):.2f}x, worst {max(ratios):.2f}x, "
        f"corpus total {total['warm'] / total['raw']:.2f}x (target <= 1.5x); "
        f"cold/raw corpus total {total['cold'] / total['raw']:.2f}x"
    )
    org.close()
    raw.close()
    return {"warm_ratio": total["warm"] / total["raw"], "median_ratio": statistics.median(ratios)}


_SOSL_OBJECTS = " RETURNING EmailMessage(Id), LiveChatTranscript(Id), Case(Id)"
_PREFIXES = [a + b for a in string.ascii_lowercase for b in string.ascii_lowercase if a != b][:200]
_SMALL_SEARCH = "FIND {refund} RETURNING Case(Id) LIMIT 3"


def sosl_corpus() -> tuple[list[str], dict[str, str]]:
    """Ordinary searches, and the worst wildcard cases by name."""
    ordinary = [
        "FIND {running shoe} IN ALL FIELDS RETURNING Product2(Id, Name, Description)",
        "FIND {return policy} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, FAQ_Answer__c "
        "WHERE PublishStatus = 'Online' AND Language = 'en_US')",
        "FIND {warranty} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title)",
        "FIND {refund} RETURNING Case(Id, Subject), EmailMessage(Id, Subject)",
        "FIND {jacket*} IN NAME FIELDS RETURNING Product2(Id, Name)",
        "FIND {shipping AND delay}" + _SOSL_OBJECTS,
        'FIND {"order number"} RETURNING LiveChatTranscript(Id)',
        "FIND {smith} IN NAME FIELDS RETURNING User(Id, Name), Contact(Id, Name), Account(Id, Name)",
    ]
    worst = {
        "issue 16 reproducer: 200 x  ab*qz": "FIND {" + " OR ".join(f"{p}*qz" for p in _PREFIXES) + "}" + _SOSL_OBJECTS,
        "200 x  ab*e (mid-word, matching)": "FIND {" + " OR ".join(f"{p}*e" for p in _PREFIXES) + "}" + _SOSL_OBJECTS,
        "200 x  ab? (one letter)": "FIND {" + " OR ".join(f"{p}?" for p in _PREFIXES) + "}" + _SOSL_OBJECTS,
        "issue 14: a*e* OR s*e* ... (all objects)": "FIND {a*e* OR s*e* OR t*e* OR c*o*}",
        "200 x  ab* (prefix)": "FIND {" + " OR ".join(f"{p}*" for p in _PREFIXES) + "}" + _SOSL_OBJECTS,
        '50 x  "ab* th?" (phrases)': "FIND {"
        + " OR ".join(f'"{p}* th?"' for p in _PREFIXES[:50])
        + "}"
        + _SOSL_OBJECTS,
    }
    return ordinary, worst


def _search_time(org: LocalOrg, sosl: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    try:
        n = str(len(org.search(sosl)["searchRecords"]))
    except OrgError as exc:
        n = exc.code
    return time.perf_counter() - t0, n


def bench_sosl(path: Path, reps: int) -> None:
    org = LocalOrg(path, today=TODAY)
    ordinary, worst = sosl_corpus()
    t0 = time.perf_counter()
    for sosl in ordinary:
        org.search(sosl)  # builds each object's index once
    print(f"SOSL: index built for the searched objects in {time.perf_counter() - t0:.2f} s (once per org file)")
    base = statistics.median(statistics.median(_search_time(org, s)[0] for _ in range(reps)) for s in ordinary)
    print(f"ordinary searches ({len(ordinary)}): median {base * 1e3:.2f} ms (the baseline)")
    slowest = 0.0
    for name, sosl in worst.items():
        runs = [_search_time(org, sosl) for _ in range(max(3, reps // 5))]
        t = statistics.median(r[0] for r in runs)
        slowest = max(slowest, max(r[0] for r in runs))
        print(f"  {name:<42} {t * 1e3:9.2f} ms  {t / base:7.1f}x baseline  ({runs[0][1]} records)")
    share = slowest / org.timeout
    print(f"worst wildcard case: {slowest * 1e3:.1f} ms, {share:.3f} of QUERY_TIMEOUT ({org.timeout:g} s)")
    alone = statistics.median(_search_time(org, _SMALL_SEARCH)[0] for _ in range(reps))
    stop = threading.Event()

    def hammer() -> None:
        other = org.with_today("2022-01-01")
        while not stop.is_set():
            for sosl in worst.values():
                other.search(sosl)

    thread = threading.Thread(target=hammer)
    thread.start()
    time.sleep(0.05)
    beside = [_search_time(org, _SMALL_SEARCH)[0] for _ in range(reps)]
    stop.set()
    thread.join()
    print(
        f"small search alone {alone * 1e3:.2f} ms; beside the worst cases in another thread: median "
        f"{statistics.median(beside) * 1e3:.2f} ms, slowest {max(beside) * 1e3:.2f} ms "
        f"({max(beside) / alone:.1f}x alone, while one worst case takes {slowest * 1e3:.0f} ms: no waiting behind it)"
    )
    org.close()


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


_MEMORY_QUERY = "SELECT Id, Subject, Status, OwnerId FROM Case WHERE CreatedDate = LAST_N_DAYS:365"


def memory_child(mode: str, path: Path) -> None:
    """Run in a fresh process: open 64 orgs one way, run a query on each, print the RSS growth."""
    gc.collect()
    rss0 = _rss_kib()
    tracemalloc.start()
    if mode == "shared":
        orgs = []
        for i in range(32):  # 32 LocalOrg objects and a with_today view of each: 64 task dates
            org = LocalOrg(path, today=f"2023-{1 + i % 12:02d}-15")
            orgs.extend((org, org.with_today(f"2022-{1 + i % 12:02d}-01")))
        for org in orgs:
            org.query(_MEMORY_QUERY)
        backends = len({id(o._backend) for o in orgs})
    else:  # the naive way: one connection per environment
        conns = [sqlite3.connect(path.as_uri() + "?mode=ro", uri=True) for _ in range(64)]
        sql, params = LocalOrg(path, today=TODAY).explain(_MEMORY_QUERY)
        for conn in conns:
            conn.execute(sql, params).fetchall()
        backends = len(conns)
    heap = tracemalloc.get_traced_memory()[0]
    print(f"{mode} {backends} {heap} {_rss_kib() - rss0}")


def bench_memory(path: Path) -> None:
    """Memory of 64 environments' worth of orgs over one file, each way measured in a fresh process."""
    results = {}
    for mode in ("shared", "separate"):
        out = subprocess.run(
            [sys.executable, __file__, "--memory-child", mode, str(path)], capture_output=True, text=True, check=True
        ).stdout.split()
        results[mode] = (int(out[1]), int(out[2]), int(out[3]))
    (b1, heap1, rss1), (_, heap2, rss2) = results["shared"], results["separate"]
    print(
        f"64 LocalOrg objects and views over one file: {b1} backend(s), +{heap1 / 1024:.0f} KiB Python heap, "
        f"+{rss1} KiB RSS"
    )
    print(
        f"64 separate sqlite3 connections (baseline): +{heap2 / 1024:.0f} KiB Python heap, +{rss2} KiB RSS "
        f"({rss2 / max(rss1, 1):.1f}x the shared org's RSS)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1, 10])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--workdir", type=Path, default=None, help="where generated orgs are kept (reused)")
    parser.add_argument("--memory-child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child[0], Path(args.memory_child[1]))
        return
    from crmarena_gym.datagen import generate_org

    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="bench_engine_"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    first = None
    for scale in args.scales:
        path = workdir / f"org_seed0_scale{scale:g}.db"
        if not path.exists():
            t0 = time.perf_counter()
            generate_org(path, seed=0, scale=scale)
            print(f"generated scale {scale:g} in {time.perf_counter() - t0:.1f} s")
        first = first or path
        print(f"\n== scale {scale:g}: {path}")
        bench_scale(path, args.reps)
        bench_sosl(path, args.reps)
    print()
    assert first is not None
    bench_memory(first)


if __name__ == "__main__":
    main()
