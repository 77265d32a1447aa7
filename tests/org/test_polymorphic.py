"""Polymorphic relationships (a task's What and Who, a case's or a lead's Owner) read through Salesforce's Name
object: the fields it has, answered from the record the id names whatever its object; the others refused.

Records are written through ``OrgSession`` on a small B2B org; every expected name is read from the org file's
own tables with plain SQLite (a person's name from its first and last name, a case's from its row's number).
"""

from __future__ import annotations

import functools
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from crmarena_gym.org import LocalOrg, OrgError, OrgSession
from tests.org.conftest import small_pro_org

TODAY = "2024-01-31"
URL = "/services/data/v60.0/sobjects/"


@pytest.fixture(scope="module")
def org_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_pro_org(tmp_path_factory.mktemp("b2b") / "b2b.sqlite", "b2b", seed=6)


def _first(raw: sqlite3.Connection, sql: str) -> tuple[object, ...]:
    row = raw.execute(sql).fetchone()
    assert row is not None, sql
    return tuple(row)


@pytest.fixture(scope="module")
def written(org_path: Path, raw: sqlite3.Connection) -> Iterator[tuple[OrgSession, dict[str, dict[str, object]]]]:
    """A session with tasks about an account, an opportunity, a lead and a contact, and an event about a case.

    Returns the session and, by the written record's id, what its What and Who must read as (from the file).
    """
    account_id, account = _first(raw, "SELECT Id, Name FROM Account ORDER BY Id LIMIT 1")
    opp_id, opp = _first(raw, "SELECT Id, Name FROM Opportunity ORDER BY Id DESC LIMIT 1")
    lead_id, first, last, lead_email = _first(raw, "SELECT Id, FirstName, LastName, Email FROM Lead ORDER BY Id")
    lead = f"{first} {last}"
    contact_id, cfirst, clast = _first(raw, "SELECT Id, FirstName, LastName FROM Contact ORDER BY Id LIMIT 1")
    contact = f"{cfirst} {clast}"
    # A case's name is its number: its row's, eight digits from 1000 (Salesforce's auto-number).
    case_id, rowid = _first(raw, 'SELECT Id, rowid FROM "Case" ORDER BY Id LIMIT 1')
    case_number = f"{int(rowid) + 999:08d}"  # type: ignore[call-overload]
    session = OrgSession(LocalOrg(org_path, today=TODAY))
    expect: dict[str, dict[str, object]] = {}
    for subject, what, who, what_name, what_type, who_name, who_type in (
        ("About the account", account_id, None, account, "Account", None, None),
        ("About the deal", opp_id, None, opp, "Opportunity", None, None),
        ("Call the lead", None, lead_id, None, None, lead, "Lead"),
        ("Call the contact", account_id, contact_id, account, "Account", contact, "Contact"),
    ):
        values = {"Subject": subject, "WhatId": what, "WhoId": who}
        task = session.create("Task", {k: v for k, v in values.items() if v is not None})
        expect[task] = {
            "subject": subject,
            "what": what,
            "who": who,
            "what_name": what_name,
            "what_type": what_type,
            "who_name": who_name,
            "who_type": who_type,
        }
    event = session.create(
        "Event",
        {
            "Subject": "Review the case",
            "WhatId": case_id,
            "WhoId": contact_id,
            "StartDateTime": "2024-02-01T10:00:00Z",
            "DurationInMinutes": 30,
        },
    )
    expect[event] = {"what": case_id, "what_name": case_number, "who": contact_id, "who_name": contact}
    expect["lead email"] = {"value": lead_email}
    yield session, expect
    session.drop()


def test_what_and_who_read_the_record_their_id_names(written: tuple[OrgSession, dict[str, dict[str, object]]]) -> None:
    session, expect = written
    ids = [k for k in expect if k.startswith("00T")]
    quoted = ", ".join(f"'{i}'" for i in ids)
    soql = f"SELECT Id, What.Name, What.Type, Who.Name, Who.Type, Who.Email FROM Task WHERE Id IN ({quoted})"
    got = {r["Id"]: r for r in session.query(soql)["records"]}
    assert set(got) == set(ids)
    for task in ids:
        want, record = expect[task], got[task]
        if want["what"] is None:
            assert record["What"] is None
        else:
            # Salesforce types the parent Name; its url names the record's own object.
            assert record["What"] == {
                "attributes": {"type": "Name", "url": f"{URL}{want['what_type']}/{want['what']}"},
                "Name": want["what_name"],
                "Type": want["what_type"],
            }
        if want["who"] is None:
            assert record["Who"] is None
        else:
            assert record["Who"]["attributes"] == {"type": "Name", "url": f"{URL}{want['who_type']}/{want['who']}"}
            assert (record["Who"]["Name"], record["Who"]["Type"]) == (want["who_name"], want["who_type"])
            # The Name object's Email is a user's or a queue's only (the Object Reference): a person's is null.
            assert record["Who"]["Email"] is None
    (event,) = [k for k in expect if k.startswith("00U")]
    (record,) = session.query(f"SELECT What.Name, What.Id, Who.Name FROM Event WHERE Id = '{event}'")["records"]
    assert record["What"]["Name"] == expect[event]["what_name"]  # a case's name is its number
    assert record["What"]["Id"] == expect[event]["what"]
    assert record["Who"]["Name"] == expect[event]["who_name"]


def test_where_order_by_and_group_by_through_the_name_object(
    written: tuple[OrgSession, dict[str, dict[str, object]]], raw: sqlite3.Connection
) -> None:
    session, expect = written
    ids = [k for k in expect if k.startswith("00T")]
    quoted = ", ".join(f"'{i}'" for i in ids)
    about_account = [t for t in ids if expect[t]["what_type"] == "Account"]
    name = expect[about_account[0]]["what_name"]
    # WHERE on What.Name matches tasks about the account (an Account's Name, not an Opportunity's).
    found = session.query(f"SELECT Id FROM Task WHERE What.Name = '{name}' AND Id IN ({quoted})")["records"]
    assert sorted(r["Id"] for r in found) == sorted(about_account)
    # The file's own tasks about that account too, counted with plain SQL.
    (account_id,) = _first(raw, "SELECT Id FROM Account ORDER BY Id LIMIT 1")
    (theirs,) = _first(raw, f"SELECT COUNT(*) FROM Task WHERE WhatId = '{account_id}'")
    assert session.query(f"SELECT COUNT() FROM Task WHERE What.Name = '{name}'")["totalSize"] == theirs + len(
        about_account
    )
    # Who.Name LIKE reaches a lead.
    lead_task = next(t for t in ids if expect[t]["who_type"] == "Lead")
    lead_name = str(expect[lead_task]["who_name"])
    found = session.query(f"SELECT Id FROM Task WHERE Who.Name LIKE '{lead_name}' AND Id IN ({quoted})")["records"]
    assert [r["Id"] for r in found] == [lead_task]
    # ORDER BY What.Name: nulls first, then by name, as Salesforce sorts ascending.
    ordered = session.query(f"SELECT Id, What.Name FROM Task WHERE Id IN ({quoted}) ORDER BY What.Name, Id")
    names = [(r["What"] or {}).get("Name") for r in ordered["records"]]
    want = sorted((expect[t]["what_name"] for t in ids), key=lambda n: (n is not None, str(n or "").lower()))
    assert names == want
    # GROUP BY What.Type across the whole table equals the file's tasks by key prefix plus the session's.
    prefixes = {"006": "Opportunity", "001": "Account", "500": "Case", "800": "Contract", "0Q0": "Quote"}
    counts: dict[object, int] = {}
    for (what,) in raw.execute("SELECT WhatId FROM Task"):
        kind = None if what is None else prefixes[what[:3]]
        counts[kind] = counts.get(kind, 0) + 1
    for t in ids:
        counts[expect[t]["what_type"]] = counts.get(expect[t]["what_type"], 0) + 1
    grouped = session.query("SELECT What.Type t, COUNT(Id) n FROM Task GROUP BY What.Type")["records"]
    assert {r["t"]: r["n"] for r in grouped} == counts
    # GROUP BY What.Name: every name the session's tasks read, with how many tasks read it.
    rows = session.query(f"SELECT What.Name w, COUNT(Id) n FROM Task WHERE Id IN ({quoted}) GROUP BY What.Name")
    by_name: dict[object, int] = {}
    for t in ids:
        by_name[expect[t]["what_name"]] = by_name.get(expect[t]["what_name"], 0) + 1
    assert {r["w"]: r["n"] for r in rows["records"]} == by_name


def test_fields_outside_the_name_object_are_refused(written: tuple[OrgSession, dict[str, dict[str, object]]]) -> None:
    session, _ = written
    for soql, field in (
        ("SELECT What.Amount FROM Task", "Amount"),  # an opportunity's field: the Name object has none
        ("SELECT Id FROM Task WHERE What.StageName = 'Closed'", "StageName"),
        ("SELECT Id FROM Task ORDER BY Who.Company", "Company"),
        ("SELECT Owner.Department FROM Lead", "Department"),
    ):
        with pytest.raises(OrgError) as info:
            session.query(soql)
        assert info.value.code == "INVALID_FIELD", soql
        assert f"No such column '{field}' on entity 'Name'" in str(info.value), soql
    # The Name object has no relationship to follow further.
    with pytest.raises(OrgError) as info:
        session.query("SELECT What.Account.Name FROM Task")
    assert info.value.code == "INVALID_FIELD" and "Didn't understand relationship 'Account'" in str(info.value)
    # A relationship to one object is unchanged: an opportunity's account's fields, a contact's owner's.
    assert session.query("SELECT Account.Industry, Owner.Alias FROM Opportunity LIMIT 1")["records"]
    # TYPEOF still reaches an object's own fields.
    typed = session.query("SELECT TYPEOF What WHEN Opportunity THEN Amount END FROM Task WHERE WhatId != null LIMIT 5")
    assert typed["totalSize"] == 5


def test_owner_name_on_cases_and_leads_is_the_users(org_path: Path, raw: sqlite3.Connection) -> None:
    org = LocalOrg(org_path, today=TODAY)
    users = {
        i: (f"{f} {last}", email, alias)
        for i, f, last, email, alias in raw.execute("SELECT Id, FirstName, LastName, Email, Alias FROM User")
    }
    for obj in ("Case", "Lead"):
        owners = dict(raw.execute(f'SELECT Id, OwnerId FROM "{obj}"').fetchall())
        got = org.query(f"SELECT Id, Owner.Name, Owner.Email, Owner.Alias, Owner.IsActive FROM {obj}")["records"]
        assert len(got) == len(owners) > 0
        for r in got:
            owner = owners[r["Id"]]
            if owner is None:
                assert r["Owner"] is None
                continue
            name, email, alias = users[owner]
            assert r["Owner"]["attributes"] == {"type": "Name", "url": f"{URL}User/{owner}"}, obj
            assert (r["Owner"]["Name"], r["Owner"]["Email"], r["Owner"]["Alias"], r["Owner"]["IsActive"]) == (
                name,
                email,
                alias,
                True,
            ), obj
    org.close()


def test_typeof_takes_each_records_own_branch(
    written: tuple[OrgSession, dict[str, dict[str, object]]], raw: sqlite3.Connection
) -> None:
    session, expect = written
    ids = [k for k in expect if k.startswith("00T")]
    quoted = ", ".join(f"'{i}'" for i in ids)
    soql = (
        "SELECT Id, TYPEOF What WHEN Opportunity THEN Name, Amount WHEN Account THEN Industry ELSE Name END, "
        f"TYPEOF Who WHEN Lead THEN Company WHEN Contact THEN Title END FROM Task WHERE Id IN ({quoted})"
    )
    got = {r["Id"]: r for r in session.query(soql)["records"]}
    for task in ids:
        want, record = expect[task], got[task]
        if want["what_type"] == "Opportunity":
            amount = _first(raw, f"SELECT Amount FROM Opportunity WHERE Id = '{want['what']}'")[0]
            assert record["What"] == {
                "attributes": {"type": "Opportunity", "url": f"{URL}Opportunity/{want['what']}"},
                "Name": want["what_name"],
                "Amount": amount,
            }
        elif want["what_type"] == "Account":
            (industry,) = _first(raw, f"SELECT Industry FROM Account WHERE Id = '{want['what']}'")
            assert record["What"] == {
                "attributes": {"type": "Account", "url": f"{URL}Account/{want['what']}"},
                "Industry": industry,
            }
        else:
            assert record["What"] is None
        if want["who_type"] == "Lead":
            (company,) = _first(raw, f"SELECT Company FROM Lead WHERE Id = '{want['who']}'")
            assert record["Who"] == {
                "attributes": {"type": "Lead", "url": f"{URL}Lead/{want['who']}"},
                "Company": company,
            }
        elif want["who_type"] == "Contact":
            (title,) = _first(raw, f"SELECT Title FROM Contact WHERE Id = '{want['who']}'")
            assert record["Who"]["Title"] == title and record["Who"]["attributes"]["type"] == "Contact"
        else:
            assert record["Who"] is None
    # A record of no WHEN's type takes the ELSE fields (the Name object's), typed with its own object.
    (event,) = [k for k in expect if k.startswith("00U")]
    soql = f"SELECT TYPEOF What WHEN Opportunity THEN Amount ELSE Name, Type END FROM Event WHERE Id = '{event}'"
    (record,) = session.query(soql)["records"]
    assert record["What"] == {
        "attributes": {"type": "Case", "url": f"{URL}Case/{expect[event]['what']}"},
        "Name": expect[event]["what_name"],
        "Type": "Case",
    }
    # The same relationship both in a TYPEOF and in the field list is refused, as Salesforce refuses it.
    for soql in (
        "SELECT What.Name, TYPEOF What WHEN Account THEN Name END FROM Task",
        "SELECT TYPEOF What WHEN Account THEN Name END, What.Name FROM Task",
        "SELECT TYPEOF What WHEN Account THEN Name ELSE Amount END FROM Task",
    ):
        with pytest.raises(OrgError) as info:
            session.query(soql)
        assert info.value.code in ("MALFORMED_QUERY", "INVALID_FIELD"), soql


# The objects a task's What and Who, and a lead's or a case's Owner, may name that a B2B org stores (the Object
# Reference's "Refers To"; a queue, a Group, has no table here, so no record).
_STORED_TARGETS = {
    "WhatId": ("Opportunity", "Account", "Case", "Contract", "Quote", "Order"),
    "WhoId": ("Contact", "Lead"),
    "OwnerId": ("User",),
}


def _types_by_sql(raw: sqlite3.Connection, table: str, column: str) -> dict[str, object]:
    """Each record's parent type as plain SQL sees it: the stored object whose table holds the id, else None."""
    out: dict[str, object] = {}
    for record_id, target in raw.execute(f'SELECT Id, "{column}" FROM "{table}"'):
        found = [
            o
            for o in _STORED_TARGETS[column]
            if target and raw.execute(f'SELECT 1 FROM "{o}" WHERE Id = ?', (target,)).fetchone()
        ]
        out[record_id] = found[0] if found else None
    return out


@pytest.fixture(scope="module")
def dangling(org_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the org whose file holds ids that name no record (a dump's dangling references: a session refuses
    to write one): tasks about an opportunity and an account that are not there, a lead that is not there, and an
    asset (no table); a lead owned by a user and a case by a queue that are not there."""
    from crmarena_gym.schema import org_schema

    path = tmp_path_factory.mktemp("dangling") / "b2b.sqlite"
    shutil.copy(org_path, path)
    ghost = functools.partial(org_schema("b2b").make_id, number=99_999_999)  # above every generated id
    conn = sqlite3.connect(path)
    tasks = [i for (i,) in conn.execute("SELECT Id FROM Task ORDER BY Id LIMIT 3")]
    for task, what, who in zip(
        tasks, (ghost("006"), ghost("001"), ghost("02i")), (None, ghost("00Q"), None), strict=True
    ):
        conn.execute("UPDATE Task SET WhatId = ?, WhoId = COALESCE(?, WhoId) WHERE Id = ?", (what, who, task))
    conn.execute("UPDATE Lead SET OwnerId = ? WHERE Id = (SELECT MIN(Id) FROM Lead)", (ghost("005"),))
    conn.execute('UPDATE "Case" SET OwnerId = ? WHERE Id = (SELECT MIN(Id) FROM "Case")', (ghost("00G"),))
    conn.commit()
    conn.close()
    return path


def test_a_parent_id_naming_no_record_has_no_type(dangling: Path) -> None:
    """On Salesforce an id that names no record gives a null relationship: What.Type (Who.Type, Owner.Type) is null,
    and ``WHERE What.Type = 'Opportunity'`` does not match it; the same on the file, in a session and served."""
    raw = sqlite3.connect(dangling.as_uri() + "?mode=ro", uri=True)
    expected = {
        (table, column): _types_by_sql(raw, table, column)
        for table, column in (("Task", "WhatId"), ("Task", "WhoId"), ("Lead", "OwnerId"), ("Case", "OwnerId"))
    }
    raw.close()
    assert None in expected["Task", "WhatId"].values() and "Opportunity" in expected["Task", "WhatId"].values()
    org = LocalOrg(dangling, today=TODAY)
    session = OrgSession(LocalOrg(dangling, today=TODAY))
    runners: list[tuple[str, Callable[[str], dict]]] = [("file", org.query), ("session", session.query)]
    try:
        from starlette.testclient import TestClient

        from crmarena_gym.org.serve import SessionHub
        from crmarena_gym.org.serve._app import make_app

        client = TestClient(make_app(SessionHub(dangling, token="t0", today=TODAY)))

        def served(soql: str) -> dict[str, object]:
            page = client.get("/services/data/v60.0/query", params={"q": soql}, headers={"Authorization": "Bearer t0"})
            assert page.status_code == 200, page.text
            return page.json()

        runners.append(("served", served))
    except ImportError:
        pass  # the served org needs starlette (an extra); the file and the session still answer
    for where, query in runners:
        for (table, column), types in expected.items():
            relationship = column.removesuffix("Id")
            grouped = query(f"SELECT {relationship}.Type t, COUNT(Id) n FROM {table} GROUP BY {relationship}.Type")
            counts: dict[object, int] = {}
            for kind in types.values():
                counts[kind] = counts.get(kind, 0) + 1
            assert {r["t"]: r["n"] for r in grouped["records"]} == counts, (where, table, column)
            for kind in {*counts} - {None}:
                found = query(f"SELECT Id FROM {table} WHERE {relationship}.Type = '{kind}'")["records"]
                assert sorted(r["Id"] for r in found) == sorted(i for i, k in types.items() if k == kind), where
            nothing = query(f"SELECT Id FROM {table} WHERE {relationship}.Type = null")["records"]
            assert sorted(r["Id"] for r in nothing) == sorted(i for i, k in types.items() if k is None), where
        dangling_tasks = [i for i, k in expected["Task", "WhatId"].items() if k is None]
        quoted = ", ".join(f"'{i}'" for i in dangling_tasks)
        rows = query(f"SELECT Id, WhatId, What.Type, What.Name FROM Task WHERE Id IN ({quoted})")["records"]
        assert len(rows) == len(dangling_tasks) and all(r["What"] is None for r in rows), where
        assert any(r["WhatId"] is not None for r in rows), where  # the id itself is still there
    session.drop()
    org.close()
