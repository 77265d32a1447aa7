"""monthly_trend_analysis on the B2B and B2C orgs: gold three ways, never None, spread, a strict maximum."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from crmarena_gym.tasks.pro import ProFacts, pro_category
from tests.tasks.pro._cats_a import assert_phrasing, assert_spread
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "monthly_trend_analysis"
_MONTHS = "January February March April May June July August September October November December".split()

# The creation days of the product's cases in the window, by a join (the module's oracle uses a semi-join).
_DAYS = """
SELECT date(substr(c.CreatedDate, 1, 10)) FROM "Case" c JOIN OrderItem oi ON oi.Id = c.OrderItemId__c
WHERE oi.Product2Id = :product_id AND date(substr(c.CreatedDate, 1, 10)) BETWEEN date(:start) AND date(:end)
"""


def _days(pro_org: ProOrg, params: dict) -> list[str]:
    return [d for (d,) in pro_org.conn.execute(_DAYS, {k: params[k] for k in ("product_id", "start", "end")})]


def test_answerable_gold_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=701))


def test_no_unanswerable_instance_is_drawn(pro_org: ProOrg) -> None:
    rng = np.random.default_rng(702)
    facts = ProFacts(pro_org.conn, pro_org.kind)
    assert all(pro_category(NAME).draw(facts, rng, True) is None for _ in range(5))


@pytest.mark.parametrize("seed", [703])
def test_spread_strict_maximum_and_phrasing(pro_org: ProOrg, seed: int) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=seed)
    # B2B's 153 cases over 51 products leave few months where a product has two cases and another month one.
    assert_spread(draws, min_distinct=4 if pro_org.kind == "b2b" else 8)
    for draw in draws:
        days = _days(pro_org, draw.params)
        by_name = Counter(_MONTHS[int(d[5:7]) - 1] for d in days).most_common()
        by_month = Counter(d[:7] for d in days).most_common()
        assert len(by_name) >= 2 and by_name[0][1] > by_name[1][1], draw.params
        assert by_name[0][0] == draw.answer
        assert by_month[0][1] > by_month[1][1] and _MONTHS[int(by_month[0][0][5:7]) - 1] == draw.answer
        assert draw.params["end"] == draw.params["today"] and set(draw.params["window"]) == {"unit", "count"}
        assert draw.params["window"]["unit"] in ("month", "quarter")
        assert draw.params["product_id"] in draw.query
    assert {draw.params["window"]["unit"] for draw in draws} == {"month", "quarter"}
    assert_phrasing(draws)
