"""Seeded perturbations of a generated org: transforms from one org file to a new one, recorded in its manifest.

A perturbation is a transform over a generated org, never a generator of its own: :func:`perturb_org` copies
a base org file, applies each :class:`Perturbation` in order (each from its own seed and strength), and
writes a new manifest that records the base org's content hash and every transform applied, with the new
content hash. The same base org and the same perturbations always give the same rows.

Kinds (what each does at strength ``s`` in ``(0, 1]``):

- ``schema_drift``: what an admin's changes do to a schema, only as Salesforce allows them. A share ``s`` of the
  eligible fields (stored, neither an Id, a reference nor an audit field) change: a custom field gets a new API name
  (``FAQ_Answer__c`` becomes ``FAQ_Answer_Value__c``), and the old name is refused (``INVALID_FIELD``). Custom is
  what the schema says (``Field.custom``): a ``__c`` field, or one the original org's dump names without the suffix
  (``Case.Channel``, which the live org calls ``Channel__c``: it becomes ``Channel_Value__c``). A standard field,
  whose API name Salesforce never lets an admin change, is *migrated* instead, as admins retire one: a new custom
  field (``ShippingState`` gets ``Shipping_State__c``) holds its values, and the standard field stays in the schema
  (describe, SOQL, SOSL, the schema text), valid to query but no longer maintained: every value cleared (NULL), its
  description in the schema text saying it is deprecated and naming the field that replaced it (``DEPRECATED,
  replaced by Shipping_State__c: ...``). Only a standard field that can stay empty for good is migrated (the rule,
  :func:`_migratable`, reads the schema's field declarations): never a required one (``Name``, ``StageName``,
  ``LastName``), a checkbox (never null on Salesforce), one the org fills itself (a create's default: ``Status``,
  ``Priority``; read-only, create-only or auto-number; one its automation writes, ``schema.ORG_MAINTAINED``: a
  stage's ``Probability``), a record name SOSL's ``IN NAME FIELDS`` searches (``Subject``), an External ID, a field
  holding record ids (``RecordTypeId``) or one a formula is computed from (``FirstName``, part of ``Name``). Also a
  share ``s`` of the objects get a new custom field with values, and each custom object is renamed with probability
  ``s`` (``Issue__c`` becomes ``Support_Issue__c``; ``INVALID_TYPE`` for the old name).

  Storage: the rows stay in their tables and every value in its column, so gold is unchanged: a renamed field
  and a migrated field's replacement read the old column; a migrated standard field reads a new, empty column
  of its own (``ShippingState__deprecated``, no field name), as an emptied field reads on a real org (a later
  transform that rewrites values, ``dirty_values``, writes the column, so the maintained field). The
  manifest records the renames (``renamed``, ``objects``), migrations (``migrated``: standard name -> custom
  name) and additions (``added``); ``manifest_schema`` rebuilds the drifted schema from them. The
  environment's task functions are the org's maintained API and follow the drift: they query through the drift
  map (``Org.declared``, the org under its kind's declared names, where a migrated field's declared name reads
  its replacement's values), as an admin's change keeps a maintained integration working. An agent's own SOQL
  and SOSL must use the org's names, read from the schema text or describe (the oracles read them so:
  ``crmarena_gym.tasks.SchemaNames``): an agent that hard-codes a renamed custom field's old name gets an
  error, one that hard-codes a migrated standard field gets NULLs (wrong answers, as on a real org).

- ``distractors``: near-duplicate records that no gold reads. For a share ``s`` of the accounts (drawn by the
  seed) a look-alike account in the same city and state: the service org's person account under the same name
  with another email address, the B2C org's household under the same name with another phone number, a B2B
  company with its name as a rep would re-enter it (``Acme Robotics Inc.``) and another phone number; with no
  orders, cases or deals, and its contacts (the same names, other emails, the same owner). For a share ``s`` of
  the products a look-alike product (the same name with a model-year or edition suffix, other external id and
  product code, inactive) on no order. For a share ``s`` of the cases a duplicate (the customer wrote again: the
  same subject, description, contact and account, 5 minutes to 6 hours later) that web-to-case left ``New`` with
  the API user (the org's first user), no order line and no issue, so no closure, handle time, transfer, product
  or issue count includes it. Ids continue each object's numbering.
- ``dirty_values``: values written as a careless org holds them, each at rate ``s``: leading or trailing
  whitespace on account names and contact last names, upper- or lower-cased emails and shipping states (the
  states are read by the best-region gold: an instance whose gold this moves is dropped by the task layer),
  ``#``-prefixed external product ids, missing phone numbers (an optional value no gold reads), and dates
  written as text. A Salesforce date field holds a date and the API answers it in ISO 8601 whatever the
  user's locale, so a "date as a string" cannot be faked there faithfully; it lives where people type dates:
  the case description gets the day the customer first wrote, in a hand-written form (``03/14/2021``,
  ``14.03.2021``, ``14 Mar 2021``, ``March 14, 2021``). The instances whose planted label rests on a
  rewritten case (policy violations) are dropped as ``inputs changed``.
- ``knowledge_drift``: a share ``s`` of the knowledge articles get a superseded version beside them: the
  same title, URL name and summary, ``PublishStatus = 'Archived'``, and a body whose figures differ (every
  number in it changed: the old return window, the old threshold). The current (``Online``) version is
  untouched and alone answers; the knowledge search function, as Salesforce's, finds only online articles,
  so the stale versions meet an agent that queries the object itself.

Example:
    >>> import tempfile, pathlib
    >>> from crmarena_gym.datagen import generate_org
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = generate_org(d / "base.sqlite", seed=0, scale=0.05)
    >>> m = perturb_org(d / "base.sqlite", d / "noisy.sqlite", [Perturbation(kind="distractors", strength=0.2)])
    >>> m.perturbations[0]["kind"], m.row_counts["Account"] > read_manifest(d / "base.sqlite").row_counts["Account"]
    ('distractors', True)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from pydantic import Field as Attribute

from crmarena_gym._console import did_you_mean
from crmarena_gym.datagen._manifest import MANIFEST_TABLE, Manifest, content_hash, manifest_schema, read_manifest
from crmarena_gym.schema import (
    ORG_MAINTAINED,
    Field,
    FieldType,
    OrgSchema,
    SchemaDrift,
    column_affinity,
    deprecated_column,
    quote_identifier,
)

#: Bump whenever a transform's output for some base org, strength and seed changes: cached perturbed orgs are
#: named after it, so a changed transform never reuses a stale file.
#: 2: schema drift renames custom objects too.
#: 3: duplicate cases among the distractors, dates written as text among the dirty values; the Pro orgs.
#: 4: schema drift migrates standard fields (never one the org's automation writes) to new custom ones (the
#: standard field stays, emptied) instead of renaming them, which Salesforce never allows.
#: 5: the original org's custom fields whose dump names lack ``__c`` (``Case.Channel``,
#: ``ProductCategoryProduct.ProductCategory`` and ``.Product``) are renamed as custom fields, no longer migrated as
#: standard ones (no deprecated column, their old names refused).
PERTURBATION_VERSION = 5
#: The org perturbations, in the order their kinds are documented.
PERTURBATION_KINDS = ("schema_drift", "distractors", "dirty_values", "knowledge_drift")
PerturbationKind = Literal["schema_drift", "distractors", "dirty_values", "knowledge_drift"]


class Perturbation(BaseModel):
    """One seeded transform of an org.

    Attributes:
        kind: One of :data:`PERTURBATION_KINDS`.
        strength: In ``(0, 1]``: the share of records perturbed (see the module docs for each kind).
        seed: The transform's own seed (the base org's seed is not reused).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: PerturbationKind
    strength: float = Attribute(gt=0.0, le=1.0)
    seed: int = Attribute(default=0, ge=0)

    def key(self) -> str:
        """A short text naming the transform (``distractors@0.25#s0``), for file names and reports."""
        return f"{self.kind}@{self.strength:g}#s{self.seed}"


def parse_perturbations(spec: object, *, seed: int = 0) -> list[Perturbation]:
    """Perturbations from any of the forms the CLI, the experiment and ``gym.make(perturbations=...)`` take.

    Forms: ``None`` or empty (none); ``"KIND=STRENGTH"`` texts, one or several (separated by spaces or commas,
    or in a list), all with ``seed``; a mapping ``{KIND: STRENGTH, ...}`` (an experiment setting's axes), with
    ``"seed"`` or ``"perturbation_seed"`` for the seed and strengths of 0 left out; a list of
    :class:`Perturbation` or their dicts (``{"kind", "strength", "seed"}``, as manifests and runs record them).

    Raises:
        ValueError: An unknown kind, a strength outside ``(0, 1]``, a seed that is no non-negative integer or an
            unreadable form, each quoting the bad value.

    Example:
        >>> [p.key() for p in parse_perturbations("schema_drift=0.2, distractors=0.5", seed=3)]
        ['schema_drift@0.2#s3', 'distractors@0.5#s3']
        >>> [p.key() for p in parse_perturbations({"dirty_values": 0.1, "distractors": 0, "perturbation_seed": 1})]
        ['dirty_values@0.1#s1']
    """
    if spec is None:
        return []
    if isinstance(spec, str):
        spec = [part for part in re.split(r"[\s,]+", spec.strip()) if part]
    if isinstance(spec, dict):
        items = dict(spec)
        seed_value = items.pop("perturbation_seed", items.pop("seed", seed))
        spec = [
            {"kind": kind, "strength": strength, "seed": seed_value}
            for kind, strength in items.items()
            if not (isinstance(strength, int | float) and not isinstance(strength, bool) and strength == 0)
        ]
    if not isinstance(spec, list | tuple):
        raise ValueError(
            f"perturbations must be 'KIND=STRENGTH' texts, a mapping of kind to strength or a list of "
            f"{{'kind', 'strength', 'seed'}} dicts, got {spec!r}"
        )
    out: list[Perturbation] = []
    for item in spec:
        if isinstance(item, Perturbation):
            out.append(item)
            continue
        if isinstance(item, str):
            kind, sep, strength = item.partition("=")
            if not sep:
                raise ValueError(f"{item!r} is not KIND=STRENGTH (for example distractors=0.3)")
            try:
                value: object = float(strength)
            except ValueError:
                raise ValueError(f"the strength in {item!r} is not a number") from None
            item = {"kind": kind.strip(), "strength": value, "seed": seed}
        if not isinstance(item, dict):
            raise ValueError(
                f"a perturbation is 'KIND=STRENGTH' or a {{'kind', 'strength', 'seed'}} dict, got {item!r}"
            )
        kind = item.get("kind")
        if kind not in PERTURBATION_KINDS:
            hint = did_you_mean(str(kind).lower(), PERTURBATION_KINDS)
            raise ValueError(f"unknown perturbation kind {kind!r}{hint}; the kinds are {', '.join(PERTURBATION_KINDS)}")
        strength = item.get("strength")
        if isinstance(strength, bool) or not isinstance(strength, int | float) or not 0 < strength <= 1:
            raise ValueError(f"the strength of {kind} must be a number in (0, 1], got {strength!r}")
        item_seed = item.get("seed", seed)
        if isinstance(item_seed, bool) or not isinstance(item_seed, int) or item_seed < 0:
            raise ValueError(f"the seed of {kind} must be a non-negative integer, got {item_seed!r}")
        extra = set(item) - {"kind", "strength", "seed"}
        if extra:
            raise ValueError(f"a perturbation has kind, strength and seed; {item!r} also has {sorted(extra)}")
        out.append(Perturbation(kind=kind, strength=float(strength), seed=item_seed))
    return out


def perturbation_hash(perturbations: Sequence[Perturbation]) -> str:
    """SHA-256 of the perturbations as canonical JSON, in order (the cache names perturbed orgs by it)."""
    text = json.dumps([p.model_dump() for p in perturbations], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _rng(p: Perturbation, part: str) -> np.random.Generator:
    # One stream per (transform, part): adding a part to a transform leaves the others' draws as they were.
    digest = hashlib.sha256(f"{p.kind}|{part}".encode()).digest()
    return np.random.default_rng([p.seed, int.from_bytes(digest[:4], "little")])


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({quote_identifier(table)})")]


def _next_ids(conn: sqlite3.Connection, schema: OrgSchema, table: str, count: int) -> list[str]:
    """``count`` fresh ids of ``table``'s object, numbered after every id the table holds."""
    obj = schema.get_object(table)
    assert obj is not None
    taken = {i for (i,) in conn.execute(f"SELECT Id FROM {quote_identifier(table)}")}
    out: list[str] = []
    number = 30_000_000  # above every generated object's numbering (datagen._ids.id_base is under 27 million)
    while len(out) < count:
        candidate = schema.make_id(obj.key_prefix, number)
        number += 1
        if candidate not in taken:
            out.append(candidate)
    return out


def _sample(rng: np.random.Generator, items: Sequence[object], share: float) -> list[int]:
    n = round(share * len(items))
    return sorted(rng.choice(len(items), size=n, replace=False).tolist()) if n else []


def _copy_rows(conn: sqlite3.Connection, table: str, rows: list[dict[str, object]]) -> None:
    if not rows:
        return
    columns = list(rows[0])
    names = ", ".join(quote_identifier(c) for c in columns)
    marks = ", ".join("?" for _ in columns)
    conn.executemany(
        f"INSERT INTO {quote_identifier(table)} ({names}) VALUES ({marks})",
        [tuple(r[c] for c in columns) for r in rows],
    )


def _select(conn: sqlite3.Connection, sql: str, params: Sequence[object] = ()) -> list[dict[str, object]]:
    cur = conn.execute(sql, tuple(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _variant_email(email: object, rng: np.random.Generator) -> str | None:
    if not isinstance(email, str) or "@" not in email:
        return None
    local, domain = email.split("@", 1)
    return f"{local}{int(rng.integers(2, 99))}@{domain}"


def _variant_phone(phone: object, rng: np.random.Generator) -> object:
    if not isinstance(phone, str) or len(phone) < 4 or not phone[-4:].isdigit():
        return phone
    return f"{phone[:-4]}{int(rng.integers(0, 10_000)):04d}"


def _api_user(conn: sqlite3.Connection) -> str | None:
    """The org's API user: the first user, who set the org up (what web-to-case assigns a new case to)."""
    row = conn.execute('SELECT MIN("Id") FROM "User"').fetchone()
    return row[0] if row else None


# Business accounts' look-alike names (a rep's duplicate of the same company); person accounts keep the name.
_COMPANY_SUFFIXES = (" Inc.", " LLC", " Holdings", " (old)")
_PRODUCT_SUFFIXES = (" (2019 model)", " - Limited Edition", " II", " (Outlet)")


def _distractors(conn: sqlite3.Connection, schema: OrgSchema, p: Perturbation) -> dict[str, object]:
    added: dict[str, object] = {}
    business = schema.kind == "b2b"  # the B2B org's accounts are companies; the others' are people
    accounts = _select(conn, 'SELECT * FROM "Account" ORDER BY "Id"')
    rng = _rng(p, "accounts")
    chosen = [accounts[i] for i in _sample(rng, accounts, p.strength)]
    new_accounts, new_contacts = [], []
    account_ids = _next_ids(conn, schema, "Account", len(chosen))
    for account, new_id in zip(chosen, account_ids, strict=True):
        copy = {**account, "Id": new_id}
        email = None
        if "PersonEmail" in account:  # a person account: the same person, another address
            email = _variant_email(account.get("PersonEmail"), rng)
            copy["PersonEmail"] = email
        if business and isinstance(account.get("Name"), str):
            copy["Name"] = account["Name"] + _COMPANY_SUFFIXES[int(rng.integers(len(_COMPANY_SUFFIXES)))]
        if "Phone" in account and "PersonEmail" not in account:
            copy["Phone"] = _variant_phone(account.get("Phone"), rng)
        new_accounts.append(copy)
        for contact in _select(conn, 'SELECT * FROM "Contact" WHERE "AccountId" = ? ORDER BY "Id"', (account["Id"],)):
            new_contacts.append(
                {**contact, "AccountId": new_id, "Email": email or _variant_email(contact.get("Email"), rng)}
            )
    for contact, new_id in zip(new_contacts, _next_ids(conn, schema, "Contact", len(new_contacts)), strict=True):
        contact["Id"] = new_id
    _copy_rows(conn, "Account", new_accounts)
    _copy_rows(conn, "Contact", new_contacts)
    added["Account"], added["Contact"] = len(new_accounts), len(new_contacts)

    products = _select(conn, 'SELECT * FROM "Product2" ORDER BY "Id"')
    rng = _rng(p, "products")
    chosen = [products[i] for i in _sample(rng, products, p.strength)]
    new_products = []
    for product, new_id in zip(chosen, _next_ids(conn, schema, "Product2", len(chosen)), strict=True):
        suffix = _PRODUCT_SUFFIXES[int(rng.integers(len(_PRODUCT_SUFFIXES)))]
        copy = {**product, "Id": new_id, "Name": f"{product['Name']}{suffix}", "IsActive": 0}
        for code in ("External_ID__c", "ProductCode"):
            if product.get(code):
                copy[code] = f"{product[code]}-X{int(rng.integers(10, 99))}"
        new_products.append(copy)
    _copy_rows(conn, "Product2", new_products)
    added["Product2"] = len(new_products)

    # Duplicate cases: the customer wrote again about the same thing (same subject, description, contact and
    # account, minutes to hours later). Web-to-case left them New, with the API user and no order line or issue:
    # no agent has picked them up, so no closure, handle time, transfer, product or issue count includes them.
    cases = _select(conn, 'SELECT * FROM "Case" ORDER BY "Id"')
    rng = _rng(p, "cases")
    chosen = [cases[i] for i in _sample(rng, cases, p.strength)]
    owner = _api_user(conn)
    new_cases = []
    for case, new_id in zip(chosen, _next_ids(conn, schema, "Case", len(chosen)), strict=True):
        created = _later(case["CreatedDate"], int(rng.integers(5, 6 * 60)))
        new_cases.append(
            {
                **case,
                "Id": new_id,
                "Status": "New",
                "CreatedDate": created,
                "ClosedDate": None,
                "OrderItemId__c": None,
                "IssueId__c": None,
                "OwnerId": owner,
            }
        )
    _copy_rows(conn, "Case", new_cases)
    added["Case"] = len(new_cases)
    return added


def _later(timestamp: str, minutes: int) -> str:
    """``timestamp`` (as the org stores it) ``minutes`` later, in the same form."""
    moment = dt.datetime.strptime(timestamp[:19], "%Y-%m-%dT%H:%M:%S") + dt.timedelta(minutes=minutes)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + timestamp[19:]


# How people write a date by hand (a US form, a European one, words): never ISO, as an export would.
_DATE_FORMS = ("%m/%d/%Y", "%d.%m.%Y", "%d %b %Y", "%B %d, %Y", "%m-%d-%y")


def _dirty(conn: sqlite3.Connection, schema: OrgSchema, p: Perturbation) -> dict[str, object]:
    changed: dict[str, object] = {}

    def rewrite(table: str, column: str, part: str, change: Callable[[str, np.random.Generator], str | None]) -> None:
        if column not in _columns(conn, table):  # the kind has no such value (a service account has no Name)
            return
        rows = conn.execute(
            f'SELECT "Id", {quote_identifier(column)} FROM {quote_identifier(table)} '
            f'WHERE {quote_identifier(column)} IS NOT NULL ORDER BY "Id"'
        ).fetchall()
        rng = _rng(p, part)
        picked = [rows[i] for i in _sample(rng, rows, p.strength)]
        updates = [(change(value, rng), record_id) for record_id, value in picked]
        conn.executemany(f'UPDATE {quote_identifier(table)} SET {quote_identifier(column)} = ? WHERE "Id" = ?', updates)
        changed[f"{table}.{column}"] = len(updates)

    def spaces(value: str, rng: np.random.Generator) -> str:
        pad = " " * int(rng.integers(1, 3))
        return (pad + value) if rng.random() < 0.5 else (value + pad)

    def recase(value: str, rng: np.random.Generator) -> str:
        return value.lower() if value.isupper() or rng.random() < 0.5 else value.upper()

    rewrite("Account", "LastName", "account-last", spaces)
    rewrite("Account", "Name", "account-name", spaces)
    rewrite("Contact", "LastName", "contact-last", spaces)
    rewrite("Contact", "Email", "contact-email", recase)
    rewrite("Account", "ShippingState", "state", recase)
    rewrite("Product2", "External_ID__c", "external-id", lambda value, rng: "#" + value)
    rewrite("Account", "Phone", "phone", lambda value, rng: None)

    # Dates written as text: Salesforce stores a date field as a date (it cannot hold text, and the API always
    # answers ISO 8601), so a date in another form lives where people type it: a case's description, where the
    # agent noted when the customer said they first wrote ("Customer first wrote on 03/14/2021.").
    cases = conn.execute(
        'SELECT "Id", "Description", "CreatedDate" FROM "Case" WHERE "Description" IS NOT NULL ORDER BY "Id"'
    ).fetchall()
    rng = _rng(p, "dates-as-text")
    notes = []
    for i in _sample(rng, cases, p.strength):
        record_id, description, created = cases[i]
        day = dt.datetime.strptime(created[:10], "%Y-%m-%d")
        text = day.strftime(_DATE_FORMS[int(rng.integers(len(_DATE_FORMS)))])
        notes.append((f"{description}\n\nCustomer first wrote on {text}.", record_id))
    conn.executemany('UPDATE "Case" SET "Description" = ? WHERE "Id" = ?', notes)
    changed["Case.Description (dates as text)"] = len(notes)
    return changed


_AUDIT = frozenset(
    {"CreatedDate", "CreatedById", "LastModifiedDate", "LastModifiedById", "SystemModstamp", "IsDeleted"}
)
# Custom fields an admin might add, with their type and how their values are drawn.
_ADDED = (
    ("Legacy_Code__c", "string", "A code carried over from the previous CRM (not used by current processes)"),
    ("Migration_Batch__c", "double", "The data-migration batch that last touched the record"),
    ("Is_Archived__c", "boolean", "Whether the record was flagged during the archive review"),
)


_OBJECT_NAMES = {"Issue__c": "Support_Issue__c", "CaseHistory__c": "Case_History_Log__c"}


def _drifted_name(f: Field) -> str:
    """The custom field an admin's change gives ``f``: its words joined by underscores (``ShippingState`` gets
    ``Shipping_State__c``), or, for a custom field already so named, with ``_Value`` (``FAQ_Answer_Value__c``).
    A custom field the dump names without ``__c`` is ``Channel__c`` on the live org, so that name is no rename:
    it gets ``Channel_Value__c``."""
    name = f.name
    base = name[:-3] if name.lower().endswith("__c") else name
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", base) or [base]
    new = "_".join(w[:1].upper() + w[1:] for w in words) + "__c"
    current = f"{base}__c" if f.custom else name
    return new if new.lower() != current.lower() else "_".join(words) + "_Value__c"


def _migratable(f: Field, fed: frozenset[str]) -> bool:
    """Whether an admin can retire standard field ``f`` for a custom one: its values can be cleared for good.

    Not a field Salesforce never lets be empty (required, a checkbox), one the org fills itself (a create's
    default refills it on every new record; read-only, create-only and auto-number fields are the org's), a
    record name SOSL's ``IN NAME FIELDS`` searches, an External ID, a field holding record ids (a lookup the dump
    stores as text: ``RecordTypeId``, ``ToIds``), nor one a formula field is computed from (``FirstName``, which
    ``Name`` joins: clearing it would change the formula's values): ``fed`` holds those, as quoted columns. The
    fields the org's automation writes (:data:`~crmarena_gym.schema.ORG_MAINTAINED`) are left out by the caller.
    """
    return not (
        f.required
        or f.default is not None
        or f.type is FieldType.BOOLEAN
        or f.readonly
        or f.create_only
        or f.autonumber
        or f.name_field
        or f.external_id
        or f.name.endswith(("Id", "Ids"))
        or quote_identifier(f.column_name) in fed
    )


def _schema_drift(conn: sqlite3.Connection, schema: OrgSchema, p: Perturbation) -> dict[str, object]:
    if schema.drift is not None:
        raise ValueError("the org's schema has drifted already: one schema_drift per org")
    fed = frozenset(
        column
        for obj in schema.objects
        for f in obj.fields
        if f.formula is not None
        for column in re.findall(r'"(?:[^"]|"")+"', f.formula)
    )
    candidates: list[tuple[str, Field]] = []
    for obj in schema.objects:
        present = {c.lower() for c in _columns(conn, obj.name)}
        for f in obj.fields:
            if (
                f.name != "Id"
                and f.type is not FieldType.REFERENCE
                and f.stored
                and not f.extra
                and f.name not in _AUDIT
                and f.column_name.lower() in present
                and (f.custom or (f.name not in ORG_MAINTAINED.get(obj.name, ()) and _migratable(f, fed)))
            ):
                candidates.append((obj.name, f))
    rng = _rng(p, "renames")
    renamed: dict[str, dict[str, str]] = {}
    migrated: dict[str, dict[str, str]] = {}
    for i in _sample(rng, candidates, p.strength):
        obj_name, f = candidates[i]
        # A custom field is renamed; a standard one, which Salesforce never renames, is migrated to a new custom
        # field: the values stay in their column, which the new field names, and the standard field gets a new,
        # empty column (its values cleared).
        if f.custom:
            renamed.setdefault(obj_name, {})[f.name] = _drifted_name(f)
            continue
        migrated.setdefault(obj_name, {})[f.name] = _drifted_name(f)
        conn.execute(
            f"ALTER TABLE {quote_identifier(obj_name)} ADD COLUMN "
            f"{quote_identifier(deprecated_column(f))} {column_affinity(f)}"
        )
    rng = _rng(p, "added")
    added: dict[str, list[dict[str, str]]] = {}
    objects = [o.name for o in schema.objects]
    for i in _sample(rng, objects, p.strength) or [int(rng.integers(len(objects)))]:
        table = objects[i]
        name, kind, description = _ADDED[int(rng.integers(len(_ADDED)))]
        ids = [r for (r,) in conn.execute(f'SELECT "Id" FROM {quote_identifier(table)} ORDER BY "Id"')]
        sql_type = column_affinity(Field(name, FieldType(kind), description))
        conn.execute(f"ALTER TABLE {quote_identifier(table)} ADD COLUMN {quote_identifier(name)} {sql_type}")
        if kind == "string":
            values: list[object] = [f"LC-{int(v):05d}" for v in rng.integers(0, 100_000, len(ids))]
        elif kind == "double":
            values = [float(v) for v in rng.integers(1, 40, len(ids))]
        else:
            values = [int(v) for v in rng.random(len(ids)) < 0.1]
        conn.executemany(
            f'UPDATE {quote_identifier(table)} SET {quote_identifier(name)} = ? WHERE "Id" = ?',
            zip(values, ids, strict=True),
        )
        added.setdefault(table, []).append({"name": name, "type": kind, "description": description})
    # Custom objects are renamed too (Salesforce lets an admin rename a custom object's API name, not a
    # standard one's), each with probability ``s``; the object keeps its table and key prefix.
    rng = _rng(p, "objects")
    objects_renamed = {
        o.name: _OBJECT_NAMES.get(o.name, o.name[:-3] + "_Record__c")
        for o in schema.objects
        if o.custom and rng.random() < p.strength
    }
    drift = {"renamed": renamed, "migrated": migrated, "added": added, "objects": objects_renamed}
    # The drifted schema must be valid (no name clash) before the file is written.
    schema.drifted(
        SchemaDrift(
            renamed=renamed,
            migrated=migrated,
            added={
                o: tuple(Field(f["name"], FieldType(f["type"]), f["description"]) for f in fs)
                for o, fs in added.items()
            },
            objects=objects_renamed,
        )
    )
    return {
        "changed": {
            "renamed": sum(len(v) for v in renamed.values()),
            "migrated": sum(len(v) for v in migrated.values()),
            "added": sum(len(v) for v in added.values()),
            "objects renamed": len(objects_renamed),
        },
        "drift": drift,
    }


def _knowledge(conn: sqlite3.Connection, schema: OrgSchema, p: Perturbation) -> dict[str, object]:
    articles = _select(conn, 'SELECT * FROM "Knowledge__kav" WHERE "PublishStatus" = \'Online\' ORDER BY "Id"')
    rng = _rng(p, "articles")
    chosen = [articles[i] for i in _sample(rng, articles, p.strength)]
    versions = []

    def stale(match: re.Match[str]) -> str:
        value = int(match.group())
        return str(value + int(rng.integers(1, 5)) if value < 10 else value + 5 * int(rng.integers(1, 4)))

    changed = 0
    for article, new_id in zip(chosen, _next_ids(conn, schema, "Knowledge__kav", len(chosen)), strict=True):
        body = article.get("FAQ_Answer__c") or ""
        old_body = re.sub(r"(?<![\w.])\d+(?![\w.])", stale, body)
        changed += old_body != body
        versions.append({**article, "Id": new_id, "FAQ_Answer__c": old_body, "PublishStatus": "Archived"})
    _copy_rows(conn, "Knowledge__kav", versions)
    return {"Knowledge__kav": len(versions), "figures changed": changed}


_TRANSFORMS: dict[str, Callable[[sqlite3.Connection, OrgSchema, Perturbation], dict[str, object]]] = {
    "schema_drift": _schema_drift,
    "distractors": _distractors,
    "dirty_values": _dirty,
    "knowledge_drift": _knowledge,
}


def perturb_org(
    base: str | Path, out: str | Path, perturbations: Sequence[Perturbation | dict[str, object]]
) -> Manifest:
    """Write ``out``: the org at ``base`` with ``perturbations`` applied in order, and return its manifest.

    The new manifest keeps the base's (seed, scale, kind ...) and records ``base_content_hash`` and, per
    transform, its kind, strength, seed and what it changed (rows added or values rewritten per table).

    Args:
        base: A generated org file of any kind (service, b2b, b2c).
        out: The file to write (replaced if present).
        perturbations: The transforms, as :class:`Perturbation` or their dicts.

    Raises:
        ValueError: A perturbation is invalid, none is given, ``base`` is not a generated org, or a transform
            does not apply to it (a second ``schema_drift``); ``out`` is then left absent.
        FileNotFoundError: No file at ``base``.
    """
    specs = [q if isinstance(q, Perturbation) else Perturbation.model_validate(q) for q in perturbations]
    if not specs:
        raise ValueError("perturb_org needs at least one perturbation")
    manifest = read_manifest(base)
    out = Path(out)
    out.unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{Path(base)}?mode=ro", uri=True)
    dst = sqlite3.connect(out)
    try:
        src.backup(dst)
        schema = manifest_schema(dst)
        records = []
        for spec in specs:
            effect = _TRANSFORMS[spec.kind](dst, schema, spec)
            record = {
                **spec.model_dump(),
                "version": PERTURBATION_VERSION,
                **(effect if "changed" in effect else {"changed": effect}),
            }
            records.append(record)
        counts = {
            obj.table_name: dst.execute(f"SELECT COUNT(*) FROM {quote_identifier(obj.table_name)}").fetchone()[0]
            for obj in schema.objects
        }
        new = manifest.model_copy(
            update={
                "row_counts": counts,
                "content_hash": content_hash(dst, manifest.kind, tuple(manifest.hidden_row_counts)),
                "base_content_hash": manifest.base_content_hash or manifest.content_hash,
                "perturbations": [*manifest.perturbations, *records],
            }
        )
        dst.execute(f"DELETE FROM {MANIFEST_TABLE}")
        dst.execute(f"INSERT INTO {MANIFEST_TABLE} VALUES (?)", (new.stored_json(),))
        dst.commit()
        dst.execute("ANALYZE")
        dst.commit()
        dst.execute("VACUUM")
    except BaseException:
        dst.close()
        out.unlink(missing_ok=True)  # a transform that failed leaves no half-made org behind (it would pass for one)
        raise
    finally:
        src.close()
        dst.close()
    return new
