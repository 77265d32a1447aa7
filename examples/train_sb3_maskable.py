"""Train MaskablePPO (sb3-contrib, CPU) on CRMArena through discrete candidate actions, at a stated help level.

The same experiment as ``examples/train_rllib_ppo.py`` with another learner (both from
:mod:`crmarena_gym.rl.experiment`, so their figures compare): the same org, the same test (frozen test seed
1031), validation (seed 3) and training instances, the same baselines that learn nothing (random candidates,
the best fixed slot order per family, the most frequent training answer), the checkpoint kept by validation
success alone, and the same JSON for ``benchmarks/bench_rl.py --algo maskable-ppo``.

The learner is sb3-contrib's ``MaskablePPO`` with the ``MultiInputPolicy`` as a user would write it: the
wrapper's observation (state vector, candidates' feature vectors, action mask) flattened into one MLP, the
masked slots never sampled (the wrapper's ``action_masks()``), one environment in this process. An iteration
is one rollout of ``--n-steps`` environment steps and one update; every ``--eval-every`` iterations the greedy
(masked argmax) policy is played on the validation and test instances, and the policy of the best validation
success is saved, restored at the end and checked to score the same.

Help levels (``--level``): ``parsed`` (default), ``tools``, ``oracle-args`` (privileged); ``text`` has text
actions, which MaskablePPO cannot choose among. ``--step-cost`` takes a reward off every environment step in
training; success figures are the task's reward, without it.

Run (``pip install -e '.[rl]'``; about 4-7 ms an environment step on one core)::

    python examples/train_sb3_maskable.py --level parsed --iterations 50 --json maskable.json
    python benchmarks/bench_rl.py --algo maskable-ppo --level tools --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from crmarena_gym.rl.experiment import add_experiment_arguments, check_experiment_arguments

LABEL = "MaskablePPO"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=50, help="rollouts of --n-steps steps, each one update")
    parser.add_argument("--n-steps", type=int, default=1024, help="environment steps per rollout")
    parser.add_argument("--minibatch", type=int, default=256, help="minibatch size of the update")
    parser.add_argument("--epochs", type=int, default=5, help="passes over each rollout in its update")
    parser.add_argument("--lr", type=float, default=3e-4, help="learning rate")
    parser.add_argument("--entropy", type=float, default=0.01, help="entropy coefficient")
    parser.add_argument("--gamma", type=float, default=0.99, help="discount")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the machine is often shared)")
    add_experiment_arguments(parser)
    parser.add_argument("--eval-every", type=int, default=10, help="validation and test evaluation every N iterations")
    parser.add_argument("--seed", type=int, default=0, help="seed of MaskablePPO (networks, environment draws)")
    parser.add_argument(
        "--out", type=Path, default=Path("maskable_ppo_learning_curve.png"), help="the learning-curve PNG"
    )
    args = parser.parse_args(argv)
    check_experiment_arguments(parser, args, "MaskablePPO")
    for name in ("iterations", "n_steps", "minibatch", "epochs", "eval_every", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.minibatch > args.n_steps:
        parser.error(f"--minibatch ({args.minibatch}) must not exceed --n-steps ({args.n_steps})")
    return args


def greedy_policy(model: Any) -> Any:
    """A policy (observation dict to slot number): the trained model's most likely candidate, masked slots excluded."""

    def act(obs: dict[str, np.ndarray]) -> int:
        action, _state = model.predict(obs, action_masks=np.asarray(obs["action_mask"]) > 0, deterministic=True)
        return int(action)

    return act


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
        from sb3_contrib import MaskablePPO
    except ImportError as error:
        raise SystemExit(f"MaskablePPO needs sb3-contrib and torch (pip install -e '.[rl]'): {error}") from None

    from crmarena_gym.rl import evaluate_policy, make_discrete_env
    from crmarena_gym.rl.experiment import KeptEvaluations, prepare_experiment, report_figures, write_curve

    torch.set_num_threads(args.threads)
    experiment = prepare_experiment(args, "maskable-ppo")
    baselines = experiment.baselines
    train_env = make_discrete_env(
        org=str(experiment.org), tasks=str(experiment.train_path), level=args.level, step_cost=args.step_cost
    )
    settings = {
        "n_steps": args.n_steps,
        "batch_size": args.minibatch,
        "n_epochs": args.epochs,
        "learning_rate": args.lr,
        "ent_coef": args.entropy,
        "gamma": args.gamma,
    }
    model = MaskablePPO("MultiInputPolicy", train_env, seed=args.seed, verbose=0, device="cpu", **settings)
    history: list[dict[str, Any]] = []
    kept = KeptEvaluations(experiment)
    checkpoint = experiment.workdir / f"maskable_ppo_{args.level}_seed{args.seed}.zip"
    trainer = {"library": "sb3-contrib", "policy": "MultiInputPolicy", "threads": args.threads, **settings}
    seen_episodes = 0
    train_started = time.perf_counter()
    for iteration in range(1, args.iterations + 1):
        # One rollout and one update per call; the environment and the step count carry on between calls.
        model.learn(total_timesteps=args.n_steps, reset_num_timesteps=False)
        # The episodes that ended in this rollout (the Monitor's buffer holds the last 100).
        episodes = list(model.ep_info_buffer)[-max(0, model._episode_num - seen_episodes) :]
        seen_episodes = model._episode_num
        history.append(
            {
                "iteration": iteration,
                "env_steps": int(model.num_timesteps),
                "return_mean": float(np.mean([e["r"] for e in episodes])) if episodes else float("nan"),
                "episode_len_mean": float(np.mean([e["l"] for e in episodes])) if episodes else float("nan"),
            }
        )
        last = history[-1]
        line = f"iter {iteration:3d}  steps {last['env_steps']:7d}  train return {last['return_mean']:.3f}"
        line += f"  len {last['episode_len_mean']:.2f}"
        if iteration % args.eval_every == 0 or iteration == args.iterations:
            if kept.evaluate(greedy_policy(model), iteration, last["env_steps"]):
                model.save(checkpoint)
            line += kept.line()
            write_curve(args.out, history, baselines, kept.evals, kept.best, args.level, LABEL)
            elapsed = time.perf_counter() - train_started
            report_figures(
                args,
                experiment,
                kept,
                history,
                label=LABEL,
                budget="",
                train_seconds=elapsed,
                partial=True,
                extra={"trainer": trainer},
            )
        print(line, flush=True)
    train_seconds = time.perf_counter() - train_started

    best = kept.best
    assert best is not None  # the last iteration is always evaluated
    restored = MaskablePPO.load(checkpoint, device="cpu")
    held_out_ids = [inst.idx for inst in experiment.held_out]
    scored = evaluate_policy(experiment.eval_env, greedy_policy(restored), held_out_ids).success()
    if scored != best["per_family"]:
        print(f"the restored policy scores differently: {scored} != {best['per_family']}")
        return 1
    print(f"checkpoint of iteration {best['iteration']} saved to {checkpoint} and restored: test success unchanged")
    write_curve(args.out, history, baselines, kept.evals, best, args.level, LABEL)
    print(f"learning curve written to {args.out}")
    budget = f"{args.iterations} iterations of {args.n_steps} steps"
    report_figures(
        args,
        experiment,
        kept,
        history,
        label=LABEL,
        budget=budget,
        train_seconds=train_seconds,
        extra={"trainer": trainer},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
