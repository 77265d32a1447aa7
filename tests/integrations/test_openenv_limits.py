"""What the OpenEnv server refuses to wait for or to hold, on 127.0.0.1: slow request heads and bodies
(slowloris), bodies and WebSocket messages past the limit; other clients are served meanwhile and the
server's memory stays bounded. Load is bounded in count (200 connections) and time (seconds)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("openenv.core")
pytest.importorskip("uvicorn")
websockets = pytest.importorskip("websockets")

from crmarena_gym.integrations.openenv import (  # noqa: E402
    CRMArenaAction,
    CRMArenaHTTPClient,
    CRMArenaHub,
    HubConfig,
    ServerLimits,
    ServerThread,
)
from tests.integrations.conftest import PER_TASK, default_signals  # noqa: E402

MB = 1 << 20


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


def _read_all(sock: socket.socket, timeout: float) -> bytes:
    """Everything the server sends until it closes the connection (or ``timeout`` passes)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return data


@pytest.fixture(scope="module")
def quick_server(env_org: Path) -> Iterator[ServerThread]:
    hub = CRMArenaHub(HubConfig(org=str(env_org), per_task=PER_TASK))
    with ServerThread(hub=hub, limits=ServerLimits(request_timeout=0.5, max_body_bytes=64 * 1024)) as running:
        yield running


def test_a_request_head_or_body_that_does_not_arrive_in_time_is_refused(quick_server: ServerThread) -> None:
    silent = _connect(quick_server.url)  # connects and sends nothing
    partial = _connect(quick_server.url)
    partial.sendall(b"POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # a head that never ends
    started = time.monotonic()
    for sock in (silent, partial):
        answer = _read_all(sock, timeout=10)
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]
    assert time.monotonic() - started < 5  # closed after the 0.5 s deadline, not left open
    slow_body = _connect(quick_server.url)
    slow_body.sendall(b"POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
    answer = _read_all(slow_body, timeout=10)
    assert answer.startswith(b"HTTP/1.1 408 ") and b"did not arrive within 0.5 s" in answer, answer[:200]
    # a keep-alive connection may take its time between requests; each request head then gets the deadline
    with httpx.Client(base_url=quick_server.url, timeout=30) as client:
        assert client.get("/health").status_code == 200
        time.sleep(0.8)
        assert client.get("/health").status_code == 200
    assert httpx.get(quick_server.url + "/health").json()["refused"]["body_too_slow"] >= 1


def test_a_body_or_message_past_the_limit_is_refused_unread(quick_server: ServerThread) -> None:
    http = httpx.Client(base_url=quick_server.url, timeout=30)
    big = {"action": {"text": "x" * (70 * 1024)}}
    response = http.post("/step", json=big)  # declared length past 64 KiB: refused before it is read
    assert response.status_code == 413 and "at most 65536" in response.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no declared length (chunked): refused once 64 KiB have come
        for _ in range(40):
            yield b" " * 4096

    response = http.post("/reset", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413 and "exceeds 65536 bytes" in response.json()["detail"]
    bad_length = _connect(quick_server.url)  # a length no client library would send
    bad_length.sendall(b"POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n1")
    assert _read_all(bad_length, timeout=10).startswith(b"HTTP/1.1 400 ")

    async def too_big_message() -> int | None:
        async with websockets.connect(quick_server.url.replace("http", "ws") + "/ws", max_size=None) as conn:
            await conn.send(json.dumps({"type": "step", "data": {"text": "x" * (70 * 1024)}}))
            try:
                await conn.recv()
            except websockets.ConnectionClosed as closed:
                return closed.rcvd.code if closed.rcvd else None
        return None

    assert asyncio.run(too_big_message()) == 1009  # "message too big"
    assert http.get("/health").json()["status"] == "healthy"


def _status(pid: int) -> dict[str, int]:
    """The kB values of /proc/PID/status (VmRSS: resident now, VmHWM: the peak)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if value.strip().endswith(" kB"):
            fields[name] = int(value.split()[0])
    return fields


@pytest.mark.slow
def test_200_slow_connections_and_a_100_mb_body_leave_other_clients_served_and_memory_bounded(
    env_org: Path,
) -> None:
    if not Path("/proc/self/status").exists():
        pytest.skip("reading the server's memory needs Linux's /proc")
    entry = "import sys; from crmarena_gym.cli import main; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", entry, "serve-env", "--port", "0", "--org", str(env_org)]
    command += ["--per-task", str(PER_TASK), "--request-timeout", "3"]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
        preexec_fn=default_signals,
    )
    slow: list[socket.socket] = []
    stop = threading.Event()
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("serving CRMArena (OpenEnv) on http://127.0.0.1:"), line + process.stderr.read()  # type: ignore[union-attr]
        url = line.split(" on ")[1].split()[0]
        with CRMArenaHTTPClient(url, timeout=60) as client:  # warm: instances made, one episode played
            client.reset(split="train", seed=0)
            client.step(CRMArenaAction(text="submit None"))
        before = _status(process.pid)

        # 200 slowloris connections: a request head trickling in, one byte per connection every 0.2 s
        for _ in range(200):
            sock = _connect(url)
            sock.sendall(b"POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(sock)

        def trickle() -> None:
            while not stop.wait(0.2):
                for sock in slow:
                    try:
                        sock.send(b"X")
                    except OSError:
                        pass

        threading.Thread(target=trickle, daemon=True).start()
        # a 100 MB body, its length declared: answered 413 at once, never read
        huge = _connect(url)
        huge.sendall(b"POST /step HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
        huge.sendall(b"Content-Length: %d\r\n\r\n" % (100 * MB))

        def pour(sock: socket.socket, chunk: bytes, total: int) -> None:
            sent = 0
            try:
                while sent < total:
                    sock.sendall(chunk)
                    sent += len(chunk)
            except OSError:
                pass  # the server answered and closed the connection

        threading.Thread(target=pour, args=(huge, b"x" * MB, 100 * MB), daemon=True).start()
        answer = huge.recv(4096)
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
        # a 100 MB body sent in chunks, its length not declared: refused once past 1 MiB
        chunked = _connect(url)
        chunked.sendall(b"POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        one_chunk = b"%x\r\n%s\r\n" % (MB, b" " * MB)
        threading.Thread(target=pour, args=(chunked, one_chunk, 100 * len(one_chunk)), daemon=True).start()
        answer = chunked.recv(4096)
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]

        # meanwhile other clients are served: whole episodes over HTTP, each request answered promptly
        latencies = []
        with CRMArenaHTTPClient(url, timeout=30) as client:
            for seed in range(5):
                started = time.monotonic()
                start = client.reset(split="train", seed=seed)
                step = client.step(CRMArenaAction(tool_call={"name": "get_issues"}))
                end = client.step(CRMArenaAction(text="submit None"))
                latencies.append(time.monotonic() - started)
                assert start.observation.error is None and step.observation.error is None and end.done
        assert max(latencies) < 10, latencies
        after = _status(process.pid)
        # nothing of the 100 MB was held: the peak and the resident memory grew by far less than the body
        assert after["VmHWM"] - before["VmHWM"] < 40 * 1024, (before, after)
        assert after["VmRSS"] - before["VmRSS"] < 40 * 1024, (before, after)
        # the slow connections are answered 408 and closed once their 3 s are up
        deadline = time.monotonic() + 15
        closed = 0
        for sock in slow:
            answer = _read_all(sock, timeout=max(0.1, deadline - time.monotonic()))
            closed += answer.startswith(b"HTTP/1.1 408 ")
        assert closed == 200
        assert httpx.get(url + "/health", timeout=30).json()["refused"]["body_too_large"] == 2
    finally:
        stop.set()
        for sock in slow:
            sock.close()
        process.terminate()
        process.wait(timeout=30)
