"""Hand-made orgs for tests: the 16 empty tables, and rows added one by one with real ids."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from crmarena_gym.schema import create_tables, get_object, make_id


def ts(text: str) -> str:
    """A stored datetime from ``YYYY-MM-DD HH:MM`` (or ``YYYY-MM-DD``)."""
    fmt = "%Y-%m-%d %H:%M" if " " in text else "%Y-%m-%d"
    return dt.datetime.strptime(text, fmt).strftime("%Y-%m-%dT%H:%M:%S") + ".000+0000"


class OrgBuilder:
    """Builds a small org database row by row.

    Example:
        >>> b = OrgBuilder(":memory:")
        >>> agent = b.add("User", FirstName="Ada", LastName="Byrne")
        >>> agent.startswith("005")
        True
    """

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.conn = sqlite3.connect(str(path))
        create_tables(self.conn)
        self._numbers: Counter[str] = Counter()

    def add(self, object_name: str, **values: Any) -> str:
        """Insert one row; returns its Id (generated unless given)."""
        obj = get_object(object_name)
        assert obj is not None, object_name
        if "Id" not in values:
            self._numbers[obj.key_prefix] += 1
            values["Id"] = make_id(obj.key_prefix, 1000 + self._numbers[obj.key_prefix])
        columns = []
        for name in values:
            field = obj.get_field(name)
            assert field is not None and field.stored, f"{object_name}.{name}"
            columns.append('"' + field.column_name + '"')
        placeholders = ", ".join("?" for _ in values)
        self.conn.execute(
            f'INSERT INTO "{obj.name}" ({", ".join(columns)}) VALUES ({placeholders})', tuple(values.values())
        )
        return str(values["Id"])

    def close(self) -> None:
        """Commit and close (the file stays)."""
        self.conn.commit()
        self.conn.close()


def build_original_layout(shared_dir: Path, path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Write a database in the original dump's layout from ``org_rows_sample.json``.

    The sample holds rows harvested from agents' query outputs; keys that are not stored schema
    fields (query aliases) are left out and rows of one record are merged by Id.

    Returns:
        The rows written: object name -> Id -> column -> value.
    """
    sample = json.loads((shared_dir / "org_rows_sample.json").read_text())["objects"]
    merged: dict[str, dict[str, dict[str, Any]]] = {}
    for name, records in sample.items():
        obj = get_object(name)
        assert obj is not None, name
        by_id = merged.setdefault(obj.name, {})
        for rec in records:
            kept = {}
            for key, value in rec.items():
                f = obj.get_field(key)
                if f is not None and f.stored:
                    kept[f.column_name] = value
            by_id.setdefault(kept["Id"], {}).update(kept)
    conn = sqlite3.connect(path)
    create_tables(conn)
    for name, by_id in merged.items():
        for row in by_id.values():
            cols = ", ".join(f'"{c}"' for c in row)
            conn.execute(f'INSERT INTO "{name}" ({cols}) VALUES ({", ".join("?" for _ in row)})', tuple(row.values()))
    conn.commit()
    conn.close()
    return merged
