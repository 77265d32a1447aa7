"""Writes to a served B2B and B2C org, driven by simple-salesforce over HTTPS on 127.0.0.1: REST records,
sObject collections, composite trees and Bulk API 2.0 ingest on Pro's objects.

Expectations come from the org file read with plain SQLite and from the rules Salesforce's documentation
states (a line's total is its quantity times its price, less its discount; deleting an opportunity deletes
its products and quotes; allOrNone undoes every record of a request that has a failure), never from the
server's own answers. The org file's bytes are hashed before and after: serving never writes it.
"""

from __future__ import annotations

import csv
import io
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
from tests.org.conftest import file_sha256, small_pro_org  # noqa: E402

TODAY = "2024-01-31"
PASSWORD = "pro-writes"


@pytest.fixture(scope="module", params=["b2b", "b2c"])
def org(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    kind = request.param
    path = small_pro_org(tmp_path_factory.mktemp(kind) / f"{kind}.sqlite", kind, seed=5)
    digest = file_sha256(path)
    yield kind, path
    assert file_sha256(path) == digest  # served writes live in sessions, never in the file


@pytest.fixture(scope="module")
def server(org: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[OrgServer]:
    hub = SessionHub(org[1], password=PASSWORD, today=TODAY)
    with OrgServer(hub, cert_dir=tmp_path_factory.mktemp("cert")) as running, pytest.MonkeyPatch.context() as mp:
        mp.setenv("REQUESTS_CA_BUNDLE", str(running.cert))
        yield running


@pytest.fixture
def raw(org: tuple[str, Path]) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(org[1].as_uri() + "?mode=ro", uri=True)
    yield conn
    conn.close()


@pytest.fixture
def sf(server: OrgServer) -> Any:
    """A client with a session of its own (a new token: a new session, which sees none of the others' writes)."""
    r = requests.post(
        f"{server.url}/services/oauth2/token",
        data={"grant_type": "password", "client_id": "x", "username": "rep@example.com", "password": PASSWORD},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return simple_salesforce.Salesforce(instance_url=server.url, session_id=r.json()["access_token"], version="60.0")


def _error(call: Any) -> str:
    with pytest.raises(simple_salesforce.exceptions.SalesforceError) as info:
        call()
    content = info.value.content
    return content[0]["errorCode"] if isinstance(content, list) else str(content)


def _count(sf: Any, soql: str) -> int:
    return int(sf.query(soql)["totalSize"])


def test_records_of_pro_objects_over_rest(org: tuple[str, Path], sf: Any, raw: sqlite3.Connection) -> None:
    kind = org[0]
    account = raw.execute("SELECT Id FROM Account ORDER BY Id LIMIT 1").fetchone()[0]
    entry, price, product, book = raw.execute(
        "SELECT Id, UnitPrice, Product2Id, Pricebook2Id FROM PricebookEntry ORDER BY Id LIMIT 1"
    ).fetchone()
    made = sf.Opportunity.create(
        {"Name": "Showroom deal", "StageName": "Quote", "CloseDate": "2024-02-28", "AccountId": account}
    )
    assert made["success"] and made["id"][:5] == "006" + account[3:5]
    opp = made["id"]
    line = sf.OpportunityLineItem.create(
        {"OpportunityId": opp, "PricebookEntryId": entry, "Quantity": 2, "UnitPrice": 75}
    )
    got = sf.OpportunityLineItem.get(line["id"])
    assert (got["TotalPrice"], got["ListPrice"], got["Product2Id"]) == (150.0, price, product)
    read = sf.Opportunity.get(opp)
    assert (read["Amount"], read["Pricebook2Id"], read["Probability"]) == (150.0, book, 50.0)
    quote = sf.Quote.create({"Name": "Showroom quote", "OpportunityId": opp})["id"]
    sf.QuoteLineItem.create(
        {"QuoteId": quote, "PricebookEntryId": entry, "Quantity": 4, "UnitPrice": 50, "Discount": 25}
    )
    assert (sf.Quote.get(quote)["TotalPrice"], sf.Quote.get(quote)["AccountId"]) == (150.0, account)
    # Leads and tasks: created, changed, deleted; refusals carry Salesforce's error codes.
    lead = sf.Lead.create({"LastName": "Ibarra", "Company": "Ibarra Family", "State": "TX"})["id"]
    sf.Lead.update(lead, {"Status": "Working - Contacted", "Rating": "Hot"})
    assert (sf.Lead.get(lead)["Status"], sf.Lead.get(lead)["IsConverted"]) == ("Working - Contacted", False)
    assert _error(lambda: sf.Lead.update(lead, {"IsConverted": True})) == "INVALID_FIELD_FOR_INSERT_UPDATE"
    assert _error(lambda: sf.Lead.create({"Company": "No Name Inc"})) == "REQUIRED_FIELD_MISSING"
    assert _error(lambda: sf.Lead.update(lead, {"Status": "Converted"})) == "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"
    task = sf.Task.create({"Subject": "Follow up", "WhatId": opp, "WhoId": lead})["id"]
    assert (sf.Task.get(task)["AccountId"], sf.Task.get(task)["Status"]) == (account, "Not Started")
    sf.Task.update(task, {"Status": "Completed"})
    assert _count(sf, f"SELECT COUNT() FROM Task WHERE Id = '{task}' AND IsClosed = true") == 1
    sf.Lead.delete(lead)  # its task goes with it
    assert _count(sf, f"SELECT COUNT() FROM Task WHERE Id = '{task}'") == 0
    # Deleting the opportunity deletes its products, quotes and their lines: queryAll finds them deleted.
    sf.Opportunity.delete(opp)
    for name, field, parent in (
        ("OpportunityLineItem", "OpportunityId", opp),
        ("Quote", "OpportunityId", opp),
        ("QuoteLineItem", "QuoteId", quote),
    ):
        assert _count(sf, f"SELECT COUNT() FROM {name} WHERE {field} = '{parent}'") == 0
        every = sf.query_all(f"SELECT Id, IsDeleted FROM {name} WHERE {field} = '{parent}'", include_deleted=True)
        assert every["totalSize"] == 1 and every["records"][0]["IsDeleted"] is True
    # Describe says what a write may do.
    fields = {f["name"]: f for f in sf.Lead.describe()["fields"]}
    assert not fields["IsConverted"]["createable"] and not fields["ConvertedAccountId"]["updateable"]
    assert fields["Status"]["defaultedOnCreate"] and fields["LastName"]["nillable"] is False
    assert fields["Company"]["nillable"] is (kind == "b2c")


def test_served_describe_and_writes_keep_salesforces_lengths(sf: Any, raw: sqlite3.Connection) -> None:
    # The Salesforce Field Reference (Summer '26): Task.Priority is a picklist of 20, Contract.Status one of 100,
    # Account.Website a url of 255 (a string to SOQL and to Apex), Territory2.Description a string of 1,000.
    task = {f["name"]: f for f in sf.Task.describe()["fields"]}
    account = {f["name"]: f for f in sf.Account.describe()["fields"]}
    contract = {f["name"]: f for f in sf.Contract.describe()["fields"]}
    territory = {f["name"]: f for f in sf.Territory2.describe()["fields"]}
    assert (task["Priority"]["type"], task["Priority"]["length"]) == ("picklist", 20)
    assert (contract["Status"]["type"], contract["Status"]["length"]) == ("picklist", 100)
    assert (account["Website"]["type"], account["Website"]["length"], account["Website"]["soapType"]) == (
        "url",
        255,
        "xsd:string",
    )
    assert (territory["Description"]["type"], territory["Description"]["length"]) == ("string", 1000)
    (task_id, priority) = raw.execute("SELECT Id, Priority FROM Task ORDER BY Id LIMIT 1").fetchone()
    for value, code in (("x" * 21, "STRING_TOO_LONG"), ("x" * 20, "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST")):
        assert _error(lambda value=value: sf.Task.update(task_id, {"Priority": value})) == code
    assert _error(lambda: sf.Task.create({"Subject": "Too urgent", "Priority": "U" * 21})) == "STRING_TOO_LONG"
    assert sf.Task.get(task_id)["Priority"] == priority  # refused: unchanged
    (account_id,) = raw.execute("SELECT Id FROM Account ORDER BY Id LIMIT 1").fetchone()
    assert _error(lambda: sf.Account.update(account_id, {"Website": "w" * 256})) == "STRING_TOO_LONG"
    sf.Account.update(account_id, {"Website": "www.quartz-labs.example.com"})
    found = sf.query("SELECT Id FROM Account WHERE Website LIKE '%quartz-labs%'")["records"]
    assert [r["Id"] for r in found] == [account_id]


def test_collections_and_trees_of_pro_objects(sf: Any, raw: sqlite3.Connection) -> None:
    opp, book = raw.execute(
        "SELECT Id, Pricebook2Id FROM Opportunity WHERE Pricebook2Id IS NOT NULL ORDER BY Id LIMIT 1"
    ).fetchone()
    entries = raw.execute(
        "SELECT Id FROM PricebookEntry WHERE Pricebook2Id = ? ORDER BY Id LIMIT 2", (book,)
    ).fetchall()
    (lines,) = raw.execute("SELECT COUNT(*) FROM OpportunityLineItem WHERE OpportunityId = ?", (opp,)).fetchone()
    (amount,) = raw.execute(
        "SELECT TOTAL(TotalPrice) FROM OpportunityLineItem WHERE OpportunityId = ?", (opp,)
    ).fetchone()

    def record(entry: str, quantity: object) -> dict[str, Any]:
        return {
            "attributes": {"type": "OpportunityLineItem"},
            "OpportunityId": opp,
            "PricebookEntryId": entry,
            "Quantity": quantity,
            "UnitPrice": 10,
        }

    # allOrNone: one bad record (a quantity that is no number) undoes the good one.
    bad = {"allOrNone": True, "records": [record(entries[0][0], 1), record(entries[1][0], "two")]}
    answer = sf.restful("composite/sobjects", method="POST", json=bad)
    assert [r["success"] for r in answer] == [False, False]
    assert answer[0]["errors"][0]["statusCode"] == "ALL_OR_NONE_OPERATION_ROLLED_BACK"
    assert answer[1]["errors"][0]["statusCode"] == "JSON_PARSER_ERROR"
    assert _count(sf, f"SELECT COUNT() FROM OpportunityLineItem WHERE OpportunityId = '{opp}'") == lines
    good = {"allOrNone": True, "records": [record(entries[0][0], 1), record(entries[1][0], 2)]}
    assert all(r["success"] for r in sf.restful("composite/sobjects", method="POST", json=good))
    assert sf.Opportunity.get(opp)["Amount"] == pytest.approx(amount + 30)
    # A tree: an opportunity with its products nested under the child relationship, linked by the server.
    account = raw.execute("SELECT Id FROM Account ORDER BY Id DESC LIMIT 1").fetchone()[0]
    tree = {
        "records": [
            {
                "attributes": {"type": "Opportunity", "referenceId": "opp"},
                "Name": "Tree deal",
                "StageName": "Qualification",
                "CloseDate": "2024-04-30",
                "AccountId": account,
                "OpportunityLineItems": {
                    "records": [
                        {
                            "attributes": {"type": "OpportunityLineItem", "referenceId": f"line{i}"},
                            "PricebookEntryId": entries[i][0],
                            "Quantity": i + 1,
                            "TotalPrice": 100 * (i + 1),
                        }
                        for i in range(2)
                    ]
                },
            }
        ]
    }
    made = sf.restful("composite/tree/Opportunity", method="POST", json=tree)
    ids = {r["referenceId"]: r["id"] for r in made["results"]}
    assert made["hasErrors"] is False and set(ids) == {"opp", "line0", "line1"}
    created = sf.Opportunity.get(ids["opp"])
    assert (created["Amount"], created["Probability"]) == (300.0, 10.0)
    assert {
        r["Id"] for r in sf.query(f"SELECT Id FROM OpportunityLineItem WHERE OpportunityId = '{ids['opp']}'")["records"]
    } == {
        ids["line0"],
        ids["line1"],
    }
    # Deleting a collection of tasks by id: each in the recycle bin.
    what = sf.Task.create({"Subject": "One", "WhatId": ids["opp"]})["id"]
    other = sf.Task.create({"Subject": "Two", "WhatId": ids["opp"]})["id"]
    gone = sf.restful(f"composite/sobjects?ids={what},{other}", method="DELETE")
    assert [r["success"] for r in gone] == [True, True]
    # (query_all counts the records it fetched: Id, not COUNT().)
    binned = sf.query_all(f"SELECT Id, IsDeleted FROM Task WHERE WhatId = '{ids['opp']}'", include_deleted=True)
    assert {(r["Id"], r["IsDeleted"]) for r in binned["records"]} == {(what, True), (other, True)}


def test_bulk_ingest_of_pro_objects(org: tuple[str, Path], sf: Any, raw: sqlite3.Connection) -> None:
    (before,) = raw.execute("SELECT COUNT(*) FROM Lead").fetchone()
    rows = [{"LastName": f"Bulk {i}", "Company": f"Bulk Co {i}", "State": "NY"} for i in range(12)]
    rows.append({"LastName": "", "Company": "Nameless", "State": "NY"})  # REQUIRED_FIELD_MISSING for this row only
    result = sf.bulk2.Lead.insert(records=rows, wait=0.1)
    assert [(r["numberRecordsProcessed"], r["numberRecordsFailed"]) for r in result] == [(13, 1)]
    job = result[0]["job_id"]
    ok = list(csv.DictReader(io.StringIO(sf.bulk2.Lead.get_successful_records(job))))
    failed = list(csv.DictReader(io.StringIO(sf.bulk2.Lead.get_failed_records(job))))
    assert len(ok) == 12 and failed[0]["sf__Error"].startswith("REQUIRED_FIELD_MISSING")
    assert _count(sf, "SELECT COUNT() FROM Lead") == before + 12
    made = sf.query("SELECT Status, IsConverted, OwnerId FROM Lead WHERE LastName = 'Bulk 3'")["records"][0]
    (first_user,) = raw.execute('SELECT MIN(Id) FROM "User"').fetchone()
    assert (made["Status"], made["IsConverted"], made["OwnerId"]) == ("Open - Not Contacted", False, first_user)
    # Upsert products by their External ID: the file's product is updated, a new key creates one.
    key, product = raw.execute(
        "SELECT External_ID__c, Id FROM Product2 WHERE External_ID__c IS NOT NULL ORDER BY Id LIMIT 1"
    ).fetchone()
    upserted = sf.bulk2.Product2.upsert(
        records=[
            {"External_ID__c": key, "Description": "Bulk-updated"},
            {"External_ID__c": "NEW-KEY-1", "Name": "New"},
        ],
        external_id_field="External_ID__c",
        wait=0.1,
    )
    assert (upserted[0]["numberRecordsProcessed"], upserted[0]["numberRecordsFailed"]) == (2, 0)
    assert sf.Product2.get(product)["Description"] == "Bulk-updated"
    assert _count(sf, "SELECT COUNT() FROM Product2 WHERE External_ID__c = 'NEW-KEY-1'") == 1
    # Deletes by id: the leads' records go to the recycle bin.
    deleted = sf.bulk2.Lead.delete(records=[{"Id": r["sf__Id"]} for r in ok[:4]], wait=0.1)
    assert (deleted[0]["numberRecordsProcessed"], deleted[0]["numberRecordsFailed"]) == (4, 0)
    assert _count(sf, "SELECT COUNT() FROM Lead") == before + 8
