"""The resources clients call (issue 34, item 2), driven by simple-salesforce over HTTPS on 127.0.0.1.

Each expectation is taken from Salesforce's REST API Developer Guide (resource shapes, status codes, error
codes) and the original org file read with plain SQLite, never from the server's own answers.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import sqlite3
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
PASSWORD = "resources"
# Salesforce's session id as the Salesforce CLI checks it (sf org login access-token): the org id, "!", opaque.
SESSION_ID = re.compile(r"^00D\w{12,15}![.\w]*$")


@pytest.fixture(scope="module")
def server(org_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OrgServer]:
    hub = SessionHub(org_path, password=PASSWORD, today=TODAY)
    with OrgServer(hub, cert_dir=tmp_path_factory.mktemp("cert")) as running, pytest.MonkeyPatch.context() as mp:
        mp.setenv("REQUESTS_CA_BUNDLE", str(running.cert))
        yield running


def _token(server: OrgServer) -> dict[str, Any]:
    r = requests.post(
        f"{server.url}/services/oauth2/token",
        data={"grant_type": "password", "client_id": "x", "username": "agent@example.com", "password": PASSWORD},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return r.json()


def _sf(server: OrgServer, version: str = "60.0") -> Any:
    return simple_salesforce.Salesforce(
        instance_url=server.url, session_id=_token(server)["access_token"], version=version
    )


def _bearer(sf: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {sf.session_id}"}


def test_tokens_userinfo_and_the_identity_url(server: OrgServer, raw: sqlite3.Connection) -> None:
    granted = _token(server)
    assert SESSION_ID.match(granted["access_token"]) and granted["token_type"] == "Bearer"
    org_id = granted["access_token"].split("!")[0]
    # The API user is the org's first user; the identity URL is /id/ORG_ID/USER_ID (18 characters each).
    user_id, username, email = raw.execute(
        'SELECT "Id", "Username", "Email" FROM "User" ORDER BY "Id" LIMIT 1'
    ).fetchone()
    assert granted["id"] == f"{server.url}/id/{granted['id'].split('/')[-2]}/{user_id}"
    headers = {"Authorization": f"Bearer {granted['access_token']}"}
    info = requests.get(f"{server.url}/services/oauth2/userinfo", headers=headers, timeout=30).json()
    assert (info["user_id"], info["preferred_username"], info["email"]) == (user_id, username, email)
    assert info["organization_id"][:15] == org_id and info["sub"] == granted["id"]
    assert info["urls"]["rest"].endswith("/services/data/v{version}/")  # the identity service's placeholders
    identity = requests.get(granted["id"], headers=headers, timeout=30).json()
    assert (identity["user_id"], identity["username"], identity["organization_id"]) == (
        user_id,
        username,
        info["organization_id"],
    )
    assert requests.get(f"{server.url}/services/oauth2/userinfo", timeout=30).status_code in (401, 403)


def test_every_api_version_salesforce_serves(server: OrgServer) -> None:
    # API End-of-Life Policy: 31.0 to 68.0 are served; 21.0 to 30.0 answer 410 GONE since Summer '25.
    listed = requests.get(f"{server.url}/services/data/", timeout=30).json()
    assert [v["version"] for v in listed] == [f"{n}.0" for n in range(31, 69)]
    labels = {v["version"]: v["label"] for v in listed}
    assert (labels["31.0"], labels["32.0"], labels["33.0"]) == ("Summer '14", "Winter '15", "Spring '15")
    assert all(v["url"] == f"/services/data/v{v['version']}" for v in listed)
    newest = _sf(server, "68.0")
    record = newest.query("SELECT Id FROM Case LIMIT 1")["records"][0]
    assert record["attributes"]["url"] == f"/services/data/v68.0/sobjects/Case/{record['Id']}"  # in the version asked
    assert requests.get(f"{server.url}/services/data/v30.0/", headers=_bearer(newest), timeout=30).status_code == 410
    # Sforce-Limit-Info: api-usage=used/allowed on every response (simple-salesforce reads it into api_usage).
    before = newest.api_usage["api-usage"].used
    newest.query("SELECT COUNT() FROM Case")
    assert newest.api_usage["api-usage"].used > before and newest.api_usage["api-usage"].total > 0


def test_query_columns_describe_what_the_query_selects(server: OrgServer) -> None:
    sf = _sf(server)
    soql = "SELECT Id, Subject, Owner.Name, (SELECT Id, Subject FROM EmailMessages) FROM Case"
    columns = sf.restful("query", params={"q": soql, "columns": "true"})
    assert (columns["entityName"], columns["keyPrefix"], columns["idSelected"], columns["groupBy"]) == (
        "Case",
        "500",
        True,
        False,
    )
    meta = columns["columnMetadata"]
    assert [c["columnName"] for c in meta] == ["Id", "Subject", "Owner", "EmailMessages"]
    assert [c["columnName"] for c in meta[2]["joinColumns"]] == ["Name"] and not meta[2]["aggregate"]
    assert meta[3]["aggregate"] and [c["columnName"] for c in meta[3]["joinColumns"]] == ["Id", "Subject"]
    assert meta[1]["textType"] and meta[1]["updatable"] and not meta[0]["updatable"]
    grouped = sf.restful(
        "query", params={"q": "SELECT COUNT(Id), Status s FROM Case GROUP BY Status", "columns": "true"}
    )
    assert grouped["groupBy"] and [
        (c["columnName"], c["displayName"], c["aggregate"]) for c in grouped["columnMetadata"]
    ] == [
        ("expr0", "COUNT(Id)", True),
        ("s", "Status", False),
    ]
    with pytest.raises(simple_salesforce.exceptions.SalesforceMalformedRequest) as info:
        sf.restful("query", params={"q": "SELECT Nope FROM Case", "columns": "true"})
    assert info.value.content[0]["errorCode"] == "INVALID_FIELD"


def test_query_all_returns_deleted_records(server: OrgServer) -> None:
    sf = _sf(server)
    made = sf.Issue__c.create({"Name": "Recycled issue"})["id"]
    sf.Issue__c.delete(made)
    soql = "SELECT Id, IsDeleted FROM Issue__c WHERE Name = 'Recycled issue'"
    assert sf.query_all(soql)["totalSize"] == 0
    everything = sf.query_all(soql, include_deleted=True)["records"]
    assert [(r["Id"], r["IsDeleted"]) for r in everything] == [(made, True)]


def test_composite_with_references_and_all_or_none(server: OrgServer) -> None:
    sf = _sf(server)
    base = "/services/data/v60.0"
    request = {
        "allOrNone": True,
        "compositeRequest": [
            {"method": "POST", "url": f"{base}/sobjects/Account", "referenceId": "acct", "body": {"LastName": "Ref"}},
            {
                "method": "POST",
                "url": f"{base}/sobjects/Contact",
                "referenceId": "person",
                "body": {"LastName": "Referee", "AccountId": "@{acct.id}"},
            },
            {
                "method": "GET",
                "url": f"{base}/query?q=SELECT+Id,AccountId+FROM+Contact+WHERE+Id='@{{person.id}}'",
                "referenceId": "found",
            },
            {
                "method": "GET",
                "url": f"{base}/sobjects/Contact/@{{found.records[0].Id}}?fields=LastName",
                "referenceId": "read",
            },
        ],
    }
    answers = sf.restful("composite", method="POST", json=request)["compositeResponse"]
    assert [a["httpStatusCode"] for a in answers] == [201, 201, 200, 200]
    assert [a["referenceId"] for a in answers] == ["acct", "person", "found", "read"]
    assert answers[2]["body"]["records"][0]["AccountId"] == answers[0]["body"]["id"]
    assert answers[3]["body"]["LastName"] == "Referee"
    assert answers[0]["httpHeaders"]["Location"] == f"{base}/sobjects/Account/{answers[0]['body']['id']}"
    # allOrNone: one subrequest fails, everything is rolled back and the others answer 400 PROCESSING_HALTED.
    failing = {
        "allOrNone": True,
        "compositeRequest": [
            {
                "method": "POST",
                "url": f"{base}/sobjects/Issue__c",
                "referenceId": "one",
                "body": {"Name": "Rolled back"},
            },
            {"method": "POST", "url": f"{base}/sobjects/Issue__c", "referenceId": "two", "body": {}},
            {
                "method": "POST",
                "url": f"{base}/sobjects/Issue__c",
                "referenceId": "three",
                "body": {"Name": "Never run"},
            },
        ],
    }
    answers = sf.restful("composite", method="POST", json=failing)["compositeResponse"]
    assert [a["httpStatusCode"] for a in answers] == [400, 400, 400]
    assert [a["body"][0]["errorCode"] for a in answers] == [
        "PROCESSING_HALTED",
        "REQUIRED_FIELD_MISSING",
        "PROCESSING_HALTED",
    ]
    assert sf.query("SELECT COUNT() FROM Issue__c WHERE Name IN ('Rolled back', 'Never run')")["totalSize"] == 0
    # Without allOrNone the others stand; one naming the failed one's result cannot run.
    failing["allOrNone"] = False
    failing["compositeRequest"][2]["body"] = {"Name": "@{two.id}"}
    answers = sf.restful("composite", method="POST", json=failing)["compositeResponse"]
    assert [a["httpStatusCode"] for a in answers] == [201, 400, 400]
    assert answers[2]["body"][0]["errorCode"] == "PROCESSING_HALTED"
    assert sf.query("SELECT COUNT() FROM Issue__c WHERE Name = 'Rolled back'")["totalSize"] == 1


def test_composite_batch_and_tree(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    (case_id,) = raw.execute('SELECT "Id" FROM "Case" LIMIT 1').fetchone()
    batch = {
        "batchRequests": [
            {"method": "GET", "url": f"v60.0/sobjects/Case/{case_id}?fields=Id"},
            {"method": "PATCH", "url": f"v60.0/sobjects/Case/{case_id}", "richInput": {"Status": "Dancing"}},
            {"method": "GET", "url": "v60.0/limits"},
        ],
        "haltOnError": True,
    }
    answer = sf.restful("composite/batch", method="POST", json=batch)
    assert answer["hasErrors"] is True
    assert [r["statusCode"] for r in answer["results"]] == [200, 400, 412]
    assert answer["results"][1]["result"][0]["errorCode"] == "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"
    assert answer["results"][2]["result"][0]["errorCode"] == "BATCH_PROCESSING_HALTED"
    tree = {
        "records": [
            {
                "attributes": {"type": "Account", "referenceId": "family"},
                "LastName": "Treeson",
                "Contacts": {
                    "records": [
                        {
                            "attributes": {"type": "Contact", "referenceId": "kid1"},
                            "LastName": "Treeson",
                            "FirstName": "Ann",
                        },
                        {
                            "attributes": {"type": "Contact", "referenceId": "kid2"},
                            "LastName": "Treeson",
                            "FirstName": "Bo",
                        },
                    ]
                },
            }
        ]
    }
    made = sf.restful("composite/tree/Account", method="POST", json=tree)
    assert made["hasErrors"] is False
    ids = {r["referenceId"]: r["id"] for r in made["results"]}
    assert set(ids) == {"family", "kid1", "kid2"}
    kids = sf.query(f"SELECT Id FROM Contact WHERE AccountId = '{ids['family']}'")["records"]
    assert sorted(k["Id"] for k in kids) == sorted([ids["kid1"], ids["kid2"]])
    tree["records"][0]["Contacts"]["records"][1].pop("LastName")  # a required field missing: nothing is created
    with pytest.raises(simple_salesforce.exceptions.SalesforceMalformedRequest) as info:
        sf.restful("composite/tree/Account", method="POST", json=tree)
    assert info.value.content["hasErrors"] is True
    assert info.value.content["results"][0]["referenceId"] == "kid2"
    assert info.value.content["results"][0]["errors"][0]["statusCode"] == "REQUIRED_FIELD_MISSING"
    assert sf.query("SELECT COUNT() FROM Account WHERE LastName = 'Treeson'")["totalSize"] == 1


def test_upsert_by_external_id(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    (product_id, key) = raw.execute(
        'SELECT "Id", "External_ID__c" FROM "Product2" WHERE "External_ID__c" IS NOT NULL LIMIT 1'
    ).fetchone()
    # PATCH sobjects/X/ExternalIdField/value: 201 when it creates, 200 (API 46.0 and later) when it updates.
    assert sf.Product2.upsert(f"External_ID__c/{key}", {"Name": "Renamed by upsert"}) == 200
    assert sf.Product2.get(product_id)["Name"] == "Renamed by upsert"
    assert sf.Product2.upsert("External_ID__c/SKU-NEW-34", {"Name": "Made by upsert"}) == 201
    made = sf.Product2.get_by_custom_id("External_ID__c", "SKU-NEW-34")
    assert made["Name"] == "Made by upsert" and made["Id"] != product_id
    with pytest.raises(simple_salesforce.exceptions.SalesforceResourceNotFound) as info:
        sf.Product2.upsert("Name/Kite", {"Name": "Kite"})  # not an External ID field
    assert info.value.content[0]["errorCode"] == "NOT_FOUND"


def test_collections_take_a_lowercase_id_and_refuse_an_id_on_create(server: OrgServer) -> None:
    sf = _sf(server)
    issue = {"attributes": {"type": "Issue__c"}}
    made = sf.restful("composite/sobjects", method="POST", json={"records": [{**issue, "Name": "Lowercase id"}]})
    new_id = made[0]["id"]
    # PATCH composite/sobjects with "id" (as Salesforce's examples and jsforce write it).
    updated = sf.restful(
        "composite/sobjects", method="PATCH", json={"records": [{**issue, "id": new_id, "Name": "Renamed"}]}
    )
    assert updated == [{"id": new_id, "success": True, "errors": []}]
    assert sf.Issue__c.get(new_id)["Name"] == "Renamed"
    refused = sf.restful(
        "composite/sobjects", method="POST", json={"records": [{**issue, "Id": new_id, "Name": "Again"}]}
    )
    assert refused[0]["success"] is False
    assert refused[0]["errors"][0]["statusCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"


def test_updated_and_deleted_over_a_window(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    (case_id,) = raw.execute('SELECT "Id" FROM "Case" ORDER BY "Id" DESC LIMIT 1').fetchone()
    sf.Case.update(case_id, {"Priority": "High"})
    gone = sf.Issue__c.create({"Name": "Deleted in the window"})["id"]
    sf.Issue__c.delete(gone)
    start = dt.datetime(2025, 7, 29, tzinfo=dt.UTC)
    end = dt.datetime(2025, 7, 30, tzinfo=dt.UTC)
    assert case_id in sf.Case.updated(start, end)["ids"]
    deleted = sf.Issue__c.deleted(start, end)
    assert [r["id"] for r in deleted["deletedRecords"]] == [gone]
    assert deleted["deletedRecords"][0]["deletedDate"].startswith("2025-07-29T")
    assert {"earliestDateAvailable", "latestDateCovered"} <= set(deleted)
    assert sf.Case.updated(start - dt.timedelta(days=3), start - dt.timedelta(days=2))["ids"] == []
    with pytest.raises(simple_salesforce.exceptions.SalesforceResourceNotFound) as info:
        sf.restful("sobjects/Case/listviews")
    assert info.value.content[0]["errorCode"] == "NOT_FOUND"


def test_bulk_api_2_ingest_and_query_jobs(server: OrgServer, raw: sqlite3.Connection) -> None:
    sf = _sf(server)
    rows = [{"Name": f"Bulk issue {i}", "Description__c": f"row {i}"} for i in range(25)]
    rows.append({"Name": "", "Description__c": "no name"})  # REQUIRED_FIELD_MISSING for this row only
    result = sf.bulk2.Issue__c.insert(records=rows, wait=0.1)
    assert [(r["numberRecordsProcessed"], r["numberRecordsFailed"]) for r in result] == [(26, 1)]
    job = result[0]["job_id"]
    ok = list(csv.DictReader(io.StringIO(sf.bulk2.Issue__c.get_successful_records(job))))
    assert len(ok) == 25 and all(r["sf__Created"] == "true" for r in ok)
    failed = list(csv.DictReader(io.StringIO(sf.bulk2.Issue__c.get_failed_records(job))))
    assert [r["Description__c"] for r in failed] == ["no name"] and failed[0]["sf__Error"].startswith(
        "REQUIRED_FIELD_MISSING"
    )
    assert sf.query("SELECT COUNT() FROM Issue__c WHERE Name LIKE 'Bulk issue %'")["totalSize"] == 25
    # A query job: CSV pages of maxRecords, the Sforce-Locator header until "null".
    pages = list(
        sf.bulk2.Issue__c.query(
            "SELECT Id, Name FROM Issue__c WHERE Name LIKE 'Bulk issue %'", max_records=10, wait=0.1
        )
    )
    records = [r for page in pages for r in csv.DictReader(io.StringIO(page))]
    assert len(pages) == 3 and sorted(r["Name"] for r in records) == sorted(r["Name"] for r in rows[:25])
    assert {r["Id"] for r in records} == {r["sf__Id"] for r in ok}
    (count,) = raw.execute('SELECT COUNT(*) FROM "Issue__c"').fetchone()
    everything = list(sf.bulk2.Issue__c.query("SELECT Id FROM Issue__c", wait=0.1))
    assert sum(1 for page in everything for _ in csv.DictReader(io.StringIO(page))) == count + 25
    # Deletes by Id (a job of one column).
    deleted = sf.bulk2.Issue__c.delete(records=[{"Id": r["sf__Id"]} for r in ok[:5]], wait=0.1)
    assert (deleted[0]["numberRecordsProcessed"], deleted[0]["numberRecordsFailed"]) == (5, 0)
    assert sf.query("SELECT COUNT() FROM Issue__c WHERE Name LIKE 'Bulk issue %'")["totalSize"] == 20
