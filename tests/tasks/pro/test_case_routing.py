"""case_routing on the B2B and B2C orgs: gold three ways, never None, spread, and every rule deciding some draws."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from crmarena_gym.tasks.pro import ProFacts, pro_category
from tests.tasks.pro._cats_a import assert_phrasing, assert_spread
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "case_routing"


def _keys(pro_org: ProOrg, issue: str, product: str) -> dict[str, tuple[int, int, int]]:
    """Per case owner (in Python over plain rows): closed of the issue, closed of the product, not closed."""
    keys: dict[str, list[int]] = {}
    for owner, status, case_issue, case_product in pro_org.conn.execute(
        'SELECT c.OwnerId, c.Status, c.IssueId__c, oi.Product2Id FROM "Case" c '
        "LEFT JOIN OrderItem oi ON oi.Id = c.OrderItemId__c"
    ):
        key = keys.setdefault(owner, [0, 0, 0])
        closed = status == "Closed"
        key[0] += closed and case_issue == issue
        key[1] += closed and case_product == product
        key[2] += not closed
    return {owner: tuple(key) for owner, key in keys.items()}


def test_answerable_gold_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=801))


def test_no_unanswerable_instance_is_drawn(pro_org: ProOrg) -> None:
    rng = np.random.default_rng(802)
    facts = ProFacts(pro_org.conn, pro_org.kind)
    assert all(pro_category(NAME).draw(facts, rng, True) is None for _ in range(5))


def test_spread_rules_and_text(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=803)
    assert_spread(draws, min_distinct=10)
    decided = Counter()
    issues = dict(pro_org.conn.execute("SELECT Id, Description__c FROM Issue__c").fetchall())
    products = dict(pro_org.conn.execute("SELECT Id, Name FROM Product2").fetchall())
    for draw in draws:
        issue, product = draw.params["issue_id"], draw.params["product_id"]
        keys = _keys(pro_org, issue, product)
        # The winner by the three rules, and the first rule at which it stands alone.
        ranked = sorted(keys.items(), key=lambda item: (-item[1][0], -item[1][1], item[1][2]))
        assert ranked[0][0] == draw.answer and ranked[0][1] != ranked[1][1], draw.params
        best = ranked[0][1]
        assert best[0] >= 1  # someone has closed a case of the issue: the question needs the data
        rule = next(r for r in (1, 2, 3) if [k[:r] for k in keys.values()].count(best[:r]) == 1)
        assert rule == draw.params["decided_by_rule"]
        decided[rule] += 1
        # The text names the issue (its description) and the product, and no other.
        assert issues[issue] in draw.query and products[product] in draw.query
        assert [i for i, d in issues.items() if d in draw.query] == [issue]
        assert "routing policy" in draw.required
    # The org decides each (issue, product) pair of its cases by one rule; the draws show every rule the org has.
    in_org = Counter()
    pairs = pro_org.conn.execute(
        'SELECT DISTINCT c.IssueId__c, oi.Product2Id FROM "Case" c JOIN OrderItem oi ON oi.Id = c.OrderItemId__c'
    ).fetchall()
    for issue, product in pairs:
        keys = list(_keys(pro_org, issue, product).values())
        best = max(keys, key=lambda k: (k[0], k[1], -k[2]))
        if best[0] >= 1 and keys.count(best) == 1:
            in_org[next(r for r in (1, 2, 3) if [k[:r] for k in keys].count(best[:r]) == 1)] += 1
    assert decided[1] >= 0.5 * len(draws), decided
    assert {rule for rule in (2, 3) if decided[rule]} == {rule for rule in (2, 3) if in_org[rule]}, (decided, in_org)
    if not (in_org[2] and in_org[3]):
        missing = [rule for rule in (2, 3) if not in_org[rule]]
        pytest.xfail(
            f"the {pro_org.kind} org has no (issue, product) pair that rule {missing} decides: the generator plants "
            f"no ties for case routing (pairs per deciding rule: {dict(in_org)})"
        )
    assert_phrasing(draws, min_openings=4)
