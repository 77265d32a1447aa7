"""SOQL constructs on the small org, each checked against hand-written SQL or Python over the same rows."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections import Counter, defaultdict
from typing import Any

import pytest

from crmarena_gym.org import LocalOrg
from crmarena_gym.schema import id_checksum

Rows = dict[str, list[dict[str, Any]]]


def _ids(result: dict[str, Any]) -> list[str]:
    return [r["Id"] for r in result["records"]]


def _by_id(rows: Rows, obj: str) -> dict[str, dict[str, Any]]:
    return {r["Id"]: r for r in rows[obj]}


def _dt(text: str) -> dt.datetime:
    return dt.datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")


# -- shape -----------------------------------------------------------------------------------------


def test_record_shape_matches_simple_salesforce(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query("SELECT Id, CreatedDate, Status, Subject FROM Case ORDER BY CreatedDate LIMIT 3")
    assert result["done"] is True and result["totalSize"] == 3
    expected = sorted(rows["Case"], key=lambda r: r["CreatedDate"])[:3]
    for rec, row in zip(result["records"], expected, strict=True):
        assert list(rec) == ["attributes", "Id", "CreatedDate", "Status", "Subject"]
        assert rec["attributes"] == {"type": "Case", "url": f"/services/data/v60.0/sobjects/Case/{row['Id']}"}
        assert rec["CreatedDate"] == row["CreatedDate"]
        assert len(rec["CreatedDate"]) == 28 and rec["CreatedDate"].endswith(".000+0000")


def test_field_names_take_the_schema_case(small_org: LocalOrg) -> None:
    rec = small_org.query("select id, SUBJECT, owner.name from case limit 1")["records"][0]
    assert list(rec) == ["attributes", "Id", "Subject", "Owner"]


def test_types_of_values(small_org: LocalOrg, rows: Rows) -> None:
    items = small_org.query("SELECT Id, Quantity, UnitPrice FROM OrderItem")["records"]
    assert all(isinstance(r["Quantity"], float) and isinstance(r["UnitPrice"], float) for r in items)
    products = small_org.query("SELECT Id, IsActive FROM Product2")["records"]
    expected = {r["Id"]: bool(r["IsActive"]) for r in rows["Product2"]}
    assert {r["Id"]: r["IsActive"] for r in products} == expected
    assert all(type(r["IsActive"]) is bool for r in products)
    orders = small_org.query("SELECT EffectiveDate FROM Order")["records"]
    assert {r["EffectiveDate"] for r in orders} == {r["EffectiveDate"] for r in rows["Order"]}


def test_parent_paths_of_any_depth_with_null_parents(small_org: LocalOrg, rows: Rows) -> None:
    contacts, users = _by_id(rows, "Contact"), _by_id(rows, "User")
    result = small_org.query("SELECT Id, Owner.Name, Contact.Owner.Email, Contact.LastName FROM Case")
    assert result["totalSize"] == len(rows["Case"])
    by_id = _by_id(rows, "Case")
    saw_null_contact = saw_null_grand_parent = False
    for rec in result["records"]:
        row = by_id[rec["Id"]]
        owner = users.get(row["OwnerId"])
        if owner is None:
            assert rec["Owner"] is None
        else:
            # A case's owner may be a user or a queue: Salesforce types the parent Name, its url names a User.
            assert rec["Owner"] == {
                "attributes": {"type": "Name", "url": f"/services/data/v60.0/sobjects/User/{owner['Id']}"},
                "Name": f"{owner['FirstName']} {owner['LastName']}",
            }
        contact = contacts.get(row["ContactId"])
        if contact is None:
            saw_null_contact = True
            assert rec["Contact"] is None
            continue
        assert list(rec["Contact"]) == ["attributes", "Owner", "LastName"]
        assert rec["Contact"]["LastName"] == contact["LastName"]
        grand = users.get(contact["OwnerId"])
        if grand is None:
            saw_null_grand_parent = True
            assert rec["Contact"]["Owner"] is None
        else:
            assert rec["Contact"]["Owner"]["Email"] == grand["Email"]
    assert saw_null_contact and saw_null_grand_parent


def test_three_levels_and_object_alias(small_org: LocalOrg, rows: Rows) -> None:
    items, orders, accounts = _by_id(rows, "OrderItem"), _by_id(rows, "Order"), _by_id(rows, "Account")
    result = small_org.query("SELECT c.Id, c.OrderItemId__r.Order.Account.ShippingState FROM Case c")
    for rec in result["records"]:
        case = _by_id(rows, "Case")[rec["Id"]]
        state = accounts[orders[items[case["OrderItemId__c"]]["OrderId"]]["AccountId"]]["ShippingState"]
        assert rec["OrderItemId__r"]["Order"]["Account"]["ShippingState"] == state


def test_object_name_prefix_is_accepted(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    result = small_org.query("SELECT Case.Id FROM Case WHERE Case.Status = 'New'")
    expected = {r[0] for r in raw_conn.execute("SELECT Id FROM \"Case\" WHERE lower(Status) = 'new'")}
    assert set(_ids(result)) == expected


# -- WHERE -----------------------------------------------------------------------------------------


def test_text_equality_is_case_insensitive(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query("SELECT Id FROM Case WHERE Subject = 'shipping DELAY for my order'")
    expected = {r["Id"] for r in rows["Case"] if (r["Subject"] or "").lower() == "shipping delay for my order"}
    assert set(_ids(result)) == expected and expected


def test_not_equal_includes_nulls(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query("SELECT Id FROM Case WHERE Subject != 'Wrong size'")
    expected = {r["Id"] for r in rows["Case"] if r["Subject"] is None or r["Subject"].lower() != "wrong size"}
    assert set(_ids(result)) == expected
    assert any(r["Subject"] is None for r in rows["Case"] if r["Id"] in expected)


def test_equals_null_and_not_null(small_org: LocalOrg, rows: Rows) -> None:
    assert set(_ids(small_org.query("SELECT Id FROM Case WHERE OwnerId = null"))) == {
        r["Id"] for r in rows["Case"] if r["OwnerId"] is None
    }
    assert set(_ids(small_org.query("SELECT Id FROM Case WHERE ClosedDate != NULL"))) == {
        r["Id"] for r in rows["Case"] if r["ClosedDate"] is not None
    }


@pytest.mark.parametrize(
    ("pattern", "predicate"),
    [
        ("%DELAY%", lambda s: "delay" in s.lower()),
        ("shipping%", lambda s: s.lower().startswith("shipping")),
        ("wrong _ize", lambda s: len(s) == 10 and s.lower().startswith("wrong ") and s.lower().endswith("ize")),
        ("%order", lambda s: s.lower().endswith("order")),
    ],
)
def test_like_is_case_insensitive_with_wildcards(small_org: LocalOrg, rows: Rows, pattern: str, predicate: Any) -> None:
    result = small_org.query(f"SELECT Id FROM Case WHERE Subject LIKE '{pattern}'")
    expected = {r["Id"] for r in rows["Case"] if r["Subject"] is not None and predicate(r["Subject"])}
    assert set(_ids(result)) == expected and expected


def test_like_escaped_wildcards_are_literal(small_org: LocalOrg, rows: Rows) -> None:
    assert small_org.query(r"SELECT Id FROM Issue__c WHERE Name LIKE '%\%%'")["totalSize"] == 0
    result = small_org.query(r"SELECT Id FROM Issue__c WHERE Name LIKE 'Billing/Payment\_%' OR Name LIKE '%/%'")
    assert set(_ids(result)) == {r["Id"] for r in rows["Issue__c"] if "/" in r["Name"]}


def test_in_and_not_in_lists(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query("SELECT Id FROM Case WHERE Status IN ('closed', 'NEW')")
    expected = {r["Id"] for r in rows["Case"] if r["Status"].lower() in ("closed", "new")}
    assert set(_ids(result)) == expected
    result = small_org.query("SELECT Id FROM Account WHERE ShippingState NOT IN ('CA', 'NY')")
    expected = {
        r["Id"] for r in rows["Account"] if r["ShippingState"] is None or r["ShippingState"].lower() not in ("ca", "ny")
    }
    assert set(_ids(result)) == expected
    result = small_org.query("SELECT Id FROM Account WHERE ShippingState IN ('TX', null)")
    expected = {r["Id"] for r in rows["Account"] if r["ShippingState"] in ("TX", None)}
    assert set(_ids(result)) == expected


def test_ids_match_in_15_character_and_any_case_form(small_org: LocalOrg, rows: Rows) -> None:
    case_id = rows["Case"][5]["Id"]
    assert _ids(small_org.query(f"SELECT Id FROM Case WHERE Id = '{case_id[:15]}'")) == [case_id]
    assert _ids(small_org.query(f"SELECT Id FROM Case WHERE Id = '{case_id.lower()}'")) == [case_id]
    assert case_id[:15] + id_checksum(case_id[:15]) == case_id
    owner = rows["Case"][1]["OwnerId"]
    result = small_org.query(f"SELECT Id FROM Case WHERE OwnerId IN ('{owner}', '{owner[:15]}')")
    assert set(_ids(result)) == {r["Id"] for r in rows["Case"] if r["OwnerId"] == owner}


def test_numbers_booleans_and_relationship_filters(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query("SELECT Id FROM OrderItem WHERE Quantity > 1 AND UnitPrice <= 12.5")
    expected = {r["Id"] for r in rows["OrderItem"] if r["Quantity"] > 1 and r["UnitPrice"] <= 12.5}
    assert set(_ids(result)) == expected and expected
    result = small_org.query("SELECT Id FROM Product2 WHERE IsActive = false")
    assert set(_ids(result)) == {r["Id"] for r in rows["Product2"] if not r["IsActive"]}
    orders = _by_id(rows, "Order")
    result = small_org.query(
        "SELECT Id FROM OrderItem WHERE Order.Status = 'Activated' AND Order.EffectiveDate < 2022-09-01"
    )
    expected = {
        r["Id"]
        for r in rows["OrderItem"]
        if orders[r["OrderId"]]["Status"] == "Activated" and orders[r["OrderId"]]["EffectiveDate"] < "2022-09-01"
    }
    assert set(_ids(result)) == expected


def test_and_or_not_with_parentheses(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query(
        "SELECT Id FROM Case WHERE (Priority = 'High' OR Priority = 'Low') "
        "AND NOT (Status = 'Closed' OR OwnerId = null)"
    )
    expected = {
        r["Id"]
        for r in rows["Case"]
        if r["Priority"] in ("High", "Low") and not (r["Status"].lower() == "closed" or r["OwnerId"] is None)
    }
    assert set(_ids(result)) == expected and expected
    # NOT over a comparison with a null value is true in SOQL's two-valued logic.
    result = small_org.query("SELECT Id FROM Case WHERE NOT Subject = 'Wrong size'")
    expected = {r["Id"] for r in rows["Case"] if (r["Subject"] or "").lower() != "wrong size"}
    assert set(_ids(result)) == expected


def test_datetime_and_date_literals(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query(
        "SELECT Id FROM Case WHERE CreatedDate >= 2022-06-01T02:00:00+02:00 AND CreatedDate < 2022-09-01T00:00:00Z"
    )
    lo, hi = dt.datetime(2022, 6, 1), dt.datetime(2022, 9, 1)
    expected = {r["Id"] for r in rows["Case"] if lo <= _dt(r["CreatedDate"]) < hi}
    assert set(_ids(result)) == expected and expected
    result = small_org.query("SELECT Id FROM Case WHERE CreatedDate > 2022-06-01T00:00:00.500Z")
    assert set(_ids(result)) == {
        r["Id"] for r in rows["Case"] if _dt(r["CreatedDate"]) >= dt.datetime(2022, 6, 1, 0, 0, 1)
    }
    result = small_org.query("SELECT Id FROM Order WHERE EffectiveDate = 2022-01-01 OR EffectiveDate >= 2023-01-01")
    expected = {
        r["Id"] for r in rows["Order"] if r["EffectiveDate"] == "2022-01-01" or r["EffectiveDate"] >= "2023-01-01"
    }
    assert set(_ids(result)) == expected


# today = Thursday 2023-06-15; ranges written out by hand, [start, end).
RELATIVE = [
    ("TODAY", "2023-06-15", "2023-06-16"),
    ("YESTERDAY", "2023-06-14", "2023-06-15"),
    ("LAST_N_DAYS:30", "2023-05-16", "2023-06-16"),
    ("LAST_90_DAYS", "2023-03-17", "2023-06-16"),
    ("N_DAYS_AGO:40", "2023-05-06", "2023-05-07"),
    ("THIS_WEEK", "2023-06-11", "2023-06-18"),
    ("LAST_WEEK", "2023-06-04", "2023-06-11"),
    ("LAST_N_WEEKS:6", "2023-04-30", "2023-06-11"),
    ("THIS_MONTH", "2023-06-01", "2023-07-01"),
    ("LAST_MONTH", "2023-05-01", "2023-06-01"),
    ("LAST_N_MONTHS:3", "2023-03-01", "2023-06-01"),
    ("N_MONTHS_AGO:2", "2023-04-01", "2023-05-01"),
    ("THIS_QUARTER", "2023-04-01", "2023-07-01"),
    ("LAST_QUARTER", "2023-01-01", "2023-04-01"),
    ("LAST_N_QUARTERS:2", "2022-10-01", "2023-04-01"),
    ("N_QUARTERS_AGO:3", "2022-07-01", "2022-10-01"),
    ("THIS_YEAR", "2023-01-01", "2024-01-01"),
    ("LAST_YEAR", "2022-01-01", "2023-01-01"),
    ("LAST_N_YEARS:1", "2022-01-01", "2023-01-01"),
    ("THIS_FISCAL_QUARTER", "2023-04-01", "2023-07-01"),
    ("LAST_FISCAL_YEAR", "2022-01-01", "2023-01-01"),
]


@pytest.mark.parametrize(("literal", "start", "end"), RELATIVE)
def test_relative_date_literals_on_datetime_fields(
    small_org: LocalOrg, rows: Rows, literal: str, start: str, end: str
) -> None:
    created = [(r["Id"], r["CreatedDate"][:10]) for r in rows["Case"]]
    for op, keep in [
        ("=", lambda d: start <= d < end),
        ("!=", lambda d: not start <= d < end),
        (">", lambda d: d >= end),
        ("<", lambda d: d < start),
        (">=", lambda d: d >= start),
        ("<=", lambda d: d < end),
    ]:
        result = small_org.query(f"SELECT Id FROM Case WHERE CreatedDate {op} {literal}")
        assert set(_ids(result)) == {i for i, d in created if keep(d)}, op


@pytest.mark.parametrize(("literal", "start", "end"), RELATIVE[::3])
def test_relative_date_literals_on_date_fields(
    small_org: LocalOrg, rows: Rows, literal: str, start: str, end: str
) -> None:
    result = small_org.query(f"SELECT Id FROM Order WHERE EffectiveDate = {literal}")
    assert set(_ids(result)) == {r["Id"] for r in rows["Order"] if start <= r["EffectiveDate"] < end}


def test_with_today_moves_relative_literals(small_org: LocalOrg, rows: Rows) -> None:
    view = small_org.with_today("2022-03-10")
    result = view.query("SELECT Id FROM Case WHERE CreatedDate = LAST_MONTH")
    assert set(_ids(result)) == {r["Id"] for r in rows["Case"] if r["CreatedDate"].startswith("2022-02")}
    result = small_org.query("SELECT Id FROM Case WHERE CreatedDate = LAST_MONTH")
    assert set(_ids(result)) == {r["Id"] for r in rows["Case"] if r["CreatedDate"].startswith("2023-05")}


def test_semi_join_and_anti_join(small_org: LocalOrg, rows: Rows) -> None:
    transferred = {
        h["CaseId__c"] for h in rows["CaseHistory__c"] if h["Field__c"] == "Owner Assignment" and h["OldValue__c"]
    }
    result = small_org.query(
        "SELECT Id FROM Case WHERE Id IN (SELECT CaseId__c FROM CaseHistory__c "
        "WHERE Field__c = 'Owner Assignment' AND OldValue__c != null)"
    )
    assert set(_ids(result)) == transferred and transferred
    result = small_org.query(
        "SELECT Id FROM Case WHERE Id NOT IN (SELECT CaseId__c FROM CaseHistory__c "
        "WHERE Field__c = 'Owner Assignment' AND OldValue__c != null)"
    )
    assert set(_ids(result)) == {r["Id"] for r in rows["Case"]} - transferred
    # A reference field on the left, a subquery over another object with a relationship filter.
    result = small_org.query(
        "SELECT Id FROM Contact WHERE OwnerId NOT IN (SELECT OwnerId FROM Case WHERE Status = 'Closed')"
    )
    closed_owners = {r["OwnerId"] for r in rows["Case"] if r["Status"].lower() == "closed" and r["OwnerId"]}
    assert set(_ids(result)) == {
        r["Id"] for r in rows["Contact"] if r["OwnerId"] is None or r["OwnerId"] not in closed_owners
    }


# -- aggregates ------------------------------------------------------------------------------------


def test_count_only_in_total_size(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query("SELECT COUNT() FROM Case WHERE Status = 'Closed'")
    assert result == {
        "totalSize": sum(r["Status"].lower() == "closed" for r in rows["Case"]),
        "done": True,
        "records": [],
    }
    assert small_org.query("SELECT COUNT() FROM Case LIMIT 7")["totalSize"] == 7


def test_count_fields_with_expr_names_and_aliases(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query(
        "SELECT COUNT(Id), COUNT(OwnerId) owned, COUNT_DISTINCT(OwnerId), MAX(CreatedDate) FROM Case"
    )
    cases = rows["Case"]
    assert result["records"] == [
        {
            "attributes": {"type": "AggregateResult"},
            "expr0": len(cases),
            "owned": sum(r["OwnerId"] is not None for r in cases),
            "expr1": len({r["OwnerId"] for r in cases if r["OwnerId"]}),
            "expr2": max(r["CreatedDate"] for r in cases),
        }
    ]


def test_sum_avg_min_max(small_org: LocalOrg, rows: Rows) -> None:
    rec = small_org.query(
        "SELECT SUM(Quantity) q, AVG(UnitPrice) p, MIN(UnitPrice), MAX(Quantity) FROM OrderItem WHERE Quantity >= 1"
    )["records"][0]
    items = rows["OrderItem"]
    assert rec["q"] == pytest.approx(sum(r["Quantity"] for r in items))
    assert rec["p"] == pytest.approx(sum(r["UnitPrice"] for r in items) / len(items))
    assert rec["expr0"] == min(r["UnitPrice"] for r in items) and isinstance(rec["expr0"], float)
    assert rec["expr1"] == max(r["Quantity"] for r in items)


def test_group_by_having_order_by_aggregate(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query(
        "SELECT OwnerId, COUNT(Id) cnt FROM Case WHERE OwnerId != null GROUP BY OwnerId "
        "HAVING COUNT(Id) > 8 ORDER BY COUNT(Id) DESC, OwnerId"
    )
    counts = Counter(r["OwnerId"] for r in rows["Case"] if r["OwnerId"])
    expected = sorted(((o, n) for o, n in counts.items() if n > 8), key=lambda x: (-x[1], x[0]))
    assert [(r["OwnerId"], r["cnt"]) for r in result["records"]] == expected and expected
    assert all(list(r) == ["attributes", "OwnerId", "cnt"] for r in result["records"])


def test_group_by_relationship_field_uses_the_leaf_name(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    result = small_org.query("SELECT Owner.Name, COUNT(Id) FROM Case GROUP BY Owner.Name ORDER BY Owner.Name")
    expected = raw_conn.execute(
        'SELECT u.FirstName || \' \' || u.LastName AS n, COUNT(c.Id) FROM "Case" c LEFT JOIN "User" u '
        "ON u.Id = c.OwnerId GROUP BY n ORDER BY n"
    ).fetchall()
    assert [(r["Name"], r["expr0"]) for r in result["records"]] == expected


def test_date_functions_group_and_filter(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query(
        "SELECT CALENDAR_YEAR(CreatedDate) y, CALENDAR_MONTH(CreatedDate) m, COUNT(Id) n FROM Case "
        "WHERE CALENDAR_QUARTER(CreatedDate) IN (1, 4) GROUP BY CALENDAR_YEAR(CreatedDate), CALENDAR_MONTH(CreatedDate)"
    )
    counts: Counter[tuple[int, int]] = Counter()
    for r in rows["Case"]:
        d = _dt(r["CreatedDate"])
        if (d.month - 1) // 3 + 1 in (1, 4):
            counts[d.year, d.month] += 1
    assert {(r["y"], r["m"]): r["n"] for r in result["records"]} == dict(counts)


@pytest.mark.parametrize(
    ("function", "python"),
    [
        ("DAY_IN_WEEK", lambda d: d.isoweekday() % 7 + 1),
        ("DAY_IN_MONTH", lambda d: d.day),
        ("DAY_IN_YEAR", lambda d: d.timetuple().tm_yday),
        ("WEEK_IN_YEAR", lambda d: (d.timetuple().tm_yday - 1) // 7 + 1),
        ("HOUR_IN_DAY", lambda d: d.hour),
        ("DAY_ONLY", lambda d: d.date().isoformat()),
        ("FISCAL_QUARTER", lambda d: (d.month - 1) // 3 + 1),
    ],
)
def test_each_date_function(small_org: LocalOrg, rows: Rows, function: str, python: Any) -> None:
    result = small_org.query(f"SELECT {function}(CreatedDate), COUNT(Id) FROM Case GROUP BY {function}(CreatedDate)")
    expected = Counter(python(_dt(r["CreatedDate"])) for r in rows["Case"])
    assert {r["expr0"]: r["expr1"] for r in result["records"]} == dict(expected)


def test_day_only_with_date_literal(small_org: LocalOrg, rows: Rows) -> None:
    day = rows["Case"][3]["CreatedDate"][:10]
    result = small_org.query(f"SELECT Id FROM Case WHERE DAY_ONLY(CreatedDate) = {day}")
    assert set(_ids(result)) == {r["Id"] for r in rows["Case"] if r["CreatedDate"].startswith(day)}


def test_grouping_text_is_case_insensitive(small_org: LocalOrg, rows: Rows) -> None:
    result = small_org.query("SELECT Status, COUNT(Id) n FROM Case GROUP BY Status")
    counts = Counter(r["Status"].lower() for r in rows["Case"])
    assert {r["Status"].lower(): r["n"] for r in result["records"]} == dict(counts)


# -- ORDER BY, LIMIT, OFFSET -----------------------------------------------------------------------


def test_order_by_nulls_and_direction(small_org: LocalOrg, rows: Rows) -> None:
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["ClosedDate"] is not None, r["ClosedDate"] or "", r["Id"])

    asc = sorted(rows["Case"], key=key)
    result = small_org.query("SELECT Id FROM Case ORDER BY ClosedDate, Id")
    assert _ids(result) == [r["Id"] for r in asc]  # ascending: nulls first by default
    result = small_org.query("SELECT Id FROM Case ORDER BY ClosedDate ASC NULLS LAST, Id")
    expected = [r["Id"] for r in asc if r["ClosedDate"]] + [r["Id"] for r in asc if not r["ClosedDate"]]
    assert _ids(result) == expected
    result = small_org.query("SELECT Id, ClosedDate FROM Case ORDER BY ClosedDate DESC, Id DESC")
    assert _ids(result) == [r["Id"] for r in sorted(rows["Case"], key=key, reverse=True)]
    result = small_org.query("SELECT Id FROM Case ORDER BY ClosedDate DESC NULLS FIRST, Id DESC")
    descending = sorted(rows["Case"], key=key, reverse=True)
    expected = [r["Id"] for r in descending if not r["ClosedDate"]] + [r["Id"] for r in descending if r["ClosedDate"]]
    assert _ids(result) == expected


def test_order_by_text_ignores_case_and_limit_offset(small_org: LocalOrg, rows: Rows) -> None:
    ordered = sorted(rows["Account"], key=lambda r: ((r["ShippingState"] or "").lower(), r["Id"]))
    nulls = [r for r in ordered if r["ShippingState"] is None]
    ordered = nulls + [r for r in ordered if r["ShippingState"] is not None]
    result = small_org.query("SELECT Id FROM Account ORDER BY ShippingState, Id LIMIT 4 OFFSET 2")
    assert _ids(result) == [r["Id"] for r in ordered[2:6]]
    result = small_org.query("SELECT Id FROM Account ORDER BY ShippingState, Id OFFSET 5")
    assert _ids(result) == [r["Id"] for r in ordered[5:]]


def test_hand_written_sql_agrees_on_a_tool_query(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    soql = (
        "SELECT NewValue__c, COUNT(Id) FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' "
        "AND CreatedDate >= 2022-03-01T00:00:00Z AND CreatedDate <= 2023-03-01T00:00:00Z GROUP BY NewValue__c"
    )
    expected = raw_conn.execute(
        "SELECT NewValue__c, COUNT(Id) FROM \"CaseHistory__c\" WHERE Field__c = 'Owner Assignment' "
        "AND CreatedDate >= '2022-03-01T00:00:00.000+0000' AND CreatedDate <= '2023-03-01T00:00:00.000+0000' "
        "GROUP BY NewValue__c"
    ).fetchall()
    result = small_org.query(soql)
    assert sorted((r["NewValue__c"], r["expr0"]) for r in result["records"]) == sorted(expected)


def test_purchase_history_query_of_the_tools(small_org: LocalOrg, rows: Rows) -> None:
    orders = _by_id(rows, "Order")
    account = rows["Order"][1]["AccountId"]
    result = small_org.query(
        f"SELECT Product2Id, Order.EffectiveDate FROM OrderItem WHERE Order.AccountId = '{account}' "
        "AND Order.Status = 'Activated'"
    )
    expected = sorted(
        (r["Product2Id"], orders[r["OrderId"]]["EffectiveDate"])
        for r in rows["OrderItem"]
        if orders[r["OrderId"]]["AccountId"] == account and orders[r["OrderId"]]["Status"] == "Activated"
    )
    assert sorted((r["Product2Id"], r["Order"]["EffectiveDate"]) for r in result["records"]) == expected


def test_group_counts_by_month_name_task(small_org: LocalOrg, rows: Rows) -> None:
    product = rows["Product2"][0]["Id"]
    items = {r["Id"] for r in rows["OrderItem"] if r["Product2Id"] == product}
    result = small_org.query(
        f"SELECT CALENDAR_MONTH(CreatedDate) month, COUNT(Id) FROM Case WHERE OrderItemId__r.Product2Id = '{product}' "
        "GROUP BY CALENDAR_MONTH(CreatedDate) ORDER BY COUNT(Id) DESC"
    )
    counts: defaultdict[int, int] = defaultdict(int)
    for r in rows["Case"]:
        if r["OrderItemId__c"] in items:
            counts[_dt(r["CreatedDate"]).month] += 1
    assert {r["month"]: r["expr0"] for r in result["records"]} == dict(counts)
    values = [r["expr0"] for r in result["records"]]
    assert values == sorted(values, reverse=True)
