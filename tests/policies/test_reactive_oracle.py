"""The reactive oracle: 1.0 with no faults on every task family (through the same calls as the replaying
oracle), honest degradation under ToolResultDropout, retries of transient errors, and its last turn kept
for the answer."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from crmarena_gym.eval import evaluate
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import TASK_ABBREVS, TaskInstance, generate_tasks, oracle_trace


@pytest.fixture(scope="module")
def every_task(env_org: Path) -> list[TaskInstance]:
    """Three generated instances of each of the nine tasks (some unanswerable)."""
    return generate_tasks(env_org, seed=5, per_task=3)


def _dropout(p: float, mode: str) -> list[dict]:
    return [{"name": "ToolResultDropout", "kwargs": {"p": p, "mode": mode}}]


def _calls(record: dict) -> list[dict]:
    return [json.loads(step["action"]) for step in record["trajectory"][1:]]


def test_solves_every_task_family_with_the_oracles_own_calls(env_org: Path, every_task: list[TaskInstance]) -> None:
    run = evaluate("reactive-oracle", tasks=every_task, org=env_org, progress=False)
    assert {r["abbrev"] for r in run.results} == set(TASK_ABBREVS)
    assert [r["reward"] for r in run.results] == [1.0] * len(every_task)
    org = LocalOrg(env_org)
    by_idx = {inst.idx: inst for inst in every_task}
    for record in run.results:
        # Nothing lost: it asks exactly what the replaying oracle asks, except a second look at an empty
        # result (a lost result looks the same), and answers the gold.
        trace = oracle_trace(by_idx[record["idx"]], org)
        expected = [{"name": c.name, "arguments": c.arguments} for c in trace.actions]
        calls = _calls(record)
        deduplicated = [c for n, c in enumerate(calls) if n == 0 or c != calls[n - 1]]
        assert deduplicated == expected
        assert record["submitted"] == record["gold"] or (record["gold"] is None and record["submitted"] == "None")


def test_degrades_under_dropout_where_the_replaying_oracle_does_not(
    env_org: Path, every_task: list[TaskInstance]
) -> None:
    replayed = evaluate("oracle", tasks=every_task, org=env_org, wrappers=_dropout(0.5, "corrupt"), progress=False)
    assert replayed.summary["all"]["accuracy"] == 1.0  # it never reads what it is shown
    for mode in ("drop", "truncate", "corrupt"):
        run = evaluate("reactive-oracle", tasks=every_task, org=env_org, wrappers=_dropout(0.5, mode), progress=False)
        accuracy = run.summary["all"]["accuracy"]
        assert 0.0 < accuracy < 1.0, (mode, accuracy)
        hit = [r for r in run.results if any((s.get("dropout") or {}).get("hit") for s in r["trajectory"][1:])]
        spared = [r for r in run.results if r not in hit]
        assert all(r["reward"] == 1.0 for r in spared)  # only a hit can cost an answer
        assert all(r["end_reason"] == "submitted" for r in run.results)  # it always answers


def test_retries_transient_errors_within_the_turn_budget(env_org: Path, every_task: list[TaskInstance]) -> None:
    run = evaluate("reactive-oracle", tasks=every_task, org=env_org, wrappers=_dropout(0.3, "error"), progress=False)
    for record in run.results:
        steps = record["trajectory"][1:]
        for step, following in itertools.pairwise(steps):
            if (step.get("dropout") or {}).get("hit"):  # the same call again, said so in the step's note
                assert following["action"] == step["action"]
                assert "transient error: retry" in following["policy"]["note"]
    assert run.summary["all"]["accuracy"] == 1.0  # three retries cover p = 0.3 on these instances

    # Every result lost: one call, three retries, then the answer None, which is right only when there is none.
    lost = evaluate("reactive-oracle", tasks=every_task, org=env_org, wrappers=_dropout(1.0, "error"), progress=False)
    for record in lost.results:
        assert record["turns"] == 5 and record["submitted"] == "None"
        if record["abbrev"] != "KQA":
            assert record["reward"] == float(record["gold"] is None)


def test_keeps_its_last_turn_for_the_answer(env_org: Path, every_task: list[TaskInstance]) -> None:
    limit = [{"name": "TurnLimit", "kwargs": {"max_turns": 3}}]
    run = evaluate("reactive-oracle", tasks=every_task, org=env_org, wrappers=limit, progress=False)
    by_idx = {inst.idx: inst for inst in every_task}
    org = LocalOrg(env_org)
    for record in run.results:
        assert record["end_reason"] == "submitted" and record["turns"] <= 3
        needed = len(oracle_trace(by_idx[record["idx"]], org).actions)
        if needed <= 3:
            assert record["reward"] == 1.0
        elif record["gold"] is not None:
            assert record["reward"] == 0.0 and record["submitted"] == "None"


def test_wrappers_are_part_of_the_run(env_org: Path, every_task: list[TaskInstance], tmp_path: Path) -> None:
    from crmarena_gym.cli import main

    out = tmp_path / "run"
    selection = ["--env", "CRMArena-BRI-v0", "--limit", "2", "--tasks", str(_task_file(every_task, tmp_path))]
    wrapper = ["--wrapper", 'ToolResultDropout:{"p": 0.5, "mode": "drop"}']
    code = main(["eval", "--policy", "reactive-oracle", "--org", str(env_org), *selection, *wrapper, "--out", str(out)])
    assert code == 0
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["run"]["wrappers"] == [{"name": "ToolResultDropout", "kwargs": {"p": 0.5, "mode": "drop"}}]
    dropout = next(layer for layer in metadata["env_stack"] if layer["class"].endswith(":ToolResultDropout"))
    assert dropout["kwargs"] == {"p": 0.5, "mode": "drop"}
    same = {"env_id": "CRMArena-BRI-v0", "tasks": str(tmp_path / "tasks.json"), "org": env_org, "limit": 2}
    with pytest.raises(ValueError, match=r"the run differs \(wrappers: was \[.*ToolResultDropout.*\], now None\)"):
        evaluate("reactive-oracle", **same, env_kwargs={"match": "strict"}, out=out, resume=True, progress=False)
    with pytest.raises(ValueError, match="unknown wrapper 'Dropout'"):
        evaluate("reactive-oracle", tasks=every_task, org=env_org, wrappers=[{"name": "Dropout"}], progress=False)


def _task_file(instances: list[TaskInstance], tmp_path: Path) -> Path:
    from crmarena_gym.tasks import save_tasks

    path = tmp_path / "tasks.json"
    save_tasks(instances, path)
    return path
