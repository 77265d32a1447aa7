"""conversion_rate_comprehension: the representative with the highest or lowest lead conversion rate in a window.

Pinned (PRO.md 3.1): the candidates are the owners of at least one lead created in the window; an owner's rate
is the number of their leads created in the window with IsConverted true and a ConvertedDate in the window, over
the number of their leads created in the window (conversion is judged by IsConverted, not by Lead.Status). The
gold is the owner with the unique highest (or lowest) rate, None when no lead was created in the window. The
generator delivers leads in batches of at least three on one day, so every candidate of every window has at
least three leads there; draws keep at least two candidates.
"""

from __future__ import annotations

import bisect
import datetime as dt
import sqlite3
from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from crmarena_gym.tasks._oracle import SolverCalls
from crmarena_gym.tasks._phrasing import capitalize_first, pick
from crmarena_gym.tasks.pro._balance import gold_shares, retry, thin
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import window_and_direction_held_back
from crmarena_gym.tasks.pro._windows import draw_day, draw_window, soql_date_in, soql_datetime_in, today_line

_FIRST_DAY = dt.date(2020, 1, 1)
_NONE_FIRST_DAY = dt.date(2019, 1, 1)
_TODAY_RANGE = (dt.date(2020, 6, 1), dt.date(2025, 6, 30))
_POLICY = (
    "- Lead conversion policy: an agent's conversion rate for a period is the number of their leads created in "
    "the period that were converted within the same period, divided by the number of their leads created in the "
    "period. A lead counts as converted when it is marked converted and its conversion date falls in the period. "
    "Compare the agents who own at least one lead created in the period."
)
_WORDS = {"max": ("highest", "best", "largest"), "min": ("lowest", "worst", "smallest")}
_TEMPLATES = (
    "Which agent had the {adj} lead conversion rate {window}?",
    "{Window}, which sales agent converted leads at the {adj} rate?",
    "Find the agent with the {adj} conversion rate for leads {window}.",
    "Looking at leads created {window}, whose conversion rate was the {adj}?",
    "Identify the sales representative with the {adj} lead-to-conversion rate {window}.",
    "Who among our sales agents had the {adj} rate of converting leads {window}?",
    "I need the agent whose leads converted at the {adj} rate {window}.",
)
_ANSWER = "Return only the Id of the agent."
_ATTEMPTS = 20
_CAP = 0.1


class _Leads:
    """The leads: creation day, owner, conversion day (None if not converted); by creation day."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.rows = [
            (created[:10], owner, converted_on[:10] if converted and converted_on else None)
            for created, owner, converted, converted_on in conn.execute(
                "SELECT CreatedDate, OwnerId, IsConverted, ConvertedDate FROM Lead ORDER BY CreatedDate"
            )
        ]
        self.days = [day for day, _, _ in self.rows]

    def rates(self, start: str, end: str) -> dict[str, Fraction]:
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for _, owner, converted in self.rows[
            bisect.bisect_left(self.days, start) : bisect.bisect_right(self.days, end)
        ]:
            counts[owner][1] += 1
            counts[owner][0] += converted is not None and start <= converted <= end
        return {owner: Fraction(won, n) for owner, (won, n) in counts.items()}


def _attempt(leads: _Leads, rng: np.random.Generator, want_none: bool, direction: str) -> tuple[Any, ...] | None:
    today = draw_day(rng, *_TODAY_RANGE)
    # An unanswerable question may ask about a window before the org's first lead (the B2C org has leads on
    # nearly every day since).
    window = draw_window(rng, today, earliest=_NONE_FIRST_DAY if want_none else _FIRST_DAY)
    if window is None:
        return None
    rates = leads.rates(window.start.isoformat(), window.end.isoformat())
    if want_none:
        return None if rates else (None, today, window, direction)
    if len(rates) < 2:
        return None
    ranked = sorted(rates.items(), key=lambda item: item[1], reverse=direction == "max")
    return (ranked[0][0], today, window, direction) if ranked[0][1] != ranked[1][1] else None


def _draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    leads = facts.once("conversion_rate_comprehension", lambda: _Leads(facts.conn))
    direction = "max" if rng.random() < 0.5 else "min"  # drawn once: a unique lowest rate is the rarer
    found = retry(lambda: _attempt(leads, rng, want_none, direction), _ATTEMPTS)
    if found is None:
        return None
    answer, today, window, direction = found
    if answer is not None:

        def pilot(r: np.random.Generator) -> Any:
            return (_attempt(leads, r, False, "max" if r.random() < 0.5 else "min") or (None,))[0]

        shares = gold_shares(facts, "conversion_rate_comprehension", pilot, 1500)
        if not thin(rng, shares, answer, _CAP):
            return None
    query = pick(rng, _TEMPLATES).format(
        adj=pick(rng, _WORDS[direction]), window=window.phrase, Window=capitalize_first(window.phrase)
    )
    params = {"today": today.isoformat(), **window.params(), "direction": direction}
    return ProDraw(answer, f"{query} {_ANSWER}", f"{today_line(today)}\n{_POLICY}", params)


def _gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    rows = conn.execute(
        """
        SELECT OwnerId,
               SUM(IsConverted = 1 AND substr(ConvertedDate, 1, 10) BETWEEN :start AND :end),
               COUNT(*)
        FROM Lead
        WHERE substr(CreatedDate, 1, 10) BETWEEN :start AND :end
        GROUP BY OwnerId
        """,
        {"start": params["start"], "end": params["end"]},
    ).fetchall()
    if not rows:
        return None
    rates = {owner: Fraction(int(won), int(n)) for owner, won, n in rows}
    extreme = (min if params["direction"] == "min" else max)(rates.values())
    best = sorted(owner for owner, rate in rates.items() if rate == extreme)
    return best[0] if len(best) == 1 else tuple(best)


def _solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    p = question.params
    created_in = soql_datetime_in("CreatedDate", p["start"], p["end"])
    created = calls(
        "issue_soql_query", query=f"SELECT OwnerId, COUNT(Id) n FROM Lead WHERE {created_in} GROUP BY OwnerId"
    )
    if not created:
        return None
    converted = calls(
        "issue_soql_query",
        query=f"SELECT OwnerId, COUNT(Id) n FROM Lead WHERE {created_in} AND IsConverted = true AND "
        + soql_date_in("ConvertedDate", p["start"], p["end"])
        + " GROUP BY OwnerId",
    )
    won = {row["OwnerId"]: int(row["n"]) for row in converted}
    rates = {row["OwnerId"]: won.get(row["OwnerId"], 0) / int(row["n"]) for row in created}
    return (min if p["direction"] == "min" else max)(rates, key=rates.__getitem__)


_GOALS = (
    "Which sales agent stands out on lead conversion?",
    "I want to know whose lead conversion rate stands out.",
    "Find the agent that stands out by the rate at which their leads convert.",
)
_SAID = {
    "max": ("highest conversion rate", "best lead conversion"),
    "min": ("lowest conversion rate", "worst lead conversion"),
}


CATEGORY = Category(
    "conversion_rate_comprehension",
    _draw,
    _gold_sql,
    _solve,
    split=window_and_direction_held_back(_GOALS, _SAID, _ANSWER),
    split_needs=("today", "start", "end", "window", "direction"),
)
