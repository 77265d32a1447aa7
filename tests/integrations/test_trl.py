"""The TRL environment class: oracle episodes through its tool methods, exactly the toolset's tools with
their schemas, and GRPOTrainer training a step with it on a tiny local model (nothing downloaded)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.chat import NOT_RUN, Shaping, chat_tasks, chat_tool_schemas, system_prompt
from crmarena_gym.integrations.trl import trl_dataset_rows, trl_environment
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import default_tasks, instance_key
from crmarena_gym.tools import toolset
from tests.integrations.conftest import oracle_calls

TASKS = ["HTU", "TCU", "TII", "MTA", "BRI", "NCR", "PVI", "NED", "KQA"]


@pytest.mark.parametrize("name", ["functions", "soql", "flex"])
def test_the_methods_carry_exactly_the_schemas_evaluation_sends(name: str, env_org: Path) -> None:
    """transformers' get_json_schema (what TRL renders the tools with) gives back, byte for byte in JSON,
    the schemas the chat core shows the model on every other path."""
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    cls = trl_environment(env_org, toolset=name)
    public = {n for n, f in vars(cls).items() if callable(f) and not n.startswith("_")}
    assert public == set(toolset(name).names)
    shown = chat_tool_schemas(toolset(name).schemas())
    rendered = [get_json_schema(getattr(cls, schema["function"]["name"])) for schema in shown]
    assert json.dumps(rendered) == json.dumps(shown)
    # the environment's own schema of each tool, less the one key no signature can express
    for tool, schema in zip(sorted(toolset(name), key=lambda t: t.name), shown, strict=True):
        ours = json.loads(json.dumps(tool.schema))
        assert ours["function"]["parameters"].pop("additionalProperties") is False
        if ours["function"]["parameters"].get("required") == []:  # get_json_schema writes none when none is
            del ours["function"]["parameters"]["required"]
        assert schema == ours or _same_up_to_key_order(schema, ours), tool.name


def test_the_prompt_trl_renders_is_the_one_evaluation_sends(env_org: Path) -> None:
    """The same chat template renders the same text from TRL's tool methods as from the schemas evaluation
    sends with its messages (issue 33 measured TRL's 12% longer before the schemas were made one)."""
    pytest.importorskip("trl")
    import inspect

    from crmarena_gym.integrations.trl import tiny_tokenizer

    cls = trl_environment(env_org, per_task=1)
    rows = trl_dataset_rows(env_org, per_task=1, tasks=["BRI"])
    tokenizer = tiny_tokenizer([rows[0]["prompt"][0]["content"]])
    env = cls()
    messages = [dict(m) for m in rows[0]["prompt"]]
    messages[-1]["content"] = env.reset(**rows[0])
    methods = [
        getattr(env, n)
        for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction)  # as TRL collects them
        if not n.startswith("_") and n not in ("reset", "get_reward")
    ]
    by_methods = tokenizer.apply_chat_template(messages, tools=methods, tokenize=False, add_generation_prompt=True)
    by_schemas = tokenizer.apply_chat_template(
        messages, tools=env.session.tools, tokenize=False, add_generation_prompt=True
    )
    assert by_methods == by_schemas and '"name": "get_cases"' in by_schemas


def _same_up_to_key_order(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_the_class_and_its_instances_pickle_and_rows_of_another_framework_are_refused(env_org: Path) -> None:
    cls = trl_environment(env_org, toolset="soql", shaping=Shaping(refused_call=0.25), per_task=2)
    assert pickle.loads(pickle.dumps(cls)) is cls
    assert trl_environment(env_org, toolset="soql", shaping=Shaping(0.25), per_task=2) is cls
    assert cls.metadata["shaping"] == {"refused_call": 0.25, "malformed_reply": 0.0}
    rows = trl_dataset_rows(env_org, per_task=2, tasks=["BRI"], toolset="soql")
    env = cls()
    env.reset(**rows[0])
    env.issue_soql_query(query="SELECT Nope FROM Case")  # refused: the shaping penalty applies
    copy = pickle.loads(pickle.dumps(env))
    assert type(copy) is cls and copy.session is None  # a fresh instance: the episode is not carried over
    copy.reset(**rows[0])
    assert copy.issue_soql_query(query="SELECT COUNT(Id) FROM Case").startswith("Salesforce instance output")
    assert env.get_reward() == -0.25 and env.record["end_reason"] == "stopped"
    assert env.record["shaping"] == {
        "refused_call": 0.25,
        "malformed_reply": 0.0,
        "refused_calls": 1,
        "malformed_replies": 0,
        "return": -0.25,
    }
    with pytest.raises(ValueError, match=r"per_task=2, the environment with per_task=None"):
        trl_environment(env_org, toolset="soql")().reset(**rows[0])
    with pytest.raises(ValueError, match=r"framework must be one of"):
        trl_environment(env_org, framework="chat")
    react = trl_environment(env_org, toolset="soql", framework="react", per_task=2)
    assert pickle.loads(pickle.dumps(react)) is react and react.metadata["framework"] == "react"
    assert not [n for n, f in vars(react).items() if callable(f) and not n.startswith("_")]  # no tool methods
    with pytest.raises(ValueError, match=r"built for the 'fc' framework .* framework='react'"):
        react().reset(**rows[0])


def test_oracle_episodes_through_the_tool_methods_reach_reward_one(adapter_org: LocalOrg) -> None:
    rows = trl_dataset_rows(adapter_org, split="train", per_task=2, tasks=TASKS)
    assert {r["task"] for r in rows} == set(TASKS)
    instances = {i.idx: i for i in chat_tasks(adapter_org, split="train", per_task=2, tasks=TASKS)}
    cls = trl_environment(adapter_org, per_task=2)
    env = cls()
    for row in rows:
        observation = env.reset(**row)
        instance = instances[row["task_id"]]
        assert observation.startswith(instance.query.strip())
        for name, arguments in oracle_calls(adapter_org, instance):
            result = getattr(env, name)(**arguments)
            assert isinstance(result, str) and not result.startswith(("Error", "FORMAT_ERROR")), result
        assert env.get_reward() == 1.0, row
        assert env.submit(content="again") == NOT_RUN  # calls after the end are not run (as on every path)
        assert env.record["gold"] == instance.answer and env.record["reward_breakdown"]["reward"] == 1.0


def test_rows_carry_the_evaluated_system_prompt_and_never_a_test_question(adapter_org: LocalOrg) -> None:
    rows = trl_dataset_rows(adapter_org, split="train", per_task=3, tasks=["BRI", "HTU"])
    instances = {i.idx: i for i in chat_tasks(adapter_org, split="train", per_task=3, tasks=["BRI", "HTU"])}
    test_keys = {instance_key(i.task, i.params) for i in default_tasks(adapter_org.path)}
    tools = toolset("functions").schemas()
    for row in rows:
        instance = instances[row["task_id"]]
        info = {"persona": instance.persona, "abbrev": instance.abbrev, "schema": _schema(), "tools": tools}
        assert row["prompt"] == [
            {"role": "system", "content": system_prompt(info, "fc")},
            {"role": "user", "content": ""},
        ]
        assert row["split"] == "train" and instance_key(instance.task, instance.params) not in test_keys
    test_rows = trl_dataset_rows(adapter_org, split="test", per_task=1, tasks=["BRI"])
    assert [r["task_id"] for r in test_rows] == [
        next(i.idx for i in default_tasks(adapter_org.path) if i.abbrev == "BRI")
    ]


def _schema() -> str:
    from crmarena_gym.schema import schema_text

    return schema_text()


def test_a_row_without_task_id_is_refused_with_its_keys(env_org: Path) -> None:
    env = trl_environment(env_org)()
    with pytest.raises(ValueError, match=r"task_id.*\['prompt'\]"):
        env.reset(prompt=[])
    with pytest.raises(RuntimeError, match="reset"):
        env.get_issues()


def _steered_grpo_args(tmp_path: Path, tokenizer: Any, completion: str, **extra: Any) -> Any:
    """One GRPO step's config on CPU whose sampling is biased towards ``completion``: each of its tokens, only
    right after the tokens that precede it there (from the assistant's turn on)."""
    from trl import GRPOConfig

    tail = tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    steered = tail + tokenizer(completion, add_special_tokens=False)["input_ids"]
    bias = [[steered[i - len(tail) : i + 1], 100.0] for i in range(len(tail), len(steered))]
    return GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=48,
        max_steps=1,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
        generation_kwargs={"sequence_bias": bias},
        seed=0,
        **extra,
    )


def test_grpo_trainer_trains_a_step_on_a_tiny_local_model(env_org: Path, tmp_path: Path, monkeypatch) -> None:
    """TRL's own rollout: the tiny random model, steered by a sampling bias towards one tool call (submit
    with the gold answer), generates it; TRL parses it, calls the environment's method, and scores the
    rollout with get_reward; then GRPO takes a step."""
    pytest.importorskip("trl")
    from transformers import Trainer
    from trl import GRPOTrainer
    from trl.chat_template_utils import parse_response

    from crmarena_gym.integrations.trl import tiny_model, tiny_tokenizer, trl_dataset

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    dataset = trl_dataset(env_org, split="train", per_task=1, tasks=["BRI"])
    (instance,) = chat_tasks(env_org, split="train", per_task=1, tasks=["BRI"])
    schemas = json.dumps(toolset("functions").schemas())
    tokenizer = tiny_tokenizer([r["prompt"][0]["content"] for r in dataset] + [schemas])
    model = tiny_model(tokenizer)
    answer = json.dumps({"content": instance.answer or "None"})
    call = f'<tool_call>\n{{"name": "submit", "arguments": {answer}}}\n</tool_call><|im_end|>'
    args = _steered_grpo_args(tmp_path, tokenizer, call, max_tool_calling_iterations=1)
    env_cls = trl_environment(env_org, per_task=1)
    trainer = GRPOTrainer(
        model=model, args=args, train_dataset=dataset, processing_class=tokenizer, environment_factory=env_cls
    )
    assert isinstance(trainer, Trainer)
    # TRL exposes exactly the environment's tools to the model
    assert {t.__name__ for t in trainer._env_tools[None]} == set(toolset("functions").names)
    # and parses a tool call in the model's chat format into a call of the environment's method
    text = (
        '<tool_call>\n{"name": "get_period", "arguments": {"period_name": "Q1", "year": 2021}}\n</tool_call><|im_end|>'
    )
    prompt = tokenizer.apply_chat_template(dataset[0]["prompt"], add_generation_prompt=True, tokenize=True)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    (parsed,) = parse_response(tokenizer, ids, prefix=list(prompt["input_ids"]), tools=trainer._env_tools[None])[
        "tool_calls"
    ]
    env = env_cls()
    env.reset(**dataset[0])
    result = getattr(env, parsed["function"]["name"])(**parsed["function"]["arguments"])
    assert result == "{'start_date': '2021-01-01T00:00:00Z', 'end_date': '2021-04-01T00:00:00Z'}"
    output = trainer.train()
    assert output.global_step == 1
    (logged,) = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert logged["tools/call_frequency"] == 1.0 and logged["tools/failure_frequency"] == 0.0
    assert logged[f"rewards/{env_cls.__name__}/mean"] == 1.0 and logged["reward"] == 1.0


def test_grpo_trainer_trains_a_step_of_react_episodes_through_the_text_rollout(
    env_org: Path, tmp_path: Path, monkeypatch
) -> None:
    """The text frameworks in TRL: the text environment class as environment_factory and TRLTextRollout as
    rollout_func; the tiny model, steered towards a ReAct submission of the gold answer, writes it; the
    environment reads it and get_reward scores it; GRPO takes a step on the model's tokens."""
    pytest.importorskip("trl")
    from trl import GRPOTrainer

    from crmarena_gym.integrations.trl import TRLTextRollout, tiny_model, tiny_tokenizer, trl_dataset

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    dataset = trl_dataset(env_org, split="train", per_task=1, tasks=["BRI"], toolset="soql", framework="react")
    (instance,) = chat_tasks(env_org, split="train", per_task=1, tasks=["BRI"])
    reply = f"Thought: I know it.\nAction: submit {instance.answer}<|im_end|>"
    tokenizer = tiny_tokenizer([dataset[0]["prompt"][0]["content"], reply])
    model = tiny_model(tokenizer)
    args = _steered_grpo_args(tmp_path, tokenizer, reply)
    env_cls = trl_environment(env_org, per_task=1, toolset="soql", framework="react")
    trainer = GRPOTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=env_cls,
        rollout_func=TRLTextRollout(),
    )
    assert trainer._env_tools[None] == []  # no tools: TRL's tool loop stays out of the text conversation
    assert trainer.train().global_step == 1
    (logged,) = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert logged[f"rewards/{env_cls.__name__}/mean"] == 1.0 and logged["reward"] == 1.0
    record = trainer._environment_pool[None][0].record
    assert record["end_reason"] == "submitted" and record["trajectory"][-1]["action"] == f"submit {instance.answer}"


def test_the_text_rollout_stops_at_the_completion_limit_and_refuses_function_calling(env_org: Path) -> None:
    """A rollout whose completion would pass max_completion_length ends there (end reason stopped), its
    sequence cut to the limit; an environment that plays function calling is refused with what to pass."""
    from types import SimpleNamespace

    from crmarena_gym.integrations.trl import TRLTextRollout, tiny_tokenizer

    tokenizer = tiny_tokenizer(["execute SELECT COUNT(Id) FROM Case"])
    rows = trl_dataset_rows(env_org, per_task=2, tasks=["BRI"], toolset="soql", framework="act")
    env = trl_environment(env_org, per_task=2, toolset="soql", framework="act")()
    env.reset(**rows[0])
    reply = tokenizer("execute SELECT COUNT(Id) FROM Case", add_special_tokens=False)["input_ids"]
    reply.append(tokenizer.eos_token_id)
    trainer = SimpleNamespace(environments=[env], processing_class=tokenizer, max_completion_length=400, model=None)
    calls = []

    def generate(_trainer: object, prompt_ids: list[list[int]]) -> tuple[list[list[int]], list[list[float]]]:
        calls.append(len(prompt_ids[0]))
        return [list(reply)], [[-0.5] * len(reply)]

    output = TRLTextRollout(generate)([rows[0]["prompt"]], trainer)
    (completion,), (mask,), (logprobs,) = output["completion_ids"], output["env_mask"], output["logprobs"]
    assert len(completion) == len(mask) == len(logprobs) <= 400
    assert env.session.record["end_reason"] == "stopped" and env.get_reward() == 0.0
    # every reply was carried out (as TRL runs a call whose result it then drops for length); the last one's
    # observation would have passed the limit, so the rollout ends with that reply
    assert len(calls) == env.session.turns > 2 and completion[-len(reply) :] == reply
    assert completion[: len(reply)] == reply and mask[: len(reply)] == [1] * len(reply)
    assert logprobs[: len(reply)] == [-0.5] * len(reply) and 0 in mask  # the observations are the env's tokens
    fc = trl_environment(env_org, per_task=2)()
    fc.reset(**trl_dataset_rows(env_org, per_task=2, tasks=["BRI"])[0])
    with pytest.raises(ValueError, match=r"framework='act' or 'react'"):
        TRLTextRollout(generate)([rows[0]["prompt"]], SimpleNamespace(environments=[fc], processing_class=tokenizer))
