"""Act mode through the chat core: an episode where the model makes the change by tool calls, scored by the
org's final state (and, for a quote decision, the article it names)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.chat import ChatSession
from crmarena_gym.tasks import TaskInstance, generate_tasks
from crmarena_gym.tasks.pro import generate_pro_tasks


def _reply(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    """An assistant message with one tool call, as a chat model sends it."""
    call = {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def _play(env: gym.Env, instance: TaskInstance, record: str, sobject: str, fields: dict[str, Any], answer: str):  # type: ignore[no-untyped-def]
    session = ChatSession(env)
    start = session.reset(task_id=instance.idx)
    names = {t["function"]["name"] for t in start.tools}
    assert {"update_record", "create_record", "delete_record", "submit"} <= names
    record_id = start.info["records"][record]
    (read,) = session.reply(
        _reply("issue_soql_query", {"query": f"SELECT Id FROM {sobject} WHERE Id = '{record_id}'"}, 1)
    )
    assert read.error is None and record_id in read.observation
    (write,) = session.reply(_reply("update_record", {"sobject": sobject, "record_id": record_id, "fields": fields}, 2))
    assert write.error is None and "success" in write.observation, write.observation
    (done,) = session.reply(_reply("submit", {"content": answer}, 3))
    assert session.done and session.record["end_reason"] == "submitted"
    return session, done


def test_an_act_episode_plays_to_reward_one_through_the_chat_core(env_org: Path) -> None:
    instance = generate_tasks(env_org, seed=5, per_task=1, tasks=["NCR"])[0]
    env = gym.make("CRMArena-NCR-Act-v0", org=env_org, tasks=[instance], toolset="flex")
    session, last = _play(env, instance, "case", "Case", {"OwnerId": instance.answer}, "done")
    assert session.reward == 1.0 and last.info["diff_check"]["ok"]
    case = session.record["trajectory"][-1]["state_diff"][0]
    assert (case["sobject"], case["op"], case["fields"]["OwnerId"]["new"]) == ("Case", "update", instance.answer)
    # The same episode giving the case to another agent: the chat core reports the state's grade, 0.
    other = env.unwrapped.org.query(f"SELECT Id FROM User WHERE Id != '{instance.answer}' LIMIT 1")["records"][0]["Id"]
    session, last = _play(env, instance, "case", "Case", {"OwnerId": other}, "done")
    assert session.reward == 0.0 and last.info["diff_check"]["missing"] == 1  # a count: the gold stays hidden


@pytest.mark.parametrize("kind", ["b2b", "b2c"])
def test_a_pro_quote_decision_plays_to_reward_one_through_the_chat_core(
    kind: str, pro_env_orgs: dict[str, Path]
) -> None:
    path = pro_env_orgs[kind]
    tasks = generate_pro_tasks(path, category="QAP", seed=5, per_task=6)
    instance = next(i for i in tasks if i.answer is not None)
    env = gym.make(f"CRMArena-Pro-{kind.upper()}-QAP-Act-v0", org=path, tasks=tasks, toolset="soql")
    session, last = _play(env, instance, "quote", "Quote", {"Status": "Rejected"}, str(instance.answer))
    assert session.reward == 1.0
    assert last.info["diff_check"]["ok"] and last.info["reward_breakdown"]["answer_ok"]
    # The right decision naming no article scores 0: the answer is graded beside the diff.
    session, last = _play(env, instance, "quote", "Quote", {"Status": "Rejected"}, "None")
    assert session.reward == 0.0 and last.info["diff_check"]["ok"]
