"""``crmarena-gym tasks``: list a task set, show one instance with its gold and hidden parameters, or
summarize what each family asks (competitors at the deciding step, answer spread, None rate).

The default source is the default task set (130 instances per task for the embedded org, generated
and cached on first use); ``--org PATH`` takes the default set of another org, ``--source FILE`` a
task file (JSON list or JSON Lines, the original's ``tasks_original.json`` among them), and
``--distribution legacy`` the instances of task generator version 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from crmarena_gym._console import text_table
from crmarena_gym.cli._voice import fail

if TYPE_CHECKING:  # the task package (numpy, the org) loads only when a task command runs
    from crmarena_gym.tasks import TaskInstance

_QUERY_WIDTH = 70
_HIDDEN_MARKER = "=== HIDDEN FROM AGENTS: the gold answer and the hidden parameters ==="


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``tasks`` subcommand with its ``list``, ``show``, ``summary`` and ``generate`` actions."""
    parser = subparsers.add_parser(
        "tasks",
        help="list task instances or show one",
        description="List the instances of a task set, or show one instance in full.",
    )
    actions = parser.add_subparsers(dest="tasks_action", metavar="ACTION")

    def add_source(p: argparse.ArgumentParser, *, org_help: str | None = None) -> None:
        if org_help is None:
            group = p.add_mutually_exclusive_group()
            group.add_argument("--source", metavar="FILE", help="a task file: JSON list or JSON Lines")
            group.add_argument("--org", metavar="PATH", help="use the default task set of this org database")
        else:
            p.add_argument("--source", metavar="FILE", help="a task file: JSON list or JSON Lines")
            p.add_argument("--org", metavar="PATH", help=org_help)
        p.add_argument("--seed", type=int, default=None, help="task seed of the generated set (default 0)")
        p.add_argument("--per-task", type=int, default=None, help="instances per task of the generated set (130)")
        p.add_argument(
            "--distribution",
            choices=("discriminating", "legacy"),
            default=None,
            help="the generated set's distribution (default discriminating; legacy: task generator version 2's)",
        )

    listing = actions.add_parser("list", help="one line per instance", description="List the instances.")
    add_source(listing)
    listing.add_argument("--task", metavar="ABBR", help="only this task (abbreviation such as NCR, or its name)")
    listing.set_defaults(func=run_list)

    show = actions.add_parser("show", help="one instance in full", description="Show one instance in full.")
    show.add_argument("idx", type=int, help="the instance's idx")
    add_source(show)
    show.add_argument("--json", action="store_true", help="print the instance as JSON")
    show.set_defaults(func=run_show)

    summary = actions.add_parser(
        "summary",
        help="per family: competitors at the deciding step, answer spread, None rate",
        description="Summarize what each family of a task set asks: the candidates its deciding step compares "
        "(counted on the org for generated instances), whether each instance meets its family's rule, how "
        "spread the gold answers are and how many are None.",
    )
    add_source(summary, org_help="the org the set was made for (default: the embedded org)")
    summary.add_argument("--json", action="store_true", help="print the summaries as JSON")
    summary.set_defaults(func=run_summary)

    generate = actions.add_parser(
        "generate",
        help="draw a task set from an org and write it to a file",
        description="Draw instances from an org (CRMArena's nine tasks on a service org, CRMArena-Pro's categories "
        "on a b2b or b2c org) and write them as JSON Lines or a JSON list (--public: the public row format, "
        "without the hidden parameters).",
    )
    generate.add_argument("--org", metavar="PATH", help="the org database (default: the embedded org)")
    generate.add_argument("--out", metavar="FILE", required=True, help="where to write (.jsonl: JSON Lines)")
    generate.add_argument(
        "--task", metavar="ABBR", action="append", help="only this task or category (repeatable; default: all)"
    )
    generate.add_argument("--seed", type=int, default=0, help="the task seed (default 0)")
    generate.add_argument(
        "--per-task", type=int, default=None, help="instances per task (default 130; 100 per Pro category)"
    )
    generate.add_argument("--public", action="store_true", help="write the public rows (no params)")
    generate.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    generate.set_defaults(func=run_generate)

    parser.set_defaults(func=lambda args: _usage(parser))


def run_generate(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``tasks generate``: 0 on success, 2 when the org cannot yield the set (the message says why)."""
    from crmarena_gym.org import default_org_path
    from crmarena_gym.tasks import TaskGenerationError, generate_tasks, save_tasks

    out, err = out or sys.stdout, err or sys.stderr
    if args.per_task is not None and args.per_task < 1:
        return fail("tasks", f"--per-task must be at least 1, got {args.per_task}", file=err)
    target = Path(args.out)
    if target.is_dir() or not target.name:  # '/' was a traceback, after the set was drawn
        return fail("tasks", f"--out {args.out!r} is a directory: name a file such as tasks.jsonl", file=err)
    if target.exists() and not args.force:  # as generate and perturb refuse (a curated set is lost otherwise)
        return fail("tasks", f"{args.out!r} already exists; pass --force to overwrite it", file=err)
    try:
        org = args.org if args.org is not None else default_org_path()  # as every other command defaults it
        instances = generate_tasks(org, seed=args.seed, per_task=args.per_task, tasks=args.task)
    except (FileNotFoundError, KeyError, TaskGenerationError, ValueError, NotImplementedError) as exc:
        return fail("tasks", str(exc.args[0] if isinstance(exc, KeyError) else exc), file=err)
    target.parent.mkdir(parents=True, exist_ok=True)  # as generate --out does (the error named a temporary file)
    path = save_tasks(instances, target, public=args.public)
    unanswerable = sum(i.answer is None for i in instances)
    print(f"{len(instances)} instances ({unanswerable} with a None gold) written to {path}", file=out)
    return 0


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


class _SourceError(Exception):
    """The task set cannot be read or generated; the message says why."""


def _load(args: argparse.Namespace) -> tuple[list[TaskInstance], str]:
    from crmarena_gym.tasks import (
        DEFAULT_DISTRIBUTION,
        DEFAULT_PER_TASK,
        DEFAULT_TASK_SEED,
        TaskFileError,
        TaskGenerationError,
        default_tasks,
        load_tasks,
    )
    from crmarena_gym.tasks.pro import DEFAULT_PRO_PER_TASK

    generated = (args.seed, args.per_task, args.distribution)
    if args.source is not None and any(option is not None for option in generated):
        raise _SourceError(
            "--seed, --per-task and --distribution choose a generated set; they do not apply to --source"
        )
    try:
        if args.source is not None:
            return load_tasks(args.source), args.source
        seed = DEFAULT_TASK_SEED if args.seed is None else args.seed
        distribution = args.distribution or DEFAULT_DISTRIBUTION
        if args.per_task is not None and args.per_task < 1:
            raise _SourceError(f"--per-task must be at least 1, got {args.per_task}")
        instances = default_tasks(args.org, seed=seed, per_task=args.per_task, distribution=distribution)
        if instances and instances[0].is_pro:  # a CRMArena-Pro org: its categories' set
            per_task = args.per_task or DEFAULT_PRO_PER_TASK
            label = (
                f"the default CRMArena-Pro ({instances[0].kind}) task set of {args.org} "
                f"(seed {seed}, {per_task} per category)"
            )
        else:
            per_task = DEFAULT_PER_TASK if args.per_task is None else args.per_task
            label = (
                f"the default task set of {args.org or 'the embedded org'} "
                f"(seed {seed}, {per_task} per task, {distribution} distribution)"
            )
        return instances, label
    except (FileNotFoundError, TaskFileError, TaskGenerationError, ValueError, NotImplementedError) as exc:
        raise _SourceError(str(exc)) from None


def _excerpt(text: str, width: int = _QUERY_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def format_listing(instances: list[TaskInstance]) -> str:
    """The instances as an aligned table: idx, task, answer (``None`` when unanswerable), query excerpt."""
    rows = [
        (
            str(i.idx),
            i.abbrev,
            "None" if i.answer is None else _excerpt(", ".join(i.answer_values), 40),
            _excerpt(i.query),
        )
        for i in instances
    ]
    return text_table(("idx", "task", "answer", "query"), rows)


def format_instance(inst: TaskInstance) -> str:
    """Every field of an instance; the gold answer and ``params`` come last, under a marker saying that
    agents never see them."""
    parts = [
        f"idx: {inst.idx}",
        f"task: {inst.task} ({inst.abbrev}), persona: {inst.persona}, reward metric: {inst.reward_metric}"
        + (f", org kind: {inst.kind}" if inst.is_pro else ""),
        "",
        "--- query (shown to the agent) ---",
        inst.query,
        "",
        "--- metadata.required (shown to the agent) ---",
        inst.metadata.required.rstrip("\n") or "(empty)",
        "",
        "--- metadata.optional (shown in the aided mode) ---",
        inst.metadata.optional.rstrip("\n") or "(empty)",
        "",
        _HIDDEN_MARKER,
        f"answer: {'None (unanswerable)' if inst.answer is None else ', '.join(inst.answer_values)}",
        "params: " + (json.dumps(inst.params, indent=2, ensure_ascii=False) if inst.params else "(none)"),
    ]
    return "\n".join(parts)


def run_list(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``tasks list``: 0 on success, 2 when the source cannot be read or the task is unknown."""
    from crmarena_gym.tasks._spec import spec_for

    out, err = out or sys.stdout, err or sys.stderr
    kind = "service"
    if args.task is not None:
        try:  # a name of either suite; checked again in the set's own suite once it is read
            spec_for(args.task)
        except KeyError as exc:
            try:
                spec_for(args.task, "b2b")
            except KeyError as pro:  # unknown in both: say it in the suite of the org given
                return fail("tasks", (pro if _org_kind(args.org) != "service" else exc).args[0], file=err)
    try:
        instances, label = _load(args)
    except _SourceError as exc:
        return fail("tasks", str(exc), file=err)
    if args.task is not None:
        kind = instances[0].kind if instances else "service"
        try:
            name = spec_for(args.task, kind).name
        except KeyError as exc:
            return fail("tasks", exc.args[0], file=err)
        instances = [i for i in instances if i.task == name]
    print(format_listing(instances), file=out)
    unanswerable = sum(i.answer is None for i in instances)
    print(f"{len(instances)} instances ({unanswerable} unanswerable) from {label}", file=out)
    return 0


def _org_kind(path: str | None) -> str:
    """The kind of the org file at ``path`` by its manifest (``service`` for none, or no such file)."""
    import contextlib
    import sqlite3

    from crmarena_gym.datagen import manifest_kind

    if path is None or not Path(path).is_file():
        return "service"
    try:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            return manifest_kind(conn)
    except (sqlite3.Error, ValueError):  # not an org; loading it says so
        return "service"


def run_show(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``tasks show IDX``: 0 on success, 2 when the source cannot be read or has no such idx."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        instances, label = _load(args)
    except _SourceError as exc:
        return fail("tasks", str(exc), file=err)
    found = [i for i in instances if i.idx == args.idx]
    if not found:
        span = f"idx runs from {min(i.idx for i in instances)} to {max(i.idx for i in instances)}" if instances else ""
        return fail("tasks", f"no instance has idx {args.idx} in {label}; {span}".rstrip("; "), file=err)
    inst = found[0]
    if args.json:
        print(json.dumps(inst.model_dump(), indent=2, ensure_ascii=False), file=out)
    else:
        print(format_instance(inst), file=out)
    return 0


def run_summary(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``tasks summary``: 0 on success, 2 when the source or the org cannot be read."""
    import dataclasses

    from crmarena_gym.tasks import summarize_tasks

    out, err = out or sys.stdout, err or sys.stderr
    try:
        instances, label = _load(args)
        org = args.org
        if org is None:
            from crmarena_gym.org import default_org_path

            org = default_org_path()
        summaries = summarize_tasks(instances, org)
    except (_SourceError, FileNotFoundError) as exc:
        return fail("tasks", str(exc), file=err)
    if args.json:
        rows = [
            {**dataclasses.asdict(s), "none_rate": s.none_rate, "top_answer_share": s.top_answer_share}
            for s in summaries
        ]
        print(json.dumps(rows, indent=2), file=out)
        return 0
    from crmarena_gym.tasks import format_summary

    print(format_summary(summaries), file=out)
    print(f"{len(instances)} instances from {label}", file=out)
    return 0
