"""Salesforce's describe results (global, object info, object describe), built from the schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crmarena_gym.org._session import _CREATE_ONLY, REQUIRED_FIELDS, TEXT_LENGTHS
from crmarena_gym.schema import OBJECTS, Field, FieldType, SObject, get_object

_SOAP = {
    FieldType.ID: "tns:ID",
    FieldType.REFERENCE: "tns:ID",
    FieldType.DATE: "xsd:date",
    FieldType.DATETIME: "xsd:dateTime",
    FieldType.DOUBLE: "xsd:double",
    FieldType.CURRENCY: "xsd:double",
    FieldType.INTEGER: "xsd:int",
    FieldType.BOOLEAN: "xsd:boolean",
}


def _urls(version: str, name: str) -> dict[str, str]:
    base = f"/services/data/v{version}/sobjects/{name}"
    return {"sobject": base, "describe": f"{base}/describe", "rowTemplate": f"{base}/{{ID}}"}


def _summary(version: str, obj: SObject) -> dict[str, Any]:
    return {
        "name": obj.name,
        "label": obj.label,
        "labelPlural": obj.label + ("es" if obj.label.endswith("s") else "s"),
        "keyPrefix": obj.key_prefix,
        "custom": obj.name.endswith("__c"),
        "createable": True,
        "updateable": True,
        "deletable": True,
        "queryable": True,
        "retrieveable": True,
        "searchable": any(f.searchable or f.name_field for f in obj.fields),
        "layoutable": False,
        "urls": _urls(version, obj.name),
    }


def describe_global(version: str, tables: Mapping[str, str]) -> dict[str, Any]:
    """``GET sobjects``: the objects the org file holds."""
    return {
        "encoding": "UTF-8",
        "maxBatchSize": 200,
        "sobjects": [_summary(version, o) for o in OBJECTS if o.name in tables],
    }


def object_info(version: str, name: str) -> dict[str, Any]:
    """``GET sobjects/X``: the object's summary."""
    obj = get_object(name)
    assert obj is not None
    return {"objectDescribe": _summary(version, obj), "recentItems": []}


def _field(obj: SObject, f: Field) -> dict[str, Any]:
    kind = f.type
    text = kind in TEXT_LENGTHS
    computed = f.formula is not None or kind is FieldType.ID
    required = f.name in REQUIRED_FIELDS.get(obj.name, ())
    return {
        "name": f.name,
        "label": f.description,
        "type": "textarea" if kind is FieldType.LONG_TEXT else kind.value,
        "extraTypeInfo": "plaintextarea" if kind in (FieldType.LONG_TEXT, FieldType.TEXTAREA) else None,
        "soapType": _SOAP.get(kind, "xsd:string"),
        "length": TEXT_LENGTHS[kind] if text else 0,
        "byteLength": TEXT_LENGTHS[kind] * 3 if text else 0,
        "precision": 18 if kind in (FieldType.DOUBLE, FieldType.CURRENCY) else 0,
        "scale": 2 if kind in (FieldType.DOUBLE, FieldType.CURRENCY) else 0,
        "digits": 9 if kind is FieldType.INTEGER else 0,
        "nillable": not required and kind is not FieldType.ID and kind is not FieldType.BOOLEAN,
        "defaultedOnCreate": kind in (FieldType.ID, FieldType.BOOLEAN) or f.name in _CREATE_ONLY,
        "createable": not computed,
        "updateable": not computed and f.name not in _CREATE_ONLY,
        "calculated": f.formula is not None,
        "custom": f.name.endswith("__c"),
        "filterable": kind.filterable,
        "sortable": kind.filterable,
        "groupable": kind.filterable and kind not in (FieldType.DOUBLE, FieldType.CURRENCY, FieldType.DATETIME),
        "idLookup": kind is FieldType.ID,
        "nameField": f.name_field,
        "unique": False,
        "externalId": False,
        "restrictedPicklist": kind is FieldType.PICKLIST,
        "picklistValues": [
            {"active": True, "defaultValue": False, "label": v, "validFor": None, "value": v} for v in f.picklist_values
        ],
        "referenceTo": [f.reference_to] if f.reference_to else [],
        "relationshipName": f.relationship_name,
    }


def describe_object(version: str, name: str) -> dict[str, Any]:
    """``GET sobjects/X/describe``: fields with types, lengths, picklist values, references and relationships."""
    obj = get_object(name)
    assert obj is not None
    children = [
        {"childSObject": other.name, "field": f.name, "relationshipName": None, "cascadeDelete": False}
        for other in OBJECTS
        for f in other.references
        if f.reference_to == obj.name
    ]
    return {**_summary(version, obj), "fields": [_field(obj, f) for f in obj.fields], "childRelationships": children}
