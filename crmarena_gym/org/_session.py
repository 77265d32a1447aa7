"""``OrgSession``: a writable, isolated, copy-on-write view of an embedded org.

``LocalOrg`` is read-only. A session is the one way to change data: ``create``, ``update`` and
``delete`` are validated against the schema and refused with Salesforce's error codes, and their
effects are visible to the session's own SOQL queries and SOSL searches, to no other session's, and
never reach the org file.

How: each session has its own SQLite connection to the org file (read-only, as every ``LocalOrg``).
The first write to an object creates, in that connection's private TEMP schema, a table of the
session's versions of the object's records, a table of the ids it hides (updated or deleted) and a
TEMP view with the object's own table name, ``main`` minus the hidden ids plus the session's rows.
SQLite resolves an unqualified name in TEMP first, so the engine's compiled plans (shared with every
other org on the file) run unchanged on the session's connection and see its writes. Objects the
session never wrote are read straight from the file, with all its indexes. SOSL searches merge the
shared full-text index with a small index of the session's own rows.

Memory: a session holds one SQLite connection (its page cache is capped at :data:`SESSION_CACHE_KIB`)
plus its own rows; ``python benchmarks/bench_serve.py`` measures the cost per session.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from crmarena_gym.org._base import OrgError
from crmarena_gym.org._local import _PROGRESS_STEPS, _REGISTRY_LOCK, LocalOrg, _coerce_today, run_bounded
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
from crmarena_gym.org.soql import SQL_FUNCTIONS
from crmarena_gym.schema import (
    Field,
    FieldType,
    SObject,
    get_object,
    id_checksum,
    is_valid_id,
    make_id,
    object_for_id,
    quote_identifier,
)

#: Page cache of one session's connection, in KiB (SQLite's default is 2,000).
SESSION_CACHE_KIB = 512
#: Most records one session may write (created or changed); past it writes are refused.
MAX_SESSION_ROWS = 100_000

# Salesforce's standard required fields of the 16 objects (nillable false, no default).
REQUIRED_FIELDS: Mapping[str, tuple[str, ...]] = {
    "User": ("LastName", "Username", "Email", "Alias", "TimeZoneSidKey", "LocaleSidKey", "EmailEncodingKey",
             "LanguageLocaleKey", "ProfileId"),
    "Account": ("LastName",),
    "Contact": ("LastName",),
    "ProductCategory": ("Name",),
    "Product2": ("Name",),
    "ProductCategoryProduct": ("ProductCategoryId", "ProductId"),
    "Pricebook2": ("Name",),
    "PricebookEntry": ("Pricebook2Id", "Product2Id", "UnitPrice"),
    "Order": ("AccountId", "Status", "EffectiveDate"),
    "OrderItem": ("OrderId", "Quantity", "UnitPrice", "PricebookEntryId"),
    "Issue__c": ("Name",),
    "Knowledge__kav": ("Title", "UrlName"),
    "LiveChatTranscript": ("LiveChatVisitorId",),
}  # fmt: skip
# Values a field takes when a create leaves it out (Salesforce's picklist defaults and audit fields).
_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "Case": {"Status": "New", "Priority": "Medium"},
    "Order": {},
    "Knowledge__kav": {"PublishStatus": "Draft", "Language": "en_US"},
    "Product2": {"IsActive": False},
    "Pricebook2": {"IsActive": False},
}
# Audit fields a create may set (as with Salesforce's "Set Audit Fields upon Record Creation") but an update may not.
_CREATE_ONLY = frozenset({"CreatedDate"})
#: Longest value of each text type, as Salesforce's describe reports it.
TEXT_LENGTHS: Mapping[FieldType, int] = {
    FieldType.ID: 18,
    FieldType.REFERENCE: 18,
    FieldType.STRING: 255,
    FieldType.TEXTAREA: 255,
    FieldType.LONG_TEXT: 131072,
    FieldType.EMAIL: 80,
    FieldType.PHONE: 40,
    FieldType.PICKLIST: 255,
}
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DATETIME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|[+-]\d{2}:?\d{2})?$")
# New records are numbered from here up (far above any generated or original id), one count per process,
# so that no two sessions of a process ever make the same id.
_NEW_NUMBERS = itertools.count(62**9 * 7)
_NEW_LOCK = threading.Lock()


_UNSET: Any = object()


def _fault(code: str, message: str, fields: tuple[str, ...] = ()) -> OrgError:
    err = OrgError(code, message)
    err.fields = list(fields)  # type: ignore[attr-defined]
    return err


def _object(name: object) -> SObject:
    obj = get_object(name) if isinstance(name, str) else None
    if obj is None:
        raise _fault("NOT_FOUND", f"sObject type {name!r} is not supported: the org has no such object.")
    return obj


def _id18(value: str) -> str:
    return value if len(value) == 18 else value + id_checksum(value)


def format_datetime(value: dt.datetime) -> str:
    """A datetime as the org stores and Salesforce returns it: ``2020-12-22T11:00:00.000+0000`` (UTC).

    Example:
        >>> format_datetime(dt.datetime(2020, 12, 22, 11, 0, tzinfo=dt.UTC))
        '2020-12-22T11:00:00.000+0000'
    """
    value = value.astimezone(dt.UTC) if value.tzinfo else value
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}+0000"


def _datetime(field: Field, value: str) -> str:
    m = _DATETIME_RE.match(value.strip())
    if m is None:
        raise _bad_value(field, value, "a datetime like 2023-04-01T10:30:00.000+0000")
    day, hh, mm, ss, frac, zone = m.groups()
    text = f"{day}T{hh}:{mm}:{ss or '00'}" + (f".{(frac or '0').ljust(6, '0')}")
    if zone and zone != "Z":
        text += zone[:3] + ":" + zone[-2:]
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        raise _bad_value(field, value, "a datetime like 2023-04-01T10:30:00.000+0000") from None
    return format_datetime(parsed.replace(tzinfo=parsed.tzinfo or dt.UTC))


def _bad_value(field: Field, value: object, wanted: str) -> OrgError:
    return _fault(
        "JSON_PARSER_ERROR",
        f"Cannot deserialize instance of {field.type.value} from {value!r} for field {field.name}: it takes {wanted}",
        (field.name,),
    )


class _State:
    """What every view of one session shares: its connection, its lock and the objects it wrote."""

    def __init__(self, path: Path, tables: Mapping[str, str]) -> None:
        self.lock = threading.RLock()
        self.tables = dict(tables)  # object name -> the table's name in the file
        self.conn = sqlite3.connect(
            path.as_uri() + "?mode=ro", uri=True, check_same_thread=False, cached_statements=256
        )
        self.conn.execute(f"PRAGMA cache_size=-{SESSION_CACHE_KIB}")
        self.conn.execute("PRAGMA temp_store=MEMORY")
        self.conn.isolation_level = None  # transactions are ours (savepoints of a batch)
        self._readable = frozenset(t.lower() for t in self.tables.values())
        self.trusted = False  # our own statements (writes, the session's text index) pass the authorizer
        self.conn.set_authorizer(self._authorize)
        self.deadline = math.inf
        self.conn.set_progress_handler(self._progress, _PROGRESS_STEPS)
        self.written: set[str] = set()  # objects with an overlay
        self.fts_dirty: set[str] = set()  # objects whose session text index is stale
        self.vocabulary: dict[str, list[str]] = {}
        self.refs = 0
        self.closed = False

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, dbname: str | None, _src: Any) -> int:
        if self.trusted or action == sqlite3.SQLITE_SELECT:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:
            table = (arg1 or "").lower()
            ok = (dbname == "temp" and table.startswith("crm_")) or table in self._readable
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
            self.trusted = True
            try:
                yield self.conn
            finally:
                self.trusted = False

    def execute_head(
        self, sql: str, params: tuple[Any, ...], timeout: float, keep: int | None
    ) -> tuple[list[tuple[Any, ...]], int]:
        with self.lock:
            if self.closed:
                raise ValueError("this OrgSession is closed: it was dropped")
            return run_bounded(self, self.conn, sql, params, timeout, keep)

    # -- overlays ----------------------------------------------------------------------------------

    def names(self, obj: SObject) -> tuple[str, str, str]:
        """(the file's table, the session's rows, the hidden ids), quoted."""
        table = self.tables[obj.name]
        return (
            f"main.{quote_identifier(table)}",
            f"temp.{quote_identifier('crm_rows_' + obj.name)}",
            f"temp.{quote_identifier('crm_gone_' + obj.name)}",
        )

    def overlay(self, conn: sqlite3.Connection, obj: SObject) -> None:
        """Create ``obj``'s overlay on the first write (call with ``trust`` held)."""
        if obj.name in self.written:
            return
        base, rows, gone = self.names(obj)
        view = quote_identifier(self.tables[obj.name])
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {rows.split('.', 1)[1]} AS SELECT * FROM {base} WHERE 0")
        conn.execute(f'CREATE UNIQUE INDEX IF NOT EXISTS temp."crm_rows_{obj.name}_id" ON "crm_rows_{obj.name}" ("Id")')
        conn.execute(
            f'CREATE TEMP TABLE IF NOT EXISTS {gone.split(".", 1)[1]} ("Id" TEXT PRIMARY KEY, deleted INTEGER)'
        )
        conn.execute(
            f"CREATE TEMP VIEW IF NOT EXISTS {view} AS SELECT * FROM {base} "
            f'WHERE "Id" NOT IN (SELECT "Id" FROM {gone}) UNION ALL SELECT * FROM {rows}'
        )
        self.written.add(obj.name)

    def refresh_written(self, conn: sqlite3.Connection) -> None:
        """Re-read which overlays exist (after a batch was rolled back)."""
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_temp_master WHERE type = 'table'")}
        self.written = {n[len("crm_rows_") :] for n in names if n.startswith("crm_rows_")}
        self.fts_dirty |= {n[len("crm_fts_") :] for n in names if n.startswith("crm_fts_") and "_" not in n[8:]}
        self.fts_dirty |= self.written

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                self.conn.close()


def _column_expr(field: Field, present: set[str]) -> str:
    if field.formula is not None:
        return f"({field.formula})"
    return quote_identifier(field.column_name) if field.column_name.lower() in present else "NULL"


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
                present = {r[1].lower() for r in conn.execute(f'PRAGMA temp.table_info("crm_rows_{obj.name}")')}
                exprs = [_column_expr(f, present) for f in fields]
                cols = ", ".join(f"c{i}" for i in range(len(fields)))
                conn.execute(f'DROP TABLE IF EXISTS temp."{fts}"')
                conn.execute(f'DROP TABLE IF EXISTS temp."{fts}_vocab"')
                conn.execute(
                    f'CREATE VIRTUAL TABLE temp."{fts}" USING fts5(rid UNINDEXED, {cols}, '
                    "tokenize = 'unicode61 remove_diacritics 0', prefix = '2 3')"
                )
                values = conn.execute(f'SELECT "Id", {", ".join(exprs)} FROM {rows}').fetchall()
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
                try:
                    found = conn.execute(
                        f'SELECT rid FROM temp."{fts}" WHERE "{fts}" MATCH ? ORDER BY rank, rid LIMIT ?',
                        ("{" + cols + "} : (" + expression + ")", limit),
                    ).fetchall()
                except sqlite3.Error as exc:
                    raise _search_error(exc) from None
                finally:
                    state.deadline = math.inf
                mine = [r[0] for r in found]
        # The session's own matches first (its latest writes), then the org's, minus what the session hid.
        theirs = self._base.search(obj, terms, scope, limit + len(hidden), deadline)
        return (mine + [i for i in theirs if i not in hidden])[:limit]


class OrgSession(LocalOrg):
    """A writable, isolated, copy-on-write view of an embedded org (see the module's description).

    Queries and searches answer as :class:`LocalOrg` does, plus the session's own writes. Views made by
    :meth:`with_today` share the session (its writes included). The org file never changes.

    Args:
        org: A :class:`LocalOrg` (its backend and plan cache are shared) or the path of an org file.
        today: The date relative literals resolve against (default: ``org``'s).
        timeout: Seconds a query may run (default: ``org``'s).

    Example:
        >>> base = LocalOrg(getfixture("tiny_org"), today="2021-02-20")
        >>> session = OrgSession(base)
        >>> new_id = session.create("Issue__c", {"Name": "Zipper Broke"})
        >>> session.query("SELECT Name FROM Issue__c WHERE Name = 'Zipper Broke'")["totalSize"]
        1
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
    ) -> None:
        base = org if isinstance(org, LocalOrg) else LocalOrg(org)
        backend = base._live()
        self._today = base.today if today is _UNSET else _coerce_today(today)
        self._timeout = base.timeout if timeout is None else float(timeout)
        with _REGISTRY_LOCK:
            backend.refs += 1
        self._backend = backend
        if base is not org:
            base.close()
        self._state = _State(backend.path, backend.catalog.tables)
        self._state.refs = 1
        self._cache: dict[str, object] = {}
        self._index_lock = threading.Lock()

    def with_today(self, today: dt.date | str | None) -> OrgSession:
        """A view of this session (its writes included) whose relative literals resolve against ``today``."""
        view = OrgSession.__new__(OrgSession)
        view._today, view._timeout = _coerce_today(today), self._timeout
        backend = self._live()
        with _REGISTRY_LOCK:
            backend.refs += 1
        view._backend = backend
        view._state, view._cache, view._index_lock = self._state, self._cache, self._index_lock
        with self._state.lock:
            self._state.refs += 1
        return view

    @property
    def backend_cache(self) -> dict[str, object]:
        """The session's own cache: its search index merges the org's index with the session's rows."""
        from crmarena_gym.org._sosl import _CACHE_KEY

        with self._index_lock:
            if _CACHE_KEY not in self._cache:
                self._cache[_CACHE_KEY] = _SessionIndex(_index_for(_Shared(self._live())), self._state)
        return self._cache

    def _execute_head(self, sql: str, params: tuple[Any, ...], keep: int | None) -> tuple[list[tuple[Any, ...]], int]:
        self._live()
        return self._state.execute_head(sql, params, self._timeout, keep)

    def _service_only(self) -> None:
        # Writes are validated against the service org's objects; a Pro org (b2b, b2c) answers queries only.
        if self.kind != "service":
            raise _fault(
                "INVALID_OPERATION",
                f"this session's org is of kind {self.kind!r}: sessions write to the service org only so far; "
                "query it, or write to a service org",
            )

    # -- writes ------------------------------------------------------------------------------------

    def create(self, sobject: str, values: Mapping[str, Any]) -> str:
        """Create a record; return its new 18-character id (with the object's key prefix).

        Raises:
            OrgError: ``NOT_FOUND`` (no such object), ``INVALID_FIELD`` (no such field),
                ``INVALID_FIELD_FOR_INSERT_UPDATE`` (``Id`` or a computed field), ``REQUIRED_FIELD_MISSING``,
                ``JSON_PARSER_ERROR`` (a value of the wrong type), ``STRING_TOO_LONG``,
                ``INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST``, ``INVALID_EMAIL_ADDRESS``, ``MALFORMED_ID``
                or ``FIELD_INTEGRITY_EXCEPTION`` (a reference of the wrong form or object) and
                ``INVALID_CROSS_REFERENCE_KEY`` (a reference to no record).
        """
        self._service_only()
        obj = _object(sobject)
        with self._state.trust() as conn:
            columns = self._columns(conn, obj)
            row = self._checked(conn, obj, values, creating=True, columns=columns)
            self._capacity(conn)
            with _NEW_LOCK:
                new_id = make_id(obj.key_prefix, next(_NEW_NUMBERS))
            row["Id"] = new_id
            self._state.overlay(conn, obj)
            _, rows, _ = self._state.names(obj)
            names = ", ".join(quote_identifier(c) for c in row)
            conn.execute(f"INSERT INTO {rows} ({names}) VALUES ({', '.join('?' for _ in row)})", tuple(row.values()))
            self._state.fts_dirty.add(obj.name)
            return new_id

    def update(self, sobject: str, record_id: str, values: Mapping[str, Any]) -> None:
        """Change fields of a record (``None`` clears a field).

        Raises:
            OrgError: As :meth:`create`, and ``MALFORMED_ID``, ``NOT_FOUND`` or ``ENTITY_IS_DELETED`` for the id.
        """
        self._service_only()
        obj = _object(sobject)
        with self._state.trust() as conn:
            rid = self._existing(conn, obj, record_id)
            columns = self._columns(conn, obj)
            row = self._checked(conn, obj, values, creating=False, columns=columns)
            self._capacity(conn)
            self._state.overlay(conn, obj)
            base, rows, gone = self._state.names(obj)
            if conn.execute(f'SELECT 1 FROM {rows} WHERE "Id" = ?', (rid,)).fetchone() is None:
                conn.execute(f'INSERT INTO {rows} SELECT * FROM {base} WHERE "Id" = ?', (rid,))
                conn.execute(f'INSERT OR REPLACE INTO {gone} ("Id", deleted) VALUES (?, 0)', (rid,))
            if row:
                sets = ", ".join(f"{quote_identifier(c)} = ?" for c in row)
                conn.execute(f'UPDATE {rows} SET {sets} WHERE "Id" = ?', (*row.values(), rid))
            self._state.fts_dirty.add(obj.name)

    def delete(self, sobject: str, record_id: str) -> None:
        """Delete a record (from this session's view only).

        Raises:
            OrgError: ``MALFORMED_ID``, ``NOT_FOUND`` or ``ENTITY_IS_DELETED``.
        """
        self._service_only()
        obj = _object(sobject)
        with self._state.trust() as conn:
            rid = self._existing(conn, obj, record_id)
            self._state.overlay(conn, obj)
            _, rows, gone = self._state.names(obj)
            conn.execute(f'DELETE FROM {rows} WHERE "Id" = ?', (rid,))
            conn.execute(f'INSERT OR REPLACE INTO {gone} ("Id", deleted) VALUES (?, 1)', (rid,))
            self._state.fts_dirty.add(obj.name)

    def get(self, sobject: str, record_id: str, fields: list[str] | None = None) -> dict[str, Any]:
        """One record with ``fields`` (default: every field), shaped as a query's record.

        Raises:
            OrgError: ``NOT_FOUND``/``MALFORMED_ID``/``ENTITY_IS_DELETED`` for the id, ``INVALID_FIELD`` for a field.
        """
        self._service_only()
        obj = _object(sobject)
        with self._state.trust() as conn:
            rid = self._existing(conn, obj, record_id)
        names = fields or [f.name for f in obj.fields]
        bad = [n for n in names if not isinstance(n, str) or not re.fullmatch(r"[A-Za-z_][\w.]*", n)]
        if bad:
            raise _fault("INVALID_FIELD", f"No such column {bad[0]!r} on sobject of type {obj.name}")
        records = self.query(f"SELECT {', '.join(names)} FROM {obj.name} WHERE Id = '{rid}'")["records"]
        if not records:
            raise _fault("NOT_FOUND", "The requested resource does not exist")
        return records[0]

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
                with state.trust() as conn:
                    conn.execute("ROLLBACK TO crm_batch")
                    conn.execute("RELEASE crm_batch")
                    state.refresh_written(conn)
                raise
            with state.trust() as conn:
                conn.execute("RELEASE crm_batch")

    def reset(self) -> None:
        """Forget every write of the session: it sees the org file as it is again."""
        with self._state.trust() as conn:
            for name, kind in conn.execute(
                "SELECT name, type FROM sqlite_temp_master WHERE name LIKE 'crm\\_%' ESCAPE '\\'"
            ).fetchall():
                if kind in ("table",):
                    conn.execute(f"DROP TABLE IF EXISTS temp.{quote_identifier(name)}")
            for table in self._state.tables.values():
                conn.execute(f"DROP VIEW IF EXISTS temp.{quote_identifier(table)}")
            self._state.written.clear()
            self._state.vocabulary.clear()
            self._state.fts_dirty.clear()

    @property
    def written_rows(self) -> int:
        """How many records the session holds (created or changed) and hides (changed or deleted)."""
        with self._state.trust() as conn:
            total = 0
            for name in self._state.written:
                obj = _object(name)
                _, rows, gone = self._state.names(obj)
                total += conn.execute(
                    f"SELECT (SELECT COUNT(*) FROM {rows}) + (SELECT COUNT(*) FROM {gone})"
                ).fetchone()[0]
            return total

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

    def _columns(self, conn: sqlite3.Connection, obj: SObject) -> frozenset[str]:
        table = quote_identifier(self._state.tables.get(obj.name, ""))
        if not self._state.tables.get(obj.name):
            raise _fault("NOT_FOUND", f"sObject type '{obj.name}' is not supported: the org file has no such table.")
        return frozenset(r[1].lower() for r in conn.execute(f"PRAGMA main.table_info({table})"))

    def _capacity(self, conn: sqlite3.Connection) -> None:
        total = 0
        for name in self._state.written:
            total += conn.execute(f"SELECT COUNT(*) FROM {self._state.names(_object(name))[1]}").fetchone()[0]
        if total >= MAX_SESSION_ROWS:
            raise _fault(
                "STORAGE_LIMIT_EXCEEDED",
                f"this session already holds {total} written records, the most a session may hold "
                f"({MAX_SESSION_ROWS}); reset it or start another one",
            )

    def _locate(self, conn: sqlite3.Connection, record_id: str) -> tuple[SObject | None, str | None, bool]:
        """(object, stored id, deleted) of a record visible to the session or hidden by its deletes."""
        obj = object_for_id(record_id)
        if obj is None or obj.name not in self._state.tables:
            return obj, None, False
        rid = _id18(record_id)
        view = quote_identifier(self._state.tables[obj.name])
        found = conn.execute(f'SELECT "Id" FROM {view} WHERE "Id" = ? COLLATE NOCASE', (rid,)).fetchall()
        exact = [r[0] for r in found if r[0] == rid] or [r[0] for r in found]
        if exact:
            return obj, exact[0], False
        if obj.name in self._state.written:
            gone = self._state.names(obj)[2]
            if conn.execute(f'SELECT 1 FROM {gone} WHERE "Id" = ? AND deleted = 1', (rid,)).fetchone():
                return obj, rid, True
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
        values: Mapping[str, Any],
        *,
        creating: bool,
        columns: frozenset[str],
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
            if field is None or (field.stored and field.column_name.lower() not in columns):
                raise _fault("INVALID_FIELD", f"No such column {key!r} on sobject of type {obj.name}", (str(key),))
            if field.type is FieldType.ID or field.formula is not None or (not creating and field.name in _CREATE_ONLY):
                raise _fault(
                    "INVALID_FIELD_FOR_INSERT_UPDATE",
                    f"Unable to create/update fields: {field.name}. Please check the security settings of this field "
                    "and verify that it is read/write for your profile or permission set.",
                    (field.name,),
                )
            row[field.column_name] = self._stored(conn, field, value)
            given.add(field.name)
        if creating:
            for name, default in _DEFAULTS.get(obj.name, {}).items():
                field = obj.get_field(name)
                if field is not None and name not in given and field.column_name.lower() in columns:
                    row[field.column_name] = self._stored(conn, field, default)
                    given.add(name)
            created = obj.get_field("CreatedDate")
            if created is not None and "CreatedDate" not in given and created.column_name.lower() in columns:
                row[created.column_name] = format_datetime(dt.datetime.now(dt.UTC))
        required = REQUIRED_FIELDS.get(obj.name, ())
        missing = [
            n
            for n in required
            if (creating and n not in given) or (n in given and row.get(obj.get_field(n).column_name) is None)  # type: ignore[union-attr]
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
        if kind is FieldType.BOOLEAN:
            if not isinstance(value, bool):
                raise _bad_value(field, value, "true or false")
            return int(value)
        if kind.is_numeric:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise _bad_value(field, value, "a number")
            if abs(value) >= 1e18:
                raise _fault(
                    "NUMBER_OUTSIDE_VALID_RANGE",
                    f"{field.name}: value outside of valid range: {value!r}",
                    (field.name,),
                )
            return int(value) if kind is FieldType.INTEGER and float(value).is_integer() else float(value)
        if not isinstance(value, str):
            raise _bad_value(field, value, "text")
        if kind is FieldType.DATE:
            try:
                return dt.date.fromisoformat(value.strip()).isoformat()
            except ValueError:
                raise _bad_value(field, value, "a date like 2023-04-01") from None
        if kind is FieldType.DATETIME:
            return _datetime(field, value)
        limit = TEXT_LENGTHS.get(kind, 255)
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
                    f"{field.name}: bad value for restricted picklist field: {value!r} "
                    f"(allowed: {', '.join(field.picklist_values)})",
                    (field.name,),
                )
            return value
        if kind is FieldType.EMAIL and value and not _EMAIL_RE.match(value):
            raise _fault("INVALID_EMAIL_ADDRESS", f"{field.name}: invalid email address: {value!r}", (field.name,))
        if kind is FieldType.REFERENCE:
            target = get_object(field.reference_to or "")
            if not is_valid_id(value):
                raise _fault("MALFORMED_ID", f"{field.name}: id value of incorrect type: {value!r}", (field.name,))
            if target is None or value[:3] != target.key_prefix:
                raise _fault(
                    "FIELD_INTEGRITY_EXCEPTION",
                    f"{field.name}: id value of incorrect type: {value!r} is not an id of {field.reference_to}",
                    (field.name,),
                )
            _, rid, deleted = self._locate(conn, value)
            if rid is None or deleted:
                raise _fault(
                    "INVALID_CROSS_REFERENCE_KEY",
                    f"invalid cross reference id: {field.name} = {value!r} names no {field.reference_to} record",
                    (field.name,),
                )
            return rid
        return value


class _Shared:
    """What ``_index_for`` needs to find the org's shared search index in a backend's cache."""

    def __init__(self, backend: Any) -> None:
        self.path = backend.path
        self.backend_cache = backend.cache
