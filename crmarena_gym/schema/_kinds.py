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
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from types import MappingProxyType
from typing import Any

from crmarena_gym.schema._ids import ORG_INSTANCE, make_id
from crmarena_gym.schema._objects import OBJECTS, STANDARD_OBJECTS, _children_of
from crmarena_gym.schema._pro import pro_objects
from crmarena_gym.schema._types import Field, FieldType, SObject


@dataclass(frozen=True)
class SchemaDrift:
    """How an org's schema drifted from its kind's (``OrgSchema.drifted``), as an admin changes a real org.

    Salesforce lets an admin rename a custom field (``Field.custom``: ``__c``, or one the original org's dump
    names without the suffix, ``Case.Channel``) or a custom object, never a standard field's API name; a
    standard field an admin replaces is *migrated*: a new custom field takes its values, and the standard field
    stays (it cannot be deleted), no longer maintained and emptied.

    Attributes:
        renamed: Per object (by its declared name), old custom field name -> new custom field name.
        added: Per object (by its declared name), the custom fields added (each stored in a column of its own).
        objects: Old custom object name -> new object name (the object keeps its table and key prefix;
            references to it follow).
        migrated: Per object (by its declared name), standard field name -> the custom field that replaced it.
            The new field reads the standard field's column (its values, as the migration copied them); the
            standard field keeps its name, type and place, reads a column of its own that holds no value
            (:func:`deprecated_column`), and its description says it is deprecated and names its replacement
            (:func:`deprecated_description`).
    """

    renamed: Mapping[str, Mapping[str, str]] = dc_field(default_factory=dict)
    added: Mapping[str, tuple[Field, ...]] = dc_field(default_factory=dict)
    objects: Mapping[str, str] = dc_field(default_factory=dict)
    migrated: Mapping[str, Mapping[str, str]] = dc_field(default_factory=dict)


def deprecated_column(f: Field) -> str:
    """The column a migrated standard field reads after schema drift: a new one, empty (its values moved on with
    the column the replacing custom field now names). No field is ever called so (a field name ends ``__c`` or
    has no double underscore).

    Example:
        >>> deprecated_column(Field("ShippingState", FieldType.STRING, "State"))
        'ShippingState__deprecated'
    """
    return f"{f.column_name}__deprecated"


_DEPRECATED = re.compile(r"^DEPRECATED, replaced by ([A-Za-z][A-Za-z0-9_]*__c)\b")


def deprecated_description(description: str, replacement: str) -> str:
    """The description (help text) an admin gives a standard field the custom field ``replacement`` replaced.

    Example:
        >>> deprecated_description("Shipping state", "Shipping_State__c")
        'DEPRECATED, replaced by Shipping_State__c: no longer maintained, values cleared (was: Shipping state)'
    """
    return f"DEPRECATED, replaced by {replacement}: no longer maintained, values cleared (was: {description})"


def replacement_of(description: str) -> str | None:
    """The custom field a deprecated standard field's description names as its replacement, or None.

    Example:
        >>> replacement_of(deprecated_description("State", "Shipping_State__c")), replacement_of("State")
        ('Shipping_State__c', None)
    """
    found = _DEPRECATED.match(description)
    return found.group(1) if found else None


def _retarget(f: Field, objects: Mapping[str, str]) -> Field:
    """``f`` with its reference targets renamed as ``objects`` renames objects."""
    if f.reference_to is None or not objects:
        return f
    return replace(
        f,
        reference_to=objects.get(f.reference_to, f.reference_to),
        polymorphic=tuple(objects.get(t, t) for t in f.polymorphic),
    )


def _rebuild_drifted(kind: str, drift: SchemaDrift) -> OrgSchema:
    return org_schema(kind).drifted(drift)


#: The org kinds, the default first.
ORG_KINDS = ("service", "b2b", "b2c")
DEFAULT_KIND = "service"
#: The standard fields the org's own automation sets on a write (``OrgSession``: a case's close date, a stage's
#: probability, an opportunity's amount summing its lines, a line's prices and product from its price book entry,
#: an event's end, duration and day from its start, an activity's or a quote's account). Salesforce keeps writing
#: them whatever an admin does, so schema drift never retires one for a custom field.
ORG_MAINTAINED: Mapping[str, frozenset[str]] = {
    "Case": frozenset({"ClosedDate"}),
    "Opportunity": frozenset({"Probability", "Amount"}),
    "OpportunityLineItem": frozenset({"Product2Id", "ListPrice", "UnitPrice", "TotalPrice"}),
    "QuoteLineItem": frozenset({"Product2Id", "ListPrice", "TotalPrice"}),
    "Event": frozenset({"StartDateTime", "EndDateTime", "DurationInMinutes", "ActivityDate", "AccountId"}),
    "Task": frozenset({"AccountId"}),
    "Quote": frozenset({"AccountId"}),
}

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
        #: The drift this schema underwent (None: its kind's schema as declared).
        self.drift: SchemaDrift | None = None
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
        drift = getattr(self, "drift", None)
        if drift is not None:
            return (_rebuild_drifted, (self.kind, drift))
        return (org_schema, (self.kind,))

    def drifted(self, drift: SchemaDrift) -> OrgSchema:
        """This schema after schema drift: custom fields renamed (their storage kept: a renamed field reads its
        old column, so the org's rows and any SQL over them stay as they were), standard fields migrated to
        custom ones (the new field reads the old column; the standard one stays, deprecated, over an empty
        column of its own) and custom fields added (stored in columns of their own). A renamed field's old name
        is gone from every lookup, so queries, describe and the schema text know only the new one, as a real
        org after the change; a migrated field's old name stays, as on a real org.

        Args:
            drift: The renames, migrations and additions (see :class:`SchemaDrift`).

        Raises:
            ValueError: A change names an object or field the schema lacks, renames a standard field (which
                Salesforce never allows), a reference or the Id, or to a name without ``__c``, migrates a custom
                field, a field the org's automation writes (:data:`ORG_MAINTAINED`) or to a standard name, or makes
                two fields of an object share a name.

        Example:
            >>> drift = SchemaDrift(migrated={"Account": {"ShippingState": "Shipping_State__c"}})
            >>> acct = org_schema().drifted(drift).get_object("Account")
            >>> acct.get_field("Shipping_State__c").column_name, acct.get_field("ShippingState").column_name
            ('ShippingState', 'ShippingState__deprecated')
        """
        objects = []
        known = {o.name for o in self.objects}
        for name in (*drift.renamed, *drift.added, *drift.objects, *drift.migrated):
            if name not in known:
                raise ValueError(f"schema drift names object {name!r}, which the {self.kind} org does not store")
        for name, new_name in drift.objects.items():
            if not self._stored[name.lower()].custom:
                raise ValueError(f"schema drift cannot rename the standard object {name!r} (Salesforce does not)")
            if not new_name.lower().endswith("__c"):
                raise ValueError(f"schema drift renames the custom object {name!r} to {new_name!r}, not ending in __c")
        for obj in self.objects:
            renames = drift.renamed.get(obj.name, {})
            migrations = drift.migrated.get(obj.name, {})
            fields = []
            for f in obj.fields:
                new = renames.get(f.name)
                replacement = migrations.get(f.name)
                if new is None and replacement is None:
                    fields.append(f)
                    continue
                if f.name == "Id" or f.type is FieldType.REFERENCE or not f.stored:
                    raise ValueError(f"schema drift cannot change {obj.name}.{f.name} (an Id, reference or formula)")
                if new is not None:
                    if not f.custom:
                        raise ValueError(
                            f"schema drift cannot rename the standard field {obj.name}.{f.name}: Salesforce lets an "
                            "admin rename custom fields only (a standard field is migrated to a custom one instead)"
                        )
                    if not new.lower().endswith("__c"):
                        raise ValueError(
                            f"schema drift renames the custom field {obj.name}.{f.name} to {new!r}: a custom field's "
                            "API name ends in __c"
                        )
                    fields.append(replace(f, name=new, column=f.column_name, unsuffixed_custom=False))
                    continue
                assert replacement is not None
                if f.name in ORG_MAINTAINED.get(obj.name, ()):
                    raise ValueError(
                        f"schema drift cannot migrate {obj.name}.{f.name}: the org's own automation writes it "
                        "(Salesforce keeps it current whatever an admin does)"
                    )
                if f.custom or not replacement.endswith("__c"):
                    raise ValueError(
                        f"schema drift migrates {obj.name}.{f.name} to {replacement!r}: a migration moves a standard "
                        "field's values to a custom field (__c)"
                    )
                note = deprecated_description(f.description, replacement)
                fields.append(replace(f, column=deprecated_column(f), description=note))
                fields.append(
                    replace(
                        f,
                        name=replacement,
                        column=f.column_name,
                        name_field=False,  # SOSL's NAME FIELDS are standard ones
                        required=False,
                        default=None,
                        readonly=False,
                        create_only=False,
                        external_id=False,
                    )
                )
            for what, names in (("renames", renames), ("migrates", migrations)):
                missing = set(names) - {f.name for f in obj.fields}
                if missing:
                    raise ValueError(f"schema drift {what} {obj.name}.{sorted(missing)[0]}, which is no field of it")
            both = set(renames) & set(migrations)
            if both:
                raise ValueError(f"schema drift both renames and migrates {obj.name}.{sorted(both)[0]}")
            fields.extend(drift.added.get(obj.name, ()))
            fields = [_retarget(f, drift.objects) for f in fields]
            new_name = drift.objects.get(obj.name)
            renamed_obj = {"name": new_name, "table": obj.table_name} if new_name else {}
            objects.append(replace(obj, fields=tuple(fields), **renamed_obj))  # SObject checks the names stay distinct
        out = OrgSchema(self.kind, tuple(objects), self.standard_objects, self.instance, self.description)
        out.drift = drift
        return out

    def current_names(self, obj: str, values: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """A declared object's name and its fields' values keyed by the names this schema gives them (after a
        drift, the new ones: a renamed field's new name, a migrated field's replacement; else as given): for
        the environment's own writes (an episode's set-up records), which keep the maintained fields current.

        Example:
            >>> drifted = org_schema().drifted(SchemaDrift(migrated={"Case": {"Description": "Case_Details__c"}}))
            >>> drifted.current_names("Case", {"Description": "Late", "Status": "New"})
            ('Case', {'Case_Details__c': 'Late', 'Status': 'New'})
        """
        drift = getattr(self, "drift", None)
        if drift is None:
            return obj, dict(values)
        renames = {**drift.renamed.get(obj, {}), **drift.migrated.get(obj, {})}
        return drift.objects.get(obj, obj), {renames.get(k, k): v for k, v in values.items()}

    def declared_names(self, obj: str) -> tuple[str, dict[str, str]]:
        """The inverse of :meth:`current_names`: the declared name of the object this schema calls ``obj``, and
        for each field that now carries a declared field's values (a renamed field, a migrated field's
        replacement), the declared name by the current one (empty without a drift). A migrated standard field
        keeps its name but no longer carries the values: it is not among them.

        Example:
            >>> drift = SchemaDrift(renamed={"Product2": {"External_ID__c": "Legacy_ID__c"}},
            ...                     migrated={"Product2": {"Description": "Product_Details__c"}})
            >>> org_schema().drifted(drift).declared_names("Product2")
            ('Product2', {'Legacy_ID__c': 'External_ID__c', 'Product_Details__c': 'Description'})
        """
        drift = getattr(self, "drift", None)
        if drift is None:
            return obj, {}
        declared = next((old for old, new in drift.objects.items() if new == obj), obj)
        moved = {**drift.renamed.get(declared, {}), **drift.migrated.get(declared, {})}
        return declared, {new: old for old, new in moved.items()}

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
