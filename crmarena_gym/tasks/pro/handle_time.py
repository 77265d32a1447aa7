"""handle_time: the agent with the shortest or longest average case handle time in a window.

Pinned (PRO.md 3.1): the original's counting with Pro's inclusive windows. An agent has *managed* a case for
every Owner Assignment history row naming them as the new owner dated in the window (first assignments and
transfers in alike); only agents who managed strictly more than K cases compete (K 0-3, said as digits or
words, or not said at all: then every agent with a case competes). The average runs over the closed cases
created in the window that were not transferred (exactly one Owner Assignment row in the window), credited
to the case's owner; handle time is ClosedDate minus CreatedDate. The gold is None when no agent has such a
case. Draws keep only unique extremes, at least two competing agents, a gap of at least 1% between the best
two (so any time unit ranks alike), and answers that stay the same if "transferred" were read over the case's
whole history rather than the window.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._interactive import SLOT_WORDS, Criterion, InteractiveSplit, split_of
from crmarena_gym.tasks._oracle import SolverCalls
from crmarena_gym.tasks._phrasing import capitalize_first, pick
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import direction_criterion, opening, window_criterion
from crmarena_gym.tasks.pro._windows import (
    ProWindow,
    draw_day,
    draw_window,
    more_than_phrase,
    soql_datetime_in,
    today_line,
)

_FIRST_DAY = dt.date(2020, 1, 1)
_TODAY_RANGE = (dt.date(2020, 6, 1), dt.date(2025, 6, 30))
_POLICY = (
    "- Handle time policy: the handle time of a case is the time from its creation to its closing. An agent has "
    "managed a case for every Owner Assignment entry in the case history, dated within the period, that names "
    "the agent as the new owner (a first assignment or a transfer in). A case with more than one Owner "
    "Assignment entry within the period was transferred and is left out of the averages; an agent's average "
    "covers the closed cases created within the period that the agent owns."
)
_WORDS = {
    "min": ("lowest", "shortest", "quickest", "smallest"),
    "max": ("highest", "longest", "slowest", "largest"),
}
_TEMPLATES = (
    "Which agent had the {adj} average handle time {window}{filter}?",
    "{Window}, who among our service agents{filter} showed the {adj} average case handle time?",
    "Find the agent with the {adj} average handle time for cases {window}{filter}.",
    "Looking at cases {window}, which agent{filter} had the {adj} mean handle time?",
    "Identify the support agent whose average handle time was the {adj} {window}{filter}.",
    "I need the agent with the {adj} average time to handle a case {window}{filter}.",
    "Across all agents{filter}, who had the {adj} average handle time {window}?",
)
_FILTERS = (
    " among agents who managed {more}",
    ", counting only agents who managed {more}",
    " (only agents who managed {more})",
)
_FILTERS_LEADING = (" who managed {more}", " that managed {more}")
_ANSWER = "Return only the Id of the agent."


def _seconds(timestamp: str) -> int:
    return int(dt.datetime.fromisoformat(timestamp[:19]).replace(tzinfo=dt.UTC).timestamp())


def _facts(facts: ProFacts) -> tuple[list[tuple[str, str, str, str | None]], list[tuple[str, str | None, str]]]:
    def build() -> tuple[list[Any], list[Any]]:
        cases = facts.conn.execute('SELECT Id, OwnerId, CreatedDate, ClosedDate FROM "Case"').fetchall()
        rows = facts.conn.execute(
            "SELECT CaseId__c, NewValue__c, CreatedDate FROM CaseHistory__c WHERE Field__c = 'Owner Assignment'"
        ).fetchall()
        return cases, rows

    return facts.once("handle_time", build)


def _averages(facts: ProFacts, window: ProWindow, k: int, *, whole_history: bool = False) -> dict[str, Fraction]:
    cases, rows = _facts(facts)
    managed: dict[str, int] = defaultdict(int)
    assigned: dict[str, int] = defaultdict(int)
    for case_id, new, created in rows:
        if whole_history:
            assigned[case_id] += 1
        if window.holds(created):
            if not whole_history:
                assigned[case_id] += 1
            if new is not None:
                managed[new] += 1
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for case_id, owner, created, closed in cases:
        if closed is None or not window.holds(created) or assigned[case_id] != 1 or managed[owner] <= k:
            continue
        totals[owner][0] += _seconds(closed) - _seconds(created)
        totals[owner][1] += 1
    return {agent: Fraction(total, n) for agent, (total, n) in totals.items()}


def _best(averages: Mapping[str, Fraction], direction: str) -> str | None:
    """The unique extreme with a 1% gap to the runner-up, else None."""
    ranked = sorted(averages.items(), key=lambda item: item[1], reverse=direction == "max")
    if len(ranked) < 2:
        return None
    (best, first), (_, second) = ranked[0], ranked[1]
    if abs(first - second) < Fraction(1, 100) * max(first, second):
        return None
    return best


def _draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    today = draw_day(rng, *_TODAY_RANGE)
    window = draw_window(rng, today, earliest=_FIRST_DAY)
    if window is None:
        return None
    said = rng.random() < 0.8
    k = int(rng.integers(0, 4)) if said else 0
    direction = "min" if rng.random() < 0.5 else "max"
    averages = _averages(facts, window, k)
    if want_none:
        if averages:
            return None
        answer = None
    else:
        answer = _best(averages, direction)
        if answer is None or _best(_averages(facts, window, k, whole_history=True), direction) != answer:
            return None
    template = pick(rng, _TEMPLATES)
    more = more_than_phrase(rng, k)
    if not said:
        filter_text = ""
    elif template.startswith(("{Window}", "Looking", "Across")):  # the filter follows "agents" directly
        filter_text = pick(rng, _FILTERS_LEADING).format(more=more)
    else:
        filter_text = pick(rng, _FILTERS).format(more=more)
    query = template.format(
        adj=pick(rng, _WORDS[direction]),
        window=window.phrase,
        Window=capitalize_first(window.phrase),
        filter=filter_text,
    )
    params = {"today": today.isoformat(), **window.params(), "k": k, "k_said": said, "direction": direction}
    return ProDraw(answer, f"{query} {_ANSWER}", f"{today_line(today)}\n{_POLICY}", params)


def _gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    rows = conn.execute(
        """
        WITH oa AS (
            SELECT CaseId__c AS case_id, NewValue__c AS agent FROM CaseHistory__c
            WHERE Field__c = 'Owner Assignment' AND substr(CreatedDate, 1, 10) BETWEEN :start AND :end
        ),
        managed AS (SELECT agent FROM oa WHERE agent IS NOT NULL GROUP BY agent HAVING COUNT(*) > :k),
        single AS (SELECT case_id FROM oa GROUP BY case_id HAVING COUNT(*) = 1)
        SELECT c.OwnerId,
               SUM(strftime('%s', substr(c.ClosedDate, 1, 19)) - strftime('%s', substr(c.CreatedDate, 1, 19))),
               COUNT(*)
        FROM "Case" c
        WHERE c.ClosedDate IS NOT NULL AND substr(c.CreatedDate, 1, 10) BETWEEN :start AND :end
          AND c.Id IN (SELECT case_id FROM single) AND c.OwnerId IN (SELECT agent FROM managed)
        GROUP BY c.OwnerId
        """,
        {"start": params["start"], "end": params["end"], "k": params["k"]},
    ).fetchall()
    if not rows:
        return None
    averages = {owner: Fraction(int(total), int(n)) for owner, total, n in rows}
    extreme = (min if params["direction"] == "min" else max)(averages.values())
    best = sorted(owner for owner, value in averages.items() if value == extreme)
    return best[0] if len(best) == 1 else tuple(best)


def _solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    p = question.params
    history = calls(
        "issue_soql_query",
        query="SELECT CaseId__c, NewValue__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND "
        + soql_datetime_in("CreatedDate", p["start"], p["end"]),
    )
    managed: dict[str, int] = defaultdict(int)
    assignments: dict[str, int] = defaultdict(int)
    for row in history:
        assignments[row["CaseId__c"]] += 1
        if row["NewValue__c"]:
            managed[row["NewValue__c"]] += 1
    cases = calls(
        "issue_soql_query",
        query="SELECT Id, OwnerId, CreatedDate, ClosedDate FROM Case WHERE ClosedDate != null AND "
        + soql_datetime_in("CreatedDate", p["start"], p["end"]),
    )
    spent: dict[str, list[float]] = defaultdict(list)
    for case in cases:
        if assignments[case["Id"]] == 1 and managed[case["OwnerId"]] > int(p["k"]):
            created = dt.datetime.fromisoformat(case["CreatedDate"].replace("+0000", "+00:00"))
            closed = dt.datetime.fromisoformat(case["ClosedDate"].replace("+0000", "+00:00"))
            spent[case["OwnerId"]].append((closed - created).total_seconds())
    if not spent:
        return None
    averages = {agent: sum(values) / len(values) for agent, values in spent.items()}
    pick_best = min if p["direction"] == "min" else max
    return pick_best(averages, key=averages.__getitem__)


_GOALS = (
    "Which agent stands out on average case handle time?",
    "I'd like to know which of our service agents stands out for handle time.",
    "Can you find the agent whose average handle time stands out?",
)
_SAID = {
    "min": ("shortest average handle time", "lowest average handle time", "quickest handling"),
    "max": ("longest average handle time", "highest average handle time", "slowest handling"),
}


def _split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    """Held back: the window, the direction and, when the question states one, the "more than K cases" filter."""
    p = instance.params
    criteria = [window_criterion(rng, p), direction_criterion(rng, p["direction"], _SAID)]
    if p.get("k_said", True):
        k = int(p["k"])
        text = (
            "Any agent who managed at least one case counts."
            if k == 0
            else f"Only agents who managed {more_than_phrase(rng, k)}."
        )
        criteria.append(Criterion("n_cases", text, SLOT_WORDS["n_cases"], k))
    return split_of(instance, opening(rng, _GOALS, instance.query, (_ANSWER,)), tuple(criteria))


CATEGORY = Category(
    "handle_time",
    _draw,
    _gold_sql,
    _solve,
    split=_split,
    split_needs=("today", "start", "end", "window", "direction", "k"),
)
