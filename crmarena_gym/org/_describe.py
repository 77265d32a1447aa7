"""Describe results of the embedded org, in the shape of Salesforce's REST ``sobjects/<name>/describe``.

A describe lists every field a query may select on the object, the standard fields the original dump
lacks included (``CaseNumber``, ``IsDeleted`` ...: ``Field.extra``), and the child relationships that
parent-to-child subqueries select from. It carries the keys agents and tools read (``name``, ``label``,
``keyPrefix``, ``fields`` with ``name``, ``label``, ``inlineHelpText`` (the help text: a deprecated field's, else
null), ``type``, ``referenceTo``, ``relationshipName``, ``picklistValues``, ``filterable``, ``groupable``,
``sortable``, ``nillable``, ``custom``, ``autoNumber``; ``childRelationships``), not the layout and permission
details a live org adds.
"""

from __future__ import annotations

from typing import Any

from crmarena_gym.org._base import OrgError
from crmarena_gym.org.soql import URL_PREFIX, Catalog
from crmarena_gym.schema import Field, FieldType, SObject, replacement_of

# Salesforce's describe type names (a long text area is a textarea there, told apart by its length).
_TYPE = {FieldType.LONG_TEXT: "textarea"}


def _label(name: str) -> str:
    base = name.removesuffix("__c").removesuffix("Id") if name != "Id" else "Record ID"
    out = ""
    for i, ch in enumerate(base):
        if ch.isupper() and i and not base[i - 1].isupper() and base[i - 1] not in "_ ":
            out += " "
        out += " " if ch == "_" else ch
    return out.strip() or name


def _field(obj: SObject, f: Field) -> dict[str, Any]:
    filterable = f.type.filterable
    # A standard field schema drift retired: relabeled and given help text naming its replacement, as an admin
    # marks a field no one maintains any more (Salesforce keeps its API name, never renamed).
    deprecated = replacement_of(f.description) is not None
    return {
        "name": f.name,
        "label": _label(f.name) + (" (Deprecated)" if deprecated else ""),
        "inlineHelpText": f.description if deprecated else None,
        "type": _TYPE.get(f.type, f.type.value),
        "length": f.max_length,
        "custom": f.custom,
        "autoNumber": f.autonumber,
        "calculated": False,
        "nillable": f.name != "Id" and f.type is not FieldType.BOOLEAN and not f.autonumber,
        "filterable": filterable,
        "groupable": f.groupable,
        "sortable": filterable,
        "idLookup": f.name == "Id" or f.autonumber,
        "nameField": f.name == "Name" or (f.name_field and obj.get_field("Name") is None),
        "referenceTo": sorted([f.reference_to, *f.polymorphic]) if f.reference_to else [],
        "polymorphicForeignKey": bool(f.polymorphic),
        "relationshipName": f.relationship_name,
        "picklistValues": [{"active": True, "defaultValue": False, "label": v, "value": v} for v in f.picklist_values],
    }


def describe_object(name: str, catalog: Catalog) -> dict[str, Any]:
    """The describe result of object ``name`` (case-insensitive) in a database with ``catalog``.

    Raises:
        OrgError: NOT_FOUND when the org has no such object, as Salesforce's REST API answers.

    Example:
        >>> d = describe_object("case", Catalog.full())
        >>> d["name"], d["keyPrefix"], [f["name"] for f in d["fields"]][-2:]
        ('Case', '500', ['SystemModstamp', 'IsDeleted'])
        >>> [c["relationshipName"] for c in d["childRelationships"]]
        ['CaseHistories__r', 'EmailMessages', 'LiveChatTranscripts', 'Tasks', 'Events', 'CaseComments']
    """
    schema = catalog.schema
    obj = schema.get_object(name, standard=True) if isinstance(name, str) else None
    if obj is None or not catalog.has(obj):
        raise OrgError("NOT_FOUND", f"The requested resource does not exist: sObject type {name!r} is not supported")
    children = [
        {
            "childSObject": child.name,
            "field": f.name,
            "relationshipName": rel,
            "cascadeDelete": f.on_delete == "cascade",
            "restrictedDelete": f.on_delete == "restrict",
        }
        for rel, child, f in schema.child_relationships(obj)
        if catalog.has(child) and catalog.available(child, f)
    ]
    return {
        "name": obj.name,
        "label": obj.label,
        "keyPrefix": obj.key_prefix,
        "custom": obj.custom,
        "queryable": True,
        "searchable": any(f.searchable or f.name_field for f in obj.fields),
        "createable": False,
        "updateable": False,
        "deletable": False,
        "fields": [_field(obj, f) for f in obj.fields if catalog.available(obj, f)],
        "childRelationships": children,
        "urls": {"sobject": URL_PREFIX + obj.name, "describe": f"{URL_PREFIX}{obj.name}/describe"},
    }
