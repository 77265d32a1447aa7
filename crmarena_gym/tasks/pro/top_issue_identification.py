"""top_issue_identification: the issue reported most often for a product in a window.

Pinned (PRO.md 3.1): the cases created in the window whose order item is of the product (Case.OrderItemId__c
-> OrderItem.Product2Id), counted per IssueId__c; the gold is the unique maximum, None when the product has no
case in the window. Draws keep at least two issues reported in the window (real competition) and a unique top.
"""

from __future__ import annotations

import bisect
import datetime as dt
import sqlite3
from collections import Counter
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from crmarena_gym.tasks._oracle import SolverCalls
from crmarena_gym.tasks._phrasing import capitalize_first, pick
from crmarena_gym.tasks.pro._balance import balanced_draw
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import product_and_window_held_back
from crmarena_gym.tasks.pro._windows import (
    ProWindow,
    draw_day,
    draw_window,
    named_window_holding,
    soql_datetime_in,
    today_line,
)

_FIRST_DAY = dt.date(2020, 1, 1)
_TODAY_RANGE = (dt.date(2020, 6, 1), dt.date(2025, 6, 30))
_TEMPLATES = (
    "Which issue was reported most often for product {product} {window}?",
    "{Window}, what was the most frequently reported issue for the product {product}?",
    "Find the issue that came up most in cases about product {product} {window}.",
    "What problem did customers report most for product {product} {window}?",
    "For product {product}, which issue had the most cases {window}?",
    "Identify the top issue reported against product {product} {window}.",
    "Looking at cases {window}, which issue was raised most often for product {product}?",
)
_ANSWER = "Return only the Id of the issue."
_ATTEMPTS = 20
_CAP = 0.2


class _Cases:
    """The cases with their product, by creation day."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            'SELECT substr(c.CreatedDate, 1, 10), oi.Product2Id, c.IssueId__c FROM "Case" c '
            "JOIN OrderItem oi ON oi.Id = c.OrderItemId__c ORDER BY c.CreatedDate"
        ).fetchall()
        self.rows = rows
        self.days = [day for day, _, _ in rows]
        self.products = sorted(conn.execute("SELECT Id FROM Product2").fetchall())

    def counts(self, product: str, window: ProWindow) -> Counter[str]:
        lo = bisect.bisect_left(self.days, window.start.isoformat())
        hi = bisect.bisect_right(self.days, window.end.isoformat())
        return Counter(issue for _, p, issue in self.rows[lo:hi] if p == product and issue is not None)


def _attempt(cases: _Cases, rng: np.random.Generator, want_none: bool) -> tuple[Any, ...] | None:
    if want_none or not cases.rows:
        product = cases.products[int(rng.integers(len(cases.products)))][0]
        today = draw_day(rng, *_TODAY_RANGE)
        window = draw_window(rng, today, earliest=_FIRST_DAY)
    else:  # a product and a window around one of its cases
        day, product, _ = cases.rows[int(rng.integers(len(cases.rows)))]
        if rng.random() < 0.5:
            today = dt.date.fromisoformat(day) + dt.timedelta(days=int(rng.integers(0, 90)))
            window = draw_window(rng, today, earliest=_FIRST_DAY, named=())
        else:
            window = named_window_holding(rng, dt.date.fromisoformat(day))
            today = window.end + dt.timedelta(days=int(rng.integers(0, 120)))
    if window is None or window.start < _FIRST_DAY or not _TODAY_RANGE[0] <= today <= _TODAY_RANGE[1]:
        return None
    counts = cases.counts(product, window)
    if want_none:
        return None if counts else (None, product, today, window)
    if len(counts) < 2:
        return None
    (top, first), (_, second) = counts.most_common(2)
    return (top, product, today, window) if first > second else None


def _draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    cases = facts.once("top_issue_identification", lambda: _Cases(facts.conn))
    attempt = partial(_attempt, cases)
    found = balanced_draw(
        facts, "top_issue_identification", attempt, rng, want_none, attempts=_ATTEMPTS, cap=_CAP, pilot=6000
    )
    if found is None:
        return None
    answer, product, today, window = found
    query = pick(rng, _TEMPLATES).format(product=product, window=window.phrase, Window=capitalize_first(window.phrase))
    params = {"today": today.isoformat(), **window.params(), "product_id": product}
    return ProDraw(answer, f"{query} {_ANSWER}", today_line(today), params)


def _gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    rows = conn.execute(
        """
        SELECT c.IssueId__c, COUNT(*) AS n FROM "Case" c
        WHERE c.IssueId__c IS NOT NULL
          AND c.OrderItemId__c IN (SELECT Id FROM OrderItem WHERE Product2Id = :product)
          AND substr(c.CreatedDate, 1, 10) BETWEEN :start AND :end
        GROUP BY c.IssueId__c
        """,
        {"product": params["product_id"], "start": params["start"], "end": params["end"]},
    ).fetchall()
    if not rows:
        return None
    top = max(n for _, n in rows)
    best = sorted(issue for issue, n in rows if n == top)
    return best[0] if len(best) == 1 else tuple(best)


def _solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    p = question.params
    product = str(p["product_id"]).replace("'", "")
    rows = calls(
        "issue_soql_query",
        query="SELECT IssueId__c, COUNT(Id) n FROM Case WHERE IssueId__c != null AND OrderItemId__c IN "
        f"(SELECT Id FROM OrderItem WHERE Product2Id = '{product}') AND "
        + soql_datetime_in("CreatedDate", p["start"], p["end"])
        + " GROUP BY IssueId__c",
    )
    if not rows:
        return None
    counts = {row["IssueId__c"]: int(row["n"]) for row in rows}
    return max(counts, key=counts.__getitem__)


_GOALS = (
    "What issue do customers report most about one of our products?",
    "Which issue comes up most for a product of ours?",
    "I want the top reported issue for one of our products.",
)


CATEGORY = Category(
    "top_issue_identification",
    _draw,
    _gold_sql,
    _solve,
    split=product_and_window_held_back(_GOALS, _ANSWER),
    split_needs=("today", "start", "end", "window", "product_id"),
)
