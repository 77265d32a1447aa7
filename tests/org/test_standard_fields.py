"""The standard fields every real org has and the original dump lacks, and describe results.

Reference: Salesforce Object Reference, "System Fields" (Id, IsDeleted, CreatedById, CreatedDate,
LastModifiedById, LastModifiedDate, SystemModstamp on every object) and Case (CaseNumber, an
auto-number; IsClosed; IsEscalated); SOQL and SOSL Reference, "FIELDS()" (every field the describe lists).
Expectations are computed with plain SQL on the org file.
"""

from __future__ import annotations

import sqlite3

import pytest

from crmarena_gym.org import LocalOrg, OrgError
from crmarena_gym.schema import OBJECTS, schema_text

SYSTEM = ("CreatedDate", "CreatedById", "LastModifiedDate", "LastModifiedById", "SystemModstamp", "IsDeleted")


def test_every_object_has_the_system_fields_outside_the_schema_text(small_org: LocalOrg) -> None:
    text = schema_text()
    for obj in OBJECTS:
        for name in SYSTEM:
            f = obj.get_field(name)
            assert f is not None, (obj.name, name)
        described = {f["name"] for f in small_org.describe(obj.name)["fields"]}
        assert set(SYSTEM) <= described
    assert "CaseNumber" not in text and "IsClosed" not in text and "SystemModstamp" not in text


def test_case_fields_derive_from_the_stored_columns(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    got = small_org.query(
        "SELECT Id, CaseNumber, IsClosed, IsEscalated, CreatedById, LastModifiedDate, LastModifiedById,"
        " SystemModstamp, IsDeleted FROM Case ORDER BY CaseNumber"
    )["records"]
    rows = raw_conn.execute(
        'SELECT rowid, Id, Status, OwnerId, CreatedDate, ClosedDate FROM "Case" ORDER BY rowid'
    ).fetchall()
    assert [r["Id"] for r in got] == [row[1] for row in rows]
    for rec, (rowid, _, status, owner, created, closed) in zip(got, rows, strict=True):
        assert rec["CaseNumber"] == f"{999 + rowid:08d}"
        assert rec["IsClosed"] is (status == "Closed")
        assert rec["IsEscalated"] is (status == "Escalated")
        assert rec["CreatedById"] == rec["LastModifiedById"] == owner
        assert rec["LastModifiedDate"] == rec["SystemModstamp"] == (closed or created)
        assert rec["IsDeleted"] is False
    (closed_count,) = raw_conn.execute("SELECT COUNT(*) FROM \"Case\" WHERE Status = 'Closed'").fetchone()
    assert small_org.query("SELECT COUNT() FROM Case WHERE IsClosed = true")["totalSize"] == closed_count
    assert small_org.query("SELECT COUNT() FROM Case WHERE IsDeleted = false")["totalSize"] == len(rows)


def test_undated_objects_date_from_the_org_start(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    (first_order,) = raw_conn.execute('SELECT MIN(EffectiveDate) FROM "Order"').fetchone()
    (first_case,) = raw_conn.execute('SELECT MIN(CreatedDate) FROM "Case"').fetchone()
    start = min(f"{first_order}T00:00:00.000+0000", first_case)
    (creator,) = raw_conn.execute('SELECT MIN(Id) FROM "User"').fetchone()
    for rec in small_org.query("SELECT Id, CreatedDate, CreatedBy.Name, CreatedById FROM Account")["records"]:
        assert rec["CreatedDate"] == start and rec["CreatedById"] == creator
        assert rec["CreatedBy"]["Name"]  # the creator is a real user, reachable through CreatedBy
    # Order lines date from their order; emails from when they were sent.
    items = small_org.query("SELECT Id, CreatedDate, TotalPrice FROM OrderItem")["records"]
    expected = dict(
        raw_conn.execute(
            "SELECT oi.Id, o.EffectiveDate || 'T00:00:00.000+0000' FROM OrderItem oi"
            ' JOIN "Order" o ON o.Id = oi.OrderId'
        ).fetchall()
    )
    prices = dict(raw_conn.execute("SELECT Id, Quantity * UnitPrice FROM OrderItem").fetchall())
    assert {r["Id"]: r["CreatedDate"] for r in items} == expected
    assert {r["Id"]: r["TotalPrice"] for r in items} == pytest.approx(prices)
    emails = small_org.query("SELECT Id, CreatedDate FROM EmailMessage")["records"]
    assert {r["Id"]: r["CreatedDate"] for r in emails} == dict(
        raw_conn.execute("SELECT Id, MessageDate FROM EmailMessage").fetchall()
    )


def test_fields_all_standard_custom(small_org: LocalOrg) -> None:
    (rec,) = small_org.query("SELECT FIELDS(ALL) FROM Case ORDER BY Id LIMIT 1")["records"]
    described = [f["name"] for f in small_org.describe("Case")["fields"]]
    assert list(rec)[1:] == described and "CaseNumber" in described and "IsDeleted" in described
    (custom,) = small_org.query("SELECT FIELDS(CUSTOM) FROM Case ORDER BY Id LIMIT 1")["records"]
    # Channel is custom though the dump names it without __c: Salesforce's Case has no standard Channel field.
    custom_names = ["Channel", "OrderItemId__c", "IssueId__c"]
    assert list(custom)[1:] == [n for n in described if n in custom_names] == custom_names
    (standard,) = small_org.query("SELECT FIELDS(STANDARD) FROM Case ORDER BY Id LIMIT 1")["records"]
    assert list(standard)[1:] == [n for n in described if n not in custom_names]
    assert {k: v for k, v in rec.items() if k in standard} == standard


def test_describe_shape_and_unknown_object(small_org: LocalOrg) -> None:
    d = small_org.describe("case")
    assert (d["name"], d["keyPrefix"], d["label"]) == ("Case", "500", "Case")
    by_name = {f["name"]: f for f in d["fields"]}
    assert by_name["OwnerId"]["type"] == "reference" and by_name["OwnerId"]["referenceTo"] == ["Group", "User"]
    assert by_name["OwnerId"]["polymorphicForeignKey"] is True  # a case's owner is a user or a queue
    assert by_name["ContactId"]["referenceTo"] == ["Contact"] and not by_name["ContactId"]["polymorphicForeignKey"]
    assert by_name["OwnerId"]["relationshipName"] == "Owner"
    assert by_name["Description"]["type"] == "textarea" and by_name["Description"]["filterable"] is False
    assert by_name["CreatedDate"]["groupable"] is False and by_name["Status"]["groupable"] is True
    assert by_name["CaseNumber"]["autoNumber"] is True and by_name["CaseNumber"]["groupable"] is False
    assert [v["value"] for v in by_name["Status"]["picklistValues"]] == [
        "New",
        "Working",
        "Escalated",
        "Waiting on Customer",
        "Closed",
    ]
    rels = {c["relationshipName"]: (c["childSObject"], c["field"]) for c in d["childRelationships"]}
    assert rels == {
        "EmailMessages": ("EmailMessage", "ParentId"),
        "LiveChatTranscripts": ("LiveChatTranscript", "CaseId"),
        "CaseHistories__r": ("CaseHistory__c", "CaseId__c"),
        # The empty standard objects' children (a task's or an event's WhatId may be a case).
        "Tasks": ("Task", "WhatId"),
        "Events": ("Event", "WhatId"),
        "CaseComments": ("CaseComment", "ParentId"),
    }
    with pytest.raises(OrgError) as info:
        small_org.describe("Widget__c")
    assert info.value.code == "NOT_FOUND" and "Widget__c" in info.value.message


def test_a_dump_without_a_column_describes_and_answers_without_it(tmp_path, small_org_path) -> None:
    # The original dump's tables, minus a column: fields computed from it disappear too, nothing else.
    import shutil

    path = tmp_path / "dump.db"
    shutil.copy(small_org_path, path)
    conn = sqlite3.connect(path)
    conn.execute('ALTER TABLE "Case" DROP COLUMN ClosedDate')
    conn.commit()
    conn.close()
    with LocalOrg(path) as org:
        names = [f["name"] for f in org.describe("Case")["fields"]]
        assert "ClosedDate" not in names and "LastModifiedDate" not in names and "IsClosed" in names
        with pytest.raises(OrgError, match="No such column 'LastModifiedDate'"):
            org.query("SELECT LastModifiedDate FROM Case")
        assert "LastModifiedDate" not in org.query("SELECT FIELDS(ALL) FROM Case LIMIT 1")["records"][0]
