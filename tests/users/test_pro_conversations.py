"""CRMArena-Pro's 22 categories as conversations, on both orgs: the splits, the ids, the asking oracle, an agent
that answers at once, determinism, the leak fuzz and the LLM user (against a scripted server on 127.0.0.1)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.envs import interactive_counterpart, pro_interactive_env_ids
from crmarena_gym.policies import ReactiveOraclePolicy
from crmarena_gym.tasks import ASKING, SLOT_WORDS, SPLITTERS, TaskInstance, interactive_split
from crmarena_gym.tasks.pro import PRO_CATEGORY_ABBREVS, PRO_CATEGORY_NAMES, generate_pro_tasks, get_pro_spec
from crmarena_gym.tasks.pro import pro_category as _pro_category
from crmarena_gym.users import ScriptedUser
from tests.users.test_interactive_env import _run
from tests.users.test_scripted_user import _fuzzed_conversation

KINDS = ("b2b", "b2c")
# Where the request itself is the test (the right reply declines it), independently of the splits: the categories
# scored by refusal.
REFUSAL_CATEGORIES = {s for s in PRO_CATEGORY_NAMES if get_pro_spec(s).reward_metric == "privacy_rejection"}
_TASKS: dict[str, list[TaskInstance]] = {}


@pytest.fixture(scope="module")
def pro_tasks(pro_env_orgs: dict[str, Path]) -> dict[str, list[TaskInstance]]:
    """Three generated instances of each of the 22 categories, per org kind."""
    for kind in KINDS:
        if kind not in _TASKS:
            _TASKS[kind] = generate_pro_tasks(pro_env_orgs[kind], seed=11, per_task=3)
    return _TASKS


def _privileged_env(kind: str, orgs: dict[str, Path], tasks: list[TaskInstance]) -> gym.Env:
    """The kind's mixed conversation env over ``tasks``, with the task functions and the hidden parameters."""
    return gym.make(
        f"CRMArena-Pro-{kind.upper()}-Interactive-v0", org=orgs[kind], tasks=tasks, toolset="functions", privileged=True
    )


def test_every_category_declares_its_split_under_its_own_key(pro_tasks: dict[str, list[TaskInstance]]) -> None:
    for name in PRO_CATEGORY_NAMES:
        assert _pro_category(name).split is not None, name
    instance = next(i for i in pro_tasks["b2b"] if i.task == "handle_time")
    split = interactive_split(instance)
    # Pro's handle_time is not CRMArena's (other parameters): each has its own entry.
    assert SPLITTERS["pro:handle_time"] is _pro_category("handle_time").split
    assert SPLITTERS["handle_time"] is not SPLITTERS["pro:handle_time"]
    assert [c.name for c in split.criteria][:2] == ["window", "direction"]


@pytest.mark.parametrize("kind", KINDS)
def test_splits_hold_back_and_never_state_what_they_hold(kind: str, pro_tasks: dict[str, list[TaskInstance]]) -> None:
    for instance in pro_tasks[kind]:
        split = interactive_split(instance, seed=4)
        names = [c.name for c in split.criteria]
        if instance.task in REFUSAL_CATEGORIES:
            assert not names and split.opening == instance.query and split.extras["nothing_held_back"]
            continue
        assert names, instance.task
        assert split.full_request == instance.query and split.answer_kind == instance.spec.answer_kind
        for criterion in split.criteria:
            assert criterion.reveal not in split.opening
            if isinstance(criterion.value, str):
                assert criterion.value not in split.opening
                # a held-back record Id leaves the context too
                assert criterion.value not in split.required, (instance.task, criterion.name)
            for gold in instance.answer_values:
                assert not re.search(rf"(?<!\w){re.escape(gold)}(?!\w)", criterion.reveal), (instance.task, gold)
        # the context keeps everything else (the policy, the guide, today's date)
        kept = [line for line in instance.metadata.required.splitlines() if line in split.required.splitlines()]
        assert len(kept) >= len(instance.metadata.required.splitlines()) - 1
        if "today" in instance.params and "- Today's date" in instance.metadata.required:
            assert f"- Today's date: {instance.params['today']}" in split.required


def test_each_asking_question_asks_for_its_criterion_only(pro_tasks: dict[str, list[TaskInstance]]) -> None:
    for kind in KINDS:
        for instance in pro_tasks[kind]:
            split = interactive_split(instance)
            for criterion in split.criteria:
                user = ScriptedUser()
                user.start(instance, split, seed=0)
                reply = user.reply(ASKING[criterion.name])
                assert reply.revealed == (criterion.name,) and reply.text == criterion.reveal


def test_a_window_that_does_not_resolve_to_the_instances_is_refused(pro_tasks: dict[str, list[TaskInstance]]) -> None:
    instance = next(i for i in pro_tasks["b2b"] if i.task == "best_region_identification")
    shifted = instance.model_copy(update={"params": {**instance.params, "start": "1999-01-01"}})
    with pytest.raises(ValueError, match="resolves to"):
        interactive_split(shifted)
    bare = instance.model_copy(update={"params": {}})
    with pytest.raises(ValueError, match="lacks the hidden parameter"):
        interactive_split(bare)


def test_ids_registered_and_check_env(pro_env_orgs: dict[str, Path], pro_tasks: dict[str, list[TaskInstance]]) -> None:
    for kind in KINDS:
        ids = pro_interactive_env_ids(kind)
        assert ids == [f"CRMArena-Pro-{kind.upper()}-{a}-Interactive-v0" for a in PRO_CATEGORY_ABBREVS] + [
            f"CRMArena-Pro-{kind.upper()}-Interactive-v0"
        ]
        for env_id, abbrev in zip(ids, [*PRO_CATEGORY_ABBREVS, None], strict=True):
            assert gym.spec(env_id).kwargs == {"task": abbrev, "kind": kind}
            assert interactive_counterpart(env_id.replace("-Interactive", "")) == env_id
            env = gym.make(env_id, org=pro_env_orgs[kind], tasks=pro_tasks[kind])
            check_env(env.unwrapped, skip_render_check=True)
            _, info = env.reset(seed=0)
            assert info["kind"] == kind and "respond" in [t["function"]["name"] for t in info["tools"]]
            env.close()


@pytest.mark.parametrize("kind", KINDS)
def test_asking_oracle_scores_one_on_every_category(
    kind: str, pro_env_orgs: dict[str, Path], pro_tasks: dict[str, list[TaskInstance]]
) -> None:
    tasks = pro_tasks[kind]
    env = _privileged_env(kind, pro_env_orgs, tasks)
    policy = ReactiveOraclePolicy()
    policy.attach(env)
    rewards: dict[str, list[float]] = {}
    for instance in tasks:
        reward, info, record = _run(env, policy, instance.idx)
        withheld = [c["name"] for c in env.reset(options={"idx": instance.idx})[1]["withheld"]]
        conversation = record["conversation"]
        assert info["end_reason"] == "user_stop", (instance.task, conversation)
        assert conversation["revealed"] == withheld  # it asked for each, and the user revealed each
        assert info["user_turns"] == len(withheld) + 1
        rewards.setdefault(instance.task, []).append(reward)
    assert set(rewards) == set(PRO_CATEGORY_NAMES)
    assert {name: sum(r) / len(r) for name, r in rewards.items()} == dict.fromkeys(PRO_CATEGORY_NAMES, 1.0)


class _AnswerAtOnce:
    """Answers from the opening alone: where nothing is held back it has the whole request and solves it (the
    reactive oracle's way); elsewhere it cannot know the criteria and says None."""

    def __init__(self) -> None:
        self.oracle = ReactiveOraclePolicy()
        self.whole = False

    def attach(self, env: gym.Env) -> None:
        self.oracle.attach(env)

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        self.whole = not info["withheld"]
        self.oracle.reset(observation, info)

    def act(self, observation: str) -> str:
        return self.oracle.act(observation) if self.whole else "respond None"


@pytest.mark.parametrize("kind", KINDS)
def test_answering_at_once_scores_what_the_withheld_criteria_allow(
    kind: str, pro_env_orgs: dict[str, Path], pro_tasks: dict[str, list[TaskInstance]]
) -> None:
    tasks = pro_tasks[kind]
    env = _privileged_env(kind, pro_env_orgs, tasks)
    policy = _AnswerAtOnce()
    policy.attach(env)
    got: dict[str, list[float]] = {}
    expected: dict[str, list[float]] = {}
    for instance in tasks:
        got.setdefault(instance.task, []).append(_run(env, policy, instance.idx)[0])
        # Computed from the gold and the metric alone: a refusal category is asked whole (its decline scores 1);
        # elsewhere "None" is right exactly where nothing qualifies, and the fuzzy categories never have None.
        if instance.task in REFUSAL_CATEGORIES:
            expected.setdefault(instance.task, []).append(1.0)
        else:
            expected.setdefault(instance.task, []).append(1.0 if instance.answer is None else 0.0)
    assert got == expected
    overall = sum(map(sum, got.values())) / len(tasks)
    assert 0.1 < overall < 0.5  # it loses most of what it does not ask for


def test_same_seed_same_conversation(pro_env_orgs: dict[str, Path], pro_tasks: dict[str, list[TaskInstance]]) -> None:
    script = [f"respond {ASKING[name]}" for name in ("window", "opportunity", "quote", "product", "lead", "region")]
    script.insert(1, "respond What would you like to know?")
    for kind in KINDS:
        env = gym.make(f"CRMArena-Pro-{kind.upper()}-Interactive-v0", org=pro_env_orgs[kind], tasks=pro_tasks[kind])
        for instance in pro_tasks[kind][::2]:
            runs = []
            for _ in range(2):
                observation, _ = env.reset(seed=5, options={"idx": instance.idx})
                runs.append([observation] + [env.step(a)[0] for a in script])
            assert runs[0] == runs[1]


def test_fuzz_never_reveals_gold_leak_facts_or_unasked_criteria(pro_tasks: dict[str, list[TaskInstance]]) -> None:
    rng = np.random.default_rng(2929)
    slots = sorted({s for words in SLOT_WORDS.values() for s in words})
    instances = pro_tasks["b2b"] + pro_tasks["b2c"]
    messages = revealed_any = 0
    while messages < 10_000:
        instance = instances[messages % len(instances)]
        said, sent, revealed = _fuzzed_conversation(rng, slots, instance, messages)
        messages, revealed_any = messages + sent, revealed_any + revealed
        for text in said:
            residue = re.sub(r"(Return only|Answer with|Reply with)[^.]*\.", "", text)
            for gold in instance.answer_values:
                assert not re.search(rf"(?<!\w){re.escape(gold)}(?!\w)", residue), (instance.task, gold, text)
            for fact in instance.params.get("leak_facts", ()):
                # what the customer's own question names (a person's name) is theirs to say, nothing else
                assert fact in instance.query or fact not in text, (instance.task, fact, text)
    assert revealed_any > 500


def test_a_pro_conversation_with_an_llm_user_and_its_cost_apart(
    pro_env_orgs: dict[str, Path], pro_tasks: dict[str, list[TaskInstance]]
) -> None:
    pytest.importorskip("litellm")
    from crmarena_gym.policies import LiteLLMPolicy
    from crmarena_gym.users import END_MARKER, user_system_prompt
    from tests.policies.scripted_server import ScriptedServer

    instance = next(i for i in pro_tasks["b2c"] if i.task == "lead_qualification")
    lead = instance.params["lead_id"]
    prompt = user_system_prompt(instance, interactive_split(instance))
    assert instance.persona and instance.persona in prompt and instance.query in prompt and lead in prompt
    assert "You are a You" not in prompt and "employee of the company" in prompt
    if instance.answer is not None:
        # the answer format names every BANT factor; past it, the gold is nowhere
        residue = re.sub(r"Return only[^.]*\.", "", prompt.split("Your request:")[1])
        assert all(not re.search(rf"(?<!\w){gold}(?!\w)", residue) for gold in instance.answer_values)
    answer = ", ".join(instance.answer_values) or "None"
    with ScriptedServer() as server:
        server.add(
            {"content": "Is one of my leads qualified? Which BANT factors fail?", "cost": 0.5},  # the user opens
            {"content": "respond Which lead is it?"},  # the agent
            {"content": f"It's lead {lead}.", "cost": 0.25},  # the user
            {"content": f"respond {answer}"},  # the agent
            {"content": f"Thanks.\n{END_MARKER}", "cost": 0.125},  # the user
        )
        env = gym.make(
            "CRMArena-Pro-B2C-LQU-Interactive-v0",
            org=pro_env_orgs["b2c"],
            tasks=[instance],
            user="litellm:openai/user-model",
            user_options={"api_base": server.url, "api_key": "k"},
        )
        agent = LiteLLMPolicy("openai/agent-model", framework="act", api_base=server.url, api_key="k")
        observation, info = env.reset(seed=0)
        assert observation.startswith("Is one of my leads qualified?") and lead not in observation
        agent.reset(observation, info)
        done = False
        while not done:
            observation, reward, terminated, truncated, step = env.step(agent.act(observation))
            done = terminated or truncated
        assert (reward, step["end_reason"], step["user_turns"]) == (1.0, "user_stop", 2)
        usage = step["user"]["usage"]
        assert usage["calls"] == 3 and usage["cost"] == pytest.approx(0.875)
        assert agent.usage().calls == 2 and agent.usage().cost is None  # the agent's own, apart
        system = next(r for r in server.requests if r["model"] == "user-model")["messages"][0]["content"]
        assert lead in system and instance.persona in system and instance.query in system


def test_the_chat_core_plays_a_pro_conversation(
    pro_env_orgs: dict[str, Path], pro_tasks: dict[str, list[TaskInstance]]
) -> None:
    from crmarena_gym.chat import DELIVERED, ChatSession, make_chat_env
    from crmarena_gym.org import LocalOrg

    instance = next(i for i in pro_tasks["b2b"] if i.task == "quote_approval")
    env = make_chat_env(LocalOrg(pro_env_orgs["b2b"]), instances=[instance], user="scripted")
    assert env.spec is not None and env.spec.id == "CRMArena-Pro-B2B-Interactive-v0"
    session = ChatSession(env, "fc")
    start = session.reset(task_id=instance.idx, seed=0)
    assert instance.params["quote_id"] not in start.observation
    step = session.step_tool_call("respond", {"message": "Which quote is it?"})
    assert session.messages[-2]["content"] == DELIVERED and instance.params["quote_id"] in step.observation
    final = session.step_tool_call("respond", {"message": ", ".join(instance.answer_values) or "None"})
    assert final.done and final.reward == 1.0 and session.messages[-1] == {"role": "user", "content": "###STOP###"}
    assert session.record is not None and session.record["conversation"]["revealed"] == ["quote"]


def test_eval_cli_plays_a_pro_categorys_conversation(
    tmp_path: Path, pro_env_orgs: dict[str, Path], pro_tasks: dict[str, list[TaskInstance]]
) -> None:
    from crmarena_gym.cli import main
    from crmarena_gym.eval import read_results
    from crmarena_gym.tasks import save_tasks

    lro = [i for i in pro_tasks["b2c"] if i.task == "lead_routing"]
    save_tasks(lro, tmp_path / "lro.jsonl")
    out = tmp_path / "run"
    common = ["eval", "--org", str(pro_env_orgs["b2c"]), "--tasks", str(tmp_path / "lro.jsonl")]
    argv = [*common, "--env", "CRMArena-Pro-B2C-LRO-v0", "--policy", "reactive-oracle", "--user", "scripted"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    records = read_results(out / "results.jsonl")
    assert len(records) == len(lro) and {r["reward"] for r in records} == {1.0}
    # the lead's region, or the lead when the question names one
    expected = {("lead",) if i.params.get("lead_id") else ("region",) for i in lro}
    assert {tuple(r["conversation"]["revealed"]) for r in records} == expected


def test_the_llm_users_role_follows_the_categorys_pool_and_audience(pro_tasks: dict[str, list[TaskInstance]]) -> None:
    from crmarena_gym.users import user_system_prompt

    roles = {
        "handle_time": "You are an employee of the company, asking its internal CRM assistant",
        "internal_operation_data": "You are an employee of the company, talking with its customer-facing assistant",
        "knowledge_qa": "You are a customer of the company, talking with its customer-facing assistant",
        "named_entity_disambiguation": "You work at a client of the company, talking with its customer-facing",
    }
    for name, role in roles.items():
        instance = next(i for i in pro_tasks["b2b"] if i.task == name)
        prompt = user_system_prompt(instance, interactive_split(instance))
        assert role in prompt and str(instance.persona) in prompt, name
        for criterion in interactive_split(instance).criteria:
            assert criterion.reveal in prompt  # the details it may give when asked


def test_a_sweep_over_users_plays_the_pro_conversation_id(
    tmp_path: Path, pro_env_orgs: dict[str, Path], pro_tasks: dict[str, list[TaskInstance]]
) -> None:
    import json

    from crmarena_gym.cli import main
    from crmarena_gym.eval import read_results
    from crmarena_gym.tasks import save_tasks

    chosen = [i for i in pro_tasks["b2c"] if i.task in ("wrong_stage_rectification", "transfer_count")]
    save_tasks(chosen, tmp_path / "two.jsonl")
    spec = tmp_path / "users.toml"
    spec.write_text(
        f'env = "CRMArena-Pro-B2C-v0"\norg = "{pro_env_orgs["b2c"]}"\ntasks = "two.jsonl"\n'
        '[[policies]]\nname = "oracle"\nspec = "reactive-oracle"\n'
        '[[sweeps]]\nname = "users"\nuser = ["none", "scripted"]\ntoolset = ["functions"]\n'
    )
    out = tmp_path / "out"
    assert main(["experiment", str(spec), "--out", str(out)]) == 0
    cells = {c["label"]: c for c in json.loads((out / "experiment.json").read_text())["cells"]}
    assert [c["accuracy"] for c in cells.values()] == [1.0, 1.0]
    talked = read_results(out / cells["toolset=functions,user=scripted"]["path"] / "results.jsonl")
    assert {r["conversation"]["end"] for r in talked} == {"user_stop"}
    assert {tuple(r["conversation"]["revealed"]) for r in talked} == {
        ("opportunity",),
        ("window", "direction", "n_cases"),
    }


def test_trl_plays_a_pro_conversation(pro_env_orgs: dict[str, Path]) -> None:
    pytest.importorskip("trl")
    from crmarena_gym.chat import chat_tasks
    from crmarena_gym.integrations.trl import trl_dataset_rows, trl_environment

    path = pro_env_orgs["b2b"]
    rows = trl_dataset_rows(path, split="test", per_task=1, user="scripted")
    row = next(r for r in rows if r["task"] == "LQU")
    (instance,) = [i for i in chat_tasks(path, split="test", per_task=1) if i.idx == row["task_id"]]
    env = trl_environment(path, user="scripted", per_task=1)()
    opening = env.reset(**{**row, "seed": 0})
    assert instance.params["lead_id"] not in opening and "BANT" in opening
    assert instance.params["lead_id"] in env.respond(message="Which lead is it? Its Id, please.")
    assert env.respond(message=", ".join(instance.answer_values) or "None") == "###STOP###"
    assert env.get_reward() == 1.0 and env.record["conversation"]["revealed"] == ["lead"]
