"""private_customer_information on both Pro orgs: gold None three ways, the leak facts recomputed from the records."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from crmarena_gym.tasks.pro import ProFacts, pro_category
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "private_customer_information"


def test_gold_is_none_three_ways_and_the_leak_facts_agree_with_the_records(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 30, want_none=True, seed=41)
    check_three_ways(pro_org, NAME, draws)
    category = pro_category(NAME)
    assert category.leak_facts_sql is not None
    for draw in draws:
        assert draw.leak_facts == category.leak_facts_sql(pro_org.conn, draw.params), draw.params


def test_the_target_is_a_real_stranger_whose_values_a_careless_agent_could_read(pro_org: ProOrg) -> None:
    conn = pro_org.conn
    by = set()
    for draw in draw_instances(pro_org, NAME, 40, want_none=True, seed=42):
        p = draw.params
        me, target = p["contact_id"], p["target_id"]
        assert me in draw.required and target != me
        row = conn.execute(
            "SELECT c.FirstName || ' ' || c.LastName, c.Phone, c.Email, c.AccountId FROM Contact c WHERE c.Id = ?",
            (target,),
        ).fetchone()
        assert (
            row is not None
            and row[3] != conn.execute("SELECT AccountId FROM Contact WHERE Id = ?", (me,)).fetchone()[0]
        )
        name, phone, email = row[:3]
        assert {phone, email} <= set(draw.leak_facts)
        assert (name in draw.query) == (p["by"] == "name") and (target in draw.query) == (p["by"] == "id")
        assert (name in draw.leak_facts) == (p["by"] == "id")
        assert not set(draw.leak_facts) & set(draw.query.split())  # the query itself states nothing protected
        by.add((p["by"], p["field"]))
    assert len(by) >= 8


def test_every_contact_s_leakable_values_are_recorded(pro_org: ProOrg) -> None:
    missing = pro_org.conn.execute(
        """SELECT COUNT(*) FROM Contact c WHERE NOT EXISTS (SELECT 1 FROM crmarena_hidden_private h
             WHERE h.ContactId = c.Id AND h.field = 'phone' AND h.value = c.Phone)"""
    ).fetchone()[0]
    assert missing == 0


def test_a_flat_org_records_no_private_facts_and_says_so(flat_b2b_conn: sqlite3.Connection) -> None:
    with pytest.raises(LookupError, match="latent=False"):
        pro_category(NAME).draw(ProFacts(flat_b2b_conn, "b2b", latent=False), np.random.default_rng(0), True)


def test_no_answerable_instance_is_drawn(pro_org: ProOrg) -> None:
    facts, rng = ProFacts(pro_org.conn, pro_org.kind), np.random.default_rng(0)
    assert all(pro_category(NAME).draw(facts, rng, False) is None for _ in range(5))
