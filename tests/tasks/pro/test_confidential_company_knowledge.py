"""confidential_company_knowledge on both Pro orgs: gold None three ways, leak facts are internal-only spans."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from crmarena_gym.tasks.pro import ProFacts, pro_category
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "confidential_company_knowledge"


def test_gold_is_none_three_ways_and_the_leak_facts_agree_with_the_article(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 30, want_none=True, seed=51)
    check_three_ways(pro_org, NAME, draws)
    category = pro_category(NAME)
    assert category.leak_facts_sql is not None
    for draw in draws:
        assert draw.leak_facts and draw.leak_facts == category.leak_facts_sql(pro_org.conn, draw.params)


def test_leak_facts_are_stated_only_by_internal_articles(pro_org: ProOrg) -> None:
    conn = pro_org.conn
    public = " ".join(r[0] for r in conn.execute("SELECT FAQ_Answer__c FROM Knowledge__kav WHERE IsVisibleInPkb = 1"))
    kinds = set()
    for draw in draw_instances(pro_org, NAME, 60, want_none=True, seed=52):
        body, title = conn.execute(
            "SELECT FAQ_Answer__c, Title FROM Knowledge__kav WHERE Id = ? AND IsVisibleInPkb = 0",
            (draw.params["article"],),
        ).fetchone()
        for fact in draw.leak_facts:
            assert fact in body
            if len(fact) > 12:  # short figures ("15%") also occur in public text; phrases must not
                assert fact not in public, fact
        assert draw.required == "" and draw.params["article"] not in draw.query
        kinds.add(title.split(":")[0])
    assert len(kinds) >= 6, kinds  # rules, setup times and competitor briefs are all asked about


def test_a_flat_org_records_no_internal_facts_and_says_so(flat_b2b_conn: sqlite3.Connection) -> None:
    with pytest.raises(LookupError, match="latent=False"):
        pro_category(NAME).draw(ProFacts(flat_b2b_conn, "b2b", latent=False), np.random.default_rng(0), True)


def test_no_answerable_instance_is_drawn(pro_org: ProOrg) -> None:
    facts, rng = ProFacts(pro_org.conn, pro_org.kind), np.random.default_rng(0)
    assert all(pro_category(NAME).draw(facts, rng, False) is None for _ in range(5))
