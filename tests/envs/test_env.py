from __future__ import annotations

import ast
import pickle
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.envs import CRMArenaEnv, env_ids
from crmarena_gym.tasks import TaskInstance, load_tasks
from tests.org_builder import build_original_layout

SQL_TASKS = ["HTU", "TCU", "TII", "MTA", "BRI"]


def _make(abbrev: str, org: Path, tasks: list[TaskInstance], **kwargs: Any) -> gym.Env[str, str]:
    return gym.make(f"CRMArena-{abbrev}-v0", org=org, tasks=tasks, **kwargs)


def test_every_task_and_the_all_tasks_id_are_registered() -> None:
    assert env_ids() == [f"CRMArena-{a}-v0" for a in "KQA MTA TII NCR NED HTU TCU PVI BRI".split()] + ["CRMArena-v0"]
    for env_id in env_ids():
        assert gym.registry[env_id].max_episode_steps == 20


@pytest.mark.parametrize("toolset", ["soql", "functions", "flex"])
@pytest.mark.parametrize("abbrev", SQL_TASKS)
def test_check_env_passes_without_warnings(abbrev: str, toolset: str, env_org: Path, env_tasks: list) -> None:
    env = _make(abbrev, env_org, env_tasks, toolset=toolset)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


def _rollout(env: gym.Env[str, str], seed: int, steps: int) -> list[Any]:
    obs, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    trace: list[Any] = [obs, info["idx"]]
    for _ in range(steps):
        action = env.action_space.sample()
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append((action, obs, reward, terminated, truncated, sorted(info)))
        if terminated or truncated:
            obs, info = env.reset()
            trace.append((obs, info["idx"]))
    return trace


def test_same_seed_same_rollout(env_org: Path, env_tasks: list) -> None:
    one = _rollout(_make("TII", env_org, env_tasks, toolset="flex"), seed=11, steps=25)
    two = _rollout(_make("TII", env_org, env_tasks, toolset="flex"), seed=11, steps=25)
    other = _rollout(_make("TII", env_org, env_tasks, toolset="flex"), seed=12, steps=25)
    assert one == two
    assert one != other


def test_action_space_samples_well_formed_actions(env_org: Path, env_tasks: list) -> None:
    env = _make("BRI", env_org, env_tasks, toolset="flex")
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(30):
        _obs, _r, terminated, _t, info = env.step(env.action_space.sample())
        assert info["action_kind"] != "invalid"
        assert "error" not in info or info["error"] not in ("FORMAT_ERROR", "UNAVAILABLE")
        if terminated:
            env.reset()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=st.lists(st.text(max_size=200), min_size=1, max_size=4))
def test_random_text_never_raises(actions: list[str], env_org: Path, env_tasks: list) -> None:
    env = CRMArenaEnv("HTU", org=env_org, tasks=env_tasks, toolset="flex")
    env.reset(seed=0)
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        assert env.observation_space.contains(obs)
        assert reward in (0.0, 1.0) and not truncated
        if terminated:
            break


def test_invalid_action_uses_a_turn_and_explains(env_org: Path, env_tasks: list) -> None:
    env = _make("HTU", env_org, env_tasks)
    _obs, start = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("I believe it is agent X")
    # The rule restated, in the words the prompt's action format uses (as the original answers).
    assert obs == "FORMAT_ERROR: no action found in the reply. " + start["action_format"]
    assert "execute <SOQL or SOSL query>" in obs and "submit <answer>" in obs
    assert (reward, terminated, truncated, info["turn"]) == (0.0, False, False, 1)
    obs, *_, info = env.step("execute SELECT Nope FROM Case")
    # A refused query keeps the output prefix, as the original's code renders it.
    assert obs.startswith("Salesforce instance output: INVALID_FIELD: ") and "Nope" in obs
    assert info["error"] == "INVALID_FIELD"


def test_functions_toolset_has_no_raw_queries_and_soql_has_no_functions(env_org: Path, env_tasks: list) -> None:
    env = _make("HTU", env_org, env_tasks, toolset="functions")
    _, info = env.reset(seed=0)
    assert {t["function"]["name"] for t in info["tools"]} >= {"get_cases", "submit"}
    assert len(info["tools"]) == 25
    assert env.step("execute SELECT Id FROM Case")[0].startswith("UNAVAILABLE:")
    env = _make("HTU", env_org, env_tasks, toolset="soql")
    _, info = env.reset(seed=0)
    assert sorted(t["function"]["name"] for t in info["tools"]) == ["issue_soql_query", "issue_sosl_query", "submit"]
    answer = env.step("execute get_issues()")[0]
    assert answer.startswith("Error: unknown function 'get_issues'")
    # gym.make's default toolset is soql: a task function called there says which toolset has it (issue 35).
    assert answer.endswith("(it is a task function: make the environment with toolset='functions' or 'flex')")
    assert "toolset=" not in env.step("execute no_such_function()")[0]  # a made-up name gets no such hint


def test_gold_only_when_privileged(env_org: Path, env_tasks: list) -> None:
    _, info = _make("TII", env_org, env_tasks).reset(seed=0)
    assert "gold" not in info and "params" not in info
    assert "schema" in info and "Case" in info["schema"] and "action_format" in info
    env = _make("TII", env_org, env_tasks, privileged=True)
    _, info = env.reset(seed=0)
    assert info["params"]["product_id"].startswith("01t")
    gold = info["gold"]
    *_, info = env.step(f"submit {gold}")
    assert info["reward_breakdown"]["gold"] == ("None" if gold is None else gold)


def test_submit_scores_exact_match_and_ends_the_episode(env_org: Path, env_tasks: list) -> None:
    inst = next(t for t in env_tasks if t.abbrev == "MTA")
    env = _make("MTA", env_org, env_tasks)
    env.reset(seed=0, options={"task_id": inst.idx})
    assert env.step(f"<submit>{inst.answer}</submit>")[1:3] == (1.0, True)
    env.reset(seed=0, options={"task_id": inst.idx})
    assert env.step(f"submit {inst.answer.lower()}")[1] == 0.0  # strict: case-sensitive
    lenient = _make("MTA", env_org, env_tasks, match="lenient")
    lenient.reset(seed=0, options={"task_id": inst.idx})
    assert lenient.step(f"submit The month is {inst.answer}.")[1] == 1.0
    with pytest.raises(RuntimeError, match="call reset"):
        lenient.unwrapped.step("submit x")


def _call(env: gym.Env[str, str], name: str, **arguments: Any) -> Any:
    import json

    obs, _, _, _, info = env.step(f"execute {name}({json.dumps(arguments)})")
    assert "error" not in info, obs
    return ast.literal_eval(obs)


@pytest.mark.parametrize("abbrev", ["BRI", "TII"])
def test_scripted_function_calls_solve_an_episode(abbrev: str, env_org: Path, env_tasks: list) -> None:
    env = _make(abbrev, env_org, env_tasks, toolset="functions", privileged=True)
    for inst in [t for t in env_tasks if t.abbrev == abbrev and t.answer is not None][:3]:
        _, info = env.reset(options={"task_id": inst.idx})
        start = info["params"]["start"][:19] + "Z"
        end = info["params"]["end"][:19] + "Z"
        if abbrev == "BRI":
            cases = _call(env, "get_cases", start_date=start, end_date=end, statuses=["Closed"])
            with_states = _call(env, "get_shipping_state", cases=cases)
            times = _call(env, "calculate_region_average_closure_times", cases=with_states)
            answer = _call(env, "find_id_with_min_value", values_by_id=times)
        else:
            items = _call(env, "get_order_item_ids_by_product", product_id=info["params"]["product_id"])
            counts = _call(env, "get_issue_counts", start_date=start, end_date=end, order_item_ids=items)
            answer = _call(env, "find_id_with_max_value", values_by_id=counts)
        assert len(answer) == 1
        _, reward, terminated, _, _ = env.step(f'{{"name": "submit", "arguments": {{"content": "{answer[0]}"}}}}')
        assert (reward, terminated) == (1.0, True)


def test_pickle_mid_episode_continues_identically(env_org: Path, env_tasks: list) -> None:
    env = _make("HTU", env_org, env_tasks)
    env.reset(seed=5)
    env.step("execute SELECT COUNT(Id) FROM Case")
    clone = pickle.loads(pickle.dumps(env))
    action = "execute SELECT Owner.Name, COUNT(Id) FROM Case GROUP BY Owner.Name ORDER BY COUNT(Id) DESC LIMIT 3"
    assert env.step(action)[0] == clone.step(action)[0]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs(mode: str, env_org: Path, env_tasks: list) -> None:
    vector_kwargs = {"shared_memory": False} if mode == "async" else {}
    envs = gym.make_vec(
        "CRMArena-BRI-v0",
        num_envs=2,
        vectorization_mode=mode,
        vector_kwargs=vector_kwargs,
        org=env_org,
        tasks=env_tasks,
    )
    try:
        obs, _ = envs.reset(seed=3)
        assert len(obs) == 2 and all(o.startswith(("Which", "Where", "In", "During", "Over")) or o for o in obs)
        obs, rewards, terminated, _, _ = envs.step(("execute SELECT COUNT(Id) FROM Case", "submit None"))
        assert obs[0].startswith("Salesforce instance output: [{'expr0': ")
        assert list(terminated) == [False, True] and list(rewards) == [0.0, 0.0]
    finally:
        envs.close()


def test_many_envs_share_one_org(env_org: Path, env_tasks: list) -> None:
    envs = [CRMArenaEnv("HTU", org=env_org, tasks=env_tasks) for _ in range(8)]
    backends = {id(e.org._live()) for e in envs}  # type: ignore[attr-defined]
    assert len(backends) == 1


def test_bad_arguments_are_refused_clearly(env_org: Path, env_tasks: list) -> None:
    with pytest.raises(ValueError, match="'sql'"):
        CRMArenaEnv("HTU", org=env_org, tasks=env_tasks, toolset="sql")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'fuzzy'"):
        CRMArenaEnv("HTU", org=env_org, tasks=env_tasks, match="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="'XYZ'"):
        CRMArenaEnv("XYZ", org=env_org, tasks=env_tasks)
    with pytest.raises(ValueError, match="no instance of task 'knowledge_qa'"):
        CRMArenaEnv("KQA", org=env_org, tasks=env_tasks)
    env = CRMArenaEnv("HTU", org=env_org, tasks=env_tasks)
    with pytest.raises(ValueError, match="task_id 99999"):
        env.reset(options={"task_id": 99999})
    with pytest.raises(ValueError, match="'colour'"):
        env.reset(options={"colour": 1})
    with pytest.raises(RuntimeError, match="call reset"):
        env.step("submit None")
    with pytest.raises(FileNotFoundError):
        CRMArenaEnv("HTU", org=env_org.parent / "missing.sqlite", tasks=env_tasks)


def test_original_task_file_on_an_org_in_its_layout(shared_dir: Path, tmp_path: Path) -> None:
    org_path = tmp_path / "crmarena_data.db"
    rows = build_original_layout(shared_dir, org_path)
    env = gym.make("CRMArena-TII-v0", org=org_path, tasks=shared_dir / "tasks_original.json")
    original = [t for t in load_tasks(shared_dir / "tasks_original.json") if t.abbrev == "TII"]
    inst = original[0]
    obs, info = env.reset(seed=0, options={"task_id": inst.idx})
    assert obs.startswith(inst.query) and info["today"] == "2023-01-04"
    obs, *_ = env.step("execute SELECT Id, Name FROM Issue__c ORDER BY Name")
    shown = ast.literal_eval(obs.removeprefix("Salesforce instance output: "))
    assert sorted((r["Id"], r["Name"]) for r in shown) == sorted((i, r["Name"]) for i, r in rows["Issue__c"].items())
    assert env.step(f"submit {inst.answer}")[1] == 1.0


def test_general_query_tools_called_as_functions_act_like_execute(env_org: Path, env_tasks: list) -> None:
    env = _make("HTU", env_org, env_tasks, toolset="flex")
    env.reset(seed=0)
    as_text = env.step("execute SELECT COUNT(Id) FROM Case")
    as_call = env.step('{"name": "issue_soql_query", "arguments": {"query": "SELECT COUNT(Id) FROM Case"}}')
    assert as_call[0] == as_text[0] and as_call[0].startswith("Salesforce instance output: ")
    assert as_call[4]["action_kind"] == "query"
    obs, *_, info = env.step('{"name": "issue_soql_query", "arguments": {"query": "SELECT Idd FROM Case"}}')
    assert obs.startswith("Salesforce instance output: INVALID_FIELD:") and info["error"] == "INVALID_FIELD"
    assert "result" not in info
    obs, *_, info = env.step('{"name": "issue_sosl_query", "arguments": {"q": "FIND {x}"}}')
    assert obs.startswith("Error: issue_sosl_query() takes one argument 'query'") and info["error"] == "FUNCTION_ERROR"
