"""best_region_identification on the B2B and B2C orgs: gold three ways, None windows, spread, competition."""

from __future__ import annotations

from tests.tasks.pro._cats_a import assert_phrasing, assert_spread
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "best_region_identification"

# Mean days to close per state for closed cases created in the window (julianday, not the module's seconds).
_MEANS = """
SELECT a.ShippingState, AVG(julianday(substr(c.ClosedDate, 1, 19)) - julianday(substr(c.CreatedDate, 1, 19)))
FROM "Case" c, Account a
WHERE a.Id = c.AccountId AND c.ClosedDate IS NOT NULL
  AND date(substr(c.CreatedDate, 1, 10)) BETWEEN date(:start) AND date(:end)
GROUP BY a.ShippingState
"""


def _means(pro_org: ProOrg, params: dict) -> dict[str, float]:
    return dict(pro_org.conn.execute(_MEANS, {k: params[k] for k in ("start", "end")}).fetchall())


def test_answerable_gold_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=401))


def test_none_gold_three_ways_and_no_closed_case(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 10, want_none=True, seed=402)
    assert all(draw.answer is None for draw in draws)
    check_three_ways(pro_org, NAME, draws)
    for draw in draws:
        assert _means(pro_org, draw.params) == {}, draw.params


def test_spread_competition_and_phrasing(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=403)
    assert_spread(draws, min_distinct=10)
    for draw in draws:
        means = _means(pro_org, draw.params)
        ranked = sorted(means.values())
        assert len(ranked) >= 2 and ranked[1] > ranked[0] * 1.009, draw.params
        assert means[draw.answer] == ranked[0]
        assert len(draw.answer) == 2 and draw.answer.isupper()
    assert_phrasing(draws)
    assert {"unit" in draw.params["window"] for draw in draws} == {True, False}
    for draw in draws:
        assert draw.required == f"- Today's date: {draw.params['today']}"
        assert draw.params["end"] <= draw.params["today"]
