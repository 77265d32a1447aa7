"""The served org: the real simple-salesforce client over real HTTPS on 127.0.0.1, against one server."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
simple_salesforce = pytest.importorskip("simple_salesforce")
import requests  # noqa: E402

from crmarena_gym.org import LocalOrg, OrgError, SalesforceOrg  # noqa: E402
from crmarena_gym.org.serve import MAX_BODY_BYTES, OrgServer, SessionHub  # noqa: E402
from crmarena_gym.schema import id_checksum  # noqa: E402
from tests.processes import popen  # noqa: E402

TODAY = "2025-07-29"  # the date of most default instances
PASSWORD = "correct horse"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def server(org_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OrgServer]:
    before = _sha256(org_path)
    hub = SessionHub(org_path, password=PASSWORD, token="start-token", max_sessions=48, today=TODAY)
    with OrgServer(hub, cert_dir=tmp_path_factory.mktemp("cert")) as running, pytest.MonkeyPatch.context() as mp:
        mp.setenv("REQUESTS_CA_BUNDLE", str(running.cert))  # how users trust it; SalesforceOrg's session reads it
        yield running
    assert _sha256(org_path) == before  # the org file never changes, whatever the sessions wrote


def _http(server: OrgServer) -> requests.Session:
    s = requests.Session()
    s.verify = str(server.cert)
    return s


def _login(server: OrgServer) -> str:
    r = _http(server).post(
        f"{server.url}/services/oauth2/token",
        data={"grant_type": "password", "client_id": "x", "username": "agent@example.com", "password": PASSWORD},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["instance_url"] == server.url and body["token_type"] == "Bearer"
    return body["access_token"]


def _sf(server: OrgServer, token: str | None = None) -> Any:
    return simple_salesforce.Salesforce(
        instance_url=server.url, session_id=token or _login(server), session=_http(server), version="60.0"
    )


def test_query_all_follows_batches_and_query_more(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    expected = [r[0] for r in raw.execute('SELECT "Id" FROM "CaseHistory__c"')]
    assert len(expected) > 2000
    everything = sf.query_all("SELECT Id FROM CaseHistory__c")
    assert sorted(r["Id"] for r in everything["records"]) == sorted(expected)
    first = sf.query("SELECT Id FROM CaseHistory__c")
    assert (first["done"], first["totalSize"], len(first["records"])) == (False, len(expected), 2000)
    second = sf.query_more(first["nextRecordsUrl"], identifier_is_url=True)
    assert second["done"] and len(second["records"]) == len(expected) - 2000
    small = sf.query("SELECT Id FROM CaseHistory__c", headers={"Sforce-Query-Options": "batchSize=500"})
    assert len(small["records"]) == 500
    nxt = sf.query_more(small["nextRecordsUrl"], identifier_is_url=True)
    assert len(nxt["records"]) == 500 and nxt["totalSize"] == len(expected)
    count = sf.query("SELECT COUNT() FROM CaseHistory__c")
    assert (count["totalSize"], count["records"]) == (len(expected), [])


def test_search_describe_get_and_limits(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    local = LocalOrg(server.hub.base.path, today=TODAY)
    sosl = "FIND {running} IN ALL FIELDS RETURNING Product2(Id, Name)"
    assert sf.search(sosl)["searchRecords"] == local.search(sosl)["searchRecords"]
    listed = {o["name"]: o for o in sf.describe()["sobjects"]}
    tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables -= {t for t in tables if t.startswith(("sqlite_", "crmarena_"))}  # the file's own bookkeeping
    assert {n for n, o in listed.items() if o["createable"]} == tables  # every table, writable in a session
    assert {"Task", "Opportunity"} <= set(listed) and not listed["Task"]["createable"]  # standard, read-only here
    assert sf.Task.describe()["fields"][0]["createable"] is False
    case = sf.Case.describe()
    fields = {f["name"]: f for f in case["fields"]}
    assert fields["Status"]["type"] == "picklist" and "Closed" in [
        v["value"] for v in fields["Status"]["picklistValues"]
    ]
    assert (fields["OwnerId"]["referenceTo"], fields["OwnerId"]["relationshipName"]) == (["Group", "User"], "Owner")
    assert case["keyPrefix"] == "500" and fields["Subject"]["length"] == 255
    keys = ("name", "label", "type", "length", "referenceTo", "relationshipName", "picklistValues", "filterable")
    assert [{k: f[k] for k in keys} for f in case["fields"]] == [
        {k: f[k] for k in keys} for f in local.describe("Case")["fields"]
    ]  # Org.describe's fields (standard ones included), with the write rules added
    writable = {name for name, f in fields.items() if f["createable"]}
    assert {"Subject", "Status", "OwnerId"} <= writable and not {"Id", "CaseNumber", "IsClosed"} & writable
    assert case["urls"]["describe"] == "/services/data/v60.0/sobjects/Case/describe"
    (case_id, subject, owner) = raw.execute('SELECT "Id", "Subject", "OwnerId" FROM "Case" LIMIT 1').fetchone()
    got = sf.Case.get(case_id)
    assert (got["Id"], got["Subject"], got["OwnerId"]) == (case_id, subject, owner)
    assert got["attributes"]["type"] == "Case"
    few = _http(server).get(
        f"{server.url}/services/data/v60.0/sobjects/Case/{case_id}",
        params={"fields": "Subject,Owner.Name"},
        headers={"Authorization": f"Bearer {sf.session_id}"},
    )
    assert set(few.json()) == {"attributes", "Subject", "Owner"}
    assert "DailyApiRequests" in sf.limits()
    versions = _http(server).get(f"{server.url}/services/data/").json()
    assert {"58.0", "60.0", "62.0"} <= {v["version"] for v in versions}


def test_served_picklists_keep_salesforces_lengths(server: OrgServer, raw: sqlite3.Connection) -> None:
    # The Salesforce Field Reference (Summer '26): Case.Priority and Case.Status are picklists of 255, Order.Status
    # one of 100, Case.CaseNumber an auto-number string of 30.
    sf = _sf(server)
    case = {f["name"]: f for f in sf.Case.describe()["fields"]}
    order = {f["name"]: f for f in sf.Order.describe()["fields"]}
    assert [
        (d[n]["type"], d[n]["length"]) for d, n in ((case, "Priority"), (order, "Status"), (case, "CaseNumber"))
    ] == [
        ("picklist", 255),
        ("picklist", 100),
        ("string", 30),
    ]
    (case_id, priority) = raw.execute('SELECT "Id", "Priority" FROM "Case" ORDER BY "Id" LIMIT 1').fetchone()
    (order_id, status) = raw.execute('SELECT "Id", "Status" FROM "Order" ORDER BY "Id" LIMIT 1').fetchone()
    for sobject, record, field, length in (("Case", case_id, "Priority", 255), ("Order", order_id, "Status", 100)):
        with pytest.raises(simple_salesforce.exceptions.SalesforceMalformedRequest) as info:
            getattr(sf, sobject).update(record, {field: "x" * (length + 1)})
        error = info.value.content[0]
        assert (error["errorCode"], error["fields"]) == ("STRING_TOO_LONG", [field]), error
        assert error["message"].endswith(f"(max length={length})")
    assert (sf.Case.get(case_id)["Priority"], sf.Order.get(order_id)["Status"]) == (priority, status)  # unchanged


def test_crud_round_trip_and_isolation(server: OrgServer, raw: sqlite3.Connection) -> None:
    a, b = _sf(server), _sf(server)
    (contact_id,) = raw.execute('SELECT "Id" FROM "Contact" LIMIT 1').fetchone()
    (count,) = raw.execute('SELECT COUNT(*) FROM "Case"').fetchone()
    made = a.Case.create({"Subject": "Served write", "ContactId": contact_id, "Status": "New"})
    assert made["success"] and made["id"].startswith("500")
    assert a.Case.get(made["id"])["Subject"] == "Served write"
    assert a.query("SELECT COUNT() FROM Case")["totalSize"] == count + 1
    assert b.query("SELECT COUNT() FROM Case")["totalSize"] == count  # the other session never sees it
    with pytest.raises(simple_salesforce.exceptions.SalesforceResourceNotFound):
        b.Case.get(made["id"])
    assert a.Case.update(made["id"], {"Status": "Closed"}) == 204
    assert a.query(f"SELECT Status FROM Case WHERE Id = '{made['id']}'")["records"][0]["Status"] == "Closed"
    assert a.search("FIND {Served} RETURNING Case(Id)")["searchRecords"][0]["Id"] == made["id"]
    assert b.search("FIND {Served} RETURNING Case(Id)")["searchRecords"] == []
    assert a.Case.delete(made["id"]) == 204
    with pytest.raises(simple_salesforce.exceptions.SalesforceResourceNotFound) as gone:
        a.Case.get(made["id"])
    assert gone.value.content[0]["errorCode"] == "ENTITY_IS_DELETED"
    a.Issue__c.create({"Name": "Forgotten on reset"})
    a.restful("crmarena/reset", method="POST")  # the session forgets its writes
    assert a.query("SELECT COUNT() FROM Issue__c WHERE Name = 'Forgotten on reset'")["totalSize"] == 0


def test_composite_batches(server: OrgServer) -> None:
    sf = _sf(server)
    issue = {"attributes": {"type": "Issue__c"}}
    ok = sf.restful(
        "composite/sobjects",
        method="POST",
        json={"allOrNone": False, "records": [{**issue, "Name": "One"}, {**issue, "Bad": 1}, {**issue, "Name": "Two"}]},
    )
    assert [r["success"] for r in ok] == [True, False, True]
    assert ok[1]["errors"][0]["statusCode"] == "INVALID_FIELD"
    rolled = sf.restful(
        "composite/sobjects",
        method="POST",
        json={"allOrNone": True, "records": [{**issue, "Name": "Three"}, {**issue}]},
    )
    assert [r["errors"][0]["statusCode"] for r in rolled] == [
        "ALL_OR_NONE_OPERATION_ROLLED_BACK",
        "REQUIRED_FIELD_MISSING",
    ]
    names = sorted(
        r["Name"] for r in sf.query("SELECT Name FROM Issue__c WHERE Name IN ('One','Two','Three')")["records"]
    )
    assert names == ["One", "Two"]
    ids = [ok[0]["id"], ok[2]["id"]]
    updated = sf.restful(
        "composite/sobjects",
        method="PATCH",
        json={"records": [{**issue, "Id": ids[0], "Name": "Uno"}, {**issue, "Id": ids[1], "Name": "Dos"}]},
    )
    assert all(r["success"] for r in updated)
    read = sf.restful(f"composite/sobjects/Issue__c?ids={','.join(ids)}&fields=Name", method="GET")
    assert [r["Name"] for r in read] == ["Uno", "Dos"]
    deleted = sf.restful(f"composite/sobjects?ids={','.join(ids)}", method="DELETE")
    assert [r["success"] for r in deleted] == [True, True]
    assert sf.query("SELECT COUNT() FROM Issue__c WHERE Name IN ('Uno','Dos')")["totalSize"] == 0


# Well-formed ids (correct checksums) of records that do not exist.
MISSING_CASE = "500Ws0000000000" + id_checksum("500Ws0000000000")
MISSING_USER = "005Ws0000000000" + id_checksum("005Ws0000000000")


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("GET", "query?q=SELECT+Nope+FROM+Case", None, 400, "INVALID_FIELD"),
        ("GET", "query?q=SELEC", None, 400, "MALFORMED_QUERY"),
        ("GET", "query", None, 400, "MALFORMED_QUERY"),
        ("GET", "query/01gXXXXXXXXXXXX-2000", None, 400, "INVALID_QUERY_LOCATOR"),
        ("GET", "search?q=FIND+x", None, 400, "MALFORMED_SEARCH"),
        ("GET", "sobjects/Nope/describe", None, 404, "NOT_FOUND"),
        ("GET", f"sobjects/Case/{MISSING_CASE}", None, 404, "NOT_FOUND"),
        ("GET", "sobjects/Case/not-an-id", None, 400, "MALFORMED_ID"),
        ("GET", "sobjects/Case/005Ws000001iZSEIA2", None, 400, "MALFORMED_ID"),
        ("GET", "nothing/here", None, 404, "NOT_FOUND"),
        ("PUT", "sobjects/Case", b"{}", 405, "METHOD_NOT_ALLOWED"),
        ("POST", "query?q=SELECT+Id+FROM+Case", b"{}", 405, "METHOD_NOT_ALLOWED"),
        ("POST", "sobjects/Case", b"{not json", 400, "JSON_PARSER_ERROR"),
        ("POST", "sobjects/Case", b"[1, 2]", 400, "JSON_PARSER_ERROR"),
        ("POST", "sobjects/Case", b"", 400, "JSON_PARSER_ERROR"),
        ("POST", "sobjects/Case", b'{"Status": "Dancing"}', 400, "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"),
        ("POST", "sobjects/Account", b'{"FirstName": "No last"}', 400, "REQUIRED_FIELD_MISSING"),
        ("POST", "sobjects/Case", b'{"OwnerId": "%s"}' % MISSING_USER.encode(), 400, "INVALID_CROSS_REFERENCE_KEY"),
        ("POST", "sobjects/Case", b'{"Id": "500Ws0000000000AAA"}', 400, "INVALID_FIELD_FOR_INSERT_UPDATE"),
        ("POST", "sobjects/Case", b"[" * 100_000 + b"]" * 100_000, 400, "JSON_PARSER_ERROR"),
        (
            "POST",
            "sobjects/Case",
            b'{"Subject": "' + b"x" * (MAX_BODY_BYTES + 10) + b'"}',
            413,
            "REQUEST_ENTITY_TOO_LARGE",
        ),
        ("POST", "composite/sobjects", b'{"records": []}', 400, "INVALID_FIELD"),
        ("POST", "sobjects/Task", b'{"Subject": "Call"}', 400, "INVALID_TYPE_FOR_OPERATION"),
        ("GET", "query?q=SELECT+Id+FROM+Case", None, 400, "INVALID_HEADER_TYPE"),
    ],
)
def test_error_paths_answer_as_salesforce(
    server: OrgServer, method: str, path: str, body: bytes | None, status: int, code: str
) -> None:
    headers = {"Authorization": "Bearer start-token", "Content-Type": "application/json"}
    if code == "INVALID_HEADER_TYPE":
        headers["Sforce-Query-Options"] = "batchSize=lots"
    r = _http(server).request(method, f"{server.url}/services/data/v60.0/{path}", data=body, headers=headers)
    assert r.status_code == status, r.text
    payload = r.json()
    assert isinstance(payload, list) and payload[0]["errorCode"] == code and payload[0]["message"], payload
    assert _sf(server, "start-token").query("SELECT COUNT() FROM Issue__c")["totalSize"] >= 0  # still serving


def test_authentication_errors(server: OrgServer) -> None:
    http = _http(server)
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}):
        r = http.get(f"{server.url}/services/data/v60.0/limits", headers=headers)
        assert (r.status_code, r.json()[0]["errorCode"]) == (401, "INVALID_SESSION_ID")
    with pytest.raises(simple_salesforce.exceptions.SalesforceExpiredSession):
        _sf(server, "wrong-token").query("SELECT Id FROM Case")
    token = f"{server.url}/services/oauth2/token"
    bad = http.post(token, data={"grant_type": "password", "username": "u", "password": "wrong"})
    assert (bad.status_code, bad.json()["error"]) == (400, "invalid_grant")
    other = http.post(token, data={"grant_type": "client_credentials"})
    assert (other.status_code, other.json()["error"]) == (400, "unsupported_grant_type")
    # A retired version answers 410 GONE (REST API Developer Guide, API End-of-Life Policy); an unknown one 404.
    assert http.get(f"{server.url}/services/data/v12.0/limits").status_code == 410
    assert http.get(f"{server.url}/services/data/v99.0/limits").status_code == 404
    session = _login(server)
    assert http.post(f"{server.url}/services/oauth2/revoke", data={"token": session}).status_code == 200
    assert (
        http.get(f"{server.url}/services/data/v60.0/limits", headers={"Authorization": f"Bearer {session}"}).status_code
        == 401
    )


def test_sessions_are_bounded(server: OrgServer) -> None:
    tokens = [_login(server) for _ in range(server.hub.max_sessions + 3)]
    assert server.hub.sessions == server.hub.max_sessions
    newest = _sf(server, tokens[-1])
    assert newest.query("SELECT COUNT() FROM Issue__c")["totalSize"] >= 0
    with pytest.raises(simple_salesforce.exceptions.SalesforceExpiredSession):  # the oldest were dropped
        _sf(server, tokens[0]).query("SELECT COUNT() FROM Issue__c")
    _sf(server, "start-token").query("SELECT COUNT() FROM Issue__c")  # the start token's session stays


# The engine's query corpus: each query's answer (or error code) must be the same from LocalOrg and from
# SalesforceOrg pointed at the served org.
CORPUS = [
    "SELECT Id, Subject, Status, CreatedDate FROM Case ORDER BY CreatedDate DESC, Id LIMIT 25",
    "SELECT Id, Owner.Name, Contact.Account.Name, IssueId__r.Name FROM Case ORDER BY Id LIMIT 40",
    "SELECT COUNT() FROM Case WHERE Status = 'Closed'",
    "SELECT COUNT(Id), OwnerId FROM Case GROUP BY OwnerId ORDER BY COUNT(Id) DESC, OwnerId LIMIT 5",
    "SELECT Status, COUNT(Id) n FROM Case GROUP BY Status HAVING COUNT(Id) > 1 ORDER BY Status",
    "SELECT AVG(UnitPrice), MAX(Quantity), MIN(UnitPrice), SUM(Quantity) FROM OrderItem",
    "SELECT Id FROM Case WHERE CreatedDate >= 2022-01-01T00:00:00Z AND CreatedDate < 2022-03-01T00:00:00Z",
    "SELECT Id FROM Case WHERE CreatedDate = LAST_N_MONTHS:6 ORDER BY Id",
    "SELECT Id FROM Order WHERE EffectiveDate = THIS_YEAR ORDER BY Id",
    "SELECT Name FROM Account WHERE Name LIKE 'A%' ORDER BY Name NULLS LAST, Id LIMIT 10",
    "SELECT Id FROM Case WHERE AccountId IN (SELECT AccountId FROM Order WHERE Status = 'Activated') LIMIT 20",
    "SELECT Id FROM Contact WHERE Id NOT IN (SELECT ContactId FROM Case WHERE ContactId != null) ORDER BY Id",
    "SELECT CALENDAR_MONTH(CreatedDate) m, COUNT(Id) FROM Case GROUP BY CALENDAR_MONTH(CreatedDate) ORDER BY m",
    "SELECT Id, Title FROM Knowledge__kav WHERE PublishStatus = 'Online' ORDER BY Title LIMIT 5 OFFSET 3",
    "SELECT Id, Field__c, NewValue__r.Name FROM CaseHistory__c ORDER BY CreatedDate, Id",
    "SELECT Product2.Name, UnitPrice FROM PricebookEntry WHERE UnitPrice > 50 ORDER BY UnitPrice DESC, Id",
    "SELECT Id FROM Product2 WHERE IsActive = true AND Name IN ('x', 'y')",
    "SELECT Nope FROM Case",
    "SELECT Id FROM Nope",
    "SELECT Id FROM Case WHERE",
    "SELECT Description FROM Case WHERE Description = 'x'",
    "FIND {shoes} IN ALL FIELDS RETURNING Product2(Id, Name), Knowledge__kav(Id, Title)",
    'FIND {"order status"} RETURNING Knowledge__kav(Id, Title LIMIT 3)',
    "FIND {x} RETURNING",
]


def _answer(org: Any, text: str) -> Any:
    try:
        return org.search(text) if text.startswith("FIND") else org.query(text)
    except OrgError as err:
        return err.code


@pytest.fixture(scope="module")
def both_orgs(server: OrgServer) -> dict[str, Any]:
    return {
        "local": LocalOrg(server.hub.base.path, today=TODAY),
        "served": SalesforceOrg(session_id=_login(server), instance_url=server.url, max_retries=0),
    }


@pytest.fixture(scope="module")
def expected_answers(server: OrgServer) -> dict[str, Any]:
    local = LocalOrg(server.hub.base.path, today=TODAY)
    return {text: _answer(local, text) for text in CORPUS}


@pytest.mark.parametrize("backend", ["local", "served"])
def test_query_corpus_same_from_local_org_and_salesforce_org(
    backend: str, both_orgs: dict[str, Any], expected_answers: dict[str, Any], raw: sqlite3.Connection
) -> None:
    org = both_orgs[backend]
    answers = {text: _answer(org, text) for text in CORPUS}
    assert answers == expected_answers
    # Anchored to the file itself, not only to LocalOrg: counts and ids by plain SQL.
    (closed,) = raw.execute('SELECT COUNT(*) FROM "Case" WHERE "Status" = \'Closed\'').fetchone()
    assert answers[CORPUS[2]]["totalSize"] == closed
    ids = [r[0] for r in raw.execute('SELECT "Id" FROM "CaseHistory__c" ORDER BY "CreatedDate", "Id"')]
    assert [r["Id"] for r in answers[CORPUS[14]]["records"]] == ids
    assert answers["SELECT Nope FROM Case"] == "INVALID_FIELD" and answers["SELECT Id FROM Nope"] == "INVALID_TYPE"


def test_gym_env_over_salesforce_org_plays_oracle_episodes(server: OrgServer) -> None:
    import gymnasium as gym

    from crmarena_gym.tasks import default_tasks, oracle_trace

    local = LocalOrg(server.hub.base.path)
    org = SalesforceOrg(session_id=_login(server), instance_url=server.url, max_retries=0)
    picked = [t for t in default_tasks(server.hub.base.path) if str(t.today) == TODAY][::60][:6]
    assert len({t.task for t in picked}) >= 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a live org's own clock: the server's --today here
        env = gym.make("CRMArena-v0", org=org, tasks=picked, toolset="soql")
        for instance in picked:
            obs, _ = env.reset(options={"idx": instance.idx})
            actions = [call.to_action() for call in oracle_trace(instance, local.with_today(TODAY)).actions]
            for action in actions:
                obs, reward, terminated, _truncated, _info = env.step(action)
            assert (reward, terminated) == (1.0, True), (instance.task, obs)


def test_sixteen_concurrent_clients(server: OrgServer, raw: sqlite3.Connection) -> None:
    (cases,) = raw.execute('SELECT COUNT(*) FROM "Case"').fetchone()
    tokens = [_login(server) for _ in range(16)]

    def client(n: int) -> list[str]:
        sf = _sf(server, tokens[n])
        problems = []
        for i in range(12):
            made = sf.Issue__c.create({"Name": f"client {n} issue {i}"})
            mine = sf.query(f"SELECT COUNT() FROM Issue__c WHERE Name LIKE 'client {n} %'")["totalSize"]
            others = sf.query("SELECT COUNT() FROM Issue__c WHERE Name LIKE 'client %'")["totalSize"]
            if (mine, others) != (i + 1, i + 1) or not made["success"]:
                problems.append(f"client {n} step {i}: mine {mine}, all {others}")
            if sf.query("SELECT COUNT() FROM Case")["totalSize"] != cases:
                problems.append("case count")
        try:
            sf.Case.get("not-an-id")
        except simple_salesforce.exceptions.SalesforceMalformedRequest as err:  # the expected refusal
            if err.content[0]["errorCode"] != "MALFORMED_ID":
                problems.append(json.dumps(err.content))
        return problems

    with ThreadPoolExecutor(16) as pool:
        problems = [p for found in pool.map(client, range(16)) for p in found]
    assert problems == []


def test_the_serve_org_command_serves_until_interrupted(
    org_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import signal
    import subprocess
    import sys

    command = [sys.executable, "-c", "from crmarena_gym.cli import main; raise SystemExit(main())", "serve-org"]
    command += ["--org", str(org_path), "--port", "0", "--token", "cli-token", "--cert-dir", str(tmp_path)]
    process = popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("serving the org"), (first, process.stderr.read() if process.poll() else "")
        url = first.split(" on ", 1)[1].split(";", 1)[0]
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "cert.pem"))  # as the banner tells users
        sf = simple_salesforce.Salesforce(instance_url=url, session_id="cli-token", version="60.0")
        (count,) = sqlite3.connect(org_path).execute("SELECT COUNT(*) FROM Issue__c").fetchone()
        assert sf.query("SELECT COUNT() FROM Issue__c")["totalSize"] == count
        os.kill(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 128 + signal.SIGINT and "Traceback" not in err, err
    finally:
        if process.poll() is None:
            process.kill()
    bad = subprocess.run([*command[:4], "--port", "70000"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--port must be 0 to 65535, got 70000" in bad.stderr
    remote = subprocess.run([*command[:4], "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert remote.returncode == 2 and "--allow-remote" in remote.stderr
