"""Hostile actions never leave step with an exception: deep nesting, oversized actions, lone surrogates."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import pytest

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.tasks import TaskInstance
from crmarena_gym.wrappers import RecordTrajectory


def deep() -> str:
    """Brackets nested deeper than Python's JSON reader may recurse: past the recursion limit in force
    when called (1,000 unless a library raised it: about 4 KB then)."""
    levels = sys.getrecursionlimit() + 1000
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("toolset", ["soql", "functions", "flex"])
@pytest.mark.parametrize(
    "action",
    [
        lambda: '{"name": "get_cases", "arguments": {"case_ids": ' + deep() + "}}",
        lambda: json.dumps({"name": "get_cases", "arguments": '{"case_ids": ' + deep() + "}"}),  # as OpenAI sends
        lambda: "get_cases(" + '{"case_ids": ' + deep() + "})",
        lambda: "execute get_cases(" + '{"case_ids": ' + deep() + "})",
    ],
    ids=["json-call", "json-string-arguments", "call", "execute-call"],
)
def test_deeply_nested_calls_get_a_format_error_and_use_the_turn(
    toolset: str, action: Callable[[], str], env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset=toolset, max_episode_steps=3)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action())
    assert obs.startswith("FORMAT_ERROR:") and "nested too deeply" in obs
    assert info["error"] == "FORMAT_ERROR" and reward == 0.0 and not terminated and not truncated
    # The env's turn and the TimeLimit's agree: two more steps end the episode by the limit.
    env.step("execute SELECT Id FROM Case LIMIT 1")
    *_, truncated, info = env.step("execute SELECT Id FROM Case LIMIT 1")
    assert truncated and info["turn"] == 3


def test_the_time_limit_and_the_env_count_the_same_turns(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="flex", max_episode_steps=2)
    env.reset(seed=0)
    env.step("get_cases(" + '{"case_ids": ' + deep() + "})")
    *_, truncated, info = env.step("execute SELECT Id FROM Case LIMIT 1")
    assert truncated and info["turn"] == 2


def test_an_action_longer_than_the_limit_is_refused_before_it_is_read(
    env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, max_action_chars=20_000)
    assert gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks).action_space.max_length == 200_000
    env.reset(seed=0)
    long_query = "execute SELECT Id FROM Case WHERE " + " AND ".join(["Subject != 'x'"] * 200_000)
    obs, _, terminated, _, info = env.step(long_query)
    assert obs == (
        f"FORMAT_ERROR: the action is {len(long_query):,} characters long; the longest accepted is 20,000. "
        "Send a shorter query or call."
    )
    assert info["error"] == "FORMAT_ERROR" and not terminated
    at_limit = "execute SELECT Id FROM Case WHERE Subject != 'x'"
    at_limit = at_limit + " " * (20_000 - len(at_limit))
    obs, *_ = env.step(at_limit)
    assert obs.startswith("Salesforce instance output: [")


def test_a_lone_surrogate_is_recorded_losslessly(tmp_path: Path, env_org: Path, env_tasks: list[TaskInstance]) -> None:
    path = tmp_path / "trajectory.jsonl"
    env = RecordTrajectory(gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks), path)
    env.reset(seed=0)
    _, _, terminated, _, info = env.step("submit \ud800")
    assert terminated and info["submitted"] == "\ud800"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[-1]["action"] == "submit \ud800" and lines[-1]["info"]["submitted"] == "\ud800"


@pytest.mark.parametrize(
    "action",
    [
        '{"name": "get_cases", "arguments": {"case_ids": 1' + "0" * 5000 + "}}",
        json.dumps({"name": "get_cases", "arguments": '{"case_ids": 1' + "0" * 5000 + "}"}),  # as OpenAI sends
        "get_cases(" + '{"case_ids": 1' + "0" * 5000 + "})",
    ],
    ids=["json-call", "json-string-arguments", "call"],
)
def test_a_number_too_long_to_read_gets_a_format_error(
    action: str, env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    # Python refuses to convert an integer of more than 4,300 digits (a plain ValueError, not a JSON error).
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="functions", max_episode_steps=3)
    env.reset(seed=0)
    observation, _, terminated, _, info = env.step(action)
    assert info["error"] == "FORMAT_ERROR" and not terminated
    assert f"more digits than can be read (at most {sys.get_int_max_str_digits()})" in observation
