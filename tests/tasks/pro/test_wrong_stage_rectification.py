"""wrong_stage_rectification on both Pro orgs: planted gold, SQL gold and the oracle agree; golds spread."""

from __future__ import annotations

from collections import Counter

import pytest

from crmarena_gym.schema import OPPORTUNITY_STAGES
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "wrong_stage_rectification"


def test_answerable_and_none_draws_agree_three_ways(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 20, want_none=False, seed=11)
    draws += draw_instances(pro_org, NAME, 10, want_none=True, seed=12)
    check_three_ways(pro_org, NAME, draws)


def test_gold_is_a_stage_other_than_the_recorded_one_and_spreads(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=21)
    golds = Counter(d.answer for d in draws)
    assert set(golds) <= set(OPPORTUNITY_STAGES)
    assert len(golds) >= 4, golds
    assert max(golds.values()) <= 0.45 * len(draws), golds
    for d in draws:
        (recorded,) = pro_org.conn.execute(
            "SELECT StageName FROM Opportunity WHERE Id = ?", (d.params["opportunity_id"],)
        ).fetchone()
        assert recorded != d.answer
        (stages,) = pro_org.conn.execute(
            "SELECT COUNT(DISTINCT c.stage) FROM Task t JOIN crmarena_hidden_stage_catalog c ON c.subject = t.Subject "
            "WHERE t.WhatId = ?",
            (d.params["opportunity_id"],),
        ).fetchone()
        assert stages >= 2 or d.answer == "Qualification"  # the most advanced stage is picked among several


def test_none_draws_have_tasks_no_further_than_the_recorded_stage(pro_org: ProOrg) -> None:
    rank = {s: i for i, s in enumerate(OPPORTUNITY_STAGES)}
    for d in draw_instances(pro_org, NAME, 15, want_none=True, seed=31):
        assert d.answer is None
        opp = d.params["opportunity_id"]
        (recorded,) = pro_org.conn.execute("SELECT StageName FROM Opportunity WHERE Id = ?", (opp,)).fetchone()
        stages = {
            s
            for (s,) in pro_org.conn.execute(
                "SELECT c.stage FROM Task t JOIN crmarena_hidden_stage_catalog c ON c.subject = t.Subject "
                "WHERE t.WhatId = ?",
                (opp,),
            )
        }
        assert recorded in stages and all(rank[s] <= rank[recorded] for s in stages)


def test_context_gives_the_id_and_the_whole_guide_and_queries_vary(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 30, want_none=False, seed=41)
    subjects = [s for (s,) in pro_org.conn.execute("SELECT subject FROM crmarena_hidden_stage_catalog")]
    for d in draws:
        assert f"- Opportunity Id to be considered is: {d.params['opportunity_id']}" in d.required
        assert all(s in d.required for s in subjects)
        assert d.query.endswith("or None if its current stage is right.")
    assert len({d.query for d in draws}) >= 6


def test_the_oracle_refuses_a_context_without_the_stage_guide(pro_org: ProOrg) -> None:
    from crmarena_gym.tasks._oracle import OracleError
    from crmarena_gym.tasks.pro import ProQuestion, pro_category, pro_oracle_trace

    (draw,) = draw_instances(pro_org, NAME, 1, want_none=False, seed=51)
    bare = ProQuestion(draw.query, draw.required.splitlines()[0], draw.params, pro_org.kind)
    with pytest.raises(OracleError, match="no stage guide"):
        pro_oracle_trace(pro_category(NAME), bare, pro_org.org)
