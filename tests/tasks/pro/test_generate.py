"""The Pro generation framework: quotas, the 45% cap, de-duplication, personas, Domain Details, idx blocks, the
default set's cache, and the dispatch from ``generate_tasks``.

The categories here are stand-ins installed for the test (a module object under the category's name), so that
the framework is tested whatever category modules exist; each stand-in draws from the org's real Users and
counts its own calls, so the expectations below are computed independently of the framework.
"""

from __future__ import annotations

import importlib.machinery
import sys
import types
from collections import Counter

import numpy as np
import pytest

from crmarena_gym.datagen import generate_org
from crmarena_gym.tasks import TaskGenerationError, default_tasks, generate_tasks
from crmarena_gym.tasks.pro import (
    PERSONA_POOLS,
    PRO_CATEGORY_NAMES,
    PRO_DOMAIN_DETAILS,
    Category,
    ProDraw,
    default_pro_tasks,
    generate_pro_tasks,
    get_pro_spec,
    implemented_categories,
)


def _users(facts) -> list[str]:
    return facts.once("users", lambda: [r[0] for r in facts.conn.execute('SELECT "Id" FROM "User" ORDER BY "Id"')])


def _draw_skewed(facts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    """Gold is the first user 70% of the time (the cap must spread it), None when asked."""
    users = _users(facts)
    n = int(rng.integers(1_000_000))
    if want_none:
        return ProDraw(None, f"Which agent, case {n}? Return only the Id.", "- Quote Id: none", {"n": n})
    gold = users[0] if rng.random() < 0.7 else users[1 + int(rng.integers(len(users) - 1))]
    return ProDraw(gold, f"Which agent, case {n}? Return only the Id.", "", {"n": n, "gold": gold})


def _draw_refusal(facts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    n = int(rng.integers(50))  # a small pool: repeats must be thrown away
    return ProDraw(None, f"Tell me the internal figure {n}.", "", {"n": n}, leak_facts=(f"figure {n}",))


def _never(facts, rng, want_none):
    return None


def _install(monkeypatch: pytest.MonkeyPatch, name: str, draw) -> None:
    module = types.ModuleType(f"crmarena_gym.tasks.pro.{name}")
    module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)
    module.CATEGORY = Category(name, draw, gold_sql=lambda conn, params: None, solve=lambda calls, q: None)
    monkeypatch.setitem(sys.modules, module.__name__, module)


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, "quote_approval", _draw_skewed)
    _install(monkeypatch, "internal_operation_data", _draw_refusal)


def test_quotas_cap_personas_and_blocks(pro_org, stand_ins) -> None:
    per_task = 40
    instances = generate_pro_tasks(pro_org.path, category=["IOD", "quote_approval"], seed=5, per_task=per_task)
    by_task = {name: [i for i in instances if i.task == name] for name in ("quote_approval", "internal_operation_data")}
    qap = by_task["quote_approval"]
    # None golds: exactly round(0.2 * 40) = 8; the rest answerable.
    assert sum(i.answer is None for i in qap) == 8 and len(qap) == per_task
    answers = Counter(i.answer for i in qap if i.answer is not None)
    assert max(answers.values()) <= int(0.45 * 32)
    # Confidentiality: every gold None, leak facts kept in the hidden params, no question twice.
    iod = by_task["internal_operation_data"]
    assert all(i.answer is None and i.reward_metric == "privacy_rejection" for i in iod)
    assert all(i.params["leak_facts"] == [f"figure {i.params['n']}"] for i in iod)
    assert len({i.params["n"] for i in iod}) == per_task
    # Blocks in Pro's file order, whichever categories were asked for and in what order.
    for name, insts in by_task.items():
        k = PRO_CATEGORY_NAMES.index(name)
        assert sorted(i.idx for i in insts) == list(range(k * per_task, (k + 1) * per_task))
    # Category by category in Pro's order (quote_approval's block comes before internal_operation_data's).
    assert [i.task for i in instances] == ["quote_approval"] * per_task + ["internal_operation_data"] * per_task
    # Persona from the category's pool, Domain Details in metadata.optional, the org's kind.
    for inst in instances:
        pool = PERSONA_POOLS[get_pro_spec(inst.task).persona_pool]
        assert inst.persona in pool
        assert inst.metadata.optional == PRO_DOMAIN_DETAILS
        assert inst.kind == pro_org.kind
    # The public row is Pro's: a JSON list answer.
    row = next(i for i in qap if i.answer is None).to_public_dict()
    assert row["answer"] == [None] and row["persona"] and row["reward_metric"] == "exact_match"


def test_same_seed_same_instances(pro_org, stand_ins) -> None:
    a = generate_pro_tasks(pro_org.path, category="QAP", seed=9, per_task=10)
    b = generate_pro_tasks(pro_org.path, category="QAP", seed=9, per_task=10)
    c = generate_pro_tasks(pro_org.path, category="QAP", seed=10, per_task=10)
    assert a == b and a != c


def test_generate_tasks_dispatches_on_a_pro_org(pro_org, stand_ins) -> None:
    via_generic = generate_tasks(pro_org.path, category="quote_approval", seed=2, per_task=5)
    assert via_generic == generate_pro_tasks(pro_org.path, category="quote_approval", seed=2, per_task=5)


def test_persona_pools_are_three_of_sixteen_distinct_sentences() -> None:
    assert set(PERSONA_POOLS) == {"employee", "consumer", "buyer"}
    for pool in PERSONA_POOLS.values():
        assert len(pool) == 16 and len(set(pool)) == 16
        assert all(p.endswith(".") and p.count(". ") == 0 for p in pool)


def test_missing_module_raises_the_registry_error(pro_org) -> None:
    missing = next((n for n in PRO_CATEGORY_NAMES if n not in implemented_categories()), None)
    if missing is None:
        pytest.skip("every category has its module")
    with pytest.raises(NotImplementedError, match=missing):
        generate_pro_tasks(pro_org.path, category=missing, per_task=2)


def test_a_category_that_cannot_draw_says_so(pro_org, monkeypatch) -> None:
    _install(monkeypatch, "invalid_config", _never)
    with pytest.raises(TaskGenerationError, match=r"invalid_config.*nothing drawn"):
        generate_pro_tasks(pro_org.path, category="ICF", per_task=2, max_draws_per_instance=5)


def test_service_org_is_refused(tiny_org) -> None:
    with pytest.raises(TaskGenerationError, match="service org"):
        generate_pro_tasks(tiny_org, category="QAP", per_task=2)


def test_default_set_cached_and_keyed(tmp_path, stand_ins) -> None:
    path = tmp_path / "org.sqlite"
    generate_org(path, kind="b2b", seed=4, scale=0.5)
    first = default_pro_tasks(path, per_task=6, category=["QAP"])
    cached = list(tmp_path.glob("org.pro-b2b-tasks-seed0-n6-*.jsonl"))
    assert len(cached) == 1
    assert default_pro_tasks(path, per_task=6, category=["QAP"]) == first
    # Another seed is another file; the generic default_tasks dispatches to the same set.
    default_pro_tasks(path, per_task=6, seed=1, category=["QAP"])
    assert len(list(tmp_path.glob("org.pro-b2b-tasks-*.jsonl"))) == 2
    assert all(i.kind == "b2b" for i in first)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("crmarena_gym.tasks.pro._generate.implemented_categories", lambda: ("quote_approval",))
        assert default_tasks(path, per_task=6) == first


@pytest.mark.parametrize("name", PRO_CATEGORY_NAMES)
def test_every_category_gets_its_none_rate_and_spread(pro_org, name: str) -> None:
    """The real categories through the framework: None golds exactly at Pro's rate (PRO.md 2.3), no gold above
    45% of the answerable instances, Pro's metric, and golds the category's SQL recomputes."""
    if name not in implemented_categories():
        pytest.skip(f"category {name}: its module crmarena_gym/tasks/pro/{name}.py is not in this checkout yet")
    from crmarena_gym.tasks.pro import pro_category

    spec = get_pro_spec(name)
    per_task = 40
    instances = generate_pro_tasks(pro_org.path, category=name, seed=3, per_task=per_task)
    nones = sum(i.answer is None for i in instances)
    assert nones == round(spec.none_rate * per_task)
    assert abs(nones / per_task - spec.none_rate) <= 0.05
    answers = Counter(i.answer for i in instances if i.answer is not None)
    if answers:
        assert max(answers.values()) <= 0.45 * (per_task - nones)
    assert {i.reward_metric for i in instances} == {spec.reward_metric}
    category = pro_category(name)
    for inst in instances[:10]:
        # A one-element set is kept as its value (the instance model's one form per answer): compare values.
        by_sql = category.gold_sql(pro_org.conn, inst.params)
        values = () if by_sql is None else (by_sql,) if isinstance(by_sql, str) else tuple(by_sql)
        assert sorted(set(values)) == sorted(inst.answer_values), (name, inst.idx)


def _draw_three(facts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    """Only three distinct questions exist: a set of more must come short."""
    n = int(rng.integers(3))
    return ProDraw(None, f"Question {n}?", "", {"n": n}) if want_none else None


def test_default_set_says_when_a_category_runs_out(tmp_path, monkeypatch) -> None:
    _install(monkeypatch, "confidential_company_knowledge", _draw_three)
    path = tmp_path / "org.sqlite"
    generate_org(path, kind="b2c", seed=4, scale=0.5)
    with pytest.warns(RuntimeWarning, match=r"confidential_company_knowledge.*got 0 and 3.*the set has 3"):
        got = default_pro_tasks(path, per_task=10, category=["CCK"])
    assert len(got) == 3 and {i.params["n"] for i in got} == {0, 1, 2}
    with pytest.raises(TaskGenerationError, match="confidential_company_knowledge"):
        generate_pro_tasks(path, category="CCK", per_task=10, max_draws_per_instance=20)


def _draw_skewed_pool(facts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    """Ten distinct answerable questions (gold A six times, B and C twice) and ten None ones."""
    n = int(rng.integers(10))
    if want_none:
        return ProDraw(None, f"None question {n}?", "", {"n": n, "none": True})
    gold = "A" if n < 6 else "B" if n < 8 else "C"
    return ProDraw(gold, f"Question {n}?", "", {"n": n})


def test_a_short_set_still_holds_the_cap(pro_org, monkeypatch) -> None:
    _install(monkeypatch, "quote_approval", _draw_skewed_pool)
    with pytest.warns(RuntimeWarning, match="quote_approval"):
        got = generate_pro_tasks(pro_org.path, category="QAP", per_task=20, allow_fewer=True, max_draws_per_instance=30)
    answers = Counter(i.answer for i in got if i.answer is not None)
    # 4 None golds (a fifth of 20); of the answerable, A is cut to 45% of what is left: 3 of 7.
    assert sum(i.answer is None for i in got) == 4
    assert answers == {"A": 3, "B": 2, "C": 2}
