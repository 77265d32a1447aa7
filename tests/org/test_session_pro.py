"""Writes to CRMArena-Pro's B2B and B2C orgs through ``OrgSession``, with Salesforce's write semantics.

Every expectation comes from the org file read with plain SQLite (the records a cascade must reach, the
prices of a price book entry, the accounts of an opportunity) and from the rules the Object Reference
states (a line's total is its quantity times its sales price, less its discount; a stage sets the
probability PRO.md pins; deleting an opportunity deletes its products, quotes and activities), never from
the session's own answers. The org file is never written: its bytes are hashed before and after.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from crmarena_gym.org import LocalOrg, OrgError, OrgSession
from crmarena_gym.schema import Field, FieldType, make_id, org_schema, quote_identifier
from tests.org.conftest import file_sha256, small_pro_org

TODAY = "2024-01-31"
# PRO.md's stages and the probability each stands for (Salesforce sets it from the stage).
PROBABILITY = {"Qualification": 10.0, "Discovery": 25.0, "Quote": 50.0, "Negotiation": 75.0, "Closed": 100.0}


@pytest.fixture(scope="module", params=["b2b", "b2c"])
def org(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, str]]:
    kind = request.param
    path = small_pro_org(tmp_path_factory.mktemp(kind) / f"{kind}.sqlite", kind, seed=4)
    digest = file_sha256(path)
    yield kind, path, digest
    assert file_sha256(path) == digest  # no session ever wrote to the file


@pytest.fixture
def raw(org: tuple[str, Path, str]) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(org[1].as_uri() + "?mode=ro", uri=True)
    yield conn
    conn.close()


@pytest.fixture
def session(org: tuple[str, Path, str]) -> Iterator[OrgSession]:
    s = OrgSession(LocalOrg(org[1], today=TODAY))
    yield s
    s.drop()
    assert file_sha256(org[1]) == org[2]


def raw_path(raw: sqlite3.Connection) -> Path:
    """The file ``raw`` reads."""
    return Path(raw.execute("PRAGMA database_list").fetchone()[2])


def _one(raw: sqlite3.Connection, sql: str, *args: object) -> object:
    row = raw.execute(sql, args).fetchone()
    assert row is not None, sql
    return row[0]


def _ids(raw: sqlite3.Connection, sql: str, *args: object) -> set[str]:
    return {r[0] for r in raw.execute(sql, args)}


def _code(call: object) -> str:
    with pytest.raises(OrgError) as info:
        call()  # type: ignore[operator]
    return info.value.code


def _deleted(session: OrgSession, sobject: str) -> set[str]:
    """The ids of ``sobject`` in the session's recycle bin (queryAll)."""
    soql = f"SELECT Id FROM {sobject} WHERE IsDeleted = true"
    return {r["Id"] for r in session.query(soql, include_deleted=True)["records"]}


def test_an_opportunity_its_products_and_its_amount(session: OrgSession, raw: sqlite3.Connection) -> None:
    account = str(_one(raw, "SELECT Id FROM Account ORDER BY Id LIMIT 1"))
    entries = raw.execute(
        "SELECT Id, UnitPrice, Product2Id, Pricebook2Id FROM PricebookEntry ORDER BY Id LIMIT 2"
    ).fetchall()
    opp = session.create(
        "Opportunity",
        {"Name": "Fleet renewal", "StageName": "Discovery", "CloseDate": "2024-03-01", "AccountId": account},
    )
    assert opp[:3] == "006" and opp[3:5] == account[3:5]  # the kind's own instance marker, as the file's ids
    made = session.get("Opportunity", opp, ["Probability", "OwnerId", "CreatedDate", "IsClosed", "Pricebook2Id"])
    first_user = _one(raw, 'SELECT MIN(Id) FROM "User"')
    assert made["Probability"] == PROBABILITY["Discovery"] and made["OwnerId"] == first_user
    assert made["CreatedDate"] == f"{TODAY}T00:00:00.000+0000" and made["IsClosed"] is False
    assert made["Pricebook2Id"] is None
    # A line by sales price, a line by total price: the other follows from the quantity.
    by_unit = session.create(
        "OpportunityLineItem",
        {"OpportunityId": opp, "PricebookEntryId": entries[0][0], "Quantity": 3, "UnitPrice": 1250.5},
    )
    by_total = session.create(
        "OpportunityLineItem",
        {"OpportunityId": opp, "PricebookEntryId": entries[1][0], "Quantity": 4, "TotalPrice": 1000},
    )
    lines = {
        r["Id"]: r
        for r in session.query(
            "SELECT Id, UnitPrice, TotalPrice, ListPrice, Product2Id FROM OpportunityLineItem "
            f"WHERE OpportunityId = '{opp}'"
        )["records"]
    }
    assert (lines[by_unit]["TotalPrice"], lines[by_total]["UnitPrice"]) == (3 * 1250.5, 250.0)
    assert [(lines[i]["ListPrice"], lines[i]["Product2Id"]) for i in (by_unit, by_total)] == [e[1:3] for e in entries]
    after = session.get("Opportunity", opp, ["Amount", "Pricebook2Id"])
    assert after["Amount"] == 3 * 1250.5 + 1000 and after["Pricebook2Id"] == entries[0][3]
    # A new quantity keeps the sales price; the amount follows; the amount itself is not the client's while
    # the opportunity has products; a line stays on its opportunity.
    session.update("OpportunityLineItem", by_unit, {"Quantity": 1})
    stamps = session.get("OpportunityLineItem", by_unit, ["CreatedDate", "LastModifiedDate", "CreatedById"])
    assert stamps["LastModifiedDate"] > stamps["CreatedDate"] >= f"{TODAY}T00:00:00.000+0000"  # the org's clock
    assert stamps["CreatedById"] == first_user
    assert session.get("Opportunity", opp, ["Amount"])["Amount"] == 1250.5 + 1000
    assert _code(lambda: session.update("Opportunity", opp, {"Amount": 5})) == "FIELD_INTEGRITY_EXCEPTION"
    other = str(_one(raw, "SELECT Id FROM Opportunity ORDER BY Id LIMIT 1"))
    assert _code(lambda: session.update("OpportunityLineItem", by_unit, {"OpportunityId": other})) == (
        "INVALID_FIELD_FOR_INSERT_UPDATE"
    )
    both = {"OpportunityId": opp, "PricebookEntryId": entries[0][0], "Quantity": 1, "UnitPrice": 1, "TotalPrice": 1}
    assert _code(lambda: session.create("OpportunityLineItem", both)) == "FIELD_INTEGRITY_EXCEPTION"
    neither = {"OpportunityId": opp, "PricebookEntryId": entries[0][0], "Quantity": 1}
    assert _code(lambda: session.create("OpportunityLineItem", neither)) == "FIELD_INTEGRITY_EXCEPTION"
    assert _code(lambda: session.create("OpportunityLineItem", {"OpportunityId": opp, "UnitPrice": 1})) == (
        "REQUIRED_FIELD_MISSING"
    )
    huge = {"OpportunityId": opp, "PricebookEntryId": entries[0][0], "Quantity": 1e-300, "TotalPrice": 1e17}
    assert _code(lambda: session.create("OpportunityLineItem", huge)) == "NUMBER_OUTSIDE_VALID_RANGE"
    # The stage moves the probability unless the write gives one; Closed closes it.
    session.update("Opportunity", opp, {"StageName": "Negotiation"})
    session.update("Opportunity", opp, {"StageName": "Quote", "Probability": 60})
    assert session.get("Opportunity", opp, ["Probability"])["Probability"] == 60.0
    session.update("Opportunity", opp, {"StageName": "Closed"})
    closed = session.get("Opportunity", opp, ["Probability", "IsClosed", "IsWon"])
    assert (closed["Probability"], closed["IsClosed"], closed["IsWon"]) == (100.0, True, True)
    assert _code(lambda: session.update("Opportunity", opp, {"StageName": "Closed Won"})) == (
        "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"
    )
    assert _code(lambda: session.create("Opportunity", {"Name": "No stage"})) == "REQUIRED_FIELD_MISSING"
    # A deleted line leaves the amount of the others; a deleted opportunity takes its lines along.
    session.delete("OpportunityLineItem", by_total)
    assert session.get("Opportunity", opp, ["Amount"])["Amount"] == 1250.5
    session.delete("Opportunity", opp)
    assert session.query(f"SELECT COUNT() FROM OpportunityLineItem WHERE OpportunityId = '{opp}'")["totalSize"] == 0
    assert {opp} <= _deleted(session, "Opportunity") and {by_unit, by_total} <= _deleted(session, "OpportunityLineItem")
    assert _code(lambda: session.update("Opportunity", opp, {"Name": "x"})) == "ENTITY_IS_DELETED"
    assert _code(lambda: session.create("Task", {"Subject": "About a deleted deal", "WhatId": opp})) == (
        "ENTITY_IS_DELETED"
    )
    nowhere = make_id("006", 10**12, opp[3:5])  # an opportunity id no record has
    assert _code(lambda: session.create("Task", {"Subject": "About no deal", "WhatId": nowhere})) == (
        "INVALID_CROSS_REFERENCE_KEY"
    )


def test_deleting_an_opportunity_of_the_file_cascades_as_salesforce(
    session: OrgSession, raw: sqlite3.Connection
) -> None:
    # The opportunity with the most quotes among those with calls, so that every cascade has something to reach.
    opp = str(
        _one(
            raw,
            "SELECT OpportunityId FROM Quote q WHERE EXISTS (SELECT 1 FROM VoiceCallTranscript__c v "
            "WHERE v.OpportunityId__c = q.OpportunityId) GROUP BY OpportunityId ORDER BY COUNT(*) DESC, OpportunityId "
            "LIMIT 1",
        )
    )
    lines = _ids(raw, "SELECT Id FROM OpportunityLineItem WHERE OpportunityId = ?", opp)
    quotes = _ids(raw, "SELECT Id FROM Quote WHERE OpportunityId = ?", opp)
    marks = ",".join("?" for _ in quotes)
    quote_lines = _ids(raw, f"SELECT Id FROM QuoteLineItem WHERE QuoteId IN ({marks})", *quotes)
    about = (opp, *quotes)
    marks = ",".join("?" for _ in about)
    tasks = _ids(raw, f"SELECT Id FROM Task WHERE WhatId IN ({marks})", *about)
    events = _ids(raw, f"SELECT Id FROM Event WHERE WhatId IN ({marks})", *about)
    calls = _ids(raw, "SELECT Id FROM VoiceCallTranscript__c WHERE OpportunityId__c = ?", opp)
    assert lines and quotes and quote_lines and tasks  # the org plants them all
    totals = {
        o: _one(raw, f'SELECT COUNT(*) FROM "{o}"') for o in ("OpportunityLineItem", "Quote", "QuoteLineItem", "Task")
    }
    session.delete("Opportunity", opp)
    assert _deleted(session, "Opportunity") == {opp}
    assert _deleted(session, "OpportunityLineItem") == lines
    assert _deleted(session, "Quote") == quotes
    assert _deleted(session, "QuoteLineItem") == quote_lines
    assert _deleted(session, "Task") == tasks and _deleted(session, "Event") == events
    gone = {"OpportunityLineItem": lines, "Quote": quotes, "QuoteLineItem": quote_lines, "Task": tasks}
    for name, total in totals.items():
        assert session.query(f"SELECT COUNT() FROM {name}")["totalSize"] == total - len(gone[name])
    # A lookup to it is cleared, its record kept: the calls about it.
    assert calls
    listed = ",".join(f"'{i}'" for i in calls)
    kept = session.query(f"SELECT OpportunityId__c FROM VoiceCallTranscript__c WHERE Id IN ({listed})")["records"]
    assert len(kept) == len(calls) and all(r["OpportunityId__c"] is None for r in kept)


def test_deleting_an_account_takes_its_sales_records_unless_something_protects_it(
    org: tuple[str, Path, str], session: OrgSession, raw: sqlite3.Connection
) -> None:
    kind = org[0]
    entry = str(_one(raw, "SELECT Id FROM PricebookEntry ORDER BY Id LIMIT 1"))
    account = session.create("Account", {"Name": "Juniper Household" if kind == "b2c" else "Juniper Devices"})
    contact = session.create("Contact", {"LastName": "Okafor", "AccountId": account})
    opp = session.create(
        "Opportunity",
        {
            "Name": "Juniper deal",
            "StageName": "Quote",
            "CloseDate": "2024-02-20",
            "AccountId": account,
            "ContactId": contact,
        },
    )
    line = session.create(
        "OpportunityLineItem", {"OpportunityId": opp, "PricebookEntryId": entry, "Quantity": 2, "UnitPrice": 10}
    )
    quote = session.create("Quote", {"Name": "Juniper quote", "OpportunityId": opp})
    contract = session.create("Contract", {"AccountId": account, "StartDate": "2024-02-01", "ContractTerm": 12})
    call = session.create("Task", {"Subject": "Call Okafor", "WhoId": contact})
    assert session.get("Contract", contract, ["Status"])["Status"] == "Draft"
    session.delete("Account", account)
    expected = {
        "Account": account,
        "Contact": contact,
        "Opportunity": opp,
        "OpportunityLineItem": line,
        "Quote": quote,
        "Contract": contract,
        "Task": call,
    }
    for name, rid in expected.items():
        assert rid in _deleted(session, name), name
    # An activated contract keeps its account; so do cases (as in the service org).
    kept = session.create("Account", {"Name": "Kept Ltd"})
    active = session.create("Contract", {"AccountId": kept, "Status": "Activated", "StartDate": "2024-01-01"})
    assert _code(lambda: session.delete("Account", kept)) == "DELETE_FAILED"
    assert _code(lambda: session.delete("Contract", active)) == "DELETE_FAILED"
    assert session.get("Account", kept, ["Name"])["Name"] == "Kept Ltd"
    with_case = str(_one(raw, 'SELECT AccountId FROM "Case" WHERE AccountId IS NOT NULL ORDER BY Id LIMIT 1'))
    assert _code(lambda: session.delete("Account", with_case)) == "DELETE_FAILED"
    assert session.query(f"SELECT COUNT() FROM Account WHERE Id = '{with_case}'")["totalSize"] == 1


def test_a_quote_and_its_lines(session: OrgSession, raw: sqlite3.Connection) -> None:
    opp, account, book = raw.execute(
        "SELECT Id, AccountId, Pricebook2Id FROM Opportunity WHERE AccountId IS NOT NULL ORDER BY Id LIMIT 1"
    ).fetchone()
    entries = raw.execute(
        "SELECT Id, UnitPrice, Product2Id FROM PricebookEntry WHERE Pricebook2Id = ? ORDER BY Id LIMIT 2", (book,)
    ).fetchall()
    # Auto-numbers go on from the highest one (read from the org itself, not from the session).
    with LocalOrg(raw_path(raw)) as base:
        top = base.query("SELECT QuoteNumber FROM Quote ORDER BY QuoteNumber DESC LIMIT 1")["records"][0]["QuoteNumber"]
    quote = session.create("Quote", {"Name": "Volume offer", "OpportunityId": opp, "ExpirationDate": "2024-03-01"})
    made = session.get("Quote", quote, ["AccountId", "Status", "QuoteNumber", "ApprovedCompetingOffer__c"])
    assert made["AccountId"] == account and made["Status"] == "Draft" and made["ApprovedCompetingOffer__c"] is False
    assert made["QuoteNumber"] == f"{int(top) + 1:0{len(top)}d}"
    assert _code(lambda: session.update("Quote", quote, {"AccountId": account})) == "INVALID_FIELD_FOR_INSERT_UPDATE"
    first = session.create(
        "QuoteLineItem",
        {"QuoteId": quote, "PricebookEntryId": entries[0][0], "Quantity": 5, "UnitPrice": 200, "Discount": 12.5},
    )
    second = session.create(
        "QuoteLineItem", {"QuoteId": quote, "PricebookEntryId": entries[1][0], "Quantity": 2, "UnitPrice": 99.99}
    )
    rows = {
        r["Id"]: r
        for r in session.query(
            f"SELECT Id, TotalPrice, ListPrice, Product2Id FROM QuoteLineItem WHERE QuoteId = '{quote}'"
        )["records"]
    }
    assert rows[first]["TotalPrice"] == 5 * 200 * (1 - 0.125) and rows[second]["TotalPrice"] == round(2 * 99.99, 2)
    assert [(rows[i]["ListPrice"], rows[i]["Product2Id"]) for i in (first, second)] == [e[1:] for e in entries]
    totals = session.get("Quote", quote, ["Subtotal", "TotalPrice", "LineItemCount"])
    assert totals["LineItemCount"] == 2 and totals["Subtotal"] == pytest.approx(5 * 200 + 2 * 99.99)
    assert totals["TotalPrice"] == pytest.approx(875 + 199.98)
    session.update("QuoteLineItem", first, {"Discount": 0})
    assert session.get("QuoteLineItem", first, ["TotalPrice"])["TotalPrice"] == 1000.0
    assert _code(lambda: session.update("QuoteLineItem", first, {"TotalPrice": 1})) == "INVALID_FIELD_FOR_INSERT_UPDATE"
    # A line priced from another price book than its quote's is refused.
    other_book = session.create("Pricebook2", {"Name": "Partner prices", "IsActive": True})
    other_entry = session.create(
        "PricebookEntry", {"Pricebook2Id": other_book, "Product2Id": entries[0][2], "UnitPrice": 1.0}
    )
    wrong = {"QuoteId": quote, "PricebookEntryId": other_entry, "Quantity": 1, "UnitPrice": 1}
    assert _code(lambda: session.create("QuoteLineItem", wrong)) == "FIELD_INTEGRITY_EXCEPTION"
    # A price book entry on a quote cannot be deleted; a deleted quote takes its lines.
    assert _code(lambda: session.delete("PricebookEntry", entries[0][0])) == "DELETE_FAILED"
    session.delete("Quote", quote)
    assert {first, second} <= _deleted(session, "QuoteLineItem")
    assert session.query(f"SELECT COUNT() FROM QuoteLineItem WHERE QuoteId = '{quote}'")["totalSize"] == 0


def test_leads_their_required_and_read_only_fields(
    org: tuple[str, Path, str], session: OrgSession, raw: sqlite3.Connection
) -> None:
    kind = org[0]
    if kind == "b2b":  # a firm's lead needs its company; a B2C org has person accounts, where it does not
        assert _code(lambda: session.create("Lead", {"LastName": "Ng"})) == "REQUIRED_FIELD_MISSING"
    lead = session.create("Lead", {"FirstName": "Ada", "LastName": "Ng", "Company": "Quartz Labs", "State": "CA"})
    made = session.get("Lead", lead, ["Name", "Status", "IsConverted", "ConvertedDate", "OwnerId"])
    assert (made["Name"], made["Status"], made["IsConverted"], made["ConvertedDate"]) == (
        "Ada Ng",
        "Open - Not Contacted",
        False,
        None,
    )
    assert session.query("SELECT COUNT() FROM Lead WHERE IsConverted = false AND Name = 'Ada Ng'")["totalSize"] == 1
    account = str(_one(raw, "SELECT Id FROM Account ORDER BY Id LIMIT 1"))
    for field, value in (("IsConverted", True), ("ConvertedAccountId", account), ("ConvertedDate", "2024-01-02")):
        assert _code(lambda f=field, v=value: session.update("Lead", lead, {f: v})) == "INVALID_FIELD_FOR_INSERT_UPDATE"
        assert _code(lambda f=field, v=value: session.create("Lead", {"LastName": "X", "Company": "Y", f: v})) == (
            "INVALID_FIELD_FOR_INSERT_UPDATE"
        )
    assert _code(lambda: session.update("Lead", lead, {"Status": "Hot"})) == "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"
    assert _code(lambda: session.update("Lead", lead, {"Email": "not an address"})) == "INVALID_EMAIL_ADDRESS"
    assert _code(lambda: session.update("Lead", lead, {"Company": "x" * 256})) == "STRING_TOO_LONG"
    assert _code(lambda: session.update("Lead", lead, {"NumberOfEmployees": "many"})) == "JSON_PARSER_ERROR"
    assert _code(lambda: session.update("Lead", lead, {"LastName": None})) == "REQUIRED_FIELD_MISSING"
    session.update("Lead", lead, {"Status": "Working - Contacted"})
    found = session.search("FIND {Quartz} IN ALL FIELDS RETURNING Lead(Id, Status)")
    assert {"Id": lead, "Status": "Working - Contacted"} in [
        {k: r[k] for k in ("Id", "Status")} for r in found["searchRecords"]
    ]
    # Its activities go with it (WhoId).
    call = session.create("Task", {"Subject": "Intro call", "WhoId": lead, "Type": "Call"})
    session.delete("Lead", lead)
    assert {lead} <= _deleted(session, "Lead") and {call} <= _deleted(session, "Task")


def test_tasks_their_defaults_and_polymorphic_references(session: OrgSession, raw: sqlite3.Connection) -> None:
    opp, opp_account = raw.execute(
        "SELECT Id, AccountId FROM Opportunity WHERE AccountId IS NOT NULL ORDER BY Id DESC LIMIT 1"
    ).fetchone()
    contact, contact_account = raw.execute(
        "SELECT Id, AccountId FROM Contact WHERE AccountId IS NOT NULL AND AccountId != ? ORDER BY Id LIMIT 1",
        (opp_account,),
    ).fetchone()
    quote, quote_account = raw.execute("SELECT Id, AccountId FROM Quote ORDER BY Id LIMIT 1").fetchone()
    product = str(_one(raw, "SELECT Id FROM Product2 ORDER BY Id LIMIT 1"))
    about_opp = session.create("Task", {"Subject": "Send the proposal", "WhatId": opp, "WhoId": contact})
    about_person = session.create("Task", {"Subject": "Check in", "WhoId": contact})
    about_quote = session.create("Task", {"Subject": "Chase the signature", "WhatId": quote})
    fields = ["AccountId", "Status", "Priority", "IsClosed", "TaskSubtype", "OwnerId"]
    got = {t: session.get("Task", t, fields) for t in (about_opp, about_person, about_quote)}
    # The account is that of the record the task is about, else that of its contact.
    assert [got[t]["AccountId"] for t in (about_opp, about_person, about_quote)] == [
        opp_account,
        contact_account,
        quote_account,
    ]
    assert {(g["Status"], g["Priority"], g["IsClosed"], g["TaskSubtype"]) for g in got.values()} == {
        ("Not Started", "Normal", False, "Task")
    }
    session.update("Task", about_person, {"WhatId": opp})
    assert session.get("Task", about_person, ["AccountId"])["AccountId"] == opp_account
    session.update("Task", about_opp, {"Status": "Completed"})
    assert session.get("Task", about_opp, ["IsClosed"])["IsClosed"] is True
    assert _code(lambda: session.update("Task", about_opp, {"AccountId": contact_account})) == (
        "INVALID_FIELD_FOR_INSERT_UPDATE"
    )
    assert (
        _code(lambda: session.update("Task", about_opp, {"TaskSubtype": "Call"})) == "INVALID_FIELD_FOR_INSERT_UPDATE"
    )
    assert _code(lambda: session.create("Task", {"Subject": "x", "WhatId": product})) == "FIELD_INTEGRITY_EXCEPTION"
    assert _code(lambda: session.create("Task", {"Subject": "x", "WhoId": opp})) == "FIELD_INTEGRITY_EXCEPTION"
    assert _code(lambda: session.create("Task", {"Subject": "x", "Priority": "Urgent"})) == (
        "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"
    )
    # The file's tasks are the session's to change and delete; the relationship queries see the writes.
    (file_task, what) = raw.execute(
        "SELECT Id, WhatId FROM Task WHERE WhatId LIKE '006%' AND WhatId != ? ORDER BY Id LIMIT 1", (opp,)
    ).fetchone()
    before = int(_one(raw, "SELECT COUNT(*) FROM Task WHERE WhatId = ?", what))
    session.delete("Task", file_task)
    found = session.query(f"SELECT Id, (SELECT Id FROM Tasks) FROM Opportunity WHERE Id = '{what}'")["records"][0]
    listed = {r["Id"] for r in (found["Tasks"] or {"records": []})["records"]}
    assert file_task not in listed and len(listed) == before - 1
    assert session.get("Event", _event(session, opp), ["AccountId"])["AccountId"] == opp_account


def _event(session: OrgSession, what: str) -> str:
    return session.create(
        "Event",
        {
            "Subject": "Demo",
            "WhatId": what,
            "StartDateTime": "2024-02-01T15:00:00Z",
            "EndDateTime": "2024-02-01T16:30:00Z",
        },
    )


def test_events_keep_their_times_as_salesforce(session: OrgSession, raw: sqlite3.Connection) -> None:
    opp = str(_one(raw, "SELECT Id FROM Opportunity ORDER BY Id LIMIT 1"))
    fields = ["StartDateTime", "EndDateTime", "DurationInMinutes", "ActivityDate", "ActivityDateTime", "IsAllDayEvent"]

    def times(event: str) -> tuple[object, ...]:
        got = session.get("Event", event, fields)
        return tuple(got[f] for f in fields)

    # A start and an end: the duration follows, and the day is the start's.
    event = _event(session, opp)
    start, end = "2024-02-01T15:00:00.000+0000", "2024-02-01T16:30:00.000+0000"
    assert times(event) == (start, end, 90, "2024-02-01", start, False)
    # A new start keeps the duration (the end moves); a new duration moves the end.
    session.update("Event", event, {"StartDateTime": "2024-02-02T23:00:00Z"})
    assert times(event)[:4] == ("2024-02-02T23:00:00.000+0000", "2024-02-03T00:30:00.000+0000", 90, "2024-02-02")
    session.update("Event", event, {"DurationInMinutes": 30})
    assert times(event)[1:3] == ("2024-02-02T23:30:00.000+0000", 30)
    # A start and a duration: the end follows.
    timed = session.create(
        "Event", {"Subject": "Call", "StartDateTime": "2024-03-01T09:00:00Z", "DurationInMinutes": 45}
    )
    assert times(timed)[:4] == ("2024-03-01T09:00:00.000+0000", "2024-03-01T09:45:00.000+0000", 45, "2024-03-01")
    # An all-day event lasts its day.
    day = session.create("Event", {"Subject": "Trade show", "IsAllDayEvent": True, "ActivityDate": "2024-04-10"})
    assert times(day)[:5] == (
        "2024-04-10T00:00:00.000+0000",
        "2024-04-11T00:00:00.000+0000",
        1440,
        "2024-04-10",
        "2024-04-10T00:00:00.000+0000",
    )
    refused = {
        "REQUIRED_FIELD_MISSING": [{"StartDateTime": "2024-03-01T09:00:00Z"}, {"DurationInMinutes": 30}],
        "JSON_PARSER_ERROR": [{"StartDateTime": "2024-03-01T09:00:00Z", "DurationInMinutes": 30.5}],
        "FIELD_INTEGRITY_EXCEPTION": [
            {"StartDateTime": "2024-03-01T09:00:00Z", "EndDateTime": "2024-03-01T08:00:00Z"},
            {"StartDateTime": "2024-03-01T09:00:00Z", "DurationInMinutes": 14 * 24 * 60 + 1},  # 14 days at most
            {"StartDateTime": "2024-03-01T09:00:00Z", "EndDateTime": "2024-03-20T09:00:00Z"},
            {"StartDateTime": "9999-12-31T23:00:00Z", "DurationInMinutes": 120},  # past the last datetime
            {"StartDateTime": "2024-03-01T09:00:00Z", "EndDateTime": "2024-03-01T10:00:00Z", "DurationInMinutes": 30},
        ],
    }
    for code, cases in refused.items():
        for values in cases:
            assert _code(lambda v=values: session.create("Event", {"Subject": "x", **v})) == code, values
    assert _code(lambda: session.create("Event", {"Subject": "x", "IsAllDayEvent": True})) == "REQUIRED_FIELD_MISSING"


def test_upserts_limits_and_a_stored_pro_session(
    org: tuple[str, Path, str], raw: sqlite3.Connection, tmp_path: Path
) -> None:
    _, path, digest = org
    store = tmp_path / "session.sqlite"
    first = OrgSession(LocalOrg(path, today=TODAY), store=store)
    made, created = first.upsert("Product2", "External_ID__c", "PRO-SKU-1", {"Name": "Service plan"})
    again = first.upsert("Product2", "External_ID__c", "PRO-SKU-1", {"Name": "Service plan, 2 years"})
    assert created and again == (made, False)
    key = raw.execute(
        "SELECT External_ID__c, Id FROM Product2 WHERE External_ID__c IS NOT NULL ORDER BY Id LIMIT 1"
    ).fetchone()
    assert first.upsert("Product2", "External_ID__c", key[0], {"IsActive": False}) == (key[1], False)
    lead = first.create("Lead", {"LastName": "Stored", "Company": "Kept Co"})
    first.close()
    second = OrgSession(LocalOrg(path, today=TODAY), store=store)  # the writes are back from the store
    assert second.get("Product2", made, ["Name"])["Name"] == "Service plan, 2 years"
    assert second.get("Lead", lead, ["Company"])["Company"] == "Kept Co"
    later = second.create("Lead", {"LastName": "Later", "Company": "Kept Co"})
    assert later not in (lead, made) and later[3:5] == lead[3:5]
    second.drop()
    small = OrgSession(LocalOrg(path, today=TODAY), max_storage=3 * 2048)
    small.create("Lead", {"LastName": "One", "Company": "C"})
    small.create("Lead", {"LastName": "Two", "Company": "C"})
    small.create("Lead", {"LastName": "Three", "Company": "C"})
    assert _code(lambda: small.create("Lead", {"LastName": "Four", "Company": "C"})) == "STORAGE_LIMIT_EXCEEDED"
    small.drop()
    assert file_sha256(path) == digest


def test_the_sales_staff_and_territories(session: OrgSession, raw: sqlite3.Connection) -> None:
    user, territory = raw.execute(
        "SELECT UserId, Territory2Id FROM UserTerritory2Association ORDER BY Id LIMIT 1"
    ).fetchone()
    (members,) = raw.execute(
        "SELECT COUNT(*) FROM UserTerritory2Association WHERE Territory2Id = ?", (territory,)
    ).fetchone()
    session.update("User", user, {"Title": "Regional Director"})
    assert session.get("User", user, ["Title"])["Title"] == "Regional Director"
    added = session.create("Territory2", {"Name": "Alaska", "DeveloperName": "Alaska", "Description": "AK"})
    member = session.create("UserTerritory2Association", {"UserId": user, "Territory2Id": added})
    made = session.get("UserTerritory2Association", member, ["IsActive", "RoleInTerritory2"])
    assert (made["IsActive"], made["RoleInTerritory2"]) == (True, None)
    assert _code(lambda: session.create("Territory2", {"Name": "No API name"})) == "REQUIRED_FIELD_MISSING"
    # Deleting a territory deletes its users' assignments to it, not the users.
    session.delete("Territory2", territory)
    assert (
        session.query(f"SELECT COUNT() FROM UserTerritory2Association WHERE Territory2Id = '{territory}'")["totalSize"]
        == 0
    )
    assert len(_deleted(session, "UserTerritory2Association")) == members
    assert session.query(f"SELECT COUNT() FROM User WHERE Id = '{user}'")["totalSize"] == 1


def test_random_writes_end_in_an_answer_or_a_salesforce_error(session: OrgSession) -> None:
    """600 seeded writes of every object with values of every type, right and wrong: each returns or raises
    OrgError (never anything else), and every record created is then found by its id."""
    rng = random.Random(26)
    schema = session.schema
    ids = {
        o.name: [r["Id"] for r in session.query(f"SELECT Id FROM {o.name} LIMIT 4")["records"]] for o in schema.objects
    }
    wrong: list[object] = [None, True, -3, 2.5, 1e17, "x" * 300, "2024-02-30", "Closed", "001Wt000000000AAAA", [1], {}]
    made: list[tuple[str, str]] = []

    def value(f: Field) -> object:
        if rng.random() < 0.25:
            return rng.choice(wrong)
        if f.type is FieldType.REFERENCE:
            targets = [t for t in (f.reference_to, *f.polymorphic) if ids.get(t or "")]
            return rng.choice([i for t in targets for i in ids[t or ""]]) if targets else None
        if f.type is FieldType.PICKLIST:
            return rng.choice(f.picklist_values) if f.picklist_values else "x"
        if f.type is FieldType.BOOLEAN:
            return rng.random() < 0.5
        if f.type.is_numeric:
            return rng.choice([0, 1, 3, 60, 99.5 if f.type is not FieldType.INTEGER else 2])
        if f.type is FieldType.DATE:
            return f"2024-02-{rng.randrange(1, 28):02d}"
        if f.type is FieldType.DATETIME:
            return f"2024-02-{rng.randrange(1, 28):02d}T{rng.randrange(24):02d}:00:00Z"
        return "a@b.co" if f.type is FieldType.EMAIL else f"text {rng.randrange(100)}"

    outcomes = {"ok": 0, "refused": 0}
    for _ in range(600):
        obj = rng.choice(schema.objects)
        fields = [f for f in obj.fields if f.name != "Id"]
        op = rng.choice(["create", "create", "update", "delete"])
        chosen = fields if op == "create" and rng.random() < 0.7 else rng.sample(fields, min(4, len(fields)))
        values = {f.name: value(f) for f in chosen if not (op == "create" and (f.formula or f.readonly))}
        target = rng.choice(ids[obj.name] + [m[1] for m in made if m[0] == obj.name] or ["nothing"])
        try:
            if op == "create":
                made.append((obj.name, session.create(obj.name, values)))
            elif op == "update":
                session.update(obj.name, target, values)
            else:
                session.delete(obj.name, target)
            outcomes["ok"] += 1
        except OrgError:
            outcomes["refused"] += 1
    assert outcomes["ok"] > 100 and outcomes["refused"] > 100, outcomes  # both paths were exercised
    for name, rid in made:
        found = session.query(f"SELECT Id FROM {name} WHERE Id = '{rid}'", include_deleted=True)["records"]
        assert [r["Id"] for r in found] == [rid]


def test_writes_never_move_the_system_fields_of_the_files_records(
    org: tuple[str, Path, str], session: OrgSession, raw: sqlite3.Connection
) -> None:
    # Records with no date of their own date from the org's first order or case; lines from their opportunity.
    soql = {
        "Product2": "SELECT Id, CreatedDate, CreatedById, SystemModstamp FROM Product2 ORDER BY Id LIMIT 3",
        "OpportunityLineItem": "SELECT Id, CreatedDate FROM OpportunityLineItem ORDER BY Id LIMIT 3",
    }
    with LocalOrg(org[1]) as base:
        before = {name: base.query(q)["records"] for name, q in soql.items()}
    account, book = raw.execute('SELECT AccountId, Pricebook2Id FROM "Order" ORDER BY Id LIMIT 1').fetchone()
    session.create(
        "Order", {"AccountId": account, "Status": "Draft", "EffectiveDate": "2001-01-01", "Pricebook2Id": book}
    )
    user = {
        "LastName": "Aaron",
        "Username": "aaron@example.com",
        "Email": "aaron@example.com",
        "Alias": "aaron",
        "TimeZoneSidKey": "America/New_York",
        "LocaleSidKey": "en_US",
        "EmailEncodingKey": "UTF-8",
        "LanguageLocaleKey": "en_US",
        "ProfileId": "00e000000000001",
    }
    session.create("User", user)  # an id below the file's would move the creator of every undated record
    parent = before["OpportunityLineItem"][0]["Id"]
    opp = session.query(f"SELECT OpportunityId FROM OpportunityLineItem WHERE Id = '{parent}'")["records"][0]
    session.update("Opportunity", opp["OpportunityId"], {"Description": "touched"})
    assert {name: session.query(q)["records"] for name, q in soql.items()} == before


def test_a_set_up_change_the_agent_sets_back_is_an_update_since_the_set_up_not_a_delete() -> None:
    from crmarena_gym.org import RecordChange, StateDiff

    quote = "0Q0Wt000000000AAAA"
    setup = StateDiff((RecordChange("Quote", quote, "update", {"Status": ("Rejected", "Needs Review")}),))
    # The agent set the status back to the file's value: the session's diff no longer holds the quote.
    back = StateDiff(()).since(setup)
    assert [c.describe() for c in back] == [f"update Quote {quote}: Status 'Needs Review' -> 'Rejected'"]
    created = StateDiff((RecordChange("Case", "500Wt000000000AAAA", "create", {"Subject": (None, "x")}),))
    assert [c.op for c in StateDiff(()).since(created)] == ["delete"]


def test_the_orgs_automation_survives_a_schema_drift(org: tuple[str, Path, str], tmp_path: Path) -> None:
    """Schema drift at full strength migrates the standard fields an admin could retire, never one Salesforce's
    automation writes (a stage's probability, a line's prices, the amount): on the drifted org a stage still sets
    the probability, a line is still priced from its price book entry and the amount still sums the lines, while
    a migrated field's replacement takes the write the declared name stands for (the expectations from the file
    read with plain SQLite and PRO.md's stages; what moved from the perturbation's manifest)."""
    from crmarena_gym.datagen import Perturbation, perturb_org, read_manifest

    drifted = tmp_path / "drifted.sqlite"
    perturb_org(org[1], drifted, [Perturbation(kind="schema_drift", strength=1.0, seed=0)])
    migrated = read_manifest(drifted).perturbations[0]["drift"]["migrated"]
    automated = {
        "Opportunity": {"Probability", "Amount", "StageName"},
        "OpportunityLineItem": {"ListPrice", "UnitPrice", "TotalPrice", "Quantity"},
    }
    assert all(not set(migrated.get(o, {})) & fields for o, fields in automated.items())
    assert "Description" in migrated["Opportunity"]  # a field an admin may retire did move
    replacement = migrated["Opportunity"]["Description"]
    raw = sqlite3.connect(drifted.as_uri() + "?mode=ro", uri=True)
    account = str(_one(raw, "SELECT Id FROM Account ORDER BY Id LIMIT 1"))
    entry, price = raw.execute("SELECT Id, UnitPrice FROM PricebookEntry ORDER BY Id LIMIT 1").fetchone()
    raw.close()
    session = OrgSession(LocalOrg(drifted, today=TODAY))
    try:
        values = {"Name": "Fleet renewal", "StageName": "Discovery", "CloseDate": "2024-03-01", "AccountId": account}
        opp = session.create("Opportunity", {**values, replacement: "Renewal of the whole fleet"})
        made = session.get("Opportunity", opp, ["Probability", "Description", replacement])
        assert [made[k] for k in ("Probability", "Description", replacement)] == [
            PROBABILITY["Discovery"],
            None,
            "Renewal of the whole fleet",
        ]
        session.update("Opportunity", opp, {"StageName": "Negotiation"})
        assert session.get("Opportunity", opp, ["Probability"])["Probability"] == PROBABILITY["Negotiation"]
        line = {"OpportunityId": opp, "PricebookEntryId": entry, "Quantity": 3, "UnitPrice": 1250.5}
        priced = session.get(
            "OpportunityLineItem", session.create("OpportunityLineItem", line), ["ListPrice", "TotalPrice"]
        )
        assert (priced["ListPrice"], priced["TotalPrice"]) == (price, 3 * 1250.5)
        assert session.get("Opportunity", opp, ["Amount"])["Amount"] == 3 * 1250.5
    finally:
        session.drop()


# Salesforce's lengths of standard text fields of Pro's objects, as the Object Reference (the Salesforce Field
# Reference's tables) gives them: written here, not read from the schema module.
SALESFORCE_LENGTHS = {
    ("Lead", "City"): 40,
    ("Lead", "State"): 80,
    ("Lead", "Country"): 80,
    ("Lead", "FirstName"): 40,
    ("Lead", "LastName"): 80,
    ("Lead", "Title"): 128,
    ("Lead", "Company"): 255,
    ("Lead", "Description"): 32000,
    ("Account", "ShippingStreet"): 255,
    ("Account", "ShippingCity"): 40,
    ("Account", "ShippingPostalCode"): 20,
    ("Account", "ShippingCountry"): 80,
    ("Contact", "MailingCity"): 40,
    ("Contact", "MailingState"): 80,
    ("Contact", "Title"): 128,
    ("Contact", "Department"): 80,
    ("User", "Title"): 80,
    ("Opportunity", "Name"): 120,
    ("Opportunity", "NextStep"): 255,
    ("Contract", "CustomerSignedTitle"): 40,
    ("Event", "Location"): 255,
    ("Territory2", "Name"): 80,
    ("Territory2", "Description"): 1000,
    # Picklists: most standard ones are 255, a few are not; auto-numbers are 30 (a quote line's 255).
    ("Lead", "Industry"): 255,
    ("Lead", "Status"): 255,
    ("Account", "Industry"): 255,
    ("Account", "Website"): 255,
    ("Opportunity", "StageName"): 255,
    ("Task", "Priority"): 20,
    ("Task", "Status"): 255,
    ("Task", "TaskSubtype"): 40,
    ("Contract", "Status"): 100,
    ("Contract", "ContractNumber"): 30,
    ("Quote", "Status"): 40,
    ("Quote", "QuoteNumber"): 30,
    ("QuoteLineItem", "LineNumber"): 255,
    ("Order", "Status"): 100,
    ("UserTerritory2Association", "RoleInTerritory2"): 255,
}
# The Field Reference's types where they are not the obvious ones: a web address is a url, a territory's
# description a string (not a text area), an activity's subject a combobox.
SALESFORCE_TYPES = {
    ("Account", "Website"): "url",
    ("Territory2", "Description"): "string",
    ("Task", "Priority"): "picklist",
    ("Task", "Subject"): "combobox",
    ("Event", "Subject"): "combobox",
    ("Opportunity", "Probability"): "percent",
    ("QuoteLineItem", "Discount"): "percent",
    ("OpportunityLineItem", "Description"): "string",
    ("QuoteLineItem", "Description"): "string",
}


def test_describe_answers_salesforces_lengths(org: tuple[str, Path, str]) -> None:
    local = LocalOrg(org[1], today=TODAY)
    try:
        described = {
            sobject: {f["name"]: f for f in local.describe(sobject)["fields"]}
            for sobject in {name for name, _ in SALESFORCE_LENGTHS}
        }
        got = {key: described[key[0]][key[1]]["length"] for key in SALESFORCE_LENGTHS}
        for sobject in {name for name, _ in SALESFORCE_TYPES} - set(described):
            described[sobject] = {f["name"]: f for f in local.describe(sobject)["fields"]}
        types = {key: described[key[0]][key[1]]["type"] for key in SALESFORCE_TYPES}
        # A percent is a number to SOQL (compared and summed as one), and cannot be grouped, as a double.
        stages = local.query("SELECT COUNT() FROM Opportunity WHERE Probability >= 50")["totalSize"]
        with pytest.raises(OrgError) as grouped:
            local.query("SELECT Probability, COUNT(Id) FROM Opportunity GROUP BY Probability")
        # SOQL reads a url as text: the org's web addresses, as plain SQLite finds them.
        websites = local.query("SELECT Id FROM Account WHERE Website LIKE 'www.%'")["totalSize"]
    finally:
        local.close()
    assert got == SALESFORCE_LENGTHS
    assert types == SALESFORCE_TYPES
    assert "can not be grouped" in grouped.value.message
    with sqlite3.connect(org[1].as_uri() + "?mode=ro", uri=True) as raw:
        assert stages == raw.execute("SELECT COUNT(*) FROM Opportunity WHERE Probability >= 50").fetchone()[0] > 0
    with sqlite3.connect(org[1].as_uri() + "?mode=ro", uri=True) as raw:
        expected = raw.execute("SELECT COUNT(*) FROM Account WHERE Website LIKE 'www.%'").fetchone()[0]
    assert websites == expected and (expected > 0 or org[0] == "b2c")  # every B2B firm has one; households rarely


def test_a_value_longer_than_salesforce_allows_is_refused(session: OrgSession, raw: sqlite3.Connection) -> None:
    lead = session.create("Lead", {"LastName": "Ng", "Company": "Quartz Labs", "City": "c" * 40})
    assert session.get("Lead", lead, ["City"])["City"] == "c" * 40  # exactly the length fits
    for sobject, record, field, length in (
        ("Lead", lead, "City", 40),
        ("Lead", lead, "Title", 128),
        ("Account", str(_one(raw, "SELECT Id FROM Account ORDER BY Id LIMIT 1")), "ShippingPostalCode", 20),
        ("Opportunity", str(_one(raw, "SELECT Id FROM Opportunity ORDER BY Id LIMIT 1")), "Name", 120),
        # Picklists follow the same rule: the length first (STRING_TOO_LONG), then the picklist's values.
        ("Task", str(_one(raw, "SELECT Id FROM Task ORDER BY Id LIMIT 1")), "Priority", 20),
        ("Contract", str(_one(raw, "SELECT Id FROM Contract ORDER BY Id LIMIT 1")), "Status", 100),
        ("Quote", str(_one(raw, "SELECT Id FROM Quote ORDER BY Id LIMIT 1")), "Status", 40),
        ("Account", str(_one(raw, "SELECT Id FROM Account ORDER BY Id LIMIT 1")), "Website", 255),
    ):
        with pytest.raises(OrgError) as info:
            session.update(sobject, record, {field: "x" * (length + 1)})
        err = info.value
        assert err.code == "STRING_TOO_LONG", (sobject, field)
        assert err.message.startswith(f"{field}: data value too large: ")
        assert err.message.endswith(f"(max length={length})")
        assert err.fields == [field]  # type: ignore[attr-defined]
    task = str(_one(raw, "SELECT Id FROM Task ORDER BY Id LIMIT 1"))
    with pytest.raises(OrgError) as unknown:
        session.update("Task", task, {"Priority": "p" * 20})  # fits the length: no value of the picklist
    assert unknown.value.code == "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"
    site = "https://www." + "w" * 231 + ".example.com"  # a url of exactly 255 characters is taken
    account = str(_one(raw, "SELECT Id FROM Account ORDER BY Id LIMIT 1"))
    session.update("Account", account, {"Website": site})
    assert session.get("Account", account, ["Website"])["Website"] == site
    with pytest.raises(OrgError) as created:
        session.create("Lead", {"LastName": "Ng", "Company": "Quartz Labs", "City": "y" * 41})
    assert created.value.code == "STRING_TOO_LONG"
    with pytest.raises(OrgError) as created:
        session.create("Task", {"Subject": "Call back", "Priority": "z" * 21})
    assert created.value.code == "STRING_TOO_LONG"
    # Refused writes change nothing: the lead keeps its values, the refused create made no lead.
    kept = session.get("Lead", lead, ["City", "Title"])
    assert (kept["City"], kept["Title"]) == ("c" * 40, None)
    assert session.query("SELECT COUNT() FROM Lead WHERE LastName = 'Ng'")["totalSize"] == 1 + int(
        _one(raw, "SELECT COUNT(*) FROM Lead WHERE LastName = 'Ng'")
    )


def test_every_stored_value_fits_its_declared_length(org: tuple[str, Path, str], raw: sqlite3.Connection) -> None:
    kind = org[0]
    # Every text field, stored or computed: a length the schema declares or the type's (a picklist's, a url's ...).
    declared = [(o, f) for o in org_schema(kind).objects for f in o.fields if f.type.is_text]
    tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    checked = set()
    for obj, f in declared:
        if obj.name not in tables:
            continue
        # A computed field (a person's Name, an auto-number) is its SQL expression over the stored columns.
        table, column = quote_identifier(obj.name), f.formula or quote_identifier(f.column_name)
        over = raw.execute(
            f"SELECT Id, length({column}) FROM {table} WHERE length({column}) > ? LIMIT 3", (f.max_length,)
        ).fetchall()
        assert not over, (kind, obj.name, f.name, f.max_length, over)
        filled = raw.execute(f"SELECT COUNT(*) FROM {table} WHERE {column} IS NOT NULL").fetchone()[0]
        if filled:
            checked.add((obj.name, f.name))
    # The check reached the fields Pro's generator fills, not only empty columns.
    assert {("Lead", "City"), ("Lead", "LastName"), ("Opportunity", "Name"), ("Account", "ShippingCity")} <= checked
    assert {
        ("Task", "Priority"),
        ("Contract", "Status"),
        ("Quote", "Status"),
        ("Contract", "ContractNumber"),
    } <= checked
    assert {("Lead", "Name"), ("User", "Name"), ("Order", "Status"), ("Case", "CaseNumber")} <= checked
