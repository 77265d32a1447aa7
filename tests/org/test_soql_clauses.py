"""FIELDS(), TYPEOF, GROUP BY ROLLUP/CUBE with GROUPING(), WITH, USING SCOPE, FOR VIEW|REFERENCE, FORMAT()
and toLabel() aliases, convertTimezone() in date functions: each against plain SQL or hand-worked values.

Sections of the SOQL and SOSL Reference cited per test.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections import Counter
from itertools import combinations

import pytest

from crmarena_gym.org import LocalOrg, OrgError


def _refused(org: LocalOrg, soql: str, fragment: str, code: str = "MALFORMED_QUERY") -> None:
    with pytest.raises(OrgError) as info:
        org.query(soql)
    assert info.value.code == code and fragment in info.value.message, info.value.message


# -- FIELDS() ("SELECT": FIELDS(ALL), FIELDS(STANDARD), FIELDS(CUSTOM); the unbounded ones need LIMIT 200) --


def test_fields_limit_rule(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    (n,) = raw_conn.execute('SELECT COUNT(*) FROM "Case"').fetchone()
    assert small_org.query("SELECT FIELDS(STANDARD) FROM Case")["totalSize"] == n  # bounded: no LIMIT needed
    assert small_org.query("SELECT FIELDS(ALL) FROM Case LIMIT 200")["totalSize"] == min(n, 200)
    for soql in (
        "SELECT FIELDS(ALL) FROM Case",
        "SELECT FIELDS(CUSTOM) FROM Case LIMIT 201",
        "SELECT Id, (SELECT FIELDS(ALL) FROM Cases) FROM Account LIMIT 5",
    ):
        _refused(small_org, soql, "The SOQL FIELDS function must have a LIMIT of at most 200")
    _refused(small_org, "SELECT Id, FIELDS(ALL) FROM Case LIMIT 5", "duplicate field selected: Id")
    _refused(small_org, "SELECT FIELDS(EVERY) FROM Case LIMIT 5", "FIELDS() takes ALL, STANDARD or CUSTOM")
    _refused(
        small_org, "SELECT FIELDS(ALL) FROM Case GROUP BY Status LIMIT 5", "FIELDS() cannot be used in an aggregate"
    )
    nested = small_org.query("SELECT Id, (SELECT FIELDS(CUSTOM) FROM Cases LIMIT 200) FROM Account LIMIT 5")
    for account in nested["records"]:
        for case in (account["Cases"] or {"records": []})["records"]:
            # Channel is custom (Case has no standard Channel field), though the dump names it without __c.
            assert list(case) == ["attributes", "Channel", "OrderItemId__c", "IssueId__c"]


# -- TYPEOF ("TYPEOF": polymorphic relationships; a case's owner is a user or a queue) ------------------


def test_typeof_owner_takes_the_user_branch(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    owners = {
        cid: (first, last, email)
        for cid, first, last, email in raw_conn.execute(
            'SELECT c.Id, u.FirstName, u.LastName, u.Email FROM "Case" c JOIN "User" u ON u.Id = c.OwnerId'
        )
    }
    result = small_org.query("SELECT Id, TYPEOF Owner WHEN User THEN Name, Email WHEN Group THEN Name END FROM Case")
    for rec in result["records"]:
        if rec["Id"] not in owners:
            assert rec["Owner"] is None
            continue
        first, last, email = owners[rec["Id"]]
        assert rec["Owner"]["attributes"]["type"] == "User"
        assert list(rec["Owner"])[1:] == ["Name", "Email"]
        assert rec["Owner"]["Name"] == f"{first} {last}" and rec["Owner"]["Email"] == email
    # With no WHEN for a user, the ELSE fields apply.
    soql = "SELECT TYPEOF Owner WHEN Group THEN Name ELSE Alias END FROM Case WHERE OwnerId != null ORDER BY Id LIMIT 1"
    (rec,) = small_org.query(soql)["records"]
    (alias,) = raw_conn.execute(
        'SELECT u.Alias FROM "Case" c JOIN "User" u ON u.Id = c.OwnerId ORDER BY c.Id LIMIT 1'
    ).fetchone()
    assert rec["Owner"]["Alias"] == alias


def test_owner_type_names_the_owners_object(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    # A case's Owner is Salesforce's Name object (a user or a queue): its Type is User or Queue, by the id's prefix.
    want: dict[str | None, int] = {}
    for (owner,) in raw_conn.execute('SELECT OwnerId FROM "Case"'):
        kind = None if owner is None else {"005": "User", "00G": "Queue"}[owner[:3]]
        want[kind] = want.get(kind, 0) + 1
    got = small_org.query("SELECT Owner.Type t, COUNT(Id) n FROM Case GROUP BY Owner.Type")["records"]
    assert {r["t"]: r["n"] for r in got} == want and want.get("User")
    queued = small_org.query("SELECT COUNT() FROM Case WHERE Owner.Type = 'Queue'")["totalSize"]
    assert queued == want.get("Queue", 0)
    # A contact's owner is a user alone (a User, not a Name): User has no Type field.
    _refused(small_org, "SELECT Owner.Type FROM Contact", "No such column 'Type' on entity 'User'", "INVALID_FIELD")


def test_typeof_refusals(small_org: LocalOrg) -> None:
    _refused(small_org, "SELECT TYPEOF Contact WHEN Contact THEN Name END FROM Case", "polymorphic relationship")
    _refused(small_org, "SELECT TYPEOF Owner WHEN Account THEN Name END FROM Case", "'Account' is not a type")
    _refused(small_org, "SELECT TYPEOF Owner WHEN User THEN Nickname END FROM Case", "No such column", "INVALID_FIELD")
    _refused(small_org, "SELECT TYPEOF Boss WHEN User THEN Name END FROM Case", "Boss", "INVALID_FIELD")
    _refused(small_org, "SELECT COUNT(Id), TYPEOF Owner WHEN User THEN Name END FROM Case", "TYPEOF cannot")
    _refused(small_org, "SELECT TYPEOF Owner WHEN User THEN Name FROM Case", "unexpected token")


# -- GROUP BY ROLLUP / CUBE and GROUPING() ("GROUP BY ROLLUP", "GROUP BY CUBE", "GROUPING(fieldName)") ----


def _lower(value: str | None) -> str | None:
    return None if value is None else value.lower()


def _sets(raw: sqlite3.Connection, kind: str) -> Counter:
    # Grouping compares text case-insensitively, as SOQL does ('Closed' and 'closed' are one group).
    rows = [tuple(_lower(v) for v in r) for r in raw.execute('SELECT Status, Priority FROM "Case"')]
    fields = (0, 1)
    if kind == "ROLLUP":
        sets = [(0, 1), (0,), ()]
    else:
        sets = [c for k in (2, 1, 0) for c in combinations(fields, k)]
    out: Counter = Counter()
    for kept in sets:
        for row in rows:
            key = tuple(row[i] if i in kept else None for i in fields)
            flags = tuple(0 if i in kept else 1 for i in fields)
            out[key + flags] += 1
    return out


@pytest.mark.parametrize("kind", ["ROLLUP", "CUBE"])
def test_rollup_and_cube_subtotals(small_org: LocalOrg, raw_conn: sqlite3.Connection, kind: str) -> None:
    soql = (
        "SELECT Status, Priority, GROUPING(Status) gs, GROUPING(Priority) gp, COUNT(Id) n "
        f"FROM Case GROUP BY {kind}(Status, Priority)"
    )
    records = small_org.query(soql)["records"]
    got = Counter()
    for r in records:
        got[(_lower(r["Status"]), _lower(r["Priority"]), r["gs"], r["gp"])] += r["n"]
    assert got == _sets(raw_conn, kind)
    assert len(records) == len(got)  # one row per group and subtotal
    total = records[-1]  # the grand total comes last
    assert (total["gs"], total["gp"], total["n"]) == (
        1,
        1,
        raw_conn.execute('SELECT COUNT(*) FROM "Case"').fetchone()[0],
    )


def test_rollup_with_having_order_by_and_limit(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    soql = (
        "SELECT Status, COUNT(Id) n FROM Case GROUP BY ROLLUP(Status) HAVING COUNT(Id) > 1 "
        "ORDER BY COUNT(Id) DESC, Status LIMIT 3"
    )
    counts = Counter(_lower(r[0]) for r in raw_conn.execute('SELECT Status FROM "Case"'))
    rows = [(s, n) for s, n in counts.items() if n > 1] + [(None, sum(counts.values()))]
    rows.sort(key=lambda x: (-x[1], x[0] is not None, x[0] or ""))
    got = [(_lower(r["Status"]), r["n"]) for r in small_org.query(soql)["records"]]
    assert got == rows[:3]


def test_rollup_refusals(small_org: LocalOrg) -> None:
    _refused(
        small_org,
        "SELECT COUNT(Id) FROM Case GROUP BY ROLLUP(Status, Priority, Channel, OwnerId)",
        "at most 3 fields",
    )
    _refused(small_org, "SELECT Status, GROUPING(Status) FROM Case GROUP BY Status", "GROUPING() can only be used")
    _refused(small_org, "SELECT GROUPING(Channel) FROM Case GROUP BY CUBE(Status)", "GROUPING() takes a field")
    _refused(small_org, "SELECT COUNT(Id) FROM Case GROUP BY ROLLUP(Status), Priority", "unexpected token")


# -- WITH, USING SCOPE, FOR VIEW/REFERENCE ("WITH SECURITY_ENFORCED", "USING SCOPE", "FOR VIEW") ---------


def test_accepted_clauses_and_their_effect(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    base = small_org.query("SELECT Id FROM Case WHERE Status != 'Closed' ORDER BY Id")
    for soql in (
        "SELECT Id FROM Case WHERE Status != 'Closed' WITH SECURITY_ENFORCED ORDER BY Id",
        "SELECT Id FROM Case WHERE Status != 'Closed' WITH USER_MODE ORDER BY Id",
        "SELECT Id FROM Case WHERE Status != 'Closed' WITH SYSTEM_MODE ORDER BY Id",
        "SELECT Id FROM Case USING SCOPE Everything WHERE Status != 'Closed' ORDER BY Id",
        "SELECT Id FROM Case WHERE Status != 'Closed' ORDER BY Id FOR VIEW",
        "SELECT Id FROM Case WHERE Status != 'Closed' ORDER BY Id FOR REFERENCE",
    ):
        assert small_org.query(soql) == base, soql
    # USING SCOPE mine keeps the API user's records: the org's first user, who owns some cases.
    (me,) = raw_conn.execute('SELECT MIN(Id) FROM "User"').fetchone()
    mine = [r[0] for r in raw_conn.execute('SELECT Id FROM "Case" WHERE OwnerId = ? ORDER BY Id', (me,))]
    got = small_org.query("SELECT Id FROM Case USING SCOPE mine ORDER BY Id")
    assert [r["Id"] for r in got["records"]] == mine
    _refused(small_org, "SELECT Id FROM Case USING SCOPE Galaxy", "Invalid scope: Galaxy")
    _refused(small_org, "SELECT Id FROM Case WITH EVERYTHING", "unexpected token: 'EVERYTHING'")
    _refused(small_org, "SELECT Id, (SELECT Id FROM Cases USING SCOPE mine) FROM Account", "not allowed in a subquery")
    _refused(small_org, "SELECT Id, (SELECT Id FROM Cases FOR VIEW) FROM Account", "outer query")


# -- FORMAT() and toLabel() with aliases ("FORMAT()", "toLabel()"), convertTimezone() ("convertTimezone()") --


def test_format_and_tolabel_aliases(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    soql = (
        "SELECT Id, toLabel(Status) st, FORMAT(CreatedDate) created, FORMAT(ClosedDate) FROM Case ORDER BY Id LIMIT 5"
    )
    rows = raw_conn.execute('SELECT Id, Status, CreatedDate, ClosedDate FROM "Case" ORDER BY Id LIMIT 5').fetchall()

    def shown(text: str | None) -> str | None:
        if text is None:
            return None
        t = dt.datetime.strptime(text[:16], "%Y-%m-%dT%H:%M")
        return f"{t.month}/{t.day}/{t.year}, {t.strftime('%I').lstrip('0')}:{t:%M} {t:%p}"

    for rec, (cid, status, created, closed) in zip(small_org.query(soql)["records"], rows, strict=True):
        assert list(rec) == ["attributes", "Id", "st", "created", "ClosedDate"]
        assert rec["Id"] == cid and rec["st"] == status
        assert rec["created"] == shown(created) and rec["ClosedDate"] == shown(closed)
    prices = small_org.query("SELECT FORMAT(UnitPrice) p, FORMAT(Quantity) FROM OrderItem ORDER BY Id")["records"]
    expected = raw_conn.execute("SELECT UnitPrice, Quantity FROM OrderItem ORDER BY Id").fetchall()
    for rec, (price, qty) in zip(prices, expected, strict=True):
        assert rec["p"] == f"${price:,.2f}"
        assert rec["Quantity"] == (f"{qty:,.3f}".rstrip("0").rstrip("."))
    (total,) = small_org.query("SELECT FORMAT(SUM(UnitPrice)) total FROM OrderItem")["records"]
    (raw_total,) = raw_conn.execute("SELECT SUM(UnitPrice) FROM OrderItem").fetchone()
    assert total["total"] == f"${raw_total:,.2f}"
    _refused(small_org, "SELECT Status s FROM Case", "Only aggregate expressions use field aliasing")
    _refused(small_org, "SELECT Id FROM Case WHERE FORMAT(CreatedDate) = 'x'", "FORMAT() can only be used")
    _refused(small_org, "SELECT toLabel(Status) s, Subject s FROM Case", "Only aggregate")
    _refused(small_org, "SELECT toLabel(Status) s, toLabel(Priority) s FROM Case", "duplicate alias: s")


def test_convert_timezone_inside_date_functions(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    # The API user works in UTC (the org's stored time), so the conversion keeps every hour as stored.
    soql = (
        "SELECT HOUR_IN_DAY(convertTimezone(CreatedDate)) h, COUNT(Id) n FROM Case "
        "GROUP BY HOUR_IN_DAY(convertTimezone(CreatedDate))"
    )
    got = {r["h"]: r["n"] for r in small_org.query(soql)["records"]}
    expected = dict(
        raw_conn.execute('SELECT CAST(substr(CreatedDate, 12, 2) AS INTEGER), COUNT(*) FROM "Case" GROUP BY 1')
    )
    assert got == expected
    _refused(small_org, "SELECT convertTimezone(CreatedDate) FROM Case", "only be used inside a date function")
