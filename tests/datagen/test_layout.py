"""The generated file's layout: tables, columns, ids, value formats and row counts."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from crmarena_gym.datagen import generate_org, read_manifest
from crmarena_gym.schema import OBJECTS, FieldType, is_valid_id
from tests.original_facts import ORIGINAL_PREFIXES, original_row_counts

SCALED = {"Account", "Contact", "Case", "CaseHistory__c", "EmailMessage", "LiveChatTranscript", "Order", "OrderItem"}
PREFIXES = ORIGINAL_PREFIXES
# Keys of org_rows_sample.json that are aliases or joined columns in the recorded queries, not columns.
SAMPLE_ALIASES = {
    "Case": {"FirstAgent", "agent", "cnt", "num_assignments", "oa_count", "owner_assigns", "Product2Id"},
    "Order": {"OrderItemId", "Product2Id", "Name", "Description"},
    "OrderItem": {"EffectiveDate", "Name", "OrderItemId__c", "Status"},
}
DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000\+0000$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def test_exactly_the_sixteen_tables_and_the_two_hidden_ones(db: sqlite3.Connection) -> None:
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    # SQLite's own tables: the planner's statistics (ANALYZE), which hold no data of the org.
    internal = {n for n in names if n.startswith("sqlite_")}
    assert internal == {"sqlite_stat1"}
    assert names - internal == set(original_row_counts()) | {"crmarena_manifest", "crmarena_latent"}


def test_columns_are_the_schema_stored_fields(db: sqlite3.Connection) -> None:
    for obj in OBJECTS:
        expected = [f.column_name for f in obj.fields if f.formula is None]
        assert _columns(db, obj.name) == expected, obj.name
        for f in obj.fields:
            if f.formula is not None:
                assert f.name.lower() not in {c.lower() for c in _columns(db, obj.name)}


def test_columns_carry_the_original_field_names(db: sqlite3.Connection, shared_dir: Path) -> None:
    described = json.loads((shared_dir / "schema.json").read_text())
    for entry in described:
        cols = {c.lower() for c in _columns(db, entry["object"])}
        for field in entry["fields"]:
            assert field.lower() in cols, (entry["object"], field)


def test_columns_cover_the_sampled_rows_keys(db: sqlite3.Connection, shared_dir: Path) -> None:
    sample = json.loads((shared_dir / "org_rows_sample.json").read_text())["objects"]
    described = {
        e["object"]: {f.lower() for f in e["fields"]} for e in json.loads((shared_dir / "schema.json").read_text())
    }
    for table, rows in sample.items():
        keys = set().union(*(r.keys() for r in rows))
        aliases = SAMPLE_ALIASES.get(table, set())
        # An alias must really not be a field of the object, or the list would hide a missing column.
        assert not {a.lower() for a in aliases} & (described[table] | {"id"}), table
        cols = {c.lower() for c in _columns(db, table)}
        missing = {k for k in keys - aliases if k.lower() not in cols}
        assert not missing, (table, missing)


def test_ids_are_valid_unique_and_prefixed(db: sqlite3.Connection) -> None:
    for table in original_row_counts():
        ids = [r[0] for r in db.execute(f'SELECT Id FROM "{table}"')]
        assert len(ids) == len(set(ids)), table
        assert all(len(i) == 18 and is_valid_id(i) for i in ids), table
        prefixes = {i[:3] for i in ids}
        assert len(prefixes) == 1, (table, prefixes)
        if table in PREFIXES:
            assert prefixes == {PREFIXES[table]}, table


def test_value_formats_follow_the_dump(db: sqlite3.Connection) -> None:
    for obj in OBJECTS:
        for f in obj.fields:
            if f.formula is not None:
                continue
            col = f'"{f.column_name}"'
            values = [r[0] for r in db.execute(f'SELECT {col} FROM "{obj.name}" WHERE {col} IS NOT NULL')]
            types = {
                r[0] for r in db.execute(f'SELECT DISTINCT typeof({col}) FROM "{obj.name}" WHERE {col} IS NOT NULL')
            }
            if f.type is FieldType.DATETIME:
                assert all(DATETIME_RE.match(v) for v in values), (obj.name, f.name)
            elif f.type is FieldType.DATE:
                assert all(DATE_RE.match(v) for v in values), (obj.name, f.name)
            elif f.type is FieldType.BOOLEAN:
                assert set(values) <= {0, 1} and types <= {"integer"}, (obj.name, f.name)
            elif f.type in (FieldType.DOUBLE, FieldType.CURRENCY):
                assert types <= {"real"}, (obj.name, f.name, types)
            else:
                assert types <= {"text"}, (obj.name, f.name, types)
            if f.type is FieldType.PICKLIST and f.picklist_values:
                assert set(values) <= set(f.picklist_values), (obj.name, f.name, set(values) - set(f.picklist_values))


def test_row_counts_at_scale_one_match_the_original_within_ten_percent(org_path: Path, db: sqlite3.Connection) -> None:
    manifest = read_manifest(org_path)
    for table, original in original_row_counts().items():
        (count,) = db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()
        assert manifest.row_counts[table] == count
        assert abs(count - original) <= 0.1 * original, (table, count, original)


@pytest.mark.parametrize("scale", [0.1, 2.0])
def test_customer_volume_scales_linearly_and_the_catalog_does_not(tmp_path: Path, scale: float) -> None:
    path = tmp_path / "org.sqlite"
    generate_org(path, seed=5, scale=scale)
    conn = sqlite3.connect(path)
    try:
        for table, original in original_row_counts().items():
            (count,) = conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()
            if table in SCALED:
                expected = original * scale
                assert abs(count - expected) <= 0.12 * expected + 2, (table, count, expected)
            else:
                assert abs(count - original) <= 0.1 * original, (table, count)
    finally:
        conn.close()


def test_smallest_scale_still_gives_a_complete_org(tmp_path: Path) -> None:
    path = tmp_path / "tiny.sqlite"
    manifest = generate_org(path, seed=9, scale=0.05)
    assert manifest.row_counts["Account"] == 10
    assert manifest.row_counts["Case"] == 49
    assert manifest.row_counts["Knowledge__kav"] == 45
