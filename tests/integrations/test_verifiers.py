"""The verifiers environment (verifiers 0.4): loaded as verifiers loads tasksets, the project's prompt and
question opening each task, a scripted player's replies read as the environment reads actions (the task
functions as text calls), the reward and the episode record on the trace."""

from __future__ import annotations

import asyncio
import json

import pytest

from crmarena_gym.chat import chat_tasks
from crmarena_gym.org import LocalOrg
from tests.integrations.conftest import oracle_calls

vf = pytest.importorskip("verifiers.v1", reason="verifiers is not installed: pip install 'crmarena-gym[verifiers]'")

from crmarena_gym.integrations.verifiers import TASKSET_ID, load_environment  # noqa: E402
from tests.integrations.verifiers_fakes import ScriptedAgents  # noqa: E402


def test_verifiers_loads_the_taskset_by_its_id(adapter_org: LocalOrg) -> None:
    from verifiers.v1.utils.loaders import environment_class, taskset_class

    from crmarena_gym.integrations.verifiers import CRMArenaEnv, CRMArenaTaskset

    assert taskset_class(TASKSET_ID) is CRMArenaTaskset and environment_class(TASKSET_ID) is CRMArenaEnv
    env = load_environment(org=str(adapter_org.path), per_task=2, tasks=["BRI", "KQA"], framework="act")
    tasks = list(env.taskset)
    instances = chat_tasks(adapter_org, split="train", per_task=2, tasks=["BRI", "KQA"])
    assert [t.data.info["task_id"] for t in tasks] == [i.idx for i in instances]
    for task, instance in zip(tasks, instances, strict=True):
        assert task.data.prompt.startswith(instance.query.strip())
        assert (
            task.data.system_prompt.startswith("You are a") and "Reply with the action alone" in task.data.system_prompt
        )


@pytest.mark.parametrize("abbrev", ["BRI", "KQA"])
def test_an_oracle_episode_in_react_text_reaches_reward_one(abbrev: str, adapter_org: LocalOrg) -> None:
    env = load_environment(org=str(adapter_org.path), per_task=2, tasks=[abbrev], toolset="functions")
    task = next(iter(env.taskset))
    (instance,) = [i for i in chat_tasks(adapter_org, split="train", per_task=2) if i.idx == task.data.info["task_id"]]
    calls = oracle_calls(adapter_org, instance)
    replies = [
        f"Thought: step {n}.\n<execute>{name}({json.dumps(args)})</execute>" for n, (name, args) in enumerate(calls)
    ]
    agents = ScriptedAgents(replies)
    asyncio.run(env.run(task, agents))
    (interaction,) = agents.interactions
    assert interaction.sent[0] is None and len(interaction.sent) == len(calls)  # the task's prompt opened
    assert all(isinstance(m, str) and not m.startswith("FORMAT_ERROR") for m in interaction.sent[1:])
    assert interaction.trace.rewards == {"crmarena_reward": 1.0}
    record = interaction.trace.info["crmarena_record"]
    assert (record["gold"], record["end_reason"], record["turns"]) == (instance.answer, "submitted", len(calls))


def test_the_turn_budget_shaping_and_refusals(adapter_org: LocalOrg) -> None:
    env = load_environment(
        org=str(adapter_org.path),
        per_task=2,
        tasks=["BRI"],
        framework="act",
        max_turns=2,
        shaping={"malformed_reply": 0.5},
    )
    task = next(iter(env.taskset))
    agents = ScriptedAgents(["I do not know.", "execute SELECT COUNT(Id) FROM Case", "submit OR"])
    asyncio.run(env.run(task, agents))
    interaction = agents.interactions[0]
    assert interaction.sent[1].startswith("FORMAT_ERROR") and len(interaction.sent) == 2  # out of turns after two
    record = interaction.trace.info["crmarena_record"]
    assert record["end_reason"] == "max_turns" and interaction.trace.rewards == {"crmarena_reward": -0.5}
    assert task.data.info["metadata"]["shaping"] == {"refused_call": 0.0, "malformed_reply": 0.5}
    with pytest.raises(ValueError, match="text frameworks"):
        list(load_environment(org=str(adapter_org.path), per_task=2, tasks=["BRI"], framework="fc").taskset)
    with pytest.raises(ValueError, match="unknown option"):
        load_environment(org=str(adapter_org.path), colour="red")


def test_a_conversation_with_the_scripted_user(adapter_org: LocalOrg) -> None:
    env = load_environment(org=str(adapter_org.path), per_task=2, tasks=["BRI"], framework="act", user="scripted")
    task = next(iter(env.taskset))
    (instance,) = [i for i in chat_tasks(adapter_org, split="train", per_task=2) if i.idx == task.data.info["task_id"]]
    # the prompt is the user's opening, without the window; the system prompt tells the model to ask
    assert task.data.prompt.split("\n\n")[0] != instance.query and "respond" in task.data.system_prompt
    agents = ScriptedAgents(["respond For which period?", f"respond {instance.answer or 'None'}"])
    asyncio.run(env.run(task, agents))
    (interaction,) = agents.interactions
    assert interaction.sent[0] is None and interaction.sent[1].strip()  # the user's reply: the next user turn
    assert (
        "Q" in interaction.sent[1] or "quarter" in interaction.sent[1] or any(c.isdigit() for c in interaction.sent[1])
    )
    assert interaction.trace.rewards == {"crmarena_reward": 1.0}
    record = interaction.trace.info["crmarena_record"]
    assert record["conversation"]["end"] == "user_stop" and record["conversation"]["revealed"] == ["window"]
    with pytest.raises(ValueError, match="unknown user"):
        list(load_environment(org=str(adapter_org.path), per_task=2, tasks=["BRI"], user="gpt-4o").taskset)
