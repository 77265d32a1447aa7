"""The oracle and random policies, and policy specs."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

from crmarena_gym.eval import evaluate, run_episode
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


class _FailStep(gym.Wrapper):
    """Replaces the observation of step ``at`` (1-based) with ``text``; the env's state is untouched."""

    def __init__(self, env: gym.Env, at: int, text: str) -> None:
        super().__init__(env)
        self.at, self.text, self.turn = at, text, 0

    def reset(self, **kwargs):  # type: ignore[no-untyped-def]
        self.turn = 0
        return self.env.reset(**kwargs)

    def step(self, action):  # type: ignore[no-untyped-def]
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.turn += 1
        return (self.text if self.turn == self.at else observation), reward, terminated, truncated, info


def _htu(env_tasks: list[TaskInstance]) -> TaskInstance:
    return next(i for i in env_tasks if i.abbrev == "HTU")


@pytest.mark.parametrize(
    "failure",
    [
        "Error: unknown function 'get_cases'; the available functions are: submit",
        "FORMAT_ERROR: the reply holds no action",
        "UNAVAILABLE: this toolset (functions) has no direct SOQL access",
        "MALFORMED_QUERY: unexpected token 'FORM'",
        "  INVALID_FIELD: No such column 'Idd' on entity 'Case'",
        "Salesforce instance output: INVALID_FIELD: No such column 'Idd' on entity 'Case'",
    ],
)
def test_the_oracle_stops_at_a_failed_call_naming_the_step(
    env_org: Path, env_tasks: list[TaskInstance], failure: str
) -> None:
    instance = _htu(env_tasks)
    calls = oracle_trace(instance, LocalOrg(env_org)).actions
    assert len(calls) >= 3  # a call to fail before submit
    base = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="functions", privileged=True)
    env = _FailStep(base, at=2, text=failure)
    policy = OraclePolicy()
    policy.attach(env)
    record = run_episode(env, policy, instance.idx)
    assert record["end_reason"] == "policy_error" and record["reward"] == 0.0
    assert record["turns"] == 2  # the failed step was the last one played
    assert f"call {calls[1].name}() at step 2 failed" in record["error"]
    assert failure.strip()[:20] in record["error"]


@pytest.mark.parametrize("text", ["Salesforce instance output: []", "[]", "Case: none found", "0"])
def test_the_oracle_goes_on_past_results_that_are_not_errors(
    env_org: Path, env_tasks: list[TaskInstance], text: str
) -> None:
    instance = _htu(env_tasks)
    base = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="functions", privileged=True)
    env = _FailStep(base, at=1, text=text)  # the oracle does not use the results, so it still solves it
    policy = OraclePolicy()
    policy.attach(env)
    record = run_episode(env, policy, instance.idx)
    assert (record["end_reason"], record["reward"]) == ("submitted", 1.0)


def test_the_oracle_refuses_a_toolset_without_its_functions(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    soql = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="soql", privileged=True)
    with pytest.raises(ValueError, match=r"toolset 'soql' lacks.*toolset='functions' or 'flex'"):
        OraclePolicy().attach(soql)
    with pytest.raises(ValueError, match="toolset 'soql' lacks"):
        evaluate("oracle", env_id="CRMArena-HTU-v0", org=env_org, tasks=env_tasks, env_kwargs={"toolset": "soql"})
    # a toolset that lacks one function the solution calls: refused at reset, before any step
    instance = _htu(env_tasks)
    first = oracle_trace(instance, LocalOrg(env_org)).actions[0].name
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="functions", privileged=True)
    policy = OraclePolicy()
    policy.attach(env)
    observation, info = env.reset(options={"task_id": instance.idx})
    info["tools"] = [t for t in info["tools"] if t["function"]["name"] != first]
    with pytest.raises(PolicyError, match=f"calls {first}, which the toolset 'functions' lacks"):
        policy.reset(observation, info)


def test_the_oracle_plays_step_by_step_each_call_running_once(
    env_org: Path, env_tasks: list[TaskInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 17 item 3: under the runner the solver reads the environment's results (info["result"]) and
    # runs no call of its own; the episodes are those of the solver's trace, call for call.
    from crmarena_gym.tools import Toolset

    calls: list[tuple[str, bool]] = []
    real_call = Toolset.call

    def counted(self: Toolset, name: str, arguments: object, org: object = None, *, trusted: bool = False) -> object:
        calls.append((name, trusted))
        return real_call(self, name, arguments, org, trusted=trusted)  # type: ignore[arg-type]

    instances = [next(i for i in env_tasks if i.abbrev == abbrev) for abbrev in sorted({i.abbrev for i in env_tasks})]
    traces = {i.idx: oracle_trace(i, LocalOrg(env_org).with_today(i.params["today"])).actions for i in instances}
    monkeypatch.setattr(Toolset, "call", counted)
    run = evaluate("oracle", org=env_org, tasks=instances, progress=False)
    assert len(run.results) == len(instances) >= 5
    for record in run.results:
        assert record["reward"] == 1.0, record.get("error")
        played = [json.loads(step["action"]) for step in record["trajectory"][1:]]
        assert [(a["name"], a["arguments"]) for a in played] == [(c.name, c.arguments) for c in traces[record["idx"]]]
    steps = sum(len(trace) - 1 for trace in traces.values())  # every call but submit, which runs no tool
    assert len(calls) == steps and not any(trusted for _, trusted in calls)  # all in the env, none by the solver
    # Played without the runner (no observe()), the oracle runs each call itself to read it, as before.
    calls.clear()
    instance = instances[0]
    env = gym.make(f"CRMArena-{instance.abbrev}-v0", org=env_org, tasks=env_tasks, toolset="flex", privileged=True)
    policy = OraclePolicy()
    policy.attach(env)
    observation, info = env.reset(options={"task_id": instance.idx})
    policy.reset(observation, info)
    done, reward = False, 0.0
    while not done:
        observation, reward, done, _, _ = env.step(policy.act(observation))
    assert reward == 1.0 and sum(trusted for _, trusted in calls) == len(traces[instance.idx]) - 1


def test_the_oracle_solves_the_environments_own_instance_as_validated_from_info(
    env_org: Path, env_tasks: list[TaskInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    from crmarena_gym.policies._simple import episode_instance

    custom = env_tasks[0].model_copy(update={"persona": "a persona of the task file's own"})
    tasks = [custom, *env_tasks[1:]]
    env = gym.make("CRMArena-v0", org=env_org, tasks=tasks, toolset="functions", privileged=True)
    policy = OraclePolicy()
    policy.attach(env)
    validated: list[int] = []
    real = TaskInstance.model_validate.__func__  # type: ignore[attr-defined]

    def counting(cls: type[TaskInstance], data: object, **kwargs: object) -> TaskInstance:
        validated.append(1)
        return real(cls, data, **kwargs)

    monkeypatch.setattr(TaskInstance, "model_validate", classmethod(counting))
    for instance in tasks:
        observation, info = env.reset(options={"task_id": instance.idx})
        before = len(validated)
        mine = policy._episode_instance(observation, info)
        assert len(validated) == before  # the environment's own instance, not validated again
        assert mine == episode_instance(observation, info)
        info["params"] = {**info["params"], "extra": 1}  # not the environment's instance: validated from info
        assert policy._episode_instance(observation, info).params == info["params"]
        assert len(validated) == before + 2
