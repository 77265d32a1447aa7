"""Shared fixtures of the org tests: a small hand-made org, its rows in Python, and plain SQLite access."""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.org import LocalOrg, default_org_path
from crmarena_gym.schema import CASE_STATUSES, OBJECTS
from tests.org_builder import OrgBuilder, ts

#: The date the small org's relative literals resolve against.
SMALL_TODAY = dt.date(2023, 6, 15)


def _build_small_org(path: Path) -> None:
    rng = random.Random(20240601)
    b = OrgBuilder(path)
    users = [
        b.add("User", FirstName=f, LastName=last, Email=f"{f.lower()}.{last.lower()}@example.com", Alias=f[:4])
        for f, last in [
            ("Ada", "Byrne"),
            ("Bo", "Li"),
            ("Cy", "Okafor"),
            ("Dee", "Singh"),
            ("Eve", "Adams"),
            ("Fay", "Ng"),
        ]
    ]
    states = ["CA", "NY", "TX", "ca", None]
    accounts = [
        b.add("Account", FirstName=f"Cust{i}", LastName=f"Family{i % 4}", ShippingState=states[i % 5], PersonEmail=None)
        for i in range(8)
    ]
    contacts = [
        b.add(
            "Contact",
            FirstName=f"Cust{i}",
            LastName=f"Family{i % 4}",
            AccountId=accounts[i],
            OwnerId=None if i == 3 else users[i % 6],
            Email=f"cust{i}@example.com",
        )
        for i in range(8)
    ]
    issue_names = [
        "Incorrect Item Received",
        "Billing/Payment Issue",
        "Shipping Delay",
        "Product Defect",
        "Size Mismatch",
    ]
    issues = [b.add("Issue__c", Name=n, Description__c=f"Cases about {n.lower()}") for n in issue_names]
    products = [
        b.add("Product2", Name=n, Description=f"A {n.lower()}", IsActive=i % 3 != 0, External_ID__c=f"EXT_{i}")
        for i, n in enumerate(
            ["Trail Running Shoes", "Yoga Mat", "Soccer Cleats", "Rain Jacket", "Swim Goggles", "Tennis Racket"]
        )
    ]
    pricebook = b.add("Pricebook2", Name="Standard", IsActive=True, ValidFrom=ts("2020-01-01"), ValidTo=None)
    entries = [
        b.add("PricebookEntry", Pricebook2Id=pricebook, Product2Id=p, UnitPrice=10.0 + i)
        for i, p in enumerate(products)
    ]
    orders, items = [], []
    for i in range(14):
        day = dt.date(2022, 1, 1) + dt.timedelta(days=rng.randrange(0, 540))
        order = b.add(
            "Order",
            AccountId=accounts[i % 8],
            Status="Activated" if i % 4 else "Draft",
            EffectiveDate=day.isoformat(),
            Pricebook2Id=pricebook,
        )
        orders.append(order)
        for k in range(1 + i % 3):
            p = (i + k) % 6
            items.append(
                b.add(
                    "OrderItem",
                    OrderId=order,
                    Product2Id=products[p],
                    Quantity=float(1 + k),
                    UnitPrice=10.0 + p,
                    PricebookEntryId=entries[p],
                )
            )
    subjects = ["Shipping delay for my order", "SHIPPING delay again", "Wrong size", "Refund please", "Item broken"]
    for i in range(60):
        created = dt.datetime(2022, 1, 1, 8, 0) + dt.timedelta(hours=rng.randrange(0, 24 * 530), minutes=15 * (i % 4))
        status = CASE_STATUSES[i % 5] if i % 11 else "closed"
        closed = created + dt.timedelta(hours=rng.randrange(1, 200)) if status.lower() == "closed" else None
        owner = None if i % 13 == 0 else users[rng.randrange(6)]
        case = b.add(
            "Case",
            Subject=subjects[i % 5] if i % 17 else None,
            Description=f"Customer {i} writes at length about the problem.",
            Status=status,
            Priority=["Low", "Medium", "High", "Critical"][i % 4],
            Channel=["Email", "Phone", "Web", "Chat"][i % 4],
            ContactId=None if i % 9 == 0 else contacts[i % 8],
            AccountId=accounts[i % 8],
            OwnerId=owner,
            CreatedDate=created.strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
            ClosedDate=None if closed is None else closed.strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
            IssueId__c=None if i % 10 == 7 else issues[i % 5],
            OrderItemId__c=items[i % len(items)],
        )
        stamp = created.strftime("%Y-%m-%dT%H:%M:%S.000+0000")
        b.add("CaseHistory__c", CaseId__c=case, Field__c="Case Creation", CreatedDate=stamp)
        first = users[i % 6]
        b.add("CaseHistory__c", CaseId__c=case, Field__c="Owner Assignment", NewValue__c=first, CreatedDate=stamp)
        if i % 7 == 0 and owner is not None and owner != first:
            b.add(
                "CaseHistory__c",
                CaseId__c=case,
                Field__c="Owner Assignment",
                OldValue__c=first,
                NewValue__c=owner,
                CreatedDate=(created + dt.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
            )
        if closed is not None:
            b.add(
                "CaseHistory__c",
                CaseId__c=case,
                Field__c="Case Closed",
                CreatedDate=closed.strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
            )
        if i % 6 == 0:
            b.add(
                "EmailMessage",
                Subject=f"Re: case {i}",
                TextBody="Hello, about your order...",
                ParentId=case,
                FromAddress=f"cust{i % 8}@example.com",
                ToAddress="support@example.com",
                MessageDate=stamp,
            )
        if i % 8 == 0:
            b.add(
                "LiveChatTranscript",
                CaseId=case,
                AccountId=accounts[i % 8],
                OwnerId=owner,
                ContactId=contacts[i % 8],
                Body=f"[{created:%Y-%m-%dT%H:%M:%S}] Cust{i % 8} (Customer): hi",
                EndTime=stamp,
            )
    for i, title in enumerate(["Return Policy", "Warranty Terms", "Shipping Times", "Size Guide", "Loyalty Program"]):
        b.add(
            "Knowledge__kav",
            Title=title,
            FAQ_Answer__c=f"All about {title.lower()}.",
            Summary=f"{title} summary",
            UrlName=f"article-{i}",
            PublishStatus="Online" if i != 2 else "Draft",
            Language="en_US",
        )
    b.close()


@pytest.fixture(scope="session")
def small_org_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small hand-made org file (60 cases, some null parents and mixed-case text)."""
    path = tmp_path_factory.mktemp("small_org") / "org.db"
    _build_small_org(path)
    return path


@pytest.fixture(scope="session")
def small_org(small_org_path: Path) -> Iterator[LocalOrg]:
    """A LocalOrg over the small org, today = :data:`SMALL_TODAY`."""
    org = LocalOrg(small_org_path, today=SMALL_TODAY)
    yield org
    org.close()


@pytest.fixture(scope="session")
def raw_conn(small_org_path: Path) -> Iterator[sqlite3.Connection]:
    """A plain read-only sqlite3 connection to the small org, for hand-written expected results."""
    conn = sqlite3.connect(small_org_path.as_uri() + "?mode=ro", uri=True, check_same_thread=False)
    yield conn
    conn.close()


@pytest.fixture(scope="session")
def rows(raw_conn: sqlite3.Connection) -> dict[str, list[dict[str, Any]]]:
    """Every row of the small org as Python dicts, by object name (for Python-computed expectations)."""
    out = {}
    for obj in OBJECTS:
        cur = raw_conn.execute(f'SELECT * FROM "{obj.name}"')
        names = [d[0] for d in cur.description]
        out[obj.name] = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    return out


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def small_pro_org(path: Path, kind: str, seed: int) -> Path:
    """A small B2B or B2C org at ``path`` (scale 0.2 and 0.1: a few hundred opportunities), generated quietly
    (a small org warns that it plants less of its structure than a full one)."""
    import warnings

    from crmarena_gym.datagen import generate_org

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generate_org(path, kind=kind, seed=seed, scale={"b2b": 0.2, "b2c": 0.1}[kind])
    return path


@pytest.fixture(scope="module")
def org_path() -> Path:
    """The embedded default org (the served-org tests' org; a module may override it)."""
    return default_org_path()


@pytest.fixture(scope="module")
def raw(org_path: Path) -> Iterator[sqlite3.Connection]:
    """Plain read-only SQLite over :func:`org_path`: the expectations' own access to the org."""
    conn = sqlite3.connect(org_path.as_uri() + "?mode=ro", uri=True)
    yield conn
    conn.close()
