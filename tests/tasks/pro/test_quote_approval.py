"""quote_approval on both Pro orgs: planted gold, SQL gold and the oracle agree; the gold spreads over articles."""

from __future__ import annotations

from collections import Counter

from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "quote_approval"


def test_answerable_and_none_draws_agree_three_ways(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 20, want_none=False, seed=11)
    draws += draw_instances(pro_org, NAME, 10, want_none=True, seed=12)
    check_three_ways(pro_org, NAME, draws)


def test_gold_spreads_over_the_approval_articles(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=21)
    golds = Counter(d.answer for d in draws)
    approval = {a for (a,) in pro_org.conn.execute("SELECT Id FROM Knowledge__kav WHERE Title LIKE '%Discount%'")}
    assert set(golds) <= approval and len(golds) == 3, golds
    assert max(golds.values()) <= 0.45 * len(draws), golds


def test_none_draws_give_discounts_within_every_line_cap(pro_org: ProOrg) -> None:
    for d in draw_instances(pro_org, NAME, 15, want_none=True, seed=31):
        lines = pro_org.conn.execute(
            "SELECT l.Discount, p.Family FROM QuoteLineItem l JOIN Product2 p ON p.Id = l.Product2Id "
            "WHERE l.QuoteId = ?",
            (d.params["quote_id"],),
        ).fetchall()
        assert any(discount > 0 for discount, _family in lines)  # there is a discount to check


def test_queries_vary_and_context_names_the_quote(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 30, want_none=False, seed=41)
    assert len({d.query for d in draws}) >= 6
    for d in draws:
        assert f"- Quote Id to be considered is: {d.params['quote_id']}" in d.required
        assert d.query.endswith("or None if it breaks none.")
