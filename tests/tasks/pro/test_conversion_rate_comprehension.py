"""conversion_rate_comprehension on the B2B and B2C orgs: gold three ways, None windows, spread, competition."""

from __future__ import annotations

from fractions import Fraction

from tests.tasks.pro._cats_a import assert_phrasing, assert_spread
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "conversion_rate_comprehension"

# Per owner of a lead created in the window: leads created there, and those converted within it (dates compared
# as dates; a CASE rather than the module's boolean sum).
_COUNTS = """
SELECT OwnerId, COUNT(*),
       SUM(CASE WHEN IsConverted AND date(ConvertedDate) BETWEEN date(:start) AND date(:end) THEN 1 ELSE 0 END)
FROM Lead WHERE date(substr(CreatedDate, 1, 10)) BETWEEN date(:start) AND date(:end)
GROUP BY OwnerId
"""


def _counts(pro_org: ProOrg, params: dict) -> dict[str, tuple[int, int]]:
    rows = pro_org.conn.execute(_COUNTS, {k: params[k] for k in ("start", "end")}).fetchall()
    return {owner: (n, won) for owner, n, won in rows}


def test_answerable_gold_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=1001))


def test_none_gold_three_ways_and_no_lead(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 10, want_none=True, seed=1002)
    assert all(draw.answer is None for draw in draws)
    check_three_ways(pro_org, NAME, draws)
    for draw in draws:
        assert _counts(pro_org, draw.params) == {}, draw.params


def test_spread_competition_minimum_leads_and_phrasing(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=1003)
    assert_spread(draws, min_distinct=15)
    for draw in draws:
        counts = _counts(pro_org, draw.params)
        assert min(n for n, _ in counts.values()) >= 3, draw.params  # every candidate has three leads or more
        rates = {owner: Fraction(won, n) for owner, (n, won) in counts.items()}
        ranked = sorted(rates.values(), reverse=draw.params["direction"] == "max")
        assert len(ranked) >= 2 and ranked[0] != ranked[1], draw.params
        assert rates[draw.answer] == ranked[0]
    assert_phrasing(draws)
    directions = [draw.params["direction"] for draw in draws]
    assert directions.count("min") >= 10 and directions.count("max") >= 10
    assert {"unit" in draw.params["window"] for draw in draws} == {True, False}
    for draw in draws:
        assert draw.required.startswith(f"- Today's date: {draw.params['today']}\n- Lead conversion policy:")
        assert draw.params["end"] <= draw.params["today"]
