"""best_region_identification: the state whose cases close fastest in a window.

Pinned (PRO.md 3.1): the closed cases created in the window, grouped by their account's ShippingState; the
gold is the state with the unique smallest mean (ClosedDate - CreatedDate), None when no closed case was
created in the window. Draws keep at least two states and a gap of at least 1% between the best two (so any
time unit ranks alike).
"""

from __future__ import annotations

import bisect
import datetime as dt
import sqlite3
from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np

from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._interactive import InteractiveSplit, split_of
from crmarena_gym.tasks._oracle import SolverCalls
from crmarena_gym.tasks._phrasing import capitalize_first, pick
from crmarena_gym.tasks.pro._balance import balanced_draw
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import opening, window_criterion
from crmarena_gym.tasks.pro._windows import draw_day, draw_window, soql_datetime_in, today_line

_FIRST_DAY = dt.date(2020, 1, 1)
_TODAY_RANGE = (dt.date(2020, 6, 1), dt.date(2025, 6, 30))
_TEMPLATES = (
    "Which state had the fastest case closures {window}?",
    "{Window}, customers in which state had their cases closed the quickest on average?",
    "Find the state with the shortest average time to close a case {window}.",
    "Looking at cases created {window}, which region closed them fastest on average?",
    "In which state were cases resolved fastest, on average, {window}?",
    "Identify the state with the lowest average case closure time {window}.",
    "What region shows the quickest average case closure {window}?",
)
_ANSWER = "Return only the two-letter code of the state."
_ATTEMPTS = 10
_CAP = 0.12


def _seconds(timestamp: str) -> int:
    return int(dt.datetime.fromisoformat(timestamp[:19]).replace(tzinfo=dt.UTC).timestamp())


class _Closed:
    """The closed cases: creation day, state, seconds to close; by creation day."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            'SELECT c.CreatedDate, a.ShippingState, c.ClosedDate FROM "Case" c JOIN Account a ON a.Id = c.AccountId '
            "WHERE c.ClosedDate IS NOT NULL ORDER BY c.CreatedDate"
        ).fetchall()
        self.rows = [(created[:10], state, _seconds(closed) - _seconds(created)) for created, state, closed in rows]
        self.days = [day for day, _, _ in self.rows]

    def means(self, start: str, end: str) -> dict[str, Fraction]:
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for _, state, seconds in self.rows[bisect.bisect_left(self.days, start) : bisect.bisect_right(self.days, end)]:
            totals[state][0] += seconds
            totals[state][1] += 1
        return {state: Fraction(total, n) for state, (total, n) in totals.items()}


def _attempt(closed: _Closed, rng: np.random.Generator, want_none: bool) -> tuple[Any, ...] | None:
    today = draw_day(rng, *_TODAY_RANGE)
    window = draw_window(rng, today, earliest=_FIRST_DAY)
    if window is None:
        return None
    means = closed.means(window.start.isoformat(), window.end.isoformat())
    if want_none:
        return None if means else (None, today, window)
    if len(means) < 2:
        return None
    (best, first), (_, second) = sorted(means.items(), key=lambda item: item[1])[:2]
    return (best, today, window) if second - first >= Fraction(1, 100) * second else None


def _draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    closed = facts.once("best_region_identification", lambda: _Closed(facts.conn))
    attempt = partial(_attempt, closed)
    found = balanced_draw(
        facts, "best_region_identification", attempt, rng, want_none, attempts=_ATTEMPTS, cap=_CAP, pilot=1500
    )
    if found is None:
        return None
    answer, today, window = found
    query = pick(rng, _TEMPLATES).format(window=window.phrase, Window=capitalize_first(window.phrase))
    params = {"today": today.isoformat(), **window.params(), "direction": "min"}
    return ProDraw(answer, f"{query} {_ANSWER}", today_line(today), params)


def _gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    rows = conn.execute(
        """
        SELECT a.ShippingState,
               SUM(strftime('%s', substr(c.ClosedDate, 1, 19)) - strftime('%s', substr(c.CreatedDate, 1, 19))),
               COUNT(*)
        FROM "Case" c JOIN Account a ON a.Id = c.AccountId
        WHERE c.ClosedDate IS NOT NULL AND substr(c.CreatedDate, 1, 10) BETWEEN :start AND :end
        GROUP BY a.ShippingState
        """,
        {"start": params["start"], "end": params["end"]},
    ).fetchall()
    if not rows:
        return None
    means = {state: Fraction(int(total), int(n)) for state, total, n in rows}
    low = min(means.values())
    best = sorted(state for state, mean in means.items() if mean == low)
    return best[0] if len(best) == 1 else tuple(best)


def _solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    p = question.params
    cases = calls(
        "issue_soql_query",
        query="SELECT Account.ShippingState, CreatedDate, ClosedDate FROM Case WHERE ClosedDate != null AND "
        + soql_datetime_in("CreatedDate", p["start"], p["end"]),
    )
    spans: dict[str, list[float]] = defaultdict(list)
    for case in cases:
        created = dt.datetime.fromisoformat(case["CreatedDate"].replace("+0000", "+00:00"))
        closed = dt.datetime.fromisoformat(case["ClosedDate"].replace("+0000", "+00:00"))
        spans[case["Account"]["ShippingState"]].append((closed - created).total_seconds())
    if not spans:
        return None
    means = {state: sum(values) / len(values) for state, values in spans.items()}
    return min(means, key=means.__getitem__)


_GOALS = (
    "Which state closes its cases fastest?",
    "Where are customers' cases closed the quickest, by state?",
    "I'd like the state with the quickest average case closure.",
)


def _split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    """Held back: the window (the direction is the question itself: the fastest)."""
    return split_of(
        instance, opening(rng, _GOALS, instance.query, (_ANSWER,)), (window_criterion(rng, instance.params),)
    )


CATEGORY = Category(
    "best_region_identification",
    _draw,
    _gold_sql,
    _solve,
    split=_split,
    split_needs=("today", "start", "end", "window"),
)
