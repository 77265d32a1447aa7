"""The oracle and random policies, and policy specs."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

from crmarena_gym.org import LocalOrg
from crmarena_gym.policies import OraclePolicy, PolicyError, RandomPolicy, make_policy, parse_policy_spec
from crmarena_gym.tasks import TaskInstance, oracle_trace


def test_oracle_replays_the_solver_trace_and_scores(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    instance = next(i for i in env_tasks if i.abbrev == "HTU")
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="functions", privileged=True)
    policy = OraclePolicy()
    policy.attach(env)
    observation, info = env.reset(options={"task_id": instance.idx})
    policy.reset(observation, info)
    actions, done, reward = [], False, 0.0
    while not done:
        actions.append(json.loads(policy.act(observation)))
        observation, reward, done, _, _ = env.step(json.dumps(actions[-1]))
    expected = oracle_trace(instance, LocalOrg(env_org)).actions
    assert [(a["name"], a["arguments"]) for a in actions] == [(c.name, c.arguments) for c in expected]
    assert reward == 1.0


def test_oracle_needs_privileged_info(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="functions")
    policy = OraclePolicy()
    policy.attach(env)
    observation, info = env.reset(seed=0)
    with pytest.raises(PolicyError, match="privileged=True"):
        policy.reset(observation, info)


def test_random_policy_is_reproducible_and_samples_the_action_space(env_org: Path, env_tasks) -> None:
    env = gym.make("CRMArena-TII-v0", org=env_org, tasks=env_tasks)
    runs = []
    for _ in range(2):
        policy = RandomPolicy()
        policy.attach(env)
        observation, info = env.reset(seed=0)
        policy.reset(observation, info, seed=11)
        runs.append([policy.act(observation) for _ in range(30)])
    assert runs[0] == runs[1]
    assert set(runs[0]) <= set(env.action_space.examples) and len(set(runs[0])) > 3


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "policy spec"),
        ("gpt-4o", "unknown policy spec 'gpt-4o'"),
        ("litellm:", "'litellm:'"),
        ("python:nomodule", "python:MODULE:CLASS"),
    ],
)
def test_bad_specs_are_refused_with_the_spec(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_policy(spec)


def test_specs_build_their_policies() -> None:
    assert parse_policy_spec("LITELLM:openai/x:y") == ("litellm", "openai/x:y")
    assert isinstance(make_policy("oracle"), OraclePolicy)
    assert make_policy("random", seed=4).seed == 4  # type: ignore[attr-defined]
    assert isinstance(make_policy("python:crmarena_gym.policies:RandomPolicy", seed=1), RandomPolicy)
    with pytest.raises(ValueError, match="no options"):
        make_policy("oracle", framework="act")
    with pytest.raises(TypeError, match=r"not a crmarena_gym\.policies\.Policy"):
        make_policy("python:collections:OrderedDict")
