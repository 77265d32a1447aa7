"""Benchmark of the served org (``crmarena-gym serve-org``): query latency through the server against
in-process ``LocalOrg``, requests per second at concurrency 1 and 16, and the memory cost of a session.

The same SOQL queries and SOSL searches (the shapes the task tools and agents send: lookups by id,
filters, relationship fields, aggregates, a parent-to-child subquery, searches) are answered

* in process by :class:`~crmarena_gym.org.LocalOrg` on the org file (the baseline: the engine's cost);
* by :class:`~crmarena_gym.org.SalesforceOrg` (simple-salesforce inside) over HTTPS on 127.0.0.1, from
  the server (:class:`~crmarena_gym.org.serve.OrgServer`, uvicorn in this process, a self-signed
  certificate);

each query warmed once (both sides cache plans) and then timed ``--repeat`` times; the figure is the
ratio of the mean latencies, server over in process. Then 1 and 16 clients (threads, each with its own
session id from the token endpoint) send ``--requests`` queries in all, for requests per second. Last,
``--sessions`` sessions each write one record, and the growth of the process's resident memory is
divided by their number: the memory cost of a session that has written (the server bounds the number
of sessions with ``--max-sessions``).

Every answer through the server is checked against the in-process one; a difference stops the run.

Run: ``python benchmarks/bench_serve.py [--org PATH] [--repeat 20] [--requests 800] [--sessions 64]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from crmarena_gym.org import LocalOrg, OrgSession, SalesforceOrg, default_org_path
from crmarena_gym.org.serve import OrgServer, SessionHub

TODAY = "2025-07-29"
PASSWORD = "bench"


def workload(org: LocalOrg) -> list[str]:
    """Queries of the kinds the tools and agents send, with ids taken from the org."""
    case = org.query("SELECT Id, AccountId, OwnerId FROM Case ORDER BY Id LIMIT 1")["records"][0]
    return [
        f"SELECT Id, Subject, Status, Owner.Name, Contact.Name FROM Case WHERE Id = '{case['Id']}'",
        f"SELECT Id, CreatedDate FROM Case WHERE AccountId = '{case['AccountId']}' ORDER BY CreatedDate",
        f"SELECT COUNT(Id) n FROM Case WHERE OwnerId = '{case['OwnerId']}' AND Status = 'Closed'",
        "SELECT OwnerId, COUNT(Id) n FROM Case GROUP BY OwnerId ORDER BY COUNT(Id) DESC LIMIT 5",
        "SELECT Id, Field__c, NewValue__c FROM CaseHistory__c WHERE CreatedDate = LAST_N_MONTHS:3 LIMIT 200",
        "SELECT Id, Name, (SELECT Id, Status FROM Orders) FROM Account ORDER BY Id LIMIT 20",
        "SELECT Product2.Name, UnitPrice FROM PricebookEntry WHERE UnitPrice > 100 ORDER BY UnitPrice DESC LIMIT 50",
        "FIND {delivery} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title), Case(Id, Subject LIMIT 10)",
    ]


def answer(org: Any, text: str) -> dict[str, Any]:
    return org.search(text) if text.startswith("FIND") else org.query(text)


def mean_latency(org: Any, queries: list[str], repeat: int) -> float:
    for text in queries:
        answer(org, text)  # warm: plans and connections on both sides
    spent = 0.0
    for _ in range(repeat):
        for text in queries:
            start = time.perf_counter()
            answer(org, text)
            spent += time.perf_counter() - start
    return spent / (repeat * len(queries))


def login(server: OrgServer) -> str:
    r = requests.post(
        f"{server.url}/services/oauth2/token",
        data={"grant_type": "password", "username": "bench@example.com", "password": PASSWORD},
        verify=str(server.cert),
        timeout=60,
    )
    r.raise_for_status()
    return r.json()["access_token"]


def requests_per_second(server: OrgServer, queries: list[str], clients: int, total: int) -> float:
    orgs = [SalesforceOrg(session_id=login(server), instance_url=server.url, max_retries=0) for _ in range(clients)]
    for org in orgs:
        answer(org, queries[0])  # each client's connection opened (TLS handshake) before the clock starts

    def run(n: int) -> None:
        org = orgs[n]
        for i in range(n, total, clients):
            answer(org, queries[i % len(queries)])

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(run, range(clients)))
    return total / (time.perf_counter() - start)


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def session_memory(org_path: Path, sessions: int) -> float:
    """KiB of resident memory per session that has queried and written one record."""
    base = LocalOrg(org_path, today=TODAY)
    base.query("SELECT Id FROM Issue__c LIMIT 1")
    warm = OrgSession(base)  # the first session pays for the shared plan cache and module state, not counted
    warm.create("Issue__c", {"Name": "warm"})
    warm.query("SELECT COUNT() FROM Issue__c")
    before = rss_kib()
    live = []
    for i in range(sessions):
        session = OrgSession(base)
        session.create("Issue__c", {"Name": f"bench {i}"})
        session.query("SELECT Id, Name FROM Issue__c WHERE Name LIKE 'bench%'")
        session.search("FIND {bench} RETURNING Issue__c(Id)")
        live.append(session)
    per = (rss_kib() - before) / sessions
    for session in live:
        session.drop()
    warm.drop()
    base.close()
    return per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--org", type=Path, default=None, help="the org file (default: the default org)")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs of each query per side")
    parser.add_argument("--requests", type=int, default=800, help="requests per concurrency level")
    parser.add_argument("--sessions", type=int, default=64, help="sessions for the memory figure")
    args = parser.parse_args()
    org_path = args.org or default_org_path()
    local = LocalOrg(org_path, today=TODAY)
    queries = workload(local)
    hub = SessionHub(org_path, password=PASSWORD, today=TODAY, max_sessions=64)
    with tempfile.TemporaryDirectory() as certs, OrgServer(hub, cert_dir=certs) as server:
        os.environ["REQUESTS_CA_BUNDLE"] = str(server.cert)
        served = SalesforceOrg(session_id=login(server), instance_url=server.url, max_retries=0)
        for text in queries:
            if answer(served, text) != answer(local, text):
                raise SystemExit(f"the server answered differently from LocalOrg: {text}")
        in_process = mean_latency(local, queries, args.repeat)
        through_server = mean_latency(served, queries, args.repeat)
        print(f"org: {org_path} ({len(queries)} queries, {args.repeat} timed runs each, HTTPS on 127.0.0.1)")
        print(f"mean latency in process (LocalOrg):              {in_process * 1e3:8.2f} ms")
        print(f"mean latency through the server (SalesforceOrg): {through_server * 1e3:8.2f} ms")
        print(f"ratio server / in process:                       {through_server / in_process:8.2f}x")
        rates = {n: requests_per_second(server, queries, n, args.requests) for n in (1, 16)}
        for n, rate in rates.items():
            print(f"requests/s at concurrency {n:2d}:                     {rate:8.1f}")
        scaling = rates[16] / rates[1]
        print(f"concurrency 16 / concurrency 1:                  {scaling:8.2f}x (on {os.cpu_count()} cores)")
    per = session_memory(org_path, args.sessions)
    print(f"resident memory per session (one write, queried, searched): {per:.0f} KiB over {args.sessions} sessions")


if __name__ == "__main__":
    main()
