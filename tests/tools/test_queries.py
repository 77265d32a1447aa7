"""The query tools over a hand-made org, read through the embedded engine.

Every expectation is computed from the rows inserted here with plain Python (or written by hand),
never by the tools. The ``Error:`` paths that fail before any query are checked to send none.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.org import LocalOrg, Org
from crmarena_gym.schema import make_id
from crmarena_gym.tools import (
    get_account_id_by_contact_id,
    get_agent_handled_cases_by_period,
    get_agent_transferred_cases_by_period,
    get_cases,
    get_email_messages_by_case_id,
    get_issue_counts,
    get_issues,
    get_livechat_transcript_by_case_id,
    get_non_transferred_case_ids,
    get_order_item_ids_by_product,
    get_purchase_history,
    get_shipping_state,
    issue_soql_query,
    issue_sosl_query,
    search_knowledge_articles,
    search_products,
    toolset,
)
from tests.org_builder import OrgBuilder


def stamp(text: str) -> str:
    """The stored form of ``YYYY-MM-DDTHH:MM:SS``."""
    return text + ".000+0000"


def moment(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text[:19])


START, END = "2021-01-01T00:00:00Z", "2021-02-01T00:00:00Z"
T0, T1 = moment(START), moment(END)

A1, A2, A3, A4 = (make_id("005", n) for n in (1, 2, 3, 4))
ACC1, ACC2, ACC3 = (make_id("001", n) for n in (1, 2, 3))
C1, C2, C3 = (make_id("003", n) for n in (1, 2, 3))
P1, P2, P3, P4 = (make_id("01t", n) for n in (1, 2, 3, 4))
O1, O2, O3, O4 = (make_id("801", n) for n in (1, 2, 3, 4))
OI = {n: make_id("802", n) for n in range(1, 8)}
I1, I2, I3 = (make_id("a1M", n) for n in (1, 2, 3))
K = {n: make_id("500", n) for n in range(1, 8)}
KA1, KA2, KA3, KA4 = (make_id("ka0", n) for n in (1, 2, 3, 4))

ACCOUNTS = {ACC1: "CA", ACC2: "NY", ACC3: None}
CONTACTS = {C1: ACC1, C2: ACC2, C3: None}
PRODUCTS = {P1: "Trail Running Shoe", P2: "Road Running Shoe", P3: "Yoga Mat", P4: "Women's Trail-Jacket (Pro)"}
ORDERS = {  # id: (account, status, effective date)
    O1: (ACC1, "Activated", "2021-03-06"),
    O2: (ACC1, "Draft", "2021-03-06"),
    O3: (ACC1, "Activated", "2021-03-07"),
    O4: (ACC2, "Activated", "2021-03-06"),
}
ORDER_ITEMS = {  # id: (order, product)
    OI[1]: (O1, P1),
    OI[2]: (O1, P3),
    OI[3]: (O2, P2),
    OI[4]: (O3, P2),
    OI[5]: (O4, P2),
    OI[6]: (O1, P1),
    OI[7]: (O4, P1),
}
ISSUES = {I1: "Shipping Delay", I2: "Product Defect", I3: "Size Mismatch"}
# id: (owner, created, closed, account, order item, issue, status)
CASES = {
    K[1]: (A1, "2021-01-01T00:00:00", "2021-01-01T02:00:00", ACC1, OI[1], I1, "Closed"),  # at the start
    K[2]: (A2, "2021-01-15T10:00:00", "2021-01-16T10:00:00", ACC2, OI[1], I2, "Closed"),
    K[3]: (A1, "2021-02-01T00:00:00", None, ACC1, OI[7], I1, "New"),  # at the end
    K[4]: (A3, "2020-12-31T23:59:59", "2021-01-02T00:00:00", ACC3, OI[2], I1, "Closed"),  # before
    K[5]: (A2, "2021-01-20T08:00:00", None, ACC1, OI[5], I1, "Working"),
    K[6]: (A3, "2021-01-25T12:00:00", "2021-01-25T12:30:00", ACC2, OI[7], None, "Closed"),
    K[7]: (A4, "2021-01-10T09:00:00", "2021-01-12T00:00:00", None, OI[4], I3, "Closed"),
}
OA = "Owner Assignment"
HISTORY = [  # (case, field, old, new, created)
    (K[1], "Case Creation", None, None, "2021-01-01T00:00:00"),
    (K[1], OA, None, A1, "2021-01-01T00:00:00"),  # on the start: inside
    (K[2], "Case Creation", None, None, "2021-01-15T10:00:00"),
    (K[2], OA, None, A1, "2021-01-15T10:00:00"),
    (K[2], OA, A1, A2, "2021-01-15T12:00:00"),  # transfer A1 -> A2
    (K[2], "Case Closed", None, None, "2021-01-16T10:00:00"),
    (K[3], OA, None, A1, "2021-02-01T00:00:00"),  # on the end: inside
    (K[4], OA, None, A3, "2020-12-31T23:59:59"),  # before: outside
    (K[4], OA, A3, A1, "2021-01-05T00:00:00"),  # transfer A3 -> A1
    (K[5], OA, None, A2, "2021-01-20T08:00:00"),
    (K[6], OA, None, A4, "2021-01-25T12:00:00"),
    (K[6], OA, A4, A3, "2021-01-25T12:10:00"),  # transfer A4 -> A3
    (K[7], OA, None, A4, "2021-01-10T09:00:00"),
    (K[7], OA, A4, A2, "2021-02-01T00:00:01"),  # just after the end: outside
]
ARTICLES = {  # id: (title, body, status, language)
    KA1: ("Return Policy", "Items can be sent back within 30 days of delivery.", "Online", "en_US"),
    KA2: ("Return Policy Draft", "A draft about the return window.", "Draft", "en_US"),
    KA3: ("Return Policy", "Politique de retour.", "Online", "fr"),
    KA4: ("Shipping Times", "Orders ship in two days; a return label is included.", "Online", "en_US"),
}
CHATS = {  # id: (case, body, end time)
    make_id("570", 1): (K[1], "[2021-01-01T01:00:00] Ann (Customer): hello", "2021-01-01T01:05:00"),
    make_id("570", 2): (K[1], "[2020-12-31T09:00:00] Ann (Customer): earlier", "2020-12-31T09:05:00"),
    make_id("570", 3): (K[2], "[2021-01-15T11:00:00] Bo (Customer): hi", "2021-01-15T11:10:00"),
}
EMAILS = {  # id: (case, subject, body, from, to, date)
    make_id("02s", 1): (K[1], "Re: order", "Second", "agent@shop.com", "ann@x.com", "2021-01-01T03:00:00"),
    make_id("02s", 2): (K[1], "Order", "First", "ann@x.com", "agent@shop.com", "2021-01-01T01:00:00"),
    make_id("02s", 3): (K[5], "Late", "Where is it?", "bo@x.com", "agent@shop.com", "2021-01-20T09:00:00"),
}


def in_window(text: str, start: dt.datetime = T0, end: dt.datetime = T1) -> bool:
    return start <= moment(text) <= end


@pytest.fixture(scope="module")
def org_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tools_org") / "org.db"
    b = OrgBuilder(path)
    for n, user in enumerate((A1, A2, A3, A4), 1):
        b.add("User", Id=user, FirstName="Agent", LastName=f"No{n}")
    for account, state in ACCOUNTS.items():
        b.add("Account", Id=account, FirstName="Cus", LastName=account[-4:], ShippingState=state)
    for contact, account in CONTACTS.items():
        b.add("Contact", Id=contact, FirstName="Con", LastName=contact[-4:], AccountId=account)
    for product, name in PRODUCTS.items():
        b.add("Product2", Id=product, Name=name, IsActive=1)
    for order, (account, status, day) in ORDERS.items():
        b.add("Order", Id=order, AccountId=account, Status=status, EffectiveDate=day)
    for item, (order, product) in ORDER_ITEMS.items():
        b.add("OrderItem", Id=item, OrderId=order, Product2Id=product, Quantity=1.0, UnitPrice=10.0)
    for issue, name in ISSUES.items():
        b.add("Issue__c", Id=issue, Name=name)
    for case, (owner, created, closed, account, item, issue, status) in CASES.items():
        b.add(
            "Case",
            Id=case,
            OwnerId=owner,
            CreatedDate=stamp(created),
            ClosedDate=stamp(closed) if closed else None,
            AccountId=account,
            OrderItemId__c=item,
            IssueId__c=issue,
            Status=status,
            Subject=f"Case {case[-6:]}",
        )
    for n, (case, field, old, new, created) in enumerate(HISTORY, 1):
        b.add(
            "CaseHistory__c",
            Id=make_id("a1N", n),
            CaseId__c=case,
            Field__c=field,
            OldValue__c=old,
            NewValue__c=new,
            CreatedDate=stamp(created),
        )
    for article, (title, body, status, language) in ARTICLES.items():
        b.add("Knowledge__kav", Id=article, Title=title, FAQ_Answer__c=body, PublishStatus=status, Language=language)
    for chat, (case, body, end) in CHATS.items():
        b.add("LiveChatTranscript", Id=chat, CaseId=case, Body=body, EndTime=stamp(end))
    for email, (case, subject, body, sender, to, date) in EMAILS.items():
        b.add(
            "EmailMessage",
            Id=email,
            ParentId=case,
            Subject=subject,
            TextBody=body,
            FromAddress=sender,
            ToAddress=to,
            MessageDate=stamp(date),
        )
    b.close()
    return path


class Recording(Org):
    """Passes every call to an org and remembers the statements."""

    def __init__(self, inner: Org) -> None:
        self.inner = inner
        self.sent: list[str] = []

    def query(self, soql: str) -> dict[str, Any]:
        self.sent.append(soql)
        return self.inner.query(soql)

    def search(self, sosl: str) -> dict[str, Any]:
        self.sent.append(sosl)
        return self.inner.search(sosl)


@pytest.fixture(scope="module")
def local(org_path: Path) -> LocalOrg:
    org = LocalOrg(org_path, today="2021-06-01")
    yield org
    org.close()


@pytest.fixture
def org(local: LocalOrg) -> Recording:
    return Recording(local)


def _error(result: Any, *fragments: str) -> None:
    assert isinstance(result, str) and result.startswith("Error: "), result
    for fragment in fragments:
        assert fragment in result, (fragment, result)


# --- owner assignments -------------------------------------------------------------------------------


def test_get_agent_handled_cases_by_period(org: Recording) -> None:
    expected = Counter(new for _, field, _, new, t in HISTORY if field == OA and new and in_window(t))
    assert expected == {A1: 4, A2: 2, A3: 1, A4: 2}  # the hand count, for the reader
    result = get_agent_handled_cases_by_period(org, START, END)
    assert result == dict(expected) and list(result) == sorted(expected)
    assert "COUNT(Id)" in org.sent[0] and "GROUP BY NewValue__c" in org.sent[0]
    # A window of one instant: both ends inclusive.
    assert get_agent_handled_cases_by_period(org, END, END) == {A1: 1}
    assert get_agent_handled_cases_by_period(org, "2030-01-01T00:00:00Z", "2030-02-01T00:00:00Z") == {}


def test_get_non_transferred_case_ids(org: Recording) -> None:
    per_case = Counter(case for case, field, _, _, t in HISTORY if field == OA and in_window(t))
    expected = sorted(case for case, n in per_case.items() if n == 1)
    assert expected == sorted([K[1], K[3], K[4], K[5], K[7]])
    assert get_non_transferred_case_ids(org, START, END) == expected
    assert "HAVING COUNT(Id) = 1" in org.sent[0]


def test_get_agent_transferred_cases_by_period(org: Recording) -> None:
    transfers = Counter(old for _, field, old, _, t in HISTORY if field == OA and old and in_window(t))
    assert transfers == {A1: 1, A3: 1, A4: 1}
    asked = [A2, A4, A1]
    result = get_agent_transferred_cases_by_period(org, START, END, asked)
    assert result == {a: transfers[a] for a in asked if transfers[a]}
    assert list(result) == [A4, A1]  # the order asked; A2 never transferred
    # Empty or left out: every agent, sorted by id (ORIGINAL.md section 6: no filter).
    assert get_agent_transferred_cases_by_period(org, START, END, []) == dict(sorted(transfers.items()))
    assert get_agent_transferred_cases_by_period(org, START, END) == dict(sorted(transfers.items()))
    # 15-character ids match the org's 18-character ones.
    assert get_agent_transferred_cases_by_period(org, START, END, [A3[:15]]) == {A3[:15]: 1}
    # The transfer one second after the end is outside.
    assert get_agent_transferred_cases_by_period(org, START, "2021-02-01T00:00:01Z", [A4]) == {A4: 2}


# --- cases -------------------------------------------------------------------------------------------


def _expected_cases(predicate: Any) -> list[dict[str, Any]]:
    return sorted(
        (
            {"OwnerId": o, "CreatedDate": stamp(c), "ClosedDate": stamp(cl) if cl else None, "AccountId": a}
            for case, (o, c, cl, a, item, issue, status) in CASES.items()
            if predicate(case, o, moment(c), item, issue, status)
        ),
        key=lambda r: (r["CreatedDate"], r["OwnerId"]),
    )


def _sorted(rows: Any) -> list[dict[str, Any]]:
    assert isinstance(rows, list), rows
    return sorted(rows, key=lambda r: (r["CreatedDate"], r["OwnerId"]))


def test_get_cases_window_is_start_inclusive_end_exclusive(org: Recording) -> None:
    expected = _expected_cases(lambda k, o, c, i, s, st: T0 <= c < T1)
    assert len(expected) == 5  # K1 (on the start) in; K3 (on the end) and K4 (before) out
    assert _sorted(get_cases(org, start_date=START, end_date=END)) == expected
    assert _sorted(get_cases(org, start_date=END)) == _expected_cases(lambda k, o, c, i, s, st: c >= T1)
    assert _sorted(get_cases(org, end_date=START)) == _expected_cases(lambda k, o, c, i, s, st: c < T0)


def test_get_cases_filters_combine(org: Recording) -> None:
    cases = [
        ({"agent_ids": [A1, A3]}, lambda k, o, c, i, s, st: o in (A1, A3)),
        ({"case_ids": [K[2], K[7]]}, lambda k, o, c, i, s, st: k in (K[2], K[7])),
        ({"order_item_ids": [OI[1], OI[7]]}, lambda k, o, c, i, s, st: i in (OI[1], OI[7])),
        ({"issue_ids": [I1]}, lambda k, o, c, i, s, st: s == I1),
        ({"statuses": ["Closed"]}, lambda k, o, c, i, s, st: st == "Closed"),
        (
            {"start_date": START, "end_date": END, "statuses": ["Closed"], "issue_ids": [I1, I2]},
            lambda k, o, c, i, s, st: T0 <= c < T1 and st == "Closed" and s in (I1, I2),
        ),
        ({"agent_ids": [A1], "statuses": ["Working"]}, lambda k, o, c, i, s, st: False),
    ]
    for kwargs, predicate in cases:
        assert _sorted(get_cases(org, **kwargs)) == _expected_cases(predicate), kwargs


def test_get_cases_empty_list_is_no_filter(org: Recording) -> None:
    # ORIGINAL.md section 6: a filter given as an empty list is ignored, as function-calling models
    # that fill every parameter expect.
    in_window = _expected_cases(lambda k, o, c, i, s, st: T0 <= c < T1)
    everything = {"agent_ids": [], "case_ids": [], "order_item_ids": [], "issue_ids": [], "statuses": []}
    assert _sorted(get_cases(org, start_date=START, end_date=END, **everything)) == in_window
    assert _sorted(get_cases(org, agent_ids=[], case_ids=[K[2], K[7]])) == _expected_cases(
        lambda k, o, c, i, s, st: k in (K[2], K[7])
    )
    _error(get_cases(org, **everything), "get_cases needs at least one filter")


def test_get_cases_quotes_values(org: Recording) -> None:
    assert get_cases(org, statuses=["Waiting on Customer", "it's"]) == []
    assert "'it\\'s'" in org.sent[0]


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({}, ("get_cases needs at least one filter",)),
        ({"start_date": None, "end_date": None}, ("at least one filter",)),
        ({"start_date": "2021-01-01"}, ("start_date must be a UTC datetime", "'2021-01-01'")),
        ({"end_date": "yesterday"}, ("end_date must be a UTC datetime", "'yesterday'")),
        ({"start_date": END, "end_date": START}, ("start_date '2021-02-01T00:00:00Z' is after end_date",)),
        ({"agent_ids": A1}, ("argument 'agent_ids' must be a list", A1)),
        ({"agent_ids": [A1, 5]}, ("argument 'agent_ids' item 1 must be a string, got int 5",)),
        ({"agent_ids": ["bob"]}, ("agent_ids item 0 must be a 15- or 18-character Salesforce id", "'bob'")),
        ({"agent_ids": [C1]}, ("agent_ids item 0 must be a User id (prefix 005), got a Contact id",)),
        ({"case_ids": [K[1], A1]}, ("case_ids item 1 must be a Case id (prefix 500), got a User id",)),
        ({"order_item_ids": [P1]}, ("order_item_ids item 0 must be a OrderItem id (prefix 802), got a Product2 id",)),
        ({"issue_ids": ["a1M-bad"]}, ("issue_ids item 0 must be a 15- or 18-character Salesforce id",)),
        ({"agent_ids": ["005Ws0000000001AAA"]}, ("Salesforce id", "'005Ws0000000001AAA'")),  # bad checksum
        ({"agent_ids": ["zzzWs0000000001IAA"]}, ("an id with the unknown prefix 'zzz'",)),
        ({"statuses": "Closed"}, ("argument 'statuses' must be a list",)),
        ({"owner": A1}, ("unknown argument 'owner'",)),
    ],
)
def test_get_cases_errors(org: Recording, kwargs: dict[str, Any], fragments: tuple[str, ...]) -> None:
    _error(get_cases(org, **kwargs), *fragments)
    assert org.sent == []


# --- shipping states and issues ------------------------------------------------------------------------


def test_get_shipping_state(org: Recording) -> None:
    rows = [
        {"OwnerId": A1, "AccountId": ACC2, "Extra": 1},
        {"OwnerId": A2, "AccountId": ACC1},
        {"OwnerId": A3, "AccountId": None},
        {"OwnerId": A4, "AccountId": ACC3},
        {"OwnerId": A1, "AccountId": ACC1[:15]},
        {"OwnerId": A1, "AccountId": make_id("001", 99)},  # no such account
    ]
    expected = [{**r, "ShippingState": ACCOUNTS.get(r["AccountId"]) if r["AccountId"] else None} for r in rows]
    expected[4]["ShippingState"] = ACCOUNTS[ACC1]
    assert get_shipping_state(org, rows) == expected
    assert rows[0] == {"OwnerId": A1, "AccountId": ACC2, "Extra": 1}  # the input is not changed
    assert len(org.sent) == 1
    assert get_shipping_state(org, []) == [] and len(org.sent) == 1


@pytest.mark.parametrize(
    ("cases", "fragments"),
    [
        ({"AccountId": ACC1}, ("argument 'cases' must be a list",)),
        (["x"], ("argument 'cases' item 0 must be an object",)),
        ([{"AccountId": ACC1}, {"OwnerId": A1}], ("cases item 1 has no 'AccountId' field (its fields: OwnerId)",)),
        ([{"AccountId": 7}], ("cases item 0 AccountId must be a 15- or 18-character Salesforce id, got 7",)),
        ([{"AccountId": C1}], ("cases item 0 AccountId must be a Account id (prefix 001), got a Contact id",)),
        # An account checked once is not checked again; a bad one later is named at its own place.
        (
            [{"AccountId": ACC1}, {"AccountId": ACC1}, {"AccountId": None}, {"AccountId": [ACC1]}],
            ("cases item 3 AccountId must be a 15- or 18-character Salesforce id, got ['",),
        ),
    ],
)
def test_get_shipping_state_errors(org: Recording, cases: Any, fragments: tuple[str, ...]) -> None:
    _error(get_shipping_state(org, cases), *fragments)
    assert org.sent == []


def test_get_order_item_ids_by_product(org: Recording) -> None:
    for product in PRODUCTS:
        expected = sorted(item for item, (_, p) in ORDER_ITEMS.items() if p == product)
        assert get_order_item_ids_by_product(org, product) == expected
    assert get_order_item_ids_by_product(org, P1) == sorted([OI[1], OI[6], OI[7]])


@pytest.mark.parametrize(
    ("product", "fragments"),
    [
        ("Trail Running Shoe", ("product_id must be a 15- or 18-character Salesforce id", "'Trail Running Shoe'")),
        (OI[1], ("product_id must be a Product2 id (prefix 01t), got a OrderItem id",)),
        ([P1], ("argument 'product_id' must be a string",)),
        (None, ("argument 'product_id' must be a string, got null",)),
    ],
)
def test_get_order_item_ids_by_product_errors(org: Recording, product: Any, fragments: tuple[str, ...]) -> None:
    _error(get_order_item_ids_by_product(org, product), *fragments)
    assert org.sent == []


def test_get_issue_counts_window_is_inclusive(org: Recording) -> None:
    items = [OI[1], OI[7], OI[2]]
    expected = Counter(
        issue
        for _, (_, created, _, _, item, issue, _) in CASES.items()
        if item in items and issue and in_window(created)
    )
    assert expected == {I1: 2, I2: 1}  # K1 (start) and K3 (end) both count; K4 is before; K6 has no issue
    result = get_issue_counts(org, START, END, items)
    assert result == dict(expected) and list(result) == sorted(expected)
    assert get_issue_counts(org, START, END, []) == {}
    assert get_issue_counts(org, "2030-01-01T00:00:00Z", "2030-02-01T00:00:00Z", items) == {}
    assert len(org.sent) == 2


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("2021-01-01", END, [OI[1]]), ("start_date must be a UTC datetime", "'2021-01-01'")),
        ((START, "2021-02-01T00:00Z", [OI[1]]), ("end_date must be a UTC datetime",)),
        ((END, START, [OI[1]]), ("is after end_date",)),
        ((START, END, OI[1]), ("argument 'order_item_ids' must be a list",)),
        ((START, END, [P1]), ("order_item_ids item 0 must be a OrderItem id",)),
        ((START, END, [None]), ("argument 'order_item_ids' item 0 must be a string, got null",)),
    ],
)
def test_get_issue_counts_errors(org: Recording, args: tuple[Any, ...], fragments: tuple[str, ...]) -> None:
    _error(get_issue_counts(org, *args), *fragments)
    assert org.sent == []


def test_get_issues(org: Recording) -> None:
    expected = [{"Id": i, "Name": n} for i, n in ISSUES.items()]  # the org's order: as they were inserted
    assert get_issues(org) == expected
    assert [i["Name"] for i in expected] != sorted(i["Name"] for i in expected)  # not sorted by name
    _error(get_issues(org, "x"), "takes 0 arguments, got 1")


# --- purchases ------------------------------------------------------------------------------------------


def test_get_account_id_by_contact_id(org: Recording) -> None:
    assert get_account_id_by_contact_id(org, C1) == CONTACTS[C1]
    assert get_account_id_by_contact_id(org, C2) == CONTACTS[C2]
    assert get_account_id_by_contact_id(org, C3) is None
    # ORIGINAL.md section 6: no such contact answers the empty list of records.
    assert get_account_id_by_contact_id(org, make_id("003", 77)) == []


@pytest.mark.parametrize(
    ("contact", "fragments", "queried"),
    [
        (ACC1, ("contact_id must be a Contact id (prefix 003), got a Account id",), False),
        ("someone", ("contact_id must be a 15- or 18-character Salesforce id", "'someone'"), False),
        (3, ("argument 'contact_id' must be a string, got int 3",), False),
    ],
)
def test_get_account_id_by_contact_id_errors(
    org: Recording, contact: Any, fragments: tuple[str, ...], queried: bool
) -> None:
    _error(get_account_id_by_contact_id(org, contact), *fragments)
    assert bool(org.sent) == queried


def _bought(account: str, day: str, candidates: list[str]) -> list[str]:
    return sorted(
        {
            product
            for order, product in ORDER_ITEMS.values()
            if ORDERS[order] == (account, "Activated", day) and product in candidates
        }
    )


def test_get_purchase_history(org: Recording) -> None:
    every = list(PRODUCTS)
    assert _bought(ACC1, "2021-03-06", every) == sorted([P1, P3])  # the draft order's P2 is left out
    for account in (ACC1, ACC2):
        for day in ("2021-03-06", "2021-03-07", "2021-03-08"):
            for candidates in (every, [P2], [P1, P4]):
                assert get_purchase_history(org, account, day, candidates) == _bought(account, day, candidates)
    # The datetime form is accepted; only its date counts.
    assert get_purchase_history(org, ACC1, "2021-03-06T23:00:00Z", every) == _bought(ACC1, "2021-03-06", every)
    assert get_purchase_history(org, ACC1, "2021-03-06", []) == []


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        ((C1, "2021-03-06", [P1]), ("account_id must be a Account id (prefix 001), got a Contact id",)),
        ((ACC1, "03/06/2021", [P1]), ("purchase_date must be a date YYYY-MM-DD or a datetime", "'03/06/2021'")),
        ((ACC1, "2021-02-30", [P1]), ("purchase_date", "'2021-02-30'")),
        ((ACC1, "2021-02-30T00:00:00Z", [P1]), ("purchase_date", "'2021-02-30T00:00:00Z'")),
        ((ACC1, "2021-03-06", P1), ("argument 'related_product_ids' must be a list",)),
        ((ACC1, "2021-03-06", [P1, "shoe"]), ("related_product_ids item 1 must be a 15- or 18-character",)),
        ((ACC1, "2021-03-06"), ("missing the required argument 'related_product_ids'",)),
    ],
)
def test_get_purchase_history_errors(org: Recording, args: tuple[Any, ...], fragments: tuple[str, ...]) -> None:
    _error(get_purchase_history(org, *args), *fragments)
    assert org.sent == []


# --- search ----------------------------------------------------------------------------------------------


def _name_words(product: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", PRODUCTS[product].lower())


def test_search_products(org: Recording) -> None:
    result = search_products(org, "running shoe")
    expected = {p for p in PRODUCTS if {"running", "shoe"} <= set(_name_words(p))}
    assert len(result) == len(set(result)) and set(result) == expected == {P1, P2}
    assert search_products(org, "  YOGA  ") == [P3]
    assert search_products(org, "zzz") == []
    # The original's statement (ORIGINAL.md section 3), the term as written.
    assert org.sent[-1] == "FIND {zzz} IN ALL FIELDS RETURNING Product2(Id, Name, Description)"
    # Reserved characters Salesforce refuses unescaped are escaped (the original's search would fail);
    # the parentheses stay a group.
    assert search_products(org, "Women's Trail-Jacket (Pro)") == [P4]
    assert org.sent[-1].startswith("FIND {Women\\'s Trail\\-Jacket (Pro)} IN ALL FIELDS")


# The term is SOSL, as the original sends it (SOSL reference, FIND {SearchQuery}): AND between words by
# default for products, AND, OR and AND NOT operators in any case, AND before OR, AND NOT leaving out the
# next word or group, quotes for phrases and for the words "and"/"or", * and ? wildcards.
PRODUCT_TERMS: list[tuple[str, Any]] = [
    ("runn*", lambda w: any(x.startswith("runn") for x in w)),
    ("r?ad", lambda w: any(re.fullmatch("r.ad", x) for x in w)),
    ("zzz OR yoga", lambda w: "zzz" in w or "yoga" in w),
    ("zzz or yoga", lambda w: "zzz" in w or "yoga" in w),
    ("running and not trail", lambda w: "running" in w and "trail" not in w),
    ("Running AND NOT Road", lambda w: "running" in w and "road" not in w),
    ("shoe and trail", lambda w: "shoe" in w and "trail" in w),
    ("yoga or trail shoe", lambda w: "yoga" in w or ("trail" in w and "shoe" in w)),
    ("(yoga OR road) running", lambda w: ("yoga" in w or "road" in w) and "running" in w),
    ('"running shoe" road', lambda w: "road" in w and "running shoe" in " ".join(w)),
    ('"and" OR yoga', lambda w: "and" in w or "yoga" in w),
    ("not yoga", lambda w: "not" in w and "yoga" in w),  # NOT alone is a word
]


@pytest.mark.parametrize(("term", "matches"), PRODUCT_TERMS, ids=[t for t, _ in PRODUCT_TERMS])
def test_search_products_reads_the_term_as_sosl(org: Recording, term: str, matches: Any) -> None:
    expected = {p for p in PRODUCTS if matches(_name_words(p))}
    assert set(search_products(org, term)) == expected
    assert org.sent[-1] == f"FIND {{{term}}} IN ALL FIELDS RETURNING Product2(Id, Name, Description)"


def test_search_products_terms_are_not_vacuous(org: Recording) -> None:
    found = {term: set(search_products(org, term)) for term, _ in PRODUCT_TERMS}
    assert sum(1 for ids in found.values() if ids) >= len(PRODUCT_TERMS) - 1
    assert found["running and not trail"] == {P2} and found["Running AND NOT Road"] == {P1}


def test_search_knowledge_articles_only_online_english(org: Recording) -> None:
    def matching(word: str) -> list[dict[str, Any]]:
        return [
            {"Id": a, "Title": t, "Content": b}
            for a, (t, b, status, language) in ARTICLES.items()
            if status == "Online" and language == "en_US" and word in (t + " " + b).lower().replace(".", " ").split()
        ]

    assert (
        search_knowledge_articles(org, "policy")
        == matching("policy")
        == [{"Id": KA1, "Title": ARTICLES[KA1][0], "Content": ARTICLES[KA1][1]}]
    )
    found = search_knowledge_articles(org, "return")
    assert sorted(found, key=lambda r: r["Id"]) == matching("return")
    assert search_knowledge_articles(org, "nothing-like-this") == []


@pytest.mark.parametrize("fn", [search_products, search_knowledge_articles])
@pytest.mark.parametrize(
    ("term", "fragments"),
    [
        ("", ("search_term must contain words to search for, got ''",)),
        ("   ", ("search_term must contain words", "'   '")),
        (["shoe"], ("argument 'search_term' must be a string",)),
        (None, ("argument 'search_term' must be a string, got null",)),
    ],
)
def test_search_errors(org: Recording, fn: Any, term: Any, fragments: tuple[str, ...]) -> None:
    _error(fn(org, term), *fragments)
    assert org.sent == []


def test_a_search_the_engine_refuses_is_an_error(org: Recording) -> None:
    # A one-character term is too short for SOSL; the org's refusal comes back as text.
    result = search_products(org, "a")
    _error(result, "INVALID_SEARCH: search term must be longer than one character")


# --- transcripts and emails ----------------------------------------------------------------------------


def test_get_livechat_transcript_by_case_id(org: Recording) -> None:
    for case in (K[1], K[2], K[3]):
        expected = sorted(
            ({"Body": body, "EndTime": stamp(end)} for c, body, end in CHATS.values() if c == case),
            key=lambda r: r["EndTime"],
        )
        assert get_livechat_transcript_by_case_id(org, case) == expected
    assert len(get_livechat_transcript_by_case_id(org, K[1])) == 2


def test_get_email_messages_by_case_id(org: Recording) -> None:
    for case in (K[1], K[5], K[7]):
        expected = sorted(
            (
                {"Subject": s, "TextBody": b, "FromAddress": f, "ToAddress": t, "MessageDate": stamp(d)}
                for c, s, b, f, t, d in EMAILS.values()
                if c == case
            ),
            key=lambda r: r["MessageDate"],
        )
        assert get_email_messages_by_case_id(org, case) == expected
    assert [m["TextBody"] for m in get_email_messages_by_case_id(org, K[1])] == ["First", "Second"]


@pytest.mark.parametrize("fn", [get_livechat_transcript_by_case_id, get_email_messages_by_case_id])
@pytest.mark.parametrize(
    ("case", "fragments"),
    [
        (C1, ("case_id must be a Case id (prefix 500), got a Contact id",)),
        ("500", ("case_id must be a 15- or 18-character Salesforce id", "'500'")),
        (500, ("argument 'case_id' must be a string, got int 500",)),
    ],
)
def test_by_case_errors(org: Recording, fn: Any, case: Any, fragments: tuple[str, ...]) -> None:
    _error(fn(org, case), *fragments)
    assert org.sent == []


# --- windows: shared error paths ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn", [get_agent_handled_cases_by_period, get_non_transferred_case_ids, get_agent_transferred_cases_by_period]
)
@pytest.mark.parametrize(
    ("start", "end", "fragments"),
    [
        ("2021-01-01", END, ("start_date must be a UTC datetime in the format YYYY-MM-DDTHH:MM:SSZ", "'2021-01-01'")),
        (START, "2021-02-01T00:00:00", ("end_date must be a UTC datetime", "'2021-02-01T00:00:00'")),
        (START, "2021-02-31T00:00:00Z", ("end_date", "'2021-02-31T00:00:00Z'")),
        (END, START, ("start_date '2021-02-01T00:00:00Z' is after end_date '2021-01-01T00:00:00Z'",)),
        (None, END, ("argument 'start_date' must be a string, got null",)),
        (START, 20210201, ("argument 'end_date' must be a string, got int 20210201",)),
    ],
)
def test_window_errors(org: Recording, fn: Any, start: Any, end: Any, fragments: tuple[str, ...]) -> None:
    extra = [[A1]] if fn is get_agent_transferred_cases_by_period else []
    _error(fn(org, start, end, *extra), *fragments)
    assert org.sent == []


@pytest.mark.parametrize(
    ("agents", "fragments"),
    [
        (A1, ("argument 'qualified_agent_ids' must be a list",)),
        ({"a": 1}, ("argument 'qualified_agent_ids' must be a list",)),
        ([A1, C1], ("qualified_agent_ids item 1 must be a User id (prefix 005), got a Contact id",)),
        (["agent 1"], ("qualified_agent_ids item 0 must be a 15- or 18-character Salesforce id",)),
    ],
)
def test_get_agent_transferred_cases_by_period_errors(org: Recording, agents: Any, fragments: tuple[str, ...]) -> None:
    _error(get_agent_transferred_cases_by_period(org, START, END, agents), *fragments)
    assert org.sent == []


# --- general tools ------------------------------------------------------------------------------------------


def test_issue_soql_query_shapes_rows(org: Recording) -> None:
    rows = issue_soql_query(org, f"SELECT Id, ClosedDate, Owner.Name FROM Case WHERE Id IN ('{K[3]}', '{K[5]}')")
    assert isinstance(rows, list) and len(rows) == 2
    by_id = {r["Id"]: r for r in rows}
    assert set(by_id) == {K[3], K[5]}
    for case, row in by_id.items():
        assert "attributes" not in row and "ClosedDate" not in row  # null in every row: dropped
        assert row["Owner"]["Name"] == f"Agent No{(A1, A2, A3, A4).index(CASES[case][0]) + 1}"
    assert issue_soql_query(org, "SELECT Id FROM Case WHERE Status = 'Nope'") == []
    rows = issue_soql_query(org, f"SELECT Id, ClosedDate FROM Case WHERE Id IN ('{K[1]}', '{K[3]}')")
    assert sorted((r["Id"], r["ClosedDate"]) for r in rows) == [(K[1], stamp(CASES[K[1]][2])), (K[3], None)]


def test_issue_soql_query_errors(org: Recording) -> None:
    result = issue_soql_query(org, "SELECT Foo FROM Case")
    assert isinstance(result, str) and result.startswith("INVALID_FIELD: ") and "Foo" in result
    result = issue_soql_query(org, "SELECT Id FROM Nothing")
    assert isinstance(result, str) and result.startswith("INVALID_TYPE: ")
    assert len(org.sent) == 2
    _error(issue_soql_query(org, "  "), "query is empty")
    _error(issue_soql_query(org, None), "argument 'query' must be a string, got null")
    _error(issue_soql_query(org), "missing the required argument 'query'")
    assert len(org.sent) == 2


def test_issue_sosl_query(org: Recording) -> None:
    assert issue_sosl_query(org, "FIND {yoga} IN NAME FIELDS RETURNING Product2(Id, Name)") == [
        {"Id": P3, "Name": PRODUCTS[P3]}
    ]
    result = issue_sosl_query(org, "FIND yoga")
    assert isinstance(result, str) and result.startswith("MALFORMED_SEARCH: ")
    _error(issue_sosl_query(org, ""), "query is empty")
    _error(issue_sosl_query(org, 5), "argument 'query' must be a string, got int 5")


def test_toolset_calls_reach_the_org(org: Recording) -> None:
    flex = toolset("flex")
    assert flex.call("get_issues", {}, org) == get_issues(org)
    assert flex.call("get_cases", {"case_ids": [K[2]]}, org) == [
        {"OwnerId": A2, "CreatedDate": stamp(CASES[K[2]][1]), "ClosedDate": stamp(CASES[K[2]][2]), "AccountId": ACC2}
    ]
    assert flex.call("issue_soql_query", {"query": f"SELECT Status FROM Case WHERE Id = '{K[5]}'"}, org) == [
        {"Status": "Working"}
    ]
