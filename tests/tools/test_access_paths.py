"""The composite indexes of generated orgs change how SQLite reads the org, never what the tools answer."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.org import LocalOrg
from crmarena_gym.schema import COMPOSITE_INDEXES
from crmarena_gym.tasks import generate_tasks, oracle_trace
from crmarena_gym.tools import get_agent_transferred_cases_by_period
from tests.tools.test_queries import Recording

# The tools that read the history per agent or per case: their results are sorted, so equal to the letter.
_HISTORY_TOOLS = {
    "get_agent_handled_cases_by_period",
    "get_non_transferred_case_ids",
    "get_agent_transferred_cases_by_period",
}


@pytest.fixture(scope="module")
def bare_org(env_org: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of :func:`env_org` without the composite indexes and the planner's statistics."""
    path = tmp_path_factory.mktemp("bare") / "org.sqlite"
    shutil.copyfile(env_org, path)
    conn = sqlite3.connect(path)
    for obj, indexes in COMPOSITE_INDEXES.items():
        for suffix, _ in indexes:
            conn.execute(f'DROP INDEX "ix_{obj}_{suffix}"')  # no IF EXISTS: each must have been there
    conn.execute("DROP TABLE sqlite_stat1")
    conn.commit()
    conn.close()
    return path


def _unordered(value: Any) -> Any:
    """``value`` with every list sorted (by JSON text): the records of ``get_cases`` come in the org's
    order, which is the plan's."""
    if isinstance(value, list):
        return sorted((_unordered(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, dict):
        return {k: _unordered(v) for k, v in value.items()}
    return value


def test_the_oracle_reads_the_same_results_without_the_composite_indexes(env_org: Path, bare_org: Path) -> None:
    instances = generate_tasks(env_org, seed=5, per_task=4, tasks=["HTU", "TCU"], null_share=0.0)
    indexed, bare = LocalOrg(env_org), LocalOrg(bare_org)
    history_calls = 0
    for inst in instances:
        today = inst.params["today"]
        with_indexes = oracle_trace(inst, indexed.with_today(today))
        without = oracle_trace(inst, bare.with_today(today))
        assert with_indexes.answer == without.answer == inst.answer
        assert [c.name for c in with_indexes.calls] == [c.name for c in without.calls]
        for a, b in zip(with_indexes.calls, without.calls, strict=True):
            assert _unordered(a.arguments) == _unordered(b.arguments)
            if a.name in _HISTORY_TOOLS:
                history_calls += 1
                assert a.result == b.result and list(a.result) == list(b.result)  # the same order too
            else:
                assert _unordered(a.result) == _unordered(b.result)
    assert history_calls >= 2 * len(instances)


def test_the_transfers_of_a_few_agents_read_each_agents_rows_already_grouped(env_org: Path) -> None:
    org = LocalOrg(env_org, today="2023-01-01")
    with sqlite3.connect(env_org) as conn:
        agents = [
            r[0]
            for r in conn.execute(
                'SELECT "OldValue__c" FROM "CaseHistory__c" WHERE "OldValue__c" IS NOT NULL GROUP BY 1 LIMIT 2'
            )
        ]
        sent = Recording(org)
        counts = get_agent_transferred_cases_by_period(sent, "2021-04-01T00:00:00Z", "2021-07-01T00:00:00Z", agents)
        assert isinstance(counts, dict) and len(sent.sent) == 1
        sql, params = org.explain(sent.sent[0])
        plan = " / ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    # Each agent's transfers in the window are one range of the index, in agent order: no sort.
    assert "COVERING INDEX ix_CaseHistory__c_OldValue_Field_CreatedDate" in plan
    assert "TEMP B-TREE" not in plan
