"""The B2B and B2C orgs: determinism, integrity, and each planted structure measured against its hidden variables.

Every statistic is computed here with plain SQL and Python from the object tables; the hidden tables serve
only as the reference the data should agree with. Windows are the ones the time-based categories name
(PRO.md 2.2): calendar quarters, seasons, half-years and years that end before the org's last day.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
import statistics
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from crmarena_gym.datagen import (
    GENERATOR_VERSIONS,
    ProKnobs,
    content_hash,
    generate_org,
    read_hidden,
    read_latent,
    read_manifest,
)
from crmarena_gym.datagen._b2b import SPEC as B2B
from crmarena_gym.datagen._b2c import SPEC as B2C
from crmarena_gym.schema import OPPORTUNITY_STAGES, FieldType, is_valid_id, org_schema, quote_identifier

KINDS = ("b2b", "b2c")
SPECS = {"b2b": B2B, "b2c": B2C}
LAST_DAY = dt.date(2025, 6, 30)


@pytest.fixture(scope="session")
def pro_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both Pro orgs at scale 1, seed 0, latent variables on."""
    out = {}
    for kind in KINDS:
        out[kind] = tmp_path_factory.mktemp(kind) / f"{kind}.sqlite"
        generate_org(out[kind], kind=kind, seed=0, scale=1.0)
    return out


@pytest.fixture(scope="session")
def flat_b2b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("flat-b2b") / "flat.sqlite"
    generate_org(path, kind="b2b", seed=0, scale=1.0, latent=False)
    return path


@pytest.fixture(scope="session")
def pro_dbs(pro_paths: dict[str, Path]) -> Iterator[dict[str, sqlite3.Connection]]:
    conns = {k: sqlite3.connect(f"file:{p}?mode=ro", uri=True) for k, p in pro_paths.items()}
    yield conns
    for conn in conns.values():
        conn.close()


def _windows() -> list[tuple[dt.date, dt.date]]:
    """Quarters, seasons (winter spans the new year), half-years and years of 2020-2025 ending by LAST_DAY."""
    out = []

    def month_end(y: int, m: int) -> dt.date:
        return dt.date(y + m // 12, m % 12 + 1, 1) - dt.timedelta(days=1)

    for y in range(2020, 2026):
        for first in (1, 4, 7, 10):
            out.append((dt.date(y, first, 1), month_end(y, first + 2)))
        for first in (3, 6, 9):
            out.append((dt.date(y, first, 1), month_end(y, first + 2)))
        out.append((dt.date(y, 12, 1), month_end(y + 1, 2)))
        out += [(dt.date(y, 1, 1), dt.date(y, 6, 30)), (dt.date(y, 7, 1), dt.date(y, 12, 31))]
        out.append((dt.date(y, 1, 1), dt.date(y, 12, 31)))
    return [(s, e) for s, e in out if e <= LAST_DAY]


WINDOWS = _windows()


def _day(text: str) -> dt.date:
    return dt.date.fromisoformat(text[:10])


def _spearman(xs: list[float], ys: list[float]) -> float:
    rx = np.argsort(np.argsort(xs)).astype(float)
    ry = np.argsort(np.argsort(ys)).astype(float)
    return float(np.corrcoef(rx, ry)[0, 1])


def _agents(path: Path) -> dict[str, dict[str, object]]:
    return {r["UserId"]: r for r in read_hidden(path, "agent") if r["role"] == "sales"}


# -- determinism and identity ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_bytes_and_the_manifest_names_the_kind(tmp_path: Path, kind: str) -> None:
    a = generate_org(tmp_path / "a.sqlite", kind=kind, seed=5, scale=0.1)
    b = generate_org(tmp_path / "b.sqlite", kind=kind, seed=5, scale=0.1)
    c = generate_org(tmp_path / "c.sqlite", kind=kind, seed=6, scale=0.1)
    digest = [hashlib.sha256((tmp_path / f"{n}.sqlite").read_bytes()).hexdigest() for n in "abc"]
    assert digest[0] == digest[1] != digest[2]
    assert a.content_hash == b.content_hash != c.content_hash
    m = read_manifest(tmp_path / "a.sqlite")
    assert (m.kind, m.generator_version, m.seed, m.scale) == (kind, GENERATOR_VERSIONS[kind], 5, 0.1)
    assert set(m.row_counts) == {o.name for o in org_schema(kind).objects}
    assert m.hidden_row_counts and all(name.startswith("crmarena_hidden_") for name in m.hidden_row_counts)
    conn = sqlite3.connect(tmp_path / "a.sqlite")
    for table, count in {**m.row_counts, **m.hidden_row_counts}.items():
        assert conn.execute(f"SELECT COUNT(*) FROM {quote_identifier(table)}").fetchone()[0] == count
    assert content_hash(conn, kind, tuple(m.hidden_row_counts)) == m.content_hash
    # A planted label is part of the org's identity: editing a hidden row changes the hash.
    conn.execute("UPDATE crmarena_hidden_opportunity SET true_stage = 'Negotiation' || true_stage WHERE rowid = 1")
    assert content_hash(conn, kind, tuple(m.hidden_row_counts)) != m.content_hash
    conn.close()


def test_knobs_are_checked_and_reach_only_the_pro_kinds(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="the service org takes none"):
        generate_org(tmp_path / "s.sqlite", seed=0, scale=0.05, knobs=ProKnobs())
    with pytest.raises(ValueError, match=r"knobs\.wrong_stage_rate must be a number from 0 to 1"):
        generate_org(tmp_path / "b.sqlite", kind="b2b", scale=0.05, knobs=ProKnobs(wrong_stage_rate=1.5))
    with pytest.raises(ValueError, match=r"at most 0\.7"):
        generate_org(tmp_path / "b.sqlite", kind="b2b", scale=0.05, knobs=ProKnobs(0.5, 0.5))
    with pytest.raises(ValueError, match="'service', 'b2b', 'b2c'"):
        generate_org(tmp_path / "b.sqlite", kind="retail", scale=0.05)
    assert not (tmp_path / "b.sqlite").exists() and not (tmp_path / "s.sqlite").exists()


# -- integrity ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_every_reference_names_a_record_of_its_object_and_every_value_fits_its_field(
    kind: str, pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    db, schema = pro_dbs[kind], org_schema(kind)
    ids = {o.name: {r[0] for r in db.execute(f"SELECT Id FROM {quote_identifier(o.name)}")} for o in schema.objects}
    for obj in schema.objects:
        assert all(is_valid_id(i) and i[3:5] == schema.instance and i[:3] == obj.key_prefix for i in ids[obj.name])
        for f in obj.stored_fields:
            values = [
                r[0] for r in db.execute(f"SELECT {quote_identifier(f.column_name)} FROM {quote_identifier(obj.name)}")
            ]
            present = [v for v in values if v is not None]
            if f.type is FieldType.REFERENCE:
                targets = [t for t in (f.reference_to, *f.polymorphic) if t in ids]
                known = set().union(*(ids[t] for t in targets))
                assert set(present) <= known, (obj.name, f.name, sorted(set(present) - known)[:3])
            elif f.type is FieldType.PICKLIST:
                assert set(present) <= set(f.picklist_values), (obj.name, f.name, set(present) - set(f.picklist_values))
            elif f.type is FieldType.DATETIME:
                assert all(len(v) == 28 and v.endswith(".000+0000") and _day(v) <= LAST_DAY for v in present), f.name
            elif f.type is FieldType.DATE:
                assert all(dt.date.fromisoformat(v) for v in present), f.name


@pytest.mark.parametrize("kind", KINDS)
def test_sales_records_agree_with_each_other(kind: str, pro_dbs: dict[str, sqlite3.Connection]) -> None:
    db = pro_dbs[kind]
    bad_lines = db.execute(
        "SELECT COUNT(*) FROM OpportunityLineItem WHERE abs(TotalPrice - Quantity * UnitPrice) > 0.01"
    )
    assert bad_lines.fetchone()[0] == 0
    bad_amounts = db.execute(
        """SELECT COUNT(*) FROM Opportunity o WHERE abs(o.Amount -
           (SELECT SUM(TotalPrice) FROM OpportunityLineItem WHERE OpportunityId = o.Id)) > 0.01"""
    )
    assert bad_amounts.fetchone()[0] == 0
    bad_quote_lines = db.execute(
        """SELECT COUNT(*) FROM QuoteLineItem
           WHERE abs(TotalPrice - Quantity * UnitPrice * (1 - Discount / 100.0)) > 0.01"""
    )
    assert bad_quote_lines.fetchone()[0] == 0
    truth = {
        r["OpportunityId"]: r for r in read_hidden(db.execute("PRAGMA database_list").fetchone()[2], "opportunity")
    }
    for opp, contract, created, signed, customer_signed in db.execute(
        """SELECT o.Id, o.ContractID__c, o.CreatedDate, c.CompanySignedDate, c.CustomerSignedDate
           FROM Opportunity o LEFT JOIN Contract c ON c.Id = o.ContractID__c"""
    ):
        # Closed (the tasks' stage) exactly when a contract is signed; the cycle is its planted length.
        assert (truth[opp]["true_stage"] == "Closed") == (contract is not None)
        if contract is not None:
            assert customer_signed <= signed and (_day(signed) - _day(created)).days == truth[opp]["cycle_days"]
    orders = db.execute(
        """SELECT COUNT(*) FROM Contract c WHERE NOT EXISTS (SELECT 1 FROM "Order" r JOIN Opportunity o
           ON o.ContractID__c = c.Id WHERE r.AccountId = c.AccountId AND r.EffectiveDate = c.StartDate)"""
    )
    assert orders.fetchone()[0] == 0
    # A converted lead became the opportunity, contact and account it names, on its conversion day.
    for converted, opp_day, acc, opp_acc, contact, opp_contact in db.execute(
        """SELECT l.ConvertedDate, o.CreatedDate, l.ConvertedAccountId, o.AccountId, l.ConvertedContactId, o.ContactId
           FROM Lead l JOIN Opportunity o ON o.Id = l.ConvertedOpportunityId"""
    ):
        assert (_day(opp_day) - dt.date.fromisoformat(converted)).days in (0, 1)
        assert (acc, contact) == (opp_acc, opp_contact)
    assert (
        db.execute("SELECT COUNT(*) FROM Lead WHERE IsConverted = 1 AND ConvertedOpportunityId IS NULL").fetchone()[0]
        == 0
    )
    # Every lead is owned by a representative of the territory that covers its state.
    outside = db.execute(
        """SELECT COUNT(*) FROM Lead l WHERE NOT EXISTS (SELECT 1 FROM UserTerritory2Association a JOIN Territory2 t
           ON t.Id = a.Territory2Id WHERE a.UserId = l.OwnerId AND (', ' || t.Description || ',') LIKE
           ('%, ' || l.State || ',%'))"""
    )
    assert outside.fetchone()[0] == 0


def test_pro_row_counts_follow_the_b2b_figures_of_pro_md(pro_paths: dict[str, Path]) -> None:
    counts = read_manifest(pro_paths["b2b"]).row_counts
    for name, target in {"User": 212, "Account": 101, "Lead": 1465, "Opportunity": 1170, "Case": 153}.items():
        assert counts[name] == target, name
    for name, target in {
        "Contract": 163,
        "Quote": 704,
        "Task": 4783,
        "Territory2": 10,
        "UserTerritory2Association": 184,
    }.items():
        assert abs(counts[name] - target) <= 0.25 * target, (name, counts[name], target)


# -- planted structure: sales cycle, deal size, conversion -------------------------------------------


def _cycle_rows(db: sqlite3.Connection) -> list[tuple[str, dt.date, int]]:
    rows = db.execute(
        """SELECT o.OwnerId, o.CreatedDate, c.CompanySignedDate
           FROM Opportunity o JOIN Contract c ON c.Id = o.ContractID__c"""
    )
    return [(owner, _day(signed), (_day(signed) - _day(created)).days) for owner, created, signed in rows]


@pytest.mark.parametrize("kind", KINDS)
def test_the_shortest_and_longest_planted_cycles_are_the_measured_ones_in_every_window(
    kind: str, pro_paths: dict[str, Path], pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    planted = {a: r["cycle_days"] for a, r in _agents(pro_paths[kind]).items()}
    rows = _cycle_rows(pro_dbs[kind])
    shortest = longest = measured = 0
    for start, end in WINDOWS:
        per: dict[str, list[int]] = defaultdict(list)
        for owner, signed, days in rows:
            if start <= signed <= end:
                per[owner].append(days)
        if len(per) < 2:
            continue
        measured += 1
        mean = {a: statistics.fmean(v) for a, v in per.items()}
        shortest += min(mean, key=mean.get) == min(per, key=planted.get)  # type: ignore[arg-type]
        longest += max(mean, key=mean.get) == max(per, key=planted.get)  # type: ignore[arg-type]
    assert measured >= 30
    assert shortest / measured >= 0.9 and longest / measured >= 0.9, (shortest, longest, measured)


@pytest.mark.parametrize("kind", KINDS)
def test_deal_amounts_rank_as_the_planted_deal_sizes(
    kind: str, pro_paths: dict[str, Path], pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    planted = {a: r["deal_size"] for a, r in _agents(pro_paths[kind]).items()}
    rows = (
        pro_dbs[kind]
        .execute(
            """SELECT o.OwnerId, c.CompanySignedDate, (SELECT SUM(Quantity * UnitPrice) FROM OpportunityLineItem
           WHERE OpportunityId = o.Id) FROM Opportunity o JOIN Contract c ON c.Id = o.ContractID__c"""
        )
        .fetchall()
    )
    per: dict[str, list[float]] = defaultdict(list)
    for owner, _signed, amount in rows:
        per[owner].append(amount)
    owners = sorted(per)
    assert _spearman([planted[a] for a in owners], [statistics.fmean(per[a]) for a in owners]) >= 0.9
    if kind == "b2b":  # b2b amounts follow the deal size; b2c ones the vehicle, so the count of deals rules
        agree = measured = 0
        for start, end in WINDOWS:
            total: dict[str, float] = defaultdict(float)
            for owner, signed, amount in rows:
                if start <= _day(signed) <= end:
                    total[owner] += amount
            if len(total) >= 2:
                measured += 1
                agree += max(total, key=total.get) == max(total, key=planted.get)  # type: ignore[arg-type]
        assert agree / measured >= 0.5, (agree, measured)


@pytest.mark.parametrize("kind", KINDS)
def test_conversion_rates_follow_the_planted_shares(
    kind: str, pro_paths: dict[str, Path], pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    planted = {a: r["lead_conversion"] for a, r in _agents(pro_paths[kind]).items()}
    rows = pro_dbs[kind].execute("SELECT OwnerId, CreatedDate, IsConverted, ConvertedDate FROM Lead").fetchall()
    # All leads old enough to have converted: the measured share ranks as planted.
    done: dict[str, list[int]] = defaultdict(list)
    for owner, created, converted, _day_converted in rows:
        if _day(created) < dt.date(2025, 3, 1):
            done[owner].append(converted)
    owners = sorted(done)
    assert _spearman([planted[a] for a in owners], [statistics.fmean(done[a]) for a in owners]) >= 0.9
    # Per window (candidates: at least 3 leads created there, as PRO.md pins): of two candidates whose planted
    # shares differ by a quarter or more, the one planted higher converts more (a tie counts half).
    concordant = pairs = 0.0
    for start, end in WINDOWS:
        made: dict[str, int] = defaultdict(int)
        won: dict[str, int] = defaultdict(int)
        for owner, created, converted, day_converted in rows:
            if start <= _day(created) <= end:
                made[owner] += 1
                won[owner] += bool(converted) and start <= _day(day_converted) <= end
        rate = {a: won[a] / made[a] for a in made if made[a] >= 3}
        for a in rate:
            for b in rate:
                if planted[a] >= planted[b] + 0.25:  # type: ignore[operator]
                    pairs += 1
                    concordant += 1.0 if rate[a] > rate[b] else 0.5 if rate[a] == rate[b] else 0.0
    assert pairs >= 300 and concordant / pairs >= 0.85, (concordant, pairs)


def test_a_flat_org_plants_no_agent_structure(flat_b2b: Path, pro_paths: dict[str, Path]) -> None:
    for column in ("cycle_days", "deal_size", "win_rate", "lead_conversion", "lead_volume", "acceptance"):
        assert len({r[column] for r in _agents(flat_b2b).values()}) == 1, column
        assert len({r[column] for r in _agents(pro_paths["b2b"]).values()}) > 40, column

    def separation(path: Path) -> tuple[float, float]:
        """How far apart the representatives are: the F statistic of their deals' cycles (between-representative
        over within-representative variance), and the spread of their lead conversion shares."""
        conn = sqlite3.connect(path)
        cycles: dict[str, list[int]] = defaultdict(list)
        for owner, _signed, days in _cycle_rows(conn):
            cycles[owner].append(days)
        rates = conn.execute(
            "SELECT AVG(IsConverted) FROM Lead WHERE CreatedDate < '2025-03' GROUP BY OwnerId HAVING COUNT(*) >= 10"
        ).fetchall()
        conn.close()
        groups = [v for v in cycles.values() if len(v) >= 2]
        every = [x for v in groups for x in v]
        grand = statistics.fmean(every)
        between = sum(len(v) * (statistics.fmean(v) - grand) ** 2 for v in groups) / (len(groups) - 1)
        within = sum((x - statistics.fmean(v)) ** 2 for v in groups for x in v) / (len(every) - len(groups))
        return between / max(within, 1e-9), statistics.pstdev(r[0] for r in rates)

    flat_f, flat_rate = separation(flat_b2b)
    f, rate = separation(pro_paths["b2b"])
    assert flat_f < 3 and f > 100, (flat_f, f)
    assert rate > 1.8 * flat_rate, (rate, flat_rate)
    latent = read_latent(flat_b2b)
    assert "territory_ties_planned" not in latent and "territory_ties_planned" in read_latent(pro_paths["b2b"])


# -- planted structure: territories and lead routing --------------------------------------------------


def _routing_winner(db: sqlite3.Connection, state: str) -> str | None:
    """The lead-routing rules in plain SQL: the territory listing the state; its representatives; most accepted
    quotes (by the opportunity's owner, all time); then fewest unconverted leads; None if still tied."""
    territory = [
        t
        for t, description in db.execute("SELECT Id, Description FROM Territory2")
        if state in [s.strip() for s in description.split(",")]
    ]
    assert len(territory) == 1, state
    rows = db.execute(
        """SELECT a.UserId,
             (SELECT COUNT(*) FROM Quote q JOIN Opportunity o ON o.Id = q.OpportunityId
              WHERE q.Status = 'Accepted' AND o.OwnerId = a.UserId),
             (SELECT COUNT(*) FROM Lead l WHERE l.OwnerId = a.UserId AND l.IsConverted = 0)
           FROM UserTerritory2Association a WHERE a.Territory2Id = ?""",
        territory,
    ).fetchall()
    best = max(r[1] for r in rows)
    top = [r for r in rows if r[1] == best]
    fewest = min(r[2] for r in top)
    winners = [r[0] for r in top if r[2] == fewest]
    return winners[0] if len(winners) == 1 else None


@pytest.mark.parametrize("kind", KINDS)
def test_every_state_routes_to_the_hidden_winner_and_ties_are_planted(
    kind: str, pro_paths: dict[str, Path], pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    db = pro_dbs[kind]
    hidden = {r["Territory2Id"]: r for r in read_hidden(pro_paths[kind], "territory")}
    for territory, description in db.execute("SELECT Id, Description FROM Territory2"):
        for state in description.split(", "):
            winner = _routing_winner(db, state)
            assert winner is not None and winner == hidden[territory]["winner"], (state, winner)
    planned = read_latent(pro_paths[kind])["territory_ties_planned"]
    assert planned == round(ProKnobs().territory_tie_rate * 10) == sum(r["tie"] for r in hidden.values())
    winners = {r["winner"] for r in hidden.values()}
    assert len(winners) >= 6  # the answer depends on the region


# -- planted structure: quotes -------------------------------------------------------------------------


def _broken_rules(db: sqlite3.Connection, kind: str) -> dict[str, list[str]]:
    """Quote id -> the rules it breaks, checked here from the kind's rule table and the quote's lines."""
    spec = SPECS[kind]
    rules = spec.rules
    product_index = {r[0]: i for i, r in enumerate(db.execute("SELECT Id FROM Product2 ORDER BY Id"))}
    names = [r[0] for r in db.execute("SELECT Name FROM Product2 ORDER BY Id")]
    assert names == [p.name for p in spec.products]
    lines: dict[str, list[tuple[int, float, float, float]]] = defaultdict(list)
    for quote, product, qty, price, discount in db.execute(
        "SELECT QuoteId, Product2Id, Quantity, UnitPrice, Discount FROM QuoteLineItem"
    ):
        lines[quote].append((product_index[product], qty, price, discount))
    offers = dict(db.execute("SELECT Id, ApprovedCompetingOffer__c FROM Quote"))
    out = {}
    for quote in offers:
        broken = []
        items = lines[quote]
        present = {i for i, *_ in items}
        for i, qty, _price, discount in items:
            family = spec.products[i].family
            if family in rules.no_discount_families:
                if discount > 0:
                    broken.append("no_discount")
                continue
            if rules.quantity_tiers:
                cap = next((pct for low, pct in rules.quantity_tiers if qty >= low), 0.0)
            else:
                cap = rules.family_caps.get(family, 0.0)
            if discount > cap + (rules.offer_bonus if offers[quote] else 0.0):
                broken.append("discount_tiers")
        if sum(qty * price * d / 100 for _i, qty, price, d in items) > rules.discount_limit:
            broken.append("discount_limit")
        for i, qty, _price, _d in items:
            if i in rules.quantity_limits and qty > rules.quantity_limits[i]:
                broken.append("quantity_limits")
        broken += ["exclusions" for a, b in rules.exclusions if a in present and b in present]
        broken += [
            "bundles"
            for primary, companions in rules.bundles.items()
            if primary in present and not set(companions) <= present
        ]
        out[quote] = broken
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_rule_breaking_quotes_are_planted_at_the_knobs_rates_and_recorded(
    kind: str, pro_paths: dict[str, Path], pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    db = pro_dbs[kind]
    broken = _broken_rules(db, kind)
    statuses = dict(db.execute("SELECT Id, Status FROM Quote"))
    hidden = {r["QuoteId"]: r for r in read_hidden(pro_paths[kind], "quote")}
    articles = {r["rule"]: r["ArticleId"] for r in read_hidden(pro_paths[kind], "rule")}
    assert all(len(b) <= 1 for b in broken.values())
    assert not any(broken[q] for q, s in statuses.items() if s == "Accepted")
    for quote, rules in broken.items():
        assert hidden[quote]["rule"] == (rules[0] if rules else None), quote
        assert hidden[quote]["ArticleId"] == (articles[rules[0]] if rules else None)
    knobs = ProKnobs()
    n = len(broken)
    approval = sum(1 for b in broken.values() if b and b[0] in ("discount_tiers", "discount_limit", "no_discount"))
    config = sum(1 for b in broken.values() if b and b[0] in ("quantity_limits", "exclusions", "bundles"))
    assert abs(approval / n - knobs.approval_violation_rate) <= 0.02
    assert abs(config / n - knobs.config_violation_rate) <= 0.02
    # Each rule is broken somewhere, so the answer article varies.
    assert {b[0] for b in broken.values() if b} == set(articles)


@pytest.mark.parametrize("kind", KINDS)
def test_other_knob_values_move_the_rates(tmp_path: Path, kind: str) -> None:
    knobs = ProKnobs(approval_violation_rate=0.1, config_violation_rate=0.4, wrong_stage_rate=0.5)
    path = tmp_path / "org.sqlite"
    generate_org(path, kind=kind, seed=3, scale=0.5, knobs=knobs)
    conn = sqlite3.connect(path)
    broken = _broken_rules(conn, kind)
    approval = sum(1 for b in broken.values() if b and b[0] in ("discount_tiers", "discount_limit", "no_discount"))
    config = sum(1 for b in broken.values() if b and b[0] in ("quantity_limits", "exclusions", "bundles"))
    assert abs(approval / len(broken) - 0.1) <= 0.02 and abs(config / len(broken) - 0.4) <= 0.02
    wrong = conn.execute(
        """SELECT AVG(o.StageName != h.true_stage) FROM Opportunity o
           JOIN crmarena_hidden_opportunity h ON h.OpportunityId = o.Id"""
    ).fetchone()[0]
    assert abs(wrong - 0.5) <= 0.02
    conn.close()


@pytest.mark.parametrize("kind", KINDS)
def test_rule_articles_state_the_rules_the_quotes_follow(kind: str, pro_dbs: dict[str, sqlite3.Connection]) -> None:
    spec, db = SPECS[kind], pro_dbs[kind]
    text = {
        t: body for t, body in db.execute("SELECT Title, FAQ_Answer__c FROM Knowledge__kav WHERE IsVisibleInPkb = 0")
    }
    body = " ".join(text.values())
    rules = spec.rules
    assert f"${rules.discount_limit:,.0f}" in body
    for i, limit in rules.quantity_limits.items():
        assert f"{spec.products[i].name}: at most {limit}" in body
    for a, b in rules.exclusions:
        assert f"{spec.products[a].name} with {spec.products[b].name}" in body
    for primary, companions in rules.bundles.items():
        assert f"{spec.products[primary].name} requires {spec.products[companions[0]].name}" in body
    for family in rules.no_discount_families:
        assert family in body
    for low, pct in rules.quantity_tiers:
        assert f"{pct:g}% for {low} units or more" in body
    for family, pct in rules.family_caps.items():
        assert f"{family}: up to {pct:g}%" in body


# -- planted structure: stages and tasks ----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_task_stages_reveal_the_true_stage_and_wrong_stages_are_planted(
    kind: str, pro_paths: dict[str, Path], pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    db, spec = pro_dbs[kind], SPECS[kind]
    catalog = {subject: stage for stage, subjects in enumerate(spec.stage_tasks) for subject in subjects}
    truth = {r["OpportunityId"]: r for r in read_hidden(pro_paths[kind], "opportunity")}
    furthest: dict[str, int] = defaultdict(int)
    stale: dict[str, int] = defaultdict(int)
    recorded = dict(db.execute("SELECT Id, StageName FROM Opportunity"))
    for opp, subject, status in db.execute("SELECT WhatId, Subject, Status FROM Task"):
        assert subject in catalog
        furthest[opp] = max(furthest[opp], catalog[subject])
        true = OPPORTUNITY_STAGES.index(truth[opp]["true_stage"])
        stale[opp] += status == "Not Started" and catalog[subject] < true
    for opp, row in truth.items():
        assert OPPORTUNITY_STAGES[furthest[opp]] == row["true_stage"], opp
        assert recorded[opp] == row["recorded_stage"]
    knobs = ProKnobs()
    wrong = sum(r["true_stage"] != r["recorded_stage"] for r in truth.values())
    assert abs(wrong / len(truth) - knobs.wrong_stage_rate) <= 0.01
    # A recorded stage ahead of the true one never claims Closed without a contract.
    assert not any(r["recorded_stage"] == "Closed" != r["true_stage"] for r in truth.values())
    open_past = [o for o, r in truth.items() if r["true_stage"] not in ("Qualification", "Closed")]
    with_stale = sum(stale[o] > 0 for o in open_past)
    assert abs(with_stale / len(open_past) - knobs.misplaced_task_rate) <= 0.03


# -- planted structure: BANT facts in the calls with leads -------------------------------------------------


def _bant_from_call(body: str, household: bool) -> dict[str, object]:
    """The facts of a lead's call, read from its text as an agent would (numbers are numerals)."""
    import re

    utterances = [line.split("] ", 1)[1].split(": ", 1)[1] for line in body.splitlines()]
    said = " ".join(utterances)
    priced = next(u for u in utterances if " lists at $" in u)
    product, price = re.fullmatch(r"(.+) lists at \$([\d,]+) per \w+\.", priced).groups()  # type: ignore[union-attr]
    quantity = 1 if household else int(re.search(r"(\d+) licences of", said).group(1))  # type: ignore[union-attr]
    budget = re.search(r"(?:budget for this is|budget is now|set aside|it is now) \$([\d,]+)", said).group(1)  # type: ignore[union-attr]
    days = re.search(r"(?:within|in) (\d+) days", said).group(1)  # type: ignore[union-attr]
    return {
        "product": product,
        "quantity": quantity,
        "price": float(price.replace(",", "")),
        "budget": int(budget.replace(",", "")),
        "days": int(days),
        "need": not re.search(r"no specific project|only gathering|just browsing|Nothing urgent", said),
        "authority": not re.search(r"final call|decides on anything", said),
    }


@pytest.mark.parametrize("kind", KINDS)
def test_each_leads_latest_call_states_the_bant_facts_that_decide_its_planted_failures(
    kind: str, pro_paths: dict[str, Path], pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    db, spec = pro_dbs[kind], SPECS[kind]
    names = [p.name for p in spec.products]
    hidden = {r["LeadId"]: r for r in read_hidden(pro_paths[kind], "lead_bant")}
    calls: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for call, lead, created, body in db.execute(
        "SELECT Id, LeadId__c, CreatedDate, Body__c FROM VoiceCallTranscript__c WHERE LeadId__c IS NOT NULL"
    ):
        calls[lead].append((created, call, body))
    assert set(calls) == {r[0] for r in db.execute("SELECT Id FROM Lead")}
    failing_counts: dict[str, int] = defaultdict(int)
    for lead, rows in calls.items():
        created, call, body = max(rows)
        assert hidden[lead]["latest_call"] == call
        facts = _bant_from_call(body, spec.households)
        product = names.index(facts["product"])  # type: ignore[arg-type]
        p = spec.products[product]
        assert facts["price"] == p.price
        # Budget: the quantity at the list price less the discount the rules allow (no competing offer).
        cost = facts["quantity"] * p.price * (1 - spec.rules.allowed_discount(p.family, facts["quantity"], False) / 100)  # type: ignore[operator]
        failing = []
        if facts["budget"] < cost:  # type: ignore[operator]
            failing.append("Budget")
        if not facts["authority"]:
            failing.append("Authority")
        if not facts["need"]:
            failing.append("Need")
        if facts["days"] < spec.days_to_set_up(product, facts["quantity"]):  # type: ignore[arg-type, operator]
            failing.append("Timeline")
        assert (",".join(failing) or None) == hidden[lead]["failing"], (lead, facts, hidden[lead])
        for factor in failing or ["None"]:
            failing_counts[factor] += 1
        if len(rows) > 1 and "timing changed" in body:  # an update: the earlier call said other figures
            earlier = _bant_from_call(min(rows)[2], spec.households)
            assert earlier["budget"] != facts["budget"] and earlier["days"] != facts["days"]
    n = len(calls)
    assert 0.2 <= failing_counts["None"] / n <= 0.45
    assert max(("Budget", "Authority", "Need", "Timeline"), key=failing_counts.get) == "Authority"  # type: ignore[arg-type]
    # Qualified leads are the ones that convert more.
    qualified = {lead for lead, r in hidden.items() if r["failing"] is None}
    converted = {r[0] for r in db.execute("SELECT Id FROM Lead WHERE IsConverted = 1")}
    assert len(qualified & converted) / len(converted) > 2 * len(qualified - converted) / (n - len(converted))


# -- planted structure: competitors and subtopics in the calls about opportunities ---------------------------


def _insights_from_call(body: str, competitors: tuple[str, ...], subtopics: tuple[str, ...]) -> set[tuple[object, ...]]:
    """(kind, label, relation, offer, sentiment) of one call, read from its text."""
    import re

    said = [line.split("] ", 1)[1].split(": ", 1)[1] for line in body.splitlines()]
    found: dict[str, list[object]] = {}
    topics: set[tuple[object, ...]] = set()
    for utterance in said:
        named = [c for c in competitors if utterance.startswith(c) or f" {c}" in utterance]
        if named:
            (c,) = named
            entry = found.setdefault(c, [None, 0])
            if "has offered us" in utterance:
                entry[1] = 1
            elif re.search(r"ahead of yours|stronger than you", utterance):
                entry[0] = "disadvantage"
            elif re.search(r"better than theirs|you win on", utterance):
                entry[0] = "advantage"
            continue
        for t in subtopics:
            if f" {t.lower()} " in f" {utterance} " or f"{t.lower()}." in utterance:
                if re.search(r"pleased|big plus", utterance):
                    topics.add(("subtopic", t, None, 0, "positive"))
                elif re.search(r"worried|real concern", utterance):
                    topics.add(("subtopic", t, None, 0, "negative"))
    return topics | {("competitor", c, rel, offer, None) for c, (rel, offer) in found.items()}


@pytest.mark.parametrize("kind", KINDS)
def test_calls_about_opportunities_say_their_planted_insights_and_prominence_drifts(
    kind: str, pro_paths: dict[str, Path], pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    db, spec = pro_dbs[kind], SPECS[kind]
    hidden: dict[str, set[tuple[object, ...]]] = defaultdict(set)
    for r in read_hidden(pro_paths[kind], "call_insight"):
        hidden[r["CallId"]].add((r["kind"], r["label"], r["relation"], r["offer"], r["sentiment"]))
    calls = db.execute("SELECT Id, CreatedDate, Body__c FROM VoiceCallTranscript__c WHERE OpportunityId__c IS NOT NULL")
    per_quarter: dict[tuple[int, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    n = 0
    for call, created, body in calls:
        assert _insights_from_call(body, spec.competitors, spec.subtopics) == hidden[call], call
        for label in hidden[call]:
            if label[0] == "competitor":
                day = _day(created)
                per_quarter[(day.year, (day.month - 1) // 3)][str(label[1])] += 1
        n += 1
    assert n >= (1500 if kind == "b2b" else 600)
    # The most-mentioned competitor changes over time (a global question's answer depends on its window) ...
    leaders = {max(counts, key=counts.get) for counts in per_quarter.values()}  # type: ignore[arg-type]
    assert len(leaders) >= 3
    # ... and follows the planted prominence of the quarter.
    weights = read_latent(pro_paths[kind])["competitor_weight_by_quarter"]
    agree = total = 0
    for counts in per_quarter.values():
        if sum(counts.values()) < 40:
            continue
        quarter = sorted(per_quarter).index(next(q for q, c in per_quarter.items() if c is counts))
        planted = max(weights, key=lambda c: weights[c][quarter])
        agree += max(counts, key=counts.get) == planted  # type: ignore[arg-type]
        total += 1
    assert total >= 5 and agree / total >= 0.6, (agree, total)


# -- the service side: cases as in the service org ----------------------------------------------------------


def _case_structure(path: Path) -> tuple[float, float, int, int]:
    """(speed rank agreement, state rank agreement, issues whose top closer is a planted expert, issues)."""
    import math

    conn = sqlite3.connect(path)
    latent = read_latent(path)
    speed = {r["UserId"]: r["speed"] for r in read_hidden(path, "agent") if r["role"] == "service"}
    transferred = {r[0] for r in conn.execute("SELECT CaseId__c FROM CaseHistory__c WHERE OldValue__c IS NOT NULL")}
    per_agent: dict[str, list[float]] = defaultdict(list)
    per_state: dict[str, list[float]] = defaultdict(list)
    for case, owner, state, hours in conn.execute(
        """SELECT c.Id, c.OwnerId, a.ShippingState,
                  (julianday(substr(c.ClosedDate, 1, 19)) - julianday(substr(c.CreatedDate, 1, 19))) * 24
           FROM "Case" c JOIN Account a ON a.Id = c.AccountId WHERE c.Status = 'Closed'"""
    ):
        if case not in transferred:
            per_agent[owner].append(math.log(hours))
            per_state[state].append(math.log(hours))
    agents = [a for a, v in per_agent.items() if len(v) >= 3]
    states = [s for s, v in per_state.items() if len(v) >= 5]
    agent_rank = _spearman([speed[a] for a in agents], [statistics.fmean(per_agent[a]) for a in agents])
    state_speed = latent["state_closure_speed"]
    state_rank = _spearman([state_speed[s] for s in states], [statistics.fmean(per_state[s]) for s in states])
    experts = latent["issue_experts"]
    hits = 0
    for issue, names in experts.items():
        top = conn.execute(
            """SELECT OwnerId FROM "Case" WHERE Status = 'Closed' AND IssueId__c = ? GROUP BY OwnerId
               ORDER BY COUNT(*) DESC, OwnerId LIMIT 1""",
            (issue,),
        ).fetchone()
        hits += top is not None and top[0] in names
    conn.close()
    return agent_rank, state_rank, hits, len(experts)


@pytest.mark.parametrize("kind", KINDS)
def test_cases_carry_the_service_orgs_structure(
    kind: str, pro_paths: dict[str, Path], pro_dbs: dict[str, sqlite3.Connection], flat_b2b: Path
) -> None:
    db = pro_dbs[kind]
    # The history convention of the service org: creation and first assignment at CreatedDate, transfers strictly
    # inside the case's life, a closing row exactly at ClosedDate when closed, the owner the last one assigned.
    history: dict[str, list[tuple[str, str, str | None, str | None]]] = defaultdict(list)
    for case, field, at, old, new in db.execute(
        "SELECT CaseId__c, Field__c, CreatedDate, OldValue__c, NewValue__c FROM CaseHistory__c ORDER BY CreatedDate, Id"
    ):
        history[case].append((field, at, old, new))
    for case, created, closed, status, owner in db.execute(
        'SELECT Id, CreatedDate, ClosedDate, Status, OwnerId FROM "Case"'
    ):
        rows = history[case]
        assert rows[0][:2] == ("Case Creation", created) and rows[1][0] == "Owner Assignment" and rows[1][1] == created
        assigned = [r for r in rows if r[0] == "Owner Assignment"]
        assert assigned[0][2] is None and all(r[2] is not None and created < r[1] for r in assigned[1:])
        assert assigned[-1][3] == owner
        assert (status == "Closed") == (closed is not None) == (rows[-1][:2] == ("Case Closed", closed))
    agent_rank, state_rank, hits, issues = _case_structure(pro_paths[kind])
    assert agent_rank >= 0.6 and state_rank >= 0.6 and hits >= issues - 3, (agent_rank, state_rank, hits)
    if kind == "b2b":
        _flat_agent, _flat_state, flat_hits, _ = _case_structure(flat_b2b)
        assert flat_hits <= 4  # with flat skills, the planted experts are no more than anyone else


def test_a_plan_too_large_for_the_org_is_said_not_hidden(tmp_path: Path) -> None:
    path = tmp_path / "tiny.sqlite"
    with pytest.warns(UserWarning, match=r"no rule decides: too few accepted quotes") as caught:
        generate_org(path, kind="b2b", seed=1, scale=0.1)
    assert caught[0].filename == __file__  # the warning points at the caller of generate_org
    hidden = read_hidden(path, "territory")
    assert any(r["winner"] is None for r in hidden)  # recorded as it is: no winner where the rules decide none


def test_rule_breaking_quotes_that_cannot_be_planted_are_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from crmarena_gym.datagen import _pro

    monkeypatch.setattr(_pro._ProOrg, "_break", lambda self, rng, quote, key: None)  # no quote can break a rule
    with pytest.warns(UserWarning, match=r"has \{'approval': 0, 'config': 0\} rule-breaking quotes where"):
        generate_org(tmp_path / "org.sqlite", kind="b2b", seed=0, scale=0.3)
    assert all(r["rule"] is None for r in read_hidden(tmp_path / "org.sqlite", "quote"))


# -- planted structure: the article bank, remedies on cases, look-alike purchases, private facts --------------


@pytest.mark.parametrize("kind", KINDS)
def test_articles_state_their_facts_as_short_spans_and_internal_facts_stay_internal(
    kind: str, pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    db = pro_dbs[kind]
    articles = {r[0]: r[1:] for r in db.execute("SELECT Id, Title, FAQ_Answer__c, IsVisibleInPkb FROM Knowledge__kav")}
    kinds = dict(db.execute("SELECT kind, COUNT(*) FROM crmarena_hidden_article GROUP BY kind").fetchall())
    n_products, n_issues = len(SPECS[kind].products), len(SPECS[kind].issues)
    assert kinds["product"] == kinds["product_specs"] == kinds["product_support"] == n_products
    assert kinds["issue"] == n_issues and kinds["competitor"] == len(SPECS[kind].competitors) and kinds["policy"] >= 12
    if kind == "b2b":
        assert len(articles) == 194  # PRO.md 4.1
    public_text = " ".join(body for _t, body, public in articles.values() if public)
    facts = db.execute(
        """SELECT f.ArticleId, f.label, f.answer, a.internal FROM crmarena_hidden_article_fact f
           JOIN crmarena_hidden_article a ON a.ArticleId = f.ArticleId"""
    ).fetchall()
    for article, label, answer, internal in facts:
        title, body, public = articles[article]
        assert public == 1 - internal
        if internal:
            assert answer in body
            if len(answer) > 12:
                assert answer not in public_text, answer
        else:
            assert f"{label}: {answer}." in body and 1 <= len(answer.split()) <= 15, (title, answer)
            assert body.count(f"{label}: ") == 1
    # Every public article beyond the issue articles' steps carries facts; values vary between products.
    with_facts = {f[0] for f in facts}
    assert all(a in with_facts for a, (_t, _b, public) in articles.items() if public)
    per_label: dict[str, set[str]] = defaultdict(set)
    for _a, label, answer, _internal in facts:
        per_label[label].add(answer)
    assert sum(len(v) >= 3 for v in per_label.values()) >= 15


def _agent_said(db: sqlite3.Connection, case: str) -> str:
    """What the case's owner wrote to the customer: emails from the owner and the owner's chat lines."""
    name, email = db.execute(
        """SELECT u.FirstName || ' ' || u.LastName, u.Email FROM "Case" c JOIN User u ON u.Id = c.OwnerId
           WHERE c.Id = ?""",
        (case,),
    ).fetchone()
    said = [r[0] for r in db.execute("SELECT TextBody FROM EmailMessage WHERE ParentId = ? AND FromAddress = ?",
                                     (case, email))]  # fmt: skip
    for (body,) in db.execute("SELECT Body FROM LiveChatTranscript WHERE CaseId = ?", (case,)):
        said += [line.split("] ", 1)[1] for line in body.splitlines() if line.split("] ", 1)[1].startswith(name + ":")]
    return "\n".join(said)


@pytest.mark.parametrize("kind", KINDS)
def test_agents_offer_one_remedy_per_case_and_break_the_issue_article_at_the_knob_rate(
    kind: str, pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    from crmarena_gym.datagen._pro_text import REMEDIES

    db = pro_dbs[kind]
    allowed: dict[str, set[str]] = {}
    for issue, body in db.execute(
        """SELECT i.Id, k.FAQ_Answer__c FROM Issue__c i JOIN Knowledge__kav k ON k.Title = 'Resolving: ' || i.Name"""
    ):
        allowed[issue] = set(body.split("Remedies agents may offer: ")[1].split(". Agents may not")[0].split("; "))
    assert set().union(*allowed.values()) == set(REMEDIES[kind])  # every remedy is allowed for some issue
    hidden = {
        r[0]: r[1:] for r in db.execute("SELECT CaseId, remedy, allowed, channel FROM crmarena_hidden_case_remedy")
    }
    cases = db.execute('SELECT Id, IssueId__c FROM "Case"').fetchall()
    assert set(hidden) == {c for c, _i in cases}
    broken = 0
    channels = set()
    for case, issue in cases:
        said = _agent_said(db, case)
        offered = [r for r in REMEDIES[kind] if r in said]
        assert offered == [hidden[case][0]], (case, offered)
        breaks = offered[0] not in allowed[issue]
        assert breaks == (hidden[case][1] == 0)
        broken += breaks
        channels.add(hidden[case][2])
    assert abs(broken / len(cases) - ProKnobs().remedy_violation_rate) <= 0.02
    assert channels == {"EmailMessage", "LiveChatTranscript"}
    # Some customers ask for a remedy in their opening email (what they ask for is recorded); only the agent's
    # words decide, and a request differs from the offer or breaks the article where the offer does not.
    asked = dict(db.execute("SELECT CaseId, requested FROM crmarena_hidden_case_remedy"))
    misleading = 0
    for case, issue in cases:
        customer = " ".join(
            r[0]
            for r in db.execute(
                "SELECT TextBody FROM EmailMessage WHERE ParentId = ? AND FromAddress NOT IN (SELECT Email FROM User)",
                (case,),
            )
        )
        assert [r for r in REMEDIES[kind] if r in customer] == ([asked[case]] if asked[case] else [])
        misleading += asked[case] is not None and (asked[case] not in allowed[issue]) != (hidden[case][1] == 0)
    assert 0.2 <= sum(v is not None for v in asked.values()) / len(cases) <= 0.4 and misleading >= 5


def test_the_remedy_knob_moves_the_violation_share(tmp_path: Path) -> None:
    path = tmp_path / "org.sqlite"
    generate_org(path, kind="b2b", seed=3, scale=0.5, knobs=ProKnobs(remedy_violation_rate=0.6))
    rows = read_hidden(path, "case_remedy")
    assert abs(sum(1 - r["allowed"] for r in rows) / len(rows) - 0.6) <= 0.02


@pytest.mark.parametrize("kind", KINDS)
def test_look_alike_purchases_are_activated_orders_of_one_family_a_few_days_apart(
    kind: str, pro_dbs: dict[str, sqlite3.Connection]
) -> None:
    db = pro_dbs[kind]
    clusters: dict[int, list[tuple[str, str, str, str]]] = defaultdict(list)
    for cluster, order, account, day, product in db.execute(
        "SELECT cluster, OrderId, AccountId, EffectiveDate, Product2Id FROM crmarena_hidden_purchase"
    ):
        clusters[cluster].append((order, account, day, product))
    assert len(clusters) == {"b2b": 20, "b2c": 120}[kind]  # the kinds' PurchaseCluster counts at scale 1
    for rows in clusters.values():
        families = set()
        for order, account, day, product in rows:
            got = db.execute(
                """SELECT o.AccountId, o.EffectiveDate, o.Status, p.Family FROM "Order" o
                   JOIN OrderItem oi ON oi.OrderId = o.Id JOIN Product2 p ON p.Id = oi.Product2Id
                   WHERE o.Id = ? AND oi.Product2Id = ?""",
                (order, product),
            ).fetchone()
            assert got[:3] == (account, day, "Activated")
            families.add(got[3])
        days = sorted({_day(r[2] + "T00:00:00.000+0000") for r in rows})
        assert len(families) == 1 and len(days) == 2 and 1 <= (days[1] - days[0]).days <= 6
        assert len({r[3] for r in rows}) == len(rows)  # distinct look-alikes, not the same product twice


@pytest.mark.parametrize("kind", KINDS)
def test_every_contact_s_private_values_are_recorded(kind: str, pro_dbs: dict[str, sqlite3.Connection]) -> None:
    db = pro_dbs[kind]
    recorded: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for contact, field, value in db.execute("SELECT ContactId, field, value FROM crmarena_hidden_private"):
        recorded[contact][field].add(value)
    for contact, name, phone, email, state in db.execute(
        "SELECT Id, FirstName || ' ' || LastName, Phone, Email, MailingState FROM Contact"
    ):
        r = recorded[contact]
        assert (r["name"], r["phone"], r["email"], r["state"]) == ({name}, {phone}, {email}, {state})


def test_a_flat_org_plants_no_text_structure(flat_b2b: Path) -> None:
    from crmarena_gym.datagen._pro_text import REMEDIES

    db = sqlite3.connect(flat_b2b)
    for table in ("article_fact", "remedy", "case_remedy", "purchase", "private"):
        assert db.execute(f"SELECT COUNT(*) FROM crmarena_hidden_{table}").fetchone()[0] == 0, table
    kinds = {r[0] for r in db.execute("SELECT kind FROM crmarena_hidden_article")}
    assert not kinds & {"product_specs", "product_support", "policy", "competitor"}
    text = " ".join(r[0] for r in db.execute("SELECT TextBody FROM EmailMessage"))
    text += " ".join(r[0] for r in db.execute("SELECT Body FROM LiveChatTranscript"))
    text += " ".join(r[0] for r in db.execute("SELECT FAQ_Answer__c FROM Knowledge__kav"))
    assert not any(r in text for r in REMEDIES["b2b"])
    db.close()


def _peak_share(path: Path) -> tuple[float, float, dict[str, int]]:
    """The share of cases filed in their product's hidden peak month, the share of products (with at least four
    cases) whose busiest calendar month over the org's life is that peak alone, and the peaks."""
    db = sqlite3.connect(path)
    peaks = dict(db.execute("SELECT Product2Id, peak_month FROM crmarena_hidden_product_season"))
    months: dict[str, list[int]] = defaultdict(list)
    for product, created in db.execute(
        'SELECT oi.Product2Id, c.CreatedDate FROM "Case" c JOIN OrderItem oi ON oi.Id = c.OrderItemId__c'
    ):
        months[product].append(int(created[5:7]))
    db.close()
    if not peaks:
        return 0.0, 0.0, {}
    in_peak = sum(m == peaks[p] for p, ms in months.items() for m in ms) / sum(len(ms) for ms in months.values())
    busy = [p for p, ms in months.items() if len(ms) >= 4]
    wins = 0
    for p in busy:
        counts = np.bincount(months[p], minlength=13)
        wins += int(np.argmax(counts) == peaks[p] and (counts == counts.max()).sum() == 1)
    return in_peak, wins / max(len(busy), 1), peaks


@pytest.fixture(scope="module")
def seasonal_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both Pro orgs with product seasons planted (``case_peak_share=0.5``), seed 0, scale 1."""
    out = {}
    for kind in KINDS:
        out[kind] = tmp_path_factory.mktemp(f"seasons-{kind}") / "org.sqlite"
        generate_org(out[kind], kind=kind, seed=0, scale=1.0, knobs=ProKnobs(case_peak_share=0.5))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_products_cases_peak_in_their_planted_month(
    kind: str, seasonal_paths: dict[str, Path], pro_paths: dict[str, Path]
) -> None:
    in_peak, wins, peaks = _peak_share(seasonal_paths[kind])
    assert len(set(peaks.values())) >= 8  # the peaks spread over the year
    assert in_peak >= 0.45 and wins >= 0.6, (in_peak, wins)
    # The default org plants no season: its cases keep their natural dates, and no month stands out.
    assert _peak_share(pro_paths[kind])[2] == {}
    db = sqlite3.connect(pro_paths[kind])
    months = np.bincount([int(r[0][5:7]) for r in db.execute('SELECT CreatedDate FROM "Case"')], minlength=13)
    db.close()
    assert months[1:].max() / months.sum() < 0.2


@pytest.mark.slow
def test_seasons_move_case_dates_not_which_purchases_have_cases(
    seasonal_paths: dict[str, Path], pro_paths: dict[str, Path]
) -> None:
    def cases(path: Path) -> tuple[list[str], list[str]]:
        db = sqlite3.connect(path)
        rows = db.execute('SELECT c.OrderItemId__c, c.CreatedDate FROM "Case" c ORDER BY c.Id').fetchall()
        db.close()
        return sorted(r[0] for r in rows), [r[1] for r in rows]

    items, dates = cases(seasonal_paths["b2b"])
    default_items, default_dates = cases(pro_paths["b2b"])
    assert items == default_items and sorted(dates) != sorted(default_dates)
    assert dates == sorted(dates)  # case ids follow the dates they are filed on
