"""handle_time on the B2B and B2C orgs: gold three ways, None windows, spread, competition, phrasing."""

from __future__ import annotations

import re

from tests.tasks.pro._cats_a import assert_phrasing, assert_spread
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "handle_time"

# The agents who compete in a window: managed more than K cases there and own a closed, untransferred case
# created there (written apart from the module).
_COMPETITORS = """
SELECT COUNT(DISTINCT c.OwnerId) FROM "Case" c
WHERE c.ClosedDate IS NOT NULL AND date(substr(c.CreatedDate, 1, 10)) BETWEEN date(:start) AND date(:end)
  AND (SELECT COUNT(*) FROM CaseHistory__c h WHERE h.CaseId__c = c.Id AND h.Field__c = 'Owner Assignment'
       AND date(substr(h.CreatedDate, 1, 10)) BETWEEN date(:start) AND date(:end)) = 1
  AND (SELECT COUNT(*) FROM CaseHistory__c h WHERE h.NewValue__c = c.OwnerId AND h.Field__c = 'Owner Assignment'
       AND date(substr(h.CreatedDate, 1, 10)) BETWEEN date(:start) AND date(:end)) > :k
"""


def _competitors(pro_org: ProOrg, params: dict) -> int:
    return pro_org.conn.execute(_COMPETITORS, {k: params[k] for k in ("start", "end", "k")}).fetchone()[0]


def test_answerable_gold_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=101))


def test_none_gold_three_ways_and_nothing_competes(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 10, want_none=True, seed=102)
    assert all(draw.answer is None for draw in draws)
    check_three_ways(pro_org, NAME, draws)
    for draw in draws:
        assert _competitors(pro_org, draw.params) == 0, draw.params


def test_spread_competition_and_phrasing(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=103)
    assert_spread(draws, min_distinct=15)
    assert all(_competitors(pro_org, draw.params) >= 2 for draw in draws)
    assert_phrasing(draws)
    params = [draw.params for draw in draws]
    assert {p["direction"] for p in params} == {"min", "max"}
    # The sparse B2B org (about 150 cases over 5.5 years, at most 8 per agent) rarely has an agent with more
    # than two cases in one window, so its answerable draws say K = 0 or 1; B2C's say every K.
    assert {p["k"] for p in params if p["k_said"]} >= ({0, 1} if pro_org.kind == "b2b" else {0, 1, 2, 3})
    assert any(not p["k_said"] for p in params)
    assert {"unit" in p["window"] for p in params} == {True, False}
    # The K filter is said as digits and as words.
    assert any(re.search(r"more than [0-3] cases?\b", d.query) for d in draws)
    assert any(re.search(r"more than (zero|one|two|three) cases?\b", d.query) for d in draws)
    assert not any(re.search(r"more than (1|one) cases", d.query) for d in draws)
    for draw in draws:
        assert draw.required.startswith(f"- Today's date: {draw.params['today']}\n")
        assert draw.params["end"] <= draw.params["today"]
