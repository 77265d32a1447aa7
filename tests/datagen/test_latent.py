"""Each latent variable shows in the data it drives, and flattens out with ``latent=False``.

Statistics are computed here with plain SQL and Python from the tables; the stored latent values
serve only as the reference they should agree with.
"""

from __future__ import annotations

import math
import re
import sqlite3
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from crmarena_gym.datagen import read_latent


def _spearman(xs: list[float], ys: list[float]) -> float:
    rx = np.argsort(np.argsort(xs)).astype(float)
    ry = np.argsort(np.argsort(ys)).astype(float)
    return float(np.corrcoef(rx, ry)[0, 1])


def _month_peak(db: sqlite3.Connection) -> tuple[float, list[str]]:
    counts = dict(db.execute('SELECT substr(CreatedDate, 6, 2), COUNT(*) FROM "Case" GROUP BY 1').fetchall())
    values = [counts.get(f"{m:02d}", 0) for m in range(1, 13)]
    top = sorted(counts, key=lambda m: -counts[m])[:2]
    return max(values) / (sum(values) / 12), top


def test_seasonal_buying_makes_december_and_march_peak(db: sqlite3.Connection, flat_db: sqlite3.Connection) -> None:
    ratio, top = _month_peak(db)
    flat_ratio, _ = _month_peak(flat_db)
    assert ratio >= 1.6 and set(top) == {"12", "03"}
    assert flat_ratio <= 1.45 and ratio >= flat_ratio * 1.25


def test_holiday_shoppers_buy_in_november_and_december(org_path: Path, db: sqlite3.Connection) -> None:
    habit = read_latent(org_path)["account_habit"]
    share: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for account, month in db.execute('SELECT AccountId, substr(EffectiveDate, 6, 2) FROM "Order"'):
        share[habit[account]][0] += month in ("11", "12")
        share[habit[account]][1] += 1
    frac = {h: a / b for h, (a, b) in share.items()}
    assert frac["holiday"] >= 0.35 > 0.25 >= frac["steady"]


def _issue_top_share(db: sqlite3.Connection) -> tuple[list[float], list[float], dict[str, str]]:
    ratios, shares, top = [], [], {}
    for (issue,) in db.execute("SELECT Id FROM Issue__c"):
        rows = db.execute(
            """SELECT OwnerId, COUNT(*) FROM "Case" WHERE Status = 'Closed' AND IssueId__c = ?
               GROUP BY OwnerId ORDER BY 2 DESC""",
            (issue,),
        ).fetchall()
        counts = [n for _o, n in rows]
        ratios.append(counts[0] / statistics.median(counts))
        shares.append(counts[0] / sum(counts))
        top[issue] = rows[0][0]
    return ratios, shares, top


def test_few_experts_close_most_cases_of_each_issue(
    org_path: Path, db: sqlite3.Connection, flat_db: sqlite3.Connection
) -> None:
    ratios, shares, top = _issue_top_share(db)
    assert min(ratios) >= 5, ratios
    assert statistics.median(shares) >= 0.2
    experts = read_latent(org_path)["issue_experts"]
    assert sum(top[i] in experts[i] for i in top) >= 9
    _flat_ratios, flat_shares, _ = _issue_top_share(flat_db)
    assert statistics.median(flat_shares) <= 0.1


def _transfers(db: sqlite3.Connection) -> tuple[float, dict[str, int], dict[str, int]]:
    n_cases = db.execute('SELECT COUNT(*) FROM "Case"').fetchone()[0]
    out = dict(
        db.execute(
            "SELECT OldValue__c, COUNT(*) FROM CaseHistory__c WHERE OldValue__c IS NOT NULL GROUP BY 1"
        ).fetchall()
    )
    held = dict(
        db.execute("SELECT NewValue__c, COUNT(*) FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' GROUP BY 1")
    )
    return sum(out.values()) / n_cases, out, held


def test_transfer_rate_near_the_original_and_driven_by_agent_habit(
    org_path: Path, db: sqlite3.Connection, flat_db: sqlite3.Connection
) -> None:
    rate, out, held = _transfers(db)
    assert 0.09 <= rate <= 0.14
    habit = read_latent(org_path)["agent_transfer_rate"]
    busy = [a for a, n in held.items() if n >= 10]
    assert _spearman([habit[a] for a in busy], [out.get(a, 0) / held[a] for a in busy]) >= 0.4
    flat_rate, _out, _held = _transfers(flat_db)
    assert 0.09 <= flat_rate <= 0.14
    assert len(set(read_latent_flat(flat_db)["agent_transfer_rate"].values())) == 1


def read_latent_flat(conn: sqlite3.Connection) -> dict[str, object]:
    import json

    return {n: json.loads(v) for n, v in conn.execute("SELECT name, value FROM crmarena_latent")}


def _agent_handle_times(db: sqlite3.Connection) -> dict[str, float]:
    rows = db.execute(
        """SELECT OwnerId,
                  AVG(LN((julianday(substr(ClosedDate, 1, 19)) - julianday(substr(CreatedDate, 1, 19))) * 1440))
           FROM "Case" WHERE Status = 'Closed' AND Id NOT IN
             (SELECT CaseId__c FROM CaseHistory__c WHERE OldValue__c IS NOT NULL)
           GROUP BY OwnerId HAVING COUNT(*) >= 5"""
    ).fetchall()
    return dict(rows)


def test_agent_speed_drives_handle_time(org_path: Path, db: sqlite3.Connection, flat_db: sqlite3.Connection) -> None:
    observed = _agent_handle_times(db)
    speed = read_latent(org_path)["agent_speed"]
    assert len(observed) >= 20
    assert _spearman([speed[a] for a in observed], list(observed.values())) >= 0.6
    flat = _agent_handle_times(flat_db)
    assert statistics.pstdev(observed.values()) >= 1.4 * statistics.pstdev(flat.values())


def _state_closure(db: sqlite3.Connection) -> dict[str, float]:
    rows = db.execute(
        """SELECT a.ShippingState,
                  AVG(LN((julianday(substr(c.ClosedDate, 1, 19)) - julianday(substr(c.CreatedDate, 1, 19))) * 1440))
           FROM "Case" c JOIN Account a ON a.Id = c.AccountId WHERE c.Status = 'Closed'
           GROUP BY 1 HAVING COUNT(*) >= 10"""
    ).fetchall()
    return dict(rows)


def test_regional_closure_speed(org_path: Path, db: sqlite3.Connection, flat_db: sqlite3.Connection) -> None:
    observed = _state_closure(db)
    speed = read_latent(org_path)["state_closure_speed"]
    assert len(observed) >= 10
    assert _spearman([speed[s] for s in observed], list(observed.values())) >= 0.5
    flat = _state_closure(flat_db)
    assert statistics.pstdev(observed.values()) >= 1.3 * statistics.pstdev(flat.values())


def _product_issue_concentration(db: sqlite3.Connection) -> tuple[float, dict[str, str]]:
    rows = db.execute(
        """SELECT oi.Product2Id, c.IssueId__c, COUNT(*) FROM "Case" c JOIN OrderItem oi ON oi.Id = c.OrderItemId__c
           GROUP BY 1, 2"""
    ).fetchall()
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for product, issue, n in rows:
        per[product][issue] += n
    busy = {p: c for p, c in per.items() if sum(c.values()) >= 5}
    share = statistics.mean(max(c.values()) / sum(c.values()) for c in busy.values())
    return share, {p: c.most_common(1)[0][0] for p, c in busy.items()}


def test_products_have_dominant_issues(org_path: Path, db: sqlite3.Connection, flat_db: sqlite3.Connection) -> None:
    share, top = _product_issue_concentration(db)
    propensity = read_latent(org_path)["product_issue_propensity"]
    assert share >= 0.45
    agree = sum(max(propensity[p], key=propensity[p].get) == i for p, i in top.items())
    assert agree >= 0.5 * len(top)
    flat_share, _ = _product_issue_concentration(flat_db)
    assert flat_share <= share - 0.1


def _top_decile_share(db: sqlite3.Connection) -> float:
    per = sorted((n for (n,) in db.execute('SELECT COUNT(*) FROM "Case" GROUP BY AccountId')), reverse=True)
    n_accounts = db.execute("SELECT COUNT(*) FROM Account").fetchone()[0]
    return sum(per[: n_accounts // 10]) / sum(per)


def test_a_few_customers_open_most_cases(db: sqlite3.Connection, flat_db: sqlite3.Connection) -> None:
    assert _top_decile_share(db) >= 0.4
    assert _top_decile_share(flat_db) <= 0.3


def _texts(db: sqlite3.Connection) -> dict[str, str]:
    """Every case's chat and email text, joined."""
    out: dict[str, list[str]] = defaultdict(list)
    for case_id, body in db.execute(
        "SELECT CaseId, Body FROM LiveChatTranscript UNION ALL SELECT ParentId, TextBody FROM EmailMessage"
    ):
        out[case_id].append(body)
    return {c: "\n".join(parts) for c, parts in out.items()}


def test_policy_violations_are_written_into_transcripts(org_path: Path, db: sqlite3.Connection) -> None:
    latent = read_latent(org_path)
    violations, clean = latent["violations"], latent["clean_cases"]
    with_text = {
        r[0]
        for r in db.execute(
            "SELECT CaseId FROM LiveChatTranscript UNION SELECT ParentId FROM EmailMessage",
        )
    }
    assert set(violations) | set(clean) == with_text and not set(violations) & set(clean)
    assert 0.15 <= len(violations) / len(with_text) <= 0.45
    assert len(violations) >= 130
    policy_articles = set(latent["policy_articles"].values())
    assert len(policy_articles) == 10
    issue_of = dict(db.execute('SELECT Id, IssueId__c FROM "Case"').fetchall())
    evidence = set()
    texts = _texts(db)
    for case_id, v in violations.items():
        assert v["article_id"] == latent["policy_articles"][issue_of[case_id]]
        assert v["evidence"] in texts[case_id]
        evidence.add(v["evidence"])
    for case_id in clean:
        assert not any(e in texts[case_id] for e in evidence)
    # Every violated article is a real policy article whose body states numbered rules.
    for article in policy_articles:
        (body,) = db.execute("SELECT FAQ_Answer__c FROM Knowledge__kav WHERE Id = ?", (article,)).fetchone()
        assert re.search(r"^1\. .+\n2\. .+\n3\. ", body, re.M)
    assert {v["article_id"] for v in violations.values()} == policy_articles


def test_agent_violation_habit(org_path: Path, db: sqlite3.Connection, flat_db: sqlite3.Connection) -> None:
    latent = read_latent(org_path)
    owner = dict(db.execute('SELECT Id, OwnerId FROM "Case"').fetchall())
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for case_id in latent["violations"]:
        tally[owner[case_id]][0] += 1
        tally[owner[case_id]][1] += 1
    for case_id in latent["clean_cases"]:
        tally[owner[case_id]][1] += 1
    busy = [a for a, (_v, n) in tally.items() if n >= 10]
    rate = latent["agent_violation_rate"]
    assert _spearman([rate[a] for a in busy], [tally[a][0] / tally[a][1] for a in busy]) >= 0.5
    assert len(set(read_latent_flat(flat_db)["agent_violation_rate"].values())) == 1


def test_kqa_facts_are_stated_in_their_articles(org_path: Path, db: sqlite3.Connection) -> None:
    facts = read_latent(org_path)["kqa_facts"]
    bodies = dict(db.execute("SELECT Id, FAQ_Answer__c FROM Knowledge__kav").fetchall())
    assert len(facts) >= 130
    assert len({f["article_id"] for f in facts}) == 45
    for f in facts:
        assert f["answer"] in bodies[f["article_id"]], f
        assert f["question"].endswith("?")
    numeric = [f for f in facts if re.search(r"\d", f["answer"])]
    assert len(numeric) >= 30


def test_product_attributes_describe_the_products(org_path: Path, db: sqlite3.Connection) -> None:
    attrs = read_latent(org_path)["product_attributes"]
    rows = db.execute("SELECT Id, Name, Description FROM Product2").fetchall()
    for pid, name, description in rows:
        a = attrs[pid]
        assert a["name"] == name
        assert a["colour"] in description and a["material"] in description
        assert a["audience"] in {"men", "women", "kids", "unisex"}
        assert a["type"] in name
    categories = {r[0] for r in db.execute("SELECT Name FROM ProductCategory")}
    assert {a["category"] for a in attrs.values()} == categories


def test_flat_org_has_flat_latents(flat_db: sqlite3.Connection) -> None:
    latent = read_latent_flat(flat_db)
    for name in ("agent_speed", "state_closure_speed", "account_complaint", "account_order_rate"):
        assert set(latent[name].values()) == {1.0}, name  # type: ignore[union-attr]
    skills = {v for per in latent["agent_skill"].values() for v in per.values()}  # type: ignore[union-attr]
    assert skills == {1.0}
    profiles = latent["month_profiles"]
    assert all(set(p) == {1.0} for p in profiles.values())  # type: ignore[union-attr]
    issue_p = {v for per in latent["product_issue_propensity"].values() for v in per.values()}  # type: ignore[union-attr]
    assert issue_p == {0.1}
    assert math.isclose(sum(1 for _ in latent["agent_speed"]), 152)  # type: ignore[arg-type]
