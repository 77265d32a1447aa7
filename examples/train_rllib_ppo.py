"""Train PPO (Ray RLlib, new API stack, CPU) on CRMArena through discrete candidate actions, at a stated help level.

What it does:

1. generates an org and three disjoint instance sets of the nine task families (``CRMArena-v0``, all
   families mixed in one environment): test instances from the frozen test seed, validation instances
   from the validation seed, training instances from a third (no test or validation question, however
   reworded, appears in training);
2. measures three baselines that learn nothing, on the test instances: random candidates; per family, the
   best fixed slot order (searched on training instances, played blind: ``search_fixed_orders``); and per
   family the most frequent training answer (``answer_priors``);
3. trains one PPO policy (the parametric-actions RLModule: candidates scored from the state and
   their features, empty slots masked) on the training instances, with several env runners (on this
   machine, or on a running Ray cluster with ``--address``), evaluating the greedy policy on the
   validation and test instances per family as it goes;
4. keeps the checkpoint of the evaluation with the best validation success (PPO's greedy policy can
   lose a family late in training; the test instances play no part in the choice), restores it, and
   checks that the restored policy scores the same;
5. writes the learning curve as a PNG (matplotlib, from the ``rl`` extra) and prints the figures, every
   one with its help level.

The help level (``--level``, see ``crmarena_gym.rl.HELP_LEVELS``) says what the candidates give the policy:
``parsed`` (the default: whole calls, arguments parsed from the question's text), ``tools`` (the policy types
each argument from the values seen) or ``oracle-args`` (arguments from the instances' hidden parameters:
privileged, the level of the figures made before the levels existed). ``text`` has no discrete actions:
RLlib cannot train on it (LLM trainers can: TRL, SkyRL, OpenEnv). ``--step-cost`` takes a reward off every
step that reaches the environment during training; success figures are the task's reward, without it.

Seeds. The test seed (``--test-seed``, default 1031) is frozen: it was never used while designing the
candidates, features, parser or hyper-parameters, and a choice must not be made by looking at its
figures; every choice (the checkpoint kept, settings compared) is made on the validation seed
(``--val-seed``, 3). Task seed 2, the held-out seed of the figures before the levels, was looked at while
the features were designed: ``--test-seed 2 --level oracle-args --task-distribution legacy`` reproduces those
figures (made on task generator version 2's instances), not an untouched test. A seed fixes the instances a
generator version and distribution draw; both are recorded with the figures.

Run (about 20 minutes on 2 CPUs)::

    pip install torch==2.13.0 && pip install -e '.[rl]'
    python examples/train_rllib_ppo.py --out docs/ppo_learning_curve.png
    python examples/train_rllib_ppo.py --level tools --step-cost 0.01
    python examples/train_rllib_ppo.py --address auto --num-env-runners 16   # on a running Ray cluster

On a cluster, ``--workdir`` must be a path every node sees (a shared volume): the env runners open
the org and the instance files there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path
from typing import Any

from crmarena_gym.rl.experiment import DISCRETE_LEVELS as LEVELS
from crmarena_gym.rl.experiment import (
    FAMILIES,
    TEST_SEED,
    VALIDATION_SEED,
    add_experiment_arguments,
    check_experiment_arguments,
    make_instances,
    measure_baselines,
)

__all__ = ["FAMILIES", "LEVELS", "TEST_SEED", "VALIDATION_SEED", "main", "make_instances", "measure_baselines"]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=40, help="PPO training iterations")
    parser.add_argument("--num-env-runners", type=int, default=2, help="remote env runners (CPU each)")
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs Ray may use (a local Ray only)")
    parser.add_argument(
        "--address", default=None, help="a running Ray cluster (host:port, ray://host:10001, or auto); default: local"
    )
    parser.add_argument("--module", choices=("parametric", "masking"), default="parametric", help="the RLModule")
    parser.add_argument("--batch", type=int, default=2000, help="environment steps per iteration")
    add_experiment_arguments(parser)
    parser.add_argument("--eval-every", type=int, default=5, help="test evaluation every N iterations")
    parser.add_argument("--lr", type=float, default=5e-4, help="learning rate")
    parser.add_argument("--entropy", type=float, default=0.03, help="entropy coefficient")
    parser.add_argument("--seed", type=int, default=0, help="seed of PPO (networks, environment draws)")
    parser.add_argument("--out", type=Path, default=Path("ppo_learning_curve.png"), help="the learning-curve PNG")
    args = parser.parse_args()
    check_experiment_arguments(parser, args, "RLlib")
    return args


def main() -> int:
    args = parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray
    from ray.rllib.algorithms.algorithm import Algorithm

    from crmarena_gym.rl import evaluate_policy, greedy_policy, masked_ppo_config
    from crmarena_gym.rl.experiment import KeptEvaluations, prepare_experiment, report_figures, write_curve

    experiment = prepare_experiment(args, "rllib-ppo")
    baselines = experiment.baselines
    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        # A Ray of its own: on a machine shared with others, a bare init() joins any cluster already running there.
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    env_config = {
        "org": str(experiment.org),
        "tasks": str(experiment.train_path),
        "level": args.level,
        "step_cost": args.step_cost,
    }
    config = masked_ppo_config(
        env_config,
        num_env_runners=args.num_env_runners,
        train_batch_size=args.batch,
        minibatch_size=min(250, args.batch),  # a short run's small batch is one minibatch
        lr=args.lr,
        entropy_coeff=args.entropy,
        seed=args.seed,
        module=args.module,
    )
    algo = config.build_algo()
    history: list[dict[str, Any]] = []
    kept = KeptEvaluations(experiment)
    checkpoint = experiment.workdir / "checkpoint"
    train_started = time.perf_counter()
    for iteration in range(1, args.iterations + 1):
        result = algo.train()
        runners = result.get("env_runners", {})
        steps = int(result.get("num_env_steps_sampled_lifetime", runners.get("num_env_steps_sampled_lifetime", 0)))
        history.append(
            {
                "iteration": iteration,
                "env_steps": steps,
                "return_mean": float(runners.get("episode_return_mean", float("nan"))),
                "episode_len_mean": float(runners.get("episode_len_mean", float("nan"))),
            }
        )
        last = history[-1]
        line = f"iter {iteration:3d}  steps {steps:7d}  train return {last['return_mean']:.3f}"
        line += f"  len {last['episode_len_mean']:.2f}"
        if iteration % args.eval_every == 0 or iteration == args.iterations:
            if kept.evaluate(greedy_policy(algo.get_module()), iteration, steps):
                shutil.rmtree(checkpoint, ignore_errors=True)  # no file of an earlier checkpoint stays
                algo.save_to_path(str(checkpoint))
            line += kept.line()
            write_curve(args.out, history, baselines, kept.evals, kept.best, args.level)  # the figures so far
            report_figures(
                args,
                experiment,
                kept,
                history,
                label="PPO",
                budget="",
                train_seconds=time.perf_counter() - train_started,
                partial=True,
            )
        print(line, flush=True)
    train_seconds = time.perf_counter() - train_started

    best = kept.best
    assert best is not None  # the last iteration is always evaluated
    algo.stop()
    restored = Algorithm.from_checkpoint(str(checkpoint))
    held_out_ids = [inst.idx for inst in experiment.held_out]
    restored_result = evaluate_policy(experiment.eval_env, greedy_policy(restored.get_module()), held_out_ids)
    restored.stop()
    ray.shutdown()
    if restored_result.success() != best["per_family"]:
        print(f"the restored policy scores differently: {restored_result.success()} != {best['per_family']}")
        return 1
    print(f"checkpoint of iteration {best['iteration']} saved to {checkpoint} and restored: test success unchanged")
    write_curve(args.out, history, baselines, kept.evals, best, args.level)
    print(f"learning curve written to {args.out}")
    budget = f"{args.iterations} iterations of {args.batch} steps"
    report_figures(args, experiment, kept, history, label="PPO", budget=budget, train_seconds=train_seconds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
