"""The schema package against the original's field list, sampled rows and SQLite layout."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from crmarena_gym.schema import OBJECTS, FieldType, create_tables, get_object, quote_identifier, schema_text
from tests.original_facts import ORIGINAL_PREFIXES

PREFIXES = ORIGINAL_PREFIXES
# Fields the tools use beyond schema.json (ORIGINAL.md section 4).
TOOL_FIELDS = [("Knowledge__kav", "PublishStatus"), ("Knowledge__kav", "Language"), ("EmailMessage", "ToAddress")]


def test_sixteen_objects_with_the_original_prefixes(shared_dir: Path) -> None:
    described = [e["object"] for e in json.loads((shared_dir / "schema.json").read_text())]
    assert sorted(o.name for o in OBJECTS) == sorted(described) and len(OBJECTS) == 16
    for name, prefix in PREFIXES.items():
        assert get_object(name).key_prefix == prefix  # type: ignore[union-attr]
    assert len({o.key_prefix for o in OBJECTS}) == 16


def test_every_original_field_and_tool_field_exists(shared_dir: Path) -> None:
    for entry in json.loads((shared_dir / "schema.json").read_text()):
        obj = get_object(entry["object"])
        assert obj is not None
        for field in entry["fields"]:
            assert obj.get_field(field) is not None, (entry["object"], field)
    for table, field in TOOL_FIELDS:
        assert get_object(table).get_field(field) is not None  # type: ignore[union-attr]


def test_create_tables_gives_one_table_per_object_with_stored_columns(shared_dir: Path) -> None:
    conn = sqlite3.connect(":memory:")
    create_tables(conn)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {o.name for o in OBJECTS}
    for obj in OBJECTS:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({quote_identifier(obj.name)})")]
        assert cols == [f.column_name for f in obj.fields if f.formula is None]
        assert cols[0] == "Id"
    # The OrderItem column keeps the dump's spelling.
    cols = [r[1] for r in conn.execute('PRAGMA table_info("OrderItem")')]
    assert "PriceBookEntryId" in cols
    # Formula fields (a person's Name) compute from the stored columns.
    conn.execute(
        'INSERT INTO "User" (Id, FirstName, LastName) VALUES (?, ?, ?)', ("005Ws0000000001AAA", "Ada", "Byron")
    )
    name = get_object("User").get_field("Name")  # type: ignore[union-attr]
    assert name is not None and name.formula
    assert conn.execute(f'SELECT {name.formula} FROM "User"').fetchone()[0] == "Ada Byron"


def test_references_point_at_objects_with_unique_relationship_names() -> None:
    names = {o.name for o in OBJECTS}
    for obj in OBJECTS:
        rels = [f.relationship_name.lower() for f in obj.references]  # type: ignore[union-attr]
        assert len(rels) == len(set(rels)), obj.name
        for f in obj.references:
            assert f.reference_to in names
            assert obj.get_relationship(f.relationship_name) is f  # type: ignore[arg-type]
    case = get_object("Case")
    assert case.get_relationship("owner").reference_to == "User"  # type: ignore[union-attr]
    history = get_object("CaseHistory__c")
    assert history.get_relationship("CaseId__r").reference_to == "Case"  # type: ignore[union-attr]


def test_picklists_hold_the_values_the_original_uses(shared_dir: Path) -> None:
    sample = json.loads((shared_dir / "org_rows_sample.json").read_text())["objects"]
    checks = [("Case", "Status"), ("Case", "Priority"), ("CaseHistory__c", "Field__c"), ("Order", "Status")]
    for table, field in checks:
        allowed = set(get_object(table).get_field(field).picklist_values)  # type: ignore[union-attr]
        seen = {r[field] for r in sample[table] if r.get(field) is not None}
        assert seen and seen <= allowed, (table, field, seen - allowed)


def test_schema_text_lists_every_field_once() -> None:
    text = schema_text()
    for obj in OBJECTS:
        assert f"{obj.name}: {obj.description}" in text
        block = next(b for b in text.split("\n\n") if b.startswith(f"{obj.name}: "))
        for f in obj.fields:
            # The standard fields the dump lacks stay out of the agent's schema text, as in the paper's.
            assert (f"  - {f.name} " in block) is not f.extra, (obj.name, f.name)
    long_text = [f for o in OBJECTS for f in o.fields if f.type is FieldType.LONG_TEXT]
    assert long_text and all(not f.type.filterable for f in long_text)
