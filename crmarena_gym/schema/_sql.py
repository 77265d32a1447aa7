"""The SQLite layout of the org: one table per object, one column per stored field."""

from __future__ import annotations

import sqlite3

from crmarena_gym.schema._objects import OBJECTS
from crmarena_gym.schema._types import FieldType, SObject

# SQLite affinities matching how the original dump stores values: text for ids, strings and
# timestamps ('2020-12-22T11:00:00.000+0000'), integers 0/1 for booleans, reals for numbers.
_AFFINITY = {
    FieldType.BOOLEAN: "INTEGER",
    FieldType.INTEGER: "INTEGER",
    FieldType.DOUBLE: "REAL",
    FieldType.CURRENCY: "REAL",
}


def quote_identifier(name: str) -> str:
    """Quote an SQL identifier (``Case``, ``Order`` and ``User`` are SQL keywords).

    Example:
        >>> quote_identifier("Order")
        '"Order"'
    """
    return '"' + name.replace('"', '""') + '"'


def table_ddl(obj: SObject) -> str:
    """The CREATE TABLE statement of one object."""
    columns = []
    for f in obj.stored_fields:
        affinity = _AFFINITY.get(f.type, "TEXT")
        suffix = " PRIMARY KEY" if f.name == "Id" else ""
        columns.append(f"{quote_identifier(f.column_name)} {affinity}{suffix}")
    return f"CREATE TABLE {quote_identifier(obj.name)} ({', '.join(columns)})"


def index_ddl(obj: SObject) -> list[str]:
    """CREATE INDEX statements for an object's reference columns and its timestamps.

    The original dump has no indexes; adding them changes no table or column, and keeps joins and
    date windows fast on large generated orgs.
    """
    statements = []
    for f in obj.stored_fields:
        if f.type is FieldType.REFERENCE or f.name == "CreatedDate":
            name = quote_identifier(f"ix_{obj.name}_{f.column_name}")
            statements.append(
                f"CREATE INDEX IF NOT EXISTS {name} ON {quote_identifier(obj.name)} ({quote_identifier(f.column_name)})"
            )
    return statements


def create_indexes(conn: sqlite3.Connection) -> None:
    """Index every reference column and ``CreatedDate`` of the 16 tables (call after loading rows)."""
    with conn:
        for obj in OBJECTS:
            for statement in index_ddl(obj):
                conn.execute(statement)


def create_tables(conn: sqlite3.Connection) -> None:
    """Create the 16 empty object tables in ``conn``.

    Example:
        >>> conn = sqlite3.connect(":memory:")
        >>> create_tables(conn)
        >>> len(conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall())
        16
    """
    with conn:
        for obj in OBJECTS:
            conn.execute(table_ddl(obj))
