"""The engine over CRMArena-Pro's orgs: every new object, field, relationship and child relationship, the access
paths of Pro's categories (semi-joins, aggregates, roll-ups), SOSL and describe, each checked against SQL written
here over the plain SQLite file."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.datagen import generate_org
from crmarena_gym.org import LocalOrg, OrgError, sosl_escape_refused
from crmarena_gym.schema import OBJECTS, FieldType, SObject, org_schema, quote_identifier

NEW_OBJECTS = sorted({o.name for o in org_schema("b2b").objects} - {o.name for o in OBJECTS})


@pytest.fixture(scope="module", params=["b2b", "b2c"])
def pro(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, LocalOrg, sqlite3.Connection]]:
    kind = request.param
    path = tmp_path_factory.mktemp(kind) / "org.sqlite"
    generate_org(path, kind=kind, seed=2, scale=0.3)
    org = LocalOrg(path, today="2024-06-30")
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    yield kind, org, raw
    org.close()
    raw.close()


def _value(f: Any, value: Any) -> Any:
    """A raw SQLite value as the engine shapes it (booleans as bool, numbers as float or int)."""
    if value is None:
        return None
    if f.type is FieldType.BOOLEAN:
        return bool(value)
    if f.type in (FieldType.DOUBLE, FieldType.CURRENCY):
        return float(value)
    return value


def _shown(obj: SObject) -> list[Any]:
    return [f for f in obj.fields if f.stored]


def test_the_new_objects_are_the_eleven_pro_md_lists() -> None:
    assert NEW_OBJECTS == sorted(
        ["Lead", "Opportunity", "OpportunityLineItem", "Quote", "QuoteLineItem", "Contract", "Task", "Event",
         "VoiceCallTranscript__c", "Territory2", "UserTerritory2Association"]
    )  # fmt: skip


def test_every_object_and_stored_field_reads_as_the_file_holds_it(
    pro: tuple[str, LocalOrg, sqlite3.Connection],
) -> None:
    kind, org, raw = pro
    for obj in org_schema(kind).objects:
        fields = _shown(obj)
        soql = f"SELECT {', '.join(f.name for f in fields)} FROM {obj.name} ORDER BY Id"
        got = org.query(soql)["records"]
        columns = ", ".join(quote_identifier(f.column_name) for f in fields)
        sql = f"SELECT {columns} FROM {quote_identifier(obj.name)} ORDER BY Id"
        want = raw.execute(sql).fetchall()
        assert len(got) == len(want), obj.name
        for record, row in zip(got, want, strict=True):
            assert [record[f.name] for f in fields] == [_value(f, v) for f, v in zip(fields, row, strict=True)], (
                obj.name
            )


def test_every_parent_relationship_joins_as_sql_does(pro: tuple[str, LocalOrg, sqlite3.Connection]) -> None:
    kind, org, raw = pro
    schema = org_schema(kind)
    checked = 0
    for obj in schema.objects:
        for f in obj.references:
            if not f.stored:
                continue
            parent = schema.get_object(f.reference_to or "")
            if parent is None:
                continue
            if f.polymorphic:  # the parent is the Name object: checked below, whatever the record's object
                _check_name_parent(org, raw, schema, obj, f)
                checked += 1
                continue
            label = next(
                (p for p in parent.fields if p.name_field and p.stored),
                next(p for p in parent.stored_fields if p.name != "Id"),
            )
            soql = (
                f"SELECT Id, {f.relationship_name}.Id, {f.relationship_name}.{label.name} FROM {obj.name} ORDER BY Id"
            )
            got = [
                (r["Id"], (r[f.relationship_name] or {}).get("Id"), (r[f.relationship_name] or {}).get(label.name))
                for r in org.query(soql)["records"]
            ]
            want = raw.execute(
                f"""SELECT c.Id, p.Id, p.{quote_identifier(label.column_name)} FROM {quote_identifier(obj.name)} c
                    LEFT JOIN {quote_identifier(parent.name)} p ON p.Id = c.{quote_identifier(f.column_name)}
                    ORDER BY c.Id"""
            ).fetchall()
            assert got == [tuple(r) for r in want], (obj.name, f.name)
            checked += 1
    assert checked >= 60


def _check_name_parent(org: LocalOrg, raw: sqlite3.Connection, schema: Any, obj: SObject, f: Any) -> None:
    """``Rel.Id`` and ``Rel.Name`` of the polymorphic ``f`` name the record its id names, in whichever table."""
    names: dict[str, Any] = {}
    for target in (f.reference_to, *f.polymorphic):
        t = schema.get_object(target)
        if t is None:
            continue
        stored = t.get_field("Name")
        column = quote_identifier(stored.column_name) if stored is not None and stored.stored else "NULL"
        for record_id, name in raw.execute(f"SELECT Id, {column} FROM {quote_identifier(t.name)}"):
            names[record_id] = (name, stored is not None and stored.stored)
    rel = f.relationship_name
    got = org.query(f"SELECT Id, {f.name}, {rel}.Id, {rel}.Name FROM {obj.name} ORDER BY Id")["records"]
    assert len(got) == raw.execute(f"SELECT COUNT(*) FROM {quote_identifier(obj.name)}").fetchone()[0]
    for r in got:
        ref = r[f.name]
        parent = r[rel]
        if ref not in names:
            assert parent is None, (obj.name, f.name)
            continue
        assert parent["Id"] == ref and parent["attributes"]["type"] == "Name", (obj.name, f.name)
        name, comparable = names[ref]
        if comparable:
            assert parent["Name"] == name, (obj.name, f.name)


def test_every_child_relationship_nests_the_rows_sql_groups(pro: tuple[str, LocalOrg, sqlite3.Connection]) -> None:
    kind, org, raw = pro
    schema = org_schema(kind)
    checked = 0
    for parent in schema.objects:
        for name, child, f in schema.child_relationships(parent):
            if child not in schema.objects:
                continue
            soql = f"SELECT Id, (SELECT Id FROM {name} ORDER BY Id) FROM {parent.name} ORDER BY Id"
            got = {
                r["Id"]: [c["Id"] for c in (r[name] or {"records": []})["records"]] for r in org.query(soql)["records"]
            }
            want: dict[str, list[str]] = defaultdict(list)
            for child_id, parent_id in raw.execute(
                f"SELECT Id, {quote_identifier(f.column_name)} FROM {quote_identifier(child.name)} ORDER BY Id"
            ):
                want[parent_id].append(child_id)
            assert got == {p: want.get(p, []) for p in got}, (parent.name, name)
            checked += 1
    assert checked >= 30


def _raw(raw: sqlite3.Connection, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in raw.execute(sql, params).fetchall()]


def test_the_categories_access_paths(pro: tuple[str, LocalOrg, sqlite3.Connection]) -> None:
    _kind, org, raw = pro
    # Sales amount: owners' totals over the contracts the company signed in a window (a parent's field filters).
    got = org.query(
        """SELECT OwnerId, SUM(Amount) total FROM Opportunity WHERE ContractID__r.CompanySignedDate >= 2022-01-01
           AND ContractID__r.CompanySignedDate <= 2023-06-30 GROUP BY OwnerId ORDER BY OwnerId"""
    )["records"]
    want = _raw(
        raw,
        """SELECT o.OwnerId, SUM(o.Amount) FROM Opportunity o JOIN Contract c ON c.Id = o.ContractID__c
           WHERE c.CompanySignedDate BETWEEN '2022-01-01' AND '2023-06-30' GROUP BY o.OwnerId ORDER BY o.OwnerId""",
    )
    assert [(r["OwnerId"], r["total"]) for r in got] == want and want
    # Lead routing: a territory's representatives by semi-join, accepted quotes per owner with HAVING.
    got = org.query(
        """SELECT Id FROM Lead WHERE IsConverted = false AND OwnerId IN
           (SELECT UserId FROM UserTerritory2Association WHERE Territory2.Name = 'Pacific') ORDER BY Id"""
    )["records"]
    want = _raw(
        raw,
        """SELECT Id FROM Lead WHERE IsConverted = 0 AND OwnerId IN (SELECT a.UserId FROM UserTerritory2Association a
           JOIN Territory2 t ON t.Id = a.Territory2Id WHERE t.Name = 'Pacific') ORDER BY Id""",
    )
    assert [(r["Id"],) for r in got] == want and want
    got = org.query(
        """SELECT Opportunity.OwnerId owner, COUNT(Id) n FROM Quote WHERE Status = 'Accepted'
           GROUP BY Opportunity.OwnerId HAVING COUNT(Id) > 1 ORDER BY COUNT(Id) DESC, Opportunity.OwnerId"""
    )["records"]
    want = _raw(
        raw,
        """SELECT o.OwnerId, COUNT(q.Id) FROM Quote q JOIN Opportunity o ON o.Id = q.OpportunityId
           WHERE q.Status = 'Accepted' GROUP BY o.OwnerId HAVING COUNT(q.Id) > 1 ORDER BY 2 DESC, 1""",
    )
    assert [(r["owner"], r["n"]) for r in got] == want and want
    # Conversion: created and converted in one window, per owner (a date and a datetime filter).
    got = org.query(
        """SELECT OwnerId, COUNT(Id) n FROM Lead WHERE CreatedDate >= 2022-01-01T00:00:00Z
           AND CreatedDate < 2023-01-01T00:00:00Z AND IsConverted = true AND ConvertedDate <= 2022-12-31
           GROUP BY OwnerId ORDER BY OwnerId"""
    )["records"]
    want = _raw(
        raw,
        """SELECT OwnerId, COUNT(*) FROM Lead WHERE substr(CreatedDate, 1, 4) = '2022' AND IsConverted = 1
           AND ConvertedDate <= '2022-12-31' GROUP BY OwnerId ORDER BY OwnerId""",
    )
    assert [(r["OwnerId"], r["n"]) for r in got] == want and want
    # Opportunities never quoted (an anti-join) and the stage each shows.
    got = org.query(
        "SELECT Id, StageName FROM Opportunity WHERE Id NOT IN (SELECT OpportunityId FROM Quote) ORDER BY Id"
    )
    want = _raw(
        raw, "SELECT Id, StageName FROM Opportunity WHERE Id NOT IN (SELECT OpportunityId FROM Quote) ORDER BY Id"
    )
    assert [(r["Id"], r["StageName"]) for r in got["records"]] == want and want
    # Activity priority: an opportunity's Not Started tasks, through the child relationship and the polymorphic What.
    opp = raw.execute("SELECT WhatId FROM Task WHERE Status = 'Not Started' ORDER BY Id LIMIT 1").fetchone()[0]
    got = org.query(
        f"SELECT Id, (SELECT Subject FROM Tasks WHERE Status = 'Not Started' ORDER BY Subject) FROM Opportunity "
        f"WHERE Id = '{opp}'"
    )["records"][0]["Tasks"]["records"]
    want = _raw(raw, "SELECT Subject FROM Task WHERE WhatId = ? AND Status = 'Not Started' ORDER BY Subject", opp)
    assert [(r["Subject"],) for r in got] == want
    got = org.query(f"SELECT What.Name, What.Type FROM Task WHERE WhatId = '{opp}' LIMIT 1")["records"][0]["What"]
    assert got["Name"] == raw.execute("SELECT Name FROM Opportunity WHERE Id = ?", (opp,)).fetchone()[0]
    got = org.query(f"SELECT TYPEOF What WHEN Opportunity THEN StageName END FROM Task WHERE WhatId = '{opp}' LIMIT 1")
    assert (
        got["records"][0]["What"]["StageName"]
        == raw.execute("SELECT StageName FROM Opportunity WHERE Id = ?", (opp,)).fetchone()[0]
    )
    # Quote roll-ups computed from the lines, and date functions and COUNT_DISTINCT over the new objects.
    got = org.query("SELECT Id, Subtotal, TotalPrice, LineItemCount FROM Quote ORDER BY Id")["records"]
    want = _raw(
        raw,
        """SELECT q.Id, IFNULL(SUM(l.Quantity * l.UnitPrice), 0), IFNULL(SUM(l.TotalPrice), 0), COUNT(l.Id)
           FROM Quote q LEFT JOIN QuoteLineItem l ON l.QuoteId = q.Id GROUP BY q.Id ORDER BY q.Id""",
    )
    assert [(r["Id"], r["Subtotal"], r["TotalPrice"], r["LineItemCount"]) for r in got] == [
        (i, pytest.approx(s), pytest.approx(t), n) for i, s, t, n in want
    ]
    got = org.query(
        "SELECT CALENDAR_MONTH(CloseDate) m, COUNT(Id) n FROM Opportunity WHERE StageName = 'Closed' "
        "GROUP BY CALENDAR_MONTH(CloseDate) ORDER BY CALENDAR_MONTH(CloseDate)"
    )["records"]
    want = _raw(
        raw,
        """SELECT CAST(substr(CloseDate, 6, 2) AS INTEGER), COUNT(*) FROM Opportunity WHERE StageName = 'Closed'
           GROUP BY 1 ORDER BY 1""",
    )
    assert [(r["m"], r["n"]) for r in got] == want
    got = org.query("SELECT COUNT_DISTINCT(AccountId) n FROM Opportunity")["records"][0]["n"]
    assert got == raw.execute("SELECT COUNT(DISTINCT AccountId) FROM Opportunity").fetchone()[0]
    # The stage's tasks by the relative literals of a task's today.
    got = org.with_today("2023-03-15").query("SELECT COUNT() FROM Task WHERE ActivityDate = LAST_N_DAYS:30")
    start = dt.date(2023, 3, 15) - dt.timedelta(days=30)
    want = raw.execute("SELECT COUNT(*) FROM Task WHERE ActivityDate BETWEEN ? AND '2023-03-15'", (start.isoformat(),))
    assert got["totalSize"] == want.fetchone()[0]


def test_standard_fields_empty_standard_objects_and_the_kinds_own_fields(
    pro: tuple[str, LocalOrg, sqlite3.Connection],
) -> None:
    kind, org, raw = pro
    record = org.query(
        "SELECT Id, CreatedById, IsDeleted, LastModifiedDate, OwnerId, QuoteNumber FROM Quote ORDER BY Id LIMIT 1"
    )
    first = record["records"][0]
    assert (
        first["CreatedById"] == first["OwnerId"] and first["IsDeleted"] is False and first["QuoteNumber"] == "00000001"
    )
    assert org.query("SELECT COUNT() FROM Campaign")["totalSize"] == 0  # every org has it; this one holds none
    assert (
        org.query("SELECT COUNT() FROM VoiceCallTranscript__c WHERE LeadId__r.IsConverted = true")["totalSize"]
        == (
            raw.execute(
                """SELECT COUNT(*) FROM VoiceCallTranscript__c c JOIN Lead l ON l.Id = c.LeadId__c
                   WHERE l.IsConverted = 1"""
            ).fetchone()[0]
        )
    )
    with pytest.raises(OrgError, match="INVALID_FIELD"):  # the service org's person-account field is not Pro's
        org.query("SELECT PersonEmail FROM Account")
    assert org.kind == kind and org.schema is org_schema(kind)


def test_the_service_org_does_not_answer_pro_fields(tiny_org: Path) -> None:
    org = LocalOrg(tiny_org)
    assert org.kind == "service"
    with pytest.raises(OrgError, match="INVALID_FIELD"):
        org.query("SELECT Industry FROM Account")
    assert org.query("SELECT COUNT() FROM Opportunity")["totalSize"] == 0
    org.close()


def test_sosl_searches_the_new_objects(pro: tuple[str, LocalOrg, sqlite3.Connection]) -> None:
    _kind, org, raw = pro
    name, company = raw.execute(
        "SELECT LastName, Title FROM Lead WHERE Title IS NOT NULL ORDER BY Id LIMIT 1"
    ).fetchone()
    found = org.search(f"FIND {{{name}}} IN NAME FIELDS RETURNING Lead(Id, LastName), Contact(Id)")["searchRecords"]
    leads = {r["Id"] for r in found if r["attributes"]["type"] == "Lead"}
    assert leads == {r[0] for r in raw.execute("SELECT Id FROM Lead WHERE LastName = ? OR FirstName = ?", (name, name))}
    assert company
    subject = raw.execute("SELECT Subject FROM Task ORDER BY Id LIMIT 1").fetchone()[0]
    phrase = sosl_escape_refused(subject)  # a subject may hold a reserved character ("trade-in")
    found = org.search(f"FIND {{\"{phrase}\"}} RETURNING Task(Id WHERE Status = 'Completed')")["searchRecords"]
    want = {
        r[0]
        for r in raw.execute(
            "SELECT Id FROM Task WHERE Status = 'Completed' AND instr(lower(Subject), lower(?)) > 0", (subject,)
        )
    }
    assert {r["Id"] for r in found} <= want and len(found) == min(len(want), 2000)
    # Without RETURNING, the default scope covers the new searchable objects too.
    everywhere = org.search(f"FIND {{{name}}}")["searchRecords"]
    assert {r["attributes"]["type"] for r in everywhere} >= {"Lead"}


def test_describe_agrees_with_the_schema_module(pro: tuple[str, LocalOrg, sqlite3.Connection]) -> None:
    kind, org, _raw = pro
    schema = org_schema(kind)
    for obj in schema.objects:
        d = org.describe(obj.name.lower())
        assert (d["name"], d["keyPrefix"], d["label"]) == (obj.name, obj.key_prefix, obj.label)
        assert [f["name"] for f in d["fields"]] == [f.name for f in obj.fields]
        for described, f in zip(d["fields"], obj.fields, strict=True):
            assert described["picklistValues"] == [
                {"active": True, "defaultValue": False, "label": v, "value": v} for v in f.picklist_values
            ]
            assert described["relationshipName"] == f.relationship_name
            assert set(described["referenceTo"]) == ({f.reference_to, *f.polymorphic} - {None})
        assert [(c["relationshipName"], c["childSObject"], c["field"]) for c in d["childRelationships"]] == [
            (name, child.name, f.name) for name, child, f in schema.child_relationships(obj)
        ]
    with pytest.raises(OrgError, match="NOT_FOUND"):
        org.describe("Solution")


# The object an id names, by its key prefix (its first three characters): the owners Salesforce knows.
_OWNER_PREFIXES = {"005": "User", "00G": "Group", "023": "Calendar"}


def test_every_owner_in_the_file_is_of_a_type_its_field_refers_to(
    pro: tuple[str, LocalOrg, sqlite3.Connection],
) -> None:
    kind, org, raw = pro
    tables = [r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    owned: dict[str, list[str]] = {}
    for table in tables:
        if table.startswith(("sqlite_", "crmarena_")) or "OwnerId" not in [
            r[1] for r in raw.execute(f"PRAGMA table_info({quote_identifier(table)})")
        ]:
            continue
        by_name = {f["name"]: f for f in org.describe(table)["fields"]}
        owned[table] = refers_to = by_name["OwnerId"]["referenceTo"]
        assert by_name["OwnerId"]["polymorphicForeignKey"] == (len(refers_to) > 1), table
        rows = raw.execute(f"SELECT Id, OwnerId FROM {quote_identifier(table)}").fetchall()
        assert rows, table
        for rid, owner in rows:
            assert owner is not None and _OWNER_PREFIXES.get(owner[:3]) in refers_to, (kind, table, rid, owner)
    # The sales objects queues may not own refer to users alone; the ones Salesforce lets queues own, to both.
    assert owned["Opportunity"] == owned["Account"] == owned["Contract"] == owned["Contact"] == ["User"]
    assert owned["Case"] == owned["Lead"] == owned["Order"] == owned["Task"] == owned["Quote"] == ["Group", "User"]
    assert owned["VoiceCallTranscript__c"] == owned["LiveChatTranscript"] == ["Group", "User"]
    assert owned["Event"] == ["Calendar", "User"]
    assert len(owned) == 12


def test_polymorphic_owner_soql_follows_who_may_own(pro: tuple[str, LocalOrg, sqlite3.Connection]) -> None:
    _kind, org, raw = pro
    # An opportunity's owner is always a user: TYPEOF is refused, as Salesforce refuses it on a plain lookup.
    with pytest.raises(OrgError, match="MALFORMED_QUERY") as info:
        org.query("SELECT Id, TYPEOF Owner WHEN User THEN Name END FROM Opportunity")
    assert "always points to User" in info.value.message
    # A lead's may be a queue, an event's a calendar, never a queue.
    (n,) = raw.execute('SELECT COUNT(*) FROM "Lead"').fetchone()
    leads = org.query("SELECT Id, TYPEOF Owner WHEN Group THEN Name WHEN User THEN Email END FROM Lead")
    assert leads["totalSize"] == n and all("@" in r["Owner"]["Email"] for r in leads["records"])
    with pytest.raises(OrgError, match="'Group' is not a type that 'Owner' can point to \\(Calendar, User\\)"):
        org.query("SELECT Id, TYPEOF Owner WHEN Group THEN Name END FROM Event")
    (first,) = org.query(
        "SELECT Id, OwnerId, TYPEOF Owner WHEN Calendar THEN Name ELSE Email END FROM Event ORDER BY Id LIMIT 1"
    )["records"]
    (email,) = raw.execute('SELECT Email FROM "User" WHERE Id = ?', (first["OwnerId"],)).fetchone()
    assert first["Owner"]["Email"] == email
    assert org.query("SELECT COUNT() FROM Calendar")["totalSize"] == 0


def test_the_type_of_a_polymorphic_parent_is_the_object_its_id_names(
    pro: tuple[str, LocalOrg, sqlite3.Connection],
) -> None:
    _kind, org, raw = pro
    # What.Type is the Name object's Type (the record's object), not the opportunity's own Type picklist.
    prefixes = {"006": "Opportunity", "001": "Account", "500": "Case", "800": "Contract", "0Q0": "Quote"}
    want: dict[str, int] = defaultdict(int)
    for (what,) in raw.execute('SELECT WhatId FROM "Task"'):
        want[prefixes[what[:3]]] += 1
    got = org.query("SELECT What.Type t, COUNT(Id) n FROM Task GROUP BY What.Type")["records"]
    assert {r["t"]: r["n"] for r in got} == want and want
    (n,) = raw.execute("SELECT COUNT(*) FROM \"Task\" WHERE WhatId LIKE '006%'").fetchone()
    assert org.query("SELECT COUNT() FROM Task WHERE What.Type = 'Opportunity'")["totalSize"] == n > 0
    assert org.query("SELECT COUNT() FROM Task WHERE What.Type IN ('Account', 'Case')")["totalSize"] == sum(
        want[t] for t in ("Account", "Case")
    )
    (first,) = org.query("SELECT Id, Who.Type, Owner.Type FROM Event ORDER BY Id LIMIT 1")["records"]
    (who,) = raw.execute('SELECT WhoId FROM "Event" WHERE Id = ?', (first["Id"],)).fetchone()
    assert first["Who"]["Type"] == {"003": "Contact", "00Q": "Lead"}[who[:3]] and first["Owner"]["Type"] == "User"
    # A queue-owned record would say Queue; every owner here is a user.
    (leads,) = raw.execute('SELECT COUNT(*) FROM "Lead"').fetchone()
    assert org.query("SELECT COUNT() FROM Lead WHERE Owner.Type = 'User'")["totalSize"] == leads
    assert org.query("SELECT COUNT() FROM Lead WHERE Owner.Type = 'Queue'")["totalSize"] == 0
    # An opportunity's owner is a User, which has no Type field: refused as Salesforce refuses it.
    with pytest.raises(OrgError, match="No such column 'Type' on entity 'User'"):
        org.query("SELECT Id, Owner.Type FROM Opportunity")


def test_an_org_of_a_kind_this_version_does_not_know_is_refused_by_name(tmp_path: Path) -> None:
    import json
    import shutil

    path = tmp_path / "org.sqlite"
    generate_org(path, kind="b2c", seed=0, scale=0.05)
    other = tmp_path / "future.sqlite"
    shutil.copy(path, other)
    conn = sqlite3.connect(other)
    (raw,) = conn.execute("SELECT manifest FROM crmarena_manifest").fetchone()
    conn.execute("UPDATE crmarena_manifest SET manifest = ?", (json.dumps({**json.loads(raw), "kind": "b2g"}),))
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match=r"org kind 'b2g', which this version of crmarena_gym does not know"):
        LocalOrg(other)
    org = LocalOrg(path)
    assert org.kind == "b2c" and "b2c" in repr(org.schema)
    org.close()
