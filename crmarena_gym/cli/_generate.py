"""``crmarena-gym generate``: write a synthetic org to a SQLite file and print a summary."""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``generate`` subcommand."""
    parser = subparsers.add_parser(
        "generate",
        help="generate a synthetic org into a SQLite file",
        description=(
            "Generate a seeded synthetic org into a SQLite file: the service org (CRMArena's, in the original dump's "
            "layout; the default) or CRMArena-Pro's B2B or B2C org (--kind)."
        ),
    )
    parser.add_argument(
        "--kind",
        choices=("service", "b2b", "b2c"),
        default="service",
        help="the org kind: service (default), b2b (a software vendor) or b2c (a vehicle dealership)",
    )
    parser.add_argument("--seed", type=int, default=0, help="org seed, a non-negative integer (default 0)")
    parser.add_argument("--scale", type=float, default=1.0, help="customer volume; 1.0 = the original's (default)")
    parser.add_argument("--out", required=True, metavar="PATH", help="the SQLite file to write")
    parser.add_argument("--no-latent", action="store_true", help="draw every latent variable flat")
    parser.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Generate the org; return the exit code (2 on bad input or an existing file, 1 when writing fails)."""
    from crmarena_gym.cli._voice import FAILED, fail
    from crmarena_gym.datagen import generate_org, validate_seed_scale

    out = Path(args.out)
    try:
        validate_seed_scale(args.seed, args.scale)
    except ValueError as exc:
        return fail("generate", str(exc))
    if out.is_dir():
        return fail("generate", f"--out {str(out)!r} is a directory; give a file path")
    if out.exists() and not args.force:
        return fail("generate", f"{str(out)!r} already exists; pass --force to overwrite it")
    started = time.perf_counter()
    try:
        manifest = generate_org(out, kind=args.kind, seed=args.seed, scale=args.scale, latent=not args.no_latent)
    except OSError as exc:  # a full disk, an unwritable directory: nothing is left half-written
        return fail("generate", str(exc.strerror or exc), FAILED)
    elapsed = time.perf_counter() - started
    kind = "" if manifest.kind == "service" else f"{manifest.kind} org, "
    print(
        f"wrote {out} ({kind}generator v{manifest.generator_version}, seed {manifest.seed}, "
        f"scale {manifest.scale:g}, latent {'on' if manifest.latent else 'off'})"
    )
    width = max(len(t) for t in [*manifest.row_counts, *manifest.hidden_row_counts])
    for table, count in manifest.row_counts.items():
        print(f"  {table:<{width}}  {count:>9,}")
    if manifest.hidden_row_counts:
        print("hidden tables (planted labels; never visible to queries):")
        for table, count in manifest.hidden_row_counts.items():
            print(f"  {table:<{width}}  {count:>9,}")
    print(f"cases from {manifest.first_case} to {manifest.last_case}")
    print(f"content hash {manifest.content_hash}")
    print(f"{out.stat().st_size / 1e6:.1f} MB in {elapsed:.2f} s")
    return 0
