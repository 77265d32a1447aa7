"""sales_insight_mining on both Pro orgs: planted gold, SQL gold and the oracle agree; labels spread; every
comparison has a runner-up (counted by SQL)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from crmarena_gym.tasks.pro import ProFacts, pro_category
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "sales_insight_mining"


def test_draws_agree_three_ways(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 40, want_none=False, seed=11)
    assert sum("opportunity_id" in d.params for d in draws) >= 10
    assert sum("today" in d.params for d in draws) >= 10
    check_three_ways(pro_org, NAME, draws)


def test_none_is_never_asked_of_it(pro_org: ProOrg) -> None:
    facts = ProFacts(pro_org.conn, pro_org.kind)
    with pytest.raises(ValueError, match="no None golds"):
        pro_category(NAME).draw(facts, np.random.default_rng(0), True)


def test_golds_spread_and_global_leaders_have_a_runner_up(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 120, want_none=False, seed=21)
    golds = Counter(d.answer for d in draws)
    assert max(golds.values()) <= 0.45 * len(draws), golds
    singles = [d for d in draws if "today" in d.params]
    leaders = Counter(d.answer for d in singles)
    assert len(leaders) >= 6 and max(leaders.values()) <= 0.45 * len(singles), leaders
    condition = {
        "mentioned": "kind = 'competitor'",
        "ahead": "relation = 'disadvantage'",
        "behind": "relation = 'advantage'",
        "offer": "offer = 1",
        "positive": "sentiment = 'positive'",
        "negative": "sentiment = 'negative'",
    }
    for d in singles:
        where = condition[d.params["kind"]]
        counts = [n for (n,) in pro_org.conn.execute(
            "SELECT COUNT(DISTINCT h.CallId) AS n FROM crmarena_hidden_call_insight h JOIN VoiceCallTranscript__c v "
            f"ON v.Id = h.CallId WHERE date(substr(v.CreatedDate, 1, 10)) BETWEEN ? AND ? AND {where} "
            "GROUP BY h.label ORDER BY n DESC",
            (d.params["start"], d.params["end"]),
        )]  # fmt: skip
        assert len(counts) >= 2 and counts[0] > counts[1] >= 1, (d.params, counts)
        assert f"- Today's date: {d.params['today']}" in d.required
        assert f"past {d.params['window']['n']} " in d.query


def test_queries_vary(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 40, want_none=False, seed=41)
    assert len({d.query for d in draws}) >= 15
    assert all(d.query.endswith((".", "commas.")) and "Return only" in d.query for d in draws)


def test_draws_are_determined_by_the_seed(pro_org: ProOrg) -> None:
    first = draw_instances(pro_org, NAME, 15, want_none=False, seed=61)
    again = draw_instances(pro_org, NAME, 15, want_none=False, seed=61)
    other = draw_instances(pro_org, NAME, 15, want_none=False, seed=62)
    assert first == again and first != other
