"""activity_priority: which Not Started tasks of an opportunity belong to a stage other than its recorded one?

Pinned (PRO.md 3.2): the gold is every Not Started task whose catalog stage differs from the opportunity's
StageName, as a set of Task ids; None when there is none. The context carries the Opportunity Id and the stage
guide; every subject maps to one stage through the closed catalog. Tools: SOQL only.

The draw reads the planted stage of every task (``crmarena_hidden_task``) and keeps opportunities where the
question needs the data: an answerable one has at least two tasks besides the gold (other statuses, or Not
Started tasks of its own stage); a None one has at least one Not Started task (all of its own stage) and a task
of another stage.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

from crmarena_gym.tasks._oracle import OracleError, SolverCalls
from crmarena_gym.tasks._phrasing import pick
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import record_held_back
from crmarena_gym.tasks.pro._sales import read_stage_guide, records, stage_guide
from crmarena_gym.tools._common import soql_string

_FORMAT = (
    "Return only the Ids of those tasks, separated by commas, or None if every Not Started task fits the current stage."
)
_TEMPLATES = (
    "Which of this opportunity's Not Started tasks do not belong to the stage it is in?",
    "Clean up my to-do list for this deal: list the tasks that have not been started and that belong to a "
    "different stage than the opportunity's current one.",
    "Some open activities on this opportunity look like they were left over from, or planned for, another stage. "
    "Find the Not Started ones whose stage differs from the opportunity's stage.",
    "Using the stage guide, flag every task on this opportunity that is still Not Started and does not match its "
    "current stage.",
    "I want to prioritise the work on this opportunity. Which not-yet-started tasks are out of step with the "
    "stage the deal is recorded in?",
    "Go through the opportunity's activities and pick out the Not Started tasks that belong to another stage.",
    "Which pending (Not Started) activities on this deal should be reviewed because their stage is not the "
    "opportunity's stage?",
)


def _planted(facts: ProFacts) -> dict[str, tuple[str, list[tuple[str, str, str]]]]:
    """Opportunity -> (recorded stage, [(task id, status, planted stage)])."""

    def build() -> dict[str, tuple[str, list[tuple[str, str, str]]]]:
        stage = dict(facts.conn.execute("SELECT OpportunityId, recorded_stage FROM crmarena_hidden_opportunity"))
        tasks: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for task, opp, status, planted in facts.conn.execute(
            "SELECT h.TaskId, h.OpportunityId, t.Status, h.stage FROM crmarena_hidden_task h "
            "JOIN Task t ON t.Id = h.TaskId ORDER BY h.TaskId"
        ):
            tasks[opp].append((task, status, planted))
        return {opp: (stage[opp], tasks[opp]) for opp in sorted(stage)}

    return facts.once("apr.planted", build)


def _candidates(facts: ProFacts, want_none: bool) -> list[tuple[str, ProAnswer]]:
    def build() -> list[tuple[str, ProAnswer]]:
        out = []
        for opp, (recorded, tasks) in _planted(facts).items():
            gold = sorted(t for t, status, stage in tasks if status == "Not Started" and stage != recorded)
            others = len(tasks) - len(gold)
            if gold and not want_none and others >= 2:
                out.append((opp, tuple(gold)))
            elif not gold and want_none:
                open_here = any(status == "Not Started" for _t, status, _s in tasks)
                elsewhere = any(stage != recorded for _t, _status, stage in tasks)
                if open_here and elsewhere:
                    out.append((opp, None))
        return out

    return facts.once(f"apr.candidates.{want_none}", build)


def draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    """An opportunity with Not Started tasks of other stages (gold: their ids), or with none (gold None)."""
    pool = _candidates(facts, want_none)
    if not pool:
        what = "no Not Started task off its stage" if want_none else "Not Started tasks off its stage"
        raise ValueError(f"activity_priority: the org has no opportunity with {what} (and other tasks beside)")
    opp, gold = pick(rng, pool)
    required = f"- Opportunity Id to be considered is: {opp}\n{stage_guide(facts)}"
    return ProDraw(gold, f"{pick(rng, _TEMPLATES)} {_FORMAT}", required, {"opportunity_id": opp})


def gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    """The Not Started tasks of the opportunity whose catalog stage is not its StageName."""
    if conn.execute("SELECT 1 FROM Opportunity WHERE Id = ?", (params["opportunity_id"],)).fetchone() is None:
        raise LookupError(f"no opportunity {params['opportunity_id']}")
    ids = [
        task
        for (task,) in conn.execute(
            """
            SELECT t.Id FROM Task t
            JOIN Opportunity o ON o.Id = t.WhatId
            JOIN crmarena_hidden_stage_catalog c ON c.subject = t.Subject
            WHERE o.Id = ? AND t.Status = 'Not Started' AND c.stage <> o.StageName
            ORDER BY t.Id
            """,
            (params["opportunity_id"],),
        )
    ]
    return tuple(ids) or None


def solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    """Read the stage and the Not Started tasks; keep those the guide places in another stage."""
    guide = read_stage_guide(question.required)
    opp = soql_string(question.params["opportunity_id"])
    found = records(calls("issue_soql_query", query=f"SELECT Id, StageName FROM Opportunity WHERE Id = {opp}"))
    if len(found) != 1:
        raise OracleError(f"opportunity {opp} answered {len(found)} records")
    stage = found[0]["StageName"]
    tasks = records(
        calls(
            "issue_soql_query",
            query=f"SELECT Id, Subject FROM Task WHERE WhatId = {opp} AND Status = 'Not Started'",
        )
    )
    off = []
    for task in tasks:
        if task["Subject"] not in guide:
            raise OracleError(f"task {task['Id']}'s subject {task['Subject']!r} is not in the stage guide")
        if guide[task["Subject"]] != stage:
            off.append(task["Id"])
    return tuple(sorted(off)) or None


CATEGORY = Category(
    "activity_priority",
    draw,
    gold_sql,
    solve,
    split=record_held_back("opportunity"),
    split_needs=("opportunity_id",),
)
