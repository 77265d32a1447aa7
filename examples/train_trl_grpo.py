"""GRPO with TRL on CPU through the CRMArena environment class: real tool calls, a reward that moves.

Nothing is downloaded: a tiny Qwen3-style model with random weights and a tokenizer trained here on the
environment's own text. A random model never writes a tool call, so its completions are steered through
TRL's own generation loop with ``sequence_bias`` (transformers' logits bias keyed by the preceding tokens):
the first reply calls ``get_period``, and after its result the second calls ``submit`` with one of two
answers: the instance's gold answer or a decoy, both given the same bias, so the model's own weights
choose between them. TRL parses each call, runs it against the environment, feeds the result back, and
scores the rollout with ``get_reward()`` (1 for the gold answer, 0 for the decoy), and GRPO updates the
weights from those rewards. The printed curve is the mean reward of each step's rollouts: it moves with
the answers the weights pick (about half right at first). That is the plumbing of a real run, not
learning to be trusted from eight steps of a random model: swap in an instruction-tuned model, a GPU and no
bias to learn the tasks; the steering only stands in for a model that can already call tools.

On a 2-core CPU six steps take about a minute (the system prompt is ~3,400 tokens of this tokenizer).

Needs ``pip install 'crmarena-gym[trl]'``. Run:

    python examples/train_trl_grpo.py --steps 6
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Any

from crmarena_gym.chat import chat_tasks
from crmarena_gym.envs import MAX_TURNS
from crmarena_gym.integrations.trl import tiny_model, tiny_tokenizer, trl_dataset_rows, trl_environment
from crmarena_gym.org import LocalOrg, default_org_path
from crmarena_gym.tools import toolset

CALL = '<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call><|im_end|>'
FIRST = CALL.format(name="get_period", arguments=json.dumps({"period_name": "Q1", "year": 2021}))


def _ids(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def steering(tokenizer: Any, gold: str, decoy: str, *, call: float = 100.0, answer: float = 20.0) -> list[Any]:
    """The ``sequence_bias`` entries: each token of the scripted calls, keyed by the tokens before it."""
    turn = _ids(tokenizer, "<|im_start|>assistant\n")
    after_result = _ids(tokenizer, "</tool_response><|im_end|>\n<|im_start|>assistant\n")
    prefix = '<tool_call>\n{"name": "submit", "arguments": {"content": "'
    bias: dict[tuple[int, ...], float] = {}

    def steer(context: list[int], text: str, weight: float, first: float | None = None) -> None:
        tokens = context + _ids(tokenizer, text)
        for i in range(len(context), len(tokens)):
            key = tuple(tokens[: i + 1])  # the whole context: the second call's never matches the first turn
            bias[key] = max(bias.get(key, 0.0), first if first is not None and i == len(context) else weight)

    steer(turn, FIRST, call)
    steer(after_result, prefix, 2 * call)  # outweighs the first call's bias after a tool result
    context = after_result + _ids(tokenizer, prefix)
    for text in (gold, decoy):
        # the answer's first token gets the same small bias for both: the model's weights decide
        steer(context, text + '"}}\n</tool_call><|im_end|>', 2 * call, first=answer)
    return [[list(key), weight] for key, weight in bias.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="GRPO steps (default 6)")
    parser.add_argument("--generations", type=int, default=8, help="rollouts per step (default 8)")
    parser.add_argument("--learning-rate", type=float, default=5e-3, help="learning rate (default 5e-3)")
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    org = LocalOrg(default_org_path())  # the embedded org, generated on first use
    per_task = 8
    instances = [i for i in chat_tasks(org, split="train", per_task=per_task, tasks=["BRI"]) if i.answer]
    instance = instances[0]  # a fresh training instance, never a test question
    decoy = next(i.answer for i in instances if i.answer and i.answer[0] != instance.answer[0])
    (row,) = [r for r in trl_dataset_rows(org, per_task=per_task, tasks=["BRI"]) if r["task_id"] == instance.idx]
    dataset = Dataset.from_list([row] * (args.generations * args.steps))
    env_cls = trl_environment(org, per_task=per_task)
    texts = [row["prompt"][0]["content"], instance.query, FIRST, json.dumps(toolset("functions").schemas())]
    texts += [f'{{"content": "{a}"}}' for a in (instance.answer, decoy)]
    tokenizer = tiny_tokenizer(texts)
    model = tiny_model(tokenizer)
    print(
        f"instance {instance.idx} (BRI, gold {instance.answer!r}, decoy {decoy!r}); tokenizer of {len(tokenizer)} "
        f"tokens; model of {sum(p.numel() for p in model.parameters())} parameters"
    )
    print("run metadata:", json.dumps(env_cls.metadata))
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(
            output_dir=out,
            per_device_train_batch_size=args.generations,
            num_generations=args.generations,
            max_completion_length=192,
            max_steps=args.steps,
            max_tool_calling_iterations=MAX_TURNS,
            learning_rate=args.learning_rate,
            generation_kwargs={"sequence_bias": steering(tokenizer, instance.answer, decoy)},
            report_to=[],
            use_cpu=True,
            logging_steps=1,
            save_strategy="no",
            seed=0,
        )
        trainer = GRPOTrainer(
            model=model, args=config, train_dataset=dataset, processing_class=tokenizer, environment_factory=env_cls
        )
        trainer.train()
    print("\nstep  reward  tool calls per rollout  curve")
    for entry in trainer.state.log_history:
        if "reward" in entry:
            bar = "#" * round(20 * entry["reward"])
            calls = entry.get("tools/call_frequency", 0.0)
            print(f"{entry['step']:>4}  {entry['reward']:.3f}  {calls:>22.2f}  {bar}")
    env = trainer._environment_pool[None][0]  # one of the pooled environments, after its last rollout
    record = env.record
    if record is not None:
        print(f"\nlast rollout of one environment: end {record['end_reason']}, reward {record['reward']}")
        for step in record["trajectory"][1:]:
            print(f"  turn {step['turn']}: {step['action'][:90]} -> {step['observation'][:70]!r}")


if __name__ == "__main__":
    main()
