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
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

FAMILIES = ("HTU", "TCU", "TII", "MTA", "BRI", "NCR", "NED", "PVI", "KQA")
#: The frozen test seed: never used while designing anything; no choice is made on its figures.
TEST_SEED = 1031
#: The validation seed: every choice (the checkpoint kept, settings compared) is made on it.
VALIDATION_SEED = 3
#: The discrete help levels RLlib trains at (``text`` has text actions).
LEVELS = ("tools", "parsed", "oracle-args")


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
    parser.add_argument("--eval-per-task", type=int, default=30, help="test instances per family")
    parser.add_argument(
        "--val-per-task",
        type=int,
        default=10,
        help="validation instances per family, which choose the checkpoint kept (0: keep the last one)",
    )
    parser.add_argument(
        "--level",
        default="parsed",
        help="help level: tools, parsed (default) or oracle-args (privileged); text has no discrete actions",
    )
    parser.add_argument(
        "--step-cost", type=float, default=0.0, help="reward taken off every environment step during training"
    )
    parser.add_argument(
        "--val-seed", type=int, default=VALIDATION_SEED, help="task seed of the validation instances (choices)"
    )
    parser.add_argument("--train-seed", type=int, default=1, help="task seed of the training instances")
    parser.add_argument(
        "--task-distribution",
        choices=("discriminating", "legacy"),
        default="discriminating",
        help="the instances' distribution (legacy: task generator version 2's, of the figures before it)",
    )
    parser.add_argument(
        "--test-seed",
        "--eval-seed",
        dest="test_seed",
        type=int,
        default=TEST_SEED,
        help=f"task seed of the test instances (default {TEST_SEED}, frozen: never used for design)",
    )
    parser.add_argument(
        "--fixed-order-per-task",
        type=int,
        default=30,
        help="training instances per family the fixed-order baseline is searched on",
    )
    parser.add_argument("--fixed-order-beam", type=int, default=None, help="beam of that search (default by level)")
    parser.add_argument(
        "--baselines-json",
        type=Path,
        default=None,
        help="read the baselines from this file if it holds them for the same level, seeds and sets; else write them",
    )
    parser.add_argument("--org-seed", type=int, default=0, help="seed of the generated org")
    parser.add_argument("--org-scale", type=float, default=1.0, help="size of the generated org")
    parser.add_argument("--eval-every", type=int, default=5, help="test evaluation every N iterations")
    parser.add_argument("--baseline-repeats", type=int, default=5, help="random-baseline episodes per instance")
    parser.add_argument("--lr", type=float, default=5e-4, help="learning rate")
    parser.add_argument("--entropy", type=float, default=0.03, help="entropy coefficient")
    parser.add_argument("--seed", type=int, default=0, help="seed of PPO (networks, environment draws)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the org, tasks and checkpoint go")
    parser.add_argument("--out", type=Path, default=Path("ppo_learning_curve.png"), help="the learning-curve PNG")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    if args.level == "text":
        parser.error(
            "the text help level has text actions: RLlib cannot train on it (LLM trainers can: TRL, SkyRL, "
            "OpenEnv; see the README). Choose --level tools, parsed or oracle-args"
        )
    if args.level not in LEVELS:
        parser.error(f"--level must be one of {', '.join(LEVELS)} (or text, which RLlib cannot train on)")
    if not 0 <= args.step_cost < 1:
        parser.error(f"--step-cost must be from 0 up to (not including) 1, got {args.step_cost}")
    return args


def make_instances(org: Path, args: argparse.Namespace, workdir: Path) -> dict[str, tuple[Path | None, list[Any]]]:
    """The test (``held_out``), validation and training instances, disjoint by instance key, each saved as JSONL.

    Test instances are drawn first, then validation instances without their keys, then training
    instances without either (a family whose pool runs short, KQA's facts, trains on fewer).
    """
    from crmarena_gym.tasks import generate_tasks, instance_key, save_tasks

    families = [f.strip() for f in args.families.split(",") if f.strip()]
    drawn = {"tasks": families, "distribution": args.task_distribution}
    held_out = generate_tasks(org, seed=args.test_seed, per_task=args.eval_per_task, **drawn)
    exclude = {instance_key(inst.task, inst.params) for inst in held_out}
    validation = []
    if args.val_per_task > 0:
        validation = generate_tasks(
            org, seed=args.val_seed, per_task=args.val_per_task, exclude=exclude, allow_fewer=True, **drawn
        )
        exclude |= {instance_key(inst.task, inst.params) for inst in validation}
    train = generate_tasks(
        org, seed=args.train_seed, per_task=args.train_per_task, exclude=exclude, allow_fewer=True, **drawn
    )
    out: dict[str, tuple[Path | None, list[Any]]] = {}
    for name, instances in (("train", train), ("validation", validation), ("held_out", held_out)):
        path = workdir / f"{name}.jsonl" if instances else None  # no validation: no (empty, unreadable) file
        if path is not None:
            save_tasks(instances, path)
        out[name] = (path, instances)
    return out


def measure_baselines(
    org: Path,
    args: argparse.Namespace,
    train: list[Any],
    validation: list[Any],
    held_out: list[Any],
    eval_env: Any,
) -> dict[str, Any]:
    """The baselines that learn nothing, on the test instances (and the fixed order on validation too).

    - ``random``: a random candidate at each step (``--baseline-repeats`` episodes per instance);
    - ``fixed_order``: per family, the best blind slot sequence found on the first ``--fixed-order-per-task``
      training instances of the family (``search_fixed_orders``), played on the test instances;
    - ``answer_prior``: per family, the most frequent training answer, submitted for every test question.
    """
    from crmarena_gym.rl import (
        FixedSlotOrder,
        RandomCandidatePolicy,
        answer_priors,
        evaluate_policy,
        make_discrete_env,
        search_fixed_orders,
    )

    test_ids = [inst.idx for inst in held_out]
    random_result = evaluate_policy(eval_env, RandomCandidatePolicy(args.seed), test_ids, repeats=args.baseline_repeats)
    seen: dict[str, int] = {}
    searched_on = []
    for inst in train:
        seen[inst.abbrev] = seen.get(inst.abbrev, 0) + 1
        if seen[inst.abbrev] <= args.fixed_order_per_task:
            searched_on.append(inst)
    search_env = make_discrete_env(org=str(org), tasks=searched_on, level=args.level)
    beam = args.fixed_order_beam or (32 if args.level == "tools" else 128)
    depth = 16 if args.level == "tools" else 12
    started = time.perf_counter()
    orders = search_fixed_orders(search_env, searched_on, beam=beam, depth=depth)
    search_seconds = time.perf_counter() - started
    policy = FixedSlotOrder({family: order.slots for family, order in orders.items()})
    fixed = evaluate_policy(eval_env, policy, test_ids)
    out: dict[str, Any] = {
        "random": random_result.success(),
        "random_overall": random_result.overall(),
        "fixed_order": fixed.success(),
        "fixed_order_overall": fixed.overall(),
        "fixed_order_slots": {family: list(order.names) for family, order in orders.items()},
        "fixed_order_train": {family: order.train_score for family, order in orders.items()},
        "fixed_order_search": {
            "per_task": args.fixed_order_per_task,
            "beam": beam,
            "depth": depth,
            "seconds": search_seconds,
            "sequences": {family: order.searched for family, order in orders.items()},
        },
    }
    if validation:
        val_env = make_discrete_env(org=str(org), tasks=validation, level=args.level)
        checked = evaluate_policy(val_env, policy, [inst.idx for inst in validation])
        out["fixed_order_validation"] = checked.success()
    priors = answer_priors(train, held_out)
    out["answer_prior"] = {family: prior.score for family, prior in priors.items()}
    out["answer_prior_answers"] = {family: prior.answer for family, prior in priors.items()}
    rewards = [prior.score * prior.held_out for prior in priors.values()]
    out["answer_prior_overall"] = sum(rewards) / max(sum(prior.held_out for prior in priors.values()), 1)
    return out


def _baselines_key(args: argparse.Namespace) -> dict[str, Any]:
    """What the baselines depend on: a saved set is reused only for the same of all these."""
    from crmarena_gym.tasks import TASK_GENERATOR_VERSION

    keys = ("level", "families", "train_seed", "val_seed", "test_seed", "org_seed", "org_scale", "task_distribution")
    keys += ("train_per_task", "val_per_task", "eval_per_task", "fixed_order_per_task", "fixed_order_beam")
    keys += ("baseline_repeats",)
    return {"generator": TASK_GENERATOR_VERSION, **{key: getattr(args, key) for key in keys}}


def write_curve(
    path: Path,
    history: list[dict[str, Any]],
    baselines: dict[str, Any],
    evals: list[dict[str, Any]],
    kept: dict[str, Any] | None,
    level: str,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    random_baseline = baselines["random"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    steps = [h["env_steps"] / 1000 for h in history]
    left.plot(steps, [h["return_mean"] for h in history], color="tab:blue", label="training episodes (sampled)")
    left.axhline(baselines["random_overall"], color="gray", ls="--", label="random candidates")
    left.axhline(baselines["fixed_order_overall"], color="tab:orange", ls="--", label="best fixed slot order")
    left.axhline(baselines["answer_prior_overall"], color="tab:purple", ls=":", label="most frequent answer")
    for key, style, color, size, label in (
        ("overall", "o-", "tab:red", 6, "test, greedy"),
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
    left.set_title(f"One PPO policy, {len(random_baseline)} task families, help level {level}")
    left.legend(loc="lower right", fontsize=8)
    left.grid(alpha=0.3)
    families = sorted(random_baseline)
    final = kept["per_family"] if kept is not None else {}
    x = range(len(families))
    bars = (
        ("random", random_baseline, "gray"),
        ("prior", baselines["answer_prior"], "tab:purple"),
        ("fixed order", baselines["fixed_order"], "tab:orange"),
        ("PPO", final, "tab:red"),
    )
    width = 0.2
    for k, (label, values, color) in enumerate(bars):
        offset = (k - 1.5) * width
        heights = [values.get(f, 0.0) for f in families]
        right.bar([i + offset for i in x], heights, width=width, color=color, label=label)
    right.axhline(0.8, color="black", lw=0.8, ls=":")
    right.set_xticks(list(x), families)
    right.set(ylabel="test success", ylim=(0, 1.25))
    right.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    right.set_title(f"Test success per family (kept policy; level {level})")
    right.legend(loc="upper center", ncol=4, fontsize=8)
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
        HELP_LEVEL_NOTES,
        PRIVILEGED_HELP_LEVELS,
        evaluate_policy,
        greedy_policy,
        make_discrete_env,
        masked_ppo_config,
    )
    from crmarena_gym.tasks import TASK_GENERATOR_VERSION

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
        raise SystemExit("no training or no test instances: raise --train-per-task or --eval-per-task")
    privileged = args.level in PRIVILEGED_HELP_LEVELS
    print(f"help level {args.level}{' (privileged)' if privileged else ''}: {HELP_LEVEL_NOTES[args.level]}")
    print(f"step cost in training: {args.step_cost}")
    print(f"org {org}; {len(train)} training instances (seed {args.train_seed}),", end=" ")
    print(f"{len(validation)} validation instances (seed {args.val_seed}),", end=" ")
    frozen = " (the frozen test seed)" if args.test_seed == TEST_SEED else ""
    print(f"{len(held_out)} test instances (seed {args.test_seed}{frozen})")

    # Success is measured without the step cost: the task's own reward.
    eval_env = make_discrete_env(org=str(org), tasks=str(eval_path), level=args.level)
    held_out_ids = [inst.idx for inst in held_out]
    val_env = make_discrete_env(org=str(org), tasks=str(val_path), level=args.level) if validation else None
    val_ids = [inst.idx for inst in validation]
    key = _baselines_key(args)
    saved = None
    if args.baselines_json is not None and args.baselines_json.exists():
        saved = json.loads(args.baselines_json.read_text())
    if saved is not None and saved.get("key") == key:
        baselines = saved["baselines"]
        print(f"baselines read from {args.baselines_json}")
    else:
        baselines = measure_baselines(org, args, train, validation, held_out, eval_env)
        if args.baselines_json is not None:
            args.baselines_json.parent.mkdir(parents=True, exist_ok=True)
            args.baselines_json.write_text(json.dumps({"key": key, "baselines": baselines}, indent=2))
    for name in ("random", "answer_prior", "fixed_order"):
        print(f"{name} baseline (test):", {k: round(v, 3) for k, v in baselines[name].items()})
    for family, names in baselines["fixed_order_slots"].items():
        print(f"  fixed order {family}: {' '.join(names)}")
    baseline = baselines["random"]

    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        # A Ray of its own: on a machine shared with others, a bare init() joins any cluster already running there.
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    env_config = {"org": str(org), "tasks": str(train_path), "level": args.level, "step_cost": args.step_cost}
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
    evals: list[dict[str, Any]] = []
    checkpoint = workdir / "checkpoint"
    best: dict[str, Any] | None = None  # the kept evaluation: the best validation success, the later on ties
    run = {
        "level": args.level,
        "privileged": privileged,
        "step_cost": args.step_cost,
        "seeds": {"ppo": args.seed, "train": args.train_seed, "validation": args.val_seed, "test": args.test_seed},
        "test_seed_frozen": args.test_seed == TEST_SEED,
        "task_generator_version": TASK_GENERATOR_VERSION,
        "task_distribution": args.task_distribution,
    }
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
            line += f"  test {scored.overall():.3f} " + str({k: round(v, 2) for k, v in scored.success().items()})
            write_curve(args.out, history, baselines, evals, best, args.level)  # the figures so far
            if args.json is not None:
                partial = {**run, "baseline": baseline, "baseline_overall": baselines["random_overall"]}
                partial.update(baselines=baselines, partial=True)
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
    print(f"checkpoint of iteration {best['iteration']} saved to {checkpoint} and restored: test success unchanged")

    write_curve(args.out, history, baselines, evals, best, args.level)
    total_seconds = time.perf_counter() - started
    print(f"learning curve written to {args.out}")
    print()
    print(f"help level {args.level}{' (privileged)' if privileged else ''}; test seed {args.test_seed}{frozen}")
    print(f"{'family':8s} {'random':>8s} {'prior':>8s} {'fixed':>8s} {'PPO':>8s}")
    for family in sorted(baseline):
        row = [baseline[family], baselines["answer_prior"].get(family, 0.0), baselines["fixed_order"].get(family, 0.0)]
        row.append(trained.get(family, 0.0))
        print(f"{family:8s} " + " ".join(f"{v:8.3f}" for v in row))
    overall = [baselines["random_overall"], baselines["answer_prior_overall"], baselines["fixed_order_overall"]]
    print(f"{'overall':8s} " + " ".join(f"{v:8.3f}" for v in [*overall, best["overall"]]))
    chosen = "the last one" if val_env is None else f"the best validation success, {best['validation']:.3f}"
    print(f"policy of iteration {best['iteration']} of {args.iterations} ({chosen})")
    print(
        f"training: {args.iterations} iterations, {history[-1]['env_steps']} env steps, {train_seconds:.0f} s; "
        f"total {total_seconds:.0f} s"
    )
    if args.json is not None:
        figures = {
            **run,
            "baseline": baseline,
            "baselines": baselines,
            "trained": trained,
            "baseline_overall": baselines["random_overall"],
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
