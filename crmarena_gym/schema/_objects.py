"""The 16 objects of the CRMArena org: the one source of truth for every layer.

Field names, table names and column spellings follow the original benchmark's SQLite dump, so that
the same engine answers queries on our generated org and on that dump. The descriptions are ours.
"""

from __future__ import annotations

from types import MappingProxyType

from crmarena_gym.schema._types import Field, FieldType, SObject, declare

T = FieldType

# Salesforce's person Name: first and last name with one space (either may be missing); null without a record.
# Its length is the Field Reference's 121 (User, Contact, Lead: ``Full Name``).
PERSON_NAME_LENGTH = 121
_PERSON_NAME = "NULLIF(TRIM(IFNULL(\"FirstName\", '') || ' ' || IFNULL(\"LastName\", '')), '')"

CASE_STATUSES = ("New", "Working", "Escalated", "Waiting on Customer", "Closed")
CASE_PRIORITIES = ("Low", "Medium", "High", "Critical")
CASE_CHANNELS = ("Email", "Phone", "Web", "Chat", "Social Media")
ORDER_STATUSES = ("Draft", "Activated")
#: Salesforce's standard Account.Industry and Lead.Industry values.
INDUSTRIES = (
    "Agriculture",
    "Apparel",
    "Banking",
    "Biotechnology",
    "Chemicals",
    "Communications",
    "Construction",
    "Consulting",
    "Education",
    "Electronics",
    "Energy",
    "Engineering",
    "Entertainment",
    "Environmental",
    "Finance",
    "Food & Beverage",
    "Government",
    "Healthcare",
    "Hospitality",
    "Insurance",
    "Machinery",
    "Manufacturing",
    "Media",
    "Not For Profit",
    "Other",
    "Recreation",
    "Retail",
    "Shipping",
    "Technology",
    "Telecommunications",
    "Transportation",
    "Utilities",
)
HISTORY_FIELDS = ("Case Creation", "Owner Assignment", "Case Closed")
PUBLISH_STATUSES = ("Online", "Draft", "Archived")


def _id(what: str) -> Field:
    return Field("Id", T.ID, f"Unique 18-character record id of the {what}")


def _ref(
    name: str,
    to: str,
    rel: str,
    description: str,
    column: str | None = None,
    child: str | None = None,
    also: tuple[str, ...] = (),
    on_delete: str | None = "clear",
) -> Field:
    # A lookup's default in Salesforce: deleting the parent clears the field; references to users are
    # never touched (a user cannot be deleted, only deactivated).
    return Field(
        name,
        T.REFERENCE,
        description,
        reference_to=to,
        relationship_name=rel,
        column=column,
        child_relationship=child,
        polymorphic=also,
        on_delete=None if to == "User" else on_delete,
    )


def _owner(description: str, *, queues: bool = False, calendars: bool = False) -> Field:
    """A record's ``OwnerId``: a user, or what else Salesforce lets own the object.

    The Object Reference's "Refers To" of each object's OwnerId: ``User`` alone for accounts, contacts,
    opportunities, contracts, campaigns and assets; ``Group, User`` where a queue (a Group of type Queue) may
    own the record (leads, cases, orders, quotes, tasks, chat transcripts, custom objects); ``Calendar, User``
    for an event (a public or resource calendar may own one). The describe's ``referenceTo``, ``TYPEOF`` and
    ``Owner.Type`` follow from it.

    Args:
        description: The field's description.
        queues: A queue may own the record too.
        calendars: A public or resource calendar may own the record too.
    """
    also = (("Group",) if queues else ()) + (("Calendar",) if calendars else ())
    return _ref("OwnerId", "User", "Owner", description, also=also)


# The standard fields every real org has and the dump lacks, computed from the stored data. Quoted names
# are the object's own columns; names in brackets or bare belong to the uncorrelated subqueries.
# The org went live with its first order or case: records with no date of their own date from then.
_ORG_START = (
    "min((SELECT MIN(EffectiveDate) FROM [Order]) || 'T00:00:00.000+0000', (SELECT MIN(CreatedDate) FROM [Case]))"
)
# Records no agent owns were created by the org's first user (the one who set it up), who is also the
# user the API runs as (USING SCOPE mine).
ORG_CREATOR_SQL = "(SELECT MIN(Id) FROM [User])"
_ORG_CREATOR = ORG_CREATOR_SQL


def _audit(created: str | None, modified: str, created_by: str) -> tuple[Field, ...]:
    """CreatedDate (when not stored), CreatedById, LastModifiedDate, LastModifiedById, SystemModstamp, IsDeleted."""
    fields = []
    if created is not None:
        fields.append(
            Field("CreatedDate", T.DATETIME, "When the record was created (UTC)", formula=created, extra=True)
        )
    return (
        *fields,
        Field(
            "CreatedById",
            T.REFERENCE,
            "The user who created the record (User)",
            reference_to="User",
            relationship_name="CreatedBy",
            formula=created_by,
            extra=True,
        ),
        Field("LastModifiedDate", T.DATETIME, "When the record was last changed (UTC)", formula=modified, extra=True),
        Field(
            "LastModifiedById",
            T.REFERENCE,
            "The user who last changed the record (User)",
            reference_to="User",
            relationship_name="LastModifiedBy",
            formula=created_by,
            extra=True,
        ),
        Field(
            "SystemModstamp", T.DATETIME, "When the system last changed the record (UTC)", formula=modified, extra=True
        ),
        Field(
            "IsDeleted",
            T.BOOLEAN,
            "Whether the record is in the recycle bin (never, in this org)",
            formula="0",
            extra=True,
        ),
    )


#: Salesforce's length of a standard auto-number (the Field Reference: Case.CaseNumber, Order.OrderNumber,
#: OrderItem.OrderItemNumber, Contract.ContractNumber, Quote.QuoteNumber are ``string`` of 30).
AUTONUMBER_LENGTH = 30


def _autonumber(name: str, description: str, start: int, *, length: int = AUTONUMBER_LENGTH) -> Field:
    # Salesforce's auto-number: eight digits, in the order records were inserted.
    return Field(
        name,
        T.STRING,
        description,
        formula=f"printf('%08d', \"rowid\" + {start - 1})",
        extra=True,
        autonumber=True,
        length=length,
    )


# Salesforce's types and lengths of an address's parts, the same on every standard address (Account's Billing and
# Shipping, Contact's Mailing, Lead's own): the Object Reference's Street 255 (a text area), City 40, State 80,
# PostalCode 20, Country 80.
_ADDRESS_PARTS = {
    "Street": (T.TEXTAREA, 255),
    "City": (T.STRING, 40),
    "State": (T.STRING, 80),
    "PostalCode": (T.STRING, 20),
    "Country": (T.STRING, 80),
}
#: Salesforce's length of a standard long text area (Case, Lead, Opportunity, Account ... ``Description``).
LONG_TEXT_AREA = 32000


def _address(prefix: str, part: str, description: str) -> Field:
    """One part of a standard address (``ShippingCity``: prefix ``Shipping``, part ``City``), searchable, of
    Salesforce's type and length for the part (the street is a text area, the rest strings)."""
    kind, length = _ADDRESS_PARTS[part]
    return Field(f"{prefix}{part}", kind, description, searchable=True, length=length)


def _person_name(whose: str) -> tuple[Field, ...]:
    """A person's FirstName, LastName and compound Name (first and last, 121 characters at most in Salesforce), their
    descriptions said of ``whose`` ("Agent's"; "" for the bare wording)."""

    def said(what: str) -> str:
        return f"{whose} {what}" if whose else what.capitalize()

    return (
        Field("FirstName", T.STRING, said("given name"), searchable=True, length=40),
        Field("LastName", T.STRING, said("family name"), searchable=True, length=80),
        Field(
            "Name",
            T.STRING,
            said("full name (first and last)"),
            formula=_PERSON_NAME,
            name_field=True,
            length=PERSON_NAME_LENGTH,
        ),
    )


def _picklist(name: str, description: str, values: tuple[str, ...], length: int) -> Field:
    """A standard picklist of Salesforce's ``length`` for the field: the Field Reference gives each its own (most
    are 255, a user's locale keys 40, Order.Status and Contract.Status 100, Task.Priority 20); a write longer than
    it is refused with STRING_TOO_LONG, as a text field's."""
    return Field(name, T.PICKLIST, description, picklist_values=values, length=length)


_ORDER_DAY = "\"EffectiveDate\" || 'T00:00:00.000+0000'"
_ORDER_ITEM_DAY = "(SELECT EffectiveDate FROM [Order] WHERE Id = \"OrderId\") || 'T00:00:00.000+0000'"
_UNDATED = _audit(_ORG_START, _ORG_START, _ORG_CREATOR)


USER = SObject(
    "User",
    "005",
    "User",
    "A service agent who works cases",
    (
        _id("agent"),
        *_person_name("Agent's"),
        Field("Email", T.EMAIL, "Agent's work email address", searchable=True, length=128),
        Field("Phone", T.PHONE, "Agent's work phone number", searchable=True, length=40),
        Field("Username", T.STRING, "Login name of the agent, unique across the org", searchable=True, length=80),
        Field("Alias", T.STRING, "Short handle of the agent, at most 8 characters", searchable=True, length=8),
        Field("ProfileId", T.STRING, "Id of the permission profile the agent has"),
        _picklist("LanguageLocaleKey", "Language of the agent's interface", ("en_US",), 40),
        _picklist("EmailEncodingKey", "Character encoding of outgoing email", ("UTF-8",), 40),
        _picklist(
            "TimeZoneSidKey",
            "The agent's time zone",
            ("America/Los_Angeles", "America/Denver", "America/Chicago", "America/New_York"),
            40,
        ),
        _picklist("LocaleSidKey", "Locale for dates and numbers", ("en_US",), 40),
        Field("IsActive", T.BOOLEAN, "Whether the user can log in", formula="1", extra=True),
        *_UNDATED,
    ),
)

ACCOUNT = SObject(
    "Account",
    "001",
    "Account",
    "A customer, stored as a person account",
    (
        _id("customer account"),
        Field("FirstName", T.STRING, "Customer's given name", searchable=True, length=40),
        Field("LastName", T.STRING, "Customer's family name", searchable=True, length=80),
        Field("Name", T.STRING, "Customer's full name (first and last)", formula=_PERSON_NAME, name_field=True),
        Field("PersonEmail", T.EMAIL, "Customer's email address", searchable=True, length=80),
        Field("Phone", T.PHONE, "Customer's phone number", searchable=True, length=40),
        Field("RecordTypeId", T.STRING, "Id of the record type (the person-account type)"),
        _address("Shipping", "City", "City the customer's orders ship to"),
        _address("Shipping", "State", "Two-letter US state the customer's orders ship to"),
        Field(
            "IsPersonAccount", T.BOOLEAN, "Whether the account is a person account (always)", formula="1", extra=True
        ),
        *_UNDATED,
    ),
)

CONTACT = SObject(
    "Contact",
    "003",
    "Contact",
    "The person behind a customer account, who opens cases",
    (
        _id("contact"),
        *_person_name("Contact's"),
        Field("Email", T.EMAIL, "Contact's email address", searchable=True, length=80),
        _ref(
            "AccountId",
            "Account",
            "Account",
            "The account this contact belongs to (Account)",
            child="Contacts",
            on_delete="cascade",
        ),
        _owner("The agent who owns this contact record (User)"),
        *_audit(_ORG_START, _ORG_START, '"OwnerId"'),
    ),
)

CASE = SObject(
    "Case",
    "500",
    "Case",
    "A customer's service request about one purchased item",
    (
        _id("case"),
        _picklist("Priority", "Urgency of the case", CASE_PRIORITIES, 255),
        Field(
            "Subject",
            T.STRING,
            "One-line summary of the customer's problem",
            searchable=True,
            name_field=True,
            length=255,
        ),
        Field(
            "Description",
            T.LONG_TEXT,
            "The customer's account of the problem, in full",
            searchable=True,
            length=LONG_TEXT_AREA,
        ),
        _picklist("Status", "Where the case stands ('Closed' once resolved)", CASE_STATUSES, 255),
        # Custom in the original org, though its dump drops the suffix: Salesforce's Case has no standard Channel
        # field (its own is Origin, "Case Origin").
        Field(
            "Channel", T.PICKLIST, "How the customer reached us", picklist_values=CASE_CHANNELS, unsuffixed_custom=True
        ),
        _ref(
            "ContactId",
            "Contact",
            "Contact",
            "The contact who opened the case (Contact)",
            child="Cases",
            on_delete="restrict",
        ),
        Field("CreatedDate", T.DATETIME, "When the case was opened (UTC)"),
        Field("ClosedDate", T.DATETIME, "When the case was closed (UTC); empty while it is open", readonly=True),
        _ref(
            "OrderItemId__c",
            "OrderItem",
            "OrderItemId__r",
            "The purchased line item the case is about (OrderItem)",
            child="Cases__r",
        ),
        _ref("IssueId__c", "Issue__c", "IssueId__r", "The kind of problem reported (Issue__c)", child="Cases__r"),
        _ref("AccountId", "Account", "Account", "The customer account (Account)", child="Cases", on_delete="restrict"),
        _owner("The agent who owns the case now, after any transfers (User)", queues=True),
        _autonumber("CaseNumber", "The case's number, in the order cases were filed", 1000),
        Field(
            "IsClosed", T.BOOLEAN, "Whether the case is closed", formula="IFNULL(\"Status\" = 'Closed', 0)", extra=True
        ),
        Field(
            "IsEscalated",
            T.BOOLEAN,
            "Whether the case is escalated",
            formula="IFNULL(\"Status\" = 'Escalated', 0)",
            extra=True,
        ),
        *_audit(None, 'IFNULL("ClosedDate", "CreatedDate")', '"OwnerId"'),
    ),
)

KNOWLEDGE = SObject(
    "Knowledge__kav",
    "ka0",
    "Knowledge Article",
    "A help-center article: store policies, procedures and product FAQs",
    (
        _id("article version"),
        Field("Title", T.STRING, "Headline of the article", searchable=True, name_field=True, length=255),
        Field("FAQ_Answer__c", T.LONG_TEXT, "The article's body text", searchable=True),
        Field("Summary", T.TEXTAREA, "A short abstract of the article", searchable=True, length=1000),
        Field("UrlName", T.STRING, "Unique slug used in the article's web address", length=255),
        _picklist("PublishStatus", "Publication state ('Online' when live)", PUBLISH_STATUSES, 40),
        _picklist("Language", "Language of this version", ("en_US",), 40),
        *_UNDATED,
    ),
)

PRODUCT_CATEGORY = SObject(
    "ProductCategory",
    "0ZG",
    "Product Category",
    "A section of the store catalog (for example running shoes)",
    (
        _id("category"),
        Field("Name", T.STRING, "Name of the category", searchable=True, name_field=True, length=255),
        Field("CatalogId", T.STRING, "Id of the catalog that holds the category"),
        *_UNDATED,
    ),
)

PRODUCT = SObject(
    "Product2",
    "01t",
    "Product",
    "An item the store sells",
    (
        _id("product"),
        Field("Name", T.STRING, "Product name as shown in the store", searchable=True, name_field=True, length=255),
        Field("Description", T.TEXTAREA, "Marketing description of the product", searchable=True, length=4000),
        Field("IsActive", T.BOOLEAN, "Whether the product can be ordered now"),
        Field(
            "External_ID__c",
            T.STRING,
            "Key of the product in the merchandising system",
            searchable=True,
            external_id=True,
        ),
        *_UNDATED,
    ),
)

PRODUCT_CATEGORY_PRODUCT = SObject(
    "ProductCategoryProduct",
    "0ZH",
    "Product Category Product",
    "Links a product to a catalog category it is listed under",
    (
        _id("category assignment"),
        # Custom text copies in the original org, though its dump drops the suffix: Salesforce's standard fields here
        # are the references ProductCategoryId and ProductId (whose relationships are named ProductCategory and
        # Product), CatalogId, IsPrimaryCategory, Name and ProductToCategory.
        Field(
            "ProductCategory",
            T.STRING,
            "Name of the category, copied for convenience",
            searchable=True,
            unsuffixed_custom=True,
        ),
        Field(
            "Product",
            T.STRING,
            "External key of the product, copied for convenience",
            searchable=True,
            unsuffixed_custom=True,
        ),
        _ref(
            "ProductCategoryId",
            "ProductCategory",
            "ProductCategory",
            "The category (ProductCategory)",
            child="ProductCategoryProducts",
            on_delete="cascade",
        ),
        _ref(
            "ProductId",
            "Product2",
            "Product",
            "The product (Product2)",
            child="ProductCategoryProducts",
            on_delete="cascade",
        ),
        *_UNDATED,
    ),
)

PRICEBOOK = SObject(
    "Pricebook2",
    "01s",
    "Price Book",
    "A price list valid over a period",
    (
        _id("price book"),
        Field("Name", T.STRING, "Name of the price book", searchable=True, name_field=True, length=255),
        Field("Description", T.TEXTAREA, "What the price book is for", searchable=True, length=255),
        Field("IsActive", T.BOOLEAN, "Whether orders may use the price book"),
        Field("ValidFrom", T.DATETIME, "Start of the validity period (UTC)"),
        Field("ValidTo", T.DATETIME, "End of the validity period (UTC)"),
        *_UNDATED,
    ),
)

PRICEBOOK_ENTRY = SObject(
    "PricebookEntry",
    "01u",
    "Price Book Entry",
    "The price of one product in one price book",
    (
        _id("price book entry"),
        _ref(
            "Pricebook2Id",
            "Pricebook2",
            "Pricebook2",
            "The price book (Pricebook2)",
            child="PricebookEntries",
            on_delete="cascade",
        ),
        _ref(
            "Product2Id",
            "Product2",
            "Product2",
            "The product priced (Product2)",
            child="PricebookEntries",
            on_delete="cascade",
        ),
        Field("UnitPrice", T.CURRENCY, "Price of one unit, in US dollars"),
        *_UNDATED,
    ),
)

ORDER = SObject(
    "Order",
    "801",
    "Order",
    "A customer's purchase, made of order items",
    (
        _id("order"),
        _ref(
            "AccountId",
            "Account",
            "Account",
            "The customer who placed the order (Account)",
            child="Orders",
            on_delete="restrict",
        ),
        _picklist("Status", "'Activated' once placed, 'Draft' before", ORDER_STATUSES, 100),
        Field("EffectiveDate", T.DATE, "The day the order was placed"),
        _ref(
            "Pricebook2Id",
            "Pricebook2",
            "Pricebook2",
            "The price book the order was priced from (Pricebook2)",
            child="Orders",
            on_delete="restrict",
        ),
        _autonumber("OrderNumber", "The order's number, in the order orders were placed", 100),
        *_audit(_ORDER_DAY, _ORDER_DAY, _ORG_CREATOR),
    ),
)

ORDER_ITEM = SObject(
    "OrderItem",
    "802",
    "Order Product",
    "One product line of an order",
    (
        _id("order item"),
        _ref(
            "OrderId",
            "Order",
            "Order",
            "The order this line belongs to (Order)",
            child="OrderItems",
            on_delete="cascade",
        ),
        _ref(
            "Product2Id",
            "Product2",
            "Product2",
            "The product bought (Product2)",
            child="OrderItems",
            on_delete="restrict",
        ),
        Field("Quantity", T.DOUBLE, "Number of units bought"),
        Field("UnitPrice", T.CURRENCY, "Price paid per unit, in US dollars"),
        # The dump spells the column PriceBookEntryId; SOQL and SQLite both ignore the case.
        _ref(
            "PricebookEntryId",
            "PricebookEntry",
            "PricebookEntry",
            "The price book entry the line was priced from (PricebookEntry)",
            column="PriceBookEntryId",
            child="OrderItems",
            on_delete="restrict",
        ),
        _autonumber("OrderItemNumber", "The line's number, in the order lines were entered", 1),
        Field(
            "TotalPrice",
            T.CURRENCY,
            "Quantity times unit price, in US dollars",
            formula='"Quantity" * "UnitPrice"',
            extra=True,
        ),
        *_audit(_ORDER_ITEM_DAY, _ORDER_ITEM_DAY, _ORG_CREATOR),
    ),
)

EMAIL_MESSAGE = SObject(
    "EmailMessage",
    "02s",
    "Email Message",
    "An email exchanged with a customer about a case",
    (
        _id("email"),
        Field("Subject", T.STRING, "Subject line", searchable=True, name_field=True, length=3000),
        Field("TextBody", T.LONG_TEXT, "Plain-text body of the email", searchable=True, length=131072),
        _ref(
            "ParentId",
            "Case",
            "Parent",
            "The case the email is about (Case)",
            child="EmailMessages",
            on_delete="cascade",
        ),
        Field("FromAddress", T.EMAIL, "Sender's address", searchable=True, length=1000),
        # The Field Reference's ToAddress is a string of 4,000 (a list of addresses), not an email field: SOSL's
        # IN EMAIL FIELDS does not search it, and a write is not checked as one address.
        Field("ToAddress", T.STRING, "Recipient's address", searchable=True, length=4000),
        Field("ToIds", T.STRING, "Ids of the recipients, as a JSON list"),
        Field("MessageDate", T.DATETIME, "When the email was sent (UTC)"),
        *_audit('"MessageDate"', '"MessageDate"', _ORG_CREATOR),
    ),
)

LIVE_CHAT_TRANSCRIPT = SObject(
    "LiveChatTranscript",
    "570",
    "Live Chat Transcript",
    "The record of a chat between a customer and an agent about a case",
    (
        _id("transcript"),
        _ref("CaseId", "Case", "Case", "The case the chat is about (Case)", child="LiveChatTranscripts"),
        _ref("AccountId", "Account", "Account", "The customer's account (Account)", child="LiveChatTranscripts"),
        _owner("The agent who answered the chat (User)", queues=True),
        Field(
            "Body", T.LONG_TEXT, "Every message, one per line: [time] Name (Role): text", searchable=True, length=131072
        ),
        Field("EndTime", T.DATETIME, "When the chat ended (UTC)"),
        Field("LiveChatVisitorId", T.STRING, "Id of the web visitor session"),
        _ref("ContactId", "Contact", "Contact", "The customer's contact (Contact)", child="LiveChatTranscripts"),
        *_audit('"EndTime"', '"EndTime"', '"OwnerId"'),
    ),
)

ISSUE = SObject(
    "Issue__c",
    "a1M",
    "Issue",
    "A category of customer problem that cases are filed under",
    (
        _id("issue"),
        Field("Name", T.STRING, "Short name of the issue", searchable=True, name_field=True, length=80),
        Field("Description__c", T.TEXTAREA, "What the issue covers", searchable=True),
        *_UNDATED,
    ),
)

CASE_HISTORY = SObject(
    "CaseHistory__c",
    "a1N",
    "Case History",
    "One event in a case's life: creation, an owner assignment or closure",
    (
        _id("history entry"),
        _ref(
            "CaseId__c",
            "Case",
            "CaseId__r",
            "The case the event belongs to (Case)",
            child="CaseHistories__r",
            on_delete="cascade",
        ),
        _ref(
            "OldValue__c",
            "User",
            "OldValue__r",
            "For an owner assignment, the previous owner (User); otherwise empty",
            child="AssignmentsFrom__r",
        ),
        _ref(
            "NewValue__c",
            "User",
            "NewValue__r",
            "For an owner assignment, the new owner (User); otherwise empty",
            child="AssignmentsTo__r",
        ),
        Field("CreatedDate", T.DATETIME, "When the event happened (UTC)"),
        Field("Field__c", T.PICKLIST, "Which event this is", picklist_values=HISTORY_FIELDS),
        *_audit(None, '"CreatedDate"', _ORG_CREATOR),
    ),
)

# Salesforce's write facts of the 16 (the Object Reference): the standard required fields (nillable false,
# no default), the picklist and checkbox defaults of a create, the External ID fields.
USER = declare(
    USER,
    required=(
        "LastName", "Username", "Email", "Alias", "TimeZoneSidKey", "LocaleSidKey", "EmailEncodingKey",
        "LanguageLocaleKey", "ProfileId",
    ),
)  # fmt: skip
ACCOUNT = declare(ACCOUNT, required=("LastName",))
CONTACT = declare(CONTACT, required=("LastName",))
CASE = declare(CASE, defaults={"Status": "New", "Priority": "Medium"})
KNOWLEDGE = declare(KNOWLEDGE, required=("Title", "UrlName"), defaults={"PublishStatus": "Draft", "Language": "en_US"})
PRODUCT_CATEGORY = declare(PRODUCT_CATEGORY, required=("Name",))
PRODUCT = declare(PRODUCT, required=("Name",), defaults={"IsActive": False})
PRODUCT_CATEGORY_PRODUCT = declare(PRODUCT_CATEGORY_PRODUCT, required=("ProductCategoryId", "ProductId"))
PRICEBOOK = declare(PRICEBOOK, required=("Name",), defaults={"IsActive": False})
PRICEBOOK_ENTRY = declare(PRICEBOOK_ENTRY, required=("Pricebook2Id", "Product2Id", "UnitPrice"))
ORDER = declare(ORDER, required=("AccountId", "Status", "EffectiveDate"))
ORDER_ITEM = declare(ORDER_ITEM, required=("OrderId", "Quantity", "UnitPrice", "PricebookEntryId"))
ISSUE = declare(ISSUE, required=("Name",))
LIVE_CHAT_TRANSCRIPT = declare(LIVE_CHAT_TRANSCRIPT, required=("LiveChatVisitorId",))

#: Every object, in an order where each object's parents come before it.
OBJECTS: tuple[SObject, ...] = (
    USER,
    ACCOUNT,
    CONTACT,
    PRODUCT_CATEGORY,
    PRODUCT,
    PRODUCT_CATEGORY_PRODUCT,
    PRICEBOOK,
    PRICEBOOK_ENTRY,
    ORDER,
    ORDER_ITEM,
    ISSUE,
    CASE,
    CASE_HISTORY,
    EMAIL_MESSAGE,
    LIVE_CHAT_TRANSCRIPT,
    KNOWLEDGE,
)


# -- standard objects every org has, which the CRMArena org leaves empty -----------------------------------
# A real org answers `SELECT COUNT() FROM Opportunity` with 0, not with INVALID_TYPE; the original's own
# prompt examples query Opportunity and Lead. Their fields are stored (a dump that has the table answers
# from it); the embedded org answers from an empty table of these columns.


def _system() -> tuple[Field, ...]:
    return (
        Field("CreatedDate", T.DATETIME, "When the record was created (UTC)"),
        _ref("CreatedById", "User", "CreatedBy", "The user who created the record (User)"),
        Field("LastModifiedDate", T.DATETIME, "When the record was last changed (UTC)"),
        _ref("LastModifiedById", "User", "LastModifiedBy", "The user who last changed the record (User)"),
        Field("SystemModstamp", T.DATETIME, "When the system last changed the record (UTC)"),
        Field("IsDeleted", T.BOOLEAN, "Whether the record is in the recycle bin"),
    )


def _standard(name: str, prefix: str, label: str, description: str, *fields: Field) -> SObject:
    return SObject(name, prefix, label, description, (_id(label.lower()), *fields, *_system()))


def _text(name: str, description: str, length: int | None = None) -> Field:
    return Field(name, T.STRING, description, length=length)


def _pick(name: str, description: str, *values: str, length: int | None = None) -> Field:
    return Field(name, T.PICKLIST, description, picklist_values=values, length=length)


def _notes(description: str) -> Field:
    # A standard long text area: the Field Reference's Description of Opportunity, Lead, Task, Event, Contract,
    # Quote, Campaign and Asset is a textarea of 32,000.
    return Field("Description", T.LONG_TEXT, description, length=LONG_TEXT_AREA)


_ACTIVITY_PARENTS = ("Asset", "Campaign", "Case", "Contract", "Opportunity", "Order", "Quote")

GROUP = _standard(
    "Group",
    "00G",
    "Group",
    "A queue or public group of users",
    _text("Name", "Name of the group"),
    _text("DeveloperName", "Unique API name of the group"),
    _pick("Type", "Kind of group", "Queue", "Regular", "Role"),
    Field("Email", T.EMAIL, "Email address of the group"),
)
# What may own an event besides a user (Event.OwnerId refers to Calendar, User): a user's own calendar, a
# public or a resource calendar, as the Object Reference's Calendar has it (API 45.0 and later, read-only).
CALENDAR = _standard(
    "Calendar",
    "023",
    "Calendar",
    "A user's, public, resource or holiday calendar",
    Field("Name", T.STRING, "Name of the calendar", length=80),
    _pick("Type", "Kind of calendar", "Holiday", "Public", "Resource", "User"),
    Field("IsActive", T.BOOLEAN, "Whether events can be saved to the calendar"),
    _ref("UserId", "User", "User", "The user whose calendar it is, for a user calendar (User)"),
)
OPPORTUNITY = _standard(
    "Opportunity",
    "006",
    "Opportunity",
    "A potential sale",
    _text("Name", "Name of the opportunity", 120),
    _ref("AccountId", "Account", "Account", "The account (Account)", child="Opportunities"),
    _ref("ContactId", "Contact", "Contact", "The main contact (Contact)", child="Opportunities"),
    _pick(
        "StageName",
        "Sales stage",
        "Prospecting",
        "Qualification",
        "Needs Analysis",
        "Value Proposition",
        "Proposal/Price Quote",
        "Negotiation/Review",
        "Closed Won",
        "Closed Lost",
    ),
    Field("Amount", T.CURRENCY, "Estimated value, in US dollars"),
    Field("CloseDate", T.DATE, "Expected or actual close day"),
    Field("Probability", T.PERCENT, "Likelihood of closing, in percent"),
    _pick("Type", "Kind of deal", "New Customer", "Existing Customer - Upgrade", "Existing Customer - Replacement"),
    _pick("LeadSource", "Where the opportunity came from", "Web", "Phone Inquiry", "Partner Referral", "Other"),
    Field("IsClosed", T.BOOLEAN, "Whether the opportunity is closed"),
    Field("IsWon", T.BOOLEAN, "Whether the opportunity was won"),
    _pick("ForecastCategoryName", "Forecast category", "Pipeline", "Best Case", "Commit", "Omitted", "Closed"),
    _text("NextStep", "The next step in the sale", 255),
    _notes("Notes on the opportunity"),
    _ref("Pricebook2Id", "Pricebook2", "Pricebook2", "The price book (Pricebook2)", child="Opportunities"),
    _owner("The user who owns the opportunity (User)"),
)
LEAD = _standard(
    "Lead",
    "00Q",
    "Lead",
    "A prospect not yet qualified",
    _text("FirstName", "Given name", 40),
    _text("LastName", "Family name", 80),
    _text("Name", "Full name", PERSON_NAME_LENGTH),
    _text("Company", "The prospect's company", 255),
    _text("Title", "Job title", 128),
    Field("Email", T.EMAIL, "Email address"),
    Field("Phone", T.PHONE, "Phone number"),
    _pick(
        "Status",
        "Where the lead stands",
        "Open - Not Contacted",
        "Working - Contacted",
        "Closed - Converted",
        "Closed - Not Converted",
    ),
    _pick("LeadSource", "Where the lead came from", "Web", "Phone Inquiry", "Partner Referral", "Other"),
    _pick("Industry", "The company's industry", *INDUSTRIES),
    _pick("Rating", "How promising the lead is", "Hot", "Warm", "Cold"),
    _text("City", "City", 40),
    _text("State", "State", 80),
    _text("Country", "Country", 80),
    Field("IsConverted", T.BOOLEAN, "Whether the lead was converted"),
    Field("ConvertedDate", T.DATE, "The day the lead was converted"),
    _ref("ConvertedAccountId", "Account", "ConvertedAccount", "The account it became (Account)"),
    _ref("ConvertedContactId", "Contact", "ConvertedContact", "The contact it became (Contact)"),
    _ref("ConvertedOpportunityId", "Opportunity", "ConvertedOpportunity", "The opportunity it became"),
    _notes("Notes on the lead"),
    _owner("The user or queue that owns the lead (User or Group)", queues=True),
)


def _activity(
    name: str, prefix: str, label: str, description: str, child: str, owner: Field, *fields: Field
) -> SObject:
    return _standard(
        name,
        prefix,
        label,
        description,
        # A combobox (a picklist that takes any text too): the Field Reference's Task.Subject and Event.Subject.
        Field("Subject", T.COMBOBOX, "What the activity is about", length=255),
        *fields,
        Field("ActivityDate", T.DATE, "The day of the activity"),
        _pick("Type", "Kind of activity", "Call", "Email", "Meeting", "Other"),
        _notes("Notes on the activity"),
        _ref("WhoId", "Contact", "Who", "The person concerned (Contact or Lead)", child=child, also=("Lead",)),
        _ref(
            "WhatId", "Account", "What", "The record concerned (Account, Case ...)", child=child, also=_ACTIVITY_PARENTS
        ),
        _ref("AccountId", "Account", "Account", "The account of the record concerned (Account)"),
        owner,
    )


TASK = _activity(
    "Task",
    "00T",
    "Task",
    "A to-do item or a logged call",
    "Tasks",
    _owner("The user or queue the task is assigned to (User or Group)", queues=True),
    _pick("Status", "Where the task stands", "Not Started", "In Progress", "Completed", "Deferred"),
    _pick("Priority", "Urgency", "High", "Normal", "Low", length=20),
    Field("IsClosed", T.BOOLEAN, "Whether the task is done"),
    _pick("TaskSubtype", "Task, Email, Call ...", "Task", "Email", "Call", length=40),
    Field("CallDurationInSeconds", T.INTEGER, "Length of a logged call"),
)
EVENT = _activity(
    "Event",
    "00U",
    "Event",
    "A calendar event",
    "Events",
    _owner("The user or public calendar the event belongs to (User or Calendar)", calendars=True),
    Field("StartDateTime", T.DATETIME, "When the event starts (UTC)"),
    Field("EndDateTime", T.DATETIME, "When the event ends (UTC)"),
    Field("ActivityDateTime", T.DATETIME, "When the event starts, for timed events (UTC)"),
    Field("DurationInMinutes", T.INTEGER, "Length of the event"),
    Field("IsAllDayEvent", T.BOOLEAN, "Whether the event lasts all day"),
    _text("Location", "Where the event takes place"),
)
CONTRACT = _standard(
    "Contract",
    "800",
    "Contract",
    "An agreement with a customer",
    _ref("AccountId", "Account", "Account", "The customer (Account)", child="Contracts"),
    _text("ContractNumber", "The contract's number", AUTONUMBER_LENGTH),
    _pick("Status", "Where the contract stands", "Draft", "In Approval Process", "Activated", length=100),
    Field("StartDate", T.DATE, "First day of the contract"),
    Field("EndDate", T.DATE, "Last day of the contract"),
    Field("ContractTerm", T.INTEGER, "Length in months"),
    _ref("Pricebook2Id", "Pricebook2", "Pricebook2", "The price book (Pricebook2)"),
    _notes("Notes on the contract"),
    _owner("The user who owns the contract (User)"),
)
QUOTE = _standard(
    "Quote",
    "0Q0",
    "Quote",
    "A proposed price for an opportunity",
    _text("Name", "Name of the quote"),
    _ref("OpportunityId", "Opportunity", "Opportunity", "The opportunity (Opportunity)", child="Quotes"),
    _ref("AccountId", "Account", "Account", "The account (Account)"),
    _ref("ContactId", "Contact", "Contact", "The contact (Contact)"),
    _text("QuoteNumber", "The quote's number", AUTONUMBER_LENGTH),
    _pick(
        "Status",
        "Where the quote stands",
        "Draft",
        "Needs Review",
        "In Review",
        "Approved",
        "Rejected",
        "Accepted",
        length=40,
    ),
    Field("ExpirationDate", T.DATE, "Last day the quote is valid"),
    Field("Subtotal", T.CURRENCY, "Sum of the lines before discount"),
    Field("Discount", T.PERCENT, "Discount, in percent"),
    Field("TotalPrice", T.CURRENCY, "Total after discount"),
    Field("GrandTotal", T.CURRENCY, "Total with tax and shipping"),
    Field("Email", T.EMAIL, "Contact email"),
    Field("Phone", T.PHONE, "Contact phone"),
    _ref("Pricebook2Id", "Pricebook2", "Pricebook2", "The price book (Pricebook2)"),
    _notes("Notes on the quote"),
    _owner("The user or queue that owns the quote (User or Group)", queues=True),
)
CAMPAIGN = _standard(
    "Campaign",
    "701",
    "Campaign",
    "A marketing campaign",
    _text("Name", "Name of the campaign", 80),
    _pick("Type", "Kind of campaign", "Email", "Webinar", "Advertisement", "Other"),
    _pick("Status", "Where the campaign stands", "Planned", "In Progress", "Completed", "Aborted"),
    Field("StartDate", T.DATE, "First day"),
    Field("EndDate", T.DATE, "Last day"),
    Field("IsActive", T.BOOLEAN, "Whether the campaign runs"),
    Field("BudgetedCost", T.CURRENCY, "Budget"),
    Field("ActualCost", T.CURRENCY, "Cost so far"),
    Field("ExpectedRevenue", T.CURRENCY, "Revenue expected"),
    Field("NumberOfLeads", T.INTEGER, "Leads in the campaign"),
    Field("NumberOfContacts", T.INTEGER, "Contacts in the campaign"),
    _ref("ParentId", "Campaign", "Parent", "The parent campaign (Campaign)", child="ChildCampaigns"),
    _notes("Notes on the campaign"),
    _owner("The user who owns the campaign (User)"),
)
ASSET = _standard(
    "Asset",
    "02i",
    "Asset",
    "A product a customer owns",
    _text("Name", "Name of the asset"),
    _ref("AccountId", "Account", "Account", "The owner (Account)", child="Assets"),
    _ref("ContactId", "Contact", "Contact", "The contact (Contact)", child="Assets"),
    _ref("Product2Id", "Product2", "Product2", "The product (Product2)", child="Assets"),
    _text("SerialNumber", "Serial number", 80),
    _pick("Status", "Where the asset stands", "Purchased", "Shipped", "Installed", "Registered", "Obsolete"),
    Field("PurchaseDate", T.DATE, "The day it was bought"),
    Field("InstallDate", T.DATE, "The day it was installed"),
    Field("UsageEndDate", T.DATE, "Last day of use"),
    Field("Quantity", T.DOUBLE, "Number of units"),
    Field("Price", T.CURRENCY, "Price paid"),
    _notes("Notes on the asset"),
    _owner("The user who owns the asset record (User)"),
)
CASE_COMMENT = _standard(
    "CaseComment",
    "00a",
    "Case Comment",
    "A comment on a case",
    _ref("ParentId", "Case", "Parent", "The case (Case)", child="CaseComments"),
    Field("CommentBody", T.LONG_TEXT, "Text of the comment"),
    Field("IsPublished", T.BOOLEAN, "Whether the customer sees the comment"),
)

#: Standard objects every org has and the CRMArena org leaves empty: known to the engine (queries answer
#: with no rows, describe lists their fields) but not part of the agent's schema text or the generated file.
STANDARD_OBJECTS: tuple[SObject, ...] = (
    GROUP,
    CALENDAR,
    OPPORTUNITY,
    LEAD,
    TASK,
    EVENT,
    CONTRACT,
    QUOTE,
    CAMPAIGN,
    ASSET,
    CASE_COMMENT,
)

_BY_LOWER = MappingProxyType({o.name.lower(): o for o in OBJECTS})
_BY_PREFIX = MappingProxyType({o.key_prefix: o for o in OBJECTS})
_STANDARD_BY_LOWER = MappingProxyType({o.name.lower(): o for o in STANDARD_OBJECTS})


def _children_of(objects: tuple[SObject, ...]) -> dict[str, dict[str, tuple[SObject, Field]]]:
    children: dict[str, dict[str, tuple[SObject, Field]]] = {}
    for child in objects:
        for f in child.references:
            if f.child_relationship is None or f.reference_to is None:
                continue
            for parent in (f.reference_to, *f.polymorphic):  # a task's WhatId: Account.Tasks, Case.Tasks ...
                named = children.setdefault(parent.lower(), {})
                if f.child_relationship.lower() in named:
                    raise ValueError(f"two child relationships of {parent!r} are called {f.child_relationship!r}")
                named[f.child_relationship.lower()] = (child, f)
    return children


_CHILDREN = _children_of(OBJECTS + STANDARD_OBJECTS)


def child_relationships(obj: SObject) -> tuple[tuple[str, SObject, Field], ...]:
    """The parent-to-child relationships of ``obj``: (name, child object, the child's reference field).

    Example:
        >>> [(name, child.name) for name, child, _ in child_relationships(get_object("Order"))]
        [('OrderItems', 'OrderItem'), ('Tasks', 'Task'), ('Events', 'Event')]
    """
    named = _CHILDREN.get(obj.name.lower(), {})
    return tuple((f.child_relationship or "", child, f) for child, f in named.values())


def get_child_relationship(obj: SObject, name: str) -> tuple[SObject, Field] | None:
    """The child object and its reference field behind ``obj``'s child relationship ``name`` (case-insensitive).

    Example:
        >>> child, field = get_child_relationship(get_object("Case"), "emailmessages")
        >>> child.name, field.name
        ('EmailMessage', 'ParentId')
    """
    return _CHILDREN.get(obj.name.lower(), {}).get(name.lower())


def get_object(name: str, *, standard: bool = False) -> SObject | None:
    """The object whose API name is ``name`` (case-insensitive, as SOQL), or None.

    Args:
        name: An object's API name.
        standard: Also look among :data:`STANDARD_OBJECTS` (the empty ones every org has).

    Example:
        >>> get_object("case").name
        'Case'
        >>> get_object("Opportunity") is None, get_object("Opportunity", standard=True).key_prefix
        (True, '006')
    """
    key = name.lower()
    found = _BY_LOWER.get(key)
    if found is None and standard:
        found = _STANDARD_BY_LOWER.get(key)
    return found


def object_for_id(record_id: str) -> SObject | None:
    """The object whose key prefix starts ``record_id``, or None.

    Example:
        >>> object_for_id("500Ws000007qlrjIAA").name
        'Case'
    """
    return _BY_PREFIX.get(record_id[:3])
