"""``OrgSession``: a writable, isolated, copy-on-write view of an embedded org, with Salesforce's write semantics.

``LocalOrg`` is read-only. A session is the one way to change data: ``create``, ``update``, ``delete`` and
``upsert`` are validated against the org kind's own schema (the service org's 16 objects, or Pro's B2B and
B2C orgs' 27: ``LocalOrg.schema``), refused with Salesforce's error codes, and their effects
are visible to the session's own SOQL queries and SOSL searches, to no other session's, and never reach
the org file. What Salesforce does on a write, a session does:

- **System fields**: ``CreatedDate``, ``LastModifiedDate`` and ``SystemModstamp`` come from the org's
  clock (the session's ``today`` when it has one: relative literals such as ``TODAY`` find the records
  it wrote), ``CreatedById`` and ``LastModifiedById`` are the session's user; ``IsDeleted`` is true in
  the recycle bin. A create may set the audit fields (Salesforce's "Set Audit Fields upon Record
  Creation"); an update may set none of them.
- **Auto-numbers** (``CaseNumber``, ``OrderNumber``, ``QuoteNumber``, ``ContractNumber`` ...) keep their
  values and go on from the highest one: a session's first new case after case 00022055 is 00022056. New
  ids carry the kind's instance marker (``006Wt...`` in a B2B org).
- **Cases**: setting ``Status`` to Closed stamps ``ClosedDate`` (``IsClosed`` follows the status);
  reopening clears it. ``ClosedDate`` itself is the org's to set.
- **Sales** (Pro's orgs): a stage sets the opportunity's ``Probability`` unless the write gives one; a line
  of an opportunity or a quote takes its ``ListPrice`` and product from its price book entry (which must be
  in its record's price book; the first line gives a record without one its price book), an opportunity's
  line takes a ``UnitPrice`` or a ``TotalPrice`` and the other follows, a quote line's ``TotalPrice`` is
  quantity times price less the discount; an opportunity's ``Amount`` is the sum of its lines' totals while
  it has lines; a task's or an event's ``AccountId`` is that of the record it is about (else of its
  contact), a quote's that of its opportunity.
- **Defaults**: the schema's (``Field.default``: a case's Status, a lead's Status, a task's Priority ...);
  a record's owner is the session's user unless the write names one.
- **Deletes** follow each relationship's rule in the schema (``Field.on_delete``): a parent with
  children Salesforce protects is refused with ``DELETE_FAILED`` (an account or contact with cases,
  an account with orders, a price book entry on an opportunity), master-detail children go with their
  parent (an order's items, a case's emails and history, an opportunity's products, quotes and
  activities), other lookups to it are cleared; an activated contract is never deleted. Deleted records
  stay in the recycle bin: ``query(..., include_deleted=True)`` (the REST API's ``queryAll``) returns
  them with ``IsDeleted`` true; ``query`` never does.
- **Validation**: required fields (``Field.required``: ``REQUIRED_FIELD_MISSING``), restricted picklists
  (``INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST``), field lengths (``STRING_TOO_LONG``), references
  (``INVALID_CROSS_REFERENCE_KEY``, ``ENTITY_IS_DELETED``), types (``JSON_PARSER_ERROR``) and
  read-only and create-only fields (``INVALID_FIELD_FOR_INSERT_UPDATE``); a session holds at most ``max_storage``
  bytes of records (``STORAGE_LIMIT_EXCEEDED``; each record counts at least 2 KB, as Salesforce
  counts it).

How: each session has its own SQLite connection to the org file (read-only, as every ``LocalOrg``) and a
database of its own attached as ``crm`` (in memory, or a file with ``store``: then the writes outlive the
process). The first write to an object creates there a table of the session's versions of the object's
records (with their system fields) and a table of the file's ids it hides, and in the connection's TEMP
schema a view with the object's own table name: the file's rows minus the hidden ones, with their system
fields computed as the file computes them, plus the session's rows. SQLite resolves an unqualified name
in TEMP first, so compiled plans run unchanged on the session's connection and see its writes; the
session compiles against a catalog where the system fields of the objects it wrote are columns of
their own. Objects the session never wrote are read straight from the file, with all its indexes, and
share the org's plans. SOSL searches merge the shared full-text index with a small index of the
session's own rows. Every write is one SQLite transaction: a write that fails leaves nothing behind,
and with ``store`` a write that returned is on disk (WAL; a killed process loses none).

Memory: a session holds one SQLite connection (its page cache is capped at :data:`SESSION_CACHE_KIB`)
plus its own rows; ``python benchmarks/bench_serve.py`` measures the cost per session.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crmarena_gym import _signals as signals
from crmarena_gym._memory import BytesLRU
from crmarena_gym.org._base import OrgError
from crmarena_gym.org._diff import RecordChange, StateDiff
from crmarena_gym.org._local import (
    _PROGRESS_STEPS,
    _REGISTRY_LOCK,
    LocalOrg,
    _Backend,
    _coerce_today,
    raise_if_signalled,
    run_bounded,
)
from crmarena_gym.org._sosl import (
    _EVERY_FIELD_ALWAYS,
    MAX_RESULTS,
    SearchIndex,
    SearchTerms,
    _columns,
    _Expression,
    _index_for,
    _index_text,
    _search_error,
)
from crmarena_gym.org.soql import SQL_FUNCTIONS, Catalog, Plan
from crmarena_gym.schema import (
    STAGE_PROBABILITY,
    Field,
    FieldType,
    OrgSchema,
    SObject,
    id_checksum,
    is_valid_id,
    quote_identifier,
)

#: Page cache of one session's connection, in KiB (SQLite's default is 2,000).
SESSION_CACHE_KIB = 512
#: Most bytes of records one session holds by default (created, changed or deleted; each counts at least
#: :data:`RECORD_STORAGE_BYTES`); past it writes are refused with STORAGE_LIMIT_EXCEEDED.
SESSION_STORAGE_BYTES = 64 * 2**20
#: The storage a record takes at least, as Salesforce counts most records (2 KB).
RECORD_STORAGE_BYTES = 2048
#: The system fields the org keeps on every record of the 16 objects.
AUDIT_FIELDS = ("CreatedDate", "CreatedById", "LastModifiedDate", "LastModifiedById", "SystemModstamp", "IsDeleted")
#: The audit fields a create may set (Salesforce's "Set Audit Fields upon Record Creation"); an update, none.
SETTABLE_ON_CREATE = frozenset({"CreatedDate", "CreatedById", "LastModifiedDate", "LastModifiedById"})

#: Objects no API call deletes (Salesforce deactivates users; it never deletes them).
UNDELETABLE = frozenset({"User"})
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DATETIME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|[+-]\d{2}:?\d{2})?$")
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_BRACKETED = re.compile(r"\[([A-Za-z_]\w*)\]")
# New records are numbered from here up (far above any generated or original id), one count per process,
# so that no two sessions of a process ever make the same id (a stored session moves it past its own ids).
_FIRST_NEW = 62**9 * 7
_next_new = _FIRST_NEW
_NEW_LOCK = threading.Lock()
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# Plans compiled against a session's catalog, by the set of objects written: at most this many sets per org.
_PLANNERS_KEY = "crmarena_gym.org._session.planners"
_PLANNERS_LOCK = threading.Lock()
_MAX_PLANNERS = 32

_UNSET: Any = object()
# The record a line of products belongs to, and the line's field naming it.
_LINE_PARENTS = {"OpportunityLineItem": ("Opportunity", "OpportunityId"), "QuoteLineItem": ("Quote", "QuoteId")}


def _fault(code: str, message: str, fields: tuple[str, ...] = ()) -> OrgError:
    err = OrgError(code, message)
    err.fields = list(fields)  # type: ignore[attr-defined]
    return err


def _object(schema: OrgSchema, name: object) -> SObject:
    """The object of the org's kind called ``name``; NOT_FOUND for any other."""
    obj = schema.get_object(name) if isinstance(name, str) else None
    if obj is None:
        shown = repr(name) if isinstance(name, str) else f"of type {type(name).__name__}"
        raise _fault("NOT_FOUND", f"sObject type {shown} is not supported: the org has no such object.")
    return obj


def _id18(value: str) -> str:
    return value if len(value) == 18 else value + id_checksum(value)


def _id_number(record_id: str) -> int:
    """The record number inside an id made by :func:`make_id` (its 10 base-62 digits)."""
    number = 0
    for ch in record_id[5:15]:
        number = number * 62 + _ALPHABET.index(ch)
    return number


def _new_id(schema: OrgSchema, prefix: str) -> str:
    global _next_new
    with _NEW_LOCK:
        number, _next_new = _next_new, _next_new + 1
    return schema.make_id(prefix, number)


def _skip_new_ids_past(number: int) -> None:
    global _next_new
    with _NEW_LOCK:
        _next_new = max(_next_new, number + 1)


def format_datetime(value: dt.datetime) -> str:
    """A datetime as the org stores and Salesforce returns it: ``2020-12-22T11:00:00.000+0000`` (UTC).

    Example:
        >>> format_datetime(dt.datetime(2020, 12, 22, 11, 0, tzinfo=dt.UTC))
        '2020-12-22T11:00:00.000+0000'
    """
    value = value.astimezone(dt.UTC) if value.tzinfo else value
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}+0000"


def parse_datetime_value(value: str) -> dt.datetime | None:
    """An ISO datetime as Salesforce's REST API takes it (``2023-04-01T10:30:00.000+0000``, ``...Z``,
    ``...+02:00``; no zone: UTC), in UTC; None if ``value`` is not one.

    Example:
        >>> parse_datetime_value("2023-04-01T10:30:00+02:00")
        datetime.datetime(2023, 4, 1, 8, 30, tzinfo=datetime.timezone.utc)
    """
    m = _DATETIME_RE.match(value.strip())
    if m is None:
        return None
    day, hh, mm, ss, frac, zone = m.groups()
    text = f"{day}T{hh}:{mm}:{ss or '00'}" + (f".{(frac or '0').ljust(6, '0')}")
    if zone and zone != "Z":
        text += zone[:3] + ":" + zone[-2:]
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed.replace(tzinfo=parsed.tzinfo or dt.UTC).astimezone(dt.UTC)


def _bad_value(field: Field, value: object, wanted: str) -> OrgError:
    shown = repr(value) if not isinstance(value, str) or len(value) <= 80 else repr(value[:80]) + "..."
    return _fault(
        "JSON_PARSER_ERROR",
        f"Cannot deserialize instance of {field.type.value} from {shown} for field {field.name}: it takes {wanted}",
        (field.name,),
    )


def _qualify(formula: str, alias: str, number: str, *, file_tables: bool = False) -> str:
    """A schema formula over the columns of table ``alias`` (its auto-number read from column ``number``).

    With ``file_tables``, the tables its subqueries read (``[User]``, ``[Order]``) are the org file's, not
    the session's views of them: a file record's system fields are the file's (a session's writes never
    move them), and a view of ``User`` does not read itself.
    """

    def one(m: re.Match[str]) -> str:
        return f'{alias}."{number}"' if m.group(1) == "rowid" else f"{alias}.{m.group(0)}"

    qualified = _QUOTED.sub(one, formula)
    if file_tables:
        qualified = _BRACKETED.sub(r"main.[\1]", qualified)
    return "(" + qualified + ")"


def day_clock(today: dt.date | str | None) -> Callable[[], dt.datetime]:
    """A live clock on ``today``: the date is ``today``'s, the time of day the real clock's (UTC).

    What ``crmarena-gym serve-org --today`` stamps writes with: a record created now is created
    ``TODAY`` as the org resolves it, at the time it was made. Without ``today``, the real clock.

    Example:
        >>> day_clock("2021-02-20")().date().isoformat()
        '2021-02-20'
    """
    day = _coerce_today(today)

    def now() -> dt.datetime:
        real = dt.datetime.now(dt.UTC)
        return real if day is None else dt.datetime.combine(day, real.time(), dt.UTC)

    return now


@dataclass(frozen=True)
class _Layout:
    """How a session stores one object's records: the file's columns plus the system fields it keeps."""

    obj: SObject
    base: tuple[str, ...]  # the file table's columns, as spelled there
    types: tuple[str, ...]  # their declared types (for the same affinity)
    system: tuple[Field, ...]  # audit fields the file computes, which the session stores per record
    numbers: tuple[Field, ...]  # auto-numbers (computed from the record number)

    @property
    def extra(self) -> frozenset[str]:
        """The lower-cased names of the columns the session's view adds to the file's."""
        return frozenset(f.name.lower() for f in (*self.system, *self.numbers))

    @property
    def stored(self) -> tuple[str, ...]:
        """The columns of the session's rows a copy of a record carries (file columns, system fields, number)."""
        return (*self.base, *(f.name for f in self.system), "crm_number")

    def column_of(self, field: Field) -> str | None:
        """The column of the session's rows that holds ``field`` (None: computed)."""
        lowered = field.column_name.lower()
        for column in self.base:
            if column.lower() == lowered:
                return column
        return field.name if field in self.system else None


class _State:
    """What every view of one session shares: its connection, its lock and what it wrote."""

    def __init__(self, path: Path, tables: Mapping[str, str], store: Path | None, schema: OrgSchema) -> None:
        self.lock = threading.RLock()
        self.schema = schema  # the org kind's objects: what the session validates and writes against
        self.tables = dict(tables)  # object name -> the table's name in the file
        self.store = store
        self.conn = sqlite3.connect(
            path.as_uri() + "?mode=ro", uri=True, check_same_thread=False, cached_statements=256
        )
        try:
            self.conn.isolation_level = None  # transactions are ours (a savepoint per write, per batch)
            self.conn.execute(f"PRAGMA cache_size=-{SESSION_CACHE_KIB}")
            self.conn.execute("PRAGMA temp_store=MEMORY")
            where = ":memory:" if store is None else store.resolve().as_uri() + "?mode=rwc"
            self.conn.execute("ATTACH DATABASE ? AS crm", (where,))
            if store is not None:
                self.conn.execute("PRAGMA crm.journal_mode=WAL")
                self.conn.execute("PRAGMA crm.synchronous=NORMAL")  # WAL: a killed process loses no commit
                self.conn.execute("PRAGMA crm.busy_timeout=5000")
            self.conn.execute(f"PRAGMA crm.cache_size=-{SESSION_CACHE_KIB}")
            self.conn.execute("CREATE TEMP TABLE crm_mode (deleted INTEGER NOT NULL)")
            self.conn.execute("INSERT INTO temp.crm_mode VALUES (0)")
        except sqlite3.Error as exc:
            self.conn.close()
            raise ValueError(f"cannot open the session's store {str(store)!r}: {exc}") from None
        self._readable = frozenset(t.lower() for t in self.tables.values())
        self.trusted = False  # our own statements (writes, the session's text index) pass the authorizer
        self.conn.set_authorizer(self._authorize)
        self.deadline = math.inf
        self.conn.set_progress_handler(self._progress, _PROGRESS_STEPS)
        self.layouts: dict[str, _Layout] = {}
        self.written: set[str] = set()  # objects with an overlay
        self.fts_dirty: set[str] = set()  # objects whose session text index is stale
        self.vocabulary: dict[str, list[str]] = {}
        self.numbers: dict[str, int] = {}  # object -> its next auto-number
        self.storage: int | None = None  # bytes the session's rows count for (None: to be summed)
        self.last_stamp: dt.datetime | None = None
        self.user: str | None = None
        self.own_ids: int | None = None  # the session's next new id number, when it numbers its own
        self.refs = 0
        self.closed = False
        if store is not None:
            with self.trust() as conn:
                self.reopen(conn)

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, dbname: str | None, _src: Any) -> int:
        if self.trusted or action == sqlite3.SQLITE_SELECT:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:
            table = (arg1 or "").lower()
            ok = (dbname in ("temp", "crm") and table.startswith("crm_")) or table in self._readable
            return sqlite3.SQLITE_OK if ok else sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            return sqlite3.SQLITE_OK if (arg2 or "").lower() in SQL_FUNCTIONS else sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_DENY

    def _progress(self) -> int:
        return 1 if time.monotonic() > self.deadline else 0

    @contextmanager
    def trust(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            if self.closed:
                raise ValueError("this OrgSession is closed: it was dropped")
            was, self.trusted = self.trusted, True
            try:
                yield self.conn
            finally:
                self.trusted = was

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One write: all of it or, on any exception, none of it (call with ``trust`` held)."""
        self.conn.execute("SAVEPOINT crm_op")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK TO crm_op")
            self.conn.execute("RELEASE crm_op")
            self.forget()
            raise
        self.conn.execute("RELEASE crm_op")

    def execute_head(
        self, sql: str, params: tuple[Any, ...], timeout: float, keep: int | None
    ) -> tuple[list[tuple[Any, ...]], int]:
        with self.lock:
            if self.closed:
                raise ValueError("this OrgSession is closed: it was dropped")
            return run_bounded(self, self.conn, sql, params, timeout, keep)

    # -- overlays ----------------------------------------------------------------------------------

    def layout(self, obj: SObject) -> _Layout:
        found = self.layouts.get(obj.name)
        if found is None:
            table = self.tables.get(obj.name)
            if table is None:
                raise _fault(
                    "NOT_FOUND", f"sObject type '{obj.name}' is not supported: the org file has no such table."
                )
            was, self.trusted = self.trusted, True
            try:
                info = self.conn.execute(f"PRAGMA main.table_info({quote_identifier(table)})").fetchall()
            finally:
                self.trusted = was
            present = {r[1].lower() for r in info}
            system = tuple(
                f
                for name in AUDIT_FIELDS
                if (f := obj.get_field(name)) is not None and f.formula is not None and name.lower() not in present
            )
            numbers = tuple(f for f in obj.fields if f.autonumber and f.column_name.lower() not in present)
            found = _Layout(obj, tuple(r[1] for r in info), tuple(r[2] or "" for r in info), system, numbers)
            self.layouts[obj.name] = found
        return found

    def names(self, obj: SObject) -> tuple[str, str, str]:
        """(the file's table, the session's rows, the hidden ids), quoted."""
        table = self.tables[obj.name]
        return (
            f"main.{quote_identifier(table)}",
            f"crm.{quote_identifier('crm_rows_' + obj.name)}",
            f"crm.{quote_identifier('crm_gone_' + obj.name)}",
        )

    def overlay(self, conn: sqlite3.Connection, obj: SObject) -> None:
        """Create ``obj``'s overlay on the first write (call with ``trust`` held)."""
        if obj.name in self.written:
            return
        layout = self.layout(obj)
        _, rows, gone = self.names(obj)
        columns = [f"{quote_identifier(c)} {t}".strip() for c, t in zip(layout.base, layout.types, strict=True)] + [
            f"{quote_identifier(f.name)} {'INTEGER' if f.type is FieldType.BOOLEAN else 'TEXT'}" for f in layout.system
        ]
        conn.execute(f"CREATE TABLE IF NOT EXISTS {rows} ({', '.join(columns)}, crm_number INTEGER, crm_bytes INTEGER)")
        conn.execute(f'CREATE UNIQUE INDEX IF NOT EXISTS crm."crm_rows_{obj.name}_id" ON "crm_rows_{obj.name}" ("Id")')
        conn.execute(f'CREATE TABLE IF NOT EXISTS {gone} ("Id" TEXT PRIMARY KEY)')
        self._view(conn, layout)
        self.written.add(obj.name)
        self.fts_dirty.add(obj.name)

    def _view(self, conn: sqlite3.Connection, layout: _Layout) -> None:
        obj = layout.obj
        base, rows, gone = self.names(obj)
        plain = [quote_identifier(c) for c in layout.base]
        from_file = [f"b.{c}" for c in plain]
        from_rows = [f"r.{c}" for c in plain]
        for f in layout.system:
            from_file.append(
                f"{_qualify(f.formula or 'NULL', 'b', 'rowid', file_tables=True)} AS {quote_identifier(f.name)}"
            )
            from_rows.append(f"r.{quote_identifier(f.name)}")
        for f in layout.numbers:
            from_file.append(f"{_qualify(f.formula or 'NULL', 'b', 'rowid')} AS {quote_identifier(f.name)}")
            from_rows.append(f"{_qualify(f.formula or 'NULL', 'r', 'crm_number')} AS {quote_identifier(f.name)}")
        from_file.append("b.rowid AS crm_number")
        from_rows.append("r.crm_number")
        conn.execute(
            f"CREATE TEMP VIEW IF NOT EXISTS {quote_identifier(self.tables[obj.name])} AS "
            f"SELECT {', '.join(from_file)} FROM {base} AS b "
            f'WHERE b."Id" NOT IN (SELECT "Id" FROM {gone}) '
            f"UNION ALL SELECT {', '.join(from_rows)} FROM {rows} AS r "
            'WHERE r."IsDeleted" = 0 OR (SELECT deleted FROM temp.crm_mode)'
        )

    def reopen(self, conn: sqlite3.Connection) -> None:
        """Recreate the views of a stored session's objects (call with ``trust`` held)."""
        names = {r[0] for r in conn.execute("SELECT name FROM crm.sqlite_master WHERE type = 'table'")}
        by_name = {o: self.schema.get_object(o) for o in self.tables}
        for name, obj in by_name.items():
            if obj is not None and f"crm_rows_{name}" in names:
                self._view(conn, self.layout(obj))
                self.written.add(name)
                _, rows, _ = self.names(obj)
                for (rid,) in conn.execute(f'SELECT "Id" FROM {rows}'):  # new ids go on past the stored ones
                    if isinstance(rid, str) and len(rid) >= 15 and rid[5:15].isalnum():
                        number = _id_number(rid)
                        if number >= _FIRST_NEW:
                            _skip_new_ids_past(number)
                if any(f.name == "SystemModstamp" for f in self.layout(obj).system):
                    (stamp,) = conn.execute(f'SELECT MAX("SystemModstamp") FROM {rows}').fetchone()
                    parsed = parse_datetime_value(stamp) if isinstance(stamp, str) else None
                    if parsed is not None and (self.last_stamp is None or parsed > self.last_stamp):
                        self.last_stamp = parsed
        self.fts_dirty |= self.written

    def forget(self) -> None:
        """Re-read what the session holds (after a write or batch was rolled back)."""
        names = {r[0] for r in self.conn.execute("SELECT name FROM crm.sqlite_master WHERE type = 'table'")}
        self.written = {n[len("crm_rows_") :] for n in names if n.startswith("crm_rows_")}
        self.fts_dirty |= self.written | set(self.vocabulary)
        self.numbers.clear()
        self.storage = None

    def next_number(self, conn: sqlite3.Connection, obj: SObject) -> int:
        """The record number of the next new record of ``obj`` (its auto-numbers go on from the highest)."""
        if obj.name not in self.numbers:
            base, rows, _ = self.names(obj)
            (top,) = conn.execute(
                f"SELECT MAX(n) FROM (SELECT MAX(rowid) AS n FROM {base} UNION ALL SELECT MAX(crm_number) FROM {rows})"
            ).fetchone()
            self.numbers[obj.name] = int(top or 0) + 1
        number = self.numbers[obj.name]
        self.numbers[obj.name] = number + 1
        return number

    def used_storage(self, conn: sqlite3.Connection) -> int:
        if self.storage is None:
            total = 0
            for name in self.written:
                obj = self.schema.get_object(name)
                if obj is not None:
                    (n,) = conn.execute(f"SELECT TOTAL(crm_bytes) FROM {self.names(obj)[1]}").fetchone()
                    total += int(n)
            self.storage = total
        return self.storage

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                self.conn.close()


#: The longest an event lasts, in minutes (Salesforce's 14 days).
MAX_EVENT_MINUTES = 14 * 24 * 60


def _too_long() -> OrgError:
    return _fault(
        "FIELD_INTEGRITY_EXCEPTION",
        f"field integrity exception: an event lasts at most 14 days ({MAX_EVENT_MINUTES} minutes)",
        ("DurationInMinutes", "EndDateTime"),
    )


def _later(start: dt.datetime, minutes: float) -> dt.datetime:
    try:
        return start + dt.timedelta(minutes=minutes)
    except OverflowError:
        raise _fault(
            "FIELD_INTEGRITY_EXCEPTION",
            "field integrity exception: the event would end after the year 9999",
            ("EndDateTime",),
        ) from None


def _money(name: str, value: float) -> float:
    """A computed currency amount, in cents as Salesforce keeps it; refused when out of range."""
    if not math.isfinite(value) or abs(value) >= 10**18:
        raise _fault("NUMBER_OUTSIDE_VALID_RANGE", f"{name}: value outside of valid range: {value!r}", (name,))
    return round(value, 2)


def _schedule(
    col: Mapping[str, str], row: dict[str, Any], current: Mapping[str, Any] | None, value: Callable[[str], Any]
) -> None:
    """An event's times as Salesforce keeps them: a timed event has a start and a duration or an end (the
    other follows; ActivityDate is the start's day); an all-day event has its day (ActivityDate), lasting
    1,440 minutes from its midnight (UTC)."""
    needed = ("StartDateTime", "EndDateTime", "DurationInMinutes", "ActivityDate", "IsAllDayEvent")
    if any(n not in col for n in needed):
        return
    start_col, end_col, minutes_col, day_col = (col[n] for n in needed[:4])
    if value("IsAllDayEvent"):
        day = value("ActivityDate") if col["ActivityDate"] in row or current is not None else None
        day = day or (value("StartDateTime") or "")[:10] or None
        if day is None:
            raise _fault("REQUIRED_FIELD_MISSING", "Required fields are missing: [ActivityDate]", ("ActivityDate",))
        midnight = dt.datetime.combine(dt.date.fromisoformat(day), dt.time(0), dt.UTC)
        row[day_col], row[minutes_col] = day, 1440
        row[start_col], row[end_col] = format_datetime(midnight), format_datetime(_later(midnight, 1440))
        return
    start_text = value("StartDateTime")
    start = parse_datetime_value(start_text) if isinstance(start_text, str) else None
    if start is None:
        raise _fault("REQUIRED_FIELD_MISSING", "Required fields are missing: [StartDateTime]", ("StartDateTime",))
    end_given = row.get(end_col) is not None
    minutes_given = row.get(minutes_col) is not None
    if end_given:
        end = parse_datetime_value(row[end_col])
        assert end is not None  # stored values are formatted datetimes
        span = (end - start).total_seconds() / 60
        if span > MAX_EVENT_MINUTES:
            raise _too_long()
        if span < 0:
            raise _fault(
                "FIELD_INTEGRITY_EXCEPTION",
                "field integrity exception: EndDateTime is before StartDateTime",
                ("EndDateTime",),
            )
        if minutes_given and row[minutes_col] != span:
            raise _fault(
                "FIELD_INTEGRITY_EXCEPTION",
                f"field integrity exception: DurationInMinutes ({row[minutes_col]}) does not match the time from "
                f"StartDateTime to EndDateTime ({span:g} minutes): give one of them",
                ("DurationInMinutes", "EndDateTime"),
            )
        row[minutes_col] = int(span) if span.is_integer() else span
    else:
        minutes = value("DurationInMinutes")
        if minutes is None:
            raise _fault(
                "REQUIRED_FIELD_MISSING",
                "Required fields are missing: [DurationInMinutes] (or EndDateTime)",
                ("DurationInMinutes",),
            )
        if minutes < 0:
            raise _fault(
                "FIELD_INTEGRITY_EXCEPTION",
                "field integrity exception: DurationInMinutes is negative",
                ("DurationInMinutes",),
            )
        if minutes > MAX_EVENT_MINUTES:
            raise _too_long()
        row[end_col] = format_datetime(_later(start, minutes))
    row[start_col] = format_datetime(start)
    row[day_col] = start.date().isoformat()


def _row_expr(field: Field, present: set[str]) -> str:
    """SQL for ``field`` over a session's rows table (for its text index)."""
    if field.column_name.lower() in present:
        return quote_identifier(field.column_name)
    if field.formula is not None:
        return _qualify(field.formula, "r", "crm_number")
    return "NULL"


class _SessionIndex(SearchIndex):
    """The org's shared full-text index, with the session's own rows searched beside it."""

    def __init__(self, base: SearchIndex, state: _State) -> None:
        super().__init__(base.path)
        self._base = base
        self._state = state

    def search(
        self, obj: SObject, terms: SearchTerms, scope: str, limit: int = MAX_RESULTS, deadline: float = math.inf
    ) -> list[str]:
        state = self._state
        if obj.name not in state.written:
            return self._base.search(obj, terms, scope, limit, deadline)
        with state.trust() as conn:
            _, rows, gone = state.names(obj)
            hidden = {r[0] for r in conn.execute(f'SELECT "Id" FROM {gone}')}
            fields = _columns(obj, "ALL")
            fts = f"crm_fts_{obj.name}"
            if obj.name in state.fts_dirty or obj.name not in state.vocabulary:
                present = {r[1].lower() for r in conn.execute(f'PRAGMA crm.table_info("crm_rows_{obj.name}")')}
                exprs = [_row_expr(f, present) for f in fields]
                cols = ", ".join(f"c{i}" for i in range(len(fields)))
                conn.execute(f'DROP TABLE IF EXISTS temp."{fts}"')
                conn.execute(f'DROP TABLE IF EXISTS temp."{fts}_vocab"')
                conn.execute(
                    f'CREATE VIRTUAL TABLE temp."{fts}" USING fts5(rid UNINDEXED, {cols}, '
                    "tokenize = 'unicode61 remove_diacritics 0', prefix = '2 3')"
                )
                values = conn.execute(
                    f'SELECT r."Id", {", ".join(exprs)} FROM {rows} AS r WHERE r."IsDeleted" = 0'
                ).fetchall()
                marks = ", ".join("?" for _ in range(len(fields) + 1))
                conn.executemany(
                    f'INSERT INTO temp."{fts}" (rid, {cols}) VALUES ({marks})',
                    ((r[0], *(_index_text(f, v) for f, v in zip(fields, r[1:], strict=True))) for r in values),
                )
                conn.execute(f'CREATE VIRTUAL TABLE temp."{fts}_vocab" USING fts5vocab(temp, "{fts}", row)')
                state.vocabulary[obj.name] = [
                    t for (t,) in conn.execute(f'SELECT term FROM temp."{fts}_vocab" ORDER BY term')
                ]
                state.fts_dirty.discard(obj.name)
            wanted = {f.name for f in _columns(obj, "ALL" if obj.name in _EVERY_FIELD_ALWAYS else scope)}
            mine: list[str] = []
            expression = _Expression(state.vocabulary[obj.name], obj, deadline).of(terms.tree(obj)) if wanted else None
            if expression is not None and limit > 0:
                cols = " ".join(f"c{i}" for i, f in enumerate(fields) if f.name in wanted)
                state.deadline = deadline
                seen = signals.received()
                try:
                    found = conn.execute(
                        f'SELECT rid FROM temp."{fts}" WHERE "{fts}" MATCH ? ORDER BY rank, rid LIMIT ?',
                        ("{" + cols + "} : (" + expression + ")", limit),
                    ).fetchall()
                except sqlite3.Error as exc:
                    raise_if_signalled(exc, seen, deadline)
                    raise _search_error(exc) from None
                finally:
                    state.deadline = math.inf
                mine = [r[0] for r in found]
        # The session's own matches first (its latest writes), then the org's, minus what the session hid.
        theirs = self._base.search(obj, terms, scope, limit + len(hidden), deadline)
        return (mine + [i for i in theirs if i not in hidden])[:limit]


def _planner(backend: _Backend, state: _State, written: frozenset[str]) -> _Backend:
    """A planner over ``backend``'s file whose catalog has the system columns of the ``written`` objects."""
    with _PLANNERS_LOCK:
        planners = backend.cache.get(_PLANNERS_KEY)
        if not isinstance(planners, OrderedDict):
            planners = OrderedDict()
            backend.cache[_PLANNERS_KEY] = planners
        found = planners.get(written)
        if found is not None:
            planners.move_to_end(written)
            return found
    catalog = backend.catalog
    columns = dict(catalog.columns)
    # The written objects by the names of the planner's catalog (a declared-names planner of a drifted org
    # names them otherwise than the session's schema): by their table.
    by_table = {o.table_name.lower(): o.name for o in catalog.schema.objects + catalog.schema.standard_objects}
    for name in written:
        obj = state.schema.get_object(name)
        key = None if obj is None else by_table.get(obj.table_name.lower())
        if obj is not None and key in columns:
            columns[key] = columns[key] | state.layout(obj).extra
    planner = copy.copy(backend)  # the same compile path and lock; its own catalog and plan cache
    planner.catalog = Catalog(catalog.tables, columns, catalog.empty, catalog.schema)
    planner.plans = BytesLRU(1024, 4 * 2**20)  # at most _MAX_PLANNERS of them: 128 MiB of plans in all
    with _PLANNERS_LOCK:
        planners[written] = planner
        while len(planners) > _MAX_PLANNERS:
            planners.popitem(last=False)
    return planner


def write_access(obj: SObject, field: Field) -> tuple[bool, bool]:
    """(createable, updateable) of ``field`` in a session, as its describe reports them and writes enforce them.

    Example:
        >>> from crmarena_gym.schema import get_object
        >>> case = get_object("Case")
        >>> [write_access(case, case.get_field(n)) for n in ("Subject", "CreatedDate", "ClosedDate", "CaseNumber")]
        [(True, True), (True, False), (False, False), (False, False)]
    """
    if field.type is FieldType.ID:
        return False, False
    if field.name in SETTABLE_ON_CREATE or (field.create_only and field.formula is None and not field.readonly):
        return True, False
    if field.formula is not None or field.readonly or field.autonumber or field.name in AUDIT_FIELDS:
        return False, False
    return True, True


def _record_bytes(row: Mapping[str, Any]) -> int:
    """The storage a record counts for: its values' characters (8 per number), at least 2 KB."""
    size = 64
    for key, value in row.items():
        if key in ("crm_bytes", "crm_number"):
            continue
        size += len(value) if isinstance(value, str) else 8
    return max(RECORD_STORAGE_BYTES, size)


class OrgSession(LocalOrg):
    """A writable, isolated, copy-on-write view of an embedded org (see the module's description).

    Queries and searches answer as :class:`LocalOrg` does, plus the session's own writes. Views made by
    :meth:`with_today` share the session (its writes included). The org file never changes.

    Args:
        org: A :class:`LocalOrg` (its backend and plan cache are shared) or the path of an org file.
        today: The date relative literals resolve against (default: ``org``'s).
        timeout: Seconds a query may run (default: ``org``'s).
        user: The id of the user the session writes as (``CreatedById``, ``LastModifiedById``); default
            the org's API user, the first user (the one who set the org up).
        clock: What the session stamps writes with (a callable returning an aware datetime). Default:
            with a ``today``, the start of that day (then one millisecond later for each further write,
            so that runs are reproducible); without one, the real clock. :func:`day_clock` is a live
            clock on a chosen day.
        store: A SQLite file that keeps the session's writes (created if missing; a session opened on
            it again has them back). None: they live in memory and die with the session.
        max_storage: The most bytes of records the session holds (:data:`SESSION_STORAGE_BYTES`).
        own_ids: Number the session's new records from the same first id as every session that does so
            (a reproducible episode: the same writes give the same ids), rather than from the process's
            sequence, which no two sessions share (the served org's: an id from one session never names a
            record of another). Not with ``store``.

    Example:
        >>> base = LocalOrg(getfixture("tiny_org"), today="2021-02-20")
        >>> session = OrgSession(base)
        >>> new_id = session.create("Issue__c", {"Name": "Zipper Broke"})
        >>> session.query("SELECT Name, CreatedDate FROM Issue__c WHERE CreatedDate = TODAY")["records"][0]["Name"]
        'Zipper Broke'
        >>> base.query("SELECT Name FROM Issue__c WHERE Name = 'Zipper Broke'")["totalSize"]
        0
        >>> session.update("Issue__c", new_id, {"Status": "x"})
        Traceback (most recent call last):
        ...
        crmarena_gym.org._base.OrgError: INVALID_FIELD: No such column 'Status' on sobject of type Issue__c
    """

    def __init__(
        self,
        org: LocalOrg | str | Path,
        *,
        today: dt.date | str | None = _UNSET,
        timeout: float | None = None,
        user: str | None = None,
        clock: Callable[[], dt.datetime] | None = None,
        store: str | Path | None = None,
        max_storage: int = SESSION_STORAGE_BYTES,
        own_ids: bool = False,
    ) -> None:
        if own_ids and store is not None:
            raise ValueError("own_ids numbers a session's records from a fixed start: a stored session cannot")
        if isinstance(max_storage, bool) or not isinstance(max_storage, int) or max_storage < RECORD_STORAGE_BYTES:
            raise ValueError(f"max_storage must be at least {RECORD_STORAGE_BYTES} bytes, got {max_storage!r}")
        if clock is not None and not callable(clock):
            raise TypeError(f"clock must be a callable returning a datetime, got {clock!r}")
        base = org if isinstance(org, LocalOrg) else LocalOrg(org)
        backend = base._live()
        self._today = base.today if today is _UNSET else _coerce_today(today)
        self._timeout = base.timeout if timeout is None else float(timeout)
        state = _State(
            backend.path, backend.catalog.tables, None if store is None else Path(store), backend.catalog.schema
        )
        try:
            state.user = self._user(state, user)
        except BaseException:
            state.close()
            raise
        with _REGISTRY_LOCK:
            backend.refs += 1
        self._backend = backend
        if base is not org:
            base.close()
        self._state = state
        self._state.refs = 1
        state.own_ids = _FIRST_NEW if own_ids else None
        self._cache: dict[str, object] = {}
        self._index_lock = threading.Lock()
        self._clock = clock
        self._max_storage = max_storage

    @staticmethod
    def _user(state: _State, user: str | None) -> str | None:
        with state.trust() as conn:
            if "User" not in state.tables:
                return None
            table = f"main.{quote_identifier(state.tables['User'])}"
            if user is None:
                return conn.execute(f'SELECT MIN("Id") FROM {table}').fetchone()[0]
            if not isinstance(user, str) or not is_valid_id(user) or user[:3] != "005":
                raise ValueError(f"user must be the id of a User of the org, got {user!r}")
            if conn.execute(f'SELECT 1 FROM {table} WHERE "Id" = ?', (_id18(user),)).fetchone() is None:
                raise ValueError(f"user {user!r} is no User of the org")
            return _id18(user)

    def with_today(self, today: dt.date | str | None) -> OrgSession:
        """A view of this session (its writes included) whose relative literals resolve against ``today``."""
        view = OrgSession.__new__(OrgSession)
        view._today, view._timeout = _coerce_today(today), self._timeout
        backend = self._live()
        with _REGISTRY_LOCK:
            backend.refs += 1
        view._backend = backend
        view._state, view._cache, view._index_lock = self._state, self._cache, self._index_lock
        view._clock, view._max_storage = self._clock, self._max_storage
        view._declared = self._declared
        with self._state.lock:
            self._state.refs += 1
        return view

    @property
    def user(self) -> str | None:
        """The id of the user the session writes as."""
        return self._state.user

    @property
    def store(self) -> Path | None:
        """The file that keeps the session's writes (None: in memory)."""
        return self._state.store

    @property
    def backend_cache(self) -> dict[str, object]:
        """The session's own cache: its search index merges the org's index with the session's rows."""
        from crmarena_gym.org._sosl import _CACHE_KEY

        with self._index_lock:
            if _CACHE_KEY not in self._cache:
                self._cache[_CACHE_KEY] = _SessionIndex(_index_for(_Shared(self._live())), self._state)
        return self._cache

    def _plan(self, soql: str) -> Plan:
        backend = self._planner()
        written = frozenset(self._state.written)
        if not written:
            return backend.plan(soql)
        return _planner(backend, self._state, written).plan(soql)

    def _run(self, soql: str, keep: int | None = None) -> dict[str, Any]:
        with self._state.lock:  # compiled and run against the same overlays
            return super()._run(soql, keep)

    def _query_in_list(self, soql: str, at: int, raws: Sequence[str]) -> dict[str, Any] | None:
        # A search's hits are fetched with the query written out: compiled by the session's own planner
        # (its written objects' columns) and run under its lock, as every query of the session is.
        return None

    def _execute_head(
        self, sql: str, params: tuple[Any, ...], keep: int | None, timeout: float
    ) -> tuple[list[tuple[Any, ...]], int]:
        self._live()
        return self._state.execute_head(sql, params, timeout, keep)

    def query(self, soql: str, *, include_deleted: bool = False) -> dict[str, Any]:
        """Run a SOQL query; see :meth:`LocalOrg.query`.

        Args:
            soql: The query.
            include_deleted: Also return the records the session deleted (in the recycle bin, ``IsDeleted``
                true), as the REST API's ``queryAll`` does.

        Example:
            >>> session = OrgSession(getfixture("tiny_org"))
            >>> gone = session.create("Issue__c", {"Name": "Short-lived"})
            >>> session.delete("Issue__c", gone)
            >>> soql = "SELECT Name, IsDeleted FROM Issue__c WHERE Name = 'Short-lived'"
            >>> session.query(soql)["totalSize"], session.query(soql, include_deleted=True)["records"][0]["IsDeleted"]
            (0, True)
        """
        if not include_deleted:
            return super().query(soql)
        state = self._state
        with state.lock:
            with state.trust() as conn:
                conn.execute("UPDATE temp.crm_mode SET deleted = 1")
            try:
                return super().query(soql)
            finally:
                if not state.closed:
                    with state.trust() as conn:
                        conn.execute("UPDATE temp.crm_mode SET deleted = 0")

    # -- writes ------------------------------------------------------------------------------------

    def _now(self) -> dt.datetime:
        """The org's time for a write: never earlier than the last one of the same day, never the same."""
        if self._clock is not None:
            now = self._clock()
            if not isinstance(now, dt.datetime):
                raise TypeError(f"the session's clock returned {now!r}, not a datetime")
            now = now.astimezone(dt.UTC) if now.tzinfo else now.replace(tzinfo=dt.UTC)
        elif self._today is not None:
            now = dt.datetime.combine(self._today, dt.time(0), dt.UTC)
        else:
            now = dt.datetime.now(dt.UTC)
        now = now.replace(microsecond=now.microsecond // 1000 * 1000)
        last = self._state.last_stamp
        if last is not None and last.date() == now.date() and now <= last:
            now = last + dt.timedelta(milliseconds=1)
        self._state.last_stamp = now
        return now

    def _writable(self, sobject: object, action: str) -> SObject:
        obj = _object(self._state.schema, sobject)
        if obj.name not in self._state.tables:
            raise _fault("NOT_FOUND", f"sObject type '{obj.name}' is not supported: the org file has no such table.")
        if action == "delete" and obj.name in UNDELETABLE:
            raise _fault("INVALID_TYPE_FOR_OPERATION", f"entity type cannot be deleted: {obj.name}")
        return obj

    def create(self, sobject: str, values: Mapping[str, Any]) -> str:
        """Create a record; return its new 18-character id (with the object's key prefix).

        Raises:
            OrgError: ``NOT_FOUND`` (no such object), ``INVALID_FIELD`` (no such field),
                ``INVALID_FIELD_FOR_INSERT_UPDATE`` (``Id``, a computed or system field), ``REQUIRED_FIELD_MISSING``,
                ``JSON_PARSER_ERROR`` (a value of the wrong type), ``STRING_TOO_LONG``,
                ``INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST``, ``INVALID_EMAIL_ADDRESS``, ``MALFORMED_ID``
                or ``FIELD_INTEGRITY_EXCEPTION`` (a reference of the wrong form or object),
                ``INVALID_CROSS_REFERENCE_KEY`` (a reference to no record), ``ENTITY_IS_DELETED`` (to a
                deleted one), ``STORAGE_LIMIT_EXCEEDED``.
        """
        obj = self._writable(sobject, "create")
        state = self._state
        with state.trust() as conn, state.atomic():
            layout = state.layout(obj)
            row = self._checked(conn, obj, layout, values, creating=True)
            now = format_datetime(self._now())
            for name, value in (
                ("CreatedDate", now),
                ("CreatedById", state.user),
                ("LastModifiedDate", now),
                ("LastModifiedById", state.user),
                ("SystemModstamp", now),
                ("IsDeleted", 0),
            ):
                field = obj.get_field(name)
                column = layout.column_of(field) if field is not None else None
                if column is not None and column not in row:
                    row[column] = value
            self._derive(conn, obj, layout, row, None, now)
            state.overlay(conn, obj)
            if state.own_ids is None:
                new_id = _new_id(state.schema, obj.key_prefix)
            else:
                new_id, state.own_ids = state.schema.make_id(obj.key_prefix, state.own_ids), state.own_ids + 1
            row["Id"] = new_id
            row["crm_number"] = state.next_number(conn, obj)
            size = _record_bytes(row)
            used = self._reserve(conn, size)
            row["crm_bytes"] = size
            _, rows, _ = state.names(obj)
            names = ", ".join(quote_identifier(c) for c in row)
            conn.execute(f"INSERT INTO {rows} ({names}) VALUES ({', '.join('?' for _ in row)})", tuple(row.values()))
            state.storage = used + size
            state.fts_dirty.add(obj.name)
            if obj.name == "OpportunityLineItem":
                self._roll_up(conn, {row.get("OpportunityId")})
            return new_id

    def update(self, sobject: str, record_id: str, values: Mapping[str, Any]) -> None:
        """Change fields of a record (``None`` clears a field); its LastModified fields move.

        Raises:
            OrgError: As :meth:`create`, and ``MALFORMED_ID``, ``NOT_FOUND`` or ``ENTITY_IS_DELETED`` for the id.
        """
        obj = self._writable(sobject, "update")
        state = self._state
        with state.trust() as conn, state.atomic():
            rid = self._existing(conn, obj, record_id)
            layout = state.layout(obj)
            row = self._checked(conn, obj, layout, values, creating=False, record_id=rid)
            if obj.name == "Opportunity" and "Amount" in row and self._has_lines(conn, rid):
                raise _fault(
                    "FIELD_INTEGRITY_EXCEPTION",
                    "field integrity exception: Amount is the sum of the opportunity's products' total prices "
                    "while it has products: change the products instead",
                    ("Amount",),
                )
            before = self._lookup(conn, obj.name, rid, "OpportunityId") if obj.name == "OpportunityLineItem" else None
            self._apply(conn, obj, rid, row)
            if obj.name == "OpportunityLineItem":
                self._roll_up(conn, {before, self._lookup(conn, obj.name, rid, "OpportunityId")})

    def upsert(self, sobject: str, field: str, value: object, values: Mapping[str, Any]) -> tuple[str, bool]:
        """Create or update the record whose External ID ``field`` is ``value``: (its id, whether it was created).

        ``field`` ``Id`` names the record by its id (created when ``value`` is None). ``values`` may not
        set ``field`` to another value.

        Raises:
            OrgError: ``NOT_FOUND`` (``field`` is no External ID field of the object), ``MULTIPLE_RECORDS_FOUND``
                (several records have ``value``: ``err.ids`` lists them), and as :meth:`create` and :meth:`update`.

        Example:
            >>> session = OrgSession(getfixture("tiny_org"))
            >>> made = session.upsert("Product2", "External_ID__c", "SKU-1", {"Name": "Kite"})
            >>> again = session.upsert("Product2", "External_ID__c", "SKU-1", {"Name": "Red kite"})
            >>> made[1], again == (made[0], False), session.get("Product2", made[0], ["Name"])["Name"]
            (True, True, 'Red kite')
        """
        obj = self._writable(sobject, "create")
        key = obj.get_field(field) if isinstance(field, str) else None
        if key is None or not (key.external_id or key.type is FieldType.ID):
            raise _fault(
                "NOT_FOUND",
                f"Provided external ID field does not exist or is not accessible: {field!r} is no External ID field "
                f"of {obj.name}",
            )
        if not isinstance(values, Mapping):
            raise _fault("JSON_PARSER_ERROR", f"a record's fields are a JSON object, got {values!r}")
        given = next((v for k, v in values.items() if isinstance(k, str) and k.lower() == key.name.lower()), _UNSET)
        if given is not _UNSET and given != value:
            raise _fault(
                "INVALID_FIELD",
                f"The value of {key.name} in the record ({given!r}) differs from the one in the URL ({value!r})",
                (key.name,),
            )
        rest = {k: v for k, v in values.items() if not (isinstance(k, str) and k.lower() == key.name.lower())}
        state = self._state
        with state.trust() as conn, state.atomic():
            if key.type is FieldType.ID:
                if value is None:
                    return self.create(obj.name, rest), True
                self.update(obj.name, value, rest)  # type: ignore[arg-type]
                return _id18(str(value)), False
            if not isinstance(value, str) or not value.strip():
                raise _fault("MALFORMED_ID", f"{key.name}: an External ID value is text, got {value!r}", (key.name,))
            view = quote_identifier(state.tables[obj.name])
            matches = [
                r[0]
                for r in conn.execute(
                    f'SELECT "Id" FROM {view} WHERE {quote_identifier(key.column_name)} = ? COLLATE NOCASE LIMIT 10',
                    (value,),
                )
            ]
            if len(matches) > 1:
                err = _fault(
                    "MULTIPLE_RECORDS_FOUND",
                    f"More than one record found for external id field {key.name} with value {value!r}",
                )
                err.ids = matches  # type: ignore[attr-defined]
                raise err
            if matches:
                self.update(obj.name, matches[0], rest)
                return matches[0], False
            return self.create(obj.name, {**rest, key.name: value}), True

    def delete(self, sobject: str, record_id: str) -> None:
        """Delete a record (from this session's view only) as Salesforce does: to the recycle bin, with
        the children its relationships cascade to, lookups to it cleared.

        Raises:
            OrgError: ``MALFORMED_ID``, ``NOT_FOUND`` or ``ENTITY_IS_DELETED``; ``DELETE_FAILED`` when a
                relationship protects it (an account with cases or orders ...); ``INVALID_TYPE_FOR_OPERATION``
                for a user.

        Example:
            >>> session = OrgSession(getfixture("tiny_org"))
            >>> account = session.query("SELECT AccountId FROM Case LIMIT 1")["records"][0]["AccountId"]
            >>> session.delete("Account", account)  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            crmarena_gym.org._base.OrgError: DELETE_FAILED: Your attempt to delete Sam OR could not be completed ...
        """
        obj = self._writable(sobject, "delete")
        state = self._state
        with state.trust() as conn, state.atomic():
            rid = self._existing(conn, obj, record_id)
            if obj.name == "OrderItem":
                order = (
                    conn.execute(
                        f'SELECT o."Status" FROM {quote_identifier(state.tables["Order"])} AS o JOIN '
                        f'{quote_identifier(state.tables["OrderItem"])} AS i ON i."OrderId" = o."Id" WHERE i."Id" = ?',
                        (rid,),
                    ).fetchone()
                    if "Order" in state.tables
                    else None
                )
                if order is not None and order[0] == "Activated":
                    raise _fault(
                        "DELETE_FAILED",
                        "You can't delete products from an activated order: deactivate the order first "
                        "(set its Status to Draft)",
                    )
            doomed, clears = self._deletion(conn, obj, rid)
            self._refuse_activated(conn, doomed.get("Contract", []))
            lines = doomed.get("OpportunityLineItem", [])
            parents = {self._lookup(conn, "OpportunityLineItem", i, "OpportunityId") for i in lines}
            for child, field, ids in clears:
                column = state.layout(child).column_of(field)
                for child_id in ids:
                    self._apply(conn, child, child_id, {column: None} if column else {})
            for name, ids in doomed.items():
                target = _object(state.schema, name)
                for doomed_id in ids:
                    self._apply(conn, target, doomed_id, {"IsDeleted": 1})
            self._roll_up(conn, parents - set(doomed.get("Opportunity", [])))

    def _has_lines(self, conn: sqlite3.Connection, opportunity: str) -> bool:
        if "OpportunityLineItem" not in self._state.tables:
            return False
        table = quote_identifier(self._state.tables["OpportunityLineItem"])
        return (
            conn.execute(f'SELECT 1 FROM {table} WHERE "OpportunityId" = ? LIMIT 1', (opportunity,)).fetchone()
            is not None
        )

    def _refuse_activated(self, conn: sqlite3.Connection, contracts: list[str]) -> None:
        """Salesforce deletes no activated contract (nor, so, an account that has one)."""
        for cid in contracts:
            if self._lookup(conn, "Contract", cid, "Status") == "Activated":
                number = self._lookup(conn, "Contract", cid, "ContractNumber")
                raise _fault(
                    "DELETE_FAILED",
                    f"Your attempt to delete could not be completed because contract {number or cid} is activated: "
                    "an activated contract cannot be deleted",
                )

    def _deletion(
        self, conn: sqlite3.Connection, obj: SObject, rid: str
    ) -> tuple[dict[str, list[str]], list[tuple[SObject, Field, list[str]]]]:
        """What deleting ``rid`` deletes (by object) and the lookups to clear; refused where a relationship forbids."""
        state = self._state
        doomed: dict[str, list[str]] = {obj.name: [rid]}
        seen = {rid}
        found_clears: list[tuple[SObject, Field, list[str]]] = []
        todo: list[tuple[SObject, list[str]]] = [(obj, [rid])]
        while todo:
            parent, ids = todo.pop(0)
            for _rel, child, field in state.schema.child_relationships(parent):
                if field.on_delete is None or child.name not in state.tables:
                    continue
                column = state.layout(child).column_of(field)
                if column is None:
                    continue
                children = [c for c in self._referencing(conn, child, column, ids) if c[0] not in seen]
                if not children:
                    continue
                if field.on_delete == "restrict":
                    raise self._protected(conn, parent, ids, child, field, children)
                if field.on_delete == "cascade":
                    more = [c[0] for c in children]
                    seen.update(more)
                    doomed.setdefault(child.name, []).extend(more)
                    todo.append((child, more))
                else:
                    found_clears.append((child, field, [c[0] for c in children]))
        clears = [(c, f, [i for i in ids if i not in seen]) for c, f, ids in found_clears]
        return doomed, [(c, f, ids) for c, f, ids in clears if ids]

    def _referencing(
        self, conn: sqlite3.Connection, child: SObject, column: str, ids: list[str]
    ) -> list[tuple[str, str]]:
        """(id, the parent id it names) of the live ``child`` records whose ``column`` names one of ``ids``."""
        table = quote_identifier(self._state.tables[child.name])
        out: list[tuple[str, str]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            out += conn.execute(
                f'SELECT "Id", {quote_identifier(column)} FROM {table} WHERE {quote_identifier(column)} IN ({marks})',
                tuple(chunk),
            ).fetchall()
        return out

    def _protected(
        self,
        conn: sqlite3.Connection,
        parent: SObject,
        ids: list[str],
        child: SObject,
        field: Field,
        children: list[tuple[str, str]],
    ) -> OrgError:
        """Salesforce's refusal of a delete that would orphan protected children."""
        parent_id = children[0][1]
        shown = self._display_name(conn, parent, parent_id)
        number = next((f for f in child.fields if f.autonumber), None)
        listed = [c[0] for c in children if c[1] == parent_id][:10]
        if number is not None:  # Salesforce lists the records by their numbers (case numbers)
            table = quote_identifier(self._state.tables[child.name])
            expr = self._field_sql(child, number, "t")
            marks = ", ".join("?" for _ in listed)
            listed = [
                r[0]
                for r in conn.execute(
                    f'SELECT {expr} AS n FROM {table} AS t WHERE t."Id" IN ({marks}) ORDER BY n', tuple(listed)
                )
            ]
        plural = child.label.lower() + ("es" if child.label.endswith(("s", "x")) else "s")
        return _fault(
            "DELETE_FAILED",
            f"Your attempt to delete {shown} could not be completed because it is associated with the following "
            f"{plural}.: {', '.join(listed)}",
        )

    def _field_sql(self, obj: SObject, field: Field, alias: str) -> str:
        """SQL for ``field`` of ``obj`` read through the session (its view, or the file's table)."""
        if field.formula is None or (
            obj.name in self._state.written and field.name.lower() in self._state.layout(obj).extra
        ):
            return f"{alias}.{quote_identifier(field.column_name)}"
        return _qualify(field.formula, alias, "rowid")

    def _display_name(self, conn: sqlite3.Connection, obj: SObject, rid: str) -> str:
        table = quote_identifier(self._state.tables[obj.name])
        name = next((f for f in obj.fields if f.name_field), None)
        if name is not None:
            expr = self._field_sql(obj, name, "t")
            found = conn.execute(f'SELECT {expr} FROM {table} AS t WHERE t."Id" = ?', (rid,)).fetchone()
            if found and found[0]:
                return str(found[0])
        return rid

    def _apply(self, conn: sqlite3.Connection, obj: SObject, rid: str, changes: Mapping[str, Any]) -> None:
        """Write ``changes`` (columns of the session's rows) to a live record, stamping it modified."""
        state = self._state
        layout = state.layout(obj)
        state.overlay(conn, obj)
        _, rows, gone = state.names(obj)
        view = quote_identifier(state.tables[obj.name])
        stored = ", ".join(quote_identifier(c) for c in layout.stored)
        old_row = conn.execute(f'SELECT {stored}, crm_bytes FROM {rows} WHERE "Id" = ?', (rid,)).fetchone()
        if old_row is None:
            copied = conn.execute(f'SELECT {stored} FROM {view} WHERE "Id" = ?', (rid,)).fetchone()
            if copied is None:
                raise _fault("NOT_FOUND", f"The requested resource does not exist: no {obj.name} with id {rid!r}")
            current = dict(zip(layout.stored, copied, strict=True))
            old_bytes = 0
        else:
            current = dict(zip(layout.stored, old_row[:-1], strict=True))
            old_bytes = int(old_row[-1] or 0)
        now = format_datetime(self._now())
        merged = dict(changes)
        for name, value in (("LastModifiedDate", now), ("LastModifiedById", state.user), ("SystemModstamp", now)):
            field = obj.get_field(name)
            column = layout.column_of(field) if field is not None else None
            if column is not None:
                merged[column] = value
        self._derive(conn, obj, layout, merged, current, now)
        final = {**current, **merged}
        size = _record_bytes(final)
        used = self._reserve(conn, size - old_bytes)
        final["crm_bytes"] = size
        if old_row is None:
            names = ", ".join(quote_identifier(c) for c in final)
            conn.execute(
                f"INSERT INTO {rows} ({names}) VALUES ({', '.join('?' for _ in final)})", tuple(final.values())
            )
            conn.execute(f'INSERT OR IGNORE INTO {gone} ("Id") VALUES (?)', (rid,))
        else:
            changed = {**merged, "crm_bytes": size}
            sets = ", ".join(f"{quote_identifier(c)} = ?" for c in changed)
            conn.execute(f'UPDATE {rows} SET {sets} WHERE "Id" = ?', (*changed.values(), rid))
        state.storage = used + size - old_bytes
        state.fts_dirty.add(obj.name)

    def _derive(
        self,
        conn: sqlite3.Connection,
        obj: SObject,
        layout: _Layout,
        row: dict[str, Any],
        current: Mapping[str, Any] | None,
        now: str,
    ) -> None:
        """What Salesforce sets on a write beside the fields it was given (``row``: the write's columns,
        changed in place; ``current``: the record before it, None on a create).

        A case closing stamps ClosedDate (reopening clears it); an opportunity changing stage takes the
        stage's probability unless the write gives one; a line of an opportunity or a quote is priced
        from its price book entry (list price, product) and its total follows its quantity, price and
        discount; an activity's account and a quote's account follow the records they are about.
        """
        # Keyed by the declared names: after schema drift the org's automation runs on the fields that carry the
        # declared fields' values (renamed, or a migrated field's replacement), not on a deprecated one.
        name, declared = self._state.schema.declared_names(obj.name)
        away = set(declared.values()) - set(declared)
        col = {
            declared.get(f.name, f.name): c
            for f in obj.fields
            if f.name not in away and (c := layout.column_of(f)) is not None
        }

        def value(name: str) -> Any:
            column = col.get(name)
            if column is None:
                return None
            if column in row:
                return row[column]
            return current.get(column) if current is not None else None

        def touched(*names: str) -> bool:
            return current is None or any(col.get(n) in row for n in names if col.get(n) is not None)

        if name == "Case" and {"Status", "ClosedDate"} <= col.keys() and col["Status"] in row:
            status, closed = col["Status"], col["ClosedDate"]
            was_closed = current is not None and current.get(status) == "Closed"
            if row[status] == "Closed" and not was_closed:
                row[closed] = now
            elif row[status] != "Closed" and (current is None or was_closed):
                row[closed] = None
        elif name == "Opportunity" and {"StageName", "Probability"} <= col.keys():
            stage = row.get(col["StageName"])
            moved = col["StageName"] in row and (current is None or current.get(col["StageName"]) != stage)
            if moved and col["Probability"] not in row and stage in STAGE_PROBABILITY:
                row[col["Probability"]] = STAGE_PROBABILITY[stage]
        elif name in _LINE_PARENTS:
            self._price_line(conn, obj, col, row, current, value)
        elif name in ("Task", "Event"):
            if "AccountId" in col and touched("WhatId", "WhoId"):
                row[col["AccountId"]] = self._activity_account(conn, value("WhatId"), value("WhoId"))
            if name == "Event" and touched("StartDateTime", "EndDateTime", "DurationInMinutes", "IsAllDayEvent"):
                _schedule(col, row, current, value)
        elif name == "Quote" and "AccountId" in col and touched("OpportunityId"):
            row[col["AccountId"]] = self._lookup(conn, "Opportunity", value("OpportunityId"), "AccountId")

    def _price_line(
        self,
        conn: sqlite3.Connection,
        obj: SObject,
        col: Mapping[str, str],
        row: dict[str, Any],
        current: Mapping[str, Any] | None,
        value: Callable[[str], Any],
    ) -> None:
        """A line of an opportunity or a quote, priced as Salesforce prices it (see :meth:`_derive`)."""
        parent_name, parent_field = _LINE_PARENTS[obj.name]
        if "PricebookEntryId" in col and (current is None or col["PricebookEntryId"] in row):
            entry = value("PricebookEntryId")
            product = self._lookup(conn, "PricebookEntry", entry, "Product2Id")
            given = row.get(col["Product2Id"]) if "Product2Id" in col else None
            if given is not None and product is not None and given != product:
                raise _fault(
                    "FIELD_INTEGRITY_EXCEPTION",
                    f"field integrity exception: Product2Id ({given}) is not the product of PricebookEntryId "
                    f"({entry}), {product}",
                    ("Product2Id",),
                )
            parent = value(parent_field)
            book = self._lookup(conn, parent_name, parent, "Pricebook2Id")
            entry_book = self._lookup(conn, "PricebookEntry", entry, "Pricebook2Id")
            if book is not None and entry_book is not None and book != entry_book:
                raise _fault(
                    "FIELD_INTEGRITY_EXCEPTION",
                    f"field integrity exception: PricebookEntryId ({entry}) is in price book {entry_book}, not in "
                    f"the {parent_name.lower()}'s price book {book}",
                    ("PricebookEntryId",),
                )
            parent_obj = self._state.schema.get_object(parent_name)
            if book is None and entry_book is not None and parent_obj is not None and isinstance(parent, str):
                # The first product of a record without a price book gives it the product's price book.
                field = parent_obj.get_field("Pricebook2Id")
                column = self._state.layout(parent_obj).column_of(field) if field is not None else None
                if column is not None and self._lookup(conn, parent_name, parent, "Id") is not None:
                    self._apply(conn, parent_obj, parent, {column: entry_book})
            if "Product2Id" in col:
                row[col["Product2Id"]] = product
            if "ListPrice" in col:
                row[col["ListPrice"]] = self._lookup(conn, "PricebookEntry", entry, "UnitPrice")
        quantity = value("Quantity")
        if obj.name == "QuoteLineItem":  # TotalPrice is the org's: quantity times price, less the discount
            if current is None or any(col[n] in row for n in ("Quantity", "UnitPrice", "Discount") if n in col):
                price, discount = value("UnitPrice"), value("Discount") or 0.0
                total = None if quantity is None or price is None else quantity * price * (1 - discount / 100)
                row[col["TotalPrice"]] = None if total is None else _money("TotalPrice", total)
            return
        # An opportunity's line takes a sales price or a total price, never both; the other follows.
        unit, total = col.get("UnitPrice"), col.get("TotalPrice")
        if unit is None or total is None:
            return
        if unit in row and total in row and row[unit] is not None and row[total] is not None:
            raise _fault(
                "FIELD_INTEGRITY_EXCEPTION",
                "field integrity exception: TotalPrice and UnitPrice cannot both be specified on an opportunity "
                "product: give one, the other follows from the quantity",
                ("UnitPrice", "TotalPrice"),
            )
        if total in row and row[total] is not None:
            if not quantity:
                raise _fault(
                    "FIELD_INTEGRITY_EXCEPTION",
                    "field integrity exception: a total price needs a quantity other than 0",
                    ("Quantity",),
                )
            row[unit] = _money("UnitPrice", row[total] / quantity)
        elif current is None and (row.get(unit) is None):
            raise _fault(
                "FIELD_INTEGRITY_EXCEPTION",
                "field integrity exception: unknown (must specify either UnitPrice or TotalPrice)",
                ("UnitPrice", "TotalPrice"),
            )
        elif current is None or unit in row or col["Quantity"] in row:
            price = value("UnitPrice")
            row[total] = None if quantity is None or price is None else _money("TotalPrice", quantity * price)

    def _activity_account(self, conn: sqlite3.Connection, what: Any, who: Any) -> Any:
        """The account of a task or an event: the account it is about, that of the record it is about, or
        that of its contact."""
        schema = self._state.schema
        target = schema.object_for_id(what) if isinstance(what, str) else None
        if target is not None and target.name == "Account":
            return what
        if target is not None and target.get_field("AccountId") is not None:
            return self._lookup(conn, target.name, what, "AccountId")
        person = schema.object_for_id(who) if isinstance(who, str) else None
        if person is not None and person.name == "Contact":
            return self._lookup(conn, "Contact", who, "AccountId")
        return None

    def _declared_field(self, name: str, field_name: str) -> tuple[SObject | None, Field | None]:
        """The object the org kind declares as ``name`` and its field declared as ``field_name``, as the session's
        schema has them (after schema drift, under their new names): what the org's automation reads and writes."""
        current, names = self._state.schema.current_names(name, {field_name: None})
        obj = self._state.schema.get_object(current)
        return obj, (obj.get_field(next(iter(names))) if obj is not None else None)

    def _lookup(self, conn: sqlite3.Connection, name: str, rid: Any, field_name: str) -> Any:
        """Field ``field_name`` (declared names) of the live ``name`` record ``rid``, as the session sees it (None:
        no such record)."""
        obj, field = self._declared_field(name, field_name)
        if obj is None or field is None or not isinstance(rid, str) or obj.name not in self._state.tables:
            return None
        table = quote_identifier(self._state.tables[obj.name])
        found = conn.execute(
            f'SELECT {self._field_sql(obj, field, "t")} FROM {table} AS t WHERE t."Id" = ?', (rid,)
        ).fetchone()
        return found[0] if found else None

    def _roll_up(self, conn: sqlite3.Connection, opportunities: set[str]) -> None:
        """Each live opportunity of ``opportunities`` takes the sum of its products' total prices as its Amount."""
        state = self._state
        obj = state.schema.get_object("Opportunity")
        lines = state.schema.get_object("OpportunityLineItem")
        if obj is None or lines is None or "OpportunityLineItem" not in state.tables:
            return
        table = quote_identifier(state.tables["OpportunityLineItem"])
        for oid in sorted(o for o in opportunities if isinstance(o, str)):
            if self._lookup(conn, "Opportunity", oid, "Id") is None:
                continue  # deleted with its lines
            (total,) = conn.execute(
                f'SELECT TOTAL("TotalPrice") FROM {table} WHERE "OpportunityId" = ?', (oid,)
            ).fetchone()
            amount = _money("Amount", total)
            if self._lookup(conn, "Opportunity", oid, "Amount") != amount:
                _, field = self._declared_field("Opportunity", "Amount")
                column = state.layout(obj).column_of(field) if field is not None else None
                if column is not None:
                    self._apply(conn, obj, oid, {column: amount})

    def _reserve(self, conn: sqlite3.Connection, more: int) -> int:
        """The storage used before a write that adds ``more`` bytes; refused past ``max_storage``."""
        used = self._state.used_storage(conn)
        if more > 0 and used + more > self._max_storage:
            raise _fault(
                "STORAGE_LIMIT_EXCEEDED",
                f"storage limit exceeded: this session holds {used:,} bytes of records, at most "
                f"{self._max_storage:,}; delete records, reset the session or start another one",
            )
        return used

    def get(self, sobject: str, record_id: str, fields: list[str] | None = None) -> dict[str, Any]:
        """One record with ``fields`` (default: every field), shaped as a query's record.

        Raises:
            OrgError: ``NOT_FOUND``/``MALFORMED_ID``/``ENTITY_IS_DELETED`` for the id, ``INVALID_FIELD`` for a field.
        """
        obj = _object(self._state.schema, sobject)
        with self._state.trust() as conn:
            rid = self._existing(conn, obj, record_id)
        names = fields or [f.name for f in obj.fields if self._live().catalog.available(obj, f)]
        bad = [n for n in names if not isinstance(n, str) or not re.fullmatch(r"[A-Za-z_][\w.]*", n)]
        if bad:
            raise _fault("INVALID_FIELD", f"No such column {bad[0]!r} on sobject of type {obj.name}")
        records = self.query(f"SELECT {', '.join(names)} FROM {obj.name} WHERE Id = '{rid}'")["records"]
        if not records:
            raise _fault("NOT_FOUND", "The requested resource does not exist")
        return records[0]

    def changes(self, sobject: str, start: dt.datetime, end: dt.datetime, *, deleted: bool) -> list[dict[str, Any]]:
        """The records of ``sobject`` changed (or deleted) from ``start`` to ``end``, by ``SystemModstamp``:
        ``[{"id", "date"}]`` in time order (the REST API's ``updated`` and ``deleted`` resources).

        Raises:
            OrgError: NOT_FOUND for an object the org does not have.
        """
        obj = _object(self._state.schema, sobject)
        # Whole seconds, as Salesforce reads the window (it ignores what is finer): the end's second included.
        low, high = (
            v.astimezone(dt.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
            for v in (start, end + dt.timedelta(seconds=1))
        )
        soql = (
            f"SELECT Id, SystemModstamp FROM {obj.name} WHERE SystemModstamp >= {low} AND SystemModstamp < {high}"
            f"{' AND IsDeleted = true' if deleted else ''} ORDER BY SystemModstamp, Id"
        )
        records = self.query(soql, include_deleted=deleted)["records"]
        return [{"id": r["Id"], "date": r["SystemModstamp"]} for r in records]

    @contextmanager
    def batch(self, all_or_none: bool = True) -> Iterator[None]:
        """Run several writes as one: with ``all_or_none``, an exception inside undoes all of them.

        Example:
            >>> session = OrgSession(getfixture("tiny_org"))
            >>> try:
            ...     with session.batch():
            ...         _ = session.create("Issue__c", {"Name": "Kept only if all succeed"})
            ...         _ = session.create("Issue__c", {})
            ... except OrgError as err:
            ...     print(err.code)
            REQUIRED_FIELD_MISSING
            >>> session.query("SELECT COUNT() FROM Issue__c WHERE Name LIKE 'Kept%'")["totalSize"]
            0
        """
        state = self._state
        with state.lock:
            if not all_or_none:
                yield
                return
            with state.trust() as conn:
                conn.execute("SAVEPOINT crm_batch")
            try:
                yield
            except BaseException:
                if not state.closed:
                    with state.trust() as conn:
                        conn.execute("ROLLBACK TO crm_batch")
                        conn.execute("RELEASE crm_batch")
                        state.forget()
                raise
            with state.trust() as conn:
                conn.execute("RELEASE crm_batch")

    def reset(self) -> None:
        """Forget every write of the session: it sees the org file as it is again."""
        with self._state.trust() as conn:
            for (name,) in conn.execute(
                "SELECT name FROM crm.sqlite_master WHERE type = 'table' AND name LIKE 'crm\\_%' ESCAPE '\\'"
            ).fetchall():
                conn.execute(f"DROP TABLE IF EXISTS crm.{quote_identifier(name)}")
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_temp_master WHERE type = 'table' AND name LIKE 'crm\\_fts%' ESCAPE '\\'"
            ).fetchall():
                conn.execute(f"DROP TABLE IF EXISTS temp.{quote_identifier(name)}")
            for table in self._state.tables.values():
                conn.execute(f"DROP VIEW IF EXISTS temp.{quote_identifier(table)}")
            self._state.written.clear()
            self._state.vocabulary.clear()
            self._state.fts_dirty.clear()
            self._state.numbers.clear()
            self._state.storage = 0
            if self._state.own_ids is not None:
                self._state.own_ids = _FIRST_NEW

    def diff(self) -> StateDiff:
        """What the session changed in the org: every record it created, changed or deleted, field by field.

        Only the fields a user can write are compared; what the org derives from them (audit fields,
        auto-numbers, closure stamps) is not. A record created and deleted within the session left no trace.

        Example:
            >>> session = OrgSession(getfixture("tiny_org"))
            >>> case = session.query("SELECT Id, Priority FROM Case LIMIT 1")["records"][0]
            >>> session.update("Case", case["Id"], {"Priority": "Low" if case["Priority"] != "Low" else "High"})
            >>> [(c.op, c.sobject, sorted(c.fields)) for c in session.diff()]
            [('update', 'Case', ['Priority'])]
        """
        state = self._state
        changes: list[RecordChange] = []
        with state.trust() as conn:
            for name in sorted(state.written):
                obj = _object(state.schema, name)
                layout = state.layout(obj)
                base, rows, gone = state.names(obj)
                compared = [
                    (f.name, column)
                    for f in obj.fields
                    if f.name not in AUDIT_FIELDS
                    and any(write_access(obj, f))
                    and (column := layout.column_of(f)) is not None
                ]
                if not compared:
                    continue
                columns = ", ".join(quote_identifier(c) for _, c in compared)
                hidden = {r[0] for r in conn.execute(f'SELECT "Id" FROM {gone}')}
                for rid, deleted, *values in conn.execute(
                    f'SELECT "Id", "IsDeleted", {columns} FROM {rows} ORDER BY crm_number, rowid'
                ).fetchall():
                    if rid not in hidden:  # created by the session
                        if not deleted:
                            fields = {n: (None, v) for (n, _), v in zip(compared, values, strict=True) if v is not None}
                            changes.append(RecordChange(obj.name, rid, "create", fields))
                        continue
                    if deleted:
                        changes.append(RecordChange(obj.name, rid, "delete"))
                        continue
                    old = conn.execute(f'SELECT {columns} FROM {base} WHERE "Id" = ?', (rid,)).fetchone()
                    fields = {
                        n: (o, v)
                        for (n, _), o, v in zip(compared, old or [None] * len(values), values, strict=True)
                        if o != v
                    }
                    if fields:
                        changes.append(RecordChange(obj.name, rid, "update", fields))
        return StateDiff(tuple(changes))

    @property
    def written_rows(self) -> int:
        """How many records the session holds (created, changed or deleted) and hides (changed or deleted)."""
        with self._state.trust() as conn:
            total = 0
            for name in self._state.written:
                obj = _object(self._state.schema, name)
                _, rows, gone = self._state.names(obj)
                total += conn.execute(
                    f"SELECT (SELECT COUNT(*) FROM {rows}) + (SELECT COUNT(*) FROM {gone})"
                ).fetchone()[0]
            return total

    @property
    def storage_used(self) -> int:
        """The bytes of records the session holds, as counted against ``max_storage``."""
        with self._state.trust() as conn:
            return self._state.used_storage(conn)

    @property
    def max_storage(self) -> int:
        """The most bytes of records the session may hold."""
        return self._max_storage

    def drop(self) -> None:
        """Discard the session and its writes for every view of it (each view is closed)."""
        self._state.close()
        self.close()

    def close(self) -> None:
        """Release this view; the session's connection closes with its last view."""
        if self._backend is None:
            return
        with self._state.lock:
            self._state.refs -= 1
            last = self._state.refs <= 0
        if last:
            self._state.close()
        super().close()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("an OrgSession cannot be pickled: its writes live in this process only")

    def __repr__(self) -> str:
        where = str(self._backend.path) if self._backend is not None else "closed"
        return f"OrgSession({where!r}, today={self._today.isoformat() if self._today else None!r})"

    # -- validation --------------------------------------------------------------------------------

    def _locate(self, conn: sqlite3.Connection, record_id: str) -> tuple[SObject | None, str | None, bool]:
        """(object, stored id, deleted) of a record visible to the session or in its recycle bin."""
        obj = self._state.schema.object_for_id(record_id)
        if obj is None or obj.name not in self._state.tables:
            return obj, None, False
        rid = _id18(record_id)
        base, rows, gone = self._state.names(obj)
        written = obj.name in self._state.written
        for exact in (True, False):  # the id as given (an index look-up), then in any case (Salesforce's 18)
            match = '"Id" = ?' if exact else '"Id" = ? COLLATE NOCASE'
            if written:
                found = conn.execute(f'SELECT "Id", "IsDeleted" FROM {rows} WHERE {match}', (rid,)).fetchone()
                if found is not None:
                    return obj, found[0], bool(found[1])
                found = conn.execute(
                    f'SELECT "Id" FROM {base} WHERE {match} AND "Id" NOT IN (SELECT "Id" FROM {gone})', (rid,)
                ).fetchone()
            else:
                found = conn.execute(f'SELECT "Id" FROM {base} WHERE {match}', (rid,)).fetchone()
            if found is not None:
                return obj, found[0], False
        return obj, None, False

    def _existing(self, conn: sqlite3.Connection, obj: SObject, record_id: object) -> str:
        if not isinstance(record_id, str) or not is_valid_id(record_id):
            raise _fault("MALFORMED_ID", f"Invalid id: {record_id!r} is not a Salesforce record id of {obj.name}")
        if record_id[:3] != obj.key_prefix:
            raise _fault(
                "MALFORMED_ID",
                f"Provided external ID field does not exist or is not accessible: {record_id!r} is not an id of "
                f"{obj.name} (its ids start with {obj.key_prefix!r})",
            )
        _, rid, deleted = self._locate(conn, record_id)
        if deleted:
            raise _fault("ENTITY_IS_DELETED", f"entity is deleted: {record_id!r}")
        if rid is None:
            raise _fault("NOT_FOUND", f"The requested resource does not exist: no {obj.name} with id {record_id!r}")
        return rid

    def _checked(
        self,
        conn: sqlite3.Connection,
        obj: SObject,
        layout: _Layout,
        values: Mapping[str, Any],
        *,
        creating: bool,
        record_id: str | None = None,
    ) -> dict[str, Any]:
        """The columns and stored values of a write, validated against the schema."""
        if not isinstance(values, Mapping):
            raise _fault("JSON_PARSER_ERROR", f"a record's fields are a JSON object, got {values!r}")
        row: dict[str, Any] = {}
        given: set[str] = set()
        for key, value in values.items():
            if key == "attributes":
                continue
            field = obj.get_field(key) if isinstance(key, str) else None
            column = layout.column_of(field) if field is not None else None
            if field is None or (field.formula is None and column is None):
                raise _fault("INVALID_FIELD", f"No such column {key!r} on sobject of type {obj.name}", (str(key),))
            if field.type is FieldType.ID:
                if creating:
                    raise _fault("INVALID_FIELD_FOR_INSERT_UPDATE", "cannot specify Id in an insert call", ("Id",))
                if isinstance(value, str) and is_valid_id(value) and _id18(value).lower() == (record_id or "").lower():
                    continue  # the record's own id, as clients send it back
                raise _fault(
                    "INVALID_FIELD_FOR_INSERT_UPDATE", f"Id in the record ({value!r}) names another record", ("Id",)
                )
            settable = creating and (field.name in SETTABLE_ON_CREATE or field.create_only) and column is not None
            if not settable and (
                field.formula is not None
                or field.readonly
                or field.autonumber
                or field.name in AUDIT_FIELDS
                or field.create_only
                or column is None
            ):
                raise _fault(
                    "INVALID_FIELD_FOR_INSERT_UPDATE",
                    f"Unable to create/update fields: {field.name}. Please check the security settings of this field "
                    "and verify that it is read/write for your profile or permission set.",
                    (field.name,),
                )
            row[column] = self._stored(conn, field, value)  # type: ignore[index]
            given.add(field.name)
        if creating:
            for field in obj.fields:
                column = layout.column_of(field)
                if column is None or field.name in given:
                    continue
                # The schema's default; a record's owner is, as in Salesforce, the user who creates it.
                default = field.default
                if default is None and field.name == "OwnerId" and field.reference_to == "User":
                    default = self._state.user
                if default is not None:
                    row[column] = self._stored(conn, field, default)
                    given.add(field.name)
        missing = [
            f.name
            for f in obj.fields
            if f.required
            and (column := layout.column_of(f)) is not None
            and ((creating and f.name not in given) or (f.name in given and row.get(column) is None))
        ]
        if missing:
            raise _fault(
                "REQUIRED_FIELD_MISSING", f"Required fields are missing: [{', '.join(missing)}]", tuple(missing)
            )
        return row

    def _stored(self, conn: sqlite3.Connection, field: Field, value: Any) -> Any:
        """``value`` checked against ``field`` and converted to what the org file stores."""
        if value is None:
            return None
        kind = field.type
        if value == "" and not kind.is_numeric and kind is not FieldType.BOOLEAN:
            return None  # Salesforce stores no empty text: "" is null (a required field's "" is missing)
        if kind is FieldType.BOOLEAN:
            if not isinstance(value, bool):
                raise _bad_value(field, value, "true or false")
            return int(value)
        if kind.is_numeric:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _bad_value(field, value, "a number")
            if isinstance(value, float) and not math.isfinite(value):
                raise _bad_value(field, value, "a number")
            if abs(value) >= 10**18:  # an int of any size compares exactly, and never overflows a float
                digits = int(abs(value).bit_length() * 0.30103) if isinstance(value, int) else 0
                shown = f"a number of about {digits} digits" if digits > 1000 else repr(value)
                raise _fault(
                    "NUMBER_OUTSIDE_VALID_RANGE", f"{field.name}: value outside of valid range: {shown}", (field.name,)
                )
            if kind is FieldType.INTEGER:  # an int field takes whole numbers only (no silent truncation)
                if not float(value).is_integer():
                    raise _bad_value(field, value, "a whole number")
                return int(value)
            return float(value)
        if not isinstance(value, str):
            raise _bad_value(field, value, "text")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _bad_value(field, value, "text without lone surrogates (\\ud800-\\udfff)") from None
        if kind is FieldType.DATE:
            try:
                return dt.date.fromisoformat(value.strip()).isoformat()
            except ValueError:
                raise _bad_value(field, value, "a date like 2023-04-01") from None
        if kind is FieldType.DATETIME:
            parsed = parse_datetime_value(value)
            if parsed is None:
                raise _bad_value(field, value, "a datetime like 2023-04-01T10:30:00.000+0000")
            return format_datetime(parsed)
        limit = field.max_length
        if len(value) > limit:
            raise _fault(
                "STRING_TOO_LONG",
                f"{field.name}: data value too large: {value[:40]!r}... (max length={limit})",
                (field.name,),
            )
        if kind is FieldType.PICKLIST:
            if field.picklist_values and value not in field.picklist_values:
                raise _fault(
                    "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
                    f"{field.name}: bad value for restricted picklist field: {value[:80]!r} "
                    f"(allowed: {', '.join(field.picklist_values)})",
                    (field.name,),
                )
            return value
        if kind is FieldType.EMAIL and value and not _EMAIL_RE.match(value):
            raise _fault("INVALID_EMAIL_ADDRESS", f"{field.name}: invalid email address: {value[:80]!r}", (field.name,))
        if kind is FieldType.REFERENCE:
            targets = [t for t in (field.reference_to, *field.polymorphic) if t]
            if not is_valid_id(value):
                raise _fault("MALFORMED_ID", f"{field.name}: id value of incorrect type: {value!r}", (field.name,))
            target = self._state.schema.object_for_id(value)
            if target is None or target.name not in targets:
                raise _fault(
                    "FIELD_INTEGRITY_EXCEPTION",
                    f"{field.name}: id value of incorrect type: {value!r} is not an id of {' or '.join(targets)}",
                    (field.name,),
                )
            _, rid, deleted = self._locate(conn, value)
            if deleted:
                raise _fault("ENTITY_IS_DELETED", f"entity is deleted: {field.name} = {value!r}", (field.name,))
            if rid is None:
                raise _fault(
                    "INVALID_CROSS_REFERENCE_KEY",
                    f"invalid cross reference id: {field.name} = {value!r} names no {' or '.join(targets)} record",
                    (field.name,),
                )
            return rid
        return value


class _Shared:
    """What ``_index_for`` needs to find the org's shared search index in a backend's cache."""

    def __init__(self, backend: Any) -> None:
        self.path = backend.path
        self.backend_cache = backend.cache
