"""The interactive environments: respond, the user's replies, the end marker, turn limits, the asking oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.chat import DELIVERED, ChatSession, EpisodeRecorder
from crmarena_gym.envs import interactive_env_ids
from crmarena_gym.policies import ReactiveOraclePolicy
from crmarena_gym.tasks import TASK_ABBREVS, TaskInstance


def _run(env: gym.Env, policy: Any, idx: int, seed: int = 0) -> tuple[float, dict[str, Any], dict[str, Any]]:
    observation, info = env.reset(seed=seed, options={"idx": idx})
    recorder = EpisodeRecorder(observation, info, idx=idx)
    policy.reset(observation, info)
    while True:
        action = policy.act(observation)
        observation, reward, terminated, truncated, step_info = env.step(action)
        recorder.step(action, observation, float(reward), terminated, truncated, step_info)
        if terminated or truncated:
            return float(reward), step_info, recorder.finish()


def test_ids_registered_and_check_env(env_org: Path, all_tasks: list[TaskInstance]) -> None:
    ids = interactive_env_ids()
    assert ids == [f"CRMArena-{a}-Interactive-v0" for a in TASK_ABBREVS] + ["CRMArena-Interactive-v0"]
    for env_id in ids:
        env = gym.make(env_id, org=env_org, tasks=all_tasks)
        check_env(env.unwrapped, skip_render_check=True)
        env.close()


def test_asking_oracle_scores_one_on_every_family(env_org: Path, all_tasks: list[TaskInstance]) -> None:
    env = gym.make("CRMArena-Interactive-v0", org=env_org, tasks=all_tasks, toolset="functions", privileged=True)
    policy = ReactiveOraclePolicy()
    policy.attach(env)
    seen = set()
    for instance in all_tasks:
        reward, info, record = _run(env, policy, instance.idx)
        assert reward == 1.0, (instance.abbrev, instance.idx, record["conversation"])
        assert info["end_reason"] == "user_stop"
        conversation = record["conversation"]
        # it asked for every held-back criterion, and the user revealed each
        assert conversation["revealed"] == [c["name"] for c in env.reset(options={"idx": instance.idx})[1]["withheld"]]
        assert info["user_turns"] == len(conversation["revealed"]) + 1
        assert info["agent_turns"] >= info["user_turns"]
        seen.add(instance.abbrev)
    assert seen == set(TASK_ABBREVS)


class _AnswerAtOnce:
    """Answers from the opening alone: it cannot know the criteria, so it says None."""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        pass

    def act(self, observation: str) -> str:
        return "respond None"


def test_answering_at_once_scores_what_the_withheld_criteria_allow(
    env_org: Path, all_tasks: list[TaskInstance]
) -> None:
    env = gym.make("CRMArena-Interactive-v0", org=env_org, tasks=all_tasks)
    rewards = [_run(env, _AnswerAtOnce(), i.idx)[0] for i in all_tasks]
    # Without the criteria the only answer it can give is None: right exactly where there is no answer.
    expected = sum(1 for i in all_tasks if i.answer is None) / len(all_tasks)
    assert sum(rewards) / len(rewards) == pytest.approx(expected)
    assert 0 < expected < 0.5


def test_same_seed_same_conversation(env_org: Path, all_tasks: list[TaskInstance]) -> None:
    env = gym.make("CRMArena-Interactive-v0", org=env_org, tasks=all_tasks)
    script = ["respond Hello, what do you need?", "respond For which period?", "respond Which product is it?"]
    for instance in all_tasks[::7]:
        runs = []
        for _ in range(2):
            observation, _ = env.reset(seed=11, options={"idx": instance.idx})
            runs.append([observation] + [env.step(a)[0] for a in script])
        assert runs[0] == runs[1]


def test_submit_and_limits(env_org: Path, all_tasks: list[TaskInstance]) -> None:
    bri = next(i for i in all_tasks if i.abbrev == "BRI")
    env = gym.make("CRMArena-BRI-Interactive-v0", org=env_org, tasks=[bri], max_user_turns=2)
    observation, info = env.reset(seed=0)
    assert info["user"]["kind"] == "scripted" and "withheld" not in info  # not privileged: nothing of the split
    assert "respond" in [t["function"]["name"] for t in info["tools"]]
    recorder = EpisodeRecorder(observation, info, idx=bri.idx)
    action = "respond Hi there?"
    first = env.step(action)
    assert first[4]["user_turns"] == 1
    recorder.step(action, *first)
    action = "respond What colour is the sky?"
    _, reward, terminated, truncated, step = last = env.step(action)
    assert (reward, terminated, truncated, step["end_reason"], step["user_turns"]) == (
        0.0,
        False,
        True,
        "user_turns",
        2,
    )
    recorder.step(action, *last)
    # The record says the user's budget ran out, not the agent's (20 turns, 2 used).
    record = recorder.finish()
    assert (record["end_reason"], record["turns"], record["conversation"]["end"]) == ("user_turns", 2, "user_turns")
    env.reset(seed=0)
    _, reward, terminated, _, step = env.step(f"submit {bri.answer}")
    assert (reward, terminated, step["end_reason"], step["agent_turns"], step["user_turns"]) == (
        1.0,
        True,
        "submitted",
        1,
        0,
    )
    env.reset(seed=0)
    error = env.step('{"name": "respond", "arguments": {"text": "hi"}}')
    assert error[4]["error"] == "INVALID_ARGUMENT" and not error[2]
    # the agent-turn limit: Gymnasium's TimeLimit at the registered budget
    env.reset(seed=0)
    for _ in range(19):
        assert not env.step("execute SELECT Id FROM Case LIMIT 1")[3]
    assert env.step("execute SELECT Id FROM Case LIMIT 1")[3]


def test_a_conversation_through_the_chat_core(env_org: Path, all_tasks: list[TaskInstance]) -> None:
    bri = next(i for i in all_tasks if i.abbrev == "BRI" and i.answer)
    env = gym.make("CRMArena-BRI-Interactive-v0", org=env_org, tasks=[bri], toolset="functions")
    session = ChatSession(env, "fc")
    start = session.reset(seed=0)
    assert "respond" in [t["function"]["name"] for t in start.tools or []]
    step = session.step_tool_call("respond", {"message": "For which period?"})
    roles = [m["role"] for m in session.messages]
    assert roles[-3:] == ["assistant", "tool", "user"]
    assert session.messages[-2]["content"] == DELIVERED
    assert session.messages[-1]["content"] == step.observation and step.observation.strip()
    final = session.step_tool_call("respond", {"message": bri.answer})
    assert final.done and final.reward == 1.0 and session.messages[-1] == {"role": "user", "content": "###STOP###"}
    record = session.record
    assert record is not None and record["conversation"]["revealed"] == ["window"]
    assert [m["role"] for m in record["conversation"]["messages"]] == ["user", "agent", "user", "agent", "user"]
    # text frameworks: the user's reply is the next user message
    text = ChatSession(env, "act")
    text.reset(seed=0)
    text.step_text("respond For which period?")
    assert text.messages[-1]["role"] == "user" and text.messages[-2]["content"] == "respond For which period?"


def test_published_instances_are_refused(env_org: Path) -> None:
    record = {"idx": 0, "task": "BRI", "query": "Which state?", "answer": "OR"}
    with pytest.raises(ValueError, match="cannot be played as conversations"):
        gym.make("CRMArena-BRI-Interactive-v0", org=env_org, tasks=[record])


def test_make_chat_env_plays_conversations(env_org: Path, all_tasks: list[TaskInstance]) -> None:
    from crmarena_gym.chat import make_chat_env

    env = make_chat_env(env_org, task="NCR", instances=[i for i in all_tasks if i.abbrev == "NCR"], user="scripted")
    assert env.spec is not None and env.spec.id == "CRMArena-NCR-Interactive-v0"
    session = ChatSession(env, "fc")
    session.reset(seed=0)
    step = session.step_tool_call("respond", {"message": "What are the case details?"})
    assert step.info.get("action_kind") == "respond" or session.messages[-1]["role"] == "user"
    assert "Subject:" in session.messages[-1]["content"]


def test_eval_records_and_viewer_show_the_conversation(
    tmp_path: Path, env_org: Path, all_tasks: list[TaskInstance]
) -> None:
    from crmarena_gym.eval import ViewerData, evaluate, read_results

    tcu = [i for i in all_tasks if i.abbrev == "TCU"][:2]
    out = tmp_path / "run"
    evaluate("reactive-oracle", env_id="CRMArena-TCU-Interactive-v0", tasks=tcu, org=env_org, out=out, progress=False)
    records = read_results(out / "results.jsonl")
    assert [r["reward"] for r in records] == [1.0, 1.0]
    conversation = records[0]["conversation"]
    assert conversation["revealed"] == ["window", "direction", "n_cases"] and conversation["end"] == "user_stop"
    said = [m["content"] for m in conversation["messages"] if m["role"] == "user"]
    assert said[0] == conversation["opening"] and said[-1] == "###STOP###" and len(said) == 5
    episode = ViewerData([out]).api(f"/api/runs/run/episodes/{tcu[0].idx}/0")
    turns = [s["user"] for s in episode["steps"] if s["user"]]
    assert [t["revealed"] for t in turns] == [["window"], ["direction"], ["n_cases"], []]
    assert episode["conversation"]["user"] == "scripted"


def test_trl_environment_plays_a_conversation(env_org: Path) -> None:
    from crmarena_gym.integrations.trl import trl_dataset_rows, trl_environment

    cls = trl_environment(env_org, user="scripted", per_task=2)
    assert "respond" in vars(cls) and cls.metadata["user"] == "scripted"
    rows = trl_dataset_rows(env_org, per_task=2, user="scripted")
    assert "respond" in rows[0]["prompt"][0]["content"]  # the conversation's system prompt
    assert "respond" not in trl_dataset_rows(env_org, per_task=2)[0]["prompt"][0]["content"]
    row = next(r for r in rows if r["task"] == "BRI")
    env = cls()
    opening = env.reset(**row)
    assert "Return only the two-letter code" in opening
    reply = env.respond(message="For which period?")
    assert reply.strip() and reply != opening
    assert env.respond(message="None") == "###STOP###"
    record = env.record
    assert record is not None and record["conversation"]["revealed"] == ["window"]
    with pytest.raises(ValueError, match="unknown user"):
        trl_environment(env_org, user="gpt-4o")


def test_skyrl_carries_the_users_replies_as_user_messages(env_org: Path) -> None:
    skyrl_gym = pytest.importorskip("skyrl_gym")
    import crmarena_gym.integrations.skyrl  # noqa: F401 - registers "crmarena"
    from crmarena_gym.chat import chat_tasks

    instance = chat_tasks(env_org, split="train", per_task=2, tasks=["PVI"])[0]
    config = {"org": str(env_org), "toolset": "functions", "framework": "act", "per_task": 2, "user": "scripted"}
    env = skyrl_gym.make("crmarena", env_config=config, extras={"task_id": instance.idx, "task": "PVI"})
    messages, _ = env.init([])
    assert instance.params["case_id"] not in messages[1]["content"]  # held back
    output = env.step("respond Which case should I review?")
    assert output["observations"] == [{"role": "user", "content": f"The case's Id is {instance.params['case_id']}."}]
    output = env.step(f"respond {instance.answer or 'None'}")
    assert output["done"] and output["reward"] == 1.0
    assert output["metadata"]["record"]["conversation"]["revealed"] == ["case"]


def test_the_system_prompt_tells_the_agent_to_ask(env_org: Path, all_tasks: list[TaskInstance]) -> None:
    from crmarena_gym.chat import system_prompt

    env = gym.make("CRMArena-Interactive-v0", org=env_org, tasks=all_tasks[:3])
    _, info = env.reset(seed=0)
    single = gym.make("CRMArena-v0", org=env_org, tasks=all_tasks[:3]).reset(seed=0)[1]
    for framework in ("act", "react", "fc"):
        talking, alone = system_prompt(info, framework), system_prompt(single, framework)
        assert "respond" in talking and "ask them for what you lack" in talking.lower()
        assert "respond" not in alone


def test_openenv_serves_conversations(env_org: Path) -> None:
    pytest.importorskip("openenv")
    from crmarena_gym.integrations.openenv import CRMArenaAction, CRMArenaHub, HubConfig, ToolCall

    with pytest.raises(ValueError, match="unknown user"):
        HubConfig(org=str(env_org), user="gpt-4o")
    hub = CRMArenaHub(HubConfig(org=str(env_org), user="scripted", per_task=2))
    env = hub.make_environment()
    instance = hub.instances("test", "BRI")[0]
    start = env.reset(split="test", task_id=instance.idx)
    assert "respond" in [t["function"]["name"] for t in start.tools]
    obs = env.step(CRMArenaAction(tool_call=ToolCall(name="respond", arguments={"message": "For which period?"})))
    assert [m["role"] for m in obs.messages][-2:] == ["tool", "user"] and obs.messages[-1]["content"] == obs.text
    obs = env.step(CRMArenaAction(tool_call=ToolCall(name="respond", arguments={"message": instance.answer})))
    assert obs.done and obs.reward == 1.0 and obs.record["conversation"]["revealed"] == ["window"]


def test_eval_cli_user_flag(
    tmp_path: Path, env_org: Path, all_tasks: list[TaskInstance], capsys: pytest.CaptureFixture[str]
) -> None:
    from crmarena_gym.cli import main
    from crmarena_gym.eval import read_results
    from crmarena_gym.tasks import save_tasks

    save_tasks([i for i in all_tasks if i.abbrev == "NED"], tmp_path / "ned.json")
    common = ["eval", "--org", str(env_org), "--tasks", str(tmp_path / "ned.json"), "--policy", "reactive-oracle"]
    out = tmp_path / "run"
    assert main([*common, "--env", "CRMArena-NED-v0", "--user", "scripted", "--out", str(out)]) == 0
    records = read_results(out / "results.jsonl")
    assert {r["reward"] for r in records} == {1.0}
    assert {tuple(r["conversation"]["revealed"]) for r in records} == {("description", "purchase_day")}
    capsys.readouterr()
    assert main([*common, "--env", "CRMArena-NCR-Act-v0", "--user", "scripted"]) == 2
    assert "has no conversation form" in capsys.readouterr().err
    assert main([*common, "--user", "gpt-4o"]) == 2
    assert "unknown user 'gpt-4o'; the users are" in capsys.readouterr().err
    assert main([*common, "--user", "scriptd"]) == 2  # a near miss is named
    assert "--user: unknown user 'scriptd' (did you mean 'scripted'?)" in capsys.readouterr().err
    assert main([*common, "--user-api-base", "http://127.0.0.1:1/v1"]) == 2
