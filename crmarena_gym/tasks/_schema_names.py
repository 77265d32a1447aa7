"""Reading a drifted org's names off its schema text, as a careful agent does, for the oracles' own SOQL.

After schema drift (``crmarena_gym.datagen.perturb_org``) an org's custom fields and objects may carry new API
names, and a standard field may be retired for a custom one that holds its values (the standard field stays,
emptied). The environment's task functions are the org's maintained API and follow the drift themselves
(``Org.declared``); an agent's own SOQL must use the fields the org now maintains. The oracles' solvers write
their queries with the names the org kind declares, so an oracle reads the schema text it is shown
(``info["schema"]``) as a careful agent would: a field whose description says it is deprecated is replaced by
the field it names; an object or field of the same name is the same; one that is gone is found under its new
name by its description (a rename keeps the label and help text), then its type. :class:`SchemaNames` holds
what it read; :class:`RenamedCalls` puts it between a solver and the tools: each SOQL query is rewritten with the
org's names (its objects and every field of every path, resolved along its relationships), and the rows that
come back get the declared names again, so the solver reads them as it always does.

Only what the solvers write is translated: SOQL through ``issue_soql_query``; task functions follow the drift on
their own, and no solver writes SOSL.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from crmarena_gym.org import OrgError
from crmarena_gym.org.soql import parse
from crmarena_gym.org.soql._ast import ChildSubquery, FieldPath, FuncCall, InSelect, Select, TypeOf
from crmarena_gym.schema import OrgSchema, SObject, org_schema, replacement_of, schema_text

__all__ = ["RenamedCalls", "SchemaNames"]

_FIELD_LINE = re.compile(r"^  - ([A-Za-z0-9_]+)( \[[^\]]*\])?: (.*)$")
_OBJECT_LINE = re.compile(r"^([A-Za-z0-9_]+): (.*)$")


@dataclass(frozen=True)
class _Block:
    name: str
    description: str
    fields: tuple[tuple[str, str, str], ...]  # (name, type as written, description)


def _blocks(text: str) -> list[_Block]:
    """The objects of a schema text (``OrgSchema.text``), with their fields as listed."""
    out: list[_Block] = []
    for chunk in text.strip().split("\n\n"):
        lines = chunk.splitlines()
        head = _OBJECT_LINE.match(lines[0]) if lines else None
        if head is None:
            continue
        listed = [m.groups() for m in map(_FIELD_LINE.match, lines[1:]) if m]
        out.append(_Block(head.group(1), head.group(2), tuple((n, t or "", d) for n, t, d in listed)))
    return out


def _match(declared: _Block, shown: _Block | None) -> dict[str, str]:
    """Declared field name -> the org's field for it in ``shown`` (only those that differ): the replacement a
    deprecated field's description names, else the field of that name, else by description, then type."""
    if shown is None:
        return {}
    names = {f[0] for f in shown.fields}
    ours = {f[0] for f in declared.fields}
    out: dict[str, str] = {}
    for name, _kind, description in shown.fields:
        replacement = replacement_of(description)
        if name in ours and replacement is not None and replacement in names and replacement not in ours:
            out[name] = replacement
    kept = ours & names
    free = [f for f in shown.fields if f[0] not in kept and f[0] not in out.values()]
    for name, kind, description in declared.fields:
        if name in names:
            continue
        same = [f for f in free if f[2] == description]
        best = [f for f in same if f[1] == kind] or same
        if best:
            out[name] = best[0][0]
            free.remove(best[0])
    return out


class SchemaNames:
    """What an org's schema text says the kind's declared objects and fields are called there.

    Build it with :meth:`read`; None there means the org names everything as declared.

    Attributes:
        kind: The org kind.
        objects: Declared object name -> the org's name for it (renamed ones only).
        fields: Declared object name -> {declared field name -> the org's field for it} (renamed fields and
            migrated ones, whose replacement holds the values, only).
    """

    def __init__(self, kind: str, objects: dict[str, str], fields: dict[str, dict[str, str]]) -> None:
        self.kind = kind
        self.declared: OrgSchema = org_schema(kind)
        self.objects = objects
        self.fields = fields
        self._back = {obj: {new.lower(): old for old, new in names.items()} for obj, names in fields.items()}

    @staticmethod
    def read(text: object, kind: str) -> SchemaNames | None:
        """Read the org's names off its schema text (``info["schema"]``); None when they are the declared ones.

        Example:
            >>> from crmarena_gym.schema import SchemaDrift
            >>> drift = SchemaDrift(
            ...     renamed={"Product2": {"External_ID__c": "Catalog_Key__c"}},
            ...     migrated={"Account": {"ShippingState": "Shipping_State__c"}},
            ... )
            >>> SchemaNames.read(org_schema().drifted(drift).text(), "service").fields
            {'Account': {'ShippingState': 'Shipping_State__c'}, 'Product2': {'External_ID__c': 'Catalog_Key__c'}}
            >>> SchemaNames.read(schema_text(kind="service"), "service") is None
            True
        """
        if not isinstance(text, str) or text == schema_text(kind=kind):
            return None
        return _read(text, kind)

    # -- queries ---------------------------------------------------------------------------------

    def query(self, soql: str) -> str:
        """``soql``, written with the declared names, with the org's names instead.

        A query that does not parse is returned as it is (the org then answers it as it would).
        """
        try:
            tree = parse(soql)
        except OrgError:
            return soql
        edits: list[tuple[int, str, str]] = []
        self._select(tree, None, edits)
        out = soql
        for pos, old, new in sorted(set(edits), reverse=True):
            if out[pos : pos + len(old)].lower() == old.lower():
                out = out[:pos] + new + out[pos + len(old) :]
        return out

    def _select(self, sel: Select, parent: SObject | None, edits: list[tuple[int, str, str]]) -> SObject | None:
        if parent is None:
            obj = self.declared.get_object(sel.object_name, standard=True)
            if obj is not None and obj.name in self.objects:
                edits.append((sel.object_pos, sel.object_name, self.objects[obj.name]))
        else:  # a child subquery: FROM names the parent's child relationship
            found = self.declared.get_child_relationship(parent, sel.object_name)
            obj = found[0] if found else None
        if obj is None:
            return None
        alias = sel.object_alias

        def walk(node: Any) -> None:
            if isinstance(node, FieldPath):
                self._path(obj, node, alias, edits)
            elif isinstance(node, ChildSubquery):
                self._select(node.query, obj, edits)
            elif isinstance(node, InSelect):
                walk(node.left)
                self._select(node.query, None, edits)
            elif isinstance(node, TypeOf):
                rel = obj.get_relationship(node.relationship)
                for type_name, _pos, paths in node.whens:
                    target = self.declared.get_object(type_name, standard=True)
                    for path in paths:
                        if target is not None:
                            self._path(target, path, None, edits)
                if rel is not None and rel.reference_to:
                    target = self.declared.get_object(rel.reference_to, standard=True)
                    for path in node.otherwise:
                        if target is not None:
                            self._path(target, path, None, edits)
            elif isinstance(node, FuncCall):
                walk(node.arg)
            elif isinstance(node, tuple | list):
                for item in node:
                    walk(item)
            elif is_dataclass(node) and not isinstance(node, type):
                for f in fields(node):
                    walk(getattr(node, f.name))

        for part in (sel.items, sel.where, sel.group_by, sel.having, sel.order_by):
            walk(part)
        return obj

    def _path(self, obj: SObject, path: FieldPath, alias: str | None, edits: list[tuple[int, str, str]]) -> None:
        parts, where = list(path.parts), list(path.part_pos)
        if alias and len(parts) > 1 and parts[0].lower() == alias.lower():
            parts, where = parts[1:], where[1:]
        if parts and len(parts) > 1 and parts[0].lower() == obj.name.lower():
            parts, where = parts[1:], where[1:]  # Case.Subject: the object's own name as qualifier
        current: SObject | None = obj
        for part in parts[:-1]:
            rel = current.get_relationship(part) if current is not None else None
            target = rel.reference_to if rel is not None else None
            current = self.declared.get_object(target, standard=True) if target else None
            if current is None:
                return
        if current is None or not parts:
            return
        field = current.get_field(parts[-1])
        new = self.fields.get(current.name, {}).get(field.name) if field is not None else None
        if new is not None and len(where) == len(parts):
            edits.append((where[-1], parts[-1], new))

    def write_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """A write tool's arguments (``sobject``, ``fields``) with the org's names for the object and its fields."""
        sobject = arguments.get("sobject")
        obj = self.declared.get_object(sobject) if isinstance(sobject, str) else None
        if obj is None:
            return arguments
        out = {**arguments, "sobject": self.objects.get(obj.name, sobject)}
        if isinstance(arguments.get("fields"), dict):
            renamed = self.fields.get(obj.name, {})
            out["fields"] = {renamed.get(k, k): v for k, v in arguments["fields"].items()}
        return out

    # -- results ---------------------------------------------------------------------------------

    def rows(self, rows: Any, soql: str) -> Any:
        """Rows the org answered ``soql`` (as the org named it) with the declared names as keys."""
        try:
            tree = parse(soql)
        except OrgError:
            return rows
        obj = self.declared.get_object(tree.object_name, standard=True)
        if obj is None or not isinstance(rows, list):
            return rows
        return [self._record(r, obj) for r in rows]

    def _record(self, record: Any, obj: SObject) -> Any:
        if not isinstance(record, dict):
            return record
        back = self._back.get(obj.name, {})
        out: dict[str, Any] = {}
        for key, value in record.items():
            rel = obj.get_relationship(key) if isinstance(value, dict) else None
            if rel is not None and rel.reference_to and "records" not in value:
                target = self.declared.get_object(rel.reference_to, standard=True)
                out[key] = self._record(value, target) if target is not None else value
                continue
            child = self.declared.get_child_relationship(obj, key) if isinstance(value, dict) else None
            if child is not None and isinstance(value.get("records"), list):
                out[key] = {**value, "records": [self._record(r, child[0]) for r in value["records"]]}
                continue
            out[back.get(key.lower(), key)] = value
        return out


@functools.lru_cache(maxsize=16)  # one schema text per org: read once per process, not per episode
def _read(text: str, kind: str) -> SchemaNames | None:
    shown = _blocks(text)
    by_name = {b.name: b for b in shown}
    objects: dict[str, str] = {}
    renamed: dict[str, dict[str, str]] = {}
    for block in _blocks(org_schema(kind).text()):
        now = by_name.get(block.name)
        if now is None:  # renamed: the object whose description is this one's and whose name is no declared one
            candidates = [b for b in shown if b.description == block.description and b.name not in objects.values()]
            now = candidates[0] if candidates else None
            if now is not None:
                objects[block.name] = now.name
        names = _match(block, now)
        if names:
            renamed[block.name] = names
    return SchemaNames(kind, objects, renamed) if objects or renamed else None


class RenamedCalls:
    """A solver's tool calls with its SOQL rewritten to the org's names and the rows renamed back.

    Args:
        calls: The calls to wrap (a :class:`~crmarena_gym.tasks.SolverCalls`).
        names: What the org calls the declared objects and fields (:meth:`SchemaNames.read`).
    """

    def __init__(self, calls: Any, names: SchemaNames) -> None:
        self.calls = calls
        self.names = names

    def __call__(self, name: str, **arguments: Any) -> Any:
        query = arguments.get("query")
        if name != "issue_soql_query" or not isinstance(query, str):
            return self.calls(name, **arguments)
        sent = self.names.query(query)
        result = self.calls(name, **{**arguments, "query": sent})
        return self.names.rows(result, query)

    def contradicted(self, message: str) -> None:
        self.calls.contradicted(message)
