"""activity_priority on both Pro orgs: planted gold, SQL gold and the oracle agree; the sets are real choices."""

from __future__ import annotations

from collections import Counter

from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "activity_priority"


def _tasks(pro_org: ProOrg, opp: str) -> list[tuple[str, str, str, str]]:
    """(Id, Status, catalog stage, the opportunity's StageName) of every task of ``opp``."""
    return pro_org.conn.execute(
        "SELECT t.Id, t.Status, c.stage, o.StageName FROM Task t JOIN Opportunity o ON o.Id = t.WhatId "
        "JOIN crmarena_hidden_stage_catalog c ON c.subject = t.Subject WHERE o.Id = ?",
        (opp,),
    ).fetchall()


def test_answerable_and_none_draws_agree_three_ways(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 20, want_none=False, seed=11)
    draws += draw_instances(pro_org, NAME, 10, want_none=True, seed=12)
    check_three_ways(pro_org, NAME, draws)


def test_gold_sets_are_distinct_and_leave_other_tasks_out(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=21)
    golds = Counter(d.answer for d in draws)
    assert max(golds.values()) <= 0.45 * len(draws), golds
    assert len(golds) >= 30
    for d in draws:
        tasks = _tasks(pro_org, d.params["opportunity_id"])
        assert isinstance(d.answer, tuple) and list(d.answer) == sorted(d.answer)
        rest = [t for t in tasks if t[0] not in d.answer]
        assert len(rest) >= 2  # the set is chosen among more tasks than it holds
    sizes = Counter(len(d.answer) for d in draws)
    assert len(sizes) >= 2, sizes


def test_none_draws_have_open_tasks_all_of_the_recorded_stage(pro_org: ProOrg) -> None:
    for d in draw_instances(pro_org, NAME, 15, want_none=True, seed=31):
        tasks = _tasks(pro_org, d.params["opportunity_id"])
        open_tasks = [t for t in tasks if t[1] == "Not Started"]
        assert open_tasks and all(t[2] == t[3] for t in open_tasks)
        assert any(t[2] != t[3] for t in tasks)  # another stage is on record: the check is a real one


def test_queries_vary_and_end_with_the_format(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 30, want_none=False, seed=41)
    assert len({d.query for d in draws}) >= 6
    assert all(d.query.endswith("fits the current stage.") for d in draws)
    assert all("- Stage guide" in d.required for d in draws)
