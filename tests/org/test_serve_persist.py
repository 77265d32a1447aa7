"""``serve-org --persist DIR`` (issue 34, item 4): sessions' writes and tokens outlive a restart, a killed
server loses no write it acknowledged, and the org file never changes. Off by default."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
simple_salesforce = pytest.importorskip("simple_salesforce")
import requests  # noqa: E402

from crmarena_gym.org.serve import OrgServer, SessionHub  # noqa: E402

TODAY = "2025-07-29"
PASSWORD = "persisted"


@pytest.fixture(scope="module")
def cert_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("cert")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REQUESTS_CA_BUNDLE", str(directory / "cert.pem"))
        yield directory


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sf(server: OrgServer, token: str) -> Any:
    return simple_salesforce.Salesforce(instance_url=server.url, session_id=token, version="60.0")


def _login(server: OrgServer, username: str) -> str:
    r = requests.post(
        f"{server.url}/services/oauth2/token",
        data={"grant_type": "password", "username": username, "password": PASSWORD},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return r.json()["access_token"]


def test_sessions_and_their_writes_outlive_a_restart(org_path: Path, cert_dir: Path, tmp_path: Path) -> None:
    before = _sha256(org_path)
    store = tmp_path / "sessions"
    hub = SessionHub(org_path, password=PASSWORD, token="start-token", today=TODAY, persist=store)
    with OrgServer(hub, cert_dir=cert_dir) as server:
        start = _sf(server, "start-token")
        issue = start.Issue__c.create({"Name": "Kept across restarts"})["id"]
        case = start.query("SELECT Id FROM Case WHERE IsClosed = false LIMIT 1")["records"][0]["Id"]
        start.Case.update(case, {"Status": "Closed"})
        other = _login(server, "other@example.com")
        _sf(server, other).Issue__c.create({"Name": "Another sessions"})
        doomed = _login(server, "doomed@example.com")
        requests.post(f"{server.url}/services/oauth2/revoke", data={"token": doomed}, timeout=30)
    # A new server on the same directory: the tokens go on, with their writes, each in its own session.
    hub = SessionHub(org_path, password="another password", token="start-token", today=TODAY, persist=store)
    with OrgServer(hub, cert_dir=cert_dir) as server:
        start = _sf(server, "start-token")
        assert start.Issue__c.get(issue)["Name"] == "Kept across restarts"
        assert start.Case.get(case)["IsClosed"] is True
        assert start.query("SELECT COUNT() FROM Issue__c WHERE Name = 'Another sessions'")["totalSize"] == 0
        assert (
            _sf(server, other).query("SELECT COUNT() FROM Issue__c WHERE Name = 'Another sessions'")["totalSize"] == 1
        )
        with pytest.raises(simple_salesforce.exceptions.SalesforceExpiredSession):  # revoked stays revoked
            _sf(server, doomed).query("SELECT COUNT() FROM Case")
        newer = start.Issue__c.create({"Name": "After the restart"})["id"]
        assert newer != issue
    assert _sha256(org_path) == before


def test_an_unloaded_session_comes_back_from_disk(org_path: Path, cert_dir: Path, tmp_path: Path) -> None:
    hub = SessionHub(org_path, password=PASSWORD, today=TODAY, persist=tmp_path / "s", max_sessions=2)
    with OrgServer(hub, cert_dir=cert_dir) as server:
        first = _login(server, "first@example.com")
        _sf(server, first).Issue__c.create({"Name": "Written before unloading"})
        for i in range(3):  # past --max-sessions: first is unloaded to disk, not ended
            _sf(server, _login(server, f"later{i}@example.com")).query("SELECT COUNT() FROM Case")
        assert hub.sessions <= 2
        found = _sf(server, first).query("SELECT COUNT() FROM Issue__c WHERE Name = 'Written before unloading'")
        assert found["totalSize"] == 1


def test_a_directory_of_another_org_is_refused(org_path: Path, tmp_path: Path) -> None:
    from tests.org.conftest import _build_small_org

    other = tmp_path / "other.sqlite"
    _build_small_org(other)
    SessionHub(other, password=PASSWORD, persist=tmp_path / "dir").close()
    with pytest.raises(ValueError, match="another org file"):
        SessionHub(org_path, password=PASSWORD, persist=tmp_path / "dir")


def _default_signals() -> None:
    """In the child: default handling of the signals the test sends (whatever the parent ignores)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _start(org_path: Path, store: Path, cert_dir: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-c", "from crmarena_gym.cli import main; raise SystemExit(main())", "serve-org"]
    command += ["--org", str(org_path), "--port", "0", "--token", "kill-token", "--cert-dir", str(cert_dir)]
    command += ["--persist", str(store), "--today", TODAY, "--password", PASSWORD]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith("serving the org"), (first, process.stderr.read() if process.poll() is not None else "")
    return process, first.split(" on ", 1)[1].split(";", 1)[0]


@pytest.mark.slow
def test_kill_9_during_writes_loses_nothing_acknowledged(org_path: Path, cert_dir: Path, tmp_path: Path) -> None:
    before = _sha256(org_path)
    store = tmp_path / "sessions"
    rng = random.Random(3434)
    acknowledged: dict[str, str] = {}  # record id -> the last Description acknowledged for it
    lock = threading.Lock()
    process, url = _start(org_path, store, cert_dir)
    try:
        for trial in range(20):
            stop = threading.Event()

            def writer(worker: int, url: str = url, stop: threading.Event = stop, trial: int = trial) -> None:
                http = requests.Session()
                headers = {"Authorization": "Bearer kill-token"}
                step = 0
                while not stop.is_set():
                    step += 1
                    name = f"kill trial {trial} worker {worker} step {step}"
                    try:
                        r = http.post(
                            f"{url}/services/data/v60.0/sobjects/Issue__c",
                            json={"Name": name},
                            headers=headers,
                            timeout=10,
                        )
                        if r.status_code != 201:
                            continue
                        made = r.json()["id"]
                        with lock:
                            acknowledged[made] = ""
                        text = f"updated {step}"
                        u = http.patch(
                            f"{url}/services/data/v60.0/sobjects/Issue__c/{made}",
                            json={"Description__c": text},
                            headers=headers,
                            timeout=10,
                        )
                        if u.status_code == 204:
                            with lock:
                                acknowledged[made] = text
                    except requests.RequestException:
                        return  # the server is gone: what was acknowledged before is what counts

            threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(0.05, 0.6))
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            stop.set()
            for t in threads:
                t.join(timeout=30)
            process, url = _start(org_path, store, cert_dir)
            sf = _sf_url(url)
            stored = {
                r["Id"]: r["Description__c"] or ""
                for r in sf.query_all("SELECT Id, Description__c FROM Issue__c WHERE Name LIKE 'kill trial %'")[
                    "records"
                ]
            }
            with lock:
                missing = [i for i in acknowledged if i not in stored]
                stale = [i for i, text in acknowledged.items() if text and stored.get(i) != text]  # one update each
            assert not missing and not stale, (trial, missing[:5], stale[:5])
        assert len(acknowledged) > 20  # the trials did write
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
    assert _sha256(org_path) == before  # the org file never changes


def _sf_url(url: str) -> Any:
    return simple_salesforce.Salesforce(instance_url=url, session_id="kill-token", version="60.0")


def test_the_command_says_whether_writes_persist(org_path: Path, cert_dir: Path, tmp_path: Path) -> None:
    process, _url = _start(org_path, tmp_path / "kept", cert_dir)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(5)]
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert any("sessions persist in" in line for line in lines), lines
    command = [sys.executable, "-c", "from crmarena_gym.cli import main; raise SystemExit(main())", "serve-org"]
    command += ["--org", str(org_path), "--port", "0", "--cert-dir", str(cert_dir)]
    plain = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals
    )
    try:
        assert plain.stdout is not None
        lines = [plain.stdout.readline() for _ in range(6)]
        plain.send_signal(signal.SIGINT)
        plain.communicate(timeout=30)
    finally:
        if plain.poll() is None:
            plain.kill()
    assert any("a restart loses their writes" in line for line in lines), lines
