"""``crmarena-gym perturb``: write a perturbed copy of a generated org, and carry a task set to it."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``perturb`` subcommand."""
    parser = subparsers.add_parser(
        "perturb",
        help="write a perturbed copy of a generated org (schema drift, distractors, dirty values, stale articles)",
        description=(
            "Apply seeded perturbations to a generated org (service, b2b or b2c) and write the result as a new org "
            "file whose manifest records them. With --tasks-out, the task set (the default test set of ORG, or "
            "--tasks) is carried to the perturbed org: every instance's gold recomputed there, the instances whose "
            "gold the perturbation made ambiguous dropped and counted."
        ),
    )
    parser.add_argument(
        "perturbations",
        nargs="+",
        metavar="KIND=STRENGTH",
        help="schema_drift, distractors, dirty_values or knowledge_drift, with a strength in (0, 1]",
    )
    parser.add_argument("--org", metavar="PATH", help="the base org file (default: the embedded org)")
    parser.add_argument("--seed", type=int, default=0, help="the perturbations' seed (default 0)")
    parser.add_argument("--out", required=True, metavar="PATH", help="the perturbed org file to write")
    parser.add_argument("--tasks", metavar="PATH", help="the task file to carry (default: ORG's test set)")
    parser.add_argument("--tasks-out", metavar="PATH", help="write the carried task set here (.jsonl or .json)")
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Perturb the org (and carry the tasks); 2 on bad input or an existing file, 1 when writing fails."""
    from crmarena_gym.cli._voice import FAILED, fail
    from crmarena_gym.datagen import parse_perturbations, perturb_org
    from crmarena_gym.org import default_org_path
    from crmarena_gym.tasks import TaskFileError, default_tasks, load_tasks, recompute_tasks, save_tasks

    out = Path(args.out)
    try:
        specs = parse_perturbations(list(args.perturbations), seed=args.seed)
    except ValueError as exc:
        return fail("perturb", str(exc))
    if out.is_dir():
        return fail("perturb", f"--out {str(out)!r} is a directory; give a file path")
    if out.exists() and not args.force:
        return fail("perturb", f"{str(out)!r} already exists; pass --force to overwrite it")
    base = Path(args.org) if args.org else default_org_path()
    if base.resolve() == out.resolve():
        return fail("perturb", "--out must differ from the base org")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)  # as generate --out does (SQLite said only "unable to open")
        manifest = perturb_org(base, out, specs)
    except (ValueError, FileNotFoundError) as exc:
        return fail("perturb", str(exc))
    except OSError as exc:
        return fail("perturb", str(exc.strerror or exc), FAILED)
    print(f"wrote {out} (from {base}, content hash {manifest.content_hash[:16]}...)")
    for record in manifest.perturbations:
        changed = ", ".join(f"{k} {v}" for k, v in record["changed"].items())
        print(f"  {record['kind']} strength {record['strength']:g} seed {record['seed']}: {changed}")
    if args.tasks_out:
        try:
            instances = load_tasks(args.tasks) if args.tasks else default_tasks(base)
            carried = recompute_tasks(instances, base, out)
        except (TaskFileError, ValueError, FileNotFoundError) as exc:
            return fail("perturb", str(exc))
        Path(args.tasks_out).parent.mkdir(parents=True, exist_ok=True)
        save_tasks(carried.kept, args.tasks_out)
        dropped = ", ".join(f"{n} {why}" for why, n in sorted(carried.dropped.items())) or "none"
        print(f"wrote {args.tasks_out}: {len(carried.kept)} of {len(instances)} instances kept; dropped: {dropped}")
    return 0
