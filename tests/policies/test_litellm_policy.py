"""LiteLLMPolicy end to end, with no network: litellm over HTTP to a scripted server on 127.0.0.1, and
litellm's ``mock_response``; every framework through ``gym.make``; retries and the error budget."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from crmarena_gym.eval import run_episode
from crmarena_gym.policies import LiteLLMPolicy, LLMConfigurationError, LLMError, system_prompt
from crmarena_gym.schema import schema_text
from crmarena_gym.tasks import TaskInstance
from tests.policies.scripted_server import COMPLETION_TOKENS, ScriptedServer, prompt_tokens

litellm = pytest.importorskip("litellm")


def _play(env: gym.Env, policy: LiteLLMPolicy, idx: int) -> tuple[float, list[str], dict[str, Any]]:
    observation, info = env.reset(seed=0, options={"task_id": idx})
    policy.attach(env)
    policy.reset(observation, info, seed=0)
    actions, done, truncated, reward, step_info = [], False, False, 0.0, {}
    while not (done or truncated):
        action = policy.act(observation)
        actions.append(action)
        observation, reward, done, truncated, step_info = env.step(action)
    return float(reward), actions, step_info


def _policy(server: ScriptedServer, framework: str, **kwargs: Any) -> LiteLLMPolicy:
    return LiteLLMPolicy("openai/scripted", framework, api_base=server.url, api_key="test-key", timeout=5.0, **kwargs)  # type: ignore[arg-type]


def _expected_usage(server: ScriptedServer) -> tuple[int, int]:
    prompt = sum(prompt_tokens(r["messages"]) for r in server.requests)
    return prompt, COMPLETION_TOKENS * len(server.requests)


# -- the prompt ---------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["act", "react", "fc"])
def test_system_prompt_carries_role_schema_format_and_none_rule(framework: str, env_org: Path, bri_instance) -> None:
    env = gym.make("CRMArena-BRI-v0", org=env_org, tasks=[bri_instance])
    _, info = env.reset(seed=0)
    text = system_prompt(info, framework)  # type: ignore[arg-type]
    assert f"You are a {info['persona']}" in text
    assert schema_text().strip() in text  # every object and field with its description
    assert "submit None" in text and "two-letter US state code" in text
    assert ("<execute>...</execute>" in text) == (framework != "fc")  # the env's action format, in text modes
    assert ("Thought:" in text) == (framework == "react")


# -- the scripted server ------------------------------------------------------------------------


def test_act_over_http_solves_an_instance(server: ScriptedServer, env_org: Path, bri_instance: TaskInstance) -> None:
    env = gym.make("CRMArena-BRI-v0", org=env_org, tasks=[bri_instance])
    server.add({"content": "execute SELECT COUNT(Id) FROM Case"}, {"content": f"submit {bri_instance.answer}"})
    policy = _policy(server, "act")
    reward, actions, _ = _play(env, policy, bri_instance.idx)
    assert reward == 1.0
    assert actions == ["execute SELECT COUNT(Id) FROM Case", f"submit {bri_instance.answer}"]
    first, second = server.requests
    assert first["messages"][0]["role"] == "system" and first["messages"][1]["content"].startswith(bri_instance.query)
    assert "tools" not in first
    # the query's rows come back as the next user message, exactly as the env rendered them
    assert second["messages"][-1]["role"] == "user"
    assert second["messages"][-1]["content"].startswith("Salesforce instance output: [{'expr0': ")
    usage = policy.usage()
    assert (usage.prompt_tokens, usage.completion_tokens) == _expected_usage(server)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.calls == 2 and usage.cost is None and usage.unpriced_calls == 2  # unknown model: unpriced, not 0


def test_react_keeps_the_thought_out_of_the_action(
    server: ScriptedServer, env_org: Path, bri_instance: TaskInstance
) -> None:
    env = gym.make("CRMArena-BRI-v0", org=env_org, tasks=[bri_instance])
    server.add(
        {"content": "Thought: list the states first.\n<execute>SELECT Id FROM Account LIMIT 2</execute>"},
        {"content": f"Thought: I have it.\nAction: submit {bri_instance.answer}"},
    )
    reward, actions, info = _play(env, _policy(server, "react"), bri_instance.idx)
    assert reward == 1.0 and info["submitted"] == bri_instance.answer
    assert actions[0].startswith("Thought: list the states first.")  # the env reads the tag itself
    assert actions[1] == f"submit {bri_instance.answer}"


def test_function_calling_over_http_feeds_results_back_as_tool_messages(
    server: ScriptedServer, env_org: Path, bri_instance: TaskInstance
) -> None:
    env = gym.make("CRMArena-BRI-v0", org=env_org, tasks=[bri_instance], toolset="functions")
    server.add(
        {"tool_calls": [{"name": "get_period", "arguments": {"period_name": "Q1", "year": 2022}}], "cost": 0.25},
        {"tool_calls": [{"name": "submit", "arguments": {"content": bri_instance.answer}}], "cost": 0.5},
    )
    policy = _policy(server, "fc")
    reward, actions, _ = _play(env, policy, bri_instance.idx)
    assert reward == 1.0
    assert json.loads(actions[0]) == {"name": "get_period", "arguments": {"period_name": "Q1", "year": 2022}}
    first, second = server.requests
    assert {t["function"]["name"] for t in first["tools"]} >= {"get_period", "get_cases", "submit"}
    assistant, tool = second["messages"][-2:]
    assert assistant["tool_calls"][0]["id"] == "call_0" and tool["role"] == "tool" and tool["tool_call_id"] == "call_0"
    assert ast.literal_eval(tool["content"]) == {
        "start_date": "2022-01-01T00:00:00Z",
        "end_date": "2022-04-01T00:00:00Z",
    }
    usage = policy.usage()
    assert usage.cost == pytest.approx(0.75) and [c.cost_source for c in usage.per_call] == ["provider", "provider"]


def test_function_calling_runs_every_tool_call_and_a_text_reply_ends_unanswered(
    server: ScriptedServer, env_org: Path, bri_instance
) -> None:
    env = gym.make("CRMArena-BRI-v0", org=env_org, tasks=[bri_instance], toolset="functions")
    server.add(
        {
            "tool_calls": [
                {"name": "get_issues"},
                {"name": "get_period", "arguments": {"period_name": "Q1", "year": 2021}},
            ]
        },
        {"content": f"submit {bri_instance.answer}"},
    )
    record = run_episode(env, _policy(server, "fc"), bri_instance.idx)
    assert len(server.requests) == 2  # the second call ran without asking the model again
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_0", "call_1"]
    assert tool_messages[1]["content"] == "{'start_date': '2021-01-01T00:00:00Z', 'end_date': '2021-04-01T00:00:00Z'}"
    # a text "submit X" in function calling is refused: the episode ends there, unanswered, without an error
    assert (record["end_reason"], record["reward"], record["error"], record["turns"]) == ("no_tool_call", 0.0, None, 2)
    assert record["final_reply"] == f"submit {bri_instance.answer}" and record["usage"]["calls"] == 2


@pytest.mark.parametrize("framework", ["act", "fc"])
def test_a_lone_surrogate_in_a_reply_is_cleaned_before_the_next_request(
    framework: str, server: ScriptedServer, env_org: Path, bri_instance: TaskInstance
) -> None:
    # Issue 36: a lone surrogate in a model's text reply made the next request fail (UTF-8 cannot encode it),
    # and the episode ended as llm_error.
    env = gym.make(
        "CRMArena-BRI-v0", org=env_org, tasks=[bri_instance], toolset="functions" if framework == "fc" else "soql"
    )
    if framework == "act":
        server.add({"content": "execute SELECT Id FROM Case WHERE Subject = '\ud83d' LIMIT 1"})
    else:
        server.add({"content": "Let me look \ud83d", "tool_calls": [{"name": "get_issues"}]})
    server.add({"content": f"submit {bri_instance.answer}"})
    policy = _policy(server, framework)
    observation, info = env.reset(seed=0, options={"task_id": bri_instance.idx})
    policy.attach(env)
    policy.reset(observation, info, seed=0)
    action = policy.act(observation)
    if framework == "act":
        assert "\ud83d" in action  # the environment gets the reply as the model wrote it
    assert policy.step_details()["reply"].count("\ud83d") == 1  # and so does the step's record
    assert policy.step_details()["cleaned"] == {"lone_surrogates_in_observation": 0, "lone_surrogates_in_reply": 1}
    observation, *_ = env.step(action)
    action = policy.act(observation)  # before: LLMError, "surrogates not allowed"
    assert action == f"submit {bri_instance.answer}" and "cleaned" not in policy.step_details()
    assistant = server.requests[1]["messages"][2]
    assert assistant["role"] == "assistant" and "\ufffd" in assistant["content"]  # what the provider got back
    # An observation holding one (an error echoing the query) is cleaned too, and counted.
    policy.reset(observation, info, seed=0)
    server.add({"content": "submit None"})
    policy.act("FORMAT_ERROR: no action found in '\udc00\udc01'")
    assert policy.step_details()["cleaned"] == {"lone_surrogates_in_observation": 2, "lone_surrogates_in_reply": 0}
    assert server.requests[-1]["messages"][-1]["content"].endswith("'\ufffd\ufffd'")


# -- mock_response ------------------------------------------------------------------------------


def _mocked(framework: str, reply: str, tool_calls: list[dict[str, Any]] | None = None) -> LiteLLMPolicy:
    extra: dict[str, Any] = {"mock_response": reply}
    if tool_calls:
        extra["mock_tool_calls"] = tool_calls
    return LiteLLMPolicy("gpt-4o", framework, completion_kwargs=extra)  # type: ignore[arg-type]


@pytest.mark.parametrize("framework", ["act", "react", "fc"])
def test_mock_response_each_framework_through_gym_make(
    framework: str, env_org: Path, bri_instance: TaskInstance
) -> None:
    answer = bri_instance.answer
    if framework == "fc":
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "submit", "arguments": json.dumps({"content": answer})},
        }
        policy = _mocked("fc", "", [call])
    elif framework == "react":
        policy = _mocked("react", f"Thought: done.\n<submit>{answer}</submit>")
    else:
        policy = _mocked("act", f"submit {answer}")
    env = gym.make(
        "CRMArena-BRI-v0", org=env_org, tasks=[bri_instance], toolset="functions" if framework == "fc" else "soql"
    )
    reward, actions, _ = _play(env, policy, bri_instance.idx)
    assert reward == 1.0 and len(actions) == 1
    usage = policy.usage()
    # litellm's price table for gpt-4o, read independently of the policy
    price = litellm.model_cost["gpt-4o"]
    expected = (
        usage.prompt_tokens * price["input_cost_per_token"] + usage.completion_tokens * price["output_cost_per_token"]
    )
    assert usage.prompt_tokens > 0 and usage.cost == pytest.approx(expected)
    assert usage.per_call[0].cost_source == "litellm"


# -- retries ------------------------------------------------------------------------------------


def test_429_500_and_timeout_are_retried_with_exponential_backoff(
    server: ScriptedServer, env_org: Path, bri_instance: TaskInstance
) -> None:
    env = gym.make("CRMArena-BRI-v0", org=env_org, tasks=[bri_instance])
    server.add({"status": 429}, {"status": 500}, {"status": 503}, {"sleep": 1.0}, {"content": "submit None"})
    waits: list[float] = []
    policy = LiteLLMPolicy(
        "openai/scripted",
        "act",
        api_base=server.url,
        api_key="k",
        timeout=0.3,
        max_retries=4,
        backoff=1.0,
        sleep=waits.append,
    )
    _, actions, _ = _play(env, policy, bri_instance.idx)
    assert actions == ["submit None"]
    assert len(server.requests) == 5  # litellm itself retried nothing (max_retries=0)
    assert len(waits) == 4
    for n, wait in enumerate(waits):  # base * 2^n, times a jitter factor in [0.5, 1)
        assert 0.5 * 2**n <= wait < 2**n
    assert policy.usage().retries == 4 and policy.usage().per_call[0].attempts == 5


def test_jitter_is_seeded() -> None:
    a = LiteLLMPolicy("gpt-4o", "act", seed=5)
    b = LiteLLMPolicy("gpt-4o", "act", seed=5)
    assert [a.delay(n) for n in range(1, 5)] == [b.delay(n) for n in range(1, 5)]
    assert a.delay(20) <= a.max_backoff


def test_past_the_budget_the_call_fails_with_llm_error(server: ScriptedServer) -> None:
    server.add({"status": 500}, {"status": 429}, {"status": 500})
    waits: list[float] = []
    policy = LiteLLMPolicy(
        "openai/scripted", "act", api_base=server.url, api_key="k", max_retries=2, sleep=waits.append
    )
    policy.reset("q", {"persona": "service agent", "schema": "", "action_format": ""})
    with pytest.raises(LLMError, match="failed 3 times in a row") as err:
        policy.act("q")
    assert err.value.end_reason == "llm_error"
    assert len(server.requests) == 3 and len(waits) == 2
    assert not err.value.unreachable  # the server answered: errors, not a missing connection


def test_a_server_nobody_listens_on_is_unreachable() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    waits: list[float] = []
    policy = LiteLLMPolicy("openai/scripted", "act", api_base=closed, api_key="k", max_retries=1, sleep=waits.append)
    policy.reset("q", {"persona": "service agent", "schema": "", "action_format": ""})
    with pytest.raises(LLMError, match="failed 2 times in a row") as err:
        policy.act("q")
    assert err.value.unreachable and len(waits) == 1


def test_a_refused_request_is_not_retried(server: ScriptedServer) -> None:
    server.add({"status": 400, "message": "bad request"}, {"content": "submit None"})
    policy = LiteLLMPolicy("openai/scripted", "act", api_base=server.url, api_key="k", sleep=lambda s: None)
    policy.reset("q", {"persona": "service agent", "schema": "", "action_format": ""})
    with pytest.raises(LLMError, match="refused") as err:
        policy.act("q")
    assert len(server.requests) == 1
    assert not err.value.fatal  # a bad request may be this episode's alone: the run goes on


_INFO = {"persona": "service agent", "schema": "", "action_format": ""}


@pytest.mark.parametrize(
    ("step", "kind"),
    [
        ({"status": 401, "message": "Incorrect API key provided"}, "AuthenticationError"),
        ({"status": 403, "message": "this project may not use the model"}, "APIError"),  # litellm: 403 is an APIError
        ({"status": 404, "message": "The model 'scripted' does not exist"}, "NotFoundError"),
        ({"status": 500, "message": "Missing credentials. Please pass an api_key"}, "InternalServerError"),
        ({"status": 503, "message": "Unauthorized"}, "ServiceUnavailableError"),
    ],
)
def test_configuration_errors_are_not_retried_and_are_fatal(
    server: ScriptedServer, step: dict[str, Any], kind: str
) -> None:
    server.add(step, {"content": "submit None"})
    waits: list[float] = []
    policy = LiteLLMPolicy("openai/scripted", "act", api_base=server.url, api_key="k", sleep=waits.append)
    policy.reset("q", _INFO)
    with pytest.raises(LLMConfigurationError, match=kind) as err:
        policy.act("q")
    assert len(server.requests) == 1 and waits == []
    assert err.value.fatal and err.value.end_reason == "llm_error"
    assert "check the API key given" in str(err.value)  # a key was given: the provider did not take it


def test_a_missing_key_names_the_variable_to_set_without_retrying(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    waits: list[float] = []
    policy = LiteLLMPolicy("gpt-4o", "act", sleep=waits.append)  # the client refuses before any request
    policy.reset("q", _INFO)
    with pytest.raises(LLMConfigurationError) as err:
        policy.act("q")
    assert waits == [] and policy.usage().calls == 0
    message = str(err.value)
    assert "set OPENAI_API_KEY in the environment" in message and "--api-key-env VAR" in message


def test_send_seed_sends_each_episode_seed(server: ScriptedServer) -> None:
    server.add({"content": "submit None"}, {"content": "submit None"}, {"content": "submit None"})
    policy = LiteLLMPolicy("openai/scripted", "act", api_base=server.url, api_key="k", seed=3, send_seed=True)
    for episode_seed in (101, 202, None):
        policy.reset("q", _INFO, seed=episode_seed)
        policy.act("q")
    assert [r["seed"] for r in server.requests] == [101, 202, 3]  # no episode seed: the constructor's
    quiet = LiteLLMPolicy("openai/scripted", "act", api_base=server.url, api_key="k", seed=3)
    server.add({"content": "submit None"})
    quiet.reset("q", _INFO, seed=5)
    quiet.act("q")
    assert "seed" not in server.requests[-1]


def test_bad_arguments_are_refused_with_the_value() -> None:
    with pytest.raises(ValueError, match="'cot'"):
        LiteLLMPolicy("gpt-4o", "cot")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="-1"):
        LiteLLMPolicy("gpt-4o", max_retries=-1)


# -- cost of a server that is not the provider --------------------------------------------------


@pytest.mark.parametrize("how", ["api_base", "OPENAI_API_BASE", "OPENAI_BASE_URL"])
def test_a_local_server_under_an_openai_model_name_is_unpriced(
    how: str, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    server.add({"content": "submit None"}, {"content": "submit None", "cost": 0.125})
    if how == "api_base":
        policy = LiteLLMPolicy("gpt-4o", "act", api_base=server.url, api_key="k")
    else:
        monkeypatch.setenv(how, server.url)
        policy = LiteLLMPolicy("gpt-4o", "act", api_key="k")
    assert policy.effective_api_base() == server.url and not policy.priced_by_table()
    policy.reset("q", _INFO)
    policy.act("q")
    assert len(server.requests) == 1  # the request went to the local server, not to OpenAI
    call = policy.usage().per_call[0]
    assert call.cost is None and call.cost_source is None  # not gpt-4o's list price
    policy.act("q")  # a server that reports its own charge is priced by it
    assert policy.usage().per_call[1].cost == 0.125 and policy.usage().per_call[1].cost_source == "provider"


def test_the_providers_own_endpoints_stay_priced(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    assert LiteLLMPolicy("gpt-4o", "act").priced_by_table()
    assert LiteLLMPolicy("gpt-4o", "act", api_base="https://api.openai.com/v1").priced_by_table()
    assert LiteLLMPolicy("azure/gpt-4o", "act", api_base="https://team.openai.azure.com").priced_by_table()
    assert not LiteLLMPolicy("azure/gpt-4o", "act", api_base="http://127.0.0.1:8000").priced_by_table()
