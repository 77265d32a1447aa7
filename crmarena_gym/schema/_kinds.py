"""Org kinds: which objects an org has, and the lookups every layer makes over them.

An org kind selects its objects: ``service`` is the CRMArena org (the 16 objects of
``crmarena_gym.schema._objects``, unchanged), ``b2b`` and ``b2c`` are CRMArena-Pro's orgs (the 27 objects
of ``crmarena_gym.schema._pro``). Each kind also answers, as empty tables, the standard objects every real
org has that it does not store (a Pro org has no campaigns, yet ``SELECT COUNT() FROM Campaign`` is 0).

The module-level lookups of ``crmarena_gym.schema`` (``get_object``, ``object_for_id`` ...) are the
service kind's; code that serves every kind asks an :class:`OrgSchema` (a ``LocalOrg``'s ``schema``).

Example:
    >>> b2b = org_schema("b2b")
    >>> b2b.get_object("Opportunity").get_relationship("ContractID__r").reference_to
    'Contract'
    >>> b2b.object_for_id(b2b.make_id("0Q0", 7)).name, b2b.make_id("0Q0", 7)[3:5]
    ('Quote', 'Wt')
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

from crmarena_gym.schema._ids import ORG_INSTANCE, make_id
from crmarena_gym.schema._objects import OBJECTS, STANDARD_OBJECTS, _children_of
from crmarena_gym.schema._pro import pro_objects
from crmarena_gym.schema._types import Field, FieldType, SObject

#: The org kinds, the default first.
ORG_KINDS = ("service", "b2b", "b2c")
DEFAULT_KIND = "service"

# The 4th and 5th characters of record ids, by kind. Pro's B2B dump has "Wt"; its B2C dump has "Ws", which the
# service org (the original CRMArena org) already uses: "Wu" keeps a B2C id from ever naming a service record.
_INSTANCES = {"service": ORG_INSTANCE, "b2b": "Wt", "b2c": "Wu"}
_DESCRIPTIONS = {
    "service": "CRMArena's customer-service org: a sportswear store's agents, customers, orders and cases",
    "b2b": "CRMArena-Pro's B2B org: a chip-design software vendor's sales, quoting and service",
    "b2c": "CRMArena-Pro's B2C org: a vehicle dealership's sales, quoting and service to households",
}


class OrgSchema:
    """The objects of one org kind and the lookups over them (case-insensitive, as SOQL).

    Args:
        kind: The kind's name (one of :data:`ORG_KINDS`).
        objects: The objects the org stores, each parent before its children.
        standard_objects: Standard objects every org has that this kind leaves empty (queried as empty
            tables, described, never stored or shown in the agent's schema text).
        instance: The 4th and 5th characters of the kind's record ids.
        description: One line on what the org is.

    Raises:
        ValueError: Two objects share a name or key prefix, a reference names an object the kind lacks,
            or two child relationships of one parent share a name.
    """

    def __init__(
        self,
        kind: str,
        objects: tuple[SObject, ...],
        standard_objects: tuple[SObject, ...],
        instance: str,
        description: str,
    ) -> None:
        self.kind = kind
        self.objects = objects
        self.standard_objects = standard_objects
        self.instance = instance
        self.description = description
        every = objects + standard_objects
        by_lower = {o.name.lower(): o for o in every}
        if len(by_lower) != len(every):
            raise ValueError(f"org kind {kind!r}: two objects share a name")
        prefixes = {o.key_prefix for o in every}
        if len(prefixes) != len(every):
            raise ValueError(f"org kind {kind!r}: two objects share a key prefix")
        for obj in every:
            for f in obj.references:
                for target in (f.reference_to or "", *f.polymorphic):
                    if target.lower() not in by_lower:
                        raise ValueError(f"org kind {kind!r}: {obj.name}.{f.name} points to {target!r}, not an object")
        self._stored: Mapping[str, SObject] = MappingProxyType({o.name.lower(): o for o in objects})
        self._every: Mapping[str, SObject] = MappingProxyType(by_lower)
        self._by_prefix: Mapping[str, SObject] = MappingProxyType({o.key_prefix: o for o in objects})
        self._children = _children_of(every)

    def __repr__(self) -> str:
        return f"OrgSchema({self.kind!r}: {len(self.objects)} objects)"

    def __reduce__(self) -> tuple[object, ...]:
        return (org_schema, (self.kind,))

    def get_object(self, name: str, *, standard: bool = False) -> SObject | None:
        """The object whose API name is ``name`` (case-insensitive), or None.

        Args:
            name: An object's API name.
            standard: Also look among :attr:`standard_objects` (the empty ones every org has).
        """
        key = name.lower()
        return (self._every if standard else self._stored).get(key)

    def object_for_id(self, record_id: str) -> SObject | None:
        """The stored object whose key prefix starts ``record_id``, or None."""
        return self._by_prefix.get(record_id[:3])

    def child_relationships(self, obj: SObject) -> tuple[tuple[str, SObject, Field], ...]:
        """The parent-to-child relationships of ``obj``: (name, child object, the child's reference field)."""
        named = self._children.get(obj.name.lower(), {})
        return tuple((f.child_relationship or "", child, f) for child, f in named.values())

    def get_child_relationship(self, obj: SObject, name: str) -> tuple[SObject, Field] | None:
        """The child object and its reference field behind ``obj``'s child relationship ``name``."""
        return self._children.get(obj.name.lower(), {}).get(name.lower())

    def make_id(self, prefix: str, number: int) -> str:
        """The 18-character id of record ``number`` of the object with key ``prefix`` in this kind's org."""
        return make_id(prefix, number, self.instance)

    def text(self, *, include_types: bool = True) -> str:
        """The agent's schema text of this kind (see :func:`crmarena_gym.schema.schema_text`)."""
        lines: list[str] = []
        for obj in self.objects:
            lines.append(f"{obj.name}: {obj.description}")
            for f in obj.fields:
                if f.extra:
                    continue
                kind = ""
                if include_types:
                    if f.type is FieldType.REFERENCE:
                        kind = f" [reference to {f.reference_to}; parent fields via {f.relationship_name}.<field>]"
                    elif f.type is FieldType.PICKLIST and len(f.picklist_values) > 1:
                        kind = f" [picklist: {', '.join(f.picklist_values)}]"
                    elif f.type is FieldType.LONG_TEXT:
                        kind = " [long text: cannot be filtered, grouped or sorted]"
                    else:
                        kind = f" [{f.type.value}]"
                lines.append(f"  - {f.name}{kind}: {f.description}")
            # Only children among the stored objects: the empty standard ones stay out, as their objects do.
            children = [c for c in self.child_relationships(obj) if c[1] in self.objects]
            if children:
                listed = ", ".join(f"{name} ({child.name}.{f.name})" for name, child, f in children)
                lines.append(f"  child relationships, for (SELECT ... FROM <name>) subqueries: {listed}")
            lines.append("")
        return "\n".join(lines).rstrip() + "\n"


def _pro_standard(objects: tuple[SObject, ...]) -> tuple[SObject, ...]:
    stored = {o.name for o in objects}
    return tuple(o for o in STANDARD_OBJECTS if o.name not in stored)


def org_schema(kind: str = DEFAULT_KIND) -> OrgSchema:
    """The schema of org kind ``kind`` (one of :data:`ORG_KINDS`); the same object on every call.

    Raises:
        ValueError: ``kind`` is not an org kind (the message lists them).

    Example:
        >>> [len(org_schema(k).objects) for k in ORG_KINDS]
        [16, 27, 27]
    """
    return _build(check_kind(kind))


@functools.cache
def _build(kind: str) -> OrgSchema:
    if kind == "service":
        return OrgSchema(kind, OBJECTS, STANDARD_OBJECTS, _INSTANCES[kind], _DESCRIPTIONS[kind])
    objects = pro_objects(kind)
    return OrgSchema(kind, objects, _pro_standard(objects), _INSTANCES[kind], _DESCRIPTIONS[kind])


def check_kind(kind: object) -> str:
    """``kind`` if it names an org kind, else ValueError listing the kinds.

    Example:
        >>> check_kind("b2c")
        'b2c'
    """
    if not isinstance(kind, str) or kind not in ORG_KINDS:
        raise ValueError(f"org kind must be one of {', '.join(repr(k) for k in ORG_KINDS)}; got {kind!r}")
    return kind
