"""References, case histories and the consistency of cases, orders, chats and emails (plain SQL)."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from crmarena_gym.datagen import CaseReading, read_case_text
from crmarena_gym.schema import OBJECTS, quote_identifier

# Every reference field, written out by hand: (table, column, parent table).
REFERENCES = [
    ("Contact", "AccountId", "Account"),
    ("Contact", "OwnerId", "User"),
    ("Case", "ContactId", "Contact"),
    ("Case", "OrderItemId__c", "OrderItem"),
    ("Case", "IssueId__c", "Issue__c"),
    ("Case", "AccountId", "Account"),
    ("Case", "OwnerId", "User"),
    ("ProductCategoryProduct", "ProductCategoryId", "ProductCategory"),
    ("ProductCategoryProduct", "ProductId", "Product2"),
    ("PricebookEntry", "Pricebook2Id", "Pricebook2"),
    ("PricebookEntry", "Product2Id", "Product2"),
    ("Order", "AccountId", "Account"),
    ("Order", "Pricebook2Id", "Pricebook2"),
    ("OrderItem", "OrderId", "Order"),
    ("OrderItem", "Product2Id", "Product2"),
    ("OrderItem", "PriceBookEntryId", "PricebookEntry"),
    ("EmailMessage", "ParentId", "Case"),
    ("LiveChatTranscript", "CaseId", "Case"),
    ("LiveChatTranscript", "AccountId", "Account"),
    ("LiveChatTranscript", "OwnerId", "User"),
    ("LiveChatTranscript", "ContactId", "Contact"),
    ("CaseHistory__c", "CaseId__c", "Case"),
    ("CaseHistory__c", "OldValue__c", "User"),
    ("CaseHistory__c", "NewValue__c", "User"),
]
# Reference columns that are always filled.
REQUIRED = {r[:2] for r in REFERENCES} - {("CaseHistory__c", "OldValue__c"), ("CaseHistory__c", "NewValue__c")}


def one(db: sqlite3.Connection, sql: str) -> object:
    return db.execute(sql).fetchone()[0]


@pytest.mark.parametrize(("table", "column", "parent"), REFERENCES)
def test_reference_resolves(db: sqlite3.Connection, table: str, column: str, parent: str) -> None:
    dangling = one(
        db,
        f'SELECT COUNT(*) FROM "{table}" WHERE "{column}" IS NOT NULL '
        f'AND "{column}" NOT IN (SELECT Id FROM "{parent}")',
    )
    assert dangling == 0
    if (table, column) in REQUIRED:
        assert one(db, f'SELECT COUNT(*) FROM "{table}" WHERE "{column}" IS NULL') == 0


def test_reference_list_covers_the_schema() -> None:
    from crmarena_gym.schema import OBJECTS

    # Stored columns only: the standard fields computed from them (CreatedById ...) have no column.
    schema_refs = {(o.name, f.column_name, f.reference_to) for o in OBJECTS for f in o.references if f.stored}
    assert schema_refs == set(REFERENCES)


def test_every_case_has_one_creation_and_one_initial_assignment_at_creation(db: sqlite3.Connection) -> None:
    bad = one(
        db,
        """SELECT COUNT(*) FROM "Case" c WHERE
             (SELECT COUNT(*) FROM CaseHistory__c h WHERE h.CaseId__c = c.Id AND h.Field__c = 'Case Creation'
                AND h.CreatedDate = c.CreatedDate AND h.OldValue__c IS NULL AND h.NewValue__c IS NULL) != 1
          OR (SELECT COUNT(*) FROM CaseHistory__c h WHERE h.CaseId__c = c.Id AND h.Field__c = 'Owner Assignment'
                AND h.OldValue__c IS NULL) != 1
          OR (SELECT COUNT(*) FROM CaseHistory__c h WHERE h.CaseId__c = c.Id AND h.Field__c = 'Owner Assignment'
                AND h.OldValue__c IS NULL AND h.CreatedDate = c.CreatedDate AND h.NewValue__c IS NOT NULL) != 1""",
    )
    assert bad == 0
    assert one(db, "SELECT COUNT(*) FROM CaseHistory__c WHERE Field__c = 'Case Creation'") == one(
        db, 'SELECT COUNT(*) FROM "Case"'
    )


def test_closed_row_exactly_for_closed_cases_at_closed_date(db: sqlite3.Connection) -> None:
    assert one(db, """SELECT COUNT(*) FROM "Case" WHERE (Status = 'Closed') != (ClosedDate IS NOT NULL)""") == 0
    bad = one(
        db,
        """SELECT COUNT(*) FROM "Case" c WHERE
             (SELECT COUNT(*) FROM CaseHistory__c h WHERE h.CaseId__c = c.Id AND h.Field__c = 'Case Closed')
             != (c.Status = 'Closed')
          OR (c.Status = 'Closed' AND NOT EXISTS (SELECT 1 FROM CaseHistory__c h WHERE h.CaseId__c = c.Id
                AND h.Field__c = 'Case Closed' AND h.CreatedDate = c.ClosedDate))
          OR c.ClosedDate <= c.CreatedDate""",
    )
    assert bad == 0
    closed_share = one(db, """SELECT AVG(Status = 'Closed') FROM "Case" """)
    assert 0.9 <= closed_share <= 0.97


def test_transfers_chain_owners_between_creation_and_closure(db: sqlite3.Connection) -> None:
    rows = db.execute(
        """SELECT c.Id, c.OwnerId, c.CreatedDate, c.ClosedDate, h.CreatedDate, h.OldValue__c, h.NewValue__c
           FROM "Case" c JOIN CaseHistory__c h ON h.CaseId__c = c.Id
           WHERE h.Field__c = 'Owner Assignment' ORDER BY c.Id, h.CreatedDate, h.OldValue__c IS NOT NULL"""
    ).fetchall()
    by_case: dict[str, list[tuple]] = {}
    for row in rows:
        by_case.setdefault(row[0], []).append(row)
    for case_id, events in by_case.items():
        owner, created, closed = events[0][1], events[0][2], events[0][3]
        assert events[0][5] is None, case_id
        current = events[0][6]
        for ev in events[1:]:
            assert ev[5] == current and ev[6] != current, case_id
            assert ev[4] > created, case_id
            if closed is not None:
                assert ev[4] < closed, case_id
            current = ev[6]
        assert owner == current, case_id


def test_history_rows_are_only_the_three_kinds(db: sqlite3.Connection) -> None:
    kinds = {r[0] for r in db.execute("SELECT DISTINCT Field__c FROM CaseHistory__c")}
    assert kinds == {"Case Creation", "Owner Assignment", "Case Closed"}
    assert (
        one(
            db,
            "SELECT COUNT(*) FROM CaseHistory__c WHERE Field__c != 'Owner Assignment' AND "
            "(OldValue__c IS NOT NULL OR NewValue__c IS NOT NULL)",
        )
        == 0
    )


def test_case_contact_item_and_order_agree(db: sqlite3.Connection) -> None:
    bad = one(
        db,
        """SELECT COUNT(*) FROM "Case" c
           JOIN Contact ct ON ct.Id = c.ContactId
           JOIN OrderItem oi ON oi.Id = c.OrderItemId__c
           JOIN "Order" o ON o.Id = oi.OrderId
           WHERE ct.AccountId != c.AccountId OR o.AccountId != c.AccountId OR o.Status != 'Activated'
              OR o.EffectiveDate >= substr(c.CreatedDate, 1, 10)""",
    )
    assert bad == 0
    first, last = db.execute('SELECT MIN(CreatedDate), MAX(CreatedDate) FROM "Case"').fetchone()
    assert first >= "2020-01-01" and last < "2026-01-01"
    years = {r[0] for r in db.execute('SELECT DISTINCT substr(CreatedDate, 1, 4) FROM "Case"')}
    assert years == {"2020", "2021", "2022", "2023", "2024", "2025"}


def test_order_items_are_priced_from_their_orders_price_book(db: sqlite3.Connection) -> None:
    bad = one(
        db,
        """SELECT COUNT(*) FROM OrderItem oi JOIN "Order" o ON o.Id = oi.OrderId
           JOIN PricebookEntry pe ON pe.Id = oi.PriceBookEntryId
           WHERE pe.Pricebook2Id != o.Pricebook2Id OR pe.Product2Id != oi.Product2Id OR pe.UnitPrice != oi.UnitPrice""",
    )
    assert bad == 0
    assert (
        one(db, 'SELECT COUNT(*) FROM "Order" o WHERE NOT EXISTS (SELECT 1 FROM OrderItem i WHERE i.OrderId = o.Id)')
        == 0
    )


def test_chats_fall_within_the_case_and_name_its_owner(db: sqlite3.Connection) -> None:
    rows = db.execute(
        """SELECT t.Body, t.EndTime, t.OwnerId, t.AccountId, t.ContactId, c.OwnerId, c.AccountId, c.ContactId,
                  c.CreatedDate, c.ClosedDate, u.FirstName || ' ' || u.LastName,
                  ct.FirstName || ' ' || ct.LastName
           FROM LiveChatTranscript t JOIN "Case" c ON c.Id = t.CaseId JOIN User u ON u.Id = c.OwnerId
           JOIN Contact ct ON ct.Id = c.ContactId"""
    ).fetchall()
    assert len(rows) > 500
    line_re = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\] (.+) \((Customer|Agent)\): \S.*$")
    for body, end, t_owner, t_acc, t_con, owner, acc, con, created, closed, agent, customer in rows:
        assert (t_owner, t_acc, t_con) == (owner, acc, con)
        stamps = []
        for line in body.split("\n"):
            m = line_re.match(line)
            assert m, line
            stamps.append(m.group(1))
            assert m.group(2) == (agent if m.group(3) == "Agent" else customer)
        assert stamps == sorted(stamps)
        assert created[:19] <= stamps[0] and end[:19] == stamps[-1]
        if closed is not None:
            assert stamps[-1] <= closed[:19]


def test_emails_fall_within_the_case_and_go_between_owner_and_contact(db: sqlite3.Connection) -> None:
    rows = db.execute(
        """SELECT e.FromAddress, e.ToAddress, e.ToIds, e.MessageDate, e.Subject, c.CreatedDate, c.ClosedDate,
                  u.Email, u.Id, ct.Email, ct.Id
           FROM EmailMessage e JOIN "Case" c ON c.Id = e.ParentId JOIN User u ON u.Id = c.OwnerId
           JOIN Contact ct ON ct.Id = c.ContactId"""
    ).fetchall()
    assert len(rows) > 2000
    for frm, to, to_ids, when, subject, created, closed, agent_mail, agent_id, cust_mail, cust_id in rows:
        assert {frm, to} == {agent_mail, cust_mail}
        assert json.loads(to_ids) == [agent_id if to == agent_mail else cust_id]
        assert when > created and (closed is None or when <= closed)
        assert subject


def test_catalog_issues_and_articles(db: sqlite3.Connection) -> None:
    issues = [r[0] for r in db.execute("SELECT Name FROM Issue__c ORDER BY Name")]
    assert issues == sorted(
        [
            "Incorrect Item Received",
            "Billing/Payment Issue",
            "Return Policy Issue",
            "Product Defect",
            "Size Mismatch",
            "Shipping Delay",
            "Product Availability",
            "Order Cancellation",
            "Warranty Issue",
            "Loyalty Program Inquiry",
        ]
    )
    assert one(db, "SELECT COUNT(DISTINCT Name) FROM Product2") == 501
    assert one(db, "SELECT COUNT(DISTINCT ProductId) FROM ProductCategoryProduct") == 501
    assert one(db, "SELECT COUNT(DISTINCT ProductCategoryId) FROM ProductCategoryProduct") == 12
    assert one(db, "SELECT COUNT(*) FROM Knowledge__kav WHERE PublishStatus = 'Online' AND Language = 'en_US'") == 45
    assert one(db, "SELECT COUNT(DISTINCT UrlName) FROM Knowledge__kav") == 45
    text = " ".join(
        r[0] for r in db.execute("SELECT Title || ' ' || FAQ_Answer__c || ' ' || Summary FROM Knowledge__kav")
    )
    assert "Shoes & Clothings" not in text


def test_case_texts_vary_and_name_the_product(db: sqlite3.Connection) -> None:
    rows = db.execute(
        """SELECT c.Subject, c.Description, p.Name FROM "Case" c JOIN OrderItem oi ON oi.Id = c.OrderItemId__c
           JOIN Product2 p ON p.Id = oi.Product2Id"""
    ).fetchall()
    named = sum(p in s or p in d for s, d, p in rows)
    assert named >= 0.9 * len(rows)
    assert len({d for _s, d, _p in rows}) >= 0.8 * len(rows)
    # Subjects are not just the issue names.
    issue_names = {r[0] for r in db.execute("SELECT Name FROM Issue__c")}
    assert sum(s in issue_names for s, _d, _p in rows) < 0.4 * len(rows)


def test_every_generated_text_value_fits_its_salesforce_length(db: sqlite3.Connection) -> None:
    """No generated value is longer than its field allows (a write of it would be refused with STRING_TOO_LONG)."""
    # The lengths a generated value must fit, written out (the Salesforce Field Reference's): a regression in the
    # schema's lengths must not make this check pass.
    documented = {
        ("Case", "Priority"): 255,
        ("Case", "Status"): 255,
        ("Order", "Status"): 100,
        ("User", "TimeZoneSidKey"): 40,
        ("User", "Alias"): 8,
        ("User", "Name"): 121,
        ("Contact", "Name"): 121,
        ("Account", "ShippingCity"): 40,
        ("Knowledge__kav", "PublishStatus"): 40,
        ("Case", "CaseNumber"): 30,
        ("Order", "OrderNumber"): 30,
        ("OrderItem", "OrderItemNumber"): 30,
    }
    checked = set()
    for obj in OBJECTS:
        for f in obj.fields:
            if not f.type.is_text:
                continue
            limit = documented.get((obj.name, f.name), f.max_length)
            # A computed field (a person's Name, an auto-number) is its SQL expression over the stored columns.
            value = f.formula or quote_identifier(f.column_name)
            longest = db.execute(f"SELECT MAX(length({value})) FROM {quote_identifier(obj.name)}").fetchone()[0]
            assert longest is None or longest <= limit, (obj.name, f.name, longest, limit)
            if longest is not None:
                checked.add((obj.name, f.name))
    assert set(documented) <= checked  # the generator fills each of them


def test_every_case_text_reads_back_as_its_issue_and_product(db: sqlite3.Connection) -> None:
    """A case's subject and description read as exactly the issue it is filed under and the product of its order
    line (the reading the routing oracle relies on); texts no template writes read as nothing."""
    rows = db.execute(
        """SELECT c.Subject, c.Description, i.Name, p.Name FROM "Case" c JOIN Issue__c i ON i.Id = c.IssueId__c
           JOIN OrderItem oi ON oi.Id = c.OrderItemId__c JOIN Product2 p ON p.Id = oi.Product2Id"""
    ).fetchall()
    assert len(rows) == db.execute('SELECT COUNT(*) FROM "Case"').fetchone()[0]
    unread = [r for r in rows if read_case_text(r[0], r[1]) != (CaseReading(r[2], r[3]),)]
    assert unread == []
    subject, description, _issue, product = rows[0]
    assert read_case_text(subject, description[: len(description) // 2]) == ()
    assert read_case_text("Hello", f"I like my {product}.") == ()
