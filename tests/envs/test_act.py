"""Act mode: the agent makes the change in its own session and the org's final state is graded."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.envs import act_env_ids
from crmarena_gym.org import LocalOrg
from crmarena_gym.policies import OraclePolicy
from crmarena_gym.tasks import TaskInstance, generate_tasks


@pytest.fixture(scope="module")
def ncr_tasks(env_org: Path) -> list[TaskInstance]:
    return generate_tasks(env_org, seed=5, per_task=12, tasks=["NCR"])


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _make(env_org: Path, tasks: list[TaskInstance], **kwargs):  # type: ignore[no-untyped-def]
    return gym.make("CRMArena-NCR-Act-v0", org=env_org, tasks=tasks, toolset="flex", **kwargs)


def _call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def _other_agent(env_org: Path, not_this: str) -> str:
    rows = LocalOrg(env_org).query(f"SELECT Id FROM User WHERE Id != '{not_this}' ORDER BY Id LIMIT 1")["records"]
    return rows[0]["Id"]


def test_the_oracle_makes_every_change_and_the_case_ends_with_the_gold_owner(
    env_org: Path, ncr_tasks: list[TaskInstance]
) -> None:
    before = _digest(env_org)
    env = _make(env_org, ncr_tasks, privileged=True)
    policy = OraclePolicy()
    policy.attach(env)
    for instance in ncr_tasks:
        obs, info = env.reset(options={"idx": instance.idx})
        case_id = info["records"]["case"]
        assert case_id in obs and "submit done" in obs
        policy.reset(obs, info)
        done, reward = False, 0.0
        while not done:
            obs, reward, done, _, step_info = env.step(policy.act(obs))
            policy.observe(step_info)
        assert reward == 1.0, step_info["diff_check"]
        # Independently of the diff: the session's own query engine shows the case with the gold owner.
        owner = env.unwrapped._view.query(f"SELECT OwnerId FROM Case WHERE Id = '{case_id}'")["records"][0]["OwnerId"]
        assert owner == instance.answer
    env.close()
    assert _digest(env_org) == before  # the org file never changed


def test_the_right_change_plus_a_stray_edit_scores_zero_and_names_the_stray(
    env_org: Path, ncr_tasks: list[TaskInstance]
) -> None:
    instance = ncr_tasks[0]
    env = _make(env_org, ncr_tasks, privileged=True)
    _, info = env.reset(options={"idx": instance.idx})
    case_id = info["records"]["case"]
    other_case = env.unwrapped._view.query(f"SELECT Id FROM Case WHERE Id != '{case_id}' LIMIT 1")["records"][0]["Id"]
    env.step(_call("update_record", sobject="Case", record_id=case_id, fields={"OwnerId": instance.answer}))
    env.step(_call("update_record", sobject="Case", record_id=other_case, fields={"Priority": "Critical"}))
    _, reward, done, _, info = env.step("submit done")
    assert done and reward == 0.0
    assert info["diff_check"]["missing"] == []
    assert len(info["diff_check"]["stray"]) == 1 and other_case in info["diff_check"]["stray"][0]
    assert "Priority" in info["diff_check"]["stray"][0]
    # The stray write is recorded in the state diff beside the required one.
    changed = {(c["id"], tuple(sorted(c["fields"]))) for c in info["state_diff"]}
    assert changed == {(case_id, ("OwnerId",)), (other_case, ("Priority",))}


def test_a_wrong_owner_is_missing_the_change_and_a_non_privileged_record_keeps_the_gold_hidden(
    env_org: Path, ncr_tasks: list[TaskInstance]
) -> None:
    instance = ncr_tasks[1]
    wrong = _other_agent(env_org, instance.answer or "")
    for privileged in (True, False):
        env = _make(env_org, ncr_tasks, privileged=privileged)
        _, info = env.reset(options={"idx": instance.idx})
        assert ("expected_changes" in info) == privileged
        case_id = info["records"]["case"]
        env.step(_call("update_record", sobject="Case", record_id=case_id, fields={"OwnerId": wrong}))
        _, reward, _, _, info = env.step("submit done")
        assert reward == 0.0
        missing = info["diff_check"]["missing"]
        if privileged:
            assert len(missing) == 1 and instance.answer in missing[0]
        else:
            assert missing == 1 and instance.answer not in json.dumps(info)


def test_a_refused_write_changes_nothing_and_answers_with_salesforce_error(
    env_org: Path, ncr_tasks: list[TaskInstance]
) -> None:
    env = _make(env_org, ncr_tasks)
    _, info = env.reset(options={"idx": ncr_tasks[0].idx})
    case_id = info["records"]["case"]
    obs, *_ = env.step(_call("update_record", sobject="Case", record_id=case_id, fields={"Status": "Pending"}))
    assert obs.startswith("Error: INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST")
    obs, *_ = env.step(_call("update_record", sobject="Case", record_id=case_id, fields={"CaseNumber": "1"}))
    assert "INVALID_FIELD_FOR_INSERT_UPDATE" in obs
    _, reward, _, _, info = env.step("submit done")
    assert reward == 0.0 and info["state_diff"] == []


def test_writes_stay_in_their_episode_and_their_environment(env_org: Path, ncr_tasks: list[TaskInstance]) -> None:
    before = _digest(env_org)
    first, second = _make(env_org, ncr_tasks), _make(env_org, ncr_tasks)
    _, info1 = first.reset(options={"idx": ncr_tasks[0].idx})
    second.reset(options={"idx": ncr_tasks[0].idx})
    case1 = info1["records"]["case"]
    first.step(_call("update_record", sobject="Case", record_id=case1, fields={"Subject": "changed in env one"}))
    marked = "SELECT COUNT() FROM Case WHERE Subject = 'changed in env one'"
    assert first.unwrapped._view.query(marked)["totalSize"] == 1
    assert second.unwrapped._view.query(marked)["totalSize"] == 0
    # A reset drops the episode's writes; the next episode's set-up case is made afresh, with the same id
    # (an episode's ids are reproducible).
    _, again = first.reset(options={"idx": ncr_tasks[0].idx})
    assert first.unwrapped._view.query(marked)["totalSize"] == 0
    assert again["records"] == info1["records"]
    assert first.unwrapped._view.query("SELECT COUNT() FROM Case WHERE CreatedDate = TODAY")["totalSize"] == 1
    first.close()
    second.close()
    assert _digest(env_org) == before


def test_act_mode_refuses_what_it_cannot_play(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    with pytest.raises(ValueError, match="has no act mode; the tasks with one: case_routing"):
        gym.make("CRMArena-NCR-Act-v0", org=env_org, tasks=env_tasks[:1], task=None)
    published = {"idx": 0, "task": "NCR", "query": "Who?", "answer": "005Ws000000000AAA"}
    with pytest.raises(ValueError, match="needs a generated instance"):
        gym.make("CRMArena-NCR-Act-v0", org=env_org, tasks=[published])


@pytest.mark.parametrize("env_id", act_env_ids())
def test_check_env_passes_on_act_ids(env_id: str, env_org: Path, ncr_tasks: list[TaskInstance]) -> None:
    env = gym.make(env_id, org=env_org, tasks=ncr_tasks)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_sixty_four_async_envs_keep_their_writes_apart(env_org: Path, ncr_tasks: list[TaskInstance]) -> None:
    before = _digest(env_org)
    n = 64
    envs = gym.make_vec(
        "CRMArena-NCR-Act-v0",
        num_envs=n,
        vectorization_mode="async",
        vector_kwargs={"shared_memory": False},
        org=env_org,
        tasks=ncr_tasks,
        toolset="flex",
    )
    try:
        _, info = envs.reset(seed=0)
        cases = list(info["records"]["case"])  # vector info: each key's values across the envs
        marks = [f"mark {i}" for i in range(n)]
        envs.step(
            [
                _call("update_record", sobject="Case", record_id=str(c), fields={"Subject": m})
                for c, m in zip(cases, marks, strict=True)
            ]
        )
        counts = ["execute SELECT Subject FROM Case WHERE Subject LIKE 'mark %'" for _ in range(n)]
        obs, *_ = envs.step(counts)
        for i, text in enumerate(obs):
            assert f"'{marks[i]}'" in text and sum(f"'mark {j}'" in text for j in range(n)) == 1, (i, text[:300])
    finally:
        envs.close()
    assert _digest(env_org) == before


def test_act_mode_refuses_a_pro_instance_saying_what_it_covers() -> None:
    from crmarena_gym.tasks import TaskInstance, act_plan

    pro = TaskInstance(idx=0, task="case_routing", kind="b2b", query="Who?", answer="005Wt000000000AAA")
    with pytest.raises(ValueError, match="act mode covers CRMArena's case_routing so far"):
        act_plan(pro)


def test_deleting_the_set_up_case_is_a_stray_delete_and_the_change_is_missing(
    env_org: Path, ncr_tasks: list[TaskInstance]
) -> None:
    env = _make(env_org, ncr_tasks, privileged=True)
    _, info = env.reset(options={"idx": ncr_tasks[0].idx})
    case_id = info["records"]["case"]
    obs, *_ = env.step(_call("delete_record", sobject="Case", record_id=case_id))
    assert "success" in obs
    _, reward, _, _, info = env.step("submit done")
    assert reward == 0.0
    assert info["state_diff"] == [{"sobject": "Case", "id": case_id, "op": "delete", "fields": {}}]
    assert info["diff_check"]["stray"] == [f"delete Case {case_id}"]
    assert info["diff_check"]["missing"][0].endswith("the record was deleted")
