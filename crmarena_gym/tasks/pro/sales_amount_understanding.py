"""sales_amount_understanding: the representative with the largest (or smallest) total sales in a window.

Pinned (PRO.md 3.1): an opportunity is eligible when the Contract named by its ContractID__c has its
CompanySignedDate in the window; its amount is the sum over its OpportunityLineItems of Quantity x UnitPrice
(the line's sales price), credited to Opportunity.OwnerId. The gold is the owner with the unique largest (in a
fifth of the draws, smallest) total, None when no opportunity is eligible. Draws keep at least two owners and
a gap of at least 1% between the best two.
"""

from __future__ import annotations

import bisect
import datetime as dt
import sqlite3
from collections import defaultdict
from collections.abc import Mapping
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
    "- Sales amount policy: the sales amount of an opportunity is the sum, over its products, of the quantity "
    "times the unit sales price. An opportunity counts toward the period in which our company signed the "
    "contract named on it, and toward the agent who owns it; an agent's total is the sum over those "
    "opportunities."
)
_WORDS = {"max": ("highest", "largest", "biggest", "greatest"), "min": ("lowest", "smallest")}
_TEMPLATES = (
    "Which agent had the {adj} total sales {window}?",
    "{Window}, which sales agent brought in the {adj} sales amount?",
    "Find the agent with the {adj} total sales amount {window}.",
    "Looking at contracts signed {window}, whose opportunities add up to the {adj} sales?",
    "Identify the sales representative with the {adj} sales volume in dollars {window}.",
    "Who among our sales agents had the {adj} total sales {window}?",
    "I need the agent whose deals signed {window} total the {adj} amount.",
)
_ANSWER = "Return only the Id of the agent."
_ATTEMPTS = 10
_CAP = 0.1


class _Deals:
    """The signed deals: signing day, owner, amount in cents; by signing day."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT c.CompanySignedDate, o.OwnerId, o.Id FROM Opportunity o JOIN Contract c ON c.Id = o.ContractID__c "
            "WHERE c.CompanySignedDate IS NOT NULL ORDER BY c.CompanySignedDate, o.Id"
        ).fetchall()
        cents: dict[str, int] = defaultdict(int)
        for opp, quantity, price in conn.execute("SELECT OpportunityId, Quantity, UnitPrice FROM OpportunityLineItem"):
            cents[opp] += round(quantity * price * 100)
        self.rows = [(signed, owner, cents[opp]) for signed, owner, opp in rows]
        self.days = [day for day, _, _ in self.rows]

    def totals(self, start: str, end: str) -> dict[str, int]:
        totals: dict[str, int] = defaultdict(int)
        for _, owner, cents in self.rows[bisect.bisect_left(self.days, start) : bisect.bisect_right(self.days, end)]:
            totals[owner] += cents
        return dict(totals)


def _attempt(deals: _Deals, rng: np.random.Generator, want_none: bool) -> tuple[Any, ...] | None:
    today = draw_day(rng, *_TODAY_RANGE)
    window = draw_window(rng, today, earliest=_FIRST_DAY)
    if window is None:
        return None
    direction = "max" if rng.random() < 0.8 else "min"
    totals = deals.totals(window.start.isoformat(), window.end.isoformat())
    if want_none:
        return None if totals else (None, today, window, direction)
    if len(totals) < 2:
        return None
    ranked = sorted(totals.items(), key=lambda item: item[1], reverse=direction == "max")
    gap = abs(ranked[0][1] - ranked[1][1])
    return (ranked[0][0], today, window, direction) if gap * 100 >= max(ranked[0][1], ranked[1][1]) else None


def _draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    deals = facts.once("sales_amount_understanding", lambda: _Deals(facts.conn))
    attempt = partial(_attempt, deals)
    found = balanced_draw(
        facts, "sales_amount_understanding", attempt, rng, want_none, attempts=_ATTEMPTS, cap=_CAP, pilot=1500
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
        SELECT o.OwnerId, SUM(ROUND(li.Quantity * li.UnitPrice * 100))
        FROM Opportunity o
        JOIN Contract k ON k.Id = o.ContractID__c
        LEFT JOIN OpportunityLineItem li ON li.OpportunityId = o.Id
        WHERE k.CompanySignedDate BETWEEN :start AND :end
        GROUP BY o.OwnerId
        """,
        {"start": params["start"], "end": params["end"]},
    ).fetchall()
    if not rows:
        return None
    totals = {owner: int(total or 0) for owner, total in rows}
    extreme = (min if params["direction"] == "min" else max)(totals.values())
    best = sorted(owner for owner, total in totals.items() if total == extreme)
    return best[0] if len(best) == 1 else tuple(best)


def _solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    p = question.params
    signed_in = soql_date_in("CompanySignedDate", p["start"], p["end"])
    opportunities = calls(
        "issue_soql_query",
        query=f"SELECT Id, OwnerId FROM Opportunity WHERE ContractID__c IN (SELECT Id FROM Contract WHERE {signed_in})",
    )
    if not opportunities:
        return None
    owner_of = {opp["Id"]: opp["OwnerId"] for opp in opportunities}
    totals: dict[str, float] = dict.fromkeys(owner_of.values(), 0.0)
    ids = ", ".join(f"'{opp_id}'" for opp_id in owner_of)
    lines = calls(
        "issue_soql_query",
        query=f"SELECT OpportunityId, Quantity, UnitPrice FROM OpportunityLineItem WHERE OpportunityId IN ({ids})",
    )
    for line in lines:
        totals[owner_of[line["OpportunityId"]]] += float(line["Quantity"]) * float(line["UnitPrice"])
    return (min if p["direction"] == "min" else max)(totals, key=totals.__getitem__)


_GOALS = (
    "Which sales agent stands out on total sales?",
    "I want to know which of our sales agents stands out by sales amount.",
    "Find the agent whose total sales stand out.",
)
_SAID = {"max": ("highest total sales", "largest sales amount"), "min": ("lowest total sales", "smallest sales amount")}


CATEGORY = Category(
    "sales_amount_understanding",
    _draw,
    _gold_sql,
    _solve,
    split=window_and_direction_held_back(_GOALS, _SAID, _ANSWER),
    split_needs=("today", "start", "end", "window", "direction"),
)
