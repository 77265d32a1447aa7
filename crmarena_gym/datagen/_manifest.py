"""The manifest, latent and hidden tables of a generated org, and the content hash.

They live in the org's SQLite file beside the object tables: ``crmarena_manifest`` (one JSON row),
``crmarena_latent`` (one JSON value per latent variable) and, in the Pro kinds' orgs, the hidden tables
``crmarena_hidden_*`` (one row per planted label, for gold computed by plain SQL). The query engine only
lets agents read the object tables.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from crmarena_gym.schema import (
    DEFAULT_KIND,
    ORG_KINDS,
    Field,
    FieldType,
    OrgSchema,
    SchemaDrift,
    org_schema,
    quote_identifier,
)

#: Bump whenever the generator's output for some seed and scale changes (its rows, or the file's indexes).
#: 3: composite indexes for the tasks' access paths, and the planner's statistics (ANALYZE).
#: 4: the history's per-agent indexes (NewValue__c or OldValue__c, Field__c, CreatedDate).
#: 5: orgs at seeds other than 0 add care-and-warranty facts to each category's first guide (the training
#:    split's KQA instances come from them); the seed-0 org's rows are unchanged (its content hash is pinned).
GENERATOR_VERSION = 5
#: The generator version of each org kind (the service org's is :data:`GENERATOR_VERSION`). Bump a kind's
#: whenever its output for some seed and scale changes.
#: b2b, b2c 1: the first Pro orgs (issue 26).
#: b2b, b2c 2: the article bank with its facts, remedies offered on cases, look-alike purchases, private facts.
GENERATOR_VERSIONS: dict[str, int] = {"service": GENERATOR_VERSION, "b2b": 3, "b2c": 3}

MANIFEST_TABLE = "crmarena_manifest"
LATENT_TABLE = "crmarena_latent"
#: The name of every hidden table starts so (the query engine reads object tables only).
HIDDEN_PREFIX = "crmarena_hidden_"


class Manifest(BaseModel):
    """What a generated org file holds and how it was made.

    Attributes:
        generator_version: The kind's generator version (``GENERATOR_VERSIONS``) of the code that wrote the file.
        seed: The seed the org was drawn from.
        scale: The customer-volume scale (1.0: the original org's size).
        latent: Whether the latent variables were drawn (False: flat).
        company: The store's name, as the articles and transcripts spell it.
        row_counts: Rows per object table.
        content_hash: SHA-256 over the object tables' rows, and the hidden tables' (see :func:`content_hash`).
        first_case: CreatedDate of the earliest case.
        last_case: CreatedDate of the latest case.
        kind: The org kind (``service``, ``b2b``, ``b2c``); left out of a service org's stored manifest, which
            stays as it was before there were kinds.
        hidden_row_counts: Rows per hidden table (none in a service org).
        base_content_hash: In a perturbed org (``crmarena_gym.datagen.perturb_org``), the content hash of
            the generated org it was made from; None in a generated org.
        perturbations: In a perturbed org, each transform applied, in order: its kind, strength, seed and
            what it changed; empty in a generated org.
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
    kind: str = DEFAULT_KIND
    hidden_row_counts: dict[str, int] = {}
    base_content_hash: str | None = None
    perturbations: list[dict[str, Any]] = []

    def stored_json(self) -> str:
        """The manifest as the org file stores it: a service org's without the fields it never had, and an
        unperturbed org's without the perturbation fields (so generated files stay as they were)."""
        unperturbed = {"base_content_hash", "perturbations"} if not self.perturbations else set()
        return self.model_dump_json(exclude_defaults=self.kind == DEFAULT_KIND, exclude=unperturbed or None)


def content_hash(conn: sqlite3.Connection, kind: str = DEFAULT_KIND, hidden: tuple[str, ...] = ()) -> str:
    """SHA-256 over an org's tables: each row as canonical JSON, tables and rows in a fixed order.

    The hash covers table names, column names and values (object rows ordered by Id, hidden rows by all
    their columns), not the file's bytes, so the same data always hashes the same whatever SQLite's page
    layout.

    Args:
        conn: The org file.
        kind: The org kind: its object tables are hashed, in the schema's order.
        hidden: Hidden tables to hash after them (a Pro org's ``manifest.hidden_row_counts``), in this order.
    """
    h = hashlib.sha256()
    tables = [(obj.name, "Id") for obj in org_schema(kind).objects]
    for name in hidden:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({quote_identifier(name)})")]
        tables.append((name, ", ".join(quote_identifier(c) for c in columns) or "1"))
    for name, order in tables:
        table = quote_identifier(name)
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY {order}")
        columns = [d[0] for d in cur.description]
        h.update(json.dumps([name, columns], separators=(",", ":")).encode())
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
    conn.execute(f"INSERT INTO {MANIFEST_TABLE} VALUES (?)", (manifest.stored_json(),))
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


def manifest_kind(conn: sqlite3.Connection) -> str:
    """The org kind the manifest in ``conn`` names: ``service`` when the file has no manifest of ours (the
    original's dump, a hand-made file), or when its manifest names no kind (a service org).

    Raises:
        ValueError: The manifest names a kind this version does not know.
    """
    try:
        row = conn.execute(f"SELECT manifest FROM {MANIFEST_TABLE}").fetchone()
        kind = json.loads(row[0]).get("kind", DEFAULT_KIND)
    except (sqlite3.Error, ValueError, TypeError, AttributeError):  # no manifest of ours
        return DEFAULT_KIND
    if kind not in ORG_KINDS:
        raise ValueError(
            f"the org's manifest names org kind {kind!r}, which this version of crmarena_gym does not know "
            f"(it knows {', '.join(ORG_KINDS)})"
        )
    return kind


def manifest_schema(conn: sqlite3.Connection) -> OrgSchema:
    """The schema of the org in ``conn``: its kind's (:func:`manifest_kind`), after the schema drift its
    manifest records (a perturbed org's ``schema_drift`` transform), if any.

    Raises:
        ValueError: The manifest names an unknown kind, or records a drift this version cannot apply.
    """
    kind = manifest_kind(conn)
    try:
        (text,) = conn.execute(f"SELECT manifest FROM {MANIFEST_TABLE}").fetchone()
        records = json.loads(text).get("perturbations") or []
    except (sqlite3.Error, ValueError, TypeError, AttributeError):  # no manifest of ours
        return org_schema(kind)
    drifts = [r for r in records if isinstance(r, dict) and r.get("kind") == "schema_drift"]
    if not drifts:
        return org_schema(kind)
    try:
        return _drifted(kind, json.dumps(drifts[-1]["drift"], sort_keys=True))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        version = drifts[-1].get("version")
        raise ValueError(
            f"the org's manifest records a schema drift this version of crmarena_gym cannot apply (made by "
            f"perturbation version {version}; perturb the base org again): {exc}"
        ) from None


@functools.lru_cache(maxsize=32)
def _drifted(kind: str, drift_json: str) -> OrgSchema:
    drift = json.loads(drift_json)
    added = {
        obj: tuple(Field(f["name"], FieldType(f["type"]), f["description"]) for f in fields)
        for obj, fields in drift.get("added", {}).items()
    }
    return org_schema(kind).drifted(
        SchemaDrift(
            renamed=drift.get("renamed", {}),
            added=added,
            objects=drift.get("objects", {}),
            migrated=drift.get("migrated", {}),
        )
    )


def read_hidden(path: str | Path, table: str) -> list[dict[str, Any]]:
    """The rows of one hidden table of a generated org (``crmarena_hidden_<table>``), as dicts.

    Args:
        path: The org file.
        table: The table's name, with or without the ``crmarena_hidden_`` prefix.

    Raises:
        FileNotFoundError: No file at ``path``.
        ValueError: The file has no such hidden table (a service org has none).
    """
    name = table if table.startswith(HIDDEN_PREFIX) else HIDDEN_PREFIX + table
    conn = _open_ours(path, name)
    try:
        cur = conn.execute(f"SELECT * FROM {quote_identifier(name)} ORDER BY rowid")
        columns = [d[0] for d in cur.description]
        return [dict(zip(columns, row, strict=True)) for row in cur.fetchall()]
    finally:
        conn.close()


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
