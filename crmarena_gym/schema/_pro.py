"""The objects of CRMArena-Pro's two orgs: a B2B software vendor and a B2C vehicle dealership.

PRO.md section 4 lists the 27 objects of Pro's orgs. Eleven are new beside the service org's 16 (Lead,
Opportunity, OpportunityLineItem, Quote, QuoteLineItem, Contract, Task, Event, VoiceCallTranscript__c,
Territory2, UserTerritory2Association); the other 16 are the service org's, derived from
``crmarena_gym.schema._objects`` with each of Pro's differences named once (``derive``): where a company
that sells to firms (or to households) differs from a store: an account is a firm with an industry and a
head count (B2B) or a household (B2C), not a person account; orders have an owner; knowledge articles carry
a visibility flag (internal or public); emails name the record they are about; custom objects get the key
prefixes of Pro's orgs. Case, LiveChatTranscript, Pricebook2, PricebookEntry, OrderItem and
ProductCategoryProduct serve both kinds unchanged.

Field names, types, picklist values and relationship names follow Salesforce's standard objects (the
Object Reference), with the custom fields Pro's dump has (``Opportunity.ContractID__c``) and the ones
PRO.md pins for the rebuild (``Quote.ApprovedCompetingOffer__c``, ``Knowledge__kav.IsVisibleInPkb``,
``Lead.State``). Descriptions are ours. The two kinds share every object and field name (PRO.md 4.2);
they differ in descriptions and in the picklists of what they sell.
"""

from __future__ import annotations

from typing import Any

from crmarena_gym.schema._objects import (
    _ORG_CREATOR,
    _UNDATED,
    ACCOUNT,
    CASE,
    CASE_HISTORY,
    CONTACT,
    EMAIL_MESSAGE,
    INDUSTRIES,
    ISSUE,
    KNOWLEDGE,
    LIVE_CHAT_TRANSCRIPT,
    LONG_TEXT_AREA,
    ORDER,
    ORDER_ITEM,
    PRICEBOOK,
    PRICEBOOK_ENTRY,
    PRODUCT,
    PRODUCT_CATEGORY,
    PRODUCT_CATEGORY_PRODUCT,
    USER,
    _address,
    _audit,
    _autonumber,
    _id,
    _owner,
    _person_name,
    _ref,
)
from crmarena_gym.schema._types import Field, FieldType, SObject, declare, derive

T = FieldType

#: Opportunity stages of Pro's orgs, in the order a sale moves through them (PRO.md 3.2: there is no
#: "Closed Won"; a closed opportunity has a signed contract).
OPPORTUNITY_STAGES = ("Qualification", "Discovery", "Quote", "Negotiation", "Closed")
#: The probability (percent) each stage stands for.
STAGE_PROBABILITY = {"Qualification": 10.0, "Discovery": 25.0, "Quote": 50.0, "Negotiation": 75.0, "Closed": 100.0}
#: Salesforce's standard Lead.Status values.
LEAD_STATUSES = ("Open - Not Contacted", "Working - Contacted", "Closed - Converted", "Closed - Not Converted")
#: Salesforce's standard Quote.Status values.
QUOTE_STATUSES = ("Draft", "Needs Review", "In Review", "Approved", "Rejected", "Presented", "Accepted", "Denied")
#: Salesforce's standard Contract.Status values.
CONTRACT_STATUSES = ("Draft", "In Approval Process", "Activated")
#: Salesforce's standard Task.Status and Task.Priority values.
TASK_STATUSES = ("Not Started", "In Progress", "Completed", "Waiting on someone else", "Deferred")
TASK_PRIORITIES = ("High", "Normal", "Low")
ACTIVITY_TYPES = ("Call", "Email", "Meeting", "Other")
LEAD_SOURCES = ("Web", "Phone Inquiry", "Partner Referral", "Purchased List", "Trade Show", "Other")
ACCOUNT_TYPES = (
    "Prospect",
    "Customer - Direct",
    "Customer - Channel",
    "Channel Partner / Reseller",
    "Installation Partner",
    "Technology Partner",
    "Other",
)
OPPORTUNITY_TYPES = (
    "New Customer",
    "Existing Customer - Upgrade",
    "Existing Customer - Replacement",
    "Existing Customer - Downgrade",
)
TERRITORY_ROLES = ("Sales Representative", "Territory Manager")
#: Product families, by org kind.
PRODUCT_FAMILIES = {
    "b2b": ("Chip Design", "Simulation", "PCB Design", "Verification", "Security", "Services"),
    "b2c": ("Vehicle", "Option Package", "Accessory", "Protection Plan", "Maintenance Plan", "Financing"),
}
# What a task or an event may be about (WhatId) besides an opportunity, what Pro's activities mostly name.
_ACTIVITY_WHAT_ALSO = ("Account", "Case", "Contract", "Quote", "Order", "Asset", "Campaign")

_OWNER_CREATED = '"OwnerId"'


def _stamped(created_by: str = _OWNER_CREATED, modified: str = '"CreatedDate"') -> tuple[Field, ...]:
    """A stored CreatedDate, then the audit fields every org has, computed (left out of the schema text)."""
    return (Field("CreatedDate", T.DATETIME, "When the record was created (UTC)"), *_audit(None, modified, created_by))


def _pick(name: str, description: str, values: tuple[str, ...], length: int = 255) -> Field:
    # A standard picklist's length is the Field Reference's: 255 for most (LeadSource, Industry, Type, StageName,
    # a lead's or a task's Status ...), less for a few (Task.Priority 20, Quote.Status 40, Contract.Status 100).
    return Field(name, T.PICKLIST, description, picklist_values=values, length=length)


def _notes(description: str) -> Field:
    """A record's ``Description``: Salesforce's standard long text area (32,000 characters), searchable."""
    return Field("Description", T.LONG_TEXT, description, searchable=True, length=LONG_TEXT_AREA)


def _lead(kind: str) -> SObject:
    b2b = kind == "b2b"
    return SObject(
        "Lead",
        "00Q",
        "Lead",
        "A prospective buyer not yet qualified; converting a lead makes an account, a contact and an opportunity",
        (
            _id("lead"),
            *_person_name(""),
            Field(
                "Company",
                T.STRING,
                "The prospect's company" if b2b else "The prospect's company, for business buyers (mostly empty)",
                searchable=True,
                length=255,
            ),
            Field("Title", T.STRING, "The prospect's job title", searchable=True, length=128),
            Field("Email", T.EMAIL, "Email address", searchable=True, length=80),
            Field("Phone", T.PHONE, "Phone number", searchable=True, length=40),
            _pick("Status", "Where the lead stands", LEAD_STATUSES),
            _pick("LeadSource", "Where the lead came from", LEAD_SOURCES),
            _pick("Industry", "The prospect company's industry", INDUSTRIES),
            _pick("Rating", "How promising the lead looks", ("Hot", "Warm", "Cold")),
            Field("NumberOfEmployees", T.INTEGER, "Head count of the prospect's company"),
            _address("", "City", "City"),
            _address("", "State", "Two-letter US state: the lead's region"),
            _address("", "Country", "Country"),
            Field(
                "IsConverted", T.BOOLEAN, "Whether the lead was converted (into an account, contact and opportunity)"
            ),
            Field("ConvertedDate", T.DATE, "The day the lead was converted; empty while it is not"),
            _ref("ConvertedAccountId", "Account", "ConvertedAccount", "The account the lead became (Account)"),
            _ref("ConvertedContactId", "Contact", "ConvertedContact", "The contact the lead became (Contact)"),
            _ref(
                "ConvertedOpportunityId",
                "Opportunity",
                "ConvertedOpportunity",
                "The opportunity the lead became (Opportunity)",
            ),
            _notes("Notes on the lead"),
            _owner("The sales representative who owns the lead (User)", queues=True),
            *_stamped(),
        ),
    )


def _opportunity(kind: str) -> SObject:
    b2b = kind == "b2b"
    return SObject(
        "Opportunity",
        "006",
        "Opportunity",
        "A potential sale to an account, moving through the sales stages"
        if b2b
        else "A potential vehicle sale to a household, moving through the sales stages",
        (
            _id("opportunity"),
            Field("Name", T.STRING, "Name of the opportunity", searchable=True, name_field=True, length=120),
            _notes("Notes on the opportunity"),
            _ref("AccountId", "Account", "Account", "The account buying (Account)", child="Opportunities"),
            _ref("ContactId", "Contact", "Contact", "The main contact of the sale (Contact)", child="Opportunities"),
            _pick(
                "StageName",
                "The sales stage, in order: Qualification, Discovery, Quote, Negotiation, Closed",
                OPPORTUNITY_STAGES,
            ),
            # A percent, as the Field Reference types Opportunity.Probability and QuoteLineItem.Discount: a number.
            Field("Probability", T.PERCENT, "Likelihood of closing, in percent (follows the stage)"),
            Field("Amount", T.CURRENCY, "Value of the sale: the sum of its line items' total prices, in US dollars"),
            Field("CloseDate", T.DATE, "The day the sale closed, or is expected to close"),
            _pick("Type", "Kind of deal", OPPORTUNITY_TYPES),
            _pick("LeadSource", "Where the opportunity came from", LEAD_SOURCES),
            Field("NextStep", T.STRING, "The next step in the sale", length=255),
            _ref(
                "Pricebook2Id",
                "Pricebook2",
                "Pricebook2",
                "The price book of its products (Pricebook2)",
                child="Opportunities",
            ),
            _ref(
                "ContractID__c",
                "Contract",
                "ContractID__r",
                "The contract signed for the sale (Contract); empty until one is signed",
                child="Opportunities__r",
            ),
            _owner("The sales representative who owns the opportunity (User)"),
            Field(
                "IsClosed",
                T.BOOLEAN,
                "Whether the opportunity is closed",
                formula="IFNULL(\"StageName\" = 'Closed', 0)",
                extra=True,
            ),
            Field(
                "IsWon",
                T.BOOLEAN,
                "Whether the opportunity was won (closed with a contract)",
                formula="IFNULL(\"StageName\" = 'Closed', 0)",
                extra=True,
            ),
            *_stamped(),
        ),
    )


_LINE_DAY = '(SELECT CreatedDate FROM [Opportunity] WHERE Id = "OpportunityId")'


def _opportunity_line_item() -> SObject:
    return SObject(
        "OpportunityLineItem",
        "00k",
        "Opportunity Product",
        "One product line of an opportunity: a product, a quantity and the agreed price",
        (
            _id("opportunity product"),
            _ref(
                "OpportunityId",
                "Opportunity",
                "Opportunity",
                "The opportunity (Opportunity)",
                child="OpportunityLineItems",
            ),
            _ref("Product2Id", "Product2", "Product2", "The product (Product2)"),
            _ref(
                "PricebookEntryId",
                "PricebookEntry",
                "PricebookEntry",
                "The price book entry the line is priced from (PricebookEntry)",
                child="OpportunityLineItems",
            ),
            Field("Quantity", T.DOUBLE, "Number of units"),
            Field("UnitPrice", T.CURRENCY, "Sales price of one unit, in US dollars (the agreed price)"),
            Field("ListPrice", T.CURRENCY, "List price of one unit, in US dollars (from the price book)"),
            Field("TotalPrice", T.CURRENCY, "Quantity times sales price, in US dollars"),
            Field("ServiceDate", T.DATE, "The day the product is delivered or the service starts"),
            # The Field Reference's line Description is a string of 255 (not a text area), as a quote line's.
            Field("Description", T.STRING, "Notes on the line", length=255),
            *_audit(_LINE_DAY, _LINE_DAY, _ORG_CREATOR),
        ),
    )


# Quote roll-ups, as Salesforce computes them from the lines (unquoted names belong to the subquery).
_QUOTE_SUBTOTAL = '(SELECT IFNULL(SUM(Quantity * UnitPrice), 0) FROM [QuoteLineItem] WHERE QuoteId = "Id")'
_QUOTE_TOTAL = '(SELECT IFNULL(SUM(TotalPrice), 0) FROM [QuoteLineItem] WHERE QuoteId = "Id")'
_QUOTE_LINES = '(SELECT COUNT(*) FROM [QuoteLineItem] WHERE QuoteId = "Id")'


def _quote() -> SObject:
    return SObject(
        "Quote",
        "0Q0",
        "Quote",
        "A priced proposal for an opportunity: its lines, discounts and status",
        (
            _id("quote"),
            Field("Name", T.STRING, "Name of the quote", searchable=True, name_field=True, length=255),
            _ref("OpportunityId", "Opportunity", "Opportunity", "The opportunity quoted (Opportunity)", child="Quotes"),
            _ref("AccountId", "Account", "Account", "The account quoted (Account)", child="Quotes"),
            _ref("ContactId", "Contact", "Contact", "The contact the quote is for (Contact)", child="Quotes"),
            _pick("Status", "Where the quote stands ('Accepted' once the customer accepts it)", QUOTE_STATUSES, 40),
            Field("ExpirationDate", T.DATE, "Last day the quote is valid"),
            _notes("Notes on the quote"),
            Field(
                "ApprovedCompetingOffer__c",
                T.BOOLEAN,
                "Whether a manager approved pricing the quote against a competitor's offer",
            ),
            _ref(
                "Pricebook2Id", "Pricebook2", "Pricebook2", "The price book of its lines (Pricebook2)", child="Quotes"
            ),
            Field("Email", T.EMAIL, "Email of the contact the quote is for", searchable=True, length=80),
            Field("Phone", T.PHONE, "Phone of the contact the quote is for", searchable=True, length=40),
            _owner("The sales representative who prepared the quote (User)", queues=True),
            Field(
                "Subtotal",
                T.CURRENCY,
                "Sum of the lines' quantity times sales price, before discounts",
                formula=_QUOTE_SUBTOTAL,
            ),
            Field("TotalPrice", T.CURRENCY, "Sum of the lines' total prices, after discounts", formula=_QUOTE_TOTAL),
            Field("GrandTotal", T.CURRENCY, "Total of the quote (no tax or shipping is charged)", formula=_QUOTE_TOTAL),
            Field("LineItemCount", T.INTEGER, "Number of lines", formula=_QUOTE_LINES),
            _autonumber("QuoteNumber", "The quote's number, in the order quotes were made", 1),
            *_stamped(),
        ),
    )


_QUOTE_LINE_DAY = '(SELECT CreatedDate FROM [Quote] WHERE Id = "QuoteId")'


def _quote_line_item() -> SObject:
    return SObject(
        "QuoteLineItem",
        "0QL",
        "Quote Line Item",
        "One product line of a quote: quantity, sales price and discount",
        (
            _id("quote line"),
            _ref("QuoteId", "Quote", "Quote", "The quote (Quote)", child="QuoteLineItems"),
            _ref(
                "OpportunityLineItemId",
                "OpportunityLineItem",
                "OpportunityLineItem",
                "The opportunity product the line quotes (OpportunityLineItem)",
            ),
            _ref("Product2Id", "Product2", "Product2", "The product (Product2)"),
            _ref(
                "PricebookEntryId",
                "PricebookEntry",
                "PricebookEntry",
                "The price book entry the line is priced from (PricebookEntry)",
                child="QuoteLineItems",
            ),
            Field("Quantity", T.DOUBLE, "Number of units"),
            Field("UnitPrice", T.CURRENCY, "Sales price of one unit, in US dollars"),
            Field("ListPrice", T.CURRENCY, "List price of one unit, in US dollars"),
            Field("Discount", T.PERCENT, "Discount on the line, in percent (10 means 10%)"),
            Field(
                "Subtotal",
                T.CURRENCY,
                "Quantity times sales price, before the discount",
                formula='"Quantity" * "UnitPrice"',
            ),
            Field("TotalPrice", T.CURRENCY, "Quantity times sales price, less the discount, in US dollars"),
            Field("Description", T.STRING, "Notes on the line", length=255),
            # The Field Reference's QuoteLineItem.LineNumber is 255 long, where other auto-numbers are 30.
            _autonumber("LineNumber", "The line's number, in the order lines were entered", 1, length=255),
            *_audit(_QUOTE_LINE_DAY, _QUOTE_LINE_DAY, _ORG_CREATOR),
        ),
    )


def _contract() -> SObject:
    return SObject(
        "Contract",
        "800",
        "Contract",
        "A signed agreement with an account; a closed opportunity names its contract",
        (
            _id("contract"),
            _ref("AccountId", "Account", "Account", "The account (Account)", child="Contracts"),
            _pick("Status", "Where the contract stands ('Activated' once in force)", CONTRACT_STATUSES, 100),
            Field("StartDate", T.DATE, "First day of the contract"),
            Field("EndDate", T.DATE, "Last day of the contract"),
            Field("ContractTerm", T.INTEGER, "Length of the contract, in months"),
            Field("CustomerSignedDate", T.DATE, "The day the customer signed"),
            _ref(
                "CustomerSignedId",
                "Contact",
                "CustomerSigned",
                "The customer's signatory (Contact)",
                child="ContractsSigned",
            ),
            Field("CustomerSignedTitle", T.STRING, "Job title of the customer's signatory", length=40),
            Field("CompanySignedDate", T.DATE, "The day our company signed: the day the sale was won"),
            _ref("CompanySignedId", "User", "CompanySigned", "Our signatory (User)"),
            _notes("Notes on the contract"),
            _ref("Pricebook2Id", "Pricebook2", "Pricebook2", "The price book of the contract (Pricebook2)"),
            _owner("The sales representative who owns the contract (User)"),
            _autonumber("ContractNumber", "The contract's number, in the order contracts were made", 100),
            *_stamped(),
        ),
    )


def _activity_fields(child: str, owner: Field) -> tuple[Field, ...]:
    return (
        _ref(
            "WhatId",
            "Opportunity",
            "What",
            "The record the activity is about: mostly an opportunity (Opportunity, Account, Case, Contract, Quote ...)",
            child=child,
            also=_ACTIVITY_WHAT_ALSO,
        ),
        _ref("WhoId", "Contact", "Who", "The person concerned (Contact or Lead)", child=child, also=("Lead",)),
        _ref("AccountId", "Account", "Account", "The account of the record the activity is about (Account)"),
        owner,
    )


def _task() -> SObject:
    return SObject(
        "Task",
        "00T",
        "Task",
        "A to-do item of a sale or a case: what to do, for which record, and where it stands",
        (
            _id("task"),
            Field("Subject", T.COMBOBOX, "What the task is", searchable=True, name_field=True, length=255),
            _pick("Status", "Where the task stands", TASK_STATUSES),
            _pick("Priority", "Urgency of the task", TASK_PRIORITIES, 20),
            Field("ActivityDate", T.DATE, "The day the task is due"),
            _notes("Details of the task"),
            _pick("Type", "Kind of activity", ACTIVITY_TYPES),
            _pick("TaskSubtype", "Whether the task is a to-do, an email or a call", ("Task", "Email", "Call"), 40),
            # A queue may own a task (Task.OwnerId refers to Group, User); Pro's tasks are all assigned to users.
            *_activity_fields("Tasks", _owner("The employee the activity is assigned to (User)", queues=True)),
            Field(
                "IsClosed",
                T.BOOLEAN,
                "Whether the task is done",
                formula="IFNULL(\"Status\" = 'Completed', 0)",
                extra=True,
            ),
            *_stamped(),
        ),
    )


def _event() -> SObject:
    return SObject(
        "Event",
        "00U",
        "Event",
        "A meeting or call on the calendar: a demo, a site visit, a review",
        (
            _id("event"),
            Field("Subject", T.COMBOBOX, "What the event is", searchable=True, name_field=True, length=255),
            Field("StartDateTime", T.DATETIME, "When the event starts (UTC)"),
            Field("EndDateTime", T.DATETIME, "When the event ends (UTC)"),
            Field("ActivityDate", T.DATE, "The day of the event"),
            Field("DurationInMinutes", T.INTEGER, "Length of the event, in minutes"),
            Field("IsAllDayEvent", T.BOOLEAN, "Whether the event lasts all day"),
            Field("Location", T.STRING, "Where the event takes place", searchable=True, length=255),
            _notes("Agenda and notes"),
            _pick("Type", "Kind of activity", ACTIVITY_TYPES),
            # A public or resource calendar may own an event (Event.OwnerId refers to Calendar, User), never a queue.
            *_activity_fields("Events", _owner("The employee the activity is assigned to (User)", calendars=True)),
            Field(
                "ActivityDateTime",
                T.DATETIME,
                "When the event starts (UTC), as StartDateTime",
                formula='"StartDateTime"',
                extra=True,
            ),
            *_stamped(),
        ),
    )


def _voice_call() -> SObject:
    return SObject(
        "VoiceCallTranscript__c",
        "a05",
        "Voice Call Transcript",
        "The transcript of a sales call with a lead or about an opportunity",
        (
            _id("call transcript"),
            Field(
                "Name",
                T.STRING,
                "The call's number, in the order calls were logged",
                formula="'VC-' || printf('%06d', \"rowid\")",
                name_field=True,
                autonumber=True,
            ),
            _ref(
                "OpportunityId__c",
                "Opportunity",
                "OpportunityId__r",
                "The opportunity the call is about (Opportunity); empty for a call with a lead",
                child="VoiceCallTranscripts__r",
            ),
            _ref(
                "LeadId__c",
                "Lead",
                "LeadId__r",
                "The lead the call is with (Lead); empty for a call about an opportunity",
                child="VoiceCallTranscripts__r",
            ),
            Field(
                "Body__c",
                T.LONG_TEXT,
                "Every utterance, one per line: [YYYY-MM-DDTHH:MM:SS] Full Name: text",
                searchable=True,
            ),
            Field("EndTime__c", T.DATETIME, "When the call ended (UTC)"),
            _owner("The sales representative on the call (User)", queues=True),  # a custom object: queues may own it
            *_stamped(),
        ),
    )


def _territory() -> SObject:
    return SObject(
        "Territory2",
        "0MI",
        "Territory",
        "A sales territory: the states it covers and, through its user associations, its representatives",
        (
            _id("territory"),
            Field("Name", T.STRING, "Name of the territory", searchable=True, name_field=True, length=80),
            Field("DeveloperName", T.STRING, "Unique API name of the territory", length=80),
            # The Field Reference's Territory2.Description is a string of 1,000 (not a text area).
            Field(
                "Description",
                T.STRING,
                "The two-letter US states the territory covers, comma-separated",
                searchable=True,
                length=1000,
            ),
            *_UNDATED,
        ),
    )


def _user_territory() -> SObject:
    return SObject(
        "UserTerritory2Association",
        "0R0",
        "User Territory Association",
        "Assigns a sales representative to a territory",
        (
            _id("territory assignment"),
            _ref("UserId", "User", "User", "The representative (User)", child="UserTerritory2Associations"),
            _ref(
                "Territory2Id",
                "Territory2",
                "Territory2",
                "The territory (Territory2)",
                child="UserTerritory2Associations",
            ),
            _pick("RoleInTerritory2", "The representative's role in the territory", TERRITORY_ROLES),
            Field("IsActive", T.BOOLEAN, "Whether the assignment is in force"),
            *_UNDATED,
        ),
    )


# -- the service org's objects, as Pro's kinds have them ------------------------------------------------------
# Each is the service object (crmarena_gym.schema._objects) with Pro's differences named once: what is not
# named (types, lengths, relationships, delete rules, write facts, column order) is the service object's.
# Many differences are only wording: descriptions written for a software vendor or a dealership.


def _user() -> SObject:
    return derive(
        USER,
        description="An employee: a sales representative who works leads and opportunities, or a service agent",
        # Pro's users are sales representatives and service agents: their title tells the roles apart.
        after={
            "Username": (
                Field(
                    "Title", T.STRING, "The employee's job title (Account Executive, Support Engineer ...)", length=80
                ),
            )
        },
    )


def _account(kind: str) -> SObject:
    b2b = kind == "b2b"
    return derive(
        ACCOUNT,
        description="A customer company (or a prospect) that buys from us"
        if b2b
        else "A customer household: the person or family that buys vehicles and services from the dealership",
        # A business account, not a person account (PRO.md 4.1: a firm with an industry and a head count; in
        # B2C a household named after its main buyer): no person fields, a Name of its own.
        drop=("FirstName", "LastName", "PersonEmail", "RecordTypeId", "IsPersonAccount"),
        replace_fields=(
            Field(
                "Name",
                T.STRING,
                "The company's name" if b2b else "The household's name (the main buyer's full name)",
                searchable=True,
                name_field=True,
                length=255,
            ),
            # Pro's accounts come into being over the years (a converted lead makes one), so each stores its
            # CreatedDate and its owner created it; the service org's all date from the org's start.
            *_stamped(),
        ),
        # Worded for a firm or a household, where the service org speaks of a person.
        descriptions={
            "Id": "Unique 18-character record id of the account",
            "Phone": "Main phone number",
            "ShippingCity": "City deliveries go to",
            "ShippingState": "Two-letter US state deliveries go to",
        },
        # Sales needs what the service org never stored: the firm's profile, a full address and an owner.
        after={
            "Name": (
                _pick("Type", "The relationship with us (a prospect, a direct customer, a partner)", ACCOUNT_TYPES),
                _pick(
                    "Industry",
                    "The company's industry" if b2b else "The buyer's industry, for business buyers (mostly empty)",
                    INDUSTRIES,
                ),
                Field(
                    "NumberOfEmployees",
                    T.INTEGER,
                    "Head count of the company" if b2b else "Head count, for business buyers (mostly empty)",
                ),
                Field("AnnualRevenue", T.CURRENCY, "The company's yearly revenue, in US dollars (when known)"),
            ),
            "Phone": (
                Field("Website", T.URL, "Web address", searchable=True, length=255),
                _notes("Notes on the account"),
                _address("Shipping", "Street", "Street address deliveries go to"),
            ),
            "ShippingState": (
                _address("Shipping", "PostalCode", "ZIP code deliveries go to"),
                _address("Shipping", "Country", "Country deliveries go to"),
                _owner("The sales representative who owns the account (User)"),
            ),
        },
    )


def _contact(kind: str) -> SObject:
    b2b = kind == "b2b"
    return derive(
        CONTACT,
        description="A person at a customer company: a buyer, a user or a decision maker"
        if b2b
        else "The person behind a customer household, who buys and opens cases",
        # Stored CreatedDate, as an account's: Pro's contacts come with their accounts over the years.
        replace_fields=_stamped(),
        # Worded for a person at a firm, owned by a sales representative rather than a service agent.
        descriptions={
            "FirstName": "Given name",
            "LastName": "Family name",
            "Name": "Full name (first and last)",
            "Email": "Email address",
            "AccountId": "The account the contact belongs to (Account)",
            "OwnerId": "The sales representative who owns the contact record (User)",
        },
        # A buyer at a firm: role, phone, mailing address and where the sale found them.
        after={
            "Name": (
                Field("Title", T.STRING, "Job title" if b2b else "Job title (when given)", searchable=True, length=128),
                Field(
                    "Department",
                    T.STRING,
                    "Department within the company" if b2b else "Department (when given)",
                    length=80,
                ),
            ),
            "Email": (
                Field("Phone", T.PHONE, "Phone number", searchable=True, length=40),
                _address("Mailing", "City", "City of the contact's mailing address"),
                _address("Mailing", "State", "Two-letter US state of the contact's mailing address"),
            ),
            "AccountId": (_pick("LeadSource", "Where the contact first came from", LEAD_SOURCES),),
        },
    )


def _product(kind: str) -> SObject:
    return derive(
        PRODUCT,
        description="A software product, licence or service we sell"
        if kind == "b2b"
        else "Something the dealership sells: a vehicle, an option package, an accessory, a plan",
        # Worded for what a vendor or a dealership sells, not for a store's shelves.
        descriptions={
            "Name": "Product name",
            "Description": "What the product is and does",
            "IsActive": "Whether the product can be sold now",
            "External_ID__c": "Key of the product in the catalog system",
        },
        # Salesforce's standard code and family: quote rules and the catalog group products by line.
        after={
            "Name": (Field("ProductCode", T.STRING, "The product's code", searchable=True, length=255),),
            "Description": (_pick("Family", "The product line", PRODUCT_FAMILIES[kind]),),
        },
    )


def _product_category(kind: str) -> SObject:
    return derive(
        PRODUCT_CATEGORY,
        description="A section of the product catalog" if kind == "b2b" else "A section of the dealership's catalog",
    )


def _order(kind: str) -> SObject:
    return derive(
        ORDER,
        description="A customer's purchase, made of order products"
        if kind == "b2b"
        else "A household's purchase: a delivered vehicle and what came with it",
        descriptions={"AccountId": "The account that placed the order (Account)"},  # a firm or a household
        # Pro's orders have an owner (PRO.md 4.1), who is also the one who created and last changed them.
        after={"Pricebook2Id": (_owner("The employee who owns the order (User)", queues=True),)},
        change={"CreatedById": {"formula": _OWNER_CREATED}, "LastModifiedById": {"formula": _OWNER_CREATED}},
    )


def _knowledge() -> SObject:
    return derive(
        KNOWLEDGE,
        description="A knowledge article: product facts, pricing and ordering policies, issue resolutions, "
        "competitor notes",
        # PRO.md 4.1 pins a visibility flag: the confidentiality tasks tell internal articles from public ones.
        after={
            "Language": (
                Field(
                    "IsVisibleInPkb",
                    T.BOOLEAN,
                    "Whether customers may read the article (the public knowledge base); false: for employees only",
                ),
            )
        },
    )


def _email_message() -> SObject:
    # Pro's dump has RelatedToId beside ParentId: the record an email is about (a case, or a sale's record).
    related = _ref(
        "RelatedToId",
        "Case",
        "RelatedTo",
        "The record the email is about: its case, or an opportunity, a quote, an account ...",
        child="Emails",
        also=("Opportunity", "Quote", "Account", "Contract", "Order"),
    )
    return derive(EMAIL_MESSAGE, after={"ParentId": (related,)})


def pro_objects(kind: str) -> tuple[SObject, ...]:
    """The 27 objects of Pro's ``kind`` org ('b2b' or 'b2c'), each parent before its children.

    Example:
        >>> [o.name for o in pro_objects("b2b")][:4]
        ['User', 'Account', 'Contact', 'ProductCategory']
        >>> len(pro_objects("b2c"))
        27
    """
    if kind not in PRODUCT_FAMILIES:
        raise ValueError(f"Pro's org kinds are 'b2b' and 'b2c', got {kind!r}")
    facts = _write_facts(kind)
    return tuple(declare(o, **facts[o.name]) if o.name in facts else o for o in _objects(kind))


def _write_facts(kind: str) -> dict[str, dict[str, Any]]:
    """Salesforce's write facts of Pro's objects and fields beyond the service org's (the Object Reference).

    Required fields are the standard ones (nillable, no default); a B2C org has person accounts, where a
    lead without a company converts to a household, so only a B2B lead needs ``Company``. Deleting an
    account takes its contacts, opportunities, contracts and activities with it (cases and orders refuse
    it, as in the service org); an opportunity takes its products, quotes and activities, a quote its
    lines; a price book entry on an opportunity or a quote cannot be deleted. The conversion fields of a
    lead and the account of an activity or a quote (that of the record it is about) are the org's to
    set; a line stays on its opportunity or quote, with its price book entry.
    """
    activity = {"readonly": ("AccountId",), "on_delete": {"WhatId": "cascade", "WhoId": "cascade"}}
    return {
        # The service objects Pro derives keep their write facts; these are the facts of what Pro adds.
        "Account": {"required": ("Name",)},  # a business account's own Name, where a person account has LastName
        "Knowledge__kav": {"defaults": {"IsVisibleInPkb": False}},
        "Lead": {
            "required": ("LastName", "Company") if kind == "b2b" else ("LastName",),
            "defaults": {"Status": LEAD_STATUSES[0], "IsConverted": False},
            "readonly": (
                "IsConverted",
                "ConvertedDate",
                "ConvertedAccountId",
                "ConvertedContactId",
                "ConvertedOpportunityId",
            ),
        },
        "Contract": {
            "required": ("AccountId",),
            "defaults": {"Status": "Draft"},
            "on_delete": {"AccountId": "cascade"},
        },
        "Opportunity": {
            "required": ("Name", "StageName", "CloseDate"),
            "on_delete": {"AccountId": "cascade"},
        },
        "OpportunityLineItem": {
            "required": ("OpportunityId", "PricebookEntryId", "Quantity"),
            "readonly": ("ListPrice",),
            "create_only": ("OpportunityId", "PricebookEntryId", "Product2Id"),
            "on_delete": {"OpportunityId": "cascade", "PricebookEntryId": "restrict"},
        },
        "Quote": {
            "required": ("Name", "OpportunityId"),
            "defaults": {"Status": "Draft", "ApprovedCompetingOffer__c": False},
            "readonly": ("AccountId",),
            "on_delete": {"OpportunityId": "cascade"},
        },
        "QuoteLineItem": {
            "required": ("QuoteId", "PricebookEntryId", "Quantity", "UnitPrice"),
            "readonly": ("ListPrice", "TotalPrice"),
            "create_only": ("QuoteId", "PricebookEntryId", "Product2Id"),
            "on_delete": {"QuoteId": "cascade", "PricebookEntryId": "restrict"},
        },
        "Task": {
            **activity,
            "defaults": {"Status": TASK_STATUSES[0], "Priority": "Normal", "TaskSubtype": "Task"},
            "create_only": ("TaskSubtype",),
        },
        "Event": {**activity, "defaults": {"IsAllDayEvent": False}},
        "Territory2": {"required": ("Name", "DeveloperName")},
        "UserTerritory2Association": {
            "required": ("UserId", "Territory2Id"),
            "defaults": {"IsActive": True},
            "on_delete": {"Territory2Id": "cascade"},
        },
    }


def _objects(kind: str) -> tuple[SObject, ...]:
    return (
        _user(),
        _account(kind),
        _contact(kind),
        _product_category(kind),
        _product(kind),
        PRODUCT_CATEGORY_PRODUCT,
        PRICEBOOK,
        PRICEBOOK_ENTRY,
        _order(kind),
        ORDER_ITEM,
        # Pro's dumps give the custom objects key prefixes of their own (PRO.md 4.1: a03 Issue__c).
        derive(ISSUE, key_prefix="a03"),
        CASE,
        derive(CASE_HISTORY, key_prefix="a04"),
        _email_message(),
        LIVE_CHAT_TRANSCRIPT,
        _knowledge(),
        _lead(kind),
        _contract(),
        _opportunity(kind),
        _opportunity_line_item(),
        _quote(),
        _quote_line_item(),
        _task(),
        _event(),
        _voice_call(),
        _territory(),
        _user_territory(),
    )
