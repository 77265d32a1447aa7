"""Pro's published B2B task file (../shared/crmarena-pro/b2b_tasks.json) loads unchanged, with PRO.md's figures.

The expected counts are PRO.md section 3.0's table and section 2.1's conventions (577 None golds, 80 multi-element
activity_priority golds, 8 two-factor BANT golds and 30 joined sales_insight_mining golds), not read from our code.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from crmarena_gym.tasks import load_tasks, missing_gold_records

PRO_FILE = Path(__file__).resolve().parents[3] / ".." / "shared" / "crmarena-pro" / "b2b_tasks.json"

# PRO.md section 3.0: (n, None golds) per category.
EXPECTED = {
    "handle_time": (100, 20),
    "transfer_count": (100, 20),
    "top_issue_identification": (100, 20),
    "monthly_trend_analysis": (100, 0),
    "best_region_identification": (100, 20),
    "sales_amount_understanding": (100, 20),
    "sales_cycle_understanding": (100, 20),
    "conversion_rate_comprehension": (100, 20),
    "knowledge_qa": (100, 0),
    "sales_insight_mining": (100, 0),
    "named_entity_disambiguation": (100, 20),
    "wrong_stage_rectification": (100, 20),
    "activity_priority": (100, 20),
    "case_routing": (100, 0),
    "lead_routing": (100, 0),
    "lead_qualification": (100, 20),
    "policy_violation_identification": (100, 77),
    "quote_approval": (100, 20),
    "invalid_config": (100, 20),
    "private_customer_information": (80, 80),
    "confidential_company_knowledge": (80, 80),
    "internal_operation_data": (80, 80),
}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    if not PRO_FILE.is_file():
        pytest.skip(f"Pro's B2B task file is not at {PRO_FILE} (../shared/crmarena-pro/b2b_tasks.json)")
    return json.loads(PRO_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def tasks(rows: list[dict]):
    return load_tasks(PRO_FILE)


def test_counts_per_category(tasks) -> None:
    assert len(tasks) == 2140
    assert {i.kind for i in tasks} == {"b2b"}
    n = Counter(i.task for i in tasks)
    nones = Counter(i.task for i in tasks if i.answer is None)
    assert {t: (n[t], nones[t]) for t in n} == EXPECTED
    assert sum(nones.values()) == 577


def test_metrics_and_idx_blocks(tasks) -> None:
    metrics = Counter(i.reward_metric for i in tasks)
    assert metrics == {"exact_match": 1700, "fuzzy_match": 200, "privacy_rejection": 240}
    # Each category is one contiguous idx block starting at its spec's first_idx.
    for name in EXPECTED:
        idxs = sorted(i.idx for i in tasks if i.task == name)
        spec = next(i.spec for i in tasks if i.task == name)
        assert idxs == list(range(spec.first_idx, spec.first_idx + spec.count)), name


def test_joined_golds_become_sets(rows, tasks) -> None:
    by_idx = {i.idx: i for i in tasks}
    joined = [
        r for r in rows if r["task"] in ("lead_qualification", "sales_insight_mining") and "," in (r["answer"][0] or "")
    ]
    assert Counter(r["task"] for r in joined) == {"lead_qualification": 8, "sales_insight_mining": 30}
    for row in joined:
        expected = {part.strip() for part in row["answer"][0].split(",")}
        assert set(by_idx[row["idx"]].answer) == expected
        assert len(by_idx[row["idx"]].answer) == len(expected)  # repeats dropped (PRO.md section 8 defect 3)


def test_activity_priority_sets(rows, tasks) -> None:
    by_idx = {i.idx: i for i in tasks}
    multi = [r for r in rows if len(r["answer"]) > 1]
    assert len(multi) == 80 and {r["task"] for r in multi} == {"activity_priority"}
    for row in multi:
        assert set(by_idx[row["idx"]].answer) == set(row["answer"])


def test_public_rows_are_pros_rows(rows, tasks) -> None:
    by_idx = {i.idx: i for i in tasks}
    for row in rows:
        public = by_idx[row["idx"]].to_public_dict()
        assert set(public) == set(row)
        for key in ("task", "query", "persona", "metadata", "reward_metric"):
            assert public[key] == row[key], (row["idx"], key)
        if row["task"] not in ("lead_qualification", "sales_insight_mining"):
            assert sorted(public["answer"], key=str) == sorted(row["answer"], key=str), row["idx"]


def test_loaded_for_b2c_when_asked(tasks) -> None:
    b2c = load_tasks(PRO_FILE, kind="b2c")
    assert {i.kind for i in b2c} == {"b2c"} and len(b2c) == len(tasks)


@pytest.mark.filterwarnings("ignore:the b2b org")
def test_refused_on_an_org_it_was_not_made_for(tasks, tmp_path) -> None:
    from crmarena_gym.datagen import generate_org
    from crmarena_gym.org import LocalOrg

    path = tmp_path / "b2b.sqlite"
    generate_org(path, kind="b2b", seed=3, scale=0.2)
    missing = missing_gold_records(tasks, LocalOrg(path))
    flagged = {idx for idx, _ in missing}
    # Every instance whose gold or context names a record is flagged: the ids of Pro's live org are not ours.
    assert len(flagged) > 1400
    assert 0 in flagged  # lead_qualification's Lead id in the context
    assert 1760 in flagged  # quote_approval's gold article
