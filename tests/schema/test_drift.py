"""Schema drift as Salesforce allows it: custom fields and objects renamed, standard fields migrated, never renamed."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from crmarena_gym.schema import SchemaDrift, org_schema, replacement_of


def test_a_migrated_standard_field_stays_deprecated_beside_its_replacement() -> None:
    drift = SchemaDrift(migrated={"Account": {"ShippingState": "Shipping_State__c"}})
    declared = org_schema().get_object("Account")
    account = org_schema().drifted(drift).get_object("Account")
    names = [f.name for f in account.fields]
    # The standard field keeps its name and place; its replacement comes right after it.
    assert names == [*(f.name for f in declared.fields[: names.index("ShippingState") + 1]), "Shipping_State__c"] + [
        f.name for f in declared.fields[names.index("ShippingState") + 1 :]
    ]
    old, new = account.get_field("ShippingState"), account.get_field("Shipping_State__c")
    before = declared.get_field("ShippingState")
    assert (old.type, new.type) == (before.type, before.type) and new.custom and not old.custom
    # The replacement reads the column that holds the values; the standard field one of its own, empty.
    assert new.column_name == before.column_name and old.column_name not in {f.column_name for f in declared.fields}
    assert new.description == before.description and replacement_of(old.description) == "Shipping_State__c"
    assert replacement_of(before.description) is None
    text = org_schema().drifted(drift).text()
    assert re.search(r"^  - ShippingState \[string\]: DEPRECATED, replaced by Shipping_State__c: .*$", text, re.M)
    # The environment's own writes under the declared name go to the maintained field.
    assert org_schema().drifted(drift).current_names("Account", {"ShippingState": "CA"}) == (
        "Account",
        {"Shipping_State__c": "CA"},
    )


@pytest.mark.parametrize(
    ("drift", "message"),
    [
        (SchemaDrift(renamed={"Account": {"ShippingState": "Region__c"}}), "cannot rename the standard field"),
        (SchemaDrift(renamed={"Case": {"Subject": "Case_Subject__c"}}), "cannot rename the standard field"),
        (SchemaDrift(migrated={"Product2": {"External_ID__c": "Ext__c"}}), "a migration moves a standard"),
        (SchemaDrift(migrated={"Account": {"ShippingState": "Region"}}), "a migration moves a standard"),
        (SchemaDrift(migrated={"Case": {"OwnerId": "Owner__c"}}), "an Id, reference or formula"),
        (SchemaDrift(migrated={"Account": {"Nope": "Nope__c"}}), "migrates Account.Nope, which is no field"),
        (SchemaDrift(objects={"Case": "Ticket__c"}), "cannot rename the standard object 'Case'"),
        (SchemaDrift(objects={"Issue__c": "Problem"}), "to 'Problem', not ending in __c"),
        (SchemaDrift(migrated={"Case": {"ClosedDate": "Closed_On__c"}}), "the org's own automation writes it"),
        (SchemaDrift(migrated={"Account": {"Phone": "PersonEmail"}}), "a migration moves a standard"),
        (SchemaDrift(migrated={"Account": {"Phone": "State__c", "ShippingState": "State__c"}}), "two fields"),
    ],
)
def test_a_drift_no_admin_could_make_is_refused(drift: SchemaDrift, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        org_schema().drifted(drift)


def test_custom_fields_and_objects_are_renamed() -> None:
    drift = SchemaDrift(renamed={"Product2": {"External_ID__c": "Catalog_Key__c"}}, objects={"Issue__c": "Problem__c"})
    schema = org_schema().drifted(drift)
    product = schema.get_object("Product2")
    assert product.get_field("External_ID__c") is None and product.get_field("Catalog_Key__c").column_name == (
        "External_ID__c"
    )
    assert schema.get_object("Issue__c") is None and schema.get_object("Problem__c").table_name == "Issue__c"


# The original org's custom fields whose API names its dump writes without __c, found against Salesforce's Object
# Reference: Case has no standard Channel field (its own is Origin); ProductCategoryProduct's standard fields are
# CatalogId, IsPrimaryCategory, Name, ProductCategoryId, ProductId and ProductToCategory (ProductCategory and
# Product are only the names of its two references' relationships). Every other field without __c, on the service
# org and the Pro orgs, is one the Object Reference lists on its object.
_UNSUFFIXED_CUSTOM = {
    ("Case", "Channel"),
    ("ProductCategoryProduct", "ProductCategory"),
    ("ProductCategoryProduct", "Product"),
}


@pytest.mark.parametrize("kind", ["service", "b2b", "b2c"])
def test_the_dumps_unsuffixed_custom_fields_are_custom(kind: str) -> None:
    schema = org_schema(kind)
    unsuffixed = {(o.name, f.name) for o in schema.objects for f in o.fields if f.custom and not f.name.endswith("__c")}
    assert unsuffixed == _UNSUFFIXED_CUSTOM
    for obj, name in _UNSUFFIXED_CUSTOM:  # agents query them by the dump's names
        assert schema.get_object(obj).get_field(name).name == name
        assert f"\n  - {name} [" in schema.text().split(f"\n{obj}: ", 1)[1].split("\n\n", 1)[0]


def test_an_unsuffixed_custom_field_is_renamed_never_migrated() -> None:
    drift = SchemaDrift(renamed={"Case": {"Channel": "Channel_Value__c"}})
    case = org_schema().drifted(drift).get_object("Case")
    assert case.get_field("Channel") is None
    new = case.get_field("Channel_Value__c")
    assert new.custom and new.column_name == "Channel" and not new.unsuffixed_custom
    for bad, message in (
        (SchemaDrift(migrated={"Case": {"Channel": "Channel_Value__c"}}), "a migration moves a standard"),
        (SchemaDrift(renamed={"Case": {"Channel": "Intake"}}), "a custom field's API name ends in __c"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            org_schema().drifted(bad)
    with pytest.raises(ValueError, match="custom by its name"):
        replace(org_schema().get_object("Case").get_field("Channel"), name="Channel__c")
