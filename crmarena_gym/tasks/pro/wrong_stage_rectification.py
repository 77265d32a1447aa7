"""wrong_stage_rectification: is an opportunity's recorded stage the one its tasks show, and if not, which is?

Pinned (PRO.md 3.2): the correct stage is the most advanced catalog stage among the opportunity's tasks, whatever
their status; the gold is None when it equals StageName. The context carries the Opportunity Id and the stage
guide (the closed catalog of activities per stage), so the tasks' subjects decide. Tools: SOQL only.

The draw picks the gold stage first (uniformly among the stages some wrongly recorded opportunity truly is at),
then an opportunity, so no stage dominates; a None draw picks an opportunity recorded at its true stage.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import numpy as np

from crmarena_gym.tasks._oracle import OracleError, SolverCalls
from crmarena_gym.tasks._phrasing import pick
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import record_held_back
from crmarena_gym.tasks.pro._sales import STAGES, read_stage_guide, records, stage_guide
from crmarena_gym.tools._common import soql_string

_FORMAT = (
    "Return only the name of the stage it should be in (Qualification, Discovery, Quote, Negotiation or Closed), "
    "or None if its current stage is right."
)
_TEMPLATES = (
    "Does this opportunity sit in the right stage given the work logged on it? If not, which stage should it be "
    "moved to?",
    "I suspect the stage on this deal is out of date. Check its activities against the stage guide and tell me "
    "the stage it really belongs in.",
    "Please audit the opportunity's stage: compare the tasks recorded on it with our stage guide and say where it "
    "should stand.",
    "The pipeline report looks off for this opportunity. Going by its tasks, what stage should it have?",
    "Before the forecast call, confirm whether this opportunity's stage matches its activities, and correct it if "
    "it does not.",
    "Our stage guide says which activities belong to each stage. Based on the tasks on this opportunity, is its "
    "recorded stage wrong, and what should it be?",
    "A manager asked me to verify this deal's stage. Which stage do its logged activities point to, if not the "
    "current one?",
    "Work out from the opportunity's task history whether its stage needs fixing, and to what.",
)


def _planted(facts: ProFacts) -> list[tuple[str, str, str]]:
    return facts.once(
        "wsr.planted",
        lambda: facts.conn.execute(
            "SELECT OpportunityId, true_stage, recorded_stage FROM crmarena_hidden_opportunity ORDER BY OpportunityId"
        ).fetchall(),
    )


def draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    """An opportunity recorded at the wrong stage (gold: its true stage), or at the right one (gold None)."""
    planted = _planted(facts)
    if want_none:
        pool = [row for row in planted if row[1] == row[2]]
        if not pool:
            raise ValueError("wrong_stage_rectification: the org has no opportunity recorded at its true stage")
        stage = pick(rng, sorted({row[1] for row in pool}, key=STAGES.index))
        pool = [row for row in pool if row[1] == stage]
    else:
        pool = [row for row in planted if row[1] != row[2]]
        if not pool:
            raise ValueError("wrong_stage_rectification: the org has no opportunity recorded at a wrong stage")
        stage = pick(rng, sorted({row[1] for row in pool}, key=STAGES.index))
        pool = [row for row in pool if row[1] == stage]
    opp, true_stage, _recorded = pick(rng, pool)
    required = f"- Opportunity Id to be considered is: {opp}\n{stage_guide(facts)}"
    query = f"{pick(rng, _TEMPLATES)} {_FORMAT}"
    return ProDraw(None if want_none else true_stage, query, required, {"opportunity_id": opp})


def gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    """The most advanced catalog stage among the opportunity's tasks; None when it is the recorded StageName."""
    row = conn.execute(
        """
        SELECT o.StageName,
               (SELECT c.stage FROM Task t JOIN crmarena_hidden_stage_catalog c ON c.subject = t.Subject
                WHERE t.WhatId = o.Id
                ORDER BY CASE c.stage WHEN 'Qualification' THEN 0 WHEN 'Discovery' THEN 1 WHEN 'Quote' THEN 2
                                      WHEN 'Negotiation' THEN 3 WHEN 'Closed' THEN 4 END DESC
                LIMIT 1)
        FROM Opportunity o WHERE o.Id = ?
        """,
        (params["opportunity_id"],),
    ).fetchone()
    if row is None or row[1] is None:
        raise LookupError(f"opportunity {params['opportunity_id']} is missing or has no catalog task")
    return None if row[1] == row[0] else row[1]


def solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    """Read the stage and the tasks' subjects, place each subject with the guide, compare the most advanced."""
    guide = read_stage_guide(question.required)
    opp = soql_string(question.params["opportunity_id"])
    found = records(calls("issue_soql_query", query=f"SELECT Id, StageName FROM Opportunity WHERE Id = {opp}"))
    if len(found) != 1:
        raise OracleError(f"opportunity {opp} answered {len(found)} records")
    tasks = records(calls("issue_soql_query", query=f"SELECT Id, Subject, Status FROM Task WHERE WhatId = {opp}"))
    stages = set()
    for task in tasks:
        if task["Subject"] not in guide:
            raise OracleError(f"task {task['Id']}'s subject {task['Subject']!r} is not in the stage guide")
        stages.add(guide[task["Subject"]])
    if not stages:
        raise OracleError(f"opportunity {opp} has no task: its stage cannot be checked")
    shown = max(stages, key=STAGES.index)
    return None if shown == found[0]["StageName"] else shown


CATEGORY = Category(
    "wrong_stage_rectification",
    draw,
    gold_sql,
    solve,
    split=record_held_back("opportunity"),
    split_needs=("opportunity_id",),
)
