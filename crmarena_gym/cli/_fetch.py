"""``crmarena-gym fetch-original``: the original's published task instances and schema, from the Hugging Face hub."""

from __future__ import annotations

import argparse
from typing import Any

from crmarena_gym.cli._voice import FAILED, fail


def register(subparsers: Any) -> None:
    """Add the ``fetch-original`` subcommand."""
    parser = subparsers.add_parser(
        "fetch-original",
        help="download the original's task instances and schema (Salesforce/CRMArena on the Hugging Face hub)",
        description="Download the original benchmark's 1,170 task instances (tasks_original.json) and the schema "
        "shown to its agents (schema.json) from the Hugging Face hub (needs the datasets package and that network). "
        "The tests read them from ../shared/crmarena beside the checkout: --out ../shared/crmarena. The original's "
        "sample of org rows (org_rows_sample.json) is not published there; the tests that need it skip without it.",
    )
    parser.add_argument(
        "--out", default="crmarena-original", metavar="DIR", help="where to write (default: ./crmarena-original)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Fetch and write; 0 when written, 1 when the hub or the datasets package is not there."""
    from crmarena_gym.tasks import OriginalDataError, fetch_original

    try:
        written = fetch_original(args.out)
    except OriginalDataError as err:
        return fail("fetch-original", str(err), FAILED)
    except OSError as err:
        return fail("fetch-original", f"cannot write to {args.out!r}: {err.strerror or err}", FAILED)
    for path in written:
        print(f"wrote {path}")
    return 0
