"""transfer_count: the agent with the fewest or most case transfers in a window.

Pinned (PRO.md 3.1): a transfer is an Owner Assignment history row dated in the window with a previous owner
(OldValue__c), credited to that previous owner; an agent has *managed* a case for every Owner Assignment row
in the window naming them as the new owner. The candidates are the agents who managed strictly more than K
cases (K 0-3, digits or words) and made at least one transfer in the window. The gold is None when there is
no candidate; draws keep only unique extremes among at least two candidates.
"""

from __future__ import annotations

import bisect
import datetime as dt
import sqlite3
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._interactive import SLOT_WORDS, Criterion, InteractiveSplit, split_of
from crmarena_gym.tasks._oracle import SolverCalls
from crmarena_gym.tasks._phrasing import capitalize_first, pick
from crmarena_gym.tasks.pro._balance import gold_shares, retry, thin
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import direction_criterion, opening, window_criterion
from crmarena_gym.tasks.pro._windows import (
    ProWindow,
    draw_day,
    draw_window,
    more_than_phrase,
    named_window_holding,
    soql_datetime_in,
    today_line,
)

_FIRST_DAY = dt.date(2020, 1, 1)
_TODAY_RANGE = (dt.date(2020, 6, 1), dt.date(2025, 6, 30))
_POLICY = (
    "- Transfer policy: when a case moves from agent A to agent B, the transfer counts for A. A transfer is an "
    "Owner Assignment entry in the case history, dated within the period, that has a previous owner. An agent "
    "has managed a case for every Owner Assignment entry within the period that names the agent as the new "
    "owner (first assignments and transfers in both count). Only agents with at least one transfer in the "
    "period are compared."
)
_WORDS = {
    "min": ("fewest", "lowest number of", "smallest number of", "least"),
    "max": ("most", "highest number of", "largest number of", "greatest number of"),
}
_TEMPLATES = (
    "Which agent had the {adj} case transfers {window} among agents who managed {more}?",
    "{Window}, which of the agents who managed {more} made the {adj} transfers?",
    "Among agents that managed {more} {window}, who transferred the {adj} cases?",
    "Find the agent with the {adj} transfers {window}, considering only agents who managed {more}.",
    "Looking at case transfers {window}, which agent who managed {more} has the {adj} of them?",
    "Identify the agent, among those who handled {more} {window}, responsible for the {adj} transfers.",
    "Who made the {adj} case transfers {window}? Consider only agents that managed {more}.",
)
_ANSWER = "Return only the Id of the agent."
_ATTEMPTS = 20  # window attempts per draw (cheap; most windows of a small org hold too few transfers)
_CAP = 0.15  # golds the pilot sees more often than this are thinned to it


class _History:
    """The Owner Assignment rows by day, for slicing windows quickly."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT substr(CreatedDate, 1, 10), OldValue__c, NewValue__c FROM CaseHistory__c "
            "WHERE Field__c = 'Owner Assignment' ORDER BY CreatedDate"
        ).fetchall()
        self.days = [day for day, _, _ in rows]
        self.rows = rows
        self.transfer_days = [dt.date.fromisoformat(day) for day, old, _ in rows if old is not None]

    def counts(self, window: ProWindow, k: int) -> dict[str, int]:
        managed: Counter[str] = Counter()
        transfers: Counter[str] = Counter()
        lo = bisect.bisect_left(self.days, window.start.isoformat())
        hi = bisect.bisect_right(self.days, window.end.isoformat())
        for _, old, new in self.rows[lo:hi]:
            if new is not None:
                managed[new] += 1
            if old is not None:
                transfers[old] += 1
        return {agent: n for agent, n in transfers.items() if managed[agent] > k}


def _attempt(history: _History, rng: np.random.Generator, want_none: bool) -> tuple[Any, ...] | None:
    if want_none or not history.transfer_days:
        today = draw_day(rng, *_TODAY_RANGE)
        window = draw_window(rng, today, earliest=_FIRST_DAY)
    else:  # transfers are rare: ask about a window holding one, so that it is likely to hold a few
        day = history.transfer_days[int(rng.integers(len(history.transfer_days)))]
        if rng.random() < 0.5:
            today = day + dt.timedelta(days=int(rng.integers(0, 60)))
            window = draw_window(rng, today, earliest=_FIRST_DAY, named=())
        else:
            window = named_window_holding(rng, day)
            today = window.end + dt.timedelta(days=int(rng.integers(0, 120)))
        if not _TODAY_RANGE[0] <= today <= _TODAY_RANGE[1]:
            return None
    if window is None or window.start < _FIRST_DAY:
        return None
    k = int(rng.integers(0, 4))
    direction = "min" if rng.random() < 0.5 else "max"
    counts = history.counts(window, k)
    if want_none:
        return None if counts else (None, today, window, k, direction)
    if len(counts) < 2:
        return None
    extreme = (min if direction == "min" else max)(counts.values())
    best = [agent for agent, n in counts.items() if n == extreme]
    return (best[0], today, window, k, direction) if len(best) == 1 else None


def _draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    history = facts.once("transfer_count", lambda: _History(facts.conn))
    found = retry(lambda: _attempt(history, rng, want_none), _ATTEMPTS)
    if found is None:
        return None
    answer, today, window, k, direction = found
    if answer is not None:
        shares = gold_shares(facts, "transfer_count", lambda r: (_attempt(history, r, False) or (None,))[0], 3000)
        if not thin(rng, shares, answer, _CAP):
            return None
    query = pick(rng, _TEMPLATES).format(
        adj=pick(rng, _WORDS[direction]),
        window=window.phrase,
        Window=capitalize_first(window.phrase),
        more=more_than_phrase(rng, k),
    )
    params = {"today": today.isoformat(), **window.params(), "k": k, "direction": direction}
    return ProDraw(answer, f"{query} {_ANSWER}", f"{today_line(today)}\n{_POLICY}", params)


def _gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    rows = conn.execute(
        """
        WITH oa AS (
            SELECT OldValue__c AS old, NewValue__c AS new FROM CaseHistory__c
            WHERE Field__c = 'Owner Assignment' AND substr(CreatedDate, 1, 10) BETWEEN :start AND :end
        )
        SELECT old, COUNT(*) FROM oa
        WHERE old IS NOT NULL AND old IN (SELECT new FROM oa WHERE new IS NOT NULL GROUP BY new HAVING COUNT(*) > :k)
        GROUP BY old
        """,
        {"start": params["start"], "end": params["end"], "k": params["k"]},
    ).fetchall()
    if not rows:
        return None
    extreme = (min if params["direction"] == "min" else max)(n for _, n in rows)
    best = sorted(agent for agent, n in rows if n == extreme)
    return best[0] if len(best) == 1 else tuple(best)


def _solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    p = question.params
    window = soql_datetime_in("CreatedDate", p["start"], p["end"])
    managed = calls(
        "issue_soql_query",
        query="SELECT NewValue__c, COUNT(Id) n FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' "
        f"AND NewValue__c != null AND {window} GROUP BY NewValue__c",
    )
    qualified = {row["NewValue__c"] for row in managed if int(row["n"]) > int(p["k"])}
    transfers = calls(
        "issue_soql_query",
        query="SELECT OldValue__c, COUNT(Id) n FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' "
        f"AND OldValue__c != null AND {window} GROUP BY OldValue__c",
    )
    counts = {row["OldValue__c"]: int(row["n"]) for row in transfers if row["OldValue__c"] in qualified}
    if not counts:
        return None
    return (min if p["direction"] == "min" else max)(counts, key=counts.__getitem__)


_GOALS = (
    "Which agent stands out on case transfers?",
    "I'd like to know which agent stands out for transferring cases.",
    "Find me the agent that stands out on transfers.",
)
_SAID = {
    "min": ("fewest transfers", "lowest number of transfers"),
    "max": ("most transfers", "highest number of transfers"),
}


def _split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    """Held back: the window, the direction and the "more than K cases" filter."""
    p = instance.params
    k = int(p["k"])
    text = (
        "Any agent who managed at least one case counts."
        if k == 0
        else f"Only agents who managed {more_than_phrase(rng, k)}."
    )
    criteria = (
        window_criterion(rng, p),
        direction_criterion(rng, p["direction"], _SAID),
        Criterion("n_cases", text, SLOT_WORDS["n_cases"], k),
    )
    return split_of(instance, opening(rng, _GOALS, instance.query, (_ANSWER,)), criteria)


CATEGORY = Category(
    "transfer_count",
    _draw,
    _gold_sql,
    _solve,
    split=_split,
    split_needs=("today", "start", "end", "window", "direction", "k"),
)
