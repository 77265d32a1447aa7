"""The data model of the schema: field types, fields and objects."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace


class FieldType(enum.StrEnum):
    """The kind of value a field holds, as Salesforce's describe calls it."""

    ID = "id"
    REFERENCE = "reference"
    STRING = "string"
    TEXTAREA = "textarea"
    LONG_TEXT = "long_text"
    EMAIL = "email"
    PHONE = "phone"
    URL = "url"
    COMBOBOX = "combobox"
    PICKLIST = "picklist"
    DATE = "date"
    DATETIME = "datetime"
    DOUBLE = "double"
    PERCENT = "percent"
    CURRENCY = "currency"
    INTEGER = "int"
    BOOLEAN = "boolean"

    @property
    def is_text(self) -> bool:
        """Whether values are strings compared case-insensitively by SOQL."""
        return self in _TEXT_TYPES

    @property
    def is_numeric(self) -> bool:
        """Whether values are numbers (sums and averages apply)."""
        return self in (FieldType.DOUBLE, FieldType.PERCENT, FieldType.CURRENCY, FieldType.INTEGER)

    @property
    def is_temporal(self) -> bool:
        """Whether values are dates or datetimes."""
        return self in (FieldType.DATE, FieldType.DATETIME)

    @property
    def filterable(self) -> bool:
        """Whether Salesforce lets WHERE, GROUP BY and ORDER BY use the field (long text: no)."""
        return self is not FieldType.LONG_TEXT


_DELETE_RULES = (None, "cascade", "restrict", "clear")
# Salesforce's default lengths by type (a text area is 255 characters; a long one up to 131,072).
_LENGTHS = {
    FieldType.ID: 18,
    FieldType.REFERENCE: 18,
    FieldType.STRING: 255,
    FieldType.TEXTAREA: 255,
    FieldType.LONG_TEXT: 131072,
    FieldType.EMAIL: 80,
    FieldType.PHONE: 40,
    FieldType.URL: 255,
    FieldType.COMBOBOX: 255,
    FieldType.PICKLIST: 255,
}
_UNGROUPABLE = frozenset(
    {FieldType.LONG_TEXT, FieldType.DATETIME, FieldType.DOUBLE, FieldType.PERCENT, FieldType.CURRENCY}
)
_TEXT_TYPES = frozenset(
    {
        FieldType.ID,
        FieldType.REFERENCE,
        FieldType.STRING,
        FieldType.TEXTAREA,
        FieldType.LONG_TEXT,
        FieldType.EMAIL,
        FieldType.PHONE,
        FieldType.URL,
        FieldType.COMBOBOX,
        FieldType.PICKLIST,
    }
)


@dataclass(frozen=True)
class Field:
    """One field of an object.

    Attributes:
        name: The API name, in Salesforce's canonical case (``OwnerId``).
        type: The field's :class:`FieldType`.
        description: A one-line description shown to agents.
        reference_to: For a reference, the API name of the object it points to.
        relationship_name: For a reference, the name that reaches the parent record
            (``Owner`` for ``OwnerId``, ``CaseId__r`` for ``CaseId__c``).
        picklist_values: For a picklist, the values the org uses.
        column: The SQLite column that stores the field, when its spelling differs from
            ``name`` (SQLite compares column names case-insensitively, as SOQL does).
        formula: For a field computed from others (``Name`` of a person), an SQL expression over
            the object's quoted columns; such a field has no column of its own.
        searchable: Whether SOSL ``IN ALL FIELDS`` searches the field.
        name_field: Whether SOSL ``IN NAME FIELDS`` searches the field.
        child_relationship: For a reference, the name under which the parent reaches its children
            in a parent-to-child subquery (``Cases`` for ``Case.AccountId``: ``(SELECT Id FROM Cases)
            FROM Account``); None when the parent has no such relationship (an owner).
        polymorphic: For a polymorphic reference (a case's owner, a user or a queue), the other
            objects it may point to besides ``reference_to``; ``TYPEOF`` applies to such a relationship.
        autonumber: An auto-number (``CaseNumber``): text numbered in insertion order, which
            Salesforce does not let GROUP BY use.
        extra: A standard field every real org has that the original dump lacks (``CaseNumber``,
            ``IsDeleted``): computed from the stored columns, answered by queries, ``FIELDS()`` and
            describe, but left out of the agent's schema text (the paper's schema).
        length: For text, the most characters a value may have, when it differs from the type's
            (:attr:`max_length`); Salesforce's own length of the field.
        on_delete: For a reference, what deleting the parent record does to this record, as the
            relationship is defined in Salesforce: ``"cascade"`` (deleted with it: a master-detail
            relationship, or a lookup Salesforce cascades, as Account to Contact), ``"restrict"``
            (the parent cannot be deleted while this record points at it: DELETE_FAILED) or
            ``"clear"`` (the field is emptied: a lookup's default). None: the parent is never deleted
            (a user).
        readonly: Set by the org, never by a write (a case's ``ClosedDate``, stamped when it closes).
        external_id: An External ID field: an upsert may name its record by the field's value.
        create_only: Set by a create, never changed by an update (a line's opportunity: a master-detail
            relationship does not move to another parent).
        required: Salesforce's nillable false with no default: a create must give it a value
            (REQUIRED_FIELD_MISSING), an update may not clear it.
        default: The value a create that leaves the field out gets (Salesforce's picklist and checkbox
            defaults: a new case is ``New``; a read-only field's value until the org sets it); None: none.
        unsuffixed_custom: A custom field of the original org whose API name in its dump lacks the ``__c``
            suffix (``Case.Channel``: the Object Reference gives Case no standard Channel field). It keeps the
            dump's name, the one agents query, and is custom wherever that matters (:attr:`custom`: describe,
            ``FIELDS(CUSTOM)``, schema drift, which renames a custom field and never migrates it).
    """

    name: str
    type: FieldType
    description: str
    reference_to: str | None = None
    relationship_name: str | None = None
    picklist_values: tuple[str, ...] = ()
    column: str | None = None
    formula: str | None = None
    searchable: bool = False
    name_field: bool = False
    child_relationship: str | None = None
    extra: bool = False
    autonumber: bool = False
    polymorphic: tuple[str, ...] = ()
    length: int | None = None
    on_delete: str | None = None
    readonly: bool = False
    external_id: bool = False
    create_only: bool = False
    required: bool = False
    default: str | bool | None = None
    unsuffixed_custom: bool = False

    def __post_init__(self) -> None:
        if self.unsuffixed_custom and self.name.lower().endswith("__c"):
            raise ValueError(f"field {self.name!r} ends in __c: it is custom by its name, not unsuffixed_custom")
        if (self.type is FieldType.REFERENCE) != (self.reference_to is not None):
            raise ValueError(f"field {self.name!r}: reference_to goes with type 'reference' only")
        if self.reference_to is not None and not self.relationship_name:
            raise ValueError(f"reference field {self.name!r} needs a relationship_name")
        if self.child_relationship is not None and self.reference_to is None:
            raise ValueError(f"field {self.name!r}: child_relationship goes with a reference only")
        if self.column is not None and self.formula is not None:
            raise ValueError(f"field {self.name!r} cannot have both a column and a formula")
        if self.on_delete not in _DELETE_RULES or (self.on_delete is not None and self.reference_to is None):
            raise ValueError(f"field {self.name!r}: on_delete is one of cascade, restrict, clear, for a reference")
        if (self.required and (self.formula is not None or self.readonly)) or (
            self.default is not None and self.formula is not None
        ):
            raise ValueError(
                f"field {self.name!r}: a computed field has no default; neither it nor a read-only one is required"
            )
        if self.default is not None and self.picklist_values and self.default not in self.picklist_values:
            raise ValueError(f"field {self.name!r}: default {self.default!r} is not one of its picklist values")

    @property
    def max_length(self) -> int:
        """The most characters a value may have (text), as Salesforce's describe reports it; 0 for others.

        Example:
            >>> [Field(n, FieldType.STRING, "x", length=k).max_length for n, k in (("Subject", None), ("Alias", 8))]
            [255, 8]
        """
        return self.length if self.length is not None else _LENGTHS.get(self.type, 0)

    @property
    def column_name(self) -> str:
        """The SQLite column name (``name`` unless the dump spells it otherwise)."""
        return self.column or self.name

    @property
    def groupable(self) -> bool:
        """Whether GROUP BY may use the field (not long text, datetimes, doubles, currency, auto-numbers)."""
        return not self.autonumber and self.type not in _UNGROUPABLE

    @property
    def custom(self) -> bool:
        """Whether the field is custom (``__c``, or :attr:`unsuffixed_custom`), as ``FIELDS(CUSTOM)``, describe
        and schema drift tell them apart.

        Example:
            >>> [Field(n, FieldType.STRING, "x", unsuffixed_custom=u).custom
            ...  for n, u in (("Subject", False), ("Channel", True), ("Code__c", False))]
            [False, True, True]
        """
        return self.unsuffixed_custom or self.name.lower().endswith("__c")

    @property
    def stored(self) -> bool:
        """Whether the field has a column of its own (formula fields do not)."""
        return self.formula is None


@dataclass(frozen=True)
class SObject:
    """One Salesforce object (one SQLite table).

    Attributes:
        name: The API name, also the table name (``Case``, ``CaseHistory__c``).
        key_prefix: The 3-character prefix of every record id of this object.
        label: A human label.
        description: A one-line description shown to agents.
        fields: The fields, ``Id`` first, in the dump's column order.
        table: The SQLite table that stores the object, when it differs from ``name`` (an object renamed by
            schema drift keeps its table).
    """

    name: str
    key_prefix: str
    label: str
    description: str
    fields: tuple[Field, ...] = field(default_factory=tuple)
    table: str | None = None

    @property
    def table_name(self) -> str:
        """The SQLite table name (``name`` unless the object was renamed)."""
        return self.table or self.name

    @property
    def custom(self) -> bool:
        """Whether the object is custom (``__c``: ``Issue__c``), as describe tells them apart and schema drift
        renames them (every custom object of the original and Pro dumps has the suffix)."""
        return self.name.lower().endswith("__c")

    def __post_init__(self) -> None:
        if len(self.key_prefix) != 3:
            raise ValueError(f"object {self.name!r}: key prefix {self.key_prefix!r} is not 3 characters")
        lowered = [f.name.lower() for f in self.fields]
        if len(set(lowered)) != len(lowered):
            raise ValueError(f"object {self.name!r} has two fields whose names differ only in case")
        if not self.fields or self.fields[0].name != "Id":
            raise ValueError(f"object {self.name!r}: the first field must be 'Id'")
        object.__setattr__(self, "_by_lower", {f.name.lower(): f for f in self.fields})
        object.__setattr__(
            self,
            "_by_relationship",
            {f.relationship_name.lower(): f for f in self.fields if f.relationship_name},
        )

    def get_field(self, name: str) -> Field | None:
        """The field called ``name`` (case-insensitive, as SOQL), or None."""
        return self._by_lower.get(name.lower())  # type: ignore[attr-defined]

    def get_relationship(self, name: str) -> Field | None:
        """The reference field whose relationship is called ``name`` (case-insensitive), or None."""
        return self._by_relationship.get(name.lower())  # type: ignore[attr-defined]

    @property
    def stored_fields(self) -> tuple[Field, ...]:
        """The fields that have a column in the table, in column order."""
        return tuple(f for f in self.fields if f.stored)

    @property
    def references(self) -> tuple[Field, ...]:
        """The reference fields (foreign keys)."""
        return tuple(f for f in self.fields if f.type is FieldType.REFERENCE)


def declare(
    obj: SObject,
    *,
    required: tuple[str, ...] = (),
    defaults: dict[str, str | bool] | None = None,
    readonly: tuple[str, ...] = (),
    create_only: tuple[str, ...] = (),
    on_delete: dict[str, str] | None = None,
    external_id: tuple[str, ...] = (),
) -> SObject:
    """``obj`` with Salesforce's write facts set on its fields, named by field: which a create must give
    (``required``), the values a create that leaves them out gets (``defaults``), which only the org sets
    (``readonly``), which only a create sets (``create_only``), what deleting a reference's parent does
    (``on_delete``), which name a record in an upsert (``external_id``).

    Raises:
        ValueError: A name is no field of ``obj``.

    Example:
        >>> fields = (Field("Id", FieldType.ID, "id"), Field("Name", FieldType.STRING, "n"))
        >>> declare(SObject("Thing__c", "a9Z", "Thing", "x", fields), required=("Name",)).get_field("Name").required
        True
    """
    changes: dict[str, dict[str, object]] = {}
    for names, key, value in (
        (required, "required", True),
        (readonly, "readonly", True),
        (create_only, "create_only", True),
        (external_id, "external_id", True),
    ):
        for name in names:
            changes.setdefault(name, {})[key] = value
    for key, given in (("default", defaults or {}), ("on_delete", on_delete or {})):
        for name, value in given.items():
            changes.setdefault(name, {})[key] = value
    unknown = [n for n in changes if obj.get_field(n) is None]
    if unknown:
        raise ValueError(f"object {obj.name!r} has no field {unknown[0]!r}")
    fields = tuple(replace(f, **changes[f.name]) if f.name in changes else f for f in obj.fields)  # type: ignore[arg-type]
    return replace(obj, fields=fields)


def derive(
    base: SObject,
    *,
    key_prefix: str | None = None,
    description: str | None = None,
    drop: tuple[str, ...] = (),
    replace_fields: tuple[Field, ...] = (),
    change: Mapping[str, Mapping[str, object]] | None = None,
    descriptions: Mapping[str, str] | None = None,
    after: Mapping[str, tuple[Field, ...]] | None = None,
) -> SObject:
    """``base`` as another org kind has it, with each difference named once; everything not named (types,
    lengths, relationships, delete rules, write facts, column order) is ``base``'s, so what the kinds share
    has one source.

    Args:
        base: The object to start from.
        key_prefix: The kind's key prefix, when it differs.
        description: The kind's object description, when it differs.
        drop: Fields the kind does not have.
        replace_fields: Fields that stand in the place of ``base``'s field of the same name, whole (a group
            such as the audit fields, restated).
        change: Per field, the attributes the kind sets otherwise (``{"Name": {"formula": None}}``).
        descriptions: Per field, the kind's wording of its description.
        after: Per field, the kind's own fields inserted right after it, in order.

    Raises:
        ValueError: A name is no field of ``base`` (or one dropped), or a change, a wording, the key prefix
            or the description restates what ``base`` has: a difference that is none (stale).

    Example:
        >>> base = SObject("Thing__c", "a9Z", "Thing", "x", (Field("Id", FieldType.ID, "id"),))
        >>> extra = Field("Size__c", FieldType.INTEGER, "How big")
        >>> [f.name for f in derive(base, key_prefix="a8Z", after={"Id": (extra,)}).fields]
        ['Id', 'Size__c']
    """
    changes = {name: dict(attrs) for name, attrs in (change or {}).items()}
    for name, text in (descriptions or {}).items():
        changes.setdefault(name, {})["description"] = text
    replacing = {f.name: f for f in replace_fields}
    inserts = dict(after or {})
    kept = [f for f in base.fields if f.name not in drop]
    own = {f.name for f in base.fields}  # exact names: a misspelt one must not pass unapplied
    for names in (drop, replacing, changes, inserts):
        unknown = [n for n in names if n not in own or (names is not drop and n in drop)]
        if unknown:
            raise ValueError(f"{base.name} has no field {unknown[0]!r} to derive from")
    attributes = [a for attrs in changes.values() for a in attrs if a not in Field.__dataclass_fields__]
    if attributes:
        raise ValueError(f"{base.name}: a field has no attribute {attributes[0]!r}")
    for what, new, old in (("key prefix", key_prefix, base.key_prefix), ("description", description, base.description)):
        if new == old:
            raise ValueError(f"{base.name}: the derived {what} is {base.name}'s own ({old!r})")
    fields: list[Field] = []
    for f in kept:
        f = replacing.get(f.name, f)
        attrs = changes.get(f.name, {})
        same = [k for k, v in attrs.items() if getattr(f, k) == v]
        if same:
            raise ValueError(f"{base.name}.{f.name}: the derived {same[0]} is the field's own")
        fields.append(replace(f, **attrs) if attrs else f)  # type: ignore[arg-type]
        fields.extend(inserts.get(f.name, ()))
    return replace(
        base,
        key_prefix=key_prefix or base.key_prefix,
        description=description or base.description,
        fields=tuple(fields),
    )
