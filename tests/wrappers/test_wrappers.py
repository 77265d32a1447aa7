from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.envs import CRMArenaEnv
from crmarena_gym.tasks import TaskInstance
from crmarena_gym.wrappers import (
    LAST_TURN_WARNING,
    TRANSIENT_ERROR,
    FunctionRemoval,
    ObservationTruncation,
    RecordTrajectory,
    ToolResultDropout,
    TurnLimit,
)

QUERY = "execute SELECT Id, Name FROM Issue__c ORDER BY Name"


def _base(env_org: Path, env_tasks: list[TaskInstance], **kwargs: Any) -> CRMArenaEnv:
    return CRMArenaEnv("TII", org=env_org, tasks=env_tasks, **kwargs)


@pytest.mark.parametrize("max_turns", [1, 3])
def test_turn_limit_truncates_exactly_at_the_limit(max_turns: int, env_org: Path, env_tasks: list) -> None:
    env = TurnLimit(_base(env_org, env_tasks), max_turns=max_turns, warn_last_turn=True)
    obs, info = env.reset(seed=0)
    assert info["turns_left"] == max_turns
    assert obs.endswith(LAST_TURN_WARNING) == (max_turns == 1)
    for turn in range(1, max_turns):  # turns 1 .. N-1 go on
        obs, reward, terminated, truncated, info = env.step(QUERY)
        assert (terminated, truncated, info["turns_left"]) == (False, False, max_turns - turn)
        assert obs.endswith(LAST_TURN_WARNING) == (turn == max_turns - 1)
    obs, reward, terminated, truncated, info = env.step(QUERY)  # turn N ends it
    assert (reward, terminated, truncated, info["end_reason"]) == (0.0, False, True, "turn_limit")


def test_turn_limit_lets_a_last_turn_submission_count(env_org: Path, env_tasks: list) -> None:
    inst = next(t for t in env_tasks if t.abbrev == "TII")
    env = TurnLimit(_base(env_org, env_tasks), max_turns=2)
    env.reset(options={"task_id": inst.idx})
    env.step(QUERY)
    _, reward, terminated, truncated, _ = env.step(f"submit {inst.answer}")
    assert (reward, terminated, truncated) == (1.0, True, False)
    with pytest.raises(ValueError, match="0"):
        TurnLimit(_base(env_org, env_tasks), max_turns=0)


def test_turn_limit_above_the_registered_limit_says_how(env_org: Path, env_tasks: list) -> None:
    with pytest.raises(ValueError, match="max_episode_steps=30"):
        TurnLimit(gym.make("CRMArena-TII-v0", org=env_org, tasks=env_tasks), max_turns=30)
    env = TurnLimit(gym.make("CRMArena-TII-v0", org=env_org, tasks=env_tasks, max_episode_steps=30), max_turns=30)
    env.reset(seed=0)
    steps = [env.step("not an action") for _ in range(30)]
    assert [s[3] for s in steps] == [False] * 29 + [True] and steps[-1][4]["end_reason"] == "turn_limit"


def test_registered_limit_is_twenty_turns(env_org: Path, env_tasks: list) -> None:
    env = gym.make("CRMArena-TII-v0", org=env_org, tasks=env_tasks)
    env.reset(seed=0)
    results = [env.step("not an action") for _ in range(20)]
    assert [r[3] for r in results] == [False] * 19 + [True]


def _rows(obs: str) -> list[dict[str, Any]]:
    return ast.literal_eval(obs.removeprefix("Salesforce instance output: "))


def test_dropout_rate_and_determinism(env_org: Path, env_tasks: list) -> None:
    def schedule(seed: int) -> list[bool]:
        env = ToolResultDropout(_base(env_org, env_tasks), p=0.3, mode="error")
        env.reset(seed=seed)
        hits = []
        for _ in range(300):
            obs, *_, info = env.step(QUERY)
            hits.append(info["dropout"]["hit"])
            assert (obs == "Salesforce instance output: " + TRANSIENT_ERROR) == info["dropout"]["hit"]
        return hits

    first = schedule(4)
    assert first == schedule(4)
    assert first != schedule(5)
    assert 0.2 < sum(first) / len(first) < 0.4  # 300 draws at p = 0.3: 5 standard deviations is about 0.13


def test_dropout_modes_change_results_as_documented(env_org: Path, env_tasks: list) -> None:
    clean = _base(env_org, env_tasks)
    clean.reset(seed=0)
    truth = _rows(clean.step(QUERY)[0])
    for mode in ("drop", "truncate", "corrupt"):
        env = ToolResultDropout(_base(env_org, env_tasks), p=1.0, mode=mode)
        env.reset(seed=0)
        obs, *_, info = env.step(QUERY)
        rows = _rows(obs)
        if mode == "drop":
            assert rows == []
        elif mode == "truncate":
            assert rows == truth[: info["dropout"]["kept"]] and len(rows) < len(truth)
        else:
            assert len(rows) == len(truth) and rows != truth
            assert sum(a != b for a, b in zip(rows, truth, strict=True)) == 1
            row, field = info["dropout"]["path"][-2:]  # where the changed value is, as the viewer marks it
            assert rows[row][field] != truth[row][field] and info["dropout"]["changed"] == field
            assert {k: v for k, v in rows[row].items() if k != field} == {
                k: v for k, v in truth[row].items() if k != field
            }
        # Submissions are never touched.
        _, _, terminated, _, info = env.step("submit None")
        assert terminated and "dropout" not in info


def test_dropout_never_touches_errors_or_format_problems(env_org: Path, env_tasks: list) -> None:
    env = ToolResultDropout(_base(env_org, env_tasks), p=1.0, mode="error")
    env.reset(seed=0)
    assert env.step("execute SELECT Nope FROM Case")[0].startswith("Salesforce instance output: INVALID_FIELD")
    assert env.step("hello")[0].startswith("FORMAT_ERROR")
    with pytest.raises(ValueError, match=r"1\.5"):
        ToolResultDropout(_base(env_org, env_tasks), p=1.5)
    with pytest.raises(ValueError, match="'shuffle'"):
        ToolResultDropout(_base(env_org, env_tasks), p=0.1, mode="shuffle")  # type: ignore[arg-type]


def test_function_removal_by_name_and_by_group(env_org: Path, env_tasks: list) -> None:
    env = FunctionRemoval(_base(env_org, env_tasks, toolset="functions"), functions=["get_issue_counts"])
    _, info = env.reset(seed=0)
    names = {t["function"]["name"] for t in info["tools"]}
    assert "get_issue_counts" not in names and len(names) == 24
    obs = env.step('execute get_issue_counts({"start_date": "2021-01-01T00:00:00Z"})')[0]
    assert obs.startswith("Error: unknown function 'get_issue_counts'")
    assert "get_issue_counts" not in " ".join(env.action_space.examples)

    grouped = FunctionRemoval(_base(env_org, env_tasks, toolset="flex"), groups=["dependent_calculation"])
    _, info = grouped.reset(seed=0)
    names = {t["function"]["name"] for t in info["tools"]}
    assert "find_id_with_max_value" not in names and "calculate_average_handle_time" not in names
    assert {"get_cases", "issue_soql_query", "submit"} <= names  # other groups, general tools and submit stay
    with pytest.raises(ValueError, match="submit cannot be removed"):
        FunctionRemoval(_base(env_org, env_tasks), functions=["submit"])

    def draws_after_removal(seed: int) -> list[str]:
        base = _base(env_org, env_tasks, toolset="flex")
        base.action_space.seed(seed)  # seeded before the removal: the seed must survive it
        env = FunctionRemoval(base, functions=["get_issues"])
        return [env.action_space.sample() for _ in range(12)]

    first = draws_after_removal(5)
    assert first == draws_after_removal(5) != draws_after_removal(6)
    assert all("get_issues" not in d for d in first)
    with pytest.raises(TypeError, match="lists of names"):
        FunctionRemoval(_base(env_org, env_tasks), functions="get_cases")  # type: ignore[arg-type]


def test_wrappers_record_their_arguments(env_org: Path, env_tasks: list) -> None:
    env = gym.make("CRMArena-TII-v0", org=env_org, tasks=env_tasks)
    env = ToolResultDropout(TurnLimit(env, max_turns=5), p=0.2, mode="drop")
    specs = [w.kwargs for w in env.spec.additional_wrappers[-2:]]  # type: ignore[union-attr]
    assert specs == [{"max_turns": 5, "warn_last_turn": False}, {"p": 0.2, "mode": "drop"}]
    clone = pickle.loads(pickle.dumps(env))
    clone.reset(seed=0)


def test_observation_truncation(env_org: Path, env_tasks: list) -> None:
    env = ObservationTruncation(_base(env_org, env_tasks), max_chars=50)
    obs, _ = env.reset(seed=0)
    assert obs.startswith(env.unwrapped._last_observation[:50])  # type: ignore[attr-defined]
    assert obs.endswith("more characters]") and len(obs) < 120


def test_record_trajectory_writes_one_line_per_step(env_org: Path, env_tasks: list, tmp_path: Path) -> None:
    path = tmp_path / "runs" / "traj.jsonl"
    env = RecordTrajectory(_base(env_org, env_tasks), path)
    for seed in (0, 1):
        env.reset(seed=seed)
        env.step(QUERY)
        env.step("submit None")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["episode"], r["step"]) for r in lines] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert lines[1]["action"] == QUERY and lines[1]["observation"].startswith("Salesforce instance output:")
    assert lines[2]["terminated"] is True and "reward_breakdown" in lines[2]["info"]
    assert [layer["class"].rpartition(":")[2] for layer in lines[0]["env_stack"]] == [
        type(layer).__name__ for layer in _layers(env.env)
    ]
    dropped = tmp_path / "dropped.jsonl"
    wrapped = RecordTrajectory(ToolResultDropout(_base(env_org, env_tasks), p=0.3, mode="error"), dropped)
    wrapped.reset(seed=0)
    first = json.loads(dropped.read_text().splitlines()[0])
    assert first["env_stack"][0] == {
        "class": "crmarena_gym.wrappers._common:ToolResultDropout",
        "kwargs": {"p": 0.3, "mode": "error"},
    }
    with pytest.raises(IsADirectoryError):
        RecordTrajectory(_base(env_org, env_tasks), tmp_path)


def _layers(env: gym.Env) -> list[gym.Env]:
    """Every layer of a wrapper stack, outermost first, the base env last."""
    layers = [env]
    while isinstance(layers[-1], gym.Wrapper):
        layers.append(layers[-1].env)
    return layers
