"""What a schema-drifted org must be, whatever its kind: checked against the base org it was made from.

Salesforce lets an admin rename custom fields and custom objects, never a standard field's API name; a standard
field is retired by migrating its values to a new custom field, the standard field staying, emptied. These
checks read the drifted org through its API (describe, SOQL, the schema text, the declared view) and the base
org's file with plain SQL, never the drift code's own mapping.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.datagen import read_manifest
from crmarena_gym.org import LocalOrg, OrgError
from crmarena_gym.schema import FieldType, org_schema
from crmarena_gym.tasks import SchemaNames

_LINE = re.compile(r"^  - ([A-Za-z0-9_]+)(?: \[[^\]]*\])?: (.*)$")


def _rows(org: LocalOrg, soql: str) -> dict[str, dict[str, Any]]:
    return {r["Id"]: r for r in org.query(soql)["records"]}


def check_drift(base_path: Path, path: Path) -> dict[str, Any]:
    """Assert every property of the drifted org at ``path`` against its base org; return the recorded drift."""
    (record,) = [r for r in read_manifest(path).perturbations if r["kind"] == "schema_drift"]
    drift = record["drift"]
    renamed, migrated, now = drift["renamed"], drift["migrated"], drift["objects"]
    org, base = LocalOrg(path), LocalOrg(base_path)
    kind = org.kind
    declared_schema = org_schema(kind)
    raw = sqlite3.connect(f"file:{base_path}?mode=ro", uri=True)
    text = org.schema.text()
    blocks = {block.split(":", 1)[0]: block for block in text.split("\n\n")}
    described = {o.name: {f["name"]: f for f in org.describe(o.name)["fields"]} for o in org.schema.objects}

    # Salesforce renames custom fields and objects only: every standard field of every object is still there.
    for obj in declared_schema.objects:
        standard = {f["name"] for f in base.describe(obj.name)["fields"] if not f["custom"]}
        here = now.get(obj.name, obj.name)
        assert standard <= set(described[here]), (obj.name, standard - set(described[here]))
    # Custom is what the base org's describe says (a __c field, or one the dump names without the suffix).
    for obj, names in renamed.items():
        custom = {f["name"] for f in base.describe(obj)["fields"] if f["custom"]}
        assert set(names) <= custom and all(new.endswith("__c") for new in names.values()), (obj, names)
    assert all(old.endswith("__c") for old in now)

    # A renamed custom field: the old name is refused, the new one reads the base org's values.
    for obj, names in renamed.items():
        for old, new in names.items():
            assert new in described[now.get(obj, obj)] and old not in described[now.get(obj, obj)]
            with pytest.raises(OrgError, match="INVALID_FIELD"):
                org.query(f"SELECT Id, {old} FROM {now.get(obj, obj)} LIMIT 3")
            got = _rows(org, f"SELECT Id, {new} FROM {now.get(obj, obj)}")
            want = _rows(base, f"SELECT Id, {old} FROM {obj}")
            assert {i: r[new] for i, r in got.items()} == {i: r[old] for i, r in want.items()}

    # A migrated standard field: it stays (describe, the schema text, SOQL), every value NULL, its description
    # naming the custom field that holds the base org's values now.
    declared = org.declared()
    assert declared is not org and declared.schema.drift is None
    naive = 0
    formulas = " ".join(f.formula or "" for o in declared_schema.objects for f in o.fields)
    for obj, names in migrated.items():
        table, here = declared_schema.get_object(obj).table_name, now.get(obj, obj)
        for old, new in names.items():
            field = declared_schema.get_object(obj).get_field(old)
            assert not field.custom and new.endswith("__c")
            # Only a field an org can leave empty for good: none Salesforce requires or fills itself, no record
            # name, no External ID, none a formula reads.
            assert field.type is not FieldType.BOOLEAN and field.default is None and not field.name_field
            assert not (field.required or field.readonly or field.create_only or field.autonumber or field.external_id)
            assert f'"{field.column_name}"' not in formulas
            assert {old, new} <= set(described[here])
            # Describe: the standard field relabeled and its help text naming its replacement, as an admin marks it.
            assert described[here][old]["label"].endswith(" (Deprecated)") and not described[here][old]["custom"]
            assert f"replaced by {new}" in described[here][old]["inlineHelpText"]
            assert described[here][new]["custom"] and described[here][new]["inlineHelpText"] is None
            shown = dict(m.groups() for m in map(_LINE.match, blocks[here].splitlines()) if m)
            assert shown[old].startswith(f"DEPRECATED, replaced by {new}: ") and field.description in shown[old]
            assert shown[new] == field.description
            got = _rows(org, f"SELECT Id, {old}, {new} FROM {here}")
            want = _rows(base, f"SELECT Id, {old} FROM {obj}")
            assert set(got) == set(want) and got
            assert all(r[old] is None for r in got.values())  # queryable, all NULL
            assert {i: r[new] for i, r in got.items()} == {i: r[old] for i, r in want.items()}
            if field.type.is_text:  # the base file itself, by plain SQL
                stored = dict(raw.execute(f'SELECT "Id", "{field.column_name}" FROM "{table}"').fetchall())
                assert {i: r[new] for i, r in got.items()} == stored
            # The maintained API reads the declared name and reaches the migrated values; it knows no new name.
            assert {i: r[old] for i, r in _rows(declared, f"SELECT Id, {old} FROM {obj}").items()} == {
                i: r[old] for i, r in want.items()
            }
            with pytest.raises(OrgError, match="INVALID_FIELD"):
                declared.query(f"SELECT {new} FROM {obj} LIMIT 1")
            # An agent that hard-codes the standard name gets no error, only nothing: wrong answers.
            if field.type.is_text and field.type.filterable:
                value = next((r[old] for r in want.values() if r[old] is not None), None)
                if value is not None:
                    quoted = str(value).replace("\\", "\\\\").replace("'", "\\'")
                    assert base.query(f"SELECT COUNT() FROM {obj} WHERE {old} = '{quoted}'")["totalSize"] > 0
                    assert org.query(f"SELECT COUNT() FROM {here} WHERE {old} = '{quoted}'")["totalSize"] == 0
                    assert org.query(f"SELECT COUNT() FROM {here} WHERE {new} = '{quoted}'")["totalSize"] > 0
                    naive += 1
    if migrated:
        assert naive > 0
    # A careful agent reads the fields the org maintains off the schema text.
    names = SchemaNames.read(text, kind)
    expected = {obj: {**renamed.get(obj, {}), **migrated.get(obj, {})} for obj in {*renamed, *migrated}}
    assert names is not None and names.fields == expected and names.objects == now
    return drift
