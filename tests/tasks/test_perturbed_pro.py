"""Org perturbations on the CRMArena-Pro orgs: the same transforms, the Pro task sets carried over, every kept gold
checked against the category's solver playing the perturbed org through the query engine (code apart from the
``gold_sql`` that recomputed it)."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import pytest

from crmarena_gym.datagen import Perturbation, generate_org, perturb_org, read_manifest
from crmarena_gym.org import LocalOrg, OrgError
from crmarena_gym.tasks import SchemaNames, TaskInstance, recompute_tasks
from crmarena_gym.tasks.pro import ProQuestion, generate_pro_tasks, pro_category, pro_oracle_trace
from tests.tasks.drift_checks import check_drift


@pytest.fixture(scope="module", params=["b2b", "b2c"])
def pro_base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """A Pro org (seed 7) and 3 instances of each category drawn from it."""
    path = tmp_path_factory.mktemp(f"pro-perturb-{request.param}") / "org.sqlite"
    generate_org(path, kind=request.param, seed=7, scale=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a category short of instances says so; fewer are fine
        tasks = generate_pro_tasks(path, seed=3, per_task=3, allow_fewer=True)
    return path, tasks


def _values(answer: object) -> list[str]:
    return [] if answer is None else [answer] if isinstance(answer, str) else sorted(set(answer))  # type: ignore[arg-type]


def _through_the_tools(path: Path, kept: list[TaskInstance]) -> None:
    """Every kept instance's gold is what its category's solver reaches on the perturbed org through SOQL and the
    task functions, with the names the org's schema text shows."""
    org = LocalOrg(path)
    names = SchemaNames.read(org.schema.text(), org.kind)
    for inst in kept:
        question = ProQuestion(inst.query, inst.metadata.required, inst.params, inst.kind)
        answer, _trace = pro_oracle_trace(pro_category(inst.task), question, org, names=names)
        assert _values(answer) == sorted(set(inst.answer_values)), (inst.task, inst.idx, answer, inst.answer)


def test_distractors_change_no_pro_gold(pro_base: tuple[Path, list], tmp_path: Path) -> None:
    base, tasks = pro_base
    out = tmp_path / "p.sqlite"
    manifest = perturb_org(base, out, [Perturbation(kind="distractors", strength=0.5, seed=2)])
    assert manifest.kind == read_manifest(base).kind and manifest.base_content_hash == read_manifest(base).content_hash
    again = perturb_org(base, tmp_path / "again.sqlite", [Perturbation(kind="distractors", strength=0.5, seed=2)])
    other = perturb_org(base, tmp_path / "other.sqlite", [Perturbation(kind="distractors", strength=0.5, seed=3)])
    assert again.content_hash == manifest.content_hash != other.content_hash  # deterministic by seed
    changed = manifest.perturbations[0]["changed"]
    assert all(changed[t] > 0 for t in ("Account", "Contact", "Product2", "Case"))
    conn = sqlite3.connect(out)
    n_base = sqlite3.connect(base).execute("SELECT COUNT(*) FROM Account").fetchone()[0]
    # Look-alike accounts: B2B companies re-entered with a suffix, B2C households under the same name.
    like = conn.execute(
        "SELECT COUNT(*) FROM Account a JOIN Account b ON b.Name LIKE a.Name || '%' AND a.Id < b.Id "
        "AND a.ShippingCity IS b.ShippingCity"
    ).fetchone()[0]
    assert like >= round(0.5 * n_base)
    result = recompute_tasks(tasks, base, out)
    assert result.dropped == {}
    assert [(i.idx, i.answer) for i in result.kept] == [(i.idx, i.answer) for i in tasks]  # every instance
    _through_the_tools(out, result.kept)


@pytest.mark.parametrize(
    "spec",
    [Perturbation(kind="dirty_values", strength=0.4, seed=1), Perturbation(kind="knowledge_drift", strength=1.0)],
    ids=lambda p: p.kind,
)
def test_pro_gold_recomputed_and_checked_through_the_tools(
    pro_base: tuple[Path, list], tmp_path: Path, spec: Perturbation
) -> None:
    base, tasks = pro_base
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    ma, mb = perturb_org(base, a, [spec]), perturb_org(base, b, [spec])
    assert ma.content_hash == mb.content_hash != read_manifest(base).content_hash  # deterministic by seed
    assert read_manifest(a).perturbations[0]["kind"] == spec.kind  # recorded
    result = recompute_tasks(tasks, base, a)
    assert len(result.kept) + sum(result.dropped.values()) == len(tasks)
    assert all(len(result.dropped_idx[r]) == n for r, n in result.dropped.items())
    _through_the_tools(a, result.kept)


@pytest.mark.parametrize("strength", [0.3, 1.0])
def test_pro_schema_drift_is_faithful_and_the_oracle_reads_the_new_names(
    pro_base: tuple[Path, list], tmp_path: Path, strength: float
) -> None:
    base, tasks = pro_base
    out = tmp_path / "p.sqlite"
    made = perturb_org(base, out, [Perturbation(kind="schema_drift", strength=strength, seed=0)])
    again = perturb_org(base, tmp_path / "again.sqlite", [Perturbation(kind="schema_drift", strength=strength, seed=0)])
    other = perturb_org(base, tmp_path / "other.sqlite", [Perturbation(kind="schema_drift", strength=strength, seed=1)])
    assert again.content_hash == made.content_hash  # deterministic by seed
    assert again.perturbations[0]["drift"] == made.perturbations[0]["drift"]
    if strength < 1:
        assert other.perturbations[0]["drift"] != made.perturbations[0]["drift"]
    # Custom fields and objects renamed (the old names refused), standard fields migrated (kept, emptied, their
    # values in the new custom field), checked against the base org.
    drift = check_drift(base, out)
    assert drift["objects"] and drift["renamed"] and drift["migrated"]
    org = LocalOrg(out)
    for old in drift["objects"]:
        with pytest.raises(OrgError, match="INVALID_TYPE"):
            org.query(f"SELECT Id FROM {old} LIMIT 1")
    result = recompute_tasks(tasks, base, out)
    assert result.dropped == {} and [i.answer for i in result.kept] == [i.answer for i in tasks]
    _through_the_tools(out, result.kept)
