"""``crmarena-gym experiment``: a sweep of policies over environment settings, then a comparison report."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``experiment`` subcommand."""
    parser = subparsers.add_parser(
        "experiment",
        help="run a sweep (policies x dropout, removed functions, turn budgets, env settings) and compare",
        description="Run every cell of an experiment spec (TOML: policies, instances and sweeps over "
        "ToolResultDropout p and mode, FunctionRemoval groups, TurnLimit, toolset, aided, match), each cell a "
        "resumable run under OUT/cells/, then write OUT/report.html with tables, 95% intervals and plots. "
        "Running it again resumes every cell where it stopped. Exits 1 when a cell stopped on an error every "
        "episode would meet (a rejected API key): fix it and run again. Example: examples/ablation.toml.",
    )
    parser.add_argument("spec", metavar="SPEC.toml", help="the experiment spec")
    parser.add_argument("--out", required=True, metavar="DIR", help="the experiment directory")
    parser.add_argument("--list", action="store_true", help="list the cells and exit")
    parser.add_argument("--report-only", action="store_true", help="write the report from the cells run so far")
    parser.set_defaults(func=run_experiment_command)


def run_experiment_command(args: argparse.Namespace) -> int:
    """Run the experiment and write its report; return the exit code."""
    from crmarena_gym.eval import experiment_cells, load_experiment, run_experiment, write_experiment_report

    try:
        spec = load_experiment(args.spec)
    except (ValueError, OSError) as err:
        print(f"crmarena-gym experiment: {err}", file=sys.stderr)
        return 2
    if args.list:
        for cell in experiment_cells(spec):
            print(f"{cell.sweep}\t{cell.policy.name}\t{cell.label}\t{cell.path}")
        return 0
    try:
        if not args.report_only:
            state = run_experiment(spec, args.out, echo=lambda line: print(line, file=sys.stderr, flush=True))
            stopped = [c for c in state["cells"] if c["status"] == "stopped"]
        else:
            stopped = []
        report = write_experiment_report(args.out)
    except KeyboardInterrupt:
        print(
            f"crmarena-gym experiment: interrupted; the episodes played are kept in {args.out!r}. To go on: "
            f"crmarena-gym experiment {args.spec} --out {args.out}",
            file=sys.stderr,
        )
        raise
    except (ValueError, OSError) as err:
        print(f"crmarena-gym experiment: {err}", file=sys.stderr)
        return 2
    print(f"report written to {report}", file=sys.stderr)
    return 1 if stopped else 0
