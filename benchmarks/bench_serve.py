"""The served org (``crmarena-gym serve-org``): query latency through Salesforce's REST API on 127.0.0.1
against ``LocalOrg`` in process on the same queries, requests per second at concurrency 1 and 16, and the
memory one session costs (each with a write and a few queries; resident memory of this process, which
runs the server, before and after, divided by the sessions).

The baseline, measured in the same run, is ``LocalOrg.query`` on the same file. Through the server,
each query goes through the real simple-salesforce client (``SalesforceOrg``), https with the server's
self-signed certificate (``--http`` for plain http), one keep-alive connection per client.

Usage:
    python benchmarks/bench_serve.py [--org PATH] [--reps 30] [--requests 400] [--http]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import requests

from crmarena_gym.org import LocalOrg, SalesforceOrg, default_org_path
from crmarena_gym.org.serve import OrgServer, SessionHub

QUERIES = [
    "SELECT Id, Name FROM Issue__c",
    "SELECT Id, Subject, Status FROM Case WHERE Status = 'Closed' ORDER BY CreatedDate DESC LIMIT 20",
    "SELECT OwnerId, COUNT(Id) n FROM Case GROUP BY OwnerId ORDER BY COUNT(Id) DESC LIMIT 5",
    "SELECT Id, Owner.Name, Account.Name FROM Case WHERE CreatedDate = LAST_N_DAYS:90",
    "SELECT Id, (SELECT Id, Subject FROM EmailMessages) FROM Case ORDER BY Id LIMIT 10",
    "SELECT Id, Name, Description FROM Product2 WHERE Name LIKE '%shoe%'",
]
TODAY = "2025-07-29"


def median_seconds(run, reps: int) -> float:
    run()  # warm: plan cache, connection
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def throughput(make_client, clients: int, requests: int) -> float:
    """Requests per second with ``clients`` threads sharing ``requests`` queries."""
    per = requests // clients
    orgs = [make_client() for _ in range(clients)]
    for org in orgs:
        org.query(QUERIES[0])
    barrier = threading.Barrier(clients + 1)

    def work(org: SalesforceOrg) -> None:
        barrier.wait()
        for i in range(per):
            org.query(QUERIES[i % 3])

    threads = [threading.Thread(target=work, args=(org,)) for org in orgs]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return per * clients / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--org", type=Path, default=None, help="the org file (default: the default org)")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--http", action="store_true", help="plain http instead of https")
    args = parser.parse_args()
    path = args.org or default_org_path()
    local = LocalOrg(path, today=TODAY)
    hub = SessionHub(path, token="bench", password="bench", max_sessions=64, today=TODAY)
    with OrgServer(hub, tls=not args.http, cert_dir=Path(tempfile.mkdtemp())) as server:
        if server.cert is not None:
            os.environ["REQUESTS_CA_BUNDLE"] = str(server.cert)

        def client() -> SalesforceOrg:
            return SalesforceOrg(instance_url=server.url, session_id="bench", version="60.0")

        remote = client()
        print(f"org {str(path)!r}, served at {server.url}")
        print(f"{'query':<72} {'local ms':>9} {'served ms':>10} {'ratio':>6}")
        ratios = []
        for soql in QUERIES:
            assert remote.query(soql) == local.query(soql), soql
            here = median_seconds(lambda soql=soql: local.query(soql), args.reps)
            there = median_seconds(lambda soql=soql: remote.query(soql), args.reps)
            ratios.append(there / here)
            print(f"{soql[:72]:<72} {here * 1e3:>9.2f} {there * 1e3:>10.2f} {there / here:>5.1f}x")
        print(f"median ratio served / in process: {statistics.median(ratios):.1f}x")
        for clients in (1, 16):
            rate = throughput(client, clients, args.requests)
            print(f"concurrency {clients:>2}: {rate:,.0f} requests/s")
        sessions = 32
        before = rss_kib()
        for i in range(sessions):
            token = requests.post(
                f"{server.url}/services/oauth2/token",
                data={"grant_type": "password", "username": f"user{i}", "password": "bench"},
                verify=str(server.cert) if server.cert else True,
            ).json()["access_token"]
            org = SalesforceOrg(instance_url=server.url, session_id=token, version="60.0")
            org._call(lambda sf, i=i: sf.Issue__c.create({"Name": f"Bench issue {i}"}))
            for soql in QUERIES[:3]:
                org.query(soql)
        grown = rss_kib() - before
        print(f"memory per session (a write, three queries): {grown / sessions:,.0f} KiB ({sessions} sessions)")


def rss_kib() -> int:
    """This process's resident memory in KiB (Linux /proc; elsewhere the peak from getrusage)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


if __name__ == "__main__":
    main()
