"""The manifest and latent tables of a generated org, and the content hash.

Both live in the org's SQLite file beside the 16 object tables, in ``crmarena_manifest`` (one JSON
row) and ``crmarena_latent`` (one JSON value per latent variable). The query engine only lets
agents read the 16 object tables.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from crmarena_gym.schema import OBJECTS, quote_identifier

#: Bump whenever the generator's output for some seed and scale changes (its rows, or the file's indexes).
#: 3: composite indexes for the tasks' access paths, and the planner's statistics (ANALYZE).
#: 4: the history's per-agent indexes (NewValue__c or OldValue__c, Field__c, CreatedDate).
GENERATOR_VERSION = 4

MANIFEST_TABLE = "crmarena_manifest"
LATENT_TABLE = "crmarena_latent"


class Manifest(BaseModel):
    """What a generated org file holds and how it was made.

    Attributes:
        generator_version: ``GENERATOR_VERSION`` of the code that wrote the file.
        seed: The seed the org was drawn from.
        scale: The customer-volume scale (1.0: the original org's size).
        latent: Whether the latent variables were drawn (False: flat).
        company: The store's name, as the articles and transcripts spell it.
        row_counts: Rows per object table.
        content_hash: SHA-256 over the 16 object tables' rows (see :func:`content_hash`).
        first_case: CreatedDate of the earliest case.
        last_case: CreatedDate of the latest case.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    generator_version: int
    seed: int
    scale: float
    latent: bool
    company: str
    row_counts: dict[str, int]
    content_hash: str
    first_case: str
    last_case: str


def content_hash(conn: sqlite3.Connection) -> str:
    """SHA-256 over the 16 object tables: each row as canonical JSON, tables and rows in a fixed order.

    The hash covers table names, column names and values (rows ordered by Id), not the file's bytes,
    so the same data always hashes the same whatever SQLite's page layout.
    """
    h = hashlib.sha256()
    for obj in OBJECTS:
        table = quote_identifier(obj.name)
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY Id")
        columns = [d[0] for d in cur.description]
        h.update(json.dumps([obj.name, columns], separators=(",", ":")).encode())
        h.update(b"\n")
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        while True:
            rows = cur.fetchmany(50_000)
            if not rows:
                break
            h.update("\n".join(dumps(row) for row in rows).encode("utf-8"))
            h.update(b"\n")
    return h.hexdigest()


def write_meta(conn: sqlite3.Connection, manifest: Manifest, latents: dict[str, Any]) -> None:
    """Create and fill the manifest and latent tables."""
    conn.execute(f"CREATE TABLE {MANIFEST_TABLE} (manifest TEXT NOT NULL)")
    conn.execute(f"CREATE TABLE {LATENT_TABLE} (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(f"INSERT INTO {MANIFEST_TABLE} VALUES (?)", (manifest.model_dump_json(),))
    conn.executemany(
        f"INSERT INTO {LATENT_TABLE} VALUES (?, ?)",
        ((name, json.dumps(value, separators=(",", ":"), sort_keys=True)) for name, value in latents.items()),
    )


def _open_ours(path: str | Path, table: str) -> sqlite3.Connection:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no org file at {str(p)!r}")
    try:
        conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone()
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{str(p)!r} is not a SQLite org file: {exc}") from None
    if not found:
        conn.close()
        raise ValueError(f"{str(p)!r} is not an org written by crmarena_gym.datagen (it has no {table!r} table)")
    return conn


def read_manifest(path: str | Path) -> Manifest:
    """The manifest of a generated org file.

    Raises:
        FileNotFoundError: No file at ``path``.
        ValueError: The file is not an org written by this generator, or its manifest is unreadable.
    """
    conn = _open_ours(path, MANIFEST_TABLE)
    try:
        row = conn.execute(f"SELECT manifest FROM {MANIFEST_TABLE}").fetchone()
    finally:
        conn.close()
    if row is None:
        raise ValueError(f"{str(path)!r} has an empty manifest table")
    try:
        return Manifest.model_validate_json(row[0])
    except ValueError as exc:
        raise ValueError(f"{str(path)!r} has an unreadable manifest: {exc}") from None


def read_latent(path: str | Path) -> dict[str, Any]:
    """Every latent variable of a generated org file, by name (see ``crmarena_gym.datagen`` docs).

    Raises:
        FileNotFoundError: No file at ``path``.
        ValueError: The file is not an org written by this generator.
    """
    conn = _open_ours(path, LATENT_TABLE)
    try:
        rows = conn.execute(f"SELECT name, value FROM {LATENT_TABLE} ORDER BY name").fetchall()
    finally:
        conn.close()
    return {name: json.loads(value) for name, value in rows}
