"""invalid_config on both Pro orgs: planted gold, SQL gold and the oracle agree; the gold spreads over articles."""

from __future__ import annotations

import json
from collections import Counter

from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "invalid_config"


def test_answerable_and_none_draws_agree_three_ways(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 20, want_none=False, seed=11)
    draws += draw_instances(pro_org, NAME, 10, want_none=True, seed=12)
    check_three_ways(pro_org, NAME, draws)


def test_gold_spreads_over_the_configuration_articles(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=21)
    golds = Counter(d.answer for d in draws)
    titles = dict(pro_org.conn.execute("SELECT Id, Title FROM Knowledge__kav"))
    assert {titles[a] for a in golds} == {
        "Order Quantity Limits",
        "Product Exclusion Rules",
        "Mandatory Product Bundles",
    }
    assert max(golds.values()) <= 0.45 * len(draws), golds


def test_none_draws_carry_a_product_some_rule_names(pro_org: ProOrg) -> None:
    named: set[str] = set()
    for rule, parameters in pro_org.conn.execute("SELECT rule, parameters FROM crmarena_hidden_rule"):
        value = json.loads(parameters)
        if rule == "exclusions":
            named |= {p for pair in value for p in pair}
        elif rule in ("quantity_limits", "bundles"):
            named |= set(value)
    for d in draw_instances(pro_org, NAME, 15, want_none=True, seed=31):
        products = {p for (p,) in pro_org.conn.execute(
            "SELECT Product2Id FROM QuoteLineItem WHERE QuoteId = ?", (d.params["quote_id"],)
        )}  # fmt: skip
        assert products & named


def test_queries_vary_and_context_names_the_quote(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 30, want_none=False, seed=41)
    assert len({d.query for d in draws}) >= 6
    for d in draws:
        assert f"- Quote Id to be considered is: {d.params['quote_id']}" in d.required
        assert d.query.endswith("or None if it breaks none.")
