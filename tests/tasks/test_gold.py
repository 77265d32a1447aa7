"""Gold answers on a hand-made org whose answers were worked out by hand (see the comments)."""

from __future__ import annotations

import datetime as dt
import sqlite3

import pytest

from crmarena_gym.tasks._gold import (
    gold_best_region,
    gold_case_routing,
    gold_handle_time,
    gold_monthly_trend,
    gold_top_issue,
    gold_transfer_count,
    purchased_products,
)
from tests.org_builder import OrgBuilder, ts

JAN = (dt.datetime(2021, 1, 1), dt.datetime(2021, 2, 1))


@pytest.fixture(scope="module")
def org(tmp_path_factory: pytest.TempPathFactory) -> tuple[sqlite3.Connection, dict[str, str]]:
    b = OrgBuilder(tmp_path_factory.mktemp("gold") / "org.sqlite")
    ids: dict[str, str] = {}
    for name in "ABCD":
        ids[name] = b.add("User", FirstName=name, LastName="Agent")
    ids["acc1"] = b.add("Account", FirstName="Cal", LastName="One", ShippingState="CA")
    ids["acc2"] = b.add("Account", FirstName="Ore", LastName="Two", ShippingState="OR")
    ids["ct1"] = b.add("Contact", AccountId=ids["acc1"], FirstName="Cal", LastName="One")
    ids["P1"] = b.add("Product2", Name="Trail Shoe")
    ids["P2"] = b.add("Product2", Name="Swim Cap")
    ids["P3"] = b.add("Product2", Name="Yoga Mat")
    o1 = b.add("Order", AccountId=ids["acc1"], Status="Activated", EffectiveDate="2021-01-03")
    o2 = b.add("Order", AccountId=ids["acc1"], Status="Draft", EffectiveDate="2021-01-04")
    oi1 = b.add("OrderItem", OrderId=o1, Product2Id=ids["P1"], Quantity=1.0, UnitPrice=10.0)
    oi2 = b.add("OrderItem", OrderId=o2, Product2Id=ids["P1"], Quantity=1.0, UnitPrice=10.0)
    oi3 = b.add("OrderItem", OrderId=o1, Product2Id=ids["P2"], Quantity=2.0, UnitPrice=5.0)
    for issue in ("I1", "I2", "I3"):
        ids[issue] = b.add("Issue__c", Name=issue)

    def case(
        key: str, owners: list[tuple[str, str]], created: str, closed: str | None, acc: str, item: str, issue: str
    ) -> None:
        # owners: [(agent, when assigned)]; the first assignment has no old value.
        case_id = b.add(
            "Case",
            OwnerId=ids[owners[-1][0]],
            CreatedDate=ts(created),
            ClosedDate=ts(closed) if closed else None,
            Status="Closed" if closed else "New",
            AccountId=ids[acc],
            OrderItemId__c=item,
            IssueId__c=ids[issue],
        )
        b.add("CaseHistory__c", CaseId__c=case_id, CreatedDate=ts(created), Field__c="Case Creation")
        previous = None
        for agent, when in owners:
            b.add(
                "CaseHistory__c",
                CaseId__c=case_id,
                CreatedDate=ts(when),
                Field__c="Owner Assignment",
                OldValue__c=previous,
                NewValue__c=ids[agent],
            )
            previous = ids[agent]
        if closed:
            b.add("CaseHistory__c", CaseId__c=case_id, CreatedDate=ts(closed), Field__c="Case Closed")
        ids[key] = case_id

    case("c1", [("A", "2021-01-05 10:00")], "2021-01-05 10:00", "2021-01-05 12:00", "acc1", oi1, "I1")  # 2h
    case("c2", [("A", "2021-01-10 09:00")], "2021-01-10 09:00", "2021-01-11 09:00", "acc1", oi1, "I2")  # 24h
    case("c3", [("B", "2021-01-12 08:00")], "2021-01-12 08:00", "2021-01-12 09:00", "acc2", oi2, "I2")  # 1h
    case(
        "c4",
        [("B", "2021-01-15 00:00"), ("C", "2021-01-16 00:00")],
        "2021-01-15 00:00",
        "2021-01-17 00:00",
        "acc1",
        oi3,
        "I1",
    )  # 48h, transferred B -> C
    case("c5", [("D", "2021-01-31 23:00")], "2021-01-31 23:00", "2021-02-01 01:00", "acc2", oi2, "I1")  # 2h
    case("c6", [("D", "2021-02-01 00:00")], "2021-02-01 00:00", "2021-02-01 00:30", "acc2", oi1, "I1")
    case(
        "c7",
        [("C", "2020-12-30 00:00"), ("A", "2021-01-02 00:00")],
        "2020-12-30 00:00",
        "2021-01-03 00:00",
        "acc1",
        oi2,
        "I2",
    )
    case("c8", [("B", "2019-12-15 00:00")], "2019-12-15 00:00", "2019-12-16 00:00", "acc1", oi1, "I2")
    case("c9", [("A", "2021-03-01 00:00")], "2021-03-01 00:00", None, "acc1", oi3, "I2")  # open
    case("c10", [("A", "2021-03-02 00:00")], "2021-03-02 00:00", "2021-03-03 00:00", "acc1", oi3, "I3")
    case("c11", [("B", "2021-03-02 00:00")], "2021-03-02 00:00", "2021-03-03 00:00", "acc1", oi1, "I3")
    b.close()
    conn = sqlite3.connect(f"file:{b.path}?mode=ro", uri=True)
    return conn, ids


def test_handle_time(org: tuple[sqlite3.Connection, dict[str, str]]) -> None:
    conn, ids = org
    # Handled in [Jan 1, Feb 1]: A 3 (c1, c2, c7 transferred in), B 2 (c3, c4), C 1 (c4), D 2 (c5, c6 at the
    # inclusive end). n=1 qualifies A, B, D. Non-transferred cases created in [Jan 1, Feb 1): A c1 2h + c2 24h
    # = 13h average, B c3 1h (c4 has two assignments), D c5 2h (c6 is created at the exclusive end).
    assert gold_handle_time(conn, *JAN, 1, "min") == [ids["B"]]
    assert gold_handle_time(conn, *JAN, 1, "max") == [ids["A"]]
    assert gold_handle_time(conn, *JAN, 2, "min") == [ids["A"]]  # only A handled more than 2
    assert gold_handle_time(conn, *JAN, 3, "max") == []  # nobody handled more than 3: unanswerable


def test_transfer_count(org: tuple[sqlite3.Connection, dict[str, str]]) -> None:
    conn, ids = org
    # Transfers out in January: B (c4 B -> C) and C (c7 C -> A); C handled only one case.
    assert gold_transfer_count(conn, *JAN, 1, "max") == [ids["B"]]
    assert gold_transfer_count(conn, *JAN, 0, "max") == sorted([ids["B"], ids["C"]])
    assert gold_transfer_count(conn, *JAN, 2, "min") == []  # A qualifies but never transferred


def test_top_issue_counts_the_inclusive_end(org: tuple[sqlite3.Connection, dict[str, str]]) -> None:
    conn, ids = org
    # P1 (items oi1, oi2) in [Jan 1, Feb 1]: I1 c1, c5, c6 (at the end, included); I2 c2, c3.
    assert gold_top_issue(conn, ids["P1"], *JAN) == [ids["I1"]]
    assert gold_top_issue(conn, ids["P3"], *JAN) == []


def test_monthly_trend_merges_years(org: tuple[sqlite3.Connection, dict[str, str]]) -> None:
    conn, ids = org
    # P1 cases in [2019-12-01, 2021-01-11): December c8 (2019) + c7 (2020) = 2, January c1 + c2 = 2.
    window = (dt.datetime(2019, 12, 1), dt.datetime(2021, 1, 11))
    assert gold_monthly_trend(conn, ids["P1"], *window) == ["December", "January"]
    assert gold_monthly_trend(conn, ids["P1"], *JAN) == ["January"]


def test_best_region(org: tuple[sqlite3.Connection, dict[str, str]]) -> None:
    conn, _ = org
    # Closed cases created in January: CA c1 2h, c2 24h, c4 48h; OR c3 1h, c5 2h.
    assert gold_best_region(conn, *JAN) == ["OR"]


def test_case_routing_tie_breaks(org: tuple[sqlite3.Connection, dict[str, str]]) -> None:
    conn, ids = org
    # I1 closed: A c1, C c4, D c5 + c6 -> D.
    assert gold_case_routing(conn, ids["I1"], ids["P2"]) == [ids["D"]]
    # I3 closed: A c10, B c11 tie; P1 closed: A c1, c2, c7 = 3, B c3, c8, c11 = 3 tie; open: A c9, B none -> B.
    assert gold_case_routing(conn, ids["I3"], ids["P1"]) == [ids["B"]]
    # I3 tie broken by P2: A closed c10 (oi3 = P2), B none -> A.
    assert gold_case_routing(conn, ids["I3"], ids["P2"]) == [ids["A"]]


def test_purchases_count_only_activated_orders(org: tuple[sqlite3.Connection, dict[str, str]]) -> None:
    conn, ids = org
    assert purchased_products(conn, ids["ct1"], dt.date(2021, 1, 3)) == {ids["P1"], ids["P2"]}
    assert purchased_products(conn, ids["ct1"], dt.date(2021, 1, 4)) == set()  # a draft order only


def test_unknown_direction_is_refused(org: tuple[sqlite3.Connection, dict[str, str]]) -> None:
    with pytest.raises(ValueError, match="'longest'"):
        gold_handle_time(org[0], *JAN, 1, "longest")  # type: ignore[arg-type]
