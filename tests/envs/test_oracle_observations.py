"""A full oracle pass through the env, every step's observation, reward and info against a reference worked
out another way: each call run as the plain Python function (no parsing, no argument checks, no dispatch)
and rendered as the paper renders results (``str()`` of the value, or JSON)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.envs import CRMArenaEnv, StepResult
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import TASK_SPECS, TaskInstance, oracle_trace
from crmarena_gym.tasks._generate import generate_tasks
from crmarena_gym.tools import get_tool


@pytest.fixture(scope="module")
def nine_tasks(env_org: Path) -> list[TaskInstance]:
    """Three generated instances of each of the nine tasks on :func:`env_org`."""
    return generate_tasks(env_org, seed=5, per_task=3, tasks=[s.abbrev for s in TASK_SPECS])


def _expected(value: Any, fmt: str) -> str:
    return str(value) if fmt == "python" else json.dumps(value, ensure_ascii=False, default=str)


@pytest.mark.parametrize("fmt", ["python", "json"])
@pytest.mark.parametrize("form", ["json", "execute"])
def test_an_oracle_pass_shows_what_the_plain_functions_return(
    fmt: str, form: str, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    org = LocalOrg(env_org)
    env = CRMArenaEnv(org=org, tasks=nine_tasks, toolset="flex", observation_format=fmt)  # type: ignore[arg-type]
    assert {i.abbrev for i in nine_tasks} == {s.abbrev for s in TASK_SPECS}
    steps = 0
    for instance in nine_tasks:
        view = org.with_today(instance.today)
        trace = oracle_trace(instance, view)
        _, info = env.reset(options={"task_id": instance.idx})
        for turn, call in enumerate(trace.calls, start=1):
            action = (
                json.dumps({"name": call.name, "arguments": call.arguments})
                if form == "json"
                else f"execute {call.name}({json.dumps(call.arguments)})"
            )
            obs, reward, terminated, truncated, info = env.step(action)
            tool = get_tool(call.name)
            plain = tool.function.__wrapped__  # the function as written, without the checks
            value = plain(view, **call.arguments) if tool.needs_org else plain(**call.arguments)
            assert obs == _expected(value, fmt)
            assert len(obs) < env.max_observation_chars
            assert (reward, terminated, truncated) == (0.0, False, False)
            assert list(info.items()) == [
                ("turn", turn),
                ("action_kind", "call"),
                ("function", call.name),
                ("result", StepResult(value)),
            ]
            steps += 1
        answer = trace.answer
        obs, reward, terminated, truncated, info = env.step(
            json.dumps({"name": "submit", "arguments": {"content": answer}})
        )
        assert (obs, reward, terminated, truncated) == ("Answer submitted. The episode is over.", 1.0, True, False)
        metric = instance.reward_metric
        assert info == {
            "turn": len(trace.calls) + 1,
            "action_kind": "call",
            "submitted": answer,
            "reward_breakdown": {
                "reward": 1.0,
                "metric": metric,
                "mode": "strict",
                "submitted": answer,
                "compared": answer.strip(),
            },
        }
    assert steps > 3 * len(nine_tasks)  # the calls were made, not only submissions
