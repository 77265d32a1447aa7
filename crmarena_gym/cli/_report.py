"""``crmarena-gym report``: tables and plots over one or more evaluation runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from crmarena_gym.cli._voice import did_you_mean


def register(subparsers: Any) -> None:
    """Add the ``report`` subcommand."""
    parser = subparsers.add_parser(
        "report",
        help="a report (Markdown or HTML, with plots) of one or more evaluation runs",
        description="Compare evaluation runs side by side: accuracy per task, pass^k against k, cost against "
        "accuracy. Markdown reports write their SVG plots beside the report; HTML reports embed them. "
        "Without --out, the Markdown tables are printed.",
    )
    parser.add_argument("runs", nargs="+", metavar="DIR", help="run directories written by crmarena-gym eval")
    parser.add_argument("--out", default=None, metavar="FILE", help="the report file (.md or .html)")
    parser.add_argument("--format", choices=("md", "html"), default=None, help="default: from --out's suffix, else md")
    parser.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    """Write or print the report; return the exit code."""
    from crmarena_gym.eval import write_report

    missing = [path for path in args.runs if not Path(path).exists()]
    if missing:  # a misspelt directory: name the run it was probably meant to be, as view does
        for path in missing:
            print(f"crmarena-gym report: {path!r} does not exist{did_you_mean(Path(path))}", file=sys.stderr)
        return 2
    try:
        text = write_report(args.runs, args.out, args.format)
    except (ValueError, FileNotFoundError) as err:
        print(f"crmarena-gym report: {err}", file=sys.stderr)
        return 2
    if args.out is None:
        print(text, end="")
    else:
        print(f"report written to {args.out}", file=sys.stderr)
    return 0
