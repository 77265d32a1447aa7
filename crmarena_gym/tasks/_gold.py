"""Gold answers, computed with plain SQL and Python over the org's tables.

This code is deliberately independent of the agent-facing tools and of the SOQL engine: the oracle
solvers reach the same answers through the tools and the engine, so the two paths check each other.

Every function returns the list of tied best answers (sorted); an empty list means the question has
no answer (the gold is ``None``). Windows follow the original's semantics:

- cases are in a window when ``start <= CreatedDate < end``;
- history rows (owner assignments, transfers) are in a window when ``start <= CreatedDate <= end``;
- issue counts use ``start <= CreatedDate <= end`` as well.
"""

from __future__ import annotations

import calendar
import datetime as dt
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Literal, TypeVar

Direction = Literal["min", "max"]
K = TypeVar("K")

_TS_FORMAT = "%Y-%m-%dT%H:%M:%S"


def format_timestamp(moment: dt.datetime) -> str:
    """The stored form of a UTC datetime (``2020-12-22T11:00:00.000+0000``)."""
    return moment.strftime(_TS_FORMAT) + ".000+0000"


def parse_timestamp(value: str) -> dt.datetime:
    """Parse a stored datetime (the fraction and the ``+0000`` zone are dropped; all are UTC)."""
    return dt.datetime.strptime(value[:19], _TS_FORMAT)


def best_keys(values: Mapping[K, Fraction | int | float], direction: Direction) -> list[K]:
    """The keys whose value is the smallest (``min``) or largest (``max``), all ties, sorted.

    Example:
        >>> best_keys({"a": 2, "b": 5, "c": 5}, "max")
        ['b', 'c']
    """
    if direction not in ("min", "max"):
        raise ValueError(f"direction must be 'min' or 'max', got {direction!r}")
    if not values:
        return []
    target = min(values.values()) if direction == "min" else max(values.values())
    return sorted(k for k, v in values.items() if v == target)  # type: ignore[type-var]


def _rows(conn: sqlite3.Connection, sql: str, params: Iterable[object] = ()) -> list[tuple]:  # type: ignore[type-arg]
    return conn.execute(sql, tuple(params)).fetchall()


def handled_counts(conn: sqlite3.Connection, start: dt.datetime, end: dt.datetime) -> dict[str, int]:
    """Owner Assignment rows per new owner with ``start <= CreatedDate <= end`` (transfers in included)."""
    rows = _rows(
        conn,
        'SELECT "NewValue__c", COUNT(*) FROM "CaseHistory__c" WHERE "Field__c" = \'Owner Assignment\' '
        'AND "NewValue__c" IS NOT NULL AND "CreatedDate" >= ? AND "CreatedDate" <= ? GROUP BY "NewValue__c"',
        (format_timestamp(start), format_timestamp(end)),
    )
    return {agent: count for agent, count in rows}


def qualified_agents(conn: sqlite3.Connection, start: dt.datetime, end: dt.datetime, n_cases: int) -> set[str]:
    """Agents who handled strictly more than ``n_cases`` cases in the window."""
    return {agent for agent, count in handled_counts(conn, start, end).items() if count > n_cases}


def average_handle_times(
    conn: sqlite3.Connection, start: dt.datetime, end: dt.datetime, n_cases: int
) -> dict[str, Fraction]:
    """Average handle time (seconds, exact) per qualified agent over their closed, non-transferred cases.

    A case counts when it was created in ``[start, end)``, is closed, is owned by a qualified agent and
    has exactly one Owner Assignment row in ``[start, end]``.
    """
    qualified = qualified_agents(conn, start, end, n_cases)
    s, e = format_timestamp(start), format_timestamp(end)
    single = {
        case_id
        for (case_id,) in _rows(
            conn,
            'SELECT "CaseId__c" FROM "CaseHistory__c" WHERE "Field__c" = \'Owner Assignment\' '
            'AND "CreatedDate" >= ? AND "CreatedDate" <= ? GROUP BY "CaseId__c" HAVING COUNT(*) = 1',
            (s, e),
        )
    }
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for case_id, owner, created, closed in _rows(
        conn,
        'SELECT "Id", "OwnerId", "CreatedDate", "ClosedDate" FROM "Case" '
        'WHERE "CreatedDate" >= ? AND "CreatedDate" < ? AND "ClosedDate" IS NOT NULL',
        (s, e),
    ):
        if case_id not in single or owner not in qualified:
            continue
        seconds = int((parse_timestamp(closed) - parse_timestamp(created)).total_seconds())
        totals[owner][0] += seconds
        totals[owner][1] += 1
    return {agent: Fraction(total, count) for agent, (total, count) in totals.items()}


def gold_handle_time(
    conn: sqlite3.Connection, start: dt.datetime, end: dt.datetime, n_cases: int, direction: Direction
) -> list[str]:
    """HTU: the agent(s) with the shortest (``min``) or longest (``max``) average handle time."""
    return best_keys(average_handle_times(conn, start, end, n_cases), direction)


def transfer_counts(conn: sqlite3.Connection, start: dt.datetime, end: dt.datetime, n_cases: int) -> dict[str, int]:
    """Transfers out per qualified agent: Owner Assignment rows in ``[start, end]`` naming them as old owner.

    Agents without any transfer in the window do not appear.
    """
    qualified = qualified_agents(conn, start, end, n_cases)
    rows = _rows(
        conn,
        'SELECT "OldValue__c", COUNT(*) FROM "CaseHistory__c" WHERE "Field__c" = \'Owner Assignment\' '
        'AND "OldValue__c" IS NOT NULL AND "CreatedDate" >= ? AND "CreatedDate" <= ? GROUP BY "OldValue__c"',
        (format_timestamp(start), format_timestamp(end)),
    )
    return {agent: count for agent, count in rows if agent in qualified}


def gold_transfer_count(
    conn: sqlite3.Connection, start: dt.datetime, end: dt.datetime, n_cases: int, direction: Direction
) -> list[str]:
    """TCU: the agent(s) with the fewest (``min``) or most (``max``) transfers out."""
    return best_keys(transfer_counts(conn, start, end, n_cases), direction)


def issue_counts(conn: sqlite3.Connection, product_id: str, start: dt.datetime, end: dt.datetime) -> dict[str, int]:
    """Cases per issue about ``product_id`` with ``start <= CreatedDate <= end``."""
    rows = _rows(
        conn,
        'SELECT c."IssueId__c", COUNT(*) FROM "Case" c JOIN "OrderItem" oi ON oi."Id" = c."OrderItemId__c" '
        'WHERE oi."Product2Id" = ? AND c."CreatedDate" >= ? AND c."CreatedDate" <= ? '
        'AND c."IssueId__c" IS NOT NULL GROUP BY c."IssueId__c"',
        (product_id, format_timestamp(start), format_timestamp(end)),
    )
    return {issue: count for issue, count in rows}


def issue_counts_by_product(
    conn: sqlite3.Connection, start: dt.datetime, end: dt.datetime
) -> dict[str, dict[str, int]]:
    """:func:`issue_counts` of every product with cases on an issue in the window, by product Id."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for product, issue, count in _rows(
        conn,
        'SELECT oi."Product2Id", c."IssueId__c", COUNT(*) FROM "Case" c '
        'JOIN "OrderItem" oi ON oi."Id" = c."OrderItemId__c" '
        'WHERE c."CreatedDate" >= ? AND c."CreatedDate" <= ? AND c."IssueId__c" IS NOT NULL '
        'AND oi."Product2Id" IS NOT NULL GROUP BY 1, 2',
        (format_timestamp(start), format_timestamp(end)),
    ):
        out[product][issue] = count
    return dict(out)


def gold_top_issue(conn: sqlite3.Connection, product_id: str, start: dt.datetime, end: dt.datetime) -> list[str]:
    """TII: the issue(s) most reported for a product in the window."""
    return best_keys(issue_counts(conn, product_id, start, end), "max")


def month_counts(conn: sqlite3.Connection, product_id: str, start: dt.datetime, end: dt.datetime) -> Counter[str]:
    """Cases about ``product_id`` created in ``[start, end)`` per month name (years merged)."""
    counts: Counter[str] = Counter()
    for (created,) in _rows(
        conn,
        'SELECT c."CreatedDate" FROM "Case" c JOIN "OrderItem" oi ON oi."Id" = c."OrderItemId__c" '
        'WHERE oi."Product2Id" = ? AND c."CreatedDate" >= ? AND c."CreatedDate" < ?',
        (product_id, format_timestamp(start), format_timestamp(end)),
    ):
        counts[calendar.month_name[parse_timestamp(created).month]] += 1
    return counts


def month_counts_by_product(conn: sqlite3.Connection, start: dt.datetime, end: dt.datetime) -> dict[str, Counter[str]]:
    """:func:`month_counts` of every product with cases in the window, by product Id."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for product, created in _rows(
        conn,
        'SELECT oi."Product2Id", c."CreatedDate" FROM "Case" c JOIN "OrderItem" oi ON oi."Id" = c."OrderItemId__c" '
        'WHERE c."CreatedDate" >= ? AND c."CreatedDate" < ? AND oi."Product2Id" IS NOT NULL',
        (format_timestamp(start), format_timestamp(end)),
    ):
        out[product][calendar.month_name[parse_timestamp(created).month]] += 1
    return dict(out)


def gold_monthly_trend(conn: sqlite3.Connection, product_id: str, start: dt.datetime, end: dt.datetime) -> list[str]:
    """MTA: the month(s) with the most cases for a product in the window."""
    return best_keys(dict(month_counts(conn, product_id, start, end)), "max")


def region_closure_times(conn: sqlite3.Connection, start: dt.datetime, end: dt.datetime) -> dict[str, Fraction]:
    """Average seconds from creation to closure per shipping state, over closed cases created in ``[start, end)``."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for state, created, closed in _rows(
        conn,
        'SELECT a."ShippingState", c."CreatedDate", c."ClosedDate" FROM "Case" c '
        'JOIN "Account" a ON a."Id" = c."AccountId" WHERE c."CreatedDate" >= ? AND c."CreatedDate" < ? '
        'AND c."ClosedDate" IS NOT NULL AND a."ShippingState" IS NOT NULL',
        (format_timestamp(start), format_timestamp(end)),
    ):
        totals[state][0] += int((parse_timestamp(closed) - parse_timestamp(created)).total_seconds())
        totals[state][1] += 1
    return {state: Fraction(total, count) for state, (total, count) in totals.items()}


def gold_best_region(conn: sqlite3.Connection, start: dt.datetime, end: dt.datetime) -> list[str]:
    """BRI: the state(s) whose cases closed fastest on average in the window."""
    return best_keys(region_closure_times(conn, start, end), "min")


def closed_on_issue(conn: sqlite3.Connection, issue_id: str) -> dict[str, int]:
    """Closed cases filed under ``issue_id`` per owner: the routing policy's first rule."""
    rows = _rows(
        conn,
        'SELECT "OwnerId", COUNT(*) FROM "Case" WHERE "Status" = \'Closed\' AND "IssueId__c" = ? GROUP BY "OwnerId"',
        (issue_id,),
    )
    return {owner: count for owner, count in rows}


def gold_case_routing(conn: sqlite3.Connection, issue_id: str, product_id: str) -> list[str]:
    """NCR: the agent(s) the routing policy picks for a new case on ``issue_id`` about ``product_id``.

    Most closed cases on the issue; ties broken by most closed cases on the product; then by fewest
    cases not closed.
    """
    tied = best_keys(closed_on_issue(conn, issue_id), "max")
    if len(tied) <= 1:
        return tied
    product_closed = dict(
        _rows(
            conn,
            'SELECT c."OwnerId", COUNT(*) FROM "Case" c JOIN "OrderItem" oi ON oi."Id" = c."OrderItemId__c" '
            'WHERE c."Status" = \'Closed\' AND oi."Product2Id" = ? GROUP BY c."OwnerId"',
            (product_id,),
        )
    )
    tied = best_keys({agent: product_closed.get(agent, 0) for agent in tied}, "max")
    if len(tied) <= 1:
        return tied
    open_cases = dict(
        _rows(conn, 'SELECT "OwnerId", COUNT(*) FROM "Case" WHERE "Status" != \'Closed\' GROUP BY "OwnerId"')
    )
    return best_keys({agent: open_cases.get(agent, 0) for agent in tied}, "min")


def purchased_products(conn: sqlite3.Connection, contact_id: str, day: dt.date) -> set[str]:
    """Products the contact's account bought in activated orders effective on ``day``."""
    rows = _rows(
        conn,
        'SELECT DISTINCT oi."Product2Id" FROM "OrderItem" oi JOIN "Order" o ON o."Id" = oi."OrderId" '
        'JOIN "Contact" ct ON ct."AccountId" = o."AccountId" '
        'WHERE ct."Id" = ? AND o."Status" = \'Activated\' AND o."EffectiveDate" = ?',
        (contact_id, day.isoformat()),
    )
    return {product for (product,) in rows}
