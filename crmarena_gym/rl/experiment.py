"""What every RL training script shares: the instance sets, the seeds, the baselines, the kept checkpoint, the report.

One source of truth for the trainers' examples (``examples/train_rllib_ppo.py``: Ray RLlib's PPO;
``examples/train_sb3_maskable.py``: sb3-contrib's MaskablePPO), so that their figures are comparable: the same
org, the same three disjoint instance sets (test instances from the frozen test seed, validation instances
from the validation seed, training instances from a third), the same baselines that learn nothing, the
checkpoint kept by validation success alone, and the same figures written as JSON for
``benchmarks/bench_rl.py``.

- :func:`add_experiment_arguments` / :func:`check_experiment_arguments`: the command-line options they share;
- :func:`prepare_experiment`: the org, the instance sets, the evaluation environments and the baselines
  (:func:`make_instances`, :func:`measure_baselines`, read from ``--baselines-json`` when it holds them for
  the same sets);
- :class:`KeptEvaluations`: the evaluations during training and the one kept (best validation success);
- :func:`report_figures`: the figures printed and written as JSON, :func:`write_curve`: the learning curve.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crmarena_gym.rl._baselines import FixedSlotOrder, answer_priors, search_fixed_orders
from crmarena_gym.rl._levels import HELP_LEVEL_NOTES, PRIVILEGED_HELP_LEVELS
from crmarena_gym.rl._rollout import Policy, RandomCandidatePolicy, evaluate_policy
from crmarena_gym.rl._wrapper import CandidateActionWrapper, make_discrete_env
from crmarena_gym.tasks import TaskInstance

__all__ = [
    "DISCRETE_LEVELS",
    "FAMILIES",
    "TEST_SEED",
    "VALIDATION_SEED",
    "Experiment",
    "KeptEvaluations",
    "add_experiment_arguments",
    "baselines_key",
    "check_experiment_arguments",
    "make_instances",
    "measure_baselines",
    "prepare_experiment",
    "report_figures",
    "write_curve",
]

FAMILIES = ("HTU", "TCU", "TII", "MTA", "BRI", "NCR", "NED", "PVI", "KQA")
#: The frozen test seed: never used while designing anything; no choice is made on its figures.
TEST_SEED = 1031
#: The validation seed: every choice (the checkpoint kept, settings compared) is made on it.
VALIDATION_SEED = 3
#: The help levels a discrete trainer trains at (``text`` has text actions).
DISCRETE_LEVELS = ("tools", "parsed", "oracle-args")


def add_experiment_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options every trainer's example shares (instance sets, seeds, level, baselines, outputs)."""
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated task families")
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
    parser.add_argument("--baseline-repeats", type=int, default=5, help="random-baseline episodes per instance")
    parser.add_argument("--workdir", type=Path, default=None, help="where the org, tasks and checkpoint go")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")


def check_experiment_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, trainer: str) -> None:
    """Exit through ``parser.error`` on a level ``trainer`` cannot train at, a step cost out of range or an
    unknown task family."""
    if args.level == "text":
        parser.error(
            f"the text help level has text actions: {trainer} cannot train on it (LLM trainers can: TRL, SkyRL, "
            "OpenEnv; see the README). Choose --level tools, parsed or oracle-args"
        )
    if args.level not in DISCRETE_LEVELS:
        parser.error(f"--level must be one of {', '.join(DISCRETE_LEVELS)} (or text, which {trainer} cannot train on)")
    if not 0 <= args.step_cost < 1:
        parser.error(f"--step-cost must be from 0 up to (not including) 1, got {args.step_cost}")
    from crmarena_gym.tasks import get_task_spec

    families = [f.strip() for f in args.families.split(",") if f.strip()]
    if not families:
        parser.error(f"--families names no family, got {args.families!r}")
    for family in families:
        try:
            get_task_spec(family)
        except KeyError as err:  # a traceback after the org and instance sets were made, before
            parser.error(f"--families: {err.args[0]}")


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
    eval_env: CandidateActionWrapper,
) -> dict[str, Any]:
    """The baselines that learn nothing, on the test instances (and the fixed order on validation too).

    - ``random``: a random candidate at each step (``--baseline-repeats`` episodes per instance);
    - ``fixed_order``: per family, the best blind slot sequence found on the first ``--fixed-order-per-task``
      training instances of the family (``search_fixed_orders``), played on the test instances;
    - ``answer_prior``: per family, the most frequent training answer, submitted for every test question.
    """
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


def baselines_key(args: argparse.Namespace) -> dict[str, Any]:
    """What the baselines depend on: a saved set is reused only for the same of all these.

    The random baseline's seed is the trainer's ``--seed``, as it was when the baselines were first measured
    by the RLlib example; a saved set measured with another seed is reused (the seeds of one benchmark share
    one set, measured by its first run).
    """
    from crmarena_gym.tasks import TASK_GENERATOR_VERSION

    keys = ("level", "families", "train_seed", "val_seed", "test_seed", "org_seed", "org_scale", "task_distribution")
    keys += ("train_per_task", "val_per_task", "eval_per_task", "fixed_order_per_task", "fixed_order_beam")
    keys += ("baseline_repeats",)
    return {"generator": TASK_GENERATOR_VERSION, **{key: getattr(args, key) for key in keys}}


@dataclass
class Experiment:
    """What a trainer's run starts from.

    Attributes:
        org: The org's SQLite file.
        workdir: Where the org, the instance files and the checkpoint go.
        train_path: The training instances' JSONL file (what the trainer's environments read).
        train, validation, held_out: The instance sets (``held_out``: the test instances).
        eval_env, val_env: Environments over the test and validation instances, without step cost (success is
            the task's reward); ``val_env`` is None without validation instances.
        baselines: :func:`measure_baselines`'s figures.
        run: The run's record (level, seeds, generator version, distribution), the head of its JSON.
        started: ``time.perf_counter()`` when the run began.
    """

    org: Path
    workdir: Path
    train_path: Path
    train: list[TaskInstance]
    validation: list[TaskInstance]
    held_out: list[TaskInstance]
    eval_env: CandidateActionWrapper
    val_env: CandidateActionWrapper | None
    baselines: dict[str, Any]
    run: dict[str, Any]
    started: float

    @property
    def privileged(self) -> bool:
        """Whether the level's candidates read hidden parameters."""
        return bool(self.run["privileged"])

    @property
    def frozen(self) -> str:
        """`` (the frozen test seed)`` when the test instances are of it, else nothing."""
        return " (the frozen test seed)" if self.run["test_seed_frozen"] else ""


def prepare_experiment(args: argparse.Namespace, algo: str, seed_key: str = "ppo") -> Experiment:
    """The org (generated once into ``--workdir``), the instance sets, the evaluation environments, the baselines.

    Prints what a run is made of (level, step cost, sets and seeds, the baselines) as it goes.

    Args:
        args: The parsed options of :func:`add_experiment_arguments` (and the trainer's ``--seed``).
        algo: The trainer's name, recorded in the run (``rllib-ppo``, ``maskable-ppo``).
        seed_key: The key of the trainer's seed in the run's ``seeds`` (``ppo``: what ``bench_rl`` reads).
    """
    from crmarena_gym.datagen import generate_org
    from crmarena_gym.tasks import TASK_GENERATOR_VERSION

    started = time.perf_counter()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"crmarena-{algo}-"))
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
    val_env = make_discrete_env(org=str(org), tasks=str(val_path), level=args.level) if validation else None
    key = baselines_key(args)
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
    run = {
        "algo": algo,
        "level": args.level,
        "privileged": privileged,
        "step_cost": args.step_cost,
        "seeds": {seed_key: args.seed, "train": args.train_seed, "validation": args.val_seed, "test": args.test_seed},
        "test_seed_frozen": args.test_seed == TEST_SEED,
        "task_generator_version": TASK_GENERATOR_VERSION,
        "task_distribution": args.task_distribution,
    }
    return Experiment(org, workdir, train_path, train, validation, held_out, eval_env, val_env, baselines, run, started)


@dataclass
class KeptEvaluations:
    """The greedy policy's evaluations during training, and the one kept: the best validation success.

    The test instances play no part in the choice; on a tie the later evaluation is kept. Without validation
    instances the last evaluation is kept.

    Attributes:
        experiment: The run's sets and environments.
        evals: Every evaluation: ``iteration``, ``env_steps``, ``overall`` and ``per_family`` (test), and
            ``validation`` (the mean over families) with ``validation_per_family``.
        best: The kept evaluation.
    """

    experiment: Experiment
    evals: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] | None = None

    def evaluate(self, policy: Policy, iteration: int, env_steps: int) -> bool:
        """Evaluate ``policy`` on the test and validation instances; True when this evaluation is now kept."""
        ex = self.experiment
        scored = evaluate_policy(ex.eval_env, policy, [inst.idx for inst in ex.held_out])
        self.evals.append(
            {
                "iteration": iteration,
                "env_steps": env_steps,
                "overall": scored.overall(),
                "per_family": scored.success(),
            }
        )
        if ex.val_env is not None:
            checked = evaluate_policy(ex.val_env, policy, [inst.idx for inst in ex.validation]).success()
            # each family weighs the same, whatever its number of validation instances
            self.evals[-1].update(validation=sum(checked.values()) / len(checked), validation_per_family=checked)
        if self.best is None or ex.val_env is None or self.evals[-1]["validation"] >= self.best["validation"]:
            self.best = self.evals[-1]
            return True
        return False

    def line(self) -> str:
        """The last evaluation, for the training log."""
        last = self.evals[-1]
        shown = f"  validation {last['validation']:.3f}" if "validation" in last else ""
        shown += " (kept)" if last is self.best else ""
        per_family = {k: round(v, 2) for k, v in last["per_family"].items()}
        return f"{shown}  test {last['overall']:.3f} {per_family}"


def report_figures(
    args: argparse.Namespace,
    experiment: Experiment,
    kept: KeptEvaluations,
    history: list[dict[str, Any]],
    *,
    label: str,
    budget: str,
    train_seconds: float,
    extra: dict[str, Any] | None = None,
    partial: bool = False,
) -> dict[str, Any]:
    """The run's figures (the JSON ``bench_rl.py`` reads), written to ``--json``; printed as a table unless partial.

    Args:
        args: The run's options (recorded as strings).
        experiment: The run's sets and baselines.
        kept: The evaluations and the kept one.
        history: One entry per training iteration (``iteration``, ``env_steps``, ``return_mean`` ...).
        label: The trainer's column name (``PPO``, ``MaskablePPO``).
        budget: The training budget in words, printed.
        train_seconds: Wall time of the training.
        extra: More fields of the record (the trainer's settings).
        partial: A record written during training (the figures of the policy kept so far).
    """
    best = kept.best
    if best is None:
        raise ValueError("no evaluation was made: the run has no figures")
    baselines = experiment.baselines
    figures = {
        **experiment.run,
        "baseline": baselines["random"],
        "baselines": baselines,
        "trained": best["per_family"],
        "baseline_overall": baselines["random_overall"],
        "trained_overall": best["overall"],
        "kept_iteration": best["iteration"],
        "history": history,
        "evals": kept.evals,
        "train_seconds": train_seconds,
        **(extra or {}),
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    if partial:
        figures["partial"] = True
    else:
        figures["total_seconds"] = time.perf_counter() - experiment.started
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))
    if partial:
        return figures
    privileged = " (privileged)" if experiment.privileged else ""
    print()
    print(f"help level {args.level}{privileged}; test seed {args.test_seed}{experiment.frozen}")
    print(f"{'family':8s} {'random':>8s} {'prior':>8s} {'fixed':>8s} {label:>11s}")
    for family in sorted(baselines["random"]):
        row = [baselines["random"][family], baselines["answer_prior"].get(family, 0.0)]
        row += [baselines["fixed_order"].get(family, 0.0), best["per_family"].get(family, 0.0)]
        print(f"{family:8s} " + " ".join(f"{v:8.3f}" for v in row[:3]) + f" {row[3]:11.3f}")
    overall = [baselines["random_overall"], baselines["answer_prior_overall"], baselines["fixed_order_overall"]]
    print(f"{'overall':8s} " + " ".join(f"{v:8.3f}" for v in overall) + f" {best['overall']:11.3f}")
    chosen = "the last one" if experiment.val_env is None else f"the best validation success, {best['validation']:.3f}"
    print(f"policy of iteration {best['iteration']} of {len(history)} ({chosen})")
    print(f"training: {budget}, {history[-1]['env_steps']} env steps, {train_seconds:.0f} s;", end=" ")
    print(f"total {figures['total_seconds']:.0f} s")
    return figures


def write_curve(
    path: Path,
    history: list[dict[str, Any]],
    baselines: dict[str, Any],
    evals: list[dict[str, Any]],
    kept: dict[str, Any] | None,
    level: str,
    label: str = "PPO",
) -> None:
    """The learning curve (training return, test and validation success) and the kept policy's bars, as a PNG."""
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
    for key, style, color, size, name in (
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
                label=name,
            )
    if kept is not None:
        left.axvline(
            kept["env_steps"] / 1000, color="tab:red", lw=0.8, ls=":", label=f"kept (iteration {kept['iteration']})"
        )
    left.set(xlabel="environment steps (thousands)", ylabel="success rate", ylim=(-0.02, 1.02))
    left.set_title(f"One {label} policy, {len(random_baseline)} task families, help level {level}")
    left.legend(loc="lower right", fontsize=8)
    left.grid(alpha=0.3)
    families = sorted(random_baseline)
    final = kept["per_family"] if kept is not None else {}
    x = range(len(families))
    bars = (
        ("random", random_baseline, "gray"),
        ("prior", baselines["answer_prior"], "tab:purple"),
        ("fixed order", baselines["fixed_order"], "tab:orange"),
        (label, final, "tab:red"),
    )
    width = 0.2
    for k, (name, values, color) in enumerate(bars):
        offset = (k - 1.5) * width
        heights = [values.get(f, 0.0) for f in families]
        right.bar([i + offset for i in x], heights, width=width, color=color, label=name)
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
