"""RL benchmark: held-out success of one PPO policy on all nine task families against the random-candidate baseline.

Runs ``examples/train_rllib_ppo.py`` (the same code a user runs) with its arguments, writing the
learning curve to ``docs/ppo_learning_curve.png`` and the figures as JSON, prints the example's
table (random baseline vs trained policy on held-out instances, per family) and its timings, and
rewrites the per-family table of the README (between the ``bench_rl`` markers). Needs the ``rl`` extra.

Usage:
    python benchmarks/bench_rl.py                      # 100 iterations, 150 training instances a family
                                                       # (under an hour on 2 CPUs: 45 minutes of training,
                                                       # half of it on CPUs shared with other work)
    python benchmarks/bench_rl.py --iterations 100     # any argument of the example passes through
    python benchmarks/bench_rl.py --from-json FILE     # only rewrite the README table from a run's JSON
"""

from __future__ import annotations

import json
import runpy
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train_rllib_ppo.py"
README = ROOT / "README.md"
CURVE = ROOT / "docs" / "ppo_learning_curve.png"
START, END = "<!-- bench_rl:table:start -->", "<!-- bench_rl:table:end -->"
#: The example's arguments the README's figures were made with (any of them given on the command line wins).
DEFAULTS = {"--iterations": "100", "--train-per-task": "150"}
#: How each family is scored (KQA's reward is the token F1 of the answer; the others are exact match).
MEASURE = {"KQA": "mean token F1"}


def table(figures: dict[str, Any]) -> str:
    """The README's per-family table (markdown) from the example's JSON figures."""
    history = figures["history"]
    args = figures.get("args", {})
    lines = [
        f"Held-out success of one PPO policy trained on all nine families ({len(history)} iterations, "
        f"{history[-1]['env_steps']} environment steps, {figures['train_seconds'] / 60:.0f} minutes of training; "
        f"{args.get('eval_per_task', '?')} held-out instances per family){kept(figures)}:",
        "",
        "| family | random candidates | PPO | measure |",
        "|---|---|---|---|",
    ]
    for family in sorted(figures["baseline"]):
        measure = MEASURE.get(family, "success rate")
        lines.append(
            f"| {family} | {figures['baseline'][family]:.2f} | {figures['trained'].get(family, 0.0):.2f} | {measure} |"
        )
    lines.append(f"| overall | {figures['baseline_overall']:.2f} | {figures['trained_overall']:.2f} | |")
    if figures.get("partial"):
        lines += [
            "",
            f"(The run was stopped after iteration {figures['evals'][-1]['iteration']}: "
            "figures of the policy kept by then.)",
        ]
    return "\n".join(lines)


def kept(figures: dict[str, Any]) -> str:
    """Which evaluation's policy the table shows: the one the run kept by validation success, if it chose one."""
    iteration = figures.get("kept_iteration")
    if iteration is None:
        return ""
    validation = {e["iteration"]: e.get("validation") for e in figures["evals"]}.get(iteration)
    if validation is None:
        return f", the policy of iteration {iteration}"
    per_task = figures.get("args", {}).get("val_per_task", "?")
    return (
        f"; the policy kept is that of iteration {iteration}, the best mean validation success ({validation:.2f}) "
        f"on {per_task} other instances per family"
    )


def write_readme(figures: dict[str, Any], readme: Path = README) -> None:
    """Replace the text between the ``bench_rl`` markers of ``readme`` with :func:`table`."""
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise SystemExit(f"{readme} has no {START} ... {END} markers: add them where the table goes")
    head, rest = text.split(START, 1)
    _old, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{table(figures)}\n{END}{tail}", encoding="utf-8")


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["--from-json"]:
        if len(argv) != 2:
            raise SystemExit("usage: bench_rl.py --from-json FILE")
        write_readme(json.loads(Path(argv[1]).read_text(encoding="utf-8")))
        print(f"README table rewritten from {argv[1]}")
        return
    json_path = Path(tempfile.mkdtemp(prefix="bench-rl-")) / "figures.json"
    extra = [] if "--out" in argv else ["--out", str(CURVE)]
    extra += [] if "--json" in argv else ["--json", str(json_path)]
    for flag, value in DEFAULTS.items():
        if flag not in argv:
            extra += [flag, value]
    if "--json" in argv:
        json_path = Path(argv[argv.index("--json") + 1])
    sys.argv = [str(EXAMPLE), *argv, *extra]
    try:
        runpy.run_path(str(EXAMPLE), run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise
    write_readme(json.loads(json_path.read_text(encoding="utf-8")))
    print(f"README table rewritten; figures in {json_path}")


if __name__ == "__main__":
    main()
