"""Train PPO (Ray RLlib, new API stack, CPU) on CRMArena through discrete candidate actions.

What it does:

1. generates an org and three disjoint instance sets of the nine task families (``CRMArena-v0``, all
   families mixed in one environment): held-out instances from one seed, validation instances from
   another, training instances from a third (no held-out or validation question, however reworded,
   appears in training);
2. measures the random-candidate baseline on the held-out instances;
3. trains one PPO policy (the parametric-actions RLModule: candidates scored from the state and
   their features, empty slots masked) on the training instances, with several env runners (on this
   machine, or on a running Ray cluster with ``--address``), evaluating the greedy policy on the
   validation and held-out instances per family as it goes;
4. keeps the checkpoint of the evaluation with the best validation success (PPO's greedy policy can
   lose a family late in training; the held-out instances play no part in the choice), restores it,
   and checks that the restored policy scores the same;
5. writes the learning curve as a PNG (matplotlib, from the ``rl`` extra) and prints the figures.

Run (about 20 minutes on 2 CPUs)::

    pip install torch==2.13.0 && pip install -e '.[rl]'
    python examples/train_rllib_ppo.py --out docs/ppo_learning_curve.png
    python examples/train_rllib_ppo.py --address auto --num-env-runners 16   # on a running Ray cluster

On a cluster, ``--workdir`` must be a path every node sees (a shared volume): the env runners open
the org and the instance files there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

FAMILIES = ("HTU", "TCU", "TII", "MTA", "BRI", "NCR", "NED", "PVI", "KQA")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=40, help="PPO training iterations")
    parser.add_argument("--num-env-runners", type=int, default=2, help="remote env runners (CPU each)")
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs Ray may use (a local Ray only)")
    parser.add_argument(
        "--address", default=None, help="a running Ray cluster (host:port, ray://host:10001, or auto); default: local"
    )
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated task families")
    parser.add_argument("--module", choices=("parametric", "masking"), default="parametric", help="the RLModule")
    parser.add_argument("--batch", type=int, default=2000, help="environment steps per iteration")
    parser.add_argument("--train-per-task", type=int, default=80, help="training instances per family")
    parser.add_argument("--eval-per-task", type=int, default=30, help="held-out instances per family")
    parser.add_argument(
        "--val-per-task",
        type=int,
        default=10,
        help="validation instances per family, which choose the checkpoint kept (0: keep the last one)",
    )
    parser.add_argument("--val-seed", type=int, default=3, help="task seed of the validation instances")
    parser.add_argument("--train-seed", type=int, default=1, help="task seed of the training instances")
    parser.add_argument("--eval-seed", type=int, default=2, help="task seed of the held-out instances")
    parser.add_argument("--org-seed", type=int, default=0, help="seed of the generated org")
    parser.add_argument("--org-scale", type=float, default=1.0, help="size of the generated org")
    parser.add_argument("--eval-every", type=int, default=5, help="held-out evaluation every N iterations")
    parser.add_argument("--baseline-repeats", type=int, default=5, help="random-baseline episodes per instance")
    parser.add_argument("--lr", type=float, default=5e-4, help="learning rate")
    parser.add_argument("--entropy", type=float, default=0.03, help="entropy coefficient")
    parser.add_argument("--seed", type=int, default=0, help="seed of PPO (networks, environment draws)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the org, tasks and checkpoint go")
    parser.add_argument("--out", type=Path, default=Path("ppo_learning_curve.png"), help="the learning-curve PNG")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    return parser.parse_args()


def make_instances(org: Path, args: argparse.Namespace, workdir: Path) -> dict[str, tuple[Path | None, list[Any]]]:
    """The held-out, validation and training instances, disjoint by instance key, each saved as JSONL.

    Held-out instances are drawn first, then validation instances without their keys, then training
    instances without either (a family whose pool runs short, KQA's facts, trains on fewer).
    """
    from crmarena_gym.tasks import generate_tasks, instance_key, save_tasks

    families = [f.strip() for f in args.families.split(",") if f.strip()]
    held_out = generate_tasks(org, seed=args.eval_seed, per_task=args.eval_per_task, tasks=families)
    exclude = {instance_key(inst.task, inst.params) for inst in held_out}
    validation = []
    if args.val_per_task > 0:
        validation = generate_tasks(
            org, seed=args.val_seed, per_task=args.val_per_task, tasks=families, exclude=exclude, allow_fewer=True
        )
        exclude |= {instance_key(inst.task, inst.params) for inst in validation}
    train = generate_tasks(
        org, seed=args.train_seed, per_task=args.train_per_task, tasks=families, exclude=exclude, allow_fewer=True
    )
    out: dict[str, tuple[Path | None, list[Any]]] = {}
    for name, instances in (("train", train), ("validation", validation), ("held_out", held_out)):
        path = workdir / f"{name}.jsonl" if instances else None  # no validation: no (empty, unreadable) file
        if path is not None:
            save_tasks(instances, path)
        out[name] = (path, instances)
    return out


def write_curve(
    path: Path,
    history: list[dict[str, Any]],
    baseline: dict[str, float],
    evals: list[dict[str, Any]],
    kept: dict[str, Any] | None,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    steps = [h["env_steps"] / 1000 for h in history]
    left.plot(steps, [h["return_mean"] for h in history], color="tab:blue", label="training episodes (sampled)")
    left.axhline(float(sum(baseline.values()) / len(baseline)), color="gray", ls="--", label="random candidates")
    for key, style, color, size, label in (
        ("overall", "o-", "tab:red", 6, "held-out, greedy"),
        ("validation", "s:", "tab:green", 3, "validation, greedy"),
    ):
        shown = [e for e in evals if key in e]
        if shown:
            left.plot(
                [e["env_steps"] / 1000 for e in shown],
                [e[key] for e in shown],
                style,
                color=color,
                ms=size,
                label=label,
            )
    if kept is not None:
        left.axvline(
            kept["env_steps"] / 1000, color="tab:red", lw=0.8, ls=":", label=f"kept (iteration {kept['iteration']})"
        )
    left.set(xlabel="environment steps (thousands)", ylabel="success rate", ylim=(-0.02, 1.02))
    left.set_title(f"One PPO policy on CRMArena ({len(baseline)} task families)")
    left.legend(loc="lower right")
    left.grid(alpha=0.3)
    families = sorted(baseline)
    final = kept["per_family"] if kept is not None else {}
    x = range(len(families))
    right.bar([i - 0.2 for i in x], [baseline[f] for f in families], width=0.4, color="gray", label="random")
    right.bar([i + 0.2 for i in x], [final.get(f, 0.0) for f in families], width=0.4, color="tab:red", label="PPO")
    right.axhline(0.8, color="black", lw=0.8, ls=":")
    right.set_xticks(list(x), families)
    right.set(ylabel="held-out success", ylim=(0, 1.25))
    right.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    right.set_title("Held-out success per family (kept policy)")
    right.legend(loc="upper center", ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> int:
    args = parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray
    from ray.rllib.algorithms.algorithm import Algorithm

    from crmarena_gym.datagen import generate_org
    from crmarena_gym.rl import (
        RandomCandidatePolicy,
        evaluate_policy,
        greedy_policy,
        make_discrete_env,
        masked_ppo_config,
    )

    started = time.perf_counter()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="crmarena-ppo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    org = workdir / "org.sqlite"
    if not org.exists():
        generate_org(org, seed=args.org_seed, scale=args.org_scale)
    sets = make_instances(org, args, workdir)
    train_path, train = sets["train"]
    val_path, validation = sets["validation"]
    eval_path, held_out = sets["held_out"]
    if train_path is None or eval_path is None:
        raise SystemExit("no training or no held-out instances: raise --train-per-task or --eval-per-task")
    print(f"org {org}; {len(train)} training instances (seed {args.train_seed}),", end=" ")
    print(f"{len(validation)} validation instances (seed {args.val_seed}),", end=" ")
    print(f"{len(held_out)} held-out instances (seed {args.eval_seed})")

    eval_env = make_discrete_env(org=str(org), tasks=str(eval_path))
    held_out_ids = [inst.idx for inst in held_out]
    val_env = make_discrete_env(org=str(org), tasks=str(val_path)) if validation else None
    val_ids = [inst.idx for inst in validation]
    baseline_result = evaluate_policy(
        eval_env, RandomCandidatePolicy(args.seed), held_out_ids, repeats=args.baseline_repeats
    )
    baseline = baseline_result.success()
    print("random-candidate baseline (held-out):", {k: round(v, 3) for k, v in baseline.items()})

    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    config = masked_ppo_config(
        {"org": str(org), "tasks": str(train_path)},
        num_env_runners=args.num_env_runners,
        train_batch_size=args.batch,
        lr=args.lr,
        entropy_coeff=args.entropy,
        seed=args.seed,
        module=args.module,
    )
    algo = config.build_algo()
    history: list[dict[str, Any]] = []
    evals: list[dict[str, Any]] = []
    checkpoint = workdir / "checkpoint"
    best: dict[str, Any] | None = None  # the kept evaluation: the best validation success, the later on ties
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
            policy = greedy_policy(algo.get_module())
            scored = evaluate_policy(eval_env, policy, held_out_ids)
            evals.append(
                {
                    "iteration": iteration,
                    "env_steps": steps,
                    "overall": scored.overall(),
                    "per_family": scored.success(),
                }
            )
            if val_env is not None:
                checked = evaluate_policy(val_env, policy, val_ids).success()
                # each family weighs the same, whatever its number of validation instances
                evals[-1].update(validation=sum(checked.values()) / len(checked), validation_per_family=checked)
                line += f"  validation {evals[-1]['validation']:.3f}"
            if best is None or val_env is None or evals[-1]["validation"] >= best["validation"]:
                best = evals[-1]
                shutil.rmtree(checkpoint, ignore_errors=True)  # no file of an earlier checkpoint stays
                algo.save_to_path(str(checkpoint))
                line += " (kept)"
            line += f"  held-out {scored.overall():.3f} " + str({k: round(v, 2) for k, v in scored.success().items()})
            write_curve(args.out, history, baseline, evals, best)  # the figures so far, should the run be stopped
            if args.json is not None:
                partial = {"baseline": baseline, "baseline_overall": baseline_result.overall(), "partial": True}
                partial.update(
                    trained=best["per_family"], trained_overall=best["overall"], kept_iteration=best["iteration"]
                )
                partial.update(history=history, evals=evals, train_seconds=time.perf_counter() - train_started)
                partial["args"] = {k: str(v) for k, v in vars(args).items()}
                args.json.write_text(json.dumps(partial, indent=2))
        print(line, flush=True)
    train_seconds = time.perf_counter() - train_started

    assert best is not None  # the last iteration is always evaluated
    trained = best["per_family"]
    algo.stop()
    restored = Algorithm.from_checkpoint(str(checkpoint))
    restored_result = evaluate_policy(eval_env, greedy_policy(restored.get_module()), held_out_ids).success()
    restored.stop()
    ray.shutdown()
    if restored_result != trained:
        print(f"the restored policy scores differently: {restored_result} != {trained}")
        return 1
    print(f"checkpoint of iteration {best['iteration']} saved to {checkpoint} and restored: held-out success unchanged")

    write_curve(args.out, history, baseline, evals, best)
    total_seconds = time.perf_counter() - started
    print(f"learning curve written to {args.out}")
    print()
    print(f"{'family':8s} {'random':>8s} {'PPO':>8s}")
    for family in sorted(baseline):
        print(f"{family:8s} {baseline[family]:8.3f} {trained.get(family, 0.0):8.3f}")
    print(f"{'overall':8s} {baseline_result.overall():8.3f} {best['overall']:8.3f}")
    chosen = "the last one" if val_env is None else f"the best validation success, {best['validation']:.3f}"
    print(f"policy of iteration {best['iteration']} of {args.iterations} ({chosen})")
    print(
        f"training: {args.iterations} iterations, {history[-1]['env_steps']} env steps, {train_seconds:.0f} s; "
        f"total {total_seconds:.0f} s"
    )
    if args.json is not None:
        figures = {
            "baseline": baseline,
            "trained": trained,
            "baseline_overall": baseline_result.overall(),
            "trained_overall": best["overall"],
            "kept_iteration": best["iteration"],
            "history": history,
            "evals": evals,
            "train_seconds": train_seconds,
            "total_seconds": total_seconds,
            "args": {k: str(v) for k, v in vars(args).items()},
        }
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
