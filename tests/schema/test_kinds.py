"""Org kinds: the service kind is the 16 objects as before; b2b and b2c have Pro's 27 objects (PRO.md 4.1)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from crmarena_gym import schema as sch
from crmarena_gym.schema import (
    OBJECTS,
    ORG_KINDS,
    STANDARD_OBJECTS,
    FieldType,
    check_kind,
    create_tables,
    is_valid_id,
    make_id,
    org_schema,
    quote_identifier,
    schema_text,
)

PRO_MD = Path(__file__).resolve().parents[2].parent / "shared" / "crmarena-pro" / "PRO.md"
PRO_KINDS = ("b2b", "b2c")


def _pro_table() -> dict[str, list[str]]:
    """Object -> key fields, from the table of PRO.md section 4.1 (read here, not copied into the project)."""
    if not PRO_MD.is_file():
        pytest.skip(f"PRO.md is not beside the checkout (expected {PRO_MD})")
    text = PRO_MD.read_text(encoding="utf-8")
    section = text[text.index("### 4.1") : text.index("### 4.2")]
    table: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("object", "") or set(cells[0]) <= {"-"}:
            continue
        names = [n.strip() for n in cells[0].split(",")]
        groups = [g.strip() for g in cells[1].split(";")]
        assert len(names) == len(groups), line
        for name, group in zip(names, groups, strict=True):
            table[name] = [f.strip() for f in group.split(",") if f.strip()]
    return table


def test_the_service_kind_is_the_module_level_schema() -> None:
    service = org_schema("service")
    assert service.objects is OBJECTS and service.standard_objects is STANDARD_OBJECTS
    for obj in OBJECTS + STANDARD_OBJECTS:
        assert service.get_object(obj.name.upper(), standard=True) is sch.get_object(obj.name, standard=True)
        assert service.child_relationships(obj) == sch.child_relationships(obj)
    assert service.object_for_id(make_id("500", 3)) is sch.object_for_id(make_id("500", 3))
    assert service.make_id("500", 3) == make_id("500", 3)
    assert schema_text() == service.text() and schema_text(include_types=False) == service.text(include_types=False)


def test_kinds_are_checked_with_a_message_naming_them() -> None:
    assert [check_kind(k) for k in ORG_KINDS] == list(ORG_KINDS)
    for bad in ("B2B", "retail", None, ["b2b"]):
        with pytest.raises(ValueError, match="'service', 'b2b', 'b2c'"):
            org_schema(bad)  # type: ignore[arg-type]
    assert org_schema("b2b") is org_schema("b2b")


@pytest.mark.parametrize("kind", PRO_KINDS)
def test_pro_kinds_have_the_27_objects_and_fields_of_pro_md(kind: str) -> None:
    table = _pro_table()
    schema = org_schema(kind)
    assert len(table) == 27
    assert sorted(o.name for o in schema.objects) == sorted(table)
    for name, fields in table.items():
        obj = schema.get_object(name)
        assert obj is not None, name
        for field in fields:
            assert obj.get_field(field) is not None, (kind, name, field)
    # Pro's empty standard objects are answered too, and none of them is stored.
    assert {o.name for o in schema.standard_objects} == {"Group", "Calendar", "Campaign", "Asset", "CaseComment"}


@pytest.mark.parametrize("kind", PRO_KINDS)
def test_pro_prefixes_picklists_and_relationships(kind: str) -> None:
    schema = org_schema(kind)
    prefixes = {"User": "005", "Contact": "003", "Lead": "00Q", "Opportunity": "006", "Quote": "0Q0"}
    prefixes |= {"Product2": "01t", "Case": "500", "Issue__c": "a03", "Knowledge__kav": "ka0", "Task": "00T"}
    prefixes |= {"VoiceCallTranscript__c": "a05"}
    for name, prefix in prefixes.items():
        assert schema.get_object(name).key_prefix == prefix  # type: ignore[union-attr]
    pick = lambda o, f: schema.get_object(o).get_field(f).picklist_values  # type: ignore[union-attr]  # noqa: E731
    assert pick("Opportunity", "StageName") == ("Qualification", "Discovery", "Quote", "Negotiation", "Closed")
    assert {"Not Started", "In Progress", "Completed"} <= set(pick("Task", "Status"))
    assert {"High", "Normal", "Low"} == set(pick("Task", "Priority"))
    assert {"Needs Review", "Accepted", "Draft"} <= set(pick("Quote", "Status"))
    assert {"Open - Not Contacted", "Closed - Converted"} <= set(pick("Lead", "Status"))
    # Relationships the categories read, both ways.
    parents = {
        ("Opportunity", "ContractID__r"): "Contract",
        ("Opportunity", "Owner"): "User",
        ("Quote", "Opportunity"): "Opportunity",
        ("QuoteLineItem", "Quote"): "Quote",
        ("OpportunityLineItem", "PricebookEntry"): "PricebookEntry",
        ("VoiceCallTranscript__c", "LeadId__r"): "Lead",
        ("VoiceCallTranscript__c", "OpportunityId__r"): "Opportunity",
        ("UserTerritory2Association", "Territory2"): "Territory2",
        ("UserTerritory2Association", "User"): "User",
        ("Task", "What"): "Opportunity",
        ("Lead", "ConvertedOpportunity"): "Opportunity",
    }
    for (child, rel), parent in parents.items():
        assert schema.get_object(child).get_relationship(rel).reference_to == parent  # type: ignore[union-attr]
    children = {
        ("Opportunity", "OpportunityLineItems"): "OpportunityLineItem",
        ("Opportunity", "Quotes"): "Quote",
        ("Opportunity", "Tasks"): "Task",
        ("Opportunity", "VoiceCallTranscripts__r"): "VoiceCallTranscript__c",
        ("Lead", "VoiceCallTranscripts__r"): "VoiceCallTranscript__c",
        ("Quote", "QuoteLineItems"): "QuoteLineItem",
        ("Contract", "Opportunities__r"): "Opportunity",
        ("Account", "Opportunities"): "Opportunity",
        ("Territory2", "UserTerritory2Associations"): "UserTerritory2Association",
        ("User", "UserTerritory2Associations"): "UserTerritory2Association",
        ("Case", "Tasks"): "Task",
    }
    for (parent, rel), child in children.items():
        found = schema.get_child_relationship(schema.get_object(parent), rel)  # type: ignore[arg-type]
        assert found is not None and found[0].name == child, (parent, rel)


def test_b2b_and_b2c_share_objects_and_field_names_and_differ_in_what_they_sell() -> None:
    b2b, b2c = org_schema("b2b"), org_schema("b2c")
    assert [o.name for o in b2b.objects] == [o.name for o in b2c.objects]
    for a, b in zip(b2b.objects, b2c.objects, strict=True):
        assert [(f.name, f.type) for f in a.fields] == [(f.name, f.type) for f in b.fields]
    family = lambda s: s.get_object("Product2").get_field("Family").picklist_values  # type: ignore[union-attr]  # noqa: E731
    assert "Vehicle" in family(b2c) and "Vehicle" not in family(b2b)
    assert b2b.get_object("Account").description != b2c.get_object("Account").description  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", ORG_KINDS)
def test_ids_carry_the_kinds_instance_and_find_their_object(kind: str) -> None:
    schema = org_schema(kind)
    instances = {org_schema(k).instance for k in ORG_KINDS}
    assert len(instances) == 3
    for obj in schema.objects:
        record = schema.make_id(obj.key_prefix, 12345)
        assert is_valid_id(record) and record[3:5] == schema.instance
        assert schema.object_for_id(record) is obj
    with pytest.raises(ValueError, match="instance"):
        make_id("006", 1, instance="W")


@pytest.mark.parametrize("kind", ORG_KINDS)
def test_every_reference_resolves_and_relationship_names_are_unique(kind: str) -> None:
    schema = org_schema(kind)
    every = {o.name for o in schema.objects + schema.standard_objects}
    for obj in schema.objects:
        rels = [f.relationship_name.lower() for f in obj.references]  # type: ignore[union-attr]
        assert len(rels) == len(set(rels)), obj.name
        for f in obj.references:
            assert {f.reference_to, *f.polymorphic} <= every, (obj.name, f.name)
        assert obj.fields[0].name == "Id"
    assert len({o.key_prefix for o in schema.objects}) == len(schema.objects)


@pytest.mark.parametrize("kind", PRO_KINDS)
def test_create_tables_of_a_kind_and_its_formulas(kind: str) -> None:
    schema = org_schema(kind)
    conn = sqlite3.connect(":memory:")
    create_tables(conn, kind)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {o.name for o in schema.objects}
    for obj in schema.objects:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({quote_identifier(obj.name)})")]
        assert cols == [f.column_name for f in obj.fields if f.formula is None]
    quote, line = schema.make_id("0Q0", 1), schema.make_id("0QL", 1)
    conn.execute('INSERT INTO "Quote" (Id, Name) VALUES (?, ?)', (quote, "Q"))
    for n, (qty, price, total) in enumerate([(3, 100.0, 270.0), (2, 50.0, 100.0)]):
        conn.execute(
            'INSERT INTO "QuoteLineItem" (Id, QuoteId, Quantity, UnitPrice, TotalPrice) VALUES (?, ?, ?, ?, ?)',
            (schema.make_id("0QL", n + 1), quote, qty, price, total),
        )
    obj = schema.get_object("Quote")
    assert obj is not None
    # The roll-ups read the lines of the quote they are computed for (the compiler qualifies quoted names).
    exprs = [
        re.sub(r'"(\w+)"', r'q."\1"', obj.get_field(n).formula) for n in ("Subtotal", "TotalPrice", "LineItemCount")
    ]  # type: ignore[union-attr, arg-type]
    assert conn.execute(f'SELECT {", ".join(exprs)} FROM "Quote" AS q').fetchone() == (400.0, 370.0, 2)
    assert line.startswith("0QL")


@pytest.mark.parametrize("kind", ORG_KINDS)
def test_schema_text_of_each_kind_lists_every_shown_field_once(kind: str) -> None:
    schema = org_schema(kind)
    text = schema_text(kind=kind)
    blocks = text.split("\n\n")
    assert len(blocks) == len(schema.objects)
    for obj, block in zip(schema.objects, blocks, strict=True):
        assert block.startswith(f"{obj.name}: {obj.description}\n")
        for f in obj.fields:
            assert block.count(f"\n  - {f.name} ") == (0 if f.extra else 1), (obj.name, f.name)
            if f.type is FieldType.PICKLIST and len(f.picklist_values) > 1 and not f.extra:
                assert f"{f.name} [picklist: {', '.join(f.picklist_values)}]" in block
        listed = re.search(r"child relationships, for \(SELECT \.\.\. FROM <name>\) subqueries: (.*)", block)
        expected = [n for n, child, _ in schema.child_relationships(obj) if child in schema.objects]
        assert (listed.group(1).count(" (") if listed else 0) == len(expected)
        for name in expected:
            assert listed is not None and f"{name} (" in listed.group(1)


# Salesforce's facts of fields every kind has (stored, or an empty standard object of the service org): the Length
# column of the Salesforce Field Reference (Summer '26, API 67.0), developer.salesforce.com/docs/atlas.en-us.sfFieldRef
# .meta/sfFieldRef/salesforce_field_reference_<Object>.htm: Case, Order, OrderItem, User, Contact, Account, Product2,
# EmailMessage, LiveChatTranscript, Knowledge__kav, Lead, Opportunity, Task, Event, Contract, Quote. Written here,
# not read from the schema. A standard picklist's length is its own: most are 255, some are not (Task.Priority 20).
_SALESFORCE_LENGTHS = {
    ("Contact", "FirstName"): 40,
    ("Contact", "LastName"): 80,
    ("Contact", "Name"): 121,
    ("Account", "ShippingCity"): 40,
    ("Account", "ShippingState"): 80,
    ("Product2", "Description"): 4000,
    ("Knowledge__kav", "Summary"): 1000,
    ("Knowledge__kav", "Title"): 255,
    ("Knowledge__kav", "PublishStatus"): 40,
    ("Knowledge__kav", "Language"): 40,
    ("Case", "CaseNumber"): 30,
    ("Case", "Status"): 255,
    ("Case", "Priority"): 255,
    ("Case", "Subject"): 255,
    ("Case", "Description"): 32000,
    ("Order", "Status"): 100,
    ("Order", "OrderNumber"): 30,
    ("OrderItem", "OrderItemNumber"): 30,
    ("User", "Name"): 121,
    ("User", "Alias"): 8,
    ("User", "Email"): 128,
    ("User", "TimeZoneSidKey"): 40,
    ("User", "LocaleSidKey"): 40,
    ("User", "LanguageLocaleKey"): 40,
    ("User", "EmailEncodingKey"): 40,
    ("EmailMessage", "Subject"): 3000,
    ("EmailMessage", "TextBody"): 131072,
    ("EmailMessage", "FromAddress"): 1000,
    ("EmailMessage", "ToAddress"): 4000,
    ("LiveChatTranscript", "Body"): 131072,
    ("Lead", "Status"): 255,
    ("Lead", "LeadSource"): 255,
    ("Lead", "Rating"): 255,
    ("Lead", "Name"): 121,
    ("Lead", "Description"): 32000,
    ("Opportunity", "Name"): 120,
    ("Opportunity", "StageName"): 255,
    ("Opportunity", "Type"): 255,
    ("Opportunity", "LeadSource"): 255,
    ("Opportunity", "Description"): 32000,
    ("Task", "Priority"): 20,
    ("Task", "Status"): 255,
    ("Task", "TaskSubtype"): 40,
    ("Task", "Description"): 32000,
    ("Event", "Description"): 32000,
    ("Contract", "Status"): 100,
    ("Contract", "ContractNumber"): 30,
    ("Contract", "Description"): 32000,
    ("Quote", "Status"): 40,
    ("Quote", "QuoteNumber"): 30,
    ("Quote", "Description"): 32000,
}


@pytest.mark.parametrize("kind", ORG_KINDS)
def test_shared_fields_have_salesforces_lengths_in_every_kind(kind: str) -> None:
    schema = org_schema(kind)
    for (obj, name), length in _SALESFORCE_LENGTHS.items():
        f = schema.get_object(obj, standard=True).get_field(name)  # type: ignore[union-attr]
        assert f is not None and f.max_length == length, (kind, obj, name, f and f.max_length)


@pytest.mark.parametrize("kind", ORG_KINDS)
def test_every_picklist_value_fits_its_fields_length(kind: str) -> None:
    # A value the org offers (describe's picklistValues) must be one a write can store: never over the length.
    schema = org_schema(kind)
    picklists = [(o, f) for o in schema.objects + schema.standard_objects for f in o.fields if f.picklist_values]
    assert len(picklists) > 10
    for obj, f in picklists:
        assert max(len(v) for v in f.picklist_values) <= f.max_length, (kind, obj.name, f.name)


# Who may own a record of each object: the "Refers To" of its OwnerId in Salesforce's Object Reference. Queues
# (Group) own leads, cases, orders, tasks and custom objects, never accounts, contacts, opportunities, contracts,
# campaigns or assets; a public or resource calendar may own an event. Quote's page documents no OwnerId: its
# describe (Summer '26) makes Owner polymorphic, as on the objects queues own. A chat transcript is routed to
# queues (Omni-Channel).
_OWNER_TARGETS = {
    "Account": {"User"},
    "Contact": {"User"},
    "Opportunity": {"User"},
    "Contract": {"User"},
    "Campaign": {"User"},
    "Asset": {"User"},
    "Lead": {"Group", "User"},
    "Case": {"Group", "User"},
    "Order": {"Group", "User"},
    "Quote": {"Group", "User"},
    "Task": {"Group", "User"},
    "LiveChatTranscript": {"Group", "User"},
    "VoiceCallTranscript__c": {"Group", "User"},
    "Event": {"Calendar", "User"},
}


@pytest.mark.parametrize("kind", ORG_KINDS)
def test_every_owner_refers_to_what_salesforce_lets_own_the_object(kind: str) -> None:
    schema = org_schema(kind)
    owned = 0
    for obj in schema.objects + schema.standard_objects:
        f = obj.get_field("OwnerId")
        if f is None:
            continue
        assert obj.name in _OWNER_TARGETS, f"{obj.name}.OwnerId: say what Salesforce lets own it"
        assert {f.reference_to, *f.polymorphic} == _OWNER_TARGETS[obj.name], (kind, obj.name)
        assert (f.reference_to, f.relationship_name) == ("User", "Owner"), (kind, obj.name)
        owned += 1
    # The service org describes the sales objects as empty standard ones; Pro's store them and own accounts.
    assert owned == (11 if kind == "service" else 14)


# What Salesforce fixes about a field, whatever the org: a field both kinds have must agree on all of it.
_FACTS = (
    "type", "max_length", "reference_to", "polymorphic", "relationship_name", "child_relationship", "on_delete",
    "required", "default", "readonly", "create_only", "external_id", "column", "autonumber", "picklist_values",
)  # fmt: skip


@pytest.mark.parametrize("kind", PRO_KINDS)
def test_pro_fields_of_the_service_objects_keep_the_service_facts(kind: str) -> None:
    service = org_schema("service")
    # A person account's Name is computed from first and last name; a business account's is its own, required.
    differs = {("Account", "Name"): {"required"}}
    shared = 0
    for obj in org_schema(kind).objects:
        base = service.get_object(obj.name)
        if base is None:
            continue
        for f in obj.fields:
            g = base.get_field(f.name)
            if g is None:
                continue
            shared += 1
            facts = [a for a in _FACTS if a not in differs.get((obj.name, f.name), ())]
            assert [getattr(f, a) for a in facts] == [getattr(g, a) for a in facts], (kind, obj.name, f.name)
    assert shared > 150  # the 16 objects' fields, less the person account's


# Salesforce's lengths of the standard text fields of Pro's own objects and of what Pro adds to the service
# objects (the Field Reference), written here apart from the schema's declarations.
_PRO_LENGTHS = {
    "Lead": {"FirstName": 40, "LastName": 80, "Name": 121, "Company": 255, "Title": 128, "Email": 80, "Phone": 40,
             "City": 40, "State": 80, "Country": 80, "Description": 32000, "LeadSource": 255, "Status": 255,
             "Industry": 255, "Rating": 255},
    "Opportunity": {"Name": 120, "NextStep": 255, "Description": 32000, "StageName": 255, "LeadSource": 255,
                    "Type": 255},
    "Quote": {"Name": 255, "Email": 80, "Phone": 40, "Description": 32000, "Status": 40, "QuoteNumber": 30},
    "QuoteLineItem": {"LineNumber": 255},
    "Contract": {"CustomerSignedTitle": 40, "Description": 32000, "Status": 100, "ContractNumber": 30},
    "Task": {"Subject": 255, "Description": 32000, "Priority": 20, "Status": 255, "TaskSubtype": 40},
    "UserTerritory2Association": {"RoleInTerritory2": 255},
    "Event": {"Subject": 255, "Location": 255, "Description": 32000},
    "Territory2": {"Name": 80, "DeveloperName": 80, "Description": 1000},
    "Account": {"Name": 255, "Website": 255, "ShippingStreet": 255, "ShippingCity": 40, "ShippingState": 80,
                "ShippingPostalCode": 20, "ShippingCountry": 80, "Description": 32000, "Industry": 255, "Type": 255},
    "Contact": {"Title": 128, "Department": 80, "Phone": 40, "MailingCity": 40, "MailingState": 80,
                "LeadSource": 255},
    "User": {"Title": 80},
}  # fmt: skip
_STRING_LIKE = frozenset(
    {
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


@pytest.mark.parametrize("kind", PRO_KINDS)
def test_pro_declares_salesforces_length_of_every_standard_text_field_it_adds(kind: str) -> None:
    service = org_schema("service")
    schema = org_schema(kind)
    for obj, lengths in _PRO_LENGTHS.items():
        for name, length in lengths.items():
            assert schema.get_object(obj).get_field(name).max_length == length, (kind, obj, name)  # type: ignore[union-attr]
    # Every standard string-like field of Pro's objects names its length, but for these service-org fields Pro
    # inherits unchanged, whose Salesforce type differs from what the service org declares (a reference stored as
    # text: ProfileId, CatalogId, LiveChatVisitorId, ToIds): the service schema's to settle, not Pro's.
    unsettled = {
        "User": {"ProfileId"},
        "EmailMessage": {"ToIds"},
        "LiveChatTranscript": {"LiveChatVisitorId"},
        "ProductCategory": {"CatalogId"},
    }
    missing = [
        f"{obj.name}.{f.name}"
        for obj in schema.objects
        for f in obj.fields
        if f.type in _STRING_LIKE and not f.custom and not f.autonumber and f.length is None
        if f.name not in unsettled.get(obj.name, ())
    ]
    assert missing == []
    for obj, names in unsettled.items():  # each left to the service org has the service field's type and length
        for name in names:
            mine, base = schema.get_object(obj).get_field(name), service.get_object(obj).get_field(name)  # type: ignore[union-attr]
            assert mine is not None and base is not None and (mine.type, mine.length) == (base.type, base.length)
    street = schema.get_object("Account").get_field("ShippingStreet")  # type: ignore[union-attr]
    assert street is not None and street.type is FieldType.TEXTAREA  # Salesforce's street is a text area
    # The Field Reference's types: Account.Website is a url (255), Territory2.Description a string (1,000), a task's
    # and an event's Subject a combobox (255).
    for obj, name, kind_of in (
        ("Account", "Website", FieldType.URL),
        ("Territory2", "Description", FieldType.STRING),
        ("Task", "Subject", FieldType.COMBOBOX),
        ("Event", "Subject", FieldType.COMBOBOX),
        ("Opportunity", "Probability", FieldType.PERCENT),
        ("QuoteLineItem", "Discount", FieldType.PERCENT),
        ("OpportunityLineItem", "Description", FieldType.STRING),
        ("QuoteLineItem", "Description", FieldType.STRING),
    ):
        f = schema.get_object(obj).get_field(name)  # type: ignore[union-attr]
        assert f is not None and f.type is kind_of, (kind, obj, name)
