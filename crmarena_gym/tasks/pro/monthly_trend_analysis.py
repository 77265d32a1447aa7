"""monthly_trend_analysis: the month in a trailing window with clearly more cases for a product than the others.

Pinned (PRO.md 2.2, 3.1): the window is the past N months or quarters up to today, both ends inclusive; the
cases created in it whose order item is of the product are bucketed by the English name of their creation month
(years merged when the window reaches over more than twelve months); the gold is the month whose count is
larger than every other month's (a strict maximum). Pro never asks a None here: draws keep windows with cases
in at least two months, a strict maximum, and the same answer when buckets are kept per year.
"""

from __future__ import annotations

import bisect
import datetime as dt
import sqlite3
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from crmarena_gym.tasks._oracle import SolverCalls
from crmarena_gym.tasks._phrasing import capitalize_first, pick
from crmarena_gym.tasks.pro._balance import balanced_draw
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import product_and_window_held_back
from crmarena_gym.tasks.pro._windows import relative_window, soql_datetime_in, today_line

_FIRST_DAY = dt.date(2020, 1, 1)
_TODAY_RANGE = (dt.date(2020, 6, 1), dt.date(2025, 6, 30))
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_TEMPLATES = (
    "Was there a month {window} with significantly more cases for product {product} than the others? Which one?",
    "{Window}, which month saw significantly more cases about product {product} than any other?",
    "Find the month {window} in which product {product} had significantly more cases than the rest.",
    "Looking at cases for product {product} {window}, which month stands out with significantly more of them?",
    "Identify the month {window} with significantly more cases for product {product}.",
    "For product {product}, which month {window} had significantly more cases than every other month?",
)
_ANSWER = "Return only the name of the month."
_ATTEMPTS = 20
_CAP = 0.15


class _Cases:
    """The cases with their product, by creation day."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.rows = conn.execute(
            'SELECT substr(c.CreatedDate, 1, 10), oi.Product2Id FROM "Case" c '
            "JOIN OrderItem oi ON oi.Id = c.OrderItemId__c ORDER BY c.CreatedDate"
        ).fetchall()
        self.days = [day for day, _ in self.rows]

    def in_window(self, product: str, start: str, end: str) -> list[str]:
        lo, hi = bisect.bisect_left(self.days, start), bisect.bisect_right(self.days, end)
        return [day for day, p in self.rows[lo:hi] if p == product]


def _strict_top(counts: Counter[Any]) -> Any:
    ranked = counts.most_common(2)
    if len(ranked) < 2 or ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def _attempt(cases: _Cases, rng: np.random.Generator) -> tuple[Any, ...] | None:
    if not cases.rows:
        return None
    day, product = cases.rows[int(rng.integers(len(cases.rows)))]
    today = dt.date.fromisoformat(day) + dt.timedelta(days=int(rng.integers(0, 200)))
    if not _TODAY_RANGE[0] <= today <= _TODAY_RANGE[1]:
        return None
    unit = "month" if rng.random() < 0.5 else "quarter"
    count = int(rng.integers(2, 12)) if unit == "month" else int(rng.integers(2, 7))
    window = relative_window(rng, today, unit, count)
    if window.start < _FIRST_DAY:
        return None
    days = cases.in_window(product, window.start.isoformat(), window.end.isoformat())
    by_name = _strict_top(Counter(_MONTHS[int(d[5:7]) - 1] for d in days))
    by_year = _strict_top(Counter(d[:7] for d in days))
    if by_name is None or by_year is None or _MONTHS[int(by_year[5:7]) - 1] != by_name:
        return None
    return by_name, product, today, window


def _draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    if want_none:
        return None  # Pro asks no unanswerable trend question (None rate 0)
    cases = facts.once("monthly_trend_analysis", lambda: _Cases(facts.conn))
    found = balanced_draw(
        facts,
        "monthly_trend_analysis",
        lambda r, _: _attempt(cases, r),
        rng,
        False,
        attempts=_ATTEMPTS,
        cap=_CAP,
        pilot=2000,
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
        SELECT CAST(strftime('%m', substr(c.CreatedDate, 1, 10)) AS INTEGER) AS month, COUNT(*) AS n
        FROM "Case" c JOIN OrderItem oi ON oi.Id = c.OrderItemId__c
        WHERE oi.Product2Id = :product AND substr(c.CreatedDate, 1, 10) BETWEEN :start AND :end
        GROUP BY month
        """,
        {"product": params["product_id"], "start": params["start"], "end": params["end"]},
    ).fetchall()
    if not rows:
        return None
    top = max(n for _, n in rows)
    names = "January February March April May June July August September October November December".split()
    best = sorted(names[month - 1] for month, n in rows if n == top)
    return best[0] if len(best) == 1 else None


def _solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    p = question.params
    product = str(p["product_id"]).replace("'", "")
    cases = calls(
        "issue_soql_query",
        query=f"SELECT CreatedDate FROM Case WHERE OrderItemId__c IN (SELECT Id FROM OrderItem WHERE Product2Id = "
        f"'{product}') AND " + soql_datetime_in("CreatedDate", p["start"], p["end"]),
    )
    counts = Counter(_MONTHS[int(case["CreatedDate"][5:7]) - 1] for case in cases)
    ranked = counts.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


_GOALS = (
    "Which month stands out for cases about one of our products?",
    "In which month did a product of ours get significantly more cases than the others?",
    "I'm looking for a month with a spike in cases for one of our products.",
)


CATEGORY = Category(
    "monthly_trend_analysis",
    _draw,
    _gold_sql,
    _solve,
    split=product_and_window_held_back(_GOALS, _ANSWER),
    split_needs=("today", "start", "end", "window", "product_id"),
)
