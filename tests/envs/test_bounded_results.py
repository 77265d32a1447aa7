"""Results larger than an observation can show: the org shapes only the rows that can be shown, the env
renders only as far as its bound, and the observation says how many rows the result has (issue 14.6).

Expectations come from raw SQL on the org file and from rendering the whole result the old way."""

from __future__ import annotations

import json
import pickle
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.envs import CRMArenaEnv, render_head, render_value
from crmarena_gym.org import LocalOrg, Org
from crmarena_gym.tools import TruncatedRows, clean_records, issue_soql_query, query_result_budget

BIG = "SELECT Id, Subject, Status, Contact.Name, Account.Name FROM Case ORDER BY CreatedDate, Id"
TASK = {"idx": 0, "task": "BRI", "query": "Which state?", "answer": "CA"}


def _count(path: Path, sql: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


@pytest.fixture(scope="module")
def org(env_org: Path) -> LocalOrg:
    return LocalOrg(env_org)


@pytest.mark.parametrize(
    "soql",
    [
        BIG,
        "SELECT Status, COUNT(Id) n FROM Case GROUP BY Status ORDER BY Status",
        "SELECT Id, (SELECT Id, Subject FROM EmailMessages ORDER BY Id) FROM Case ORDER BY Id",
        "SELECT Id, Name FROM Account WHERE Name LIKE '%a%' ORDER BY Name, Id",
    ],
)
@pytest.mark.parametrize("keep", [1, 7, 10_000])
def test_the_head_is_the_start_of_the_whole_result(org: LocalOrg, soql: str, keep: int) -> None:
    whole = org.query(soql)
    head = org.query_head(soql, keep)
    assert head["records"] == whole["records"][:keep]
    assert head["totalSize"] == whole["totalSize"]
    assert head["done"] is (keep >= whole["totalSize"])


def test_the_head_counts_every_row_as_sql_does(org: LocalOrg, env_org: Path) -> None:
    head = org.query_head(BIG, 5)
    assert len(head["records"]) == 5
    assert head["totalSize"] == _count(env_org, 'SELECT COUNT(*) FROM "Case"') > 5
    with pytest.raises(ValueError, match="got -1"):
        org.query_head(BIG, -1)
    with pytest.raises(ValueError, match="got True"):
        org.query_head(BIG, True)  # type: ignore[arg-type]


class _Wrapped(Org):
    """An Org of a user's own: only ``query`` and ``search``, so the default ``query_head`` serves it."""

    def __init__(self, inner: LocalOrg) -> None:
        self.inner = inner

    def query(self, soql: str) -> dict[str, Any]:
        return self.inner.query(soql)

    def search(self, sosl: str) -> dict[str, Any]:
        return self.inner.search(sosl)


def test_an_org_without_its_own_head_gets_the_default(org: LocalOrg) -> None:
    assert _Wrapped(org).query_head(BIG, 3) == org.query_head(BIG, 3)
    assert _Wrapped(org).query_head("SELECT COUNT() FROM Case", 3) == org.query("SELECT COUNT() FROM Case")


def test_the_query_tool_keeps_the_head_only_under_a_budget(org: LocalOrg) -> None:
    whole = issue_soql_query(org, BIG)
    assert type(whole) is list
    with query_result_budget(12):  # 12 characters: at most 12 // 4 + 1 = 4 rows
        head = issue_soql_query(org, BIG)
        small = issue_soql_query(org, "SELECT Id FROM Case ORDER BY Id LIMIT 3")
    assert isinstance(head, TruncatedRows) and head.total == len(whole)
    assert head == clean_records(org.query(BIG)["records"][:4])
    assert type(small) is list and len(small) == 3
    assert pickle.loads(pickle.dumps(head)).total == head.total
    assert type(issue_soql_query(org, BIG)) is list  # the limit ended with the block
    with pytest.raises(ValueError, match="got 0"):
        with query_result_budget(0):
            pass


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ``max_records`` of every ``LocalOrg.query_head`` call while the test runs."""
    calls: list[int] = []
    head = LocalOrg.query_head

    def spy(self: LocalOrg, soql: str, max_records: int) -> dict[str, Any]:
        calls.append(max_records)
        return head(self, soql, max_records)

    monkeypatch.setattr(LocalOrg, "query_head", spy)
    return calls


def test_narrow_rows_are_asked_for_again_until_they_fill_the_budget(
    org: LocalOrg, env_org: Path, asked: list[int]
) -> None:
    soql = "SELECT Id FROM PricebookEntry ORDER BY Id"
    total = _count(env_org, 'SELECT COUNT(*) FROM "PricebookEntry"')
    assert 2048 < total < 25_001  # 2,048 ids render in under 100,000 characters; all of them do not
    with query_result_budget(100_000):
        rows = issue_soql_query(org, soql)
    ids = [r["Id"] for r in org.query(soql)["records"]]
    shown = len(str([{"Id": i} for i in ids[:2048]]))
    assert asked == [2048, int(100_000 * 1.25 * 2048 / shown) + 1]
    assert len(str(rows)) > 100_000  # enough to fill the observation
    assert isinstance(rows, TruncatedRows) and rows.total == total and [r["Id"] for r in rows] == ids[: len(rows)]


@pytest.mark.parametrize("fmt", ["python", "json"])
def test_render_head_is_the_exact_start_of_the_full_rendering(fmt: str) -> None:
    rows = [{"Id": f"500{i:04d}", "Subject": "é" * (i % 5), "Amount": i / 3, "Open": i % 2 == 0} for i in range(300)]
    full = json.dumps(rows, ensure_ascii=False) if fmt == "json" else str(rows)
    assert render_value(rows, fmt) == full  # type: ignore[arg-type]
    for limit in (1, 50, 999, len(full) - 1, len(full), 10 * len(full)):
        text, whole = render_head(rows, fmt, limit)  # type: ignore[arg-type]
        assert full.startswith(text)
        assert whole is (text == full)
        assert len(text) > limit or whole
    assert render_head("not a list", "python", 3) == ("not a list", True)


def test_a_huge_result_is_shaped_and_rendered_only_as_far_as_the_observation_reaches(
    org: LocalOrg, env_org: Path, asked: list[int]
) -> None:
    env = CRMArenaEnv(org=env_org, tasks=[TASK], max_observation_chars=1000)
    env.reset(seed=0)
    obs, _, _, _, info = env.step("execute " + BIG)
    total = _count(env_org, 'SELECT COUNT(*) FROM "Case"')
    old = "Salesforce instance output: " + str(clean_records(org.query(BIG)["records"]))  # the whole rendering
    assert asked == [1000 // 4 + 1] and total > 251  # never more rows than 1,000 characters can show
    assert (
        obs == old[:1000] + f"\n[observation truncated: the result has {total} rows, more than fit; narrow the query]"
    )
    assert isinstance(info["result"].value, TruncatedRows) and len(info["result"].value) == 251


def test_a_result_that_fits_is_unchanged(env_org: Path, org: LocalOrg) -> None:
    soql = "SELECT Id, Subject FROM Case ORDER BY Id LIMIT 5"
    for fmt in ("python", "json"):
        env = CRMArenaEnv(org=env_org, tasks=[TASK], max_observation_chars=2000, observation_format=fmt)
        env.reset(seed=0)
        obs, *_ = env.step("execute " + soql)
        rows = clean_records(org.query(soql)["records"])
        shown = json.dumps(rows, ensure_ascii=False) if fmt == "json" else str(rows)
        assert obs == "Salesforce instance output: " + shown


def test_a_long_function_result_that_is_not_rows_keeps_its_character_note(env_org: Path) -> None:
    env = CRMArenaEnv(org=env_org, tasks=[TASK], max_observation_chars=1000)
    env.reset(seed=0)
    text = "x" * 1500
    assert env._bound(text) == "x" * 1000 + "\n[observation truncated: 500 more characters]"
