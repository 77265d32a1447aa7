"""Org perturbations: seeded and recorded, and the gold carried to the perturbed org checked by plain SQL."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter, defaultdict
from datetime import datetime
from fractions import Fraction
from pathlib import Path

import pytest

from crmarena_gym.datagen import PERTURBATION_VERSION, Perturbation, parse_perturbations, perturb_org, read_manifest
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import SchemaNames, TaskInstance, generate_tasks, oracle_trace, recompute_tasks, solve
from tests.tasks.drift_checks import check_drift


def _secs(ts: str) -> int:
    return int((datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S") - datetime(1970, 1, 1)).total_seconds())


def _parses(text: str, form: str) -> bool:
    try:
        datetime.strptime(text, form)
    except ValueError:
        return False
    return True


def _best(values: dict[str, Fraction] | dict[str, int], pick: str) -> str | None:
    """The single best key (None when empty); a tie fails (a kept instance is never tied)."""
    if not values:
        return None
    target = max(values.values()) if pick == "max" else min(values.values())
    winners = sorted(k for k, v in values.items() if v == target)
    assert len(winners) == 1, f"a kept instance is tied: {winners}"
    return winners[0]


def _sql_gold(conn: sqlite3.Connection, inst: TaskInstance) -> object:
    """The gold of a BRI, TII or MTA instance by plain SQL written here (not the package's gold code)."""
    p = inst.params
    if inst.task == "best_region_identification":
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for state, created, closed in conn.execute(
            'SELECT a.ShippingState, c.CreatedDate, c.ClosedDate FROM "Case" c JOIN Account a ON a.Id = c.AccountId '
            "WHERE c.CreatedDate >= ? AND c.CreatedDate < ? AND c.ClosedDate IS NOT NULL "
            "AND a.ShippingState IS NOT NULL",
            (p["start"], p["end"]),
        ):
            totals[state][0] += _secs(closed) - _secs(created)
            totals[state][1] += 1
        return _best({s: Fraction(t, n) for s, (t, n) in totals.items()}, "min")
    if inst.task == "top_issue_identification":
        rows = conn.execute(
            'SELECT c.IssueId__c, COUNT(*) FROM "Case" c, OrderItem oi WHERE oi.Id = c.OrderItemId__c '
            "AND oi.Product2Id = ? AND c.CreatedDate BETWEEN ? AND ? AND c.IssueId__c IS NOT NULL GROUP BY 1",
            (p["product_id"], p["start"], p["end"]),
        ).fetchall()
        return _best(dict(rows), "max")
    if inst.task == "monthly_trend_analysis":
        months: Counter[str] = Counter()
        for (created,) in conn.execute(
            'SELECT c.CreatedDate FROM "Case" c, OrderItem oi WHERE oi.Id = c.OrderItemId__c AND oi.Product2Id = ? '
            "AND c.CreatedDate >= ? AND c.CreatedDate < ?",
            (p["product_id"], p["start"], p["end"]),
        ):
            months[datetime.strptime(created[:10], "%Y-%m-%d").strftime("%B")] += 1
        return _best(dict(months), "max")
    return NotImplemented


def _through_the_tools(path: Path, kept: list[TaskInstance]) -> None:
    """Every kept instance's gold is what the oracle reaches through the task functions on the perturbed org
    (the functions and the query engine: code apart from the gold functions that recomputed it)."""
    org = LocalOrg(path)
    names = SchemaNames.read(org.schema.text(), "service")
    for inst in kept:
        assert oracle_trace(inst, org, names=names).answer == (inst.answer or "None"), inst.idx


@pytest.fixture(scope="module")
def base_tasks(env_org: Path) -> list[TaskInstance]:
    return generate_tasks(env_org, seed=1, per_task=10)


def _perturbed(env_org: Path, tmp_path: Path, *specs: Perturbation) -> Path:
    out = tmp_path / "perturbed.sqlite"
    perturb_org(env_org, out, specs)
    return out


@pytest.mark.parametrize("kind", ["schema_drift", "distractors", "dirty_values", "knowledge_drift"])
def test_transform_is_deterministic_by_seed_and_recorded(env_org: Path, tmp_path: Path, kind: str) -> None:
    spec = Perturbation(kind=kind, strength=0.3, seed=5)
    a, b, c = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "c.sqlite"
    ma = perturb_org(env_org, a, [spec])
    mb = perturb_org(env_org, b, [spec])
    mc = perturb_org(env_org, c, [spec.model_copy(update={"seed": 6})])
    base = read_manifest(env_org)
    assert ma.content_hash == mb.content_hash != base.content_hash
    assert mc.content_hash not in (ma.content_hash, base.content_hash)
    stored = read_manifest(a)
    assert stored == ma
    assert stored.base_content_hash == base.content_hash
    (record,) = stored.perturbations
    assert (record["kind"], record["strength"], record["seed"]) == (kind, 0.3, 5)
    assert record["version"] == PERTURBATION_VERSION
    assert sum(record["changed"].values()) > 0
    (stored_base,) = sqlite3.connect(env_org).execute("SELECT manifest FROM crmarena_manifest").fetchone()
    assert "perturbations" not in stored_base  # a generated org's manifest is as it was


def test_distractors_add_look_alikes_and_change_no_gold(env_org: Path, tmp_path: Path, base_tasks: list) -> None:
    path = _perturbed(env_org, tmp_path, Perturbation(kind="distractors", strength=0.5, seed=1))
    base, pert = sqlite3.connect(env_org), sqlite3.connect(path)
    # Look-alikes exist: accounts sharing a first and last name with an original one, under another id.
    dup = pert.execute(
        "SELECT COUNT(*) FROM Account a JOIN Account b ON a.FirstName = b.FirstName AND a.LastName = b.LastName "
        "AND a.ShippingCity = b.ShippingCity AND a.Id < b.Id"
    ).fetchone()[0]
    n_base = base.execute("SELECT COUNT(*) FROM Account").fetchone()[0]
    assert dup >= round(0.5 * n_base)
    # Duplicate cases: the same subject, description, contact and account, later, New, the API user's, no order
    # line or issue.
    dup_cases = pert.execute(
        'SELECT COUNT(DISTINCT d.Id) FROM "Case" d JOIN "Case" o ON o.Subject = d.Subject '
        "AND o.Description = d.Description AND o.ContactId = d.ContactId AND o.AccountId = d.AccountId "
        "AND o.Id != d.Id AND o.CreatedDate < d.CreatedDate "
        "WHERE d.Status = 'New' AND d.ClosedDate IS NULL AND d.OrderItemId__c IS NULL AND d.IssueId__c IS NULL "
        'AND d.OwnerId = (SELECT MIN(Id) FROM "User")'
    ).fetchone()[0]
    n_cases = base.execute('SELECT COUNT(*) FROM "Case"').fetchone()[0]
    assert pert.execute('SELECT COUNT(*) FROM "Case"').fetchone()[0] == n_cases + round(0.5 * n_cases)
    assert dup_cases == round(0.5 * n_cases)
    result = recompute_tasks(base_tasks, env_org, path)
    assert result.dropped == {}
    assert [(i.idx, i.answer) for i in result.kept] == [(i.idx, i.answer) for i in base_tasks]  # every instance
    _through_the_tools(path, result.kept)
    checked = 0
    for inst in result.kept:
        expected = _sql_gold(pert, inst)
        if expected is not NotImplemented:
            assert inst.answer == expected, inst.idx
            checked += 1
    assert checked >= 25


def test_dirty_values_gold_recomputed_and_ambiguous_dropped(env_org: Path, tmp_path: Path, base_tasks: list) -> None:
    path = _perturbed(env_org, tmp_path, Perturbation(kind="dirty_values", strength=0.4, seed=2))
    pert = sqlite3.connect(path)
    states = {s for (s,) in pert.execute("SELECT ShippingState FROM Account WHERE ShippingState IS NOT NULL")}
    assert any(s != s.upper() for s in states)
    assert pert.execute("SELECT COUNT(*) FROM Product2 WHERE External_ID__c LIKE '#%'").fetchone()[0] > 0
    # Dates written as text: the day the case was opened, by hand, in a case's description (never ISO).
    written = 0
    forms = ("%m/%d/%Y", "%d.%m.%Y", "%d %b %Y", "%B %d, %Y", "%m-%d-%y")
    base = sqlite3.connect(env_org)
    before = dict(base.execute('SELECT Id, Description FROM "Case"').fetchall())
    for case_id, text, created in pert.execute('SELECT Id, Description, CreatedDate FROM "Case"'):
        if text == before[case_id]:
            continue
        assert text.startswith(before[case_id])
        note = text[len(before[case_id]) :].strip()
        assert note.startswith("Customer first wrote on ") and note.endswith(".")
        day = note.removeprefix("Customer first wrote on ").removesuffix(".")
        parsed = {datetime.strptime(day, f).date() for f in forms if _parses(day, f)}
        assert parsed == {datetime.strptime(created[:10], "%Y-%m-%d").date()}, (day, created)
        written += 1
    assert written == round(0.4 * len(before))
    result = recompute_tasks(base_tasks, env_org, path)
    assert len(result.kept) + sum(result.dropped.values()) == len(base_tasks)
    assert result.dropped.get("changed", 0) > 0  # lower-cased states split BRI's groups
    by_idx = {i.idx: i for i in base_tasks}
    for reason, idxs in result.dropped_idx.items():
        assert len(idxs) == result.dropped[reason]
        for idx in idxs:
            inst = by_idx[idx]
            expected = _sql_gold(pert, inst) if reason == "changed" else NotImplemented
            if expected is not NotImplemented:
                assert expected != inst.answer  # really moved by the perturbation
    for inst in result.kept:
        expected = _sql_gold(pert, inst)
        if expected is not NotImplemented:
            assert inst.answer == expected, inst.idx
    assert result.dropped.get("inputs changed", 0) > 0  # policy-violation cases whose description was written to
    _through_the_tools(path, result.kept)


def test_bad_perturbation_refused(env_org: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="strength"):
        Perturbation(kind="distractors", strength=0)
    with pytest.raises(ValueError, match="kind"):
        Perturbation.model_validate({"kind": "chaos", "strength": 0.5})
    with pytest.raises(ValueError, match="at least one"):
        perturb_org(env_org, tmp_path / "x.sqlite", [])


def test_perturbations_are_read_from_every_form() -> None:
    want = [
        Perturbation(kind="schema_drift", strength=0.2, seed=4),
        Perturbation(kind="distractors", strength=1, seed=4),
    ]
    assert parse_perturbations("schema_drift=0.2 distractors=1", seed=4) == want
    assert parse_perturbations(["schema_drift=0.2", "distractors=1.0"], seed=4) == want
    assert (
        parse_perturbations({"schema_drift": 0.2, "dirty_values": 0, "distractors": 1, "perturbation_seed": 4}) == want
    )
    assert parse_perturbations([p.model_dump() for p in want]) == want
    assert parse_perturbations(None) == parse_perturbations("") == []
    for bad, message in [
        ("chaos=0.2", "unknown perturbation kind 'chaos'"),
        ({"distractors": 1.5}, "got 1.5"),
        ({"distractors": "high"}, "got 'high'"),
        ("distractors=x", "'distractors=x' is not a number"),
        ([{"kind": "distractors", "strength": 0.2, "seed": -1}], "got -1"),
        ([{"kind": "distractors", "strength": 0.2, "rate": 1}], "also has ['rate']"),
        (7, "got 7"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            parse_perturbations(bad)


@pytest.mark.parametrize(("strength", "seed"), [(0.3, 3), (1.0, 0)])
def test_schema_drift_is_one_a_real_org_could_undergo_and_keeps_gold(
    env_org: Path, tmp_path: Path, base_tasks: list, strength: float, seed: int
) -> None:
    import pickle

    from crmarena_gym.envs import CRMArenaEnv

    path = _perturbed(env_org, tmp_path, Perturbation(kind="schema_drift", strength=strength, seed=seed))
    drift = check_drift(env_org, path)  # custom fields renamed, standard ones migrated, against the base org
    assert drift["renamed"] and drift["migrated"] and drift["added"]
    if strength == 1.0:  # every field that may change did; the ones Salesforce or the org keep filled did not
        assert {"ShippingState", "ShippingCity", "PersonEmail"} <= set(drift["migrated"]["Account"])
        assert {"Description"} == set(drift["migrated"]["Case"])  # not Subject, Status, Priority
        # The original org's custom fields its dump names without __c are renamed, as custom ones, never migrated.
        assert drift["renamed"]["Case"] == {"Channel": "Channel_Value__c"}
        assert set(drift["renamed"]["ProductCategoryProduct"]) == {"ProductCategory", "Product"}
        assert "ProductCategoryProduct" not in drift["migrated"]
        assert "LastName" not in drift["migrated"].get("Contact", {}) and "Name" not in drift["migrated"]["Product2"]
        assert set(drift["renamed"]["Product2"]) == {"External_ID__c"}
    org, base = LocalOrg(path), LocalOrg(env_org)
    for obj, fields in drift["added"].items():
        here = drift["objects"].get(obj, obj)
        for f in fields:
            rows = org.query(f"SELECT {f['name']} FROM {here} LIMIT 5")["records"]
            assert len(rows) == min(5, base.query(f"SELECT COUNT() FROM {obj}")["totalSize"])
    # The env's schema text is the org's own; pickled (as a worker receives it), the org keeps its drifted schema.
    text = org.schema.text()
    env = CRMArenaEnv("TII", org=path, tasks=[t for t in base_tasks if t.abbrev == "TII"])
    assert env.reset(seed=0)[1]["schema"] == text
    assert pickle.loads(pickle.dumps(org.schema)).text() == text
    assert base.declared() is base
    result = recompute_tasks(base_tasks, env_org, path)
    assert result.dropped == {} and [(i.idx, i.answer) for i in result.kept] == [(i.idx, i.answer) for i in base_tasks]
    assert all(solve(inst, org) == (inst.answer or "None") for inst in result.kept)  # the functions alone
    _through_the_tools(path, result.kept)  # the oracles, their SOQL written with the names the schema text shows
    conn = sqlite3.connect(path)
    for inst in result.kept:
        expected = _sql_gold(conn, inst)
        if expected is not NotImplemented:
            assert inst.answer == expected, inst.idx


@pytest.mark.parametrize(
    ("version", "renamed", "migrated", "wrong"),
    [
        # before standard fields were migrated: one renamed, which no real org can
        (3, {"Account": {"ShippingState": "Shipping_State__c"}}, {}, "cannot rename the standard field"),
        # before the dump's unsuffixed custom fields were told apart: Case.Channel migrated as a standard one
        (4, {}, {"Case": {"Channel": "Channel__c"}}, "a migration moves a standard field"),
    ],
)
def test_a_drifted_org_of_an_older_version_is_refused_with_a_clear_message(
    env_org: Path, tmp_path: Path, version: int, renamed: dict, migrated: dict, wrong: str
) -> None:
    path = _perturbed(env_org, tmp_path, Perturbation(kind="schema_drift", strength=0.3, seed=3))
    conn = sqlite3.connect(path)
    (text,) = conn.execute("SELECT manifest FROM crmarena_manifest").fetchone()
    manifest = json.loads(text)
    manifest["perturbations"][0]["version"] = version
    manifest["perturbations"][0]["drift"]["renamed"] = renamed
    manifest["perturbations"][0]["drift"]["migrated"] = migrated
    conn.execute("UPDATE crmarena_manifest SET manifest = ?", (json.dumps(manifest),))
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match=rf"perturbation version {version}; perturb the base org again.*{wrong}"):
        LocalOrg(path)


def test_schema_drift_is_one_per_org(env_org: Path, tmp_path: Path) -> None:
    once = _perturbed(env_org, tmp_path, Perturbation(kind="schema_drift", strength=0.2))
    with pytest.raises(ValueError, match="one schema_drift"):
        perturb_org(once, tmp_path / "twice.sqlite", [Perturbation(kind="schema_drift", strength=0.2, seed=1)])
    assert not (tmp_path / "twice.sqlite").exists()  # no half-made org left behind


def test_knowledge_drift_keeps_the_current_article_the_only_answer(
    env_org: Path, tmp_path: Path, base_tasks: list
) -> None:
    path = _perturbed(env_org, tmp_path, Perturbation(kind="knowledge_drift", strength=1.0, seed=4))
    base, pert = sqlite3.connect(env_org), sqlite3.connect(path)
    online = base.execute("SELECT * FROM Knowledge__kav ORDER BY Id").fetchall()
    assert pert.execute("SELECT * FROM Knowledge__kav WHERE PublishStatus = 'Online' ORDER BY Id").fetchall() == online
    stale = pert.execute(
        "SELECT a.Title, a.FAQ_Answer__c, o.FAQ_Answer__c FROM Knowledge__kav a JOIN Knowledge__kav o "
        "ON o.Title = a.Title AND o.PublishStatus = 'Online' WHERE a.PublishStatus = 'Archived'"
    ).fetchall()
    assert len(stale) == len(online)  # strength 1: every article has a superseded version, same title
    assert sum(old != new for _, old, new in stale) >= len(online) // 2
    result = recompute_tasks(base_tasks, env_org, path)
    assert result.dropped == {}
    assert [(i.idx, i.answer) for i in result.kept] == [(i.idx, i.answer) for i in base_tasks]
    _through_the_tools(path, result.kept)
    checked = 0
    for inst in result.kept:
        if inst.task != "knowledge_qa" or not any(ch.isdigit() for ch in inst.answer or ""):
            continue
        (current,) = pert.execute(
            "SELECT FAQ_Answer__c FROM Knowledge__kav WHERE Id = ? AND PublishStatus = 'Online'",
            (inst.params["article_id"],),
        ).fetchone()
        assert inst.answer.lower() in current.lower()  # the current version answers
        checked += 1
    assert checked >= 1


def test_schema_drift_renames_custom_objects(env_org: Path, tmp_path: Path, base_tasks: list) -> None:
    from crmarena_gym.org import LocalOrg, OrgError

    path = _perturbed(env_org, tmp_path, Perturbation(kind="schema_drift", strength=1.0, seed=0))
    objects = read_manifest(path).perturbations[0]["drift"]["objects"]
    assert set(objects) == {"Issue__c", "CaseHistory__c"}  # strength 1: every custom object
    org, base = LocalOrg(path), LocalOrg(env_org)
    for old, new in objects.items():
        assert (
            org.query(f"SELECT COUNT() FROM {new}")["totalSize"]
            == base.query(f"SELECT COUNT() FROM {old}")["totalSize"]
        )
        with pytest.raises(OrgError, match="INVALID_TYPE"):
            org.query(f"SELECT Id FROM {old} LIMIT 1")
        with pytest.raises(OrgError, match="INVALID_TYPE"):
            org.search(f"FIND {{Shipping}} RETURNING {old}(Id)")
        assert org.describe(new)["name"] == new
    # A reference to a renamed object names it; its parent is reached as before.
    case_issue = next(f for f in org.schema.get_object("Case").fields if f.column_name == "IssueId__c")
    assert case_issue.reference_to == objects["Issue__c"]
    issue = objects["Issue__c"]
    name_field = next(f.name for f in org.schema.get_object(issue).fields if f.column_name == "Name")
    hits = org.search(f"FIND {{Shipping}} IN ALL FIELDS RETURNING {issue}(Id, {name_field})")["searchRecords"]
    assert hits and all(h["attributes"]["type"] == issue for h in hits)
    result = recompute_tasks(base_tasks, env_org, path)
    assert result.dropped == {} and [i.answer for i in result.kept] == [i.answer for i in base_tasks]
    _through_the_tools(path, result.kept)  # the task functions follow the renamed objects too
