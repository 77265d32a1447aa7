"""Choosing what a run plays: --task, --idx, --per-task and --limit, applied in that order."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from crmarena_gym.eval import evaluate, select_instances
from crmarena_gym.tasks import TaskInstance


def _pool() -> list[TaskInstance]:
    # Interleaved tasks, so that "the first N" and "the first N of each" differ.
    abbrevs = ["KQA", "HTU", "KQA", "TCU", "HTU", "KQA", "TCU", "HTU", "KQA"]
    return [TaskInstance(idx=100 + i, task=a, query="q", answer="a") for i, a in enumerate(abbrevs)]


def test_per_task_keeps_the_first_n_of_each_task_in_order() -> None:
    chosen = select_instances(_pool(), per_task=2)
    assert [i.idx for i in chosen] == [100, 101, 102, 103, 104, 106]
    assert Counter(i.abbrev for i in chosen) == {"KQA": 2, "HTU": 2, "TCU": 2}


def test_tasks_idx_per_task_and_limit_compose() -> None:
    pool = _pool()
    assert [i.idx for i in select_instances(pool, tasks=["HTU", "transfer_count"])] == [101, 103, 104, 106, 107]
    assert [i.idx for i in select_instances(pool, tasks=["htu"], per_task=1)] == [101]
    assert [i.idx for i in select_instances(pool, idx=[108, 100])] == [100, 108]
    assert [i.idx for i in select_instances(pool, tasks=["KQA"], idx=[105, 108], limit=1)] == [105]
    assert [i.idx for i in select_instances(pool, per_task=3, limit=4)] == [100, 101, 102, 103]


def test_bad_selections_say_what_is_wrong() -> None:
    pool = _pool()
    with pytest.raises(ValueError, match="unknown task 'XYZ'"):
        select_instances(pool, tasks=["XYZ"])
    with pytest.raises(ValueError, match=r"no instance of NCR .*it has HTU, KQA, TCU"):
        select_instances(pool, tasks=["NCR"])
    with pytest.raises(ValueError, match="with idx 7, 999"):
        select_instances(pool, idx=[100, 999, 7])
    with pytest.raises(ValueError, match=r"of task\(s\) HTU with idx 100"):
        select_instances(pool, tasks=["HTU"], idx=[100])
    with pytest.raises(ValueError, match="per_task must be at least 1, got 0"):
        select_instances(pool, per_task=0)


def test_evaluate_plays_the_selection_and_records_it(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    out = tmp_path / "run"
    run = evaluate(
        "oracle", tasks=nine_tasks, org=env_org, select_tasks=["HTU", "NCR"], per_task=2, out=out, progress=False
    )
    first_two = {a: [i.idx for i in nine_tasks if i.abbrev == a][:2] for a in ("HTU", "NCR")}
    expected = first_two["HTU"] + first_two["NCR"]
    assert sorted(r["idx"] for r in run.results) == sorted(expected)
    assert {r["abbrev"] for r in run.results} == {"HTU", "NCR"}
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["selection"] == {"tasks": ["HTU", "NCR"], "idx": None, "per_task": 2, "limit": None}
    assert metadata["instances"] == 4

    # A resumed run may widen the selection: the played episodes are kept, the new ones played.
    more = evaluate("oracle", tasks=nine_tasks, org=env_org, per_task=2, out=out, resume=True, progress=False)
    assert more.new_episodes == 2 * 9 - 4 and len(more.results) == 18
