"""The nine generators on full-size generated orgs: the oracle reaches every gold answer through the tools.

Three orgs (seeds 0, 1 and 2, scale 1: the original's size) each get a full task set of 130
instances per task, drawn with the org's seed. For every instance the oracle solver, which only
knows the hidden parameters, calls the agent-facing tools (and so the SOQL/SOSL engine) and must
land on the gold answer that plain SQL computed. The answers of the judgement tasks are also checked
here against the tables and the latent variables directly.
"""

from __future__ import annotations

import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.datagen import generate_org, read_latent
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import (
    TASK_SPECS,
    TaskInstance,
    generate_tasks,
    get_task_spec,
    instance_key,
    load_tasks,
    oracle_trace,
    save_tasks,
    score_answer,
)
from crmarena_gym.tasks._generate import name_words
from crmarena_gym.tools import toolset

ORG_SEEDS = (0, 1, 2)
UNANSWERABLE_TASKS = {"TII", "NED", "HTU", "TCU", "PVI"}


@pytest.fixture(scope="module")
def orgs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("generated_orgs")
    paths = {}
    for seed in ORG_SEEDS:
        paths[seed] = root / f"org{seed}.sqlite"
        generate_org(paths[seed], seed=seed, scale=1.0)
    return paths


@pytest.fixture(scope="module")
def task_sets(orgs: dict[int, Path]) -> dict[int, list[TaskInstance]]:
    return {seed: generate_tasks(path, seed=seed) for seed, path in orgs.items()}


@pytest.mark.parametrize("seed", ORG_SEEDS)
def test_a_full_set_numbered_like_the_original(task_sets: dict[int, list[TaskInstance]], seed: int) -> None:
    instances = task_sets[seed]
    assert len(instances) == 1170
    for spec in TASK_SPECS:
        block = [i for i in instances if i.task == spec.name]
        assert [i.idx for i in block] == list(range(spec.first_idx, spec.first_idx + 130))
        assert len({instance_key(i.task, i.params) for i in block}) == 130  # no question twice


@pytest.mark.parametrize("seed", ORG_SEEDS)
def test_the_oracle_solves_every_instance_through_the_tools(
    orgs: dict[int, Path], task_sets: dict[int, list[TaskInstance]], seed: int
) -> None:
    org = LocalOrg(orgs[seed])
    functions = set(toolset("functions").names)
    failures = []
    used: dict[str, set[str]] = defaultdict(set)
    for inst in task_sets[seed]:
        trace = oracle_trace(inst, org)
        score = score_answer(trace.answer, inst.answer, metric=inst.reward_metric)
        if score.reward != 1.0:
            failures.append((inst.idx, inst.abbrev, trace.answer, inst.answer))
        assert trace.actions[-1].name == "submit" and trace.actions[-1].arguments == {"content": trace.answer}
        used[inst.abbrev].update(c.name for c in trace.calls)
    assert not failures, failures[:10]
    assert all(names <= functions for names in used.values())
    # Each task's path goes through the org, not just through calculations.
    assert "get_purchase_history" in used["NED"] and "search_products" in used["NED"]
    assert "search_knowledge_articles" in used["PVI"] and "get_email_messages_by_case_id" in used["PVI"]
    assert {"get_cases", "get_agents_with_max_cases"} <= used["NCR"]


@pytest.mark.parametrize("seed", ORG_SEEDS)
def test_answers_are_not_degenerate(task_sets: dict[int, list[TaskInstance]], seed: int) -> None:
    by_task: dict[str, list[str | None]] = defaultdict(list)
    for inst in task_sets[seed]:
        by_task[inst.abbrev].append(inst.answer)
    for abbrev, answers in by_task.items():
        top, count = Counter(answers).most_common(1)[0]
        assert count / len(answers) <= 0.45, (abbrev, top, count)
        null_share = answers.count(None) / len(answers)
        if abbrev in UNANSWERABLE_TASKS:
            assert 0.25 <= null_share <= 0.35, (abbrev, null_share)
        else:
            assert null_share == 0, abbrev


def test_the_same_seed_gives_the_same_instances(
    orgs: dict[int, Path], task_sets: dict[int, list[TaskInstance]]
) -> None:
    again = generate_tasks(orgs[0], seed=0)
    assert [i.model_dump() for i in again] == [i.model_dump() for i in task_sets[0]]
    other = generate_tasks(orgs[0], seed=9, per_task=30, tasks=["NCR", "NED", "PVI", "KQA"])
    first = {instance_key(i.task, i.params) for i in task_sets[0]}
    assert len({instance_key(i.task, i.params) for i in other} - first) > 60  # mostly new questions


def _rows(conn: sqlite3.Connection, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return conn.execute(sql, params).fetchall()


@pytest.mark.parametrize("seed", ORG_SEEDS)
def test_routing_answers_recomputed_in_python(
    orgs: dict[int, Path], task_sets: dict[int, list[TaskInstance]], seed: int
) -> None:
    conn = sqlite3.connect(orgs[seed])
    cases = _rows(
        conn,
        'SELECT c.OwnerId, c.Status, c.IssueId__c, oi.Product2Id FROM "Case" c '
        "LEFT JOIN OrderItem oi ON oi.Id = c.OrderItemId__c",
    )
    conn.close()
    for inst in (i for i in task_sets[seed] if i.abbrev == "NCR"):
        issue, product = inst.params["issue_id"], inst.params["product_id"]
        agents = {owner for owner, *_ in cases}
        on_issue = Counter(o for o, s, i, _ in cases if s == "Closed" and i == issue)
        on_product = Counter(o for o, s, _, p in cases if s == "Closed" and p == product)
        open_cases = Counter(o for o, s, *_ in cases if s != "Closed")
        # Lexicographic: most closed on the issue, then on the product, then fewest open cases.
        ranked = sorted(agents, key=lambda a: (-on_issue[a], -on_product[a], open_cases[a]))
        best = ranked[0]
        assert (on_issue[ranked[1]], on_product[ranked[1]], open_cases[ranked[1]]) != (
            on_issue[best],
            on_product[best],
            open_cases[best],
        ), "a tie was emitted"
        assert inst.answer == best


@pytest.mark.parametrize("seed", ORG_SEEDS)
def test_purchase_answers_checked_against_the_orders(
    orgs: dict[int, Path], task_sets: dict[int, list[TaskInstance]], seed: int
) -> None:
    conn = sqlite3.connect(orgs[seed])
    for inst in (i for i in task_sets[seed] if i.abbrev == "NED"):
        p = inst.params
        bought = _rows(
            conn,
            'SELECT DISTINCT p.Id, p.Name FROM Contact ct JOIN "Order" o ON o.AccountId = ct.AccountId '
            "JOIN OrderItem oi ON oi.OrderId = o.Id JOIN Product2 p ON p.Id = oi.Product2Id "
            "WHERE ct.Id = ? AND o.Status = 'Activated' AND o.EffectiveDate = ?",
            p["contact_id"],
            p["purchase_date"],
        )
        matching = [pid for pid, name in bought if name_words(p["search_term"]) <= name_words(name)]
        assert matching == ([inst.answer] if inst.answer else []), p
        assert p["product_id"] == inst.answer
        assert f"- Contact Id of the customer you are assisting: {p['contact_id']}" in inst.metadata.required
        assert f"- Today's date: {p['today']}" in inst.metadata.required
    conn.close()


@pytest.mark.parametrize("seed", ORG_SEEDS)
def test_violations_and_facts_checked_against_latent_and_articles(
    orgs: dict[int, Path], task_sets: dict[int, list[TaskInstance]], seed: int
) -> None:
    latent = read_latent(orgs[seed])
    conn = sqlite3.connect(orgs[seed])
    issue_of = dict(_rows(conn, 'SELECT Id, IssueId__c FROM "Case"'))
    bodies = dict(_rows(conn, "SELECT Id, FAQ_Answer__c FROM Knowledge__kav"))
    for inst in task_sets[seed]:
        if inst.abbrev == "PVI":
            case = inst.params["case_id"]
            texts = [b for (b,) in _rows(conn, "SELECT Body FROM LiveChatTranscript WHERE CaseId = ?", case)]
            texts += [b for (b,) in _rows(conn, "SELECT TextBody FROM EmailMessage WHERE ParentId = ?", case)]
            if inst.answer is None:
                assert case in latent["clean_cases"] and texts
            else:
                violation = latent["violations"][case]
                assert inst.answer == violation["article_id"] == latent["policy_articles"][issue_of[case]]
                assert any(violation["evidence"] in t for t in texts)
        elif inst.abbrev == "KQA":
            assert inst.answer and inst.answer in bodies[inst.params["article_id"]]
            fact = {"article_id": inst.params["article_id"], "question": inst.params["question"], "answer": inst.answer}
            assert fact in latent["kqa_facts"]
    conn.close()


# What the issue asks the hidden parameters to hold, per task.
_PARAMS = {
    "HTU": {"today", "start", "end", "n_cases", "direction"},
    "TCU": {"today", "start", "end", "n_cases", "direction"},
    "TII": {"today", "start", "end", "product_id"},
    "MTA": {"today", "start", "end", "product_id"},
    "BRI": {"today", "start", "end"},
    "NCR": {"today", "issue_id", "product_id", "case_subject", "case_description"},
    "NED": {"today", "contact_id", "purchase_date", "product_id", "search_term", "description"},
    "PVI": {"today", "case_id", "article_id", "search_term"},
    "KQA": {"today", "article_id", "search_term"},
}


def test_params_hold_what_the_gold_was_computed_from(task_sets: dict[int, list[TaskInstance]], tmp_path: Path) -> None:
    for inst in task_sets[0]:
        assert _PARAMS[inst.abbrev] <= set(inst.params), inst.abbrev
        assert inst.persona == get_task_spec(inst.task).persona
        assert inst.params["today"] not in inst.query or inst.abbrev == "NED"  # dates go in the context
    path = save_tasks(task_sets[0], tmp_path / "set.jsonl")
    assert load_tasks(path) == task_sets[0]


@pytest.mark.parametrize("task_seed", [4, 5])
def test_named_entity_instances_stay_unambiguous_through_the_product_search(
    orgs: dict[int, Path], task_seed: int
) -> None:
    # search_products searches every product field, as the original's does (IN ALL FIELDS, and Salesforce
    # ignores the IN clause for products): a product whose description alone holds the search term is a
    # candidate too, and a draw it would make ambiguous is refused. Task seeds 4 and 5 on org 0 drew such
    # instances while candidates were matched by name only.
    org = LocalOrg(orgs[0])
    instances = generate_tasks(orgs[0], seed=task_seed, per_task=130, tasks=["NED"])
    wrong = [
        (inst.idx, answer, inst.answer)
        for inst in instances
        if (answer := oracle_trace(inst, org).answer) != ("None" if inst.answer is None else inst.answer)
    ]
    assert not wrong, wrong[:5]
