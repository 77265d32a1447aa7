"""derive: an object as another org kind has it, each difference named once, the rest kept from the base."""

from __future__ import annotations

import pytest

from crmarena_gym.schema import Field, FieldType, SObject
from crmarena_gym.schema._types import declare, derive

T = FieldType


def _base() -> SObject:
    obj = SObject(
        "Thing__c",
        "a9Z",
        "Thing",
        "A thing",
        (
            Field("Id", T.ID, "id"),
            Field("Name", T.STRING, "Name of the thing", length=80),
            Field("Colour__c", T.STRING, "Its colour"),
            Field("Parent__c", T.REFERENCE, "Its parent", reference_to="Thing__c", relationship_name="Parent__r"),
            Field("CreatedDate", T.DATETIME, "When", formula="'2020-01-01'", extra=True),
        ),
    )
    return declare(obj, required=("Name",), on_delete={"Parent__c": "cascade"})


def test_what_is_not_named_is_the_bases() -> None:
    base = _base()
    assert derive(base, description="Another thing").fields == base.fields
    got = derive(base, key_prefix="a8Z")
    assert (got.name, got.key_prefix, got.description, got.fields) == ("Thing__c", "a8Z", "A thing", base.fields)


def test_each_kind_of_difference_lands_where_it_is_named() -> None:
    size = Field("Size__c", T.INTEGER, "How big")
    weight = Field("Weight__c", T.DOUBLE, "How heavy")
    stored = Field("CreatedDate", T.DATETIME, "When it was made")
    got = derive(
        _base(),
        drop=("Colour__c",),
        replace_fields=(stored,),
        change={"Parent__c": {"on_delete": "clear"}},
        descriptions={"Name": "The thing's name"},
        after={"Name": (size, weight)},
    )
    assert [f.name for f in got.fields] == ["Id", "Name", "Size__c", "Weight__c", "Parent__c", "CreatedDate"]
    name = got.get_field("Name")
    # A rewording keeps everything else of the field: its length and its write facts.
    assert name is not None and (name.description, name.length, name.required) == ("The thing's name", 80, True)
    parent = got.get_field("Parent__c")
    assert parent is not None and (parent.on_delete, parent.reference_to) == ("clear", "Thing__c")
    assert got.get_field("CreatedDate") is stored


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"drop": ("Size__c",)}, "no field 'Size__c'"),
        ({"descriptions": {"name": "x"}}, "no field 'name'"),  # exact names: a misspelt one is not applied
        ({"after": {"Colour__c": ()}, "drop": ("Colour__c",)}, "no field 'Colour__c'"),
        ({"replace_fields": (Field("Size__c", T.INTEGER, "x"),)}, "no field 'Size__c'"),
        ({"change": {"Name": {"colour": "red"}}}, "no attribute 'colour'"),
        ({"descriptions": {"Name": "Name of the thing"}}, "description is the field's own"),
        ({"change": {"Parent__c": {"on_delete": "cascade"}}}, "on_delete is the field's own"),
        ({"key_prefix": "a9Z"}, "key prefix is Thing__c's own"),
        ({"description": "A thing"}, "description is Thing__c's own"),
    ],
)
def test_a_difference_that_names_nothing_or_restates_the_base_is_refused(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        derive(_base(), **kwargs)  # type: ignore[arg-type]


def test_an_inserted_field_may_not_repeat_a_name() -> None:
    with pytest.raises(ValueError, match="differ only in case"):
        derive(_base(), after={"Id": (Field("colour__c", T.STRING, "again"),)})
