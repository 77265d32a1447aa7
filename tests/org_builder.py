"""Hand-made orgs for tests: the 16 empty tables, and rows added one by one with real ids."""

from __future__ import annotations

import datetime as dt
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
