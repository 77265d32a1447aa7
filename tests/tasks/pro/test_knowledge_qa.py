"""knowledge_qa on both Pro orgs: gold three ways, extractive short answers from public articles, spread, wording."""

from __future__ import annotations

import sqlite3
from collections import Counter

import numpy as np
import pytest

from crmarena_gym.tasks.pro import ProFacts, pro_category
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "knowledge_qa"


def test_gold_by_sql_and_by_the_oracle_equal_the_planted_fact(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 24, want_none=False, seed=11)
    check_three_ways(pro_org, NAME, draws)


def test_answers_are_short_spans_of_one_public_article_about_the_subject(pro_org: ProOrg) -> None:
    for draw in draw_instances(pro_org, NAME, 60, want_none=False, seed=12):
        assert isinstance(draw.answer, str) and 1 <= len(draw.answer.split()) <= 15, draw.answer
        title, body, public = pro_org.conn.execute(
            "SELECT Title, FAQ_Answer__c, IsVisibleInPkb FROM Knowledge__kav WHERE Id = ?", (draw.params["article"],)
        ).fetchone()
        assert public == 1 and f"{draw.params['label']}: {draw.answer}." in body
        assert draw.params["subject"] in title and draw.params["subject"] in draw.query
        assert draw.params["article"] not in draw.query + draw.required  # the agent must find the article


def test_golds_spread_and_wordings_vary(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 80, want_none=False, seed=13)
    golds = Counter(d.answer for d in draws)
    assert golds.most_common(1)[0][1] <= 0.45 * len(draws) and len(golds) >= 40, golds.most_common(3)
    openings = {" ".join(d.query.split()[:3]) for d in draws}
    assert len(openings) >= 6, openings
    assert all(d.query.rstrip().endswith((".", "?")) for d in draws)


def test_no_none_golds_are_drawn(pro_org: ProOrg) -> None:
    facts = ProFacts(pro_org.conn, pro_org.kind)
    rng = np.random.default_rng(0)
    assert all(pro_category(NAME).draw(facts, rng, True) is None for _ in range(5))


def test_the_article_bank_has_pro_s_mix_and_size(pro_org: ProOrg) -> None:
    kinds = dict(pro_org.conn.execute("SELECT kind, COUNT(*) FROM crmarena_hidden_article GROUP BY kind").fetchall())
    assert {"product", "product_specs", "product_support", "issue", "policy", "competitor"} <= set(kinds)
    total = pro_org.conn.execute("SELECT COUNT(*) FROM Knowledge__kav").fetchone()[0]
    if pro_org.kind == "b2b":
        assert total == 194  # PRO.md 4.1's B2B figure
    internal = pro_org.conn.execute("SELECT COUNT(*) FROM Knowledge__kav WHERE IsVisibleInPkb = 0").fetchone()[0]
    assert internal == kinds["competitor"] + kinds["approval_rule"] + kinds["config_rule"] + kinds["setup_times"]


def test_a_flat_org_has_no_article_bank_and_says_so(flat_b2b_conn: sqlite3.Connection) -> None:
    facts = ProFacts(flat_b2b_conn, "b2b", latent=False)
    with pytest.raises(LookupError, match="latent=False"):
        pro_category(NAME).draw(facts, np.random.default_rng(0), False)
    kinds = {r[0] for r in flat_b2b_conn.execute("SELECT DISTINCT kind FROM crmarena_hidden_article")}
    assert not kinds & {"product_specs", "product_support", "policy", "competitor"}
