"""sales_cycle_understanding on the B2B and B2C orgs: gold three ways, None windows, spread, competition."""

from __future__ import annotations

from tests.tasks.pro._cats_a import assert_phrasing, assert_spread
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "sales_cycle_understanding"

# Mean whole days from creation to company signature per owner, deals signed in the window (written apart).
_MEANS = """
SELECT o.OwnerId, AVG(julianday(date(k.CompanySignedDate)) - julianday(date(substr(o.CreatedDate, 1, 10))))
FROM Contract k, Opportunity o
WHERE o.ContractID__c = k.Id AND date(k.CompanySignedDate) BETWEEN date(:start) AND date(:end)
GROUP BY o.OwnerId
"""


def _means(pro_org: ProOrg, params: dict) -> dict[str, float]:
    return dict(pro_org.conn.execute(_MEANS, {k: params[k] for k in ("start", "end")}).fetchall())


def test_answerable_gold_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=501))


def test_none_gold_three_ways_and_nothing_signed(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 10, want_none=True, seed=502)
    assert all(draw.answer is None for draw in draws)
    check_three_ways(pro_org, NAME, draws)
    for draw in draws:
        assert _means(pro_org, draw.params) == {}, draw.params


def test_spread_competition_and_phrasing(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=503)
    assert_spread(draws, min_distinct=12)
    for draw in draws:
        means = _means(pro_org, draw.params)
        ranked = sorted(means.values(), reverse=draw.params["direction"] == "max")
        assert len(ranked) >= 2 and ranked[0] != ranked[1], draw.params
        assert means[draw.answer] == ranked[0]
    assert_phrasing(draws)
    assert {draw.params["direction"] for draw in draws} == {"min", "max"}
    assert {"unit" in draw.params["window"] for draw in draws} == {True, False}
    for draw in draws:
        assert draw.required.startswith(f"- Today's date: {draw.params['today']}\n- Sales cycle policy:")
        assert draw.params["end"] <= draw.params["today"]
