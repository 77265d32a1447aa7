"""named_entity_disambiguation on both Pro orgs: gold three ways, look-alikes on the asked day, the day decides too."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections import Counter

import numpy as np
import pytest

from crmarena_gym.tasks.pro import ProFacts, pro_category
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "named_entity_disambiguation"


def test_gold_by_sql_and_by_the_oracle_equal_the_planted_product(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=31))
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 10, want_none=True, seed=32))


def _bought(conn: sqlite3.Connection, contact: str, day: dt.date) -> list[tuple[str, str, str]]:
    """(product, family, description) of the contact's account's activated orders effective on ``day``."""
    return conn.execute(
        """SELECT p.Id, p.Family, p.Description FROM Contact c JOIN "Order" o ON o.AccountId = c.AccountId
           JOIN OrderItem oi ON oi.OrderId = o.Id JOIN Product2 p ON p.Id = oi.Product2Id
           WHERE c.Id = ? AND o.Status = 'Activated' AND o.EffectiveDate = ?""",
        (contact, day.isoformat()),
    ).fetchall()


def test_the_asked_day_holds_look_alikes_and_none_draws_were_bought_days_away(pro_org: ProOrg) -> None:
    conn = pro_org.conn
    for want_none in (False, True):
        for draw in draw_instances(pro_org, NAME, 15, want_none=want_none, seed=33):
            p = draw.params
            today = dt.date.fromisoformat(p["today"])
            assert f"Today's date: {p['today']}" in draw.required and p["contact_id"] in draw.required
            assert p["days"] in (3, 5, 7, 14, 30) and today <= dt.date(2025, 6, 30)
            day = today - dt.timedelta(days=p["days"])
            bought = _bought(conn, p["contact_id"], day)
            assert bought, "the asked day has purchases"
            if want_none:
                assert draw.answer is None and p["description"] not in {b[2] for b in bought}
                # ... and the described product was bought by the account within a week of that day.
                near = [
                    b
                    for k in range(-7, 8)
                    if k
                    for b in _bought(conn, p["contact_id"], day + dt.timedelta(days=k))
                    if b[2] == p["description"]
                ]
                assert near
            else:
                match = [b for b in bought if b[2] == p["description"]]
                assert [m[0] for m in match] == [draw.answer]
                assert sum(b[1] == match[0][1] for b in bought) >= 2  # a look-alike of the same family competes
            assert p["description"] in draw.query


def test_golds_spread_and_wordings_vary(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=34)
    golds = Counter(d.answer for d in draws)
    assert golds.most_common(1)[0][1] <= 0.45 * len(draws) and len(golds) >= 12, golds.most_common(3)
    assert len({" ".join(d.query.split()[:3]) for d in draws}) >= 6


def test_look_alike_purchases_are_planted_in_pairs_of_days(pro_org: ProOrg) -> None:
    rows = pro_org.conn.execute(
        """SELECT h.cluster, COUNT(DISTINCT h.EffectiveDate), COUNT(DISTINCT p.Family), COUNT(*)
           FROM crmarena_hidden_purchase h JOIN Product2 p ON p.Id = h.Product2Id GROUP BY h.cluster"""
    ).fetchall()
    assert len(rows) >= 20
    assert all(days == 2 and families == 1 and 3 <= n <= 5 for _c, days, families, n in rows)


def test_a_flat_org_has_no_look_alikes_and_says_so(flat_b2b_conn: sqlite3.Connection) -> None:
    with pytest.raises(LookupError, match="latent=False"):
        pro_category(NAME).draw(ProFacts(flat_b2b_conn, "b2b", latent=False), np.random.default_rng(0), False)
    assert flat_b2b_conn.execute("SELECT COUNT(*) FROM crmarena_hidden_purchase").fetchone()[0] == 0
