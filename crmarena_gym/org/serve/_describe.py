"""Salesforce's describe results (global, object info, object describe), built from the schema."""

from __future__ import annotations

from typing import Any

from crmarena_gym.org._local import LocalOrg
from crmarena_gym.org._session import UNDELETABLE, write_access
from crmarena_gym.org.soql import Catalog
from crmarena_gym.schema import FieldType, OrgSchema, SObject, org_schema

_SOAP = {
    FieldType.ID: "tns:ID",
    FieldType.REFERENCE: "tns:ID",
    FieldType.DATE: "xsd:date",
    FieldType.DATETIME: "xsd:dateTime",
    FieldType.DOUBLE: "xsd:double",
    FieldType.PERCENT: "xsd:double",
    FieldType.CURRENCY: "xsd:double",
    FieldType.INTEGER: "xsd:int",
    FieldType.BOOLEAN: "xsd:boolean",
}


def _urls(version: str, name: str) -> dict[str, str]:
    base = f"/services/data/v{version}/sobjects/{name}"
    return {"sobject": base, "describe": f"{base}/describe", "rowTemplate": f"{base}/{{ID}}"}


def _plural(label: str) -> str:
    """English plural of an object's label.

    Example:
        >>> _plural("Case"), _plural("Case History"), _plural("Address"), _plural("Knowledge")
        ('Cases', 'Case Histories', 'Addresses', 'Knowledge')
    """
    if label.endswith("Knowledge"):
        return label
    if label.endswith("y") and label[-2:-1] not in "aeiou":
        return label[:-1] + "ies"
    return label + ("es" if label.endswith(("s", "x", "ch", "sh")) else "s")


def _writable(obj: SObject, schema: OrgSchema) -> bool:
    # The objects the org kind stores are written by sessions; the standard ones every org has are read-only
    # (and empty) here.
    return schema.get_object(obj.name) is not None


def _summary(version: str, obj: SObject, schema: OrgSchema | None = None) -> dict[str, Any]:
    writable = _writable(obj, schema or org_schema())
    return {
        "name": obj.name,
        "label": obj.label,
        "labelPlural": _plural(obj.label),
        "keyPrefix": obj.key_prefix,
        "custom": obj.custom,
        "createable": writable,
        "updateable": writable,
        "deletable": writable and obj.name not in UNDELETABLE,
        "queryable": True,
        "retrieveable": True,
        "searchable": any(f.searchable or f.name_field for f in obj.fields),
        "layoutable": False,
        "urls": _urls(version, obj.name),
    }


def describe_global(version: str, catalog: Catalog) -> dict[str, Any]:
    """``GET sobjects``: the objects the org file holds."""
    schema = catalog.schema
    return {
        "encoding": "UTF-8",
        "maxBatchSize": 200,
        "sobjects": [
            _summary(version, o, schema) for o in (*schema.objects, *schema.standard_objects) if catalog.has(o)
        ],
    }


def object_info(version: str, name: str, schema: OrgSchema | None = None) -> dict[str, Any]:
    """``GET sobjects/X``: the object's summary (in the org kind of ``schema``, the service org's by default)."""
    schema = schema or org_schema()
    obj = schema.get_object(name, standard=True)
    assert obj is not None
    return {"objectDescribe": _summary(version, obj, schema), "recentItems": []}


def _write_rules(obj: SObject, described: dict[str, Any], schema: OrgSchema) -> dict[str, Any]:
    """What a writable session adds to a field of the org's describe: whether it can be written, and how."""
    f = obj.get_field(described["name"])
    kind = f.type if f is not None else None
    createable, updateable = (
        write_access(obj, f) if f is not None and _writable(obj, schema) and f.formula is None else (False, False)
    )
    required = f is not None and f.required
    system = f is not None and (f.extra or f.readonly or f.autonumber)
    return {
        **described,
        "soapType": _SOAP.get(kind, "xsd:string") if kind is not None else "xsd:string",
        "nillable": described["nillable"] and not required,
        "defaultedOnCreate": kind is FieldType.ID
        or system
        or (f is not None and (f.default is not None or (f.name == "OwnerId" and f.reference_to == "User")))
        or (kind is FieldType.BOOLEAN and createable),
        "createable": createable,
        "updateable": updateable,
        "restrictedPicklist": kind is FieldType.PICKLIST,
        "unique": f is not None and f.external_id,
        "externalId": f is not None and f.external_id,
        "idLookup": described.get("idLookup", False) or (f is not None and f.external_id),
    }


def describe_object(version: str, org: LocalOrg, name: str) -> dict[str, Any]:
    """``GET sobjects/X/describe``: the org's own describe (:meth:`LocalOrg.describe`) with the write rules.

    Example:
        >>> from crmarena_gym.org import OrgSession
        >>> d = describe_object("60.0", OrgSession(getfixture("tiny_org")), "Case")
        >>> d["urls"]["describe"], d["createable"]
        ('/services/data/v60.0/sobjects/Case/describe', True)
        >>> {f["name"]: f["createable"] for f in d["fields"]}["Id"]
        False
    """
    described = org.describe(name)
    schema = org.schema
    obj = schema.get_object(described["name"], standard=True)
    assert obj is not None  # describe answered, so the object exists
    summary = _summary(version, obj, schema)
    return {
        **described,
        **{k: summary[k] for k in ("labelPlural", "createable", "updateable", "deletable", "retrieveable", "urls")},
        "fields": [_write_rules(obj, f, schema) for f in described["fields"]],
    }
