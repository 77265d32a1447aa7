"""sales_amount_understanding on the B2B and B2C orgs: gold three ways, None windows, spread, competition."""

from __future__ import annotations

from tests.tasks.pro._cats_a import assert_phrasing, assert_spread
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "sales_amount_understanding"

# Dollars per owner over the line items of deals whose contract was signed in the window (a correlated
# sub-select per opportunity, dates compared as dates; written apart from the module).
_TOTALS = """
SELECT o.OwnerId,
       SUM((SELECT TOTAL(li.Quantity * li.UnitPrice) FROM OpportunityLineItem li WHERE li.OpportunityId = o.Id))
FROM Opportunity o
WHERE o.ContractID__c IN (SELECT Id FROM Contract WHERE date(CompanySignedDate) BETWEEN date(:start) AND date(:end))
GROUP BY o.OwnerId
"""


def _totals(pro_org: ProOrg, params: dict) -> dict[str, float]:
    return dict(pro_org.conn.execute(_TOTALS, {k: params[k] for k in ("start", "end")}).fetchall())


def test_answerable_gold_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=601))


def test_none_gold_three_ways_and_nothing_signed(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 10, want_none=True, seed=602)
    assert all(draw.answer is None for draw in draws)
    check_three_ways(pro_org, NAME, draws)
    for draw in draws:
        assert _totals(pro_org, draw.params) == {}, draw.params


def test_spread_competition_and_phrasing(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=603)
    assert_spread(draws, min_distinct=12)
    for draw in draws:
        totals = _totals(pro_org, draw.params)
        ranked = sorted(totals.values(), reverse=draw.params["direction"] == "max")
        assert len(ranked) >= 2 and abs(ranked[0] - ranked[1]) >= 0.0099 * max(ranked[:2]), draw.params
        assert totals[draw.answer] == ranked[0]
    assert_phrasing(draws)
    directions = [draw.params["direction"] for draw in draws]
    assert 0.05 <= directions.count("min") / len(draws) <= 0.4  # mostly the largest, as Pro asks
    assert {"unit" in draw.params["window"] for draw in draws} == {True, False}
    for draw in draws:
        assert draw.required.startswith(f"- Today's date: {draw.params['today']}\n- Sales amount policy:")
        assert draw.params["end"] <= draw.params["today"]
