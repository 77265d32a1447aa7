"""The served org under hostile clients (issue 34, item 3): sessions that end say so, tokens expire and are
revoked, cursors and writes are bounded, stalled connections cannot deny service, no request answers 500.

Expectations come from Salesforce's documentation: INVALID_SESSION_ID (401) for an ended session, the
OAuth revoke endpoint, QueryLocators released after 15 minutes of inactivity, STORAGE_LIMIT_EXCEEDED,
ten failed logins locking a username out, sObject Collections answering per record with allOrNone false.
Every server here listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import random
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
simple_salesforce = pytest.importorskip("simple_salesforce")
import requests  # noqa: E402

from crmarena_gym.org.serve import OrgServer, SessionHub  # noqa: E402
from crmarena_gym.org.serve._bulk import session_jobs  # noqa: E402
from crmarena_gym.org.serve._hub import CURSOR_TIMEOUT, MAX_CURSORS, MAX_LOGIN_FAILURES  # noqa: E402

TODAY = "2025-07-29"
PASSWORD = "s3cret"


class Clock:
    """A monotonic clock tests can move forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


@pytest.fixture(scope="module", autouse=True)
def cert_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the servers' self-signed certificate lives; clients trust it as users do (REQUESTS_CA_BUNDLE)."""
    directory = tmp_path_factory.mktemp("cert")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REQUESTS_CA_BUNDLE", str(directory / "cert.pem"))
        _CERT[:] = [directory]
        yield directory


_CERT: list[Path] = []


def _serve(org_path: Path, *, tls: bool = True, **options: Any) -> tuple[SessionHub, OrgServer]:
    server_options = {
        k: options.pop(k) for k in list(options) if k.startswith(("max_connections", "head_", "request_"))
    }
    hub = SessionHub(org_path, password=PASSWORD, today=TODAY, **options)
    return hub, OrgServer(hub, tls=tls, cert_dir=_CERT[0], **server_options)


@pytest.fixture()
def served(org_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[SessionHub, OrgServer]]:
    options = getattr(request, "param", {})
    hub, server = _serve(org_path, **options)
    with server:
        yield hub, server


def _login(server: OrgServer, username: str = "agent@example.com", password: str = PASSWORD) -> requests.Response:
    return requests.post(
        f"{server.url}/services/oauth2/token",
        data={"grant_type": "password", "username": username, "password": password},
        timeout=30,
    )


def _sf(server: OrgServer, token: str) -> Any:
    return simple_salesforce.Salesforce(instance_url=server.url, session_id=token, version="60.0")


@pytest.mark.parametrize("served", [{"max_sessions": 3}], indirect=True)
def test_an_evicted_session_answers_401_and_a_relogin_is_told_it_is_new(served: tuple[SessionHub, OrgServer]) -> None:
    _hub, server = served
    a = _login(server, "a@example.com").json()["access_token"]
    _sf(server, a).Issue__c.create({"Name": "Written by a"})
    b = _login(server, "b@example.com").json()["access_token"]
    _sf(server, b).Issue__c.create({"Name": "Written by b"})
    # The start token's session, a's and b's fill the three places: c's login evicts a (the least recently used).
    c = _login(server, "c@example.com").json()["access_token"]
    for _ in range(2):  # and it stays refused: never a fresh, empty session in its place
        with pytest.raises(simple_salesforce.exceptions.SalesforceExpiredSession) as info:
            _sf(server, a).query("SELECT COUNT() FROM Issue__c WHERE Name = 'Written by a'")
        assert info.value.content[0]["errorCode"] == "INVALID_SESSION_ID"
        assert "writes are gone" in info.value.content[0]["message"]
    assert _sf(server, b).query("SELECT COUNT() FROM Issue__c WHERE Name = 'Written by b'")["totalSize"] == 1
    # A password login is a new session, and its token response says so (with why the last one is gone).
    again = _login(server, "a@example.com").json()
    assert again["crmarena_new_session"] is True and "writes" in again["crmarena_notice"]
    assert (
        _sf(server, again["access_token"]).query("SELECT COUNT() FROM Issue__c WHERE Name = 'Written by a'")[
            "totalSize"
        ]
        == 0
    )
    # That login needed a place: c (no writes) went, before b (older, with writes).
    with pytest.raises(simple_salesforce.exceptions.SalesforceExpiredSession) as info:
        _sf(server, c).query("SELECT COUNT() FROM Issue__c")
    assert "writes are gone" not in info.value.content[0]["message"]
    assert _sf(server, b).query("SELECT COUNT() FROM Issue__c WHERE Name = 'Written by b'")["totalSize"] == 1


@pytest.mark.parametrize("served", [{"max_sessions": 2}], indirect=True)
def test_evictions_during_searches_never_answer_500(served: tuple[SessionHub, OrgServer]) -> None:
    _hub, server = served
    statuses: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        http = requests.Session()
        for j in range(6):
            token = _login(server, f"user{i}-{j}@example.com").json()["access_token"]
            for path in ("search?q=FIND+%7Brunning%7D+RETURNING+Product2(Id)", "query?q=SELECT+Id+FROM+Case+LIMIT+5"):
                r = http.get(f"{server.url}/services/data/v60.0/{path}", headers={"Authorization": f"Bearer {token}"})
                with lock:
                    statuses.append(r.status_code)

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(work, range(6)))
    assert set(statuses) <= {200, 401} and statuses.count(200) > 0, sorted(set(statuses))


def test_sessions_expire_and_tokens_are_revoked(org_path: Path) -> None:
    clock = Clock()
    hub, server = _serve(org_path, session_timeout=60, clock=clock)
    with server:
        # Revoking (POST /services/oauth2/revoke) ends a session, the start token's too.
        start = hub.token
        assert start.startswith(hub.org_id[:15] + "!")  # Salesforce's session id form: ORGID!opaque
        assert _sf(server, start).query("SELECT COUNT() FROM Case")["totalSize"] > 0
        revoke = f"{server.url}/services/oauth2/revoke"
        assert requests.post(revoke, data={"token": start}, timeout=30).status_code == 200
        with pytest.raises(simple_salesforce.exceptions.SalesforceExpiredSession) as info:
            _sf(server, start).query("SELECT COUNT() FROM Case")
        assert "revoked" in info.value.content[0]["message"]
        again = requests.post(revoke, data={"token": start}, timeout=30)
        assert (again.status_code, again.json()["error"]) == (400, "unsupported_token_type")
        # A session idle past the timeout ends; one in use goes on.
        idle, busy = (_login(server, f"{n}@example.com").json()["access_token"] for n in ("idle", "busy"))
        for _ in range(3):
            clock.offset += 30
            assert _sf(server, busy).query("SELECT COUNT() FROM Case")["totalSize"] > 0
        with pytest.raises(simple_salesforce.exceptions.SalesforceExpiredSession) as info:
            _sf(server, idle).query("SELECT COUNT() FROM Case")
        assert "expired" in info.value.content[0]["message"]


def test_failed_logins_lock_a_username_out(served: tuple[SessionHub, OrgServer]) -> None:
    _, server = served
    for _ in range(MAX_LOGIN_FAILURES):
        assert _login(server, "target@example.com", "wrong").json()["error"] == "invalid_grant"
    locked = _login(server, "target@example.com")  # the right password, but locked out for 15 minutes
    assert locked.status_code == 400 and "locked out" in locked.json()["error_description"]
    assert _login(server, "someone.else@example.com").status_code == 200


def _query_page(server: OrgServer, token: str, soql: str, batch: int = 200) -> dict[str, Any]:
    r = requests.get(
        f"{server.url}/services/data/v60.0/query",
        params={"q": soql},
        headers={"Authorization": f"Bearer {token}", "Sforce-Query-Options": f"batchSize={batch}"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_query_cursors_expire_and_are_bounded(org_path: Path) -> None:
    clock = Clock()
    hub, server = _serve(org_path, cursor_bytes=300_000, clock=clock)
    with server:
        token = _login(server).json()["access_token"]
        sf = _sf(server, token)
        first = _query_page(server, token, "SELECT Id FROM Case")
        assert not first["done"] and hub.cursor_bytes_held > 0
        clock.offset += CURSOR_TIMEOUT + 1  # 15 minutes without use: released
        with pytest.raises(simple_salesforce.exceptions.SalesforceMalformedRequest) as info:
            sf.query_more(first["nextRecordsUrl"], identifier_is_url=True)
        assert info.value.content[0]["errorCode"] == "INVALID_QUERY_LOCATOR"
        # Cursors past the server's bound: the least recently used go, and the bound holds.
        pages = [_query_page(server, token, f"SELECT Id FROM Case WHERE CaseNumber > '{i:08d}'") for i in range(6)]
        assert hub.cursor_bytes_held <= 300_000
        assert len(sf.query_more(pages[-1]["nextRecordsUrl"], identifier_is_url=True)["records"]) == 200
        with pytest.raises(simple_salesforce.exceptions.SalesforceMalformedRequest):
            sf.query_more(pages[0]["nextRecordsUrl"], identifier_is_url=True)
        # A result whose rest alone is past the bound is refused, not kept.
        big = requests.get(
            f"{server.url}/services/data/v60.0/query",
            params={"q": "SELECT Id, OrderId, Product2Id, Quantity, UnitPrice, PricebookEntryId FROM OrderItem"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert (big.status_code, big.json()[0]["errorCode"]) == (403, "REQUEST_LIMIT_EXCEEDED")
    # Ten cursors a session: the eleventh releases the oldest.
    clock2 = Clock()
    _hub2, server2 = _serve(org_path, clock=clock2)
    with server2:
        token = _login(server2).json()["access_token"]
        opened = [
            _query_page(server2, token, f"SELECT Id FROM Case WHERE CaseNumber > '{i:08d}'")
            for i in range(MAX_CURSORS + 1)
        ]
        with pytest.raises(simple_salesforce.exceptions.SalesforceMalformedRequest):
            _sf(server2, token).query_more(opened[0]["nextRecordsUrl"], identifier_is_url=True)
        assert _sf(server2, token).query_more(opened[1]["nextRecordsUrl"], identifier_is_url=True)["records"]


@pytest.mark.parametrize("served", [{"session_storage": 5 * 2048}], indirect=True)
def test_a_sessions_writes_are_bounded(served: tuple[SessionHub, OrgServer]) -> None:
    _, server = served
    sf = _sf(server, _login(server).json()["access_token"])
    for i in range(5):  # each record counts 2 KB of storage (Salesforce's accounting)
        sf.Issue__c.create({"Name": f"Fits {i}"})
    with pytest.raises(simple_salesforce.exceptions.SalesforceMalformedRequest) as info:
        sf.Issue__c.create({"Name": "Past the bound"})
    assert info.value.content[0]["errorCode"] == "STORAGE_LIMIT_EXCEEDED"
    assert sf.query("SELECT COUNT() FROM Issue__c WHERE Name LIKE 'Fits%'")["totalSize"] == 5


def _raw_request(server: OrgServer, payload: bytes, wait: float = 10.0) -> bytes:
    host, port = server.url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as plain:
        sock = plain
        if server.cert is not None:
            context = ssl.create_default_context(cafile=str(server.cert))
            sock = context.wrap_socket(plain, server_hostname=host)
        sock.sendall(payload)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks):
                break
        return b"".join(chunks)


@pytest.mark.parametrize(
    "served",
    [
        {
            "max_connections": 60,
            "max_connections_per_client": 60,
            "head_timeout": 1.0,
            "request_timeout": 3.0,
            "tls": False,
        }
    ],
    indirect=True,
)
def test_stalled_connections_cannot_deny_service(served: tuple[SessionHub, OrgServer]) -> None:
    hub, server = served
    host, port = server.url.split("//")[1].split(":")
    stalled: list[socket.socket] = []
    try:
        for i in range(150):  # far past the cap: silent ones, and ones that trickle half a request head
            sock = socket.create_connection((host, int(port)), timeout=5)
            if i % 3 == 0:
                sock.sendall(b"GET /services/data/v60.0/limits HTTP/1.1\r\nHost: x\r\n")
            stalled.append(sock)
        http = requests.Session()
        headers = {"Authorization": f"Bearer {hub.token}"}
        times = []
        for _ in range(20):  # a working client is served, promptly, all along
            start = time.perf_counter()
            r = http.get(
                f"{server.url}/services/data/v60.0/query?q=SELECT+Id+FROM+Issue__c", headers=headers, timeout=10
            )
            times.append(time.perf_counter() - start)
            assert r.status_code == 200
        assert sorted(times)[-2] < 1.0, times
        # Stalled connections are closed: past the cap first, the rest at their head deadline.
        deadline = time.monotonic() + 10
        open_ = list(stalled)
        while open_ and time.monotonic() < deadline:
            for sock in list(open_):
                sock.settimeout(0.05)
                try:
                    if sock.recv(1024) == b"":
                        open_.remove(sock)
                except (TimeoutError, BlockingIOError):
                    pass
                except OSError:
                    open_.remove(sock)
        assert not open_, f"{len(open_)} stalled connections still open"
        assert server.guard.closed_stalled + server.guard.closed_for_room >= len(stalled)
    finally:
        for sock in stalled:
            sock.close()
    # A body sent too slowly ends at the request deadline; the server goes on.
    start = time.monotonic()
    answer = _raw_request(
        server,
        b"POST /services/data/v60.0/sobjects/Issue__c HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        + hub.token.encode()
        + b'\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"Name": ',
    )
    assert answer == b"" and time.monotonic() - start < 8
    assert requests.get(f"{server.url}/services/data/", timeout=10).status_code == 200


# -- fuzzing: no request answers 500 ----------------------------------------------------------------------

_PATHS = [
    "query?q={text}",
    "queryAll?q={text}",
    "query/{text}",
    "search?q={text}",
    "sobjects/{word}",
    "sobjects/Case/{text}",
    "sobjects/Case/describe",
    "sobjects/Product2/External_ID__c/{text}",
    "sobjects/Case/updated?start={text}&end={text}",
    "sobjects/Account/deleted?start=2025-07-01T00:00:00Z&end={text}",
    "composite",
    "composite/batch",
    "composite/tree/{word}",
    "composite/sobjects",
    "composite/sobjects/{word}?ids={text}&fields={text}",
    "composite/sobjects/Product2/{word}",
    "jobs/ingest",
    "jobs/query",
    "jobs/ingest/{text}",
    "jobs/ingest/{text}/batches",
    "jobs/query/{text}/results?maxRecords={text}&locator={text}",
    "limits",
    "{text}",
    "",
]
_WORDS = ["Case", "Account", "Issue__c", "Task", "Nope", "case", "", "sobjects", "%ED%A0%80", "x" * 300, "Id", "Name"]


def _text(rng: random.Random) -> str:
    pieces = [
        "SELECT Id FROM Case",
        "FIND {x}",
        "%ED%A0%80",
        "%FF%FE",
        "9" * rng.choice([1, 50, 5000]),
        "-1",
        "0r8" + "A" * 15 + "-2000",
        "500Ws000001i9uIIAQ",
        "'; DROP TABLE Case; --",
        "%00",
        "\u00e9\u4e2d",
        "2025-07-29T00:00:00Z",
        "true",
        "",
    ]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))


def _body(rng: random.Random) -> bytes:
    record: dict[str, Any] = {
        rng.choice(["Name", "Subject", "Id", "id", "LastName", "\ud800", "attributes", "Bogus"]): rng.choice(
            ["x", "\ud800", 10**30, -1.5, None, True, [], {}, "a" * 300]
        )
    }
    if rng.random() < 0.5:
        record["attributes"] = rng.choice([{"type": "Issue__c"}, "Issue__c", None, [], {"type": 5}, {"type": "\udfff"}])
    bodies: list[Any] = [
        record,
        {"records": [record, record], "allOrNone": rng.choice([True, False, "false", "TRUE", "maybe", 1, None])},
        {
            "compositeRequest": [
                {
                    "method": rng.choice(["GET", "POST", "X", 5]),
                    "url": rng.choice(["/services/data/v60.0/limits", "@{a.b}", 5, "/x"]),
                    "referenceId": rng.choice(["a", "a b", "", None]),
                    "body": record,
                }
            ]
        },
        {
            "batchRequests": [{"method": "GET", "url": rng.choice(["v60.0/limits", "v60.0/composite", "", None])}],
            "haltOnError": "yes",
        },
        {
            "object": rng.choice(["Issue__c", "Nope", 5]),
            "operation": rng.choice(["insert", "upsert", "query", "x"]),
            "query": rng.choice(["SELECT Id FROM Case", "SELEC", 5]),
        },
        {"state": rng.choice(["UploadComplete", "Aborted", "Open", 5])},
        [1, 2, 3],
        "text",
    ]
    raw = json.dumps(rng.choice(bodies))  # lone surrogates go out as \ud800 escapes, as a client would send them
    choice = rng.random()
    if choice < 0.1:
        return raw.encode()[: rng.randint(0, len(raw))]  # truncated
    if choice < 0.15:
        return b"\xff\xfe" + raw.encode()  # not UTF-8
    if choice < 0.2:
        return b"[" * 5000 + b"]" * 5000
    if choice < 0.25:
        return b'Name,Description__c\nA,\xff\n"unclosed,x\n'
    return raw.encode()


@pytest.mark.parametrize("served", [{"max_sessions": 8}], indirect=True)
def test_no_request_answers_500(served: tuple[SessionHub, OrgServer]) -> None:
    hub, server = served
    rng = random.Random(34)
    http = requests.Session()
    seen: dict[int, int] = {}
    for i in range(400):
        path = rng.choice(_PATHS).format(text=_text(rng), word=rng.choice(_WORDS))
        method = rng.choice(["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"])
        version = rng.choice(["60.0", "68.0", "31.0", "30.0", "99.0", "abc"])
        headers = {"Authorization": f"Bearer {hub.token}", "Content-Type": rng.choice(["application/json", "text/csv"])}
        if rng.random() < 0.2:
            headers["Sforce-Query-Options"] = rng.choice(
                ["batchSize=" + "9" * 5000, "batchSize=-5", "batchSize=abc", "x"]
            )
        url = f"{server.url}/services/data/v{version}/{path}"
        r = http.request(
            method,
            url,
            data=_body(rng) if method in ("POST", "PATCH", "PUT", "DELETE") else None,
            headers=headers,
            timeout=60,
        )
        seen[r.status_code] = seen.get(r.status_code, 0) + 1
        assert r.status_code < 500, (i, method, url, r.status_code, r.text[:300])
        if r.content and r.headers.get("content-type", "").startswith("application/json"):
            r.json()  # always a JSON body when it says so
    for raw in (
        b"GET /services/data/v60.0/%ED%A0%80 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
    ):
        answer = _raw_request(server, raw)
        assert answer.startswith(b"HTTP/1.1 4"), answer[:100]
    assert sum(seen.values()) == 400 and requests.get(f"{server.url}/services/data/", timeout=10).status_code == 200


def test_a_partial_collection_answers_per_record(served: tuple[SessionHub, OrgServer]) -> None:
    _hub, server = served
    sf = _sf(server, _login(server).json()["access_token"])
    issue = {"attributes": {"type": "Issue__c"}}
    body = json.dumps(
        {
            "allOrNone": "false",  # a string: read as the boolean it names, not as "true" for being non-empty
            "records": [
                {**issue, "Name": "Before the bad ones"},
                {**issue, "Name": "Lone \ud800 surrogate"},
                {"attributes": "Issue__c", "Name": "String attributes"},
                {**issue, "Name": "After the bad ones"},
            ],
        }
    )
    r = requests.post(
        f"{server.url}/services/data/v60.0/composite/sobjects",
        data=body,
        headers={"Authorization": f"Bearer {sf.session_id}", "Content-Type": "application/json"},
        timeout=30,
    )
    assert r.status_code == 200
    results = r.json()
    assert [x["success"] for x in results] == [True, False, False, True]
    assert [x["errors"][0]["statusCode"] for x in results[1:3]] == ["JSON_PARSER_ERROR", "INVALID_TYPE"]
    written = sf.query("SELECT Id FROM Issue__c WHERE Name LIKE '%the bad ones'")["records"]
    assert sorted(x["Id"] for x in written) == sorted([results[0]["id"], results[3]["id"]])
    maybe = requests.post(
        f"{server.url}/services/data/v60.0/composite/sobjects",
        json={"allOrNone": "maybe", "records": [{**issue, "Name": "Never"}]},
        headers={"Authorization": f"Bearer {sf.session_id}"},
        timeout=30,
    )
    assert (maybe.status_code, maybe.json()[0]["errorCode"]) == (400, "JSON_PARSER_ERROR")


def test_abandoned_cursors_stay_within_their_bound(org_path: Path) -> None:
    # The short version of benchmarks/bench_serve_soak.py: cursors opened and never read, from several
    # sessions; what they hold never passes the bound, and each session keeps at most ten.
    hub, server = _serve(org_path, cursor_bytes=400_000)
    with server:
        tokens = [_login(server, f"cursors{i}@example.com").json()["access_token"] for i in range(4)]
        held = []
        for k in range(60):
            page = _query_page(server, tokens[k % 4], f"SELECT Id, Subject FROM Case WHERE CaseNumber > '{k:08d}'")
            assert not page["done"]
            held.append(hub.cursor_bytes_held)
        assert max(held) <= 400_000 and held[-1] > 0
        with hub._lock:
            assert all(len(c.cursors) <= MAX_CURSORS for c in hub._clients.values())


def test_describe_reports_each_relationships_delete_rule(served: tuple[SessionHub, OrgServer]) -> None:
    # childRelationships carry cascadeDelete and restrictedDelete (describeSObject); the writes follow them.
    hub, server = served
    sf = _sf(server, hub.token)
    account = {(r["childSObject"], r["field"]): r for r in sf.Account.describe()["childRelationships"]}
    assert account[("Contact", "AccountId")]["cascadeDelete"] is True
    assert account[("Case", "AccountId")]["restrictedDelete"] is True
    order = {(r["childSObject"], r["field"]): r for r in sf.Order.describe()["childRelationships"]}
    assert order[("OrderItem", "OrderId")]["cascadeDelete"] is True
    assert sf.User.describe()["deletable"] is False and sf.Case.describe()["deletable"] is True
    (with_cases,) = {
        r["AccountId"] for r in sf.query("SELECT AccountId FROM Case WHERE AccountId != null LIMIT 1")["records"]
    }
    with pytest.raises(simple_salesforce.exceptions.SalesforceMalformedRequest) as info:
        sf.Account.delete(with_cases)
    assert info.value.content[0]["errorCode"] == "DELETE_FAILED"


def test_a_sessions_first_bulk_job_drops_the_jobs_of_sessions_that_ended() -> None:
    # Both Bulk APIs keep jobs by session; those of ended sessions go (their bytes given back by the caller).
    hub: Any = SimpleNamespace(_lock=threading.Lock(), _clients={"live": object(), "new": object()})
    registry: dict[str, dict[str, str]] = {"live": {"j1": "L1"}, "ended": {"j2": "E2", "j3": "E3"}}
    jobs, gone = session_jobs(registry, hub, SimpleNamespace(digest="new"))  # type: ignore[arg-type]
    assert jobs == {} and sorted(gone) == ["E2", "E3"] and set(registry) == {"live", "new"}
    jobs["j4"] = "N4"
    again, gone = session_jobs(registry, hub, SimpleNamespace(digest="new"))  # type: ignore[arg-type]
    assert again is jobs and again == {"j4": "N4"} and gone == []  # a known session sweeps nothing
