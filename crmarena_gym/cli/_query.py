"""``crmarena-gym query``: run one SOQL query or SOSL search and print the rows as a table."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from crmarena_gym._console import text_table

_MAX_CELL = 60


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``query`` subcommand."""
    parser = subparsers.add_parser(
        "query",
        help="run a SOQL query or SOSL search against an org",
        description="Run a SOQL query (or a SOSL search: text starting with FIND) and print the result.",
    )
    parser.add_argument("text", help="the SOQL or SOSL text, quoted")
    parser.add_argument("--org", metavar="PATH", help="the org database (default: the generated default org)")
    parser.add_argument(
        "--kind",
        choices=("service", "b2b", "b2c"),
        default=None,
        help="without --org: the generated default org of this kind (default service); with --org: the kind the "
        "file must be",
    )
    parser.add_argument("--today", metavar="YYYY-MM-DD", help="the date relative literals resolve against")
    parser.add_argument("--json", action="store_true", help="print the raw result as JSON")
    parser.set_defaults(func=run)


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A record's values keyed by dotted path (``Owner.Name``), without ``attributes``.

    Example:
        >>> flatten({"attributes": {}, "Id": "1", "Owner": {"attributes": {}, "Name": "Ada"}})
        {'Id': '1', 'Owner.Name': 'Ada'}
    """
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key == "attributes":
            continue
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _cell(value: Any) -> str:
    text = "" if value is None else str(value).replace("\n", " ")
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def format_table(records: list[dict[str, Any]], *, with_type: bool = False) -> str:
    """The records as an aligned text table (columns in order of first appearance)."""
    rows = []
    for rec in records:
        flat = flatten(rec)
        if with_type:
            flat = {"sObject": rec.get("attributes", {}).get("type"), **flat}
        rows.append(flat)
    columns: list[str] = []
    for row in rows:
        columns.extend(c for c in row if c not in columns)
    # A null parent flattens to one empty column; drop it when other rows spell out its fields.
    columns = [c for c in columns if not any(o.startswith(c + ".") for o in columns)]
    if not columns:
        return ""
    return text_table(columns, [[_cell(row.get(c)) for c in columns] for row in rows])


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command; 0 on success, 1 when the org refuses the text, 2 when it cannot be opened."""
    from crmarena_gym.cli._voice import FAILED, fail
    from crmarena_gym.org import LocalOrg, OrgError

    out = out or sys.stdout
    err = err or sys.stderr
    path = args.org
    kind = getattr(args, "kind", None)
    if path is None:
        from crmarena_gym.org import default_org_path  # written by the org cache; imported only when needed

        path = default_org_path(kind=kind or "service")
    try:
        org = LocalOrg(path, today=args.today)
    except (FileNotFoundError, ValueError, TypeError) as exc:
        return fail("query", str(exc), file=err)
    if kind is not None and org.kind != kind:
        found = org.kind
        org.close()
        return fail("query", f"--org {str(path)!r} is a {found} org, not a {kind} org", file=err)
    text = args.text.strip()
    try:
        result = org.search(text) if text.startswith("FIND") else org.query(text)
    except OrgError as exc:
        return fail("query", f"{exc.code}: {exc.message}", FAILED, file=err)
    finally:
        org.close()
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False), file=out)
        return 0
    if "searchRecords" in result:
        records = result["searchRecords"]
        table = format_table(records, with_type=True)
        size = len(records)
    else:
        records = result["records"]
        table = format_table(records)
        size = result["totalSize"]
    if table:
        print(table, file=out)
    print(f"totalSize: {size}", file=out)
    return 0
