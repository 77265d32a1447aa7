"""policy_violation_identification on both Pro orgs: gold three ways, violations read from the transcripts."""

from __future__ import annotations

import sqlite3
from collections import Counter

import numpy as np
import pytest

from crmarena_gym.tasks.pro import ProFacts, pro_category
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "policy_violation_identification"


def test_gold_by_sql_and_by_the_oracle_equal_the_planted_label(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=21))
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 10, want_none=True, seed=22))


def _offer_text(conn: sqlite3.Connection, case: str) -> str:
    """Everything the case's owner wrote: the owner's emails on the case and the owner's chat lines."""
    owner, email = conn.execute(
        """SELECT u.FirstName || ' ' || u.LastName, u.Email
           FROM "Case" c JOIN User u ON u.Id = c.OwnerId WHERE c.Id = ?""",
        (case,),
    ).fetchone()
    mails = [r[0] for r in conn.execute("SELECT TextBody FROM EmailMessage WHERE ParentId = ? AND FromAddress = ?",
                                        (case, email))]  # fmt: skip
    lines = [
        line.split("] ", 1)[1][len(owner) + 2 :]
        for (body,) in conn.execute("SELECT Body FROM LiveChatTranscript WHERE CaseId = ?", (case,))
        for line in body.splitlines()
        if line.split("] ", 1)[1].startswith(owner + ": ")
    ]
    return " ".join(mails + lines)


def test_every_drawn_case_has_an_offer_and_the_gold_follows_the_article_s_list(pro_org: ProOrg) -> None:
    conn = pro_org.conn
    vocabulary = [r[0] for r in conn.execute("SELECT DISTINCT remedy FROM crmarena_hidden_remedy")]
    for want_none in (False, True):
        for draw in draw_instances(pro_org, NAME, 15, want_none=want_none, seed=23):
            case = draw.params["case_id"]
            said = _offer_text(conn, case)
            offered = [r for r in vocabulary if r in said]
            assert len(offered) == 1, (case, offered)  # the agent offered exactly one remedy
            article, body = conn.execute(
                """SELECT k.Id, k.FAQ_Answer__c FROM "Case" c JOIN Issue__c i ON i.Id = c.IssueId__c
                   JOIN Knowledge__kav k ON k.Title = 'Resolving: ' || i.Name WHERE c.Id = ?""",
                (case,),
            ).fetchone()
            allowed_list = body.split("Remedies agents may offer: ")[1].split(". Agents may not")[0].split("; ")
            assert (draw.answer is None) == (offered[0] in allowed_list)
            assert draw.answer in (None, article)
            assert case in draw.required and "Case Id" in draw.required


def test_golds_spread_over_many_articles_and_wordings_vary(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=24)
    golds = Counter(d.answer for d in draws)
    assert golds.most_common(1)[0][1] <= 0.45 * len(draws) and len(golds) >= 6, golds
    assert len({d.query for d in draws}) >= 8


def test_the_planted_violation_share_is_the_knob_s(pro_org: ProOrg) -> None:
    cases, violations = pro_org.conn.execute(
        "SELECT COUNT(*), SUM(1 - allowed) FROM crmarena_hidden_case_remedy"
    ).fetchone()
    assert cases == pro_org.conn.execute('SELECT COUNT(*) FROM "Case"').fetchone()[0]
    assert abs(violations / cases - 0.3) <= 0.02


def test_a_flat_org_has_no_offers_and_says_so(flat_b2b_conn: sqlite3.Connection) -> None:
    with pytest.raises(LookupError, match="latent=False"):
        pro_category(NAME).draw(ProFacts(flat_b2b_conn, "b2b", latent=False), np.random.default_rng(0), False)
    vocabulary = [r[0] for r in flat_b2b_conn.execute("SELECT DISTINCT remedy FROM crmarena_hidden_remedy")]
    assert vocabulary == []
    for (body,) in flat_b2b_conn.execute("SELECT TextBody FROM EmailMessage"):
        assert "Remedies" not in body and "offer you" not in body
