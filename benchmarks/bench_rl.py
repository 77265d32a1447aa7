"""RL benchmark: test success of a trainer at a stated help level, per family, against baselines that learn nothing.

Runs a trainer's example (the same code a user runs) once per seed (``--seeds``), each in its own process, at the
help level ``--level`` (``parsed`` by default; ``tools``; ``oracle-args``, the privileged level of the figures
made before the levels). The trainer is ``--algo``: ``rllib-ppo`` (the default, ``examples/train_rllib_ppo.py``:
Ray RLlib's PPO) or ``maskable-ppo`` (``examples/train_sb3_maskable.py``: sb3-contrib's MaskablePPO). Both share
:mod:`crmarena_gym.rl.experiment`: the same instance sets, so the baselines, which depend on neither the trainer
nor its seed, are measured once (``--baselines-json``): random candidates, the most frequent training answer per
family, and the best fixed slot order per family (searched on training instances, played blind on the test
instances). The test instances come from the frozen test seed (1031: never used for design); the checkpoint
kept comes from the validation seed.

It prints, per family, each baseline and the trainer's mean over the seeds with a 95% interval (Student's t over
the seeds' test success; with one seed, the one figure), then rewrites the README's table for the trainer and
level (between the ``bench_rl:<level>`` markers for RLlib's PPO, ``bench_rl:maskable-ppo:<level>`` for
MaskablePPO). Needs the ``rl`` extra.

Usage:
    python benchmarks/bench_rl.py --level parsed --seeds 0 1 2      # three PPO seeds, 100 iterations each
                                                                    # (25-45 minutes a seed on 2 CPUs)
    python benchmarks/bench_rl.py --level tools --seeds 0           # any argument of the example passes through
    python benchmarks/bench_rl.py --algo maskable-ppo --level parsed --seeds 0 1 2   # MaskablePPO, 50 x 1024 steps
    python benchmarks/bench_rl.py --from-json A.json B.json C.json  # only rewrite the README from runs' JSON
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train_rllib_ppo.py"
README = ROOT / "README.md"
#: The trainers: their example script, the label of their column and the arguments the README's figures are made
#: with (any of them given on the command line wins).
ALGOS: dict[str, dict[str, Any]] = {
    "rllib-ppo": {
        "example": EXAMPLE,
        "label": "PPO",
        "defaults": {"--iterations": "100", "--train-per-task": "150"},
    },
    "maskable-ppo": {
        "example": ROOT / "examples" / "train_sb3_maskable.py",
        "label": "MaskablePPO",
        "defaults": {"--iterations": "50", "--n-steps": "1024", "--eval-every": "10", "--train-per-task": "150"},
    },
}
#: Kept for callers of the RLlib defaults.
DEFAULTS = ALGOS["rllib-ppo"]["defaults"]
#: How each family is scored (KQA's reward is the token F1 of the answer; the others are exact match).
MEASURE = {"KQA": "mean token F1"}
#: Student's t, two-sided 95%, by degrees of freedom (the seeds less one).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def markers(level: str, algo: str = "rllib-ppo") -> tuple[str, str]:
    """The README markers around a trainer's table of a level (RLlib's PPO: ``bench_rl:<level>``)."""
    name = level if algo == "rllib-ppo" else f"{algo}:{level}"
    return f"<!-- bench_rl:{name}:start -->", f"<!-- bench_rl:{name}:end -->"


def _algo(runs: list[dict[str, Any]]) -> str:
    """The runs' trainer (runs made before the record named it are RLlib's PPO); one trainer per table."""
    algos = {run.get("algo", "rllib-ppo") for run in runs}
    if len(algos) != 1:
        raise SystemExit(f"the runs are of different trainers ({sorted(algos)}): one table per trainer")
    (algo,) = algos
    if algo not in ALGOS:
        raise SystemExit(f"unknown trainer {algo!r} in the runs (known: {', '.join(ALGOS)})")
    return algo


def interval(values: list[float]) -> tuple[float, float]:
    """The mean of ``values`` and the half-width of its 95% Student-t interval (0 for one value).

    Example:
        >>> mean, half = interval([0.8, 0.9, 1.0])
        >>> round(mean, 3), round(half, 3)
        (0.9, 0.248)
    """
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    t = _T95.get(len(values) - 1, 1.96)
    return mean, t * math.sqrt(variance / len(values))


def _shown(values: list[float]) -> str:
    mean, half = interval(values)
    return f"{mean:.2f}" if len(values) < 2 else f"{mean:.2f} ± {half:.2f}"


def table(runs: list[dict[str, Any]]) -> str:
    """The README's per-family table (markdown) for runs of one level and one set of instances."""
    first = runs[0]
    levels = {run.get("level", "oracle-args") for run in runs}
    if len(levels) != 1:
        raise SystemExit(f"the runs are of different help levels ({sorted(levels)}): one table per level")
    tests = {json.dumps(run.get("seeds", {}).get("test")) for run in runs}
    if len(tests) != 1:
        raise SystemExit("the runs have different test seeds: their figures do not go in one table")
    level = first.get("level", "oracle-args")
    baselines = first["baselines"]
    if any(run["baselines"] != baselines for run in runs):
        raise SystemExit(
            "the runs have different baselines (other instance sets?): their figures do not go in one table"
        )
    algo = _algo(runs)
    label = ALGOS[algo]["label"]
    seeds = [run.get("seeds", {}).get("ppo") for run in runs]
    history = first["history"]
    args = first.get("args", {})
    test_seed = first.get("seeds", {}).get("test")
    frozen = " (frozen: never used for design)" if first.get("test_seed_frozen") else ""
    privileged = " (privileged: arguments from the hidden parameters)" if first.get("privileged") else ""
    kept = ", ".join(f"{run['kept_iteration']}" for run in runs)
    budget = f"{len(history)} iterations ({history[-1]['env_steps']} environment steps) per {label} seed"
    if algo == "maskable-ppo":
        trainer = first.get("trainer", {})
        learner = (
            "one MaskablePPO policy (sb3-contrib's `MultiInputPolicy`: an MLP over the flattened observation, "
            f"masked slots never chosen; {trainer.get('n_epochs', '?')} epochs of minibatches of "
            f"{trainer.get('batch_size', '?')}, learning rate {trainer.get('learning_rate', '?')}, entropy "
            f"coefficient {trainer.get('ent_coef', '?')}) for all families"
        )
        planned = int(args.get("iterations", len(history)))
        budget = (
            f"{planned} iterations of {trainer.get('n_steps', '?')} environment steps "
            f"({planned * int(trainer.get('n_steps', 0))} steps, one update each) per seed"
        )
    else:
        learner = "one PPO policy for all families"
    lines = [
        f"Help level **{level}**{privileged}. Test success on {args.get('eval_per_task', '?')} instances per family "
        f"of task seed {test_seed}{frozen} (task generator version {first.get('task_generator_version', 2)}, "
        f"{first.get('task_distribution', 'legacy')} instances); {learner}, "
        f"{budget}, "
        f"seeds {', '.join(str(s) for s in seeds)}; "
        f"the checkpoint kept by validation success (iterations {kept}); step cost in training "
        f"{first.get('step_cost', 0.0)}. {label}: mean over the seeds"
        + (" ± the 95% interval (Student's t)." if len(runs) > 1 else "."),
        "",
        f"| family | random candidates | most frequent answer | best fixed slot order | {label} | measure |",
        "|---|---|---|---|---|---|",
    ]
    for family in sorted(baselines["random"]):
        ppo = [run["trained"].get(family, 0.0) for run in runs]
        cells = [baselines["random"][family], baselines["answer_prior"].get(family, 0.0)]
        cells.append(baselines["fixed_order"].get(family, 0.0))
        shown = " | ".join(f"{v:.2f}" for v in cells)
        lines.append(f"| {family} | {shown} | {_shown(ppo)} | {MEASURE.get(family, 'success rate')} |")
    overall = [baselines["random_overall"], baselines["answer_prior_overall"], baselines["fixed_order_overall"]]
    shown = " | ".join(f"{v:.2f}" for v in overall)
    lines.append(f"| overall | {shown} | {_shown([run['trained_overall'] for run in runs])} | |")
    stopped = [run for run in runs if run.get("partial")]
    if stopped:
        said = "; ".join(
            f"seed {run.get('seeds', {}).get('ppo')} after {len(run['history'])} of "
            f"{run.get('args', {}).get('iterations', '?')} iterations ({run['history'][-1]['env_steps']} steps)"
            for run in stopped
        )
        lines += ["", f"(Stopped before their last iteration: {said}. Figures of the policy each kept by then.)"]
    lines += ["", "Fixed slot orders (searched on training instances, played blind):", ""]
    for family, names in sorted(baselines["fixed_order_slots"].items()):
        lines.append(f"- {family}: `{' '.join(names)}`")
    return "\n".join(lines)


def write_readme(runs: list[dict[str, Any]], readme: Path = README) -> None:
    """Replace the text between the level's ``bench_rl`` markers of ``readme`` with :func:`table`."""
    level = runs[0].get("level", "oracle-args")
    algo = _algo(runs)
    start, end = markers(level, algo)
    text = readme.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"{readme} has no {start} ... {end} markers: add them where the {algo} {level} table goes")
    head, rest = text.split(start, 1)
    _old, tail = rest.split(end, 1)
    readme.write_text(f"{head}{start}\n{table(runs)}\n{end}{tail}", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], add_help=True)
    parser.add_argument("--level", default="parsed", help="help level (tools, parsed, oracle-args)")
    parser.add_argument(
        "--algo", choices=tuple(ALGOS), default="rllib-ppo", help="the trainer (rllib-ppo: RLlib's PPO; maskable-ppo)"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="the trainer's seeds, one run each")
    parser.add_argument("--from-json", type=Path, nargs="+", default=None, help="rewrite the README from these runs")
    parser.add_argument("--workdir", type=Path, default=None, help="where the runs' files go (default: a temp dir)")
    parser.add_argument("--no-readme", action="store_true", help="print the table, leave the README alone")
    known, passed = parser.parse_known_args()
    if known.from_json:
        runs = [json.loads(path.read_text(encoding="utf-8")) for path in known.from_json]
        print(table(runs))
        if not known.no_readme:
            write_readme(runs)
            print(f"README table of {_algo(runs)} at level {runs[0].get('level', 'oracle-args')} rewritten")
        return 0
    for flag in ("--seed", "--json", "--workdir", "--level", "--baselines-json"):
        if flag in passed:
            raise SystemExit(f"{flag} is set by bench_rl.py (use --seeds, --workdir, --level)")
    workdir = known.workdir or Path(tempfile.mkdtemp(prefix="bench-rl-"))
    workdir.mkdir(parents=True, exist_ok=True)
    trainer = ALGOS[known.algo]
    defaults = trainer["defaults"].items()
    extra = [flag_value for flag, value in defaults if flag not in passed for flag_value in (flag, value)]
    # RLlib's runs keep their earlier names; another trainer's are prefixed with its name.
    prefix = "" if known.algo == "rllib-ppo" else f"{known.algo}-"
    curve = "ppo_learning_curve" if known.algo == "rllib-ppo" else f"{known.algo.replace('-', '_')}_learning_curve"
    runs = []
    for seed in known.seeds:
        out = workdir / f"{prefix}{known.level}-seed{seed}.json"
        command = [
            sys.executable,
            str(trainer["example"]),
            *passed,
            *extra,
            "--level",
            known.level,
            "--seed",
            str(seed),
        ]
        command += ["--workdir", str(workdir / "sets"), "--json", str(out)]
        command += ["--baselines-json", str(workdir / f"baselines-{known.level}.json")]
        if "--out" not in passed:
            command += ["--out", str(ROOT / "docs" / f"{curve}_{known.level}_seed{seed}.png")]
        print("$", " ".join(command), flush=True)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run(command, env=env, check=False)
        if done.returncode != 0:
            print(f"the run with {trainer['label']} seed {seed} failed (exit {done.returncode}); figures in {workdir}")
            return done.returncode
        runs.append(json.loads(out.read_text(encoding="utf-8")))
    print()
    print(table(runs))
    if not known.no_readme:
        write_readme(runs)
        print(f"README table of {known.algo} at level {known.level} rewritten; runs in {workdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
