"""top_issue_identification on the B2B and B2C orgs: gold three ways, None windows, spread, competition."""

from __future__ import annotations

from tests.tasks.pro._cats_a import assert_phrasing, assert_spread
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "top_issue_identification"

# Cases per issue for the product in the window, by a join rather than the module's semi-join, dates as dates.
_ISSUES = """
SELECT c.IssueId__c, COUNT(*) FROM "Case" c JOIN OrderItem oi ON oi.Id = c.OrderItemId__c
WHERE oi.Product2Id = :product_id AND c.IssueId__c IS NOT NULL
  AND date(substr(c.CreatedDate, 1, 10)) BETWEEN date(:start) AND date(:end)
GROUP BY c.IssueId__c
"""


def _issues(pro_org: ProOrg, params: dict) -> dict[str, int]:
    return dict(pro_org.conn.execute(_ISSUES, {k: params[k] for k in ("product_id", "start", "end")}).fetchall())


def test_answerable_gold_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=301))


def test_none_gold_three_ways_and_no_case(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 10, want_none=True, seed=302)
    assert all(draw.answer is None for draw in draws)
    check_three_ways(pro_org, NAME, draws)
    for draw in draws:
        assert _issues(pro_org, draw.params) == {}, draw.params
        assert draw.params["product_id"] in draw.query


def test_spread_competition_and_phrasing(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=303)
    assert_spread(draws, min_distinct=4)
    for draw in draws:
        counts = _issues(pro_org, draw.params)
        assert len(counts) >= 2 and sorted(counts.values())[-1] > sorted(counts.values())[-2], draw.params
        assert counts[draw.answer] == max(counts.values())
        assert draw.params["product_id"] in draw.query
    # B2B's 153 cases over 51 products: only a handful of products have two issues in one window.
    assert len({draw.params["product_id"] for draw in draws}) >= (5 if pro_org.kind == "b2b" else 10)
    assert_phrasing(draws)
    assert {"unit" in draw.params["window"] for draw in draws} == {True, False}
    for draw in draws:
        assert draw.required == f"- Today's date: {draw.params['today']}"
        assert draw.params["end"] <= draw.params["today"]
