"""lead_routing on the B2B and B2C orgs: gold three ways, the planted territory winners, spread, both rules."""

from __future__ import annotations

from collections import Counter

import numpy as np

from crmarena_gym.tasks.pro import ProFacts, pro_category
from tests.tasks.pro._cats_a import assert_spread
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "lead_routing"


def _planted(pro_org: ProOrg) -> dict[str, tuple[str, int]]:
    """State -> (the winner the generator planted for its territory, whether the tie rule decided)."""
    rows = pro_org.conn.execute("SELECT states, winner, tie FROM crmarena_hidden_territory").fetchall()
    return {state.strip(): (winner, tie) for states, winner, tie in rows for state in states.split(",")}


def test_answerable_gold_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=901))


def test_no_unanswerable_instance_is_drawn(pro_org: ProOrg) -> None:
    rng = np.random.default_rng(902)
    facts = ProFacts(pro_org.conn, pro_org.kind)
    assert all(pro_category(NAME).draw(facts, rng, True) is None for _ in range(5))


def test_golds_are_the_planted_winners_spread_and_both_forms(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=903)
    assert_spread(draws, min_distinct=5)
    planted = _planted(pro_org)
    rules = Counter()
    for draw in draws:
        region = draw.params["region"]
        winner, tie = planted[region]
        assert draw.answer == winner, draw.params
        assert draw.params["decided_by_rule"] == (2 if tie else 1)
        rules[draw.params["decided_by_rule"]] += 1
        if "lead_id" in draw.params:
            state = pro_org.conn.execute("SELECT State FROM Lead WHERE Id = ?", (draw.params["lead_id"],)).fetchone()
            assert state == (region,) and draw.params["lead_id"] in draw.query
            assert "Lead's region" not in draw.required
        else:
            assert draw.required.startswith(f"## Lead's region: {region}\n- Lead routing policy:")
    assert rules[1] and rules[2], rules
    forms = Counter("lead_id" in draw.params for draw in draws)
    assert forms[True] >= 6 and forms[False] >= 30, forms
    assert len({draw.query for draw in draws}) >= 8
    assert all(draw.query.endswith("Return only the Id of the agent.") for draw in draws)
