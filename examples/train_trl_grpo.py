"""GRPO with TRL on CPU through the CRMArena environment class: the plumbing, not learning.

A tiny randomly initialised Qwen3-style model and a tokenizer trained here on the environment's own text
(nothing is downloaded from a model hub) train a few GRPO steps on fresh training instances (never a
test question). Each rollout is an episode: TRL calls ``reset(**row)``, offers the toolset's functions
as tools, runs the model's tool calls against the environment, and scores the rollout with
``get_reward()``. A random model almost never submits a right answer, so the rewards stay near 0: swap
in a real instruction-tuned model (and a GPU) to learn. Needs ``pip install 'crmarena-gym[trl]'``. Run:

    python examples/train_trl_grpo.py --steps 3
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

from crmarena_gym.integrations.trl import tiny_model, tiny_tokenizer, trl_dataset, trl_environment
from crmarena_gym.org import LocalOrg, default_org_path
from crmarena_gym.tools import toolset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps (default 3)")
    parser.add_argument("--tasks", nargs="+", default=["BRI", "HTU", "MTA"], help="task abbreviations")
    parser.add_argument("--per-task", type=int, default=4, help="training instances per task (default 4)")
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    org = LocalOrg(default_org_path())  # the embedded org, generated on first use
    dataset = trl_dataset(org, split="train", per_task=args.per_task, tasks=args.tasks)
    texts = [row["prompt"][0]["content"] for row in dataset] + [json.dumps(toolset("functions").schemas())]
    tokenizer = tiny_tokenizer(texts)
    model = tiny_model(tokenizer)
    print(
        f"{len(dataset)} training rows; tokenizer of {len(tokenizer)} tokens; model of "
        f"{sum(p.numel() for p in model.parameters())} parameters"
    )
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(
            output_dir=out,
            per_device_train_batch_size=4,
            num_generations=4,
            max_completion_length=32,
            max_steps=args.steps,
            max_tool_calling_iterations=3,
            report_to=[],
            use_cpu=True,
            logging_steps=1,
            save_strategy="no",
            seed=0,
        )
        env_cls = trl_environment(org, per_task=args.per_task)
        trainer = GRPOTrainer(
            model=model, args=config, train_dataset=dataset, processing_class=tokenizer, environment_factory=env_cls
        )
        trainer.train()
    for entry in trainer.state.log_history:
        if "reward" in entry:
            print(
                f"step {entry['step']}: reward {entry['reward']:.3f} (std {entry['reward_std']:.3f}), "
                f"tool calls per completion {entry.get('tools/call_frequency', 0.0):.2f}"
            )


if __name__ == "__main__":
    main()
