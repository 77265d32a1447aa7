"""simple-salesforce's public methods against the served org over HTTPS on 127.0.0.1 (the audit of issue 41).

Each method either answers as Salesforce does (expectations from the org file read with plain SQLite and
the REST API Developer Guide's response shapes) or fails as Salesforce fails for a resource the org does
not have, a 404 whose message says what is not served, never a 500.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import itertools
import re
import sqlite3
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
simple_salesforce = pytest.importorskip("simple_salesforce")
import requests  # noqa: E402

from crmarena_gym.org.serve import OrgServer, SessionHub  # noqa: E402

TODAY = "2025-07-29"
PASSWORD = "simple"
NotFound = simple_salesforce.exceptions.SalesforceResourceNotFound
Malformed = simple_salesforce.exceptions.SalesforceMalformedRequest


@pytest.fixture(scope="module")
def server(org_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OrgServer]:
    hub = SessionHub(org_path, password=PASSWORD, today=TODAY)
    with OrgServer(hub, cert_dir=tmp_path_factory.mktemp("cert")) as running, pytest.MonkeyPatch.context() as mp:
        mp.setenv("REQUESTS_CA_BUNDLE", str(running.cert))
        yield running


def _sf(server: OrgServer) -> Any:
    r = requests.post(
        f"{server.url}/services/oauth2/token",
        data={"grant_type": "password", "username": "simple@example.com", "password": PASSWORD},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return simple_salesforce.Salesforce(instance_url=server.url, session_id=r.json()["access_token"], version="60.0")


def _words(text: str) -> set[str]:
    """A field's words as SOSL matches them: runs of letters and digits, case ignored."""
    return {w.lower() for w in re.findall(r"[^\W_]+", text)}


def _error(info: pytest.ExceptionInfo[Any]) -> tuple[int, str, str]:
    (body,) = info.value.content
    return info.value.status, body["errorCode"], body["message"]


def test_parameterized_search_post_runs_as_the_find_it_stands_for(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    # Products are searched in all their text fields whatever the scope (SOSL Reference: IN is ignored).
    rows = raw.execute('SELECT "Id", "Name", "Description", "IsActive" FROM "Product2"').fetchall()
    active_walking = sorted(
        ((i, n) for i, n, d, active in rows if active and "walking" in _words(f"{n} {d or ''}")),
        key=lambda r: r[1].lower(),
    )
    assert len(active_walking) >= 3
    found = sf.restful(
        "parameterizedSearch",
        method="POST",
        json={
            "q": "walking",
            "in": "NAME",
            "fields": ["Id", "Name"],
            "sobjects": [{"name": "Product2", "where": "IsActive = true", "orderBy": "Name"}],
        },
    )
    records = found["searchRecords"]
    assert [(r["Id"], r["Name"]) for r in records] == active_walking
    assert all(set(r) == {"attributes", "Id", "Name"} for r in records)
    assert records[0]["attributes"] == {
        "type": "Product2",
        "url": f"/services/data/v60.0/sobjects/Product2/{active_walking[0][0]}",
    }
    # A per-object limit, and offset with a single object, page through the same ordered answer.
    paged = sf.restful(
        "parameterizedSearch",
        method="POST",
        json={
            "q": "walking",
            "in": "NAME",
            "offset": 1,
            "sobjects": [
                {"name": "Product2", "fields": ["Name"], "where": "IsActive = true", "orderBy": "Name", "limit": 2}
            ],
        },
    )
    assert [r["Name"] for r in paged["searchRecords"]] == [n for _, n in active_walking[1:3]]


def test_parameterized_search_get_takes_repeated_sobjects_and_their_fields(
    server: OrgServer, raw: sqlite3.Connection
) -> None:
    sf = _sf(server)
    rows = raw.execute('SELECT "Id", "Name", "Description" FROM "Product2"').fetchall()
    names = {i: n for i, n, _ in rows}
    golf = {i for i, n, d in rows if "golf" in _words(f"{n} {d or ''}")}
    assert len(golf) > 3
    # GET with requests' own encoding of the parameters, a repeated sobject and per-object fields and limit.
    found = sf.restful(
        "parameterizedSearch",
        params=[
            ("q", "golf"),
            ("in", "NAME"),
            ("sobject", "Product2"),
            ("sobject", "Issue__c"),
            ("Product2.fields", "Id,Name"),
            ("Product2.limit", "3"),
        ],
    )
    records = found["searchRecords"]
    products = [r for r in records if r["attributes"]["type"] == "Product2"]
    assert len(products) == 3 and {r["Id"] for r in products} <= golf
    assert all(r["Name"] == names[r["Id"]] for r in products)
    assert {r["attributes"]["type"] for r in records} <= {"Product2", "Issue__c"}
    # Without sobject: every searchable object, each record its Id (products come back only when named).
    everywhere = sf.restful("parameterizedSearch", params={"q": "golf", "in": "NAME"})
    assert all(set(r) == {"attributes", "Id"} for r in everywhere["searchRecords"])
    assert not {r["Id"] for r in everywhere["searchRecords"]} & golf
    # A stray reserved character in q is searched for, not refused (q is a search string, not SOSL).
    assert sf.restful("parameterizedSearch", params={"q": "golf {shoes}", "sobject": "Product2"})["searchRecords"]


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"q": "golf", "dataCategory": "Location__c below Europe__c"}, "dataCategory"),
        ({"q": "golf", "snippet": "Body"}, "snippet"),
        ({"sobject": "Product2"}, "q parameter"),
        ({"q": "golf", "in": "SIDEBAR"}, "in takes"),
        ({"q": "golf", "fields": "Id,Name"}, "at least one sobject"),
        ({"q": "golf", "sobject": "Product2", "Product2.limit": "0"}, "Product2.limit"),
        ({"q": "golf", "sobject": "Product2", "Product2.fields": "Id) RETURNING Case(Id"}, "takes names"),
        ({"q": "golf", "sobject": "Product2", "Case.fields": "Id"}, "not given as sobject"),
        ({"q": "golf", "sobject": "Product2", "sorted": "yes"}, "'sorted'"),
    ],
)
def test_parameterized_search_refuses_what_it_does_not_serve(
    server: OrgServer, params: dict[str, str], said: str
) -> None:
    with pytest.raises(Malformed) as info:
        _sf(server).restful("parameterizedSearch", params=params)
    status, _code, message = _error(info)
    assert status == 400 and said in message


def test_external_id_values_are_decoded_once(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    (key,) = raw.execute('SELECT "External_ID__c" FROM "Product2" WHERE "External_ID__c" IS NOT NULL').fetchone()
    # "%41" is three characters of the value, "/" one: each is sent percent-encoded, once.
    value = f"{key}%41/x"
    assert sf.Product2.upsert(f"External_ID__c/{quote(value, safe='')}", {"Name": "Encoded key"}) == 201
    made = sf.query("SELECT External_ID__c FROM Product2 WHERE Name = 'Encoded key'")["records"]
    assert [r["External_ID__c"] for r in made] == [value]
    assert sf.Product2.get_by_custom_id("External_ID__c", value)["Name"] == "Encoded key"
    # simple-salesforce sends a space as "+" (quote_plus), which Salesforce reads as a plus sign.
    assert sf.Product2.upsert(f"External_ID__c/{key} 2", {"Name": "Spaced key"}) == 201
    with pytest.raises(NotFound):
        sf.Product2.get_by_custom_id("External_ID__c", f"{key} 2")
    assert sf.restful(f"sobjects/Product2/External_ID__c/{quote(f'{key} 2')}")["Name"] == "Spaced key"


def test_query_more_by_locator_and_from_query_all(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    expected = sorted(r[0] for r in raw.execute('SELECT "Id" FROM "Case"'))
    for deleted in (False, True):
        first = sf.query(
            "SELECT Id FROM Case", include_deleted=deleted, headers={"Sforce-Query-Options": "batchSize=500"}
        )
        assert not first["done"] and first["nextRecordsUrl"].startswith(
            "/services/data/v60.0/" + ("queryAll/" if deleted else "query/")
        )
        got = [r["Id"] for r in first["records"]]
        page = first
        while not page["done"]:  # the locator alone, as query_more takes it without identifier_is_url
            page = sf.query_more(page["nextRecordsUrl"].rsplit("/", 1)[1], include_deleted=deleted)
            got += [r["Id"] for r in page["records"]]
        assert sorted(got) == expected


def test_unserved_apis_fail_with_a_message_naming_them(server: OrgServer) -> None:
    sf = _sf(server)
    cases: list[tuple[Any, str]] = [
        (lambda: sf.apexecute("MyService", method="POST", data={"a": 1}), "Apex REST"),
        (lambda: sf.restful("tooling/query", params={"q": "SELECT Id FROM ApexClass"}), "Tooling API"),
        (lambda: sf.oauth2("introspect", method="POST"), "token, revoke and userinfo"),
        (lambda: sf.restful("recent"), "recently viewed"),
        (lambda: sf.restful("search/scopeOrder"), "search/scopeOrder is not served"),
        (lambda: sf.Case.describe_layout("012000000000000AAA"), "describe/layouts"),
        (lambda: sf.set_password(server.hub.user_id, "N3w-secret!"), "password is not served"),
    ]
    for call, said in cases:
        with pytest.raises(NotFound) as info:
            call()
        status, code, message = _error(info)
        assert (status, code) == (404, "NOT_FOUND") and said in message, message
    # apexecute and toolingexecute return the body rather than raise when it is not JSON: it is JSON here.
    # The SOAP APIs answer a SOAP fault, which simple-salesforce's Metadata API client (zeep) raises.
    zeep = pytest.importorskip("zeep")
    with pytest.raises(zeep.exceptions.Fault) as fault:
        sf.mdapi.describe_metadata()
    assert "SOAP APIs" in fault.value.message and "not served" in fault.value.message
    package = io.BytesIO()
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("package.xml", "<Package/>")
    with pytest.raises(NotFound) as info:  # deploy posts to the Metadata API with requests itself
        sf.deploy(package, sandbox=True)
    assert "SOAP APIs" in info.value.content and "<faultcode>" in info.value.content
    # is_sandbox queries Organization, which this org does not have: Salesforce's own refusal of the type.
    with pytest.raises(Malformed) as info:
        sf.is_sandbox()
    assert _error(info)[1] == "INVALID_TYPE" and "Organization" in _error(info)[2]


def test_search_suggestions_match_names_with_the_last_word_as_a_prefix(
    server: OrgServer, raw: sqlite3.Connection
) -> None:
    sf = _sf(server)
    names = dict(raw.execute('SELECT "Id", "Name" FROM "Product2"').fetchall())

    def suggested(name: str) -> bool:  # "pro go" holds "pro" then a word starting "go" (Guide's example)
        words = [w.lower() for w in re.findall(r"[^\W_]+", name)]
        return any(a == "pro" and b.startswith("go") for a, b in itertools.pairwise(words))

    expected = {i for i, n in names.items() if suggested(n)}
    assert 1 < len(expected) < 50
    found = sf.restful("search/suggestions", params={"q": '"pro go*"', "sobject": "Product2", "limit": "50"})
    assert {r["Id"] for r in found["autoSuggestResults"]} == expected and found["hasMoreResults"] is False
    assert all(
        r["Name"] == names[r["Id"]] and r["attributes"]["type"] == "Product2" for r in found["autoSuggestResults"]
    )
    # Five unless a limit is given; hasMoreResults says more matched.
    golf = {i for i, n in names.items() if any(w.lower().startswith("golf") for w in re.findall(r"[^\W_]+", n))}
    assert len(golf) > 5
    first = sf.restful("search/suggestions", params={"q": "golf", "sobject": "Product2", "fields": "IsActive"})
    assert len(first["autoSuggestResults"]) == 5 and first["hasMoreResults"] is True
    assert {r["Id"] for r in first["autoSuggestResults"]} <= golf
    assert all(set(r) == {"attributes", "Id", "Name", "IsActive"} for r in first["autoSuggestResults"])
    # Under three characters suggests nothing; a parameter this org has no use for is refused by name.
    assert sf.restful("search/suggestions", params={"q": "go", "sobject": "Product2"}) == {
        "autoSuggestResults": [],
        "hasMoreResults": False,
    }
    with pytest.raises(Malformed) as info:
        sf.restful("search/suggestions", params={"q": "golf", "sobject": "Product2", "networkId": "0DB000000000001"})
    assert "networkId" in _error(info)[2]
    with pytest.raises(Malformed) as info:
        sf.restful("search/suggestions", params={"q": "golf"})
    assert _error(info)[:2] == (400, "MISSING_ARGUMENT")


def test_bulk_api_1_jobs_through_sf_bulk(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    # insert: each record on its own, answered {"success", "created", "id", "errors"} in order.
    made = sf.bulk.Issue__c.insert(
        [{"Name": f"Bulk1 {i}"} for i in range(5)] + [{"Name": "Bad", "Nope__c": 1}], batch_size=2
    )
    assert [r["success"] for r in made] == [True] * 5 + [False]
    assert all(r["created"] and r["errors"] == [] for r in made[:5])
    assert made[5]["id"] is None and made[5]["errors"][0]["statusCode"] == "INVALID_FIELD"
    ids = [r["id"] for r in made[:5]]
    assert {sf.Issue__c.get(i)["Name"] for i in ids} == {f"Bulk1 {i}" for i in range(5)}
    # update and delete by Id; an id of no record fails alone.
    changed = sf.bulk.Issue__c.update(
        [{"Id": ids[0], "Name": "Bulk1 renamed"}, {"Id": "a1M000000000000AAA", "Name": "x"}]
    )
    assert [r["success"] for r in changed] == [True, False]
    assert sf.Issue__c.get(ids[0])["Name"] == "Bulk1 renamed"
    assert [r["success"] for r in sf.bulk.Issue__c.delete([{"Id": ids[1]}])] == [True]
    assert [r["success"] for r in sf.bulk.Issue__c.hard_delete([{"Id": ids[2]}])] == [True]
    with pytest.raises(NotFound):
        sf.Issue__c.get(ids[1])
    # upsert by an External ID field: an existing key updates that record, a new one creates.
    (product_id, key) = raw.execute(
        'SELECT "Id", "External_ID__c" FROM "Product2" WHERE "External_ID__c" IS NOT NULL ORDER BY "Id" LIMIT 1'
    ).fetchone()
    upserted = sf.bulk.Product2.upsert(
        [{"External_ID__c": key, "Name": "Bulk1 upserted"}, {"External_ID__c": "BULK1-NEW", "Name": "Bulk1 new"}],
        "External_ID__c",
    )
    assert [(r["success"], r["created"]) for r in upserted] == [(True, False), (True, True)]
    assert upserted[0]["id"] == product_id and sf.Product2.get(product_id)["Name"] == "Bulk1 upserted"
    # query and queryAll: the records as Salesforce's JSON results carry them; queryAll sees deleted ones.
    cases = sorted(r[0] for r in raw.execute('SELECT "Id" FROM "Case"'))
    got = sf.bulk.Case.query("SELECT Id FROM Case")
    assert sorted(r["Id"] for r in got) == cases
    assert got[0]["attributes"] == {"type": "Case", "url": f"/services/data/v60.0/sobjects/Case/{got[0]['Id']}"}
    live = {r["Id"] for r in sf.bulk.Issue__c.query("SELECT Id FROM Issue__c WHERE Name LIKE 'Bulk1%'")}
    everything = sf.bulk.Issue__c.query_all("SELECT Id, IsDeleted FROM Issue__c WHERE Name LIKE 'Bulk1%'")
    assert live == {ids[0], *ids[3:]} and {r["Id"] for r in everything} == set(ids)
    assert {r["Id"] for r in everything if r["IsDeleted"]} == {ids[1], ids[2]}
    # A query Bulk queries refuse (aggregates, child subqueries) or a bad one fails its batch, said why.
    for soql, said in [
        ("SELECT COUNT() FROM Case", "Aggregate"),
        ("SELECT Id, (SELECT Id FROM Cases) FROM Account", "Aggregate Relationships"),
        ("SELECT Nope FROM Case", "Nope"),
    ]:
        with pytest.raises(simple_salesforce.exceptions.SalesforceGeneralError) as failed:
            sf.bulk.Case.query(soql) if "Account" not in soql else sf.bulk.Account.query(soql)
        assert said in str(failed.value.content)


def test_bulk_api_1_refusals_in_its_own_error_shape(server: OrgServer) -> None:
    sf = _sf(server)
    url = f"{server.url}/services/async/60.0/job"
    session = {"X-SFDC-Session": sf.session_id}
    csv_job = requests.post(
        url, headers=session, json={"operation": "insert", "object": "Issue__c", "contentType": "CSV"}
    )
    assert csv_job.status_code == 400 and csv_job.json()["exceptionCode"] == "InvalidJob"
    assert "contentType 'CSV' is not served" in csv_job.json()["exceptionMessage"]
    xml_job = requests.post(url, headers={**session, "Content-Type": "application/xml"}, data="<jobInfo/>")
    assert xml_job.status_code == 400 and "XML is not served" in xml_job.json()["exceptionMessage"]
    stranger = requests.get(f"{url}/750000000000000AAA", headers={"X-SFDC-Session": "not-a-session"})
    assert (stranger.status_code, stranger.json()["exceptionCode"]) == (400, "InvalidSessionId")
    with pytest.raises(Malformed) as info:
        sf.bulk.Lead.insert([{"LastName": "Nobody"}])  # a standard object this org answers empty and stores none
    assert "stores no rows" in info.value.content["exceptionMessage"]
    # A closed job takes no more batches.
    job = requests.post(url, headers=session, json={"operation": "insert", "object": "Issue__c", "contentType": "JSON"})
    assert job.status_code == 201 and job.json()["state"] == "Open"
    closed = requests.post(f"{url}/{job.json()['id']}", headers=session, json={"state": "Closed"})
    assert closed.json()["state"] == "Closed"
    late = requests.post(f"{url}/{job.json()['id']}/batch", headers=session, json=[{"Name": "Late"}])
    assert late.status_code == 400 and late.json()["exceptionCode"] == "InvalidJobState"


def test_updated_and_deleted_refuse_a_window_that_is_not_one(server: OrgServer) -> None:
    sf = _sf(server)
    moment = dt.datetime(2025, 7, 29, 12, tzinfo=dt.UTC)
    for start, end in [(moment, moment), (moment, moment - dt.timedelta(hours=1))]:
        for call in (sf.Case.updated, sf.Case.deleted):
            with pytest.raises(Malformed) as info:
                call(start, end)
            assert _error(info)[:2] == (400, "INVALID_REPLICATION_DATE")
    assert sf.Case.updated(moment, moment + dt.timedelta(minutes=5))["ids"] == []


def test_bulk2_results_of_every_kind_and_a_record_of_empty_values(server: OrgServer) -> None:
    sf = _sf(server)
    # One column: simple-salesforce writes the empty Name as '""', a record (not a blank line) that fails.
    (job,) = sf.bulk2.Issue__c.insert(records=[{"Name": "Bulk2 kept"}, {"Name": ""}], wait=0.1)
    assert (job["numberRecordsProcessed"], job["numberRecordsFailed"]) == (2, 1)
    failed = list(csv.DictReader(io.StringIO(sf.bulk2.Issue__c.get_failed_records(job["job_id"]))))
    assert [r["Name"] for r in failed] == [""] and failed[0]["sf__Error"].startswith("REQUIRED_FIELD_MISSING")
    kept = list(csv.DictReader(io.StringIO(sf.bulk2.Issue__c.get_successful_records(job["job_id"]))))
    assert [r["Name"] for r in kept] == ["Bulk2 kept"] and sf.Issue__c.get(kept[0]["sf__Id"])["Name"] == "Bulk2 kept"
    # simple-salesforce asks for unprocessedRecords (the Guide writes unprocessedrecords): both are read.
    assert sf.bulk2.Issue__c.get_unprocessed_records(job["job_id"]).strip() == '"Name"'
    everything = sf.bulk2.Issue__c.get_all_ingest_records(job["job_id"])
    assert (len(everything["successfulRecords"]), len(everything["failedRecords"])) == (1, 1)
    assert everything["unprocessedRecords"] == []


def test_an_empty_text_value_is_null_as_salesforce_stores_it(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    with pytest.raises(Malformed) as info:
        sf.Issue__c.create({"Name": ""})  # the required Name given empty is missing
    assert _error(info)[1] == "REQUIRED_FIELD_MISSING"
    made = sf.Issue__c.create({"Name": "Emptied", "Description__c": "some text"})["id"]
    sf.Issue__c.update(made, {"Description__c": ""})
    assert sf.Issue__c.get(made)["Description__c"] is None
    assert sf.query(f"SELECT COUNT() FROM Issue__c WHERE Id = '{made}' AND Description__c = null")["totalSize"] == 1
    (case_id,) = raw.execute('SELECT "Id" FROM "Case" WHERE "AccountId" IS NOT NULL LIMIT 1').fetchone()
    sf.Case.update(case_id, {"AccountId": ""})  # clearing a lookup with "", as clients do
    assert sf.Case.get(case_id)["AccountId"] is None
    results = sf.bulk.Issue__c.insert([{"Name": ""}])  # Bulk API 1.0 (JSON) likewise
    assert results[0]["errors"][0]["statusCode"] == "REQUIRED_FIELD_MISSING"
