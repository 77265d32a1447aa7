"""The served org under hostile load, on 127.0.0.1: working clients' latency while stalled connections pile up,
and resident memory while query cursors are opened and abandoned.

1. **Stalled connections**: ``--stalled`` connections (200) that open and send nothing or half a request
   head, reopened as the server closes them, while ``--clients`` working clients (32) run queries for
   ``--seconds`` (60). Printed: the working clients' requests, errors, p50/p99/max latency (target: p99
   under 1 s), the CPU time of this process beside the wall time, how many stalled connections the
   server closed. The baseline, measured first in the same run, is the same working clients with no
   stalled connections.
2. **Abandoned cursors**: ``--cursors`` queries (10,000) whose results do not fit in one batch, each
   leaving a cursor behind, from 50 sessions. Printed: resident memory before, at its peak and after,
   against the stated bound: memory before plus ``--cursor-mb`` (what cursors may hold) plus 64 MiB.

Usage:
    python benchmarks/bench_serve_soak.py [--seconds 60] [--stalled 200] [--clients 32] [--cursors 10000]
        [--cursor-mb 256] [--http]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from crmarena_gym.org import default_org_path
from crmarena_gym.org.serve import OrgServer, SessionHub

TODAY = "2025-07-29"


def rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def working(server: OrgServer, clients: int, seconds: float) -> tuple[list[float], int]:
    """Latencies of ``clients`` threads querying for ``seconds``, and their errors."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    queries = ["SELECT Id, Name FROM Issue__c", "SELECT COUNT() FROM Case WHERE Status = 'Closed'"]

    def client(i: int) -> None:
        http = requests.Session()
        http.verify = str(server.cert) if server.cert else True
        granted = http.post(
            f"{server.url}/services/oauth2/token",
            data={"grant_type": "password", "username": f"worker{i}@example.com", "password": "soak"},
            timeout=30,
        )
        headers = {"Authorization": f"Bearer {granted.json()['access_token']}"}  # a session per client
        n = 0
        while time.monotonic() < stop:
            n += 1
            start = time.perf_counter()
            try:
                r = http.get(
                    f"{server.url}/services/data/v60.0/query", params={"q": queries[n % 2]}, headers=headers, timeout=30
                )
                ok = r.status_code == 200
            except requests.RequestException:
                ok = False
            took = time.perf_counter() - start
            with lock:
                latencies.append(took)
                errors[0] += not ok

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    return latencies, errors[0]


def stall(server: OrgServer, count: int, stop: threading.Event) -> list[int]:
    """Keep ``count`` stalled connections open until ``stop``; returns [connections opened]."""
    host, port = server.url.split("//")[1].split(":")
    opened = [0]

    def keeper() -> None:
        conns: list[socket.socket] = []
        while not stop.is_set():
            alive = []
            for sock in conns:
                try:
                    sock.setblocking(False)
                    if sock.recv(1) == b"":
                        sock.close()
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    sock.close()
                    continue
                alive.append(sock)
            conns = alive
            while len(conns) < count and not stop.is_set():
                try:
                    sock = socket.create_connection((host, int(port)), timeout=5)
                except OSError:
                    break
                if opened[0] % 2:
                    sock.sendall(b"GET /services/data/v60.0/limits HTTP/1.1\r\nHost: x\r\n")  # half a head
                conns.append(sock)
                opened[0] += 1
            stop.wait(0.2)
        for sock in conns:
            sock.close()

    threading.Thread(target=keeper, daemon=True).start()
    return opened


def report(name: str, latencies: list[float], errors: int, wall: float, cpu: float) -> None:
    ordered = sorted(latencies)
    p99 = ordered[int(len(ordered) * 0.99) - 1] if ordered else float("nan")
    print(
        f"{name:<34} {len(latencies):>7} requests {errors:>4} errors  p50 {statistics.median(ordered) * 1e3:7.1f} ms  "
        f"p99 {p99 * 1e3:7.1f} ms  max {ordered[-1] * 1e3:7.1f} ms  wall {wall:6.1f} s  cpu {cpu:6.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--org", type=Path, default=None)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--stalled", type=int, default=200)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--cursors", type=int, default=10000)
    parser.add_argument("--cursor-mb", type=float, default=256)
    parser.add_argument("--http", action="store_true", help="plain http (default: https, self-signed)")
    args = parser.parse_args()
    path = args.org or default_org_path()
    print(f"load average before: {load()}")
    cursor_bytes = int(args.cursor_mb * 2**20)
    hub = SessionHub(path, password="soak", today=TODAY, max_sessions=64, cursor_bytes=cursor_bytes)
    with OrgServer(hub, tls=not args.http, cert_dir=Path(tempfile.mkdtemp())) as server:
        if server.cert is not None:
            os.environ["REQUESTS_CA_BUNDLE"] = str(server.cert)
        print(f"served at {server.url}; {args.clients} working clients, {args.seconds:g} s each phase")
        wall, cpu = time.perf_counter(), time.process_time()
        latencies, errors = working(server, args.clients, args.seconds)
        report(
            "baseline (no stalled connections)",
            latencies,
            errors,
            time.perf_counter() - wall,
            time.process_time() - cpu,
        )
        stop = threading.Event()
        opened = stall(server, args.stalled, stop)
        time.sleep(2)  # let them pile up
        wall, cpu = time.perf_counter(), time.process_time()
        latencies, errors = working(server, args.clients, args.seconds)
        report(
            f"with {args.stalled} stalled connections",
            latencies,
            errors,
            time.perf_counter() - wall,
            time.process_time() - cpu,
        )
        stop.set()
        ordered = sorted(latencies)
        p99 = ordered[int(len(ordered) * 0.99) - 1]
        print(
            f"stalled connections opened {opened[0]}, closed by the server: {server.guard.closed_stalled} at their "
            f"deadline, {server.guard.closed_for_room} to make room; p99 {'under' if p99 < 1 else 'OVER'} 1 s"
        )

        # -- abandoned cursors --
        tokens = []
        for i in range(50):
            r = requests.post(
                f"{server.url}/services/oauth2/token",
                data={"grant_type": "password", "username": f"cursor{i}@example.com", "password": "soak"},
                timeout=30,
            )
            tokens.append(r.json()["access_token"])
        before = rss_mib()
        peak = [before]
        done = [0]
        lock = threading.Lock()

        def open_cursors(i: int) -> None:
            http = requests.Session()
            http.verify = str(server.cert) if server.cert else True
            for k in range(i, args.cursors, 8):
                token = tokens[k % len(tokens)]
                r = http.get(
                    f"{server.url}/services/data/v60.0/query",
                    params={"q": f"SELECT Id, Subject FROM Case WHERE CaseNumber > '{k % 500:08d}'"},
                    headers={"Authorization": f"Bearer {token}", "Sforce-Query-Options": "batchSize=200"},
                    timeout=60,
                )
                assert r.status_code == 200 and not r.json()["done"], r.text[:200]
                with lock:
                    done[0] += 1
                    if done[0] % 250 == 0:
                        peak[0] = max(peak[0], rss_mib())

        wall, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(open_cursors, range(8)))
        after = rss_mib()
        bound = before + args.cursor_mb + 64
        print(
            f"{done[0]:,} cursors opened and abandoned in {time.perf_counter() - wall:.0f} s (cpu "
            f"{time.process_time() - cpu:.0f} s): cursors hold {hub.cursor_bytes_held / 2**20:.0f} MiB "
            f"(bound {args.cursor_mb:g}); RSS {before:.0f} MiB before, peak {max(peak[0], after):.0f}, "
            f"after {after:.0f} (stated bound {bound:.0f}: {'within' if max(peak[0], after) <= bound else 'EXCEEDED'})"
        )
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
