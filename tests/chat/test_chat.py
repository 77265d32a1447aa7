"""The chat-episode core: the system prompt's flavours, replies to actions, observations to messages,
sessions over an environment, and the training and test splits."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

from crmarena_gym.chat import (
    NOT_RUN,
    ChatEpisode,
    ChatSession,
    EpisodeOverError,
    Shaping,
    chat_tasks,
    make_chat_env,
    system_prompt,
)
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import TASK_SPECS, TaskInstance, default_tasks, instance_key, oracle_trace

QUERY_RULE = "Queries are Salesforce SOQL or SOSL"


@pytest.mark.parametrize(
    ("toolset", "framework", "says_queries"),
    [
        ("soql", "act", True),
        ("soql", "react", True),
        ("functions", "fc", False),
        ("flex", "fc", True),
    ],
)
def test_the_query_rule_follows_the_toolset(
    toolset: str, framework: str, says_queries: bool, env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset=toolset)
    _, info = env.reset(seed=0)
    assert (QUERY_RULE in system_prompt(info, framework)) is says_queries  # type: ignore[arg-type]


def test_every_call_of_a_reply_is_an_action_and_calls_left_at_the_end_are_not_run() -> None:
    chat = ChatEpisode("fc")
    schema = {"type": "function", "function": {"name": "x", "description": "X.", "parameters": {"type": "object"}}}
    chat.start({"persona": "service agent", "schema": "", "tools": [schema]})
    assert chat.tools == [
        {
            "type": "function",
            "function": {"name": "x", "description": "X.", "parameters": {"type": "object", "properties": {}}},
        }
    ]
    chat.observe("question")
    calls = [
        {"id": "a", "type": "function", "function": {"name": "get_issues", "arguments": ""}},
        {"id": "b", "type": "function", "function": {"name": "get_period", "arguments": '{"year":2021}'}},
        {"id": "c", "type": "function", "function": {"name": "submit", "arguments": "{bad"}},
    ]
    reply = chat.reply({"content": "", "tool_calls": calls})
    assert [json.loads(a) if a.startswith('{"') else a for a in reply.actions] == [
        {"name": "get_issues", "arguments": {}},
        {"name": "get_period", "arguments": {"year": 2021}},
        {"name": "submit", "arguments": "{bad"},
    ]
    assert [c["id"] for c in chat.messages[-1]["tool_calls"]] == ["call_0", "call_1", "call_2"]
    assert chat.messages[-1]["tool_calls"][1]["function"]["arguments"] == '{"year": 2021}'
    chat.observe("[]")
    assert chat.pending_calls == 2
    with pytest.raises(RuntimeError, match="observe"):
        chat.reply({"content": "more"})
    chat.close_calls()
    assert chat.messages[-3:] == [
        {"role": "tool", "tool_call_id": "call_0", "content": "[]"},
        {"role": "tool", "tool_call_id": "call_1", "content": NOT_RUN},
        {"role": "tool", "tool_call_id": "call_2", "content": NOT_RUN},
    ]
    text = chat.reply({"content": " submit None "})  # a text reply in function calling: no action at all
    assert text.ends_unanswered and text.actions == ()


def test_react_text_flavour_keeps_tags_and_drops_an_untagged_thought() -> None:
    chat = ChatEpisode("react")
    chat.start({"persona": "service agent", "schema": "", "action_format": ""})
    assert chat.tools is None
    chat.observe("q")
    tagged = "Thought: count.\n<execute>SELECT COUNT() FROM Case</execute>"
    assert chat.reply({"content": tagged + "\nSalesforce instance output: [made up]"}).actions == (tagged,)
    assert chat.messages[-1] == {"role": "assistant", "content": tagged}  # what follows the action is dropped
    chat.observe("[]")
    assert chat.reply({"content": "Thought: done.\nAction: submit OR"}).actions == ("submit OR",)


def test_a_session_plays_the_oracle_to_reward_one_with_tool_messages(
    env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    org = LocalOrg(env_org)
    for abbrev in ("HTU", "TCU", "TII", "MTA", "BRI"):
        instance = next(i for i in env_tasks if i.abbrev == abbrev)
        session = ChatSession(gym.make(f"CRMArena-{abbrev}-v0", org=org, tasks=[instance], toolset="functions"))
        start = session.reset(seed=0, task_id=instance.idx)
        assert start.messages[1] == {"role": "user", "content": start.observation}
        assert {t["function"]["name"] for t in start.tools} >= {"get_cases", "submit"}
        trace = oracle_trace(instance, org.with_today(start.info["today"]))
        for n, call in enumerate(trace.actions):
            step = session.step_tool_call(call.name, call.arguments)
            assert step.message == {"role": "tool", "tool_call_id": f"call_{n}", "content": step.observation}
            assert step.error is None, step.observation
        assert step.terminated and session.done and session.reward == 1.0, abbrev
        record = session.record
        submitted = instance.answer if instance.answer is not None else "None"
        assert (record["gold"], record["submitted"]) == (instance.answer, submitted)
        assert record["end_reason"] == "submitted"
        assert record["reward_breakdown"]["reward"] == 1.0 and record["turns"] == len(trace.actions)
        with pytest.raises(EpisodeOverError, match="reset"):
            session.step("submit None")


def test_bad_tool_calls_give_error_observations(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    session = ChatSession(gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="functions"))
    session.reset(seed=0)
    unknown = session.step_tool_call("drop_table", {})
    assert unknown.error == "FUNCTION_ERROR" and "'drop_table'" in unknown.observation
    bad_json = session.step_tool_call("get_cases", '{"start_date": ')
    assert bad_json.error == "FORMAT_ERROR" and "not valid JSON" in bad_json.observation
    wrong_type = session.step_tool_call("get_period", {"period_name": "Q1", "year": "soon"})
    assert wrong_type.error == "FUNCTION_ERROR" and "'soon'" in wrong_type.observation
    assert not session.done and session.turns == 3


def test_same_seed_and_actions_give_the_same_conversation(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    def play() -> list[dict]:
        session = ChatSession(gym.make("CRMArena-v0", org=env_org, tasks=env_tasks, toolset="soql"), "act")
        session.reset(seed=11)
        session.step_text("execute SELECT COUNT(Id) FROM Case")
        session.step_text("submit None")
        return session.messages

    assert play() == play()


def test_training_split_never_holds_a_test_question(env_org: Path) -> None:
    train = chat_tasks(env_org, split="train", seed=4, per_task=3, tasks=["HTU", "BRI"])
    test = default_tasks(env_org)
    assert {i.abbrev for i in train} == {"HTU", "BRI"} and len(train) == 6
    assert not {instance_key(i.task, i.params) for i in train} & {instance_key(i.task, i.params) for i in test}
    assert chat_tasks(env_org, split="test", per_task=2, tasks=["BRI"]) == [i for i in test if i.abbrev == "BRI"][:2]
    env = make_chat_env(env_org, task="BRI", split="train", seed=4, per_task=3)
    assert [i.idx for i in env.unwrapped.instances] == [i.idx for i in train if i.abbrev == "BRI"]


def test_bad_split_arguments_are_refused_with_the_value(env_org: Path) -> None:
    with pytest.raises(ValueError, match="'dev'"):
        chat_tasks(env_org, split="dev")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="test seed 0, got 0"):
        chat_tasks(env_org, split="train", seed=0)
    with pytest.raises(ValueError, match="'xyz'"):
        ChatEpisode("xyz")  # type: ignore[arg-type]


def test_text_flavours_list_the_task_functions_they_get_no_schemas_for(
    env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="functions")
    _, info = env.reset(seed=0)
    text = system_prompt(info, "act")
    functions = text.split("# Functions\n", 1)[1].split("\n\n", 1)[0]
    names = {line[2:].split("(")[0] for line in functions.splitlines() if line.startswith("- ")}
    assert names == set(env.unwrapped.tools.names) - {"submit"}
    assert "- get_period(period_name: string, year: integer): " in text
    assert "- get_cases(start_date?: string, end_date?: string, agent_ids?: array" in text
    assert "# Functions" not in system_prompt(info, "fc")  # function calling gets the schemas instead


def test_shaping_penalises_refused_calls_and_malformed_replies_and_keeps_the_score(
    env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    instance = next(i for i in env_tasks if i.abbrev == "BRI" and i.answer)
    shaping = Shaping(refused_call=0.1, malformed_reply=0.25)
    session = ChatSession(
        gym.make("CRMArena-BRI-v0", org=env_org, tasks=[instance], toolset="flex"), "fc", shaping=shaping
    )
    session.reset(task_id=instance.idx)
    steps = session.reply(
        {
            "tool_calls": [
                {"name": "get_period", "arguments": {"period_name": "Q9", "year": 2021}},  # refused
                {"name": "issue_soql_query", "arguments": "{not json"},  # malformed
                {"name": "get_issues", "arguments": {}},  # fine
            ]
        }
    )
    assert [s.error for s in steps] == ["FUNCTION_ERROR", "FORMAT_ERROR", None]
    assert [s.reward for s in steps] == [-0.1, -0.25, 0.0]
    session.step_tool_call("submit", {"content": instance.answer})
    assert session.score == 1.0 and session.reward == pytest.approx(1.0 - 0.35)
    record = session.record
    assert record["reward"] == 1.0 and record["success"]  # the record keeps the score, as evaluation does
    assert record["shaping"] == {
        "refused_call": 0.1,
        "malformed_reply": 0.25,
        "refused_calls": 1,
        "malformed_replies": 1,
        "return": pytest.approx(0.65),
    }
    # a function-calling reply without a call is a malformed reply too, and ends the episode
    session.reset(task_id=instance.idx)
    (step,) = session.reply({"content": f"The answer is {instance.answer}."})
    assert step.done and step.reward == -0.25 and session.end_reason == "no_tool_call"
    assert session.record["final_reply"] == f"The answer is {instance.answer}." and session.record["turns"] == 0
    for bad in ({"refused_call": -1}, {"malformed_reply": float("nan")}, {"refused_call": True}):
        with pytest.raises(ValueError, match="finite number of 0 or more"):
            Shaping(**bad)


def test_a_row_budget_ends_the_episode_as_out_of_turns(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    session = ChatSession(gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks, toolset="soql"), "act")
    session.reset(seed=0, max_turns=2)
    assert not session.step_text("execute SELECT COUNT(Id) FROM Case").done
    last = session.step_text("execute SELECT COUNT(Id) FROM Case")
    assert last.truncated and session.done and session.end_reason == "max_turns" and session.record["turns"] == 2
    with pytest.raises(ValueError, match="max_turns"):
        session.reset(seed=0, max_turns=0)


@pytest.fixture(scope="module")
def service_org(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The service org's seed (0), whose knowledge facts are the fixed bank: its test set holds 130 of 144."""
    from crmarena_gym.datagen import generate_org

    path = tmp_path_factory.mktemp("service") / "org.sqlite"
    generate_org(path, seed=0, scale=0.5)
    return path


@pytest.mark.slow
def test_every_family_gets_per_task_training_instances_none_a_test_question_or_fact(service_org: Path) -> None:
    """The seed-0 org alone leaves 14 knowledge facts outside its test set; sibling orgs (the following
    seeds) carry care articles whose questions no test set holds. Every family reaches per_task=130; no
    training instance is a test instance, no knowledge question asks a test question or states a test
    fact; each sibling fact is in its org's article; sibling instances play to reward 1 on their own org."""
    import collections
    import sqlite3

    from crmarena_gym.chat import instance_org
    from crmarena_gym.datagen import read_latent, read_manifest

    test = default_tasks(service_org)
    test_kqa = [i for i in test if i.abbrev == "KQA"]
    assert len(test_kqa) == 130
    service_facts = read_latent(service_org)["kqa_facts"]  # the fixed bank: no care facts at seed 0
    assert len(service_facts) == 144 and not [f for f in service_facts if "warranty on the" in f["question"]]
    train = chat_tasks(service_org, split="train", seed=1, per_task=130)
    assert collections.Counter(i.abbrev for i in train) == {s.abbrev: 130 for s in TASK_SPECS}
    assert [i.idx for i in train] == list(range(len(train)))
    assert not {instance_key(i.task, i.params) for i in train} & {instance_key(i.task, i.params) for i in test}
    kqa = [i for i in train if i.abbrev == "KQA"]
    questions = [i.params["question"] for i in kqa]
    assert len(set(questions)) == 130 and not set(questions) & {i.params["question"] for i in test_kqa}
    assert not {(q, i.answer) for q, i in zip(questions, kqa, strict=True)} & {
        (i.params["question"], i.answer) for i in test_kqa
    }
    siblings = [i for i in kqa if "org_seed" in i.params]
    assert len(siblings) == 130 - 14 and {i.params["org_seed"] for i in siblings} <= set(range(1, 7))
    base_seed = read_manifest(service_org).seed
    assert base_seed == 0
    for instance in siblings:  # the answer is in the article the question is about, in the instance's own org
        home = instance_org(instance, service_org)
        with sqlite3.connect(home) as conn:
            (body,) = conn.execute(
                "SELECT FAQ_Answer__c FROM Knowledge__kav WHERE Id = ?", (instance.params["article_id"],)
            ).fetchone()
        assert instance.answer in body
    org = LocalOrg(service_org)
    env = make_chat_env(org, split="train", seed=1, per_task=130, task="KQA", toolset="functions")
    for instance in siblings[:3]:
        session = ChatSession(env)
        start = session.reset(task_id=instance.idx)
        assert start.observation.startswith(instance.query.strip())
        home = LocalOrg(instance_org(instance, service_org))
        for call in oracle_trace(instance, home.with_today(start.info["today"])).actions:
            session.step_tool_call(call.name, call.arguments)
        assert session.reward == 1.0 and session.record["gold"] == instance.answer
