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
    assert env.get_metrics() == {"reward": 1.0, "turns": len(calls)}


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
    with pytest.raises(ValueError, match="'fc'"):
        skyrl_gym.make("crmarena", env_config={"framework": "fc"}, extras={"task_id": 0})
