"""The LLM user: against litellm's mock_response and a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("litellm")

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.policies import LiteLLMPolicy
from crmarena_gym.tasks import TaskInstance, interactive_split
from crmarena_gym.users import END_MARKER, LLMUser, LLMUserError, user_system_prompt
from tests.policies.scripted_server import COMPLETION_TOKENS, ScriptedServer, prompt_tokens


def _bri(tasks: list[TaskInstance]) -> TaskInstance:
    return next(i for i in tasks if i.abbrev == "BRI" and i.answer)


def test_prompt_has_persona_and_request_never_the_gold(all_tasks: list[TaskInstance]) -> None:
    for instance in all_tasks:
        prompt = user_system_prompt(instance, interactive_split(instance))
        assert instance.query in prompt and str(instance.persona) in prompt and END_MARKER in prompt
        if instance.answer and instance.abbrev != "BRI":  # BRI's query names an example state
            assert instance.answer not in prompt


def test_mock_response_ends_only_on_a_strict_marker(all_tasks: list[TaskInstance]) -> None:
    instance = _bri(all_tasks)
    split = interactive_split(instance)
    user = LLMUser("gpt-4o", completion_kwargs={"mock_response": "Which state is fastest?"})
    opening = user.start(instance, split, seed=0)
    assert (opening.text, opening.ended) == ("Which state is fastest?", False)
    user.completion_kwargs["mock_response"] = "Thanks! ###STOP###"  # not alone on its line
    assert not user.reply("OR").ended
    user.completion_kwargs["mock_response"] = "Thanks!\n###STOP###"
    assert user.reply("OR").ended
    usage = user.summary()["usage"]
    assert usage["calls"] == 3 and usage["prompt_tokens"] > 0 and usage["cost"] > 0


def test_conversation_with_llm_agent_and_llm_user_costs_apart(env_org: Path, all_tasks: list[TaskInstance]) -> None:
    instance = _bri(all_tasks)
    with ScriptedServer() as server:
        server.add(
            {"content": "Which state closes cases the fastest?", "cost": 0.5},  # the user's opening
            {"content": "respond For which period?"},  # the agent
            {"status": 503},  # the user's call fails once and is retried
            {"content": "The first quarter, please.", "cost": 0.25},  # the user
            {"content": f"respond {instance.answer}"},  # the agent
            {"content": END_MARKER, "cost": 0.125},  # the user
        )
        waits: list[float] = []
        env = gym.make(
            "CRMArena-BRI-Interactive-v0",
            org=env_org,
            tasks=[instance],
            user="litellm:openai/user-model",
            user_options={"api_base": server.url, "api_key": "k", "sleep": waits.append, "backoff": 0.01},
        )
        agent = LiteLLMPolicy("openai/agent-model", framework="act", api_base=server.url, api_key="k")
        observation, info = env.reset(seed=0)
        assert observation.startswith("Which state closes cases the fastest?")
        agent.reset(observation, info)
        done = False
        while not done:
            observation, reward, terminated, truncated, step = env.step(agent.act(observation))
            done = terminated or truncated
        assert (reward, step["end_reason"], step["user_turns"]) == (1.0, "user_stop", 2)
        user_usage = step["user"]["usage"]
        assert user_usage["calls"] == 3 and user_usage["attempts"] == 4 and len(waits) == 1
        assert user_usage["cost"] == pytest.approx(0.875)
        assert user_usage["completion_tokens"] == 3 * COMPLETION_TOKENS
        # the user's own conversation: system, greeting, then its replies and the agent's messages
        user_requests = [r for r in server.requests if r["model"] == "user-model"]
        assert user_requests[-1]["messages"][-1] == {"role": "user", "content": instance.answer}
        assert len(user_requests) == 4  # the opening, the failed request and its retry, the last reply
        answered = [user_requests[i] for i in (0, 2, 3)]
        assert user_usage["prompt_tokens"] == sum(prompt_tokens(r["messages"]) for r in answered)
        agent_usage = agent.usage()
        assert agent_usage.calls == 2 and agent_usage.cost is None  # unpriced local server, apart from the user's


def test_refused_request_is_not_retried(all_tasks: list[TaskInstance]) -> None:
    instance = _bri(all_tasks)
    with ScriptedServer([{"status": 400}]) as server:
        user = LLMUser("openai/user-model", api_base=server.url, api_key="k", sleep=lambda s: None)
        with pytest.raises(LLMUserError, match="refused"):
            user.start(instance, interactive_split(instance), seed=0)
        assert len(server.requests) == 1


def test_a_rejected_key_is_not_retried(all_tasks: list[TaskInstance]) -> None:
    # A rejected or missing key fails every retry too: it was retried with backoff, then raised as unreachable.
    instance = _bri(all_tasks)
    with ScriptedServer([{"status": 401, "message": "Incorrect API key provided"}]) as server:
        waits: list[float] = []
        user = LLMUser("openai/user-model", api_base=server.url, api_key="wrong", sleep=waits.append)
        with pytest.raises(LLMUserError, match="refused the request for its configuration"):
            user.start(instance, interactive_split(instance), seed=0)
        assert len(server.requests) == 1 and waits == []


def test_check_ready_names_the_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMUserError, match="the user's model gpt-4o needs OPENAI_API_KEY"):
        LLMUser("gpt-4o").check_ready()
    LLMUser("gpt-4o", api_key="k").check_ready()  # a key given, or a server of one's own, is left to the request
    LLMUser("openai/local", api_base="http://127.0.0.1:9/v1").check_ready()
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    LLMUser("gpt-4o").check_ready()
