"""The SkyRL text environment: registered with skyrl_gym, stepping the chat core to reward 1."""

from __future__ import annotations

import json

import pytest

from crmarena_gym.chat import chat_tasks
from crmarena_gym.org import LocalOrg
from tests.integrations.conftest import oracle_calls

skyrl_gym = pytest.importorskip("skyrl_gym")
import crmarena_gym.integrations.skyrl  # noqa: E402, F401 - registers "crmarena"


@pytest.mark.parametrize("abbrev", ["HTU", "BRI", "NCR", "KQA"])
def test_an_oracle_episode_in_text_reaches_reward_one(abbrev: str, adapter_org: LocalOrg) -> None:
    instance = chat_tasks(adapter_org, split="train", per_task=2, tasks=[abbrev])[0]
    config = {"org": str(adapter_org.path), "toolset": "functions", "framework": "react", "per_task": 2}
    env = skyrl_gym.make("crmarena", env_config=config, extras={"task_id": instance.idx, "split": "train"})
    messages, metadata = env.init([])
    assert [m["role"] for m in messages] == ["system", "user"] and messages[1]["content"].startswith(instance.query)
    assert metadata == {"task": abbrev, "task_id": instance.idx}
    assert "# Functions" in messages[0]["content"] and "- get_cases(" in messages[0]["content"]
    calls = oracle_calls(adapter_org, instance)
    for n, (name, arguments) in enumerate(calls):
        reply = f"Thought: step {n}.\n<execute>{name}({json.dumps(arguments)})</execute>"
        output = env.step(reply)
        if n < len(calls) - 1:
            assert not output["done"] and output["observations"][0]["role"] == "user"
            assert "error" not in output["metadata"], output["observations"]
    assert output["done"] and output["reward"] == 1.0 and output["observations"] == []
    assert env.get_metrics() == {"reward": 1.0, "score": 1.0, "turns": len(calls)}
    record = output["metadata"]["record"]
    assert (record["gold"], record["end_reason"], record["turns"]) == (instance.answer, "submitted", len(calls))


def test_the_default_is_the_papers_query_toolset_and_bad_rows_are_refused(adapter_org: LocalOrg) -> None:
    instance = chat_tasks(adapter_org, split="test", per_task=1, tasks=["BRI"])[0]
    env = skyrl_gym.make(
        "crmarena", env_config={"org": str(adapter_org.path)}, extras={"task_id": instance.idx, "split": "test"}
    )
    messages, _ = env.init([])
    assert (
        "Queries are Salesforce SOQL or SOSL" in messages[0]["content"] and "# Functions" not in messages[0]["content"]
    )
    output = env.step("Thought: count.\nAction: execute SELECT COUNT(Id) FROM Case")
    assert output["observations"][0]["content"].startswith("Salesforce instance output: [{'expr0': ")
    assert not output["done"] and output["reward"] == 0.0
    with pytest.raises(ValueError, match="task_id"):
        skyrl_gym.make("crmarena", env_config={"org": str(adapter_org.path)}, extras={})
    with pytest.raises(ValueError, match="'xml'"):
        skyrl_gym.make("crmarena", env_config={"framework": "xml"}, extras={"task_id": 0})
    with pytest.raises(ValueError, match=r"max_turns.*21"):
        skyrl_gym.make("crmarena", env_config={"org": str(adapter_org.path)}, extras={"task_id": 0, "max_turns": 21})


def test_function_calling_in_text_max_turns_per_row_and_the_postprocessed_action(adapter_org: LocalOrg) -> None:
    (instance,) = chat_tasks(adapter_org, split="train", per_task=2, tasks=["BRI"])[:1]
    config = {"org": str(adapter_org.path), "toolset": "functions", "framework": "fc", "per_task": 2}
    env = skyrl_gym.make("crmarena", env_config=config, extras={"task_id": instance.idx, "max_turns": 2})
    _, metadata = env.init([])
    assert "get_period" in {t["function"]["name"] for t in metadata["tools"]}
    reply = (
        'Two calls.\n<tool_call>\n{"name": "get_issues", "arguments": {}}\n</tool_call>\n'
        '<tool_call>{"name": "get_period", "arguments": {"period_name": "Q1", "year": 2021}}</tool_call>'
    )
    output = env.step(reply + "\n<tool_response>made up</tool_response>")
    assert output["postprocessed_action"] == reply  # what follows the last call is not kept
    assert [m["role"] for m in output["observations"]] == []  # the row's two turns are used up
    assert output["done"] and output["metadata"]["end_reason"] == "max_turns" and output["reward"] == 0.0
    assert env.session.messages[-2]["content"].startswith("[{'Id': ")
    assert (
        env.session.messages[-1]["content"]
        == "{'start_date': '2021-01-01T00:00:00Z', 'end_date': '2021-04-01T00:00:00Z'}"
    )
    # a reply with no call ends the episode unanswered; a text one keeps its words as they were
    env = skyrl_gym.make("crmarena", env_config=config, extras={"task_id": instance.idx})
    env.init([])
    output = env.step(f"submit {instance.answer}")
    assert output["done"] and output["reward"] == 0.0 and output["postprocessed_action"] is None
    assert output["metadata"]["record"]["end_reason"] == "no_tool_call"


def test_dataset_rows_name_instances_the_env_plays(adapter_org: LocalOrg) -> None:
    from crmarena_gym.integrations.skyrl import skyrl_dataset_rows
    from crmarena_gym.integrations.trl import trl_dataset_rows

    rows = skyrl_dataset_rows(adapter_org, per_task=2, tasks=["HTU", "KQA"], max_turns=7)
    trl = trl_dataset_rows(adapter_org, per_task=2, tasks=["HTU", "KQA"], toolset="soql")
    assert [r["extras"]["task_id"] for r in rows] == [r["task_id"] for r in trl]
    instances = {i.idx: i for i in chat_tasks(adapter_org, split="train", per_task=2, tasks=["HTU", "KQA"])}
    for row in rows:
        assert row["env_class"] == "crmarena" and row["extras"]["max_turns"] == 7
        env = skyrl_gym.make("crmarena", env_config={"org": str(adapter_org.path), "per_task": 2}, extras=row["extras"])
        messages, _ = env.init(row["prompt"])
        assert messages == row["prompt"] and messages[1]["content"].startswith(
            instances[row["extras"]["task_id"]].query
        )
        assert "Thought:" in messages[0]["content"]  # the default framework, ReAct
        assert env.max_turns == 7
