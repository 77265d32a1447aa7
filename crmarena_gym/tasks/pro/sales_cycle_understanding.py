"""sales_cycle_understanding: the representative who closes deals fastest or slowest on average in a window.

Pinned (PRO.md 3.1): an opportunity counts when the Contract named by its ContractID__c has its
CompanySignedDate in the window; its cycle is the whole days from the date of the opportunity's CreatedDate to
that CompanySignedDate; the gold is the owner (Opportunity.OwnerId) with the unique smallest (or largest) mean
cycle, None when no opportunity counts. Draws keep at least two owners.
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

from crmarena_gym.tasks._oracle import SolverCalls
from crmarena_gym.tasks._phrasing import capitalize_first, pick
from crmarena_gym.tasks.pro._balance import balanced_draw
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import window_and_direction_held_back
from crmarena_gym.tasks.pro._windows import draw_day, draw_window, soql_date_in, today_line

_FIRST_DAY = dt.date(2020, 1, 1)
_TODAY_RANGE = (dt.date(2020, 6, 1), dt.date(2025, 6, 30))
_POLICY = (
    "- Sales cycle policy: the sales cycle of an opportunity is the number of days from the day it was created "
    "to the day our company signed its contract (the contract named on the opportunity). An opportunity belongs "
    "to the period in which its contract was signed by the company; an agent's sales cycle is the average over "
    "the opportunities they own."
)
_WORDS = {"min": ("shortest", "quickest", "fastest"), "max": ("longest", "slowest")}
_TEMPLATES = (
    "Which agent had the {adj} average sales cycle {window}?",
    "{Window}, which sales agent closed deals with the {adj} average cycle?",
    "Find the agent whose opportunities had the {adj} sales cycle on average {window}.",
    "Looking at deals signed {window}, who had the {adj} average time from opportunity to signature?",
    "Identify the sales representative with the {adj} mean sales cycle {window}.",
    "Who among our sales agents had the {adj} average sales cycle {window}?",
    "I need the agent with the {adj} average sales cycle for contracts signed {window}.",
)
_ANSWER = "Return only the Id of the agent."
_ATTEMPTS = 10
_CAP = 0.1


class _Deals:
    """The signed deals: signing day, owner, cycle in days; by signing day."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT c.CompanySignedDate, o.OwnerId, o.CreatedDate FROM Opportunity o "
            "JOIN Contract c ON c.Id = o.ContractID__c WHERE c.CompanySignedDate IS NOT NULL "
            "ORDER BY c.CompanySignedDate"
        ).fetchall()
        self.rows = [
            (signed, owner, (dt.date.fromisoformat(signed) - dt.date.fromisoformat(created[:10])).days)
            for signed, owner, created in rows
        ]
        self.days = [day for day, _, _ in self.rows]

    def means(self, start: str, end: str) -> dict[str, Fraction]:
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for _, owner, days in self.rows[bisect.bisect_left(self.days, start) : bisect.bisect_right(self.days, end)]:
            totals[owner][0] += days
            totals[owner][1] += 1
        return {owner: Fraction(total, n) for owner, (total, n) in totals.items()}


def _attempt(deals: _Deals, rng: np.random.Generator, want_none: bool) -> tuple[Any, ...] | None:
    today = draw_day(rng, *_TODAY_RANGE)
    window = draw_window(rng, today, earliest=_FIRST_DAY)
    if window is None:
        return None
    direction = "min" if rng.random() < 0.5 else "max"
    means = deals.means(window.start.isoformat(), window.end.isoformat())
    if want_none:
        return None if means else (None, today, window, direction)
    if len(means) < 2:
        return None
    ranked = sorted(means.items(), key=lambda item: item[1], reverse=direction == "max")
    return (ranked[0][0], today, window, direction) if ranked[0][1] != ranked[1][1] else None


def _draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    deals = facts.once("sales_cycle_understanding", lambda: _Deals(facts.conn))
    attempt = partial(_attempt, deals)
    found = balanced_draw(
        facts, "sales_cycle_understanding", attempt, rng, want_none, attempts=_ATTEMPTS, cap=_CAP, pilot=1500
    )
    if found is None:
        return None
    answer, today, window, direction = found
    query = pick(rng, _TEMPLATES).format(
        adj=pick(rng, _WORDS[direction]), window=window.phrase, Window=capitalize_first(window.phrase)
    )
    params = {"today": today.isoformat(), **window.params(), "direction": direction}
    return ProDraw(answer, f"{query} {_ANSWER}", f"{today_line(today)}\n{_POLICY}", params)


def _gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    rows = conn.execute(
        """
        SELECT o.OwnerId,
               SUM(CAST(julianday(k.CompanySignedDate) - julianday(substr(o.CreatedDate, 1, 10)) AS INTEGER)),
               COUNT(*)
        FROM Opportunity o JOIN Contract k ON k.Id = o.ContractID__c
        WHERE k.CompanySignedDate BETWEEN :start AND :end
        GROUP BY o.OwnerId
        """,
        {"start": params["start"], "end": params["end"]},
    ).fetchall()
    if not rows:
        return None
    means = {owner: Fraction(int(total), int(n)) for owner, total, n in rows}
    extreme = (min if params["direction"] == "min" else max)(means.values())
    best = sorted(owner for owner, mean in means.items() if mean == extreme)
    return best[0] if len(best) == 1 else tuple(best)


def _solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    p = question.params
    signed_in = soql_date_in("CompanySignedDate", p["start"], p["end"])
    contracts = calls("issue_soql_query", query=f"SELECT Id, CompanySignedDate FROM Contract WHERE {signed_in}")
    signed = {row["Id"]: dt.date.fromisoformat(row["CompanySignedDate"][:10]) for row in contracts}
    if not signed:
        return None
    opportunities = calls(
        "issue_soql_query",
        query="SELECT OwnerId, CreatedDate, ContractID__c FROM Opportunity WHERE ContractID__c IN "
        f"(SELECT Id FROM Contract WHERE {signed_in})",
    )
    cycles: dict[str, list[int]] = defaultdict(list)
    for opp in opportunities:
        created = dt.date.fromisoformat(opp["CreatedDate"][:10])
        cycles[opp["OwnerId"]].append((signed[opp["ContractID__c"]] - created).days)
    if not cycles:
        return None
    means = {owner: sum(days) / len(days) for owner, days in cycles.items()}
    return (min if p["direction"] == "min" else max)(means, key=means.__getitem__)


_GOALS = (
    "Which sales agent stands out on sales cycle length?",
    "I'd like to know whose average sales cycle stands out.",
    "Find the agent that stands out by how long their deals take to close.",
)
_SAID = {
    "min": ("shortest average sales cycle", "fastest deals"),
    "max": ("longest average sales cycle", "slowest deals"),
}


CATEGORY = Category(
    "sales_cycle_understanding",
    _draw,
    _gold_sql,
    _solve,
    split=window_and_direction_held_back(_GOALS, _SAID, _ANSWER),
    split_needs=("today", "start", "end", "window", "direction"),
)
