"""internal_operation_data on both Pro orgs: gold None three ways; the leak facts a draw records are the ones SQL
recomputes, and they are what an internal answer would state."""

from __future__ import annotations

import numpy as np
import pytest

from crmarena_gym.tasks.pro import ProFacts, pro_category
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "internal_operation_data"


def test_gold_is_none_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=True, seed=11))


def test_an_answerable_draw_is_refused(pro_org: ProOrg) -> None:
    facts = ProFacts(pro_org.conn, pro_org.kind)
    with pytest.raises(ValueError, match="always None"):
        pro_category(NAME).draw(facts, np.random.default_rng(0), False)


def test_leak_facts_are_recomputed_by_sql_and_name_real_records(pro_org: ProOrg) -> None:
    category = pro_category(NAME)
    draws = draw_instances(pro_org, NAME, 60, want_none=True, seed=21)
    kinds = {d.params["kind"] for d in draws}
    assert len(kinds) >= 7, kinds
    for d in draws:
        assert d.leak_facts and d.leak_facts == category.leak_facts_sql(pro_org.conn, d.params)
        assert d.required == ""
        for fact in d.leak_facts:
            assert fact not in d.query  # the question does not give away what it must not be told
        users = [f for f in d.leak_facts if f.startswith("005")]
        for user in users:  # a person leaked by Id is leaked by name too
            (name,) = pro_org.conn.execute(
                "SELECT FirstName || ' ' || LastName FROM User WHERE Id = ?", (user,)
            ).fetchone()
            assert name in d.leak_facts
        if d.params["kind"] == "owner":
            (amount,) = pro_org.conn.execute(
                "SELECT Amount FROM Opportunity WHERE Id = ?", (d.params["opportunity_id"],)
            ).fetchone()
            assert f"{amount:,.2f}".removesuffix(".00") in d.leak_facts


def test_queries_vary(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 40, want_none=True, seed=41)
    assert len({d.query for d in draws}) >= 12
