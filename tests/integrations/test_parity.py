"""One episode semantics on every path: the same scripted model replies played through evaluation (the
litellm policy over HTTP to a scripted OpenAI-compatible server, run by the runner), the OpenEnv
environment in process, TRL (function calling: its environment class driven as TRL's tool loop drives it;
Act and ReAct: the text class played by the project's rollout_func), the SkyRL env and the verifiers env
give the same conversation before every model reply, the same tool schemas, the same observations, rewards
and episode records, for Act, ReAct and function calling (verifiers: its v1 taskset for Act and ReAct, its
v0 multi-turn environment, verifiers 0.3.x, for function calling).

The scripts exercise what the semantics decide: several calls in one reply (all run, in order), a
refused call, calls left after a submit (not run), text after the action (dropped), a malformed reply,
and a function-calling reply without a call (the episode ends unanswered)."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from crmarena_gym.chat import NOT_RUN, chat_tasks, make_chat_env
from crmarena_gym.eval import run_episode
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import TaskInstance
from tests.integrations.conftest import PER_TASK

TOOLSETS = {"act": "soql", "react": "soql", "fc": "functions"}
# Fields of an evaluation record that say how the run was made rather than what happened in the episode.
# (evaluate() moves the system prompt itself into the run's metadata, keeping its hash in the record).
_RUN_FIELDS = ("seed", "usage", "system_prompt")


def _scripts(answer: str) -> dict[str, list[dict[str, Any]]]:
    """Replies per scenario: a dict with ``content`` and ``tool_calls`` ({name, arguments})."""
    return {
        "fc": [
            {
                "content": "Let me look.",
                "tool_calls": [
                    {"name": "get_period", "arguments": {"period_name": "Q1", "year": 2021}},
                    {"name": "get_issues", "arguments": {}},
                ],
            },
            {"tool_calls": [{"name": "get_period", "arguments": {"period_name": "Q9", "year": 2021}}]},
            {"tool_calls": [{"name": "submit", "arguments": {"content": answer}}, {"name": "get_issues"}]},
        ],
        "fc_unanswered": [
            {"tool_calls": [{"name": "get_issues", "arguments": {}}]},
            {"content": f"submit {answer}"},
        ],
        "act": [
            {"content": "execute SELECT COUNT(Id) FROM Case"},
            {"content": "I am not sure yet."},
            {"content": f"<submit>{answer}</submit> and that is final"},
        ],
        "react": [
            {
                "content": "Thought: count them.\n<execute>SELECT COUNT(Id) FROM Case</execute>\n"
                "Salesforce instance output: [made up]"
            },
            {"content": f"Thought: I know it.\nAction: submit {answer}"},
        ],
    }


def _framework(scenario: str) -> str:
    return "fc" if scenario.startswith("fc") else scenario


def _canonical(messages: list[dict[str, Any]], *, ids: bool = True) -> list[tuple[Any, ...]]:
    """Messages as (role, content, calls, answered call): the content None and "" alike, arguments parsed."""
    out = []
    for message in messages:
        calls = tuple(
            ((c.get("id") if ids else None), c["function"]["name"], json.dumps(_args(c["function"]["arguments"])))
            for c in message.get("tool_calls") or ()
        )
        out.append((message["role"], message.get("content") or "", calls, message.get("tool_call_id") if ids else None))
    return out


def _args(arguments: Any) -> Any:
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def _instance(org: LocalOrg) -> TaskInstance:
    return next(i for i in chat_tasks(org, split="train", per_task=PER_TASK, tasks=["BRI"]) if i.answer)


class Played(dict):
    """What one path gave: ``prompts`` (the conversation before each reply), ``tools``, ``observations``,
    ``reward`` and ``record``."""


# -- the paths -------------------------------------------------------------------------------------


def _evaluation(org: LocalOrg, instance: TaskInstance, scenario: str, script: list[dict[str, Any]]) -> Played:
    from crmarena_gym.policies import LiteLLMPolicy
    from tests.policies.scripted_server import ScriptedServer

    framework = _framework(scenario)
    env = make_chat_env(org, instances=[instance], toolset=TOOLSETS[framework])
    with ScriptedServer(script) as server:
        policy = LiteLLMPolicy("openai/scripted", framework, api_base=server.url, api_key="k", timeout=10.0)  # type: ignore[arg-type]
        policy.attach(env)
        record = run_episode(env, policy, instance.idx)
    observations = [step["observation"] for step in record["trajectory"][1:]]
    return Played(
        prompts=[_canonical(r["messages"]) for r in server.requests],
        tools=server.requests[0].get("tools"),
        observations=observations,
        reward=record["reward"],
        record=record,
    )


def _session_path(session: Any, script: list[dict[str, Any]], step: Any) -> tuple[list, list]:
    """Play a script through a ChatSession-backed adapter: ``step(reply)`` carries one reply out."""
    prompts, observations = [], []
    for reply in script:
        if session.done:
            break
        prompts.append(_canonical(session.messages))
        n = session.turns
        step(reply)
        observations += [s.observation for s in session.steps[n:] if s.action]
    return prompts, observations


def _openenv(org: LocalOrg, instance: TaskInstance, scenario: str, script: list[dict[str, Any]]) -> Played:
    pytest.importorskip("openenv.core", reason="openenv-core is not installed: pip install 'crmarena-gym[openenv]'")
    from crmarena_gym.integrations.openenv import CRMArenaAction, CRMArenaHub, HubConfig

    framework = _framework(scenario)
    hub = CRMArenaHub(HubConfig(org=str(org.path), toolset=TOOLSETS[framework], framework=framework, per_task=PER_TASK))
    env = hub.make_environment()
    start = env.reset(split="train", task_id=instance.idx)
    assert start.error is None, start.text
    last: list[Any] = []

    def step(reply: dict[str, Any]) -> None:
        calls = [{"name": c["name"], "arguments": c.get("arguments", {})} for c in reply.get("tool_calls") or ()]
        action = CRMArenaAction(text=reply.get("content"), tool_calls=calls or None)
        last[:] = [env.step(action)]

    session = env._episode.session
    prompts, observations = _session_path(session, script, step)
    observation = last[0]
    assert observation.done and observation.record == session.record and observation.end_reason
    return Played(
        prompts=prompts, tools=start.tools, observations=observations, reward=session.reward, record=observation.record
    )


def _trl(org: LocalOrg, instance: TaskInstance, scenario: str, script: list[dict[str, Any]]) -> Played:
    """TRL's loop, as its GRPOTrainer runs it. Function calling: the row's prompt with reset's text appended
    to the user message; each reply's calls run by calling the methods, each answered by a tool message; a
    reply without a call ends the rollout; get_reward scores it. Act and ReAct: the text environment class
    reset the same way, and the project's rollout_func playing the conversation with the trainer's chat
    template (the scripted replies stand in for the trainer's generation)."""
    get_json_schema = pytest.importorskip(
        "transformers.utils", reason="pip install 'crmarena-gym[trl]'"
    ).get_json_schema
    from crmarena_gym.integrations.trl import trl_dataset_rows, trl_environment

    framework = _framework(scenario)
    if framework != "fc":
        return _trl_text(org, instance, framework, script)
    cls = trl_environment(org, per_task=PER_TASK)
    (row,) = [r for r in trl_dataset_rows(org, per_task=PER_TASK, tasks=["BRI"]) if r["task_id"] == instance.idx]
    env = cls()
    conversation = [dict(m) for m in row["prompt"]]
    conversation[-1]["content"] += env.reset(**row)
    tools = [get_json_schema(getattr(env, s.__name__)) for s in _trl_tools(cls)]
    prompts, observations = [], []
    for reply in script:
        prompts.append(_canonical(conversation, ids=False))
        calls = reply.get("tool_calls") or []
        conversation.append(
            {
                "role": "assistant",
                "content": reply.get("content") or "",
                "tool_calls": [
                    {"type": "function", "function": {"name": c["name"], "arguments": c.get("arguments", {})}}
                    for c in calls
                ],
            }
        )
        if not calls:
            break
        for call in calls:
            result = getattr(env, call["name"])(**call.get("arguments", {}))
            if result != NOT_RUN:
                observations.append(result)
            conversation.append({"role": "tool", "name": call["name"], "content": str(result)})
        if env.session.done:
            break
    return Played(prompts=prompts, tools=tools, observations=observations, reward=env.get_reward(), record=env.record)


@functools.cache
def _tokenizer() -> Any:
    from crmarena_gym.integrations.trl import tiny_tokenizer

    return tiny_tokenizer(["Thought: count them. execute SELECT COUNT(Id) FROM Case submit Salesforce output"])


def _trl_text(org: LocalOrg, instance: TaskInstance, framework: str, script: list[dict[str, Any]]) -> Played:
    from types import SimpleNamespace

    from crmarena_gym.integrations.trl import TRLTextRollout, trl_dataset_rows, trl_environment

    tokenizer = _tokenizer()
    toolset = TOOLSETS[framework]
    cls = trl_environment(org, per_task=PER_TASK, toolset=toolset, framework=framework)
    rows = trl_dataset_rows(org, per_task=PER_TASK, tasks=["BRI"], toolset=toolset, framework=framework)
    (row,) = [r for r in rows if r["task_id"] == instance.idx]
    env = cls()
    prompt = [dict(m) for m in row["prompt"]]
    prompt[-1]["content"] += env.reset(**row)  # what GRPOTrainer does before it generates
    assert prompt == env.session.messages
    trainer = SimpleNamespace(
        environments=[env],
        processing_class=tokenizer,
        _tokenizer=tokenizer,
        chat_template=None,
        chat_template_kwargs={},
        max_completion_length=100_000,
        model=None,
    )
    prompts = []
    replies = iter(script)

    def generate(_trainer: Any, prompt_ids: list[list[int]]) -> tuple[list[list[int]], None]:
        (ids,) = prompt_ids
        # the model is shown the core's conversation, rendered by the chat template as a provider renders it
        assert ids == tokenizer.apply_chat_template(env.session.messages, add_generation_prompt=True, return_dict=False)
        prompts.append(_canonical(env.session.messages))
        text = next(replies)["content"]
        return [tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]], None

    output = TRLTextRollout(generate)([prompt], trainer)
    session = env.session
    # the sequence trained on: the conversation as the core keeps it, then the last reply as generated
    last = script[len(prompts) - 1]["content"]
    assert session.messages[-1]["role"] == "user"  # the submission's observation, never shown to the model
    before = tokenizer.apply_chat_template(session.messages[:-2], add_generation_prompt=True, tokenize=False)
    (completion,), (mask,) = output["completion_ids"], output["env_mask"]
    assert tokenizer.decode(output["prompt_ids"][0] + completion) == before + last + tokenizer.eos_token
    # the model's own tokens: each reply as the conversation keeps it, with the end of turn it generated (a
    # reply cut after its action did not generate the one the template closes it with)
    model_text = tokenizer.decode([t for t, m in zip(completion, mask, strict=True) if m])
    kept = [(m["content"], r["content"]) for m, r in zip(session.messages[2:-2:2], script, strict=False)]
    eos = tokenizer.eos_token
    assert model_text == "".join(k + (eos if k == r else "") for k, r in kept) + last + eos
    assert output["logprobs"] is None  # the scripted generation, like TRL's transformers path, gives none
    observations = [s.observation for s in session.steps if s.action]
    return Played(prompts=prompts, tools=None, observations=observations, reward=env.get_reward(), record=env.record)


def _trl_tools(cls: type) -> list[Any]:
    import inspect

    return [
        f
        for n, f in inspect.getmembers(cls, predicate=inspect.isfunction)
        if not n.startswith("_") and n not in ("reset", "get_reward")
    ]


def _hermes(reply: dict[str, Any]) -> str:
    text = reply.get("content") or ""
    for call in reply.get("tool_calls") or ():
        text += "\n<tool_call>\n" + json.dumps({"name": call["name"], "arguments": call.get("arguments", {})})
        text += "\n</tool_call>"
    return text


def _skyrl(org: LocalOrg, instance: TaskInstance, scenario: str, script: list[dict[str, Any]]) -> Played:
    skyrl_gym = pytest.importorskip("skyrl_gym", reason="skyrl-gym is not installed: pip install 'crmarena-gym[skyrl]'")
    import crmarena_gym.integrations.skyrl  # noqa: F401 - registers "crmarena"

    framework = _framework(scenario)
    config = {"org": str(org.path), "toolset": TOOLSETS[framework], "framework": framework, "per_task": PER_TASK}
    env = skyrl_gym.make("crmarena", env_config=config, extras={"task_id": instance.idx, "split": "train"})
    messages, metadata = env.init([])
    outputs: list[Any] = []

    def step(reply: dict[str, Any]) -> None:
        before = len(env.session.messages)
        outputs.append(env.step(_hermes(reply) if framework == "fc" else reply["content"]))
        if not outputs[-1]["done"]:  # what SkyRL appends is what the conversation holds
            assert outputs[-1]["observations"] == env.session.messages[before + 1 :]

    prompts, observations = _session_path(env.session, script, step)
    assert messages == env.session.messages[:2]
    assert outputs[-1]["done"] and outputs[-1]["metadata"]["record"] == env.session.record
    return Played(
        prompts=prompts,
        tools=metadata.get("tools"),
        observations=observations,
        reward=sum(o["reward"] for o in outputs),
        record=outputs[-1]["metadata"]["record"],
    )


def _verifiers(org: LocalOrg, instance: TaskInstance, scenario: str, script: list[dict[str, Any]]) -> Played:
    """verifiers 0.4 drives the episode: its interaction keeps the conversation (the model's replies as
    written: the text after an action, which the core drops, stays in verifiers' own history, so replies
    are compared as the core reads them); the environment answers each reply with a user turn."""
    import asyncio
    import importlib.util

    framework = _framework(scenario)
    if importlib.util.find_spec("verifiers") is None:
        pytest.skip("verifiers is not installed: pip install 'crmarena-gym[verifiers]'")
    if framework == "fc":
        return _verifiers_fc(org, instance, script)
    from crmarena_gym.chat import read_text_reply
    from crmarena_gym.integrations.verifiers import load_environment
    from tests.integrations.verifiers_fakes import ScriptedAgents

    env = load_environment(org=str(org.path), per_task=PER_TASK, toolset=TOOLSETS[framework], framework=framework)
    (task,) = [t for t in env.taskset if t.data.info["task_id"] == instance.idx]
    replies = [r["content"] for r in script]
    agents = ScriptedAgents(replies)
    asyncio.run(env.run(task, agents))
    (interaction,) = agents.interactions
    observations = [m for m in interaction.sent[1:] if m is not None]
    conversation = [
        {"role": "system", "content": task.data.system_prompt},
        {"role": "user", "content": task.data.prompt},
    ]
    prompts = []
    for n, reply in enumerate(replies):
        prompts.append(_canonical(conversation))
        conversation.append({"role": "assistant", "content": read_text_reply(reply)})
        if n >= len(observations):
            break
        conversation.append({"role": "user", "content": observations[n]})
    # the last observation (the submission's) is never sent: the episode is over
    record = interaction.trace.info["crmarena_record"]
    observations.append(record["trajectory"][-1]["observation"])
    return Played(
        prompts=prompts,
        tools=None,
        observations=observations,
        reward=interaction.trace.rewards["crmarena_reward"],
        record=record,
    )


def _verifiers_fc(org: LocalOrg, instance: TaskInstance, script: list[dict[str, Any]]) -> Played:
    """verifiers 0.3.x's multi-turn environment (the v0 API) runs the rollout: its OpenAI chat client asks
    the scripted OpenAI-compatible server for each reply (what the model is shown is what the server
    received), and the environment answers each reply through the chat core."""
    import asyncio

    from crmarena_gym.integrations.verifiers import load_environment
    from crmarena_gym.integrations.verifiers._tool_env import NEEDS_LEGACY, legacy_available
    from tests.policies.scripted_server import ScriptedServer

    if not legacy_available():
        pytest.skip(NEEDS_LEGACY)
    from openai import AsyncOpenAI
    from verifiers.legacy.clients import OpenAIChatCompletionsClient

    env = load_environment(org=str(org.path), per_task=PER_TASK, toolset="functions", framework="fc")
    (row,) = [r for r in env.dataset if r["info"]["task_id"] == instance.idx]

    async def play() -> Any:
        async with AsyncOpenAI(base_url=server.url, api_key="k", max_retries=0) as openai:
            client = OpenAIChatCompletionsClient(openai)
            rollout = {"prompt": row["prompt"], "info": row["info"], "example_id": row["example_id"]}
            return await env.run_rollout(rollout, client, "scripted", {}, state_columns=["crmarena_record"])

    with ScriptedServer(script) as server:
        output = asyncio.run(play())
    record = output["crmarena_record"]
    observations = [step["observation"] for step in record["trajectory"][1:]]
    return Played(
        prompts=[_canonical(r["messages"]) for r in server.requests],
        tools=server.requests[0].get("tools"),
        observations=observations,
        reward=output["reward"],
        record=record,
    )


PATHS = {"openenv": _openenv, "trl": _trl, "skyrl": _skyrl, "verifiers": _verifiers}


SCENARIOS = ["fc", "fc_unanswered", "act", "react"]
_REFERENCES: dict[str, Played] = {}


def _reference(org: LocalOrg, instance: TaskInstance, scenario: str) -> Played:
    """The evaluation's episode of a scenario (played once per test session)."""
    if scenario not in _REFERENCES:
        _REFERENCES[scenario] = _evaluation(org, instance, scenario, _scripts(instance.answer or "None")[scenario])
    return _REFERENCES[scenario]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_evaluation_plays_the_scripts_as_the_semantics_say(scenario: str, adapter_org: LocalOrg) -> None:
    reference = _reference(adapter_org, _instance(adapter_org), scenario)
    assert reference["reward"] == (0.0 if scenario == "fc_unanswered" else 1.0)
    assert reference["record"]["end_reason"] == ("no_tool_call" if scenario == "fc_unanswered" else "submitted")


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_path_plays_the_same_episode(scenario: str, path: str, adapter_org: LocalOrg) -> None:
    instance = _instance(adapter_org)
    reference = _reference(adapter_org, instance, scenario)
    played = PATHS[path](adapter_org, instance, scenario, _scripts(instance.answer or "None")[scenario])
    ids = path != "trl"  # TRL's tool messages carry the function's name, not the call's id
    expected_prompts = [
        [m if ids else (*m[:2], tuple((None, *c[1:]) for c in m[2]), None) for m in p] for p in reference["prompts"]
    ]
    assert played["prompts"] == expected_prompts
    assert played["tools"] == reference["tools"]
    assert played["observations"] == reference["observations"]
    assert played["reward"] == reference["reward"]
    eval_record = {k: v for k, v in reference["record"].items() if k not in _RUN_FIELDS}
    eval_record["trajectory"] = [{k: v for k, v in step.items() if k != "policy"} for step in eval_record["trajectory"]]
    record = {k: v for k, v in played["record"].items() if k not in (*_RUN_FIELDS, "shaping")}
    record["trajectory"] = [{k: v for k, v in step.items() if k != "policy"} for step in record["trajectory"]]
    if path == "trl" and scenario == "fc_unanswered":
        # TRL ends its rollout at the text reply without telling the environment, which never sees it
        assert (record.pop("end_reason"), record.get("final_reply")) == ("stopped", None)
        record["end_reason"], record["final_reply"] = "no_tool_call", eval_record["final_reply"]
    assert record == eval_record


def test_the_scripts_exercise_what_the_semantics_decide(adapter_org: LocalOrg) -> None:
    """The fc script's reference episode: both calls of the first reply ran, the Q9 call was refused,
    the call after submit was not run; the act reply's trailing words and ReAct's made-up output were
    dropped from the conversation."""
    instance = _instance(adapter_org)
    scripts = _scripts(instance.answer or "None")
    fc = _evaluation(adapter_org, instance, "fc", scripts["fc"])
    assert len(fc["observations"]) == 4 and fc["observations"][1].startswith("[{'Id': ")
    assert fc["observations"][2].startswith("Error:") and fc["record"]["turns"] == 4
    assert [m[0] for m in fc["prompts"][1]][-3:] == ["assistant", "tool", "tool"]
    react = _evaluation(adapter_org, instance, "react", scripts["react"])
    assert react["prompts"][1][2][1] == "Thought: count them.\n<execute>SELECT COUNT(Id) FROM Case</execute>"
    act = _evaluation(adapter_org, instance, "act", scripts["act"])
    assert act["observations"][1].startswith("FORMAT_ERROR") and act["record"]["turns"] == 3
    assert fc["tools"] and all("additionalProperties" not in t["function"]["parameters"] for t in fc["tools"])
