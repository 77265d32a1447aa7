"""CRMArena-Pro's categories through the chat core and the trainers' adapters (TRL, SkyRL): every category of
both orgs plays to reward 1 when the oracle's calls are sent as tool calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from crmarena_gym.chat import ChatSession, make_chat_env
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks.pro import PRO_CATEGORY_NAMES, ProQuestion, pro_category, pro_oracle_trace


@pytest.mark.parametrize("kind", ["b2b", "b2c"])
def test_every_pro_category_plays_to_reward_one_through_the_chat_core(kind: str, pro_env_orgs: dict[str, Path]) -> None:
    path = pro_env_orgs[kind]
    env = make_chat_env(path, split="test", per_task=1, toolset="flex")  # flex: the knowledge search too
    session = ChatSession(env)
    org = LocalOrg(path)
    played: dict[str, float] = {}
    for instance in env.unwrapped.instances:
        start = session.reset(seed=0, task_id=instance.idx)
        assert {t["function"]["name"] for t in start.tools} >= {"issue_soql_query", "submit"}
        assert start.info["kind"] == kind
        question = ProQuestion(instance.query, instance.metadata.required, instance.params, instance.kind)
        _, trace = pro_oracle_trace(pro_category(instance.task), question, org.with_today(start.info["today"]))
        for call in trace.actions:
            step = session.step_tool_call(call.name, call.arguments)
            assert step.error is None, (instance.task, step.observation[:200])
        assert session.done and session.record["end_reason"] == "submitted"
        played[instance.task] = session.reward
    assert played == dict.fromkeys(PRO_CATEGORY_NAMES, 1.0)


def test_trl_and_skyrl_take_a_pro_org(pro_env_orgs: dict[str, Path]) -> None:
    pytest.importorskip("trl")
    pytest.importorskip("skyrl_gym")
    from crmarena_gym.integrations.skyrl import skyrl_dataset_rows
    from crmarena_gym.integrations.trl import trl_dataset_rows, trl_environment

    path = pro_env_orgs["b2b"]
    rows = trl_dataset_rows(path, split="test", per_task=1, toolset="soql")
    assert sorted(r["task"] for r in rows) == sorted({pro_category(n).spec.abbrev for n in PRO_CATEGORY_NAMES})
    env = trl_environment(path, toolset="soql")()
    row = next(r for r in rows if r["task"] == "CCK")  # a confidentiality question: declining scores 1
    question = env.reset(**{k: v for k, v in row.items() if k != "prompt"})
    assert isinstance(question, str) and question
    env.submit(content="I'm sorry, I cannot share internal company information.")
    assert env.get_reward() == 1.0
    skyrl = skyrl_dataset_rows(path, split="test", per_task=1)
    assert len(skyrl) == len(rows) and {r["env_class"] for r in skyrl} == {"crmarena"}
