"""``LocalOrg``: the embedded org, a read-only SQLite file answered by our SOQL engine.

One backend (connection, lock, plan cache) serves every ``LocalOrg`` on the same file in a process,
and every :meth:`LocalOrg.with_today` view of it, so that many environments share one org without
copying it. The connection is read-only twice over: the file is opened with ``mode=ro``, and a SQLite
authorizer lets statements read the 16 object tables and call a handful of functions, nothing else.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import hashlib
import math
import os
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from crmarena_gym import _signals as signals
from crmarena_gym._memory import BytesLRU, measured_bytes
from crmarena_gym.datagen import manifest_schema
from crmarena_gym.org._base import Org, OrgError, check_max_records
from crmarena_gym.org.soql import (
    MAX_STATEMENT_CHARS,
    MAX_STRING_CHARS,
    SQL_FUNCTIONS,
    Catalog,
    Lifted,
    Plan,
    PlanTemplate,
    compile_query,
    compile_shaped,
    lift,
    parse,
    too_long,
)
from crmarena_gym.schema import OBJECTS, OrgSchema, org_schema, quote_identifier

#: How many compiled plans a backend keeps at most (least recently used are dropped): plans by query
#: text, refusals by a digest of it (:func:`refusal_key`) and plan templates by query shape (see
#: ``crmarena_gym.org.soql.lift``).
PLAN_CACHE_SIZE = 8192
#: The bytes of the plans a backend keeps at most, as :func:`~crmarena_gym._memory.measured_bytes` measures
#: each entry (its key, the query text, and its value); one bigger than an eighth of it is used once and not
#: kept, so it cannot push out the others.
PLAN_CACHE_BYTES = 64 * 1024 * 1024
#: Bytes of the org file SQLite reads through a memory map rather than read() calls (the whole file, up
#: to this size: a scale-100 org is about 600 MB). Pages of a map are shared by every process on the file.
MMAP_BYTES = 1 << 30
# SQLite virtual-machine steps between two checks of the deadline.
_PROGRESS_STEPS = 2000
_TIMEOUT_MESSAGE = "Your query request was running for too long."


def _coerce_today(today: dt.date | str | None) -> dt.date | None:
    if today is None:
        return None
    if isinstance(today, dt.datetime):
        return today.date()
    if isinstance(today, dt.date):
        return today
    if isinstance(today, str):
        try:
            return dt.date.fromisoformat(today.strip())
        except ValueError:
            raise ValueError(f"today must be an ISO date like '2023-04-01', got {today!r}") from None
    raise TypeError(f"today must be a datetime.date, an ISO date string or None, got {today!r}")


class Refusal(NamedTuple):
    """A refused query as the plan cache keeps it: its error's code and message, nothing else.

    Not the exception: an exception holds its traceback, and through it every frame of the parser's
    recursion and its parse tree (a deeply nested query's refusal held megabytes).
    """

    code: str
    message: str


def plan_bytes(soql: str | tuple[str, str] | tuple[str, bytes], plan: Plan | Refusal | PlanTemplate) -> int:
    """The bytes a plan cache entry holds: its key and value as measured, and the cache's own bookkeeping.

    Example:
        >>> plan_bytes("SELECT Id FROM Case", Refusal("MALFORMED_QUERY", "bad")) > len("SELECT Id FROM Case")
        True
    """
    return measured_bytes(soql, plan) + _ENTRY_BYTES


# The cache's own part of an entry: its place in the ordered dict and the (value, size) pair.
_ENTRY_BYTES = 200


def refusal_key(soql: str) -> tuple[str, bytes]:
    """The plan cache's key of a refused query: a digest of its text, not the text (a refused query may be
    100,000 characters long, and a client may send thousands of them).

    Example:
        >>> refusal_key("SELECT Foo FROM Case") == refusal_key("SELECT Foo FROM Case"), len(refusal_key("x")[1])
        (True, 16)
    """
    return ("refused", hashlib.blake2b(soql.encode("utf-8", "surrogatepass"), digest_size=16).digest())


def raise_if_signalled(exc: sqlite3.Error, seen: int, deadline: float) -> None:
    """Raise KeyboardInterrupt when a statement's failure ``exc`` was a signal's doing, not the statement's.

    A signal's KeyboardInterrupt that lands inside one of SQLite's callbacks is swallowed by it: the progress
    handler reports "interrupted", the authorizer "not authorized". The failure is the signal's when a signal
    was received (:func:`crmarena_gym._signals.received` moved from ``seen``, its value before the statement),
    or, where signals are not watched, when the progress handler interrupted before ``deadline``. The program
    then stops as Ctrl-C asked; it never answers a timeout or an error the agent did not make.
    """
    if signals.received() != seen or (
        isinstance(exc, sqlite3.OperationalError) and "interrupt" in str(exc) and time.monotonic() <= deadline
    ):
        raise KeyboardInterrupt from None


class _Deadline(Protocol):
    deadline: float


def run_bounded(
    owner: _Deadline, conn: sqlite3.Connection, sql: str, params: tuple[Any, ...], timeout: float, keep: int | None
) -> tuple[list[tuple[Any, ...]], int]:
    """Run one statement on ``conn`` within ``timeout`` seconds: its first ``keep`` rows (all if None) and
    the count of all; every SQLite failure becomes an OrgError.

    ``owner.deadline`` is what the connection's progress handler reads; the caller holds the connection's
    lock. Rows past the head are stepped through and counted, not kept, so memory stays bounded by
    ``keep`` however many rows match.
    """
    seen = signals.received()
    owner.deadline = time.monotonic() + timeout
    try:
        cursor = conn.execute(sql, params)
        if keep is None:
            rows = cursor.fetchall()
            return rows, len(rows)
        rows = cursor.fetchmany(keep)
        total = len(rows)
        if total == keep:
            while batch := cursor.fetchmany(4096):
                total += len(batch)
        return rows, total
    except sqlite3.Error as exc:
        raise_if_signalled(exc, seen, owner.deadline)
        if isinstance(exc, sqlite3.OperationalError) and "interrupt" in str(exc):
            raise OrgError("QUERY_TIMEOUT", _TIMEOUT_MESSAGE) from None
        if _SQLITE_LIMIT.search(str(exc)):
            raise too_complicated(str(exc)) from None
        raise OrgError("UNKNOWN_EXCEPTION", f"the org could not run the query: {exc}") from None
    except (OverflowError, ValueError) as exc:
        raise OrgError("UNKNOWN_EXCEPTION", f"the org could not run the query: {exc}") from None
    finally:
        owner.deadline = math.inf


# SQLite's refusals of a statement past one of its limits (expression depth, parser stack, variables, columns,
# terms, LIKE pattern): the query is too complicated, in Salesforce's words, not SQLite's.
_SQLITE_LIMIT = re.compile(r"too large|too big|too many|too complex|stack overflow", re.IGNORECASE)


def too_complicated(detail: str) -> OrgError:
    """Salesforce's QUERY_TOO_COMPLICATED for a statement the database cannot take (``detail``: what SQLite said).

    Example:
        >>> too_complicated("parser stack overflow").code
        'QUERY_TOO_COMPLICATED'
    """
    what = {"stack overflow": "nests conditions too deeply", "too many": "has too many terms"}
    reason = next((v for k, v in what.items() if k in detail), "is too large")
    return OrgError(
        "QUERY_TOO_COMPLICATED",
        f"Query is too complicated: once compiled it {reason} for the org's database. Write it with fewer levels "
        "of parentheses and NOTs, fewer fields or fewer conditions.",
    )


def _left(deadline: float) -> float:
    """Seconds left before ``deadline``; QUERY_TIMEOUT when none are."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise OrgError("QUERY_TIMEOUT", _TIMEOUT_MESSAGE)
    return left


def _long_string(raws: tuple[str, ...]) -> bool:
    """Whether a literal as written may be a string over ``MAX_STRING_CHARS`` (its quotes and escapes counted)."""
    if max(map(len, raws)) <= MAX_STRING_CHARS + 2:  # the common case, decided at C speed
        return False
    return any(len(raw) > MAX_STRING_CHARS + 2 and raw[0] == "'" for raw in raws)


#: Queries up to this long have their lifted literals kept for :meth:`_Backend.plan_in_list`.
_SHORT_QUERY = 4096


@functools.lru_cache(maxsize=256)
def _lift_short(soql: str) -> Lifted | None:
    """``lift(soql)`` of the few queries SOSL fetches its hits with, over and over (one per RETURNING item)."""
    return lift(soql)


class _Backend:
    """The shared part of every org on one file: the connection, its lock and the plan cache."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            conn = sqlite3.connect(path.as_uri() + "?mode=ro", uri=True, check_same_thread=False, cached_statements=512)
            conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        except sqlite3.Error as exc:
            raise ValueError(f"cannot open {str(path)!r} as an org database: {exc}") from None
        try:
            self.catalog = self._read_catalog(conn)
        except (sqlite3.Error, ValueError) as exc:
            conn.close()
            raise ValueError(f"cannot open {str(path)!r} as an org database: {exc}") from None
        if not self.catalog.tables:
            conn.close()
            raise ValueError(
                f"{str(path)!r} is not an org database: it has none of the tables of CRMArena's objects "
                f"({', '.join(o.name for o in OBJECTS[:4])} ...)"
            )
        self.conn = conn
        self._tables = frozenset(name.lower() for name in self.catalog.tables.values())
        conn.set_authorizer(self._authorize)
        conn.set_progress_handler(self._progress, _PROGRESS_STEPS)
        self.lock = threading.RLock()
        # Plans by query text, templates by ("shape", key), refusals by refusal_key(text).
        self.plans: BytesLRU[Any, Plan | Refusal | PlanTemplate] = BytesLRU(PLAN_CACHE_SIZE, PLAN_CACHE_BYTES)
        #: Whether a query of a shape seen before gets that shape's plan (off: only the same text's plan).
        self.by_shape = True
        #: Free-form per-backend cache for other engines on the same org (the SOSL index).
        self.cache: dict[str, object] = {}
        self.deadline = math.inf
        self.refs = 0

    @staticmethod
    def _read_catalog(conn: sqlite3.Connection) -> Catalog:
        # Read before the authorizer is installed: it denies sqlite_master and PRAGMA.
        names = {
            row[0].lower(): row[0]
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        }
        # The org kind our generator recorded (a file without a manifest, the original's dump, is a service org),
        # after any schema drift a perturbation recorded.
        schema = manifest_schema(conn)
        tables: dict[str, str] = {}
        columns: dict[str, frozenset[str]] = {}
        empty: set[str] = set()
        for obj in schema.objects + schema.standard_objects:
            actual = names.get(obj.table_name.lower())
            if actual is None:
                if obj in schema.standard_objects:  # every org has it: answered as an empty table
                    empty.add(obj.name)
                    columns[obj.name] = frozenset(f.column_name.lower() for f in obj.stored_fields)
                continue
            tables[obj.name] = actual
            info = conn.execute(f"PRAGMA table_info({quote_identifier(actual)})").fetchall()
            columns[obj.name] = frozenset(row[1].lower() for row in info)
        return Catalog(tables, columns, frozenset(empty), schema)

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, dbname: str | None, _src: Any) -> int:
        if action == sqlite3.SQLITE_SELECT:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:
            ok = dbname in ("main", None) and (arg1 or "").lower() in self._tables
            return sqlite3.SQLITE_OK if ok else sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            return sqlite3.SQLITE_OK if (arg2 or "").lower() in SQL_FUNCTIONS else sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_DENY

    def _progress(self) -> int:
        return 1 if time.monotonic() > self.deadline else 0

    def plan(self, soql: str) -> Plan:
        """The compiled plan of ``soql`` (cached, errors included).

        A query seen before is looked up by its text; another of a shape seen before (the same query
        with other literals) gets the shape's plan with its literals bound (and is then kept by its
        text as well); any other is compiled.
        """
        if len(soql) > MAX_STATEMENT_CHARS:  # refused before any other work on it
            raise OrgError("MALFORMED_QUERY", too_long(soql).message)
        cached = self.plans.get(soql)
        if cached is not None:
            return cached
        lifted = lift(soql) if self.by_shape else None
        # A shape's plan serves only literals the statement's bounds allow (a string over them is refused
        # by the compiler, as the first query of the shape would have been).
        if lifted is not None and not _long_string(lifted.raws):
            template = self.plans.get(("shape", lifted.key))
            if template is not None:
                plan = template.instantiate(lifted)
                if plan is not None:
                    # Kept by its text too: the same query again skips the lifting.
                    self.plans.put(soql, plan, plan_bytes(soql, plan))
                    return plan
        refused_key = refusal_key(soql)
        refused = self.plans.get(refused_key)
        if refused is None:
            try:
                if lifted is None:
                    cached, template = compile_query(soql, parse(soql), self.catalog), None
                else:
                    cached, template = compile_shaped(soql, self.catalog, lifted)
            except OrgError as exc:
                refused = Refusal(exc.code, exc.message)
                self.plans.put(refused_key, refused, plan_bytes(refused_key, refused))
            else:
                self.plans.put(soql, cached, plan_bytes(soql, cached))
                if template is not None and lifted is not None:
                    key = ("shape", lifted.key)
                    self.plans.put(key, template, plan_bytes(key, template))
                return cached
        raise OrgError(refused.code, refused.message)

    def plan_in_list(self, soql: str, at: int, raws: Sequence[str]) -> Plan | None:
        """The plan of ``soql`` with its IN list at ``at`` holding the literals ``raws`` (as written) instead.

        The values are bound into the plan of the query's shape (compiled from ``soql`` itself, its errors
        raised as :meth:`plan` raises them), as for the query written with them: no text to compose, lift
        and parse. None when plans by shape are off or the shape's template declines (run the text).
        """
        if not self.by_shape:
            return None
        key = ("in list", soql, at, tuple(raws))  # the same search again: its plan as bound before
        kept = self.plans.get(key)
        if isinstance(kept, Plan):
            return kept
        lifted = _lift_short(soql) if len(soql) <= _SHORT_QUERY else lift(soql)
        swapped = None if lifted is None else lifted.with_list(at, raws)
        if lifted is None or swapped is None:
            return None
        template = self.plans.get(("shape", lifted.key))
        if template is None:
            self.plan(soql)  # compiled, and its shape's template kept when it has one
            template = self.plans.get(("shape", lifted.key))
            if template is None:
                return None
        plan = template.instantiate(swapped)
        if plan is not None:  # sized as the query written out with its literals would be
            self.plans.put(key, plan, plan_bytes(soql, plan) + sum(56 + len(raw) for raw in raws))
        return plan

    def execute(self, sql: str, params: tuple[Any, ...], timeout: float) -> list[tuple[Any, ...]]:
        """Run one statement with a deadline; every SQLite failure becomes an OrgError."""
        rows, _ = self.execute_head(sql, params, timeout, None)
        return rows

    def execute_head(
        self, sql: str, params: tuple[Any, ...], timeout: float, keep: int | None
    ) -> tuple[list[tuple[Any, ...]], int]:
        """Run one statement with a deadline, keeping its first ``keep`` rows (all if None) and counting all.

        See :func:`run_bounded`.
        """
        with self.lock:
            if self.conn is None:
                raise ValueError(f"the org at {str(self.path)!r} is closed")
            return run_bounded(self, self.conn, sql, params, timeout, keep)

    def close(self) -> None:
        with self.lock:
            if self.conn is not None:
                self.conn.close()
                self.conn = None  # type: ignore[assignment]


_DECLARED_KEY = "declared names planner"
_DECLARED_LOCK = threading.Lock()


def declared_planner(backend: _Backend) -> _Backend:
    """A planner over ``backend``'s file whose catalog names objects and fields as the org kind declares them.

    For a drifted org (its catalog's schema has a ``drift``): the declared names reach the same tables and
    columns the drifted names do, since drift renames names, never storage; a migrated standard field's declared
    name reads the column its replacement names (the values), never the emptied one the standard field reads in
    the drifted schema. Fields the drift added are not in it. Kept in the backend's cache; its own plan cache.
    """
    found = backend.cache.get(_DECLARED_KEY)
    if isinstance(found, _Backend):
        return found
    catalog = backend.catalog
    drifted = catalog.schema
    declared = org_schema(drifted.kind)
    by_table = {o.table_name.lower(): o.name for o in drifted.objects + drifted.standard_objects}
    tables: dict[str, str] = {}
    columns: dict[str, frozenset[str]] = {}
    empty: set[str] = set()
    for obj in declared.objects + declared.standard_objects:
        now = by_table.get(obj.table_name.lower())
        if now is None:
            continue
        if now in catalog.tables:
            tables[obj.name] = catalog.tables[now]
        if now in catalog.columns:
            columns[obj.name] = catalog.columns[now]
        if now in catalog.empty:
            empty.add(obj.name)
    planner = copy.copy(backend)  # the same compile path, connection and lock; its own catalog and caches
    planner.catalog = Catalog(tables, columns, frozenset(empty), declared)
    planner.plans = BytesLRU(2048, 8 * 2**20)
    planner.cache = {}
    with _DECLARED_LOCK:
        kept = backend.cache.setdefault(_DECLARED_KEY, planner)
    return kept  # type: ignore[return-value]


_REGISTRY: weakref.WeakValueDictionary[tuple[Any, ...], _Backend] = weakref.WeakValueDictionary()
_REGISTRY_LOCK = threading.Lock()


def _acquire(path: Path) -> _Backend:
    stat = path.stat()
    key = (str(path), stat.st_ino, stat.st_mtime_ns, stat.st_size)
    with _REGISTRY_LOCK:
        backend = _REGISTRY.get(key)
        if backend is None or backend.conn is None:
            backend = _Backend(path)
            _REGISTRY[key] = backend
        backend.refs += 1
        return backend


class LocalOrg(Org):
    """An org answered offline from a SQLite file in the original dump's layout.

    Args:
        path: The SQLite file (our generated org, or the original ``crmarena_data.db``).
        today: The date relative literals (``TODAY``, ``LAST_N_DAYS:7``) resolve against: a
            ``datetime.date`` or an ISO string. None means the current UTC date, which is not
            reproducible: environments always set it to the task's date.
        timeout: Seconds a query may run before it fails with QUERY_TIMEOUT.

    Raises:
        FileNotFoundError: ``path`` does not exist (no empty database is ever created).
        ValueError: ``today`` is not a date, or the file is not a SQLite database.

    Example:
        >>> org = LocalOrg(getfixture("tiny_org"), today="2021-02-20")  # two cases, opened on 2021-02-01
        >>> recent = "SELECT COUNT() FROM Case WHERE CreatedDate = LAST_N_DAYS:30"
        >>> org.query(recent)["totalSize"], org.with_today("2021-04-01").query(recent)["totalSize"]
        (2, 0)
    """

    #: Whether this view names objects and fields as the kind declares them (see :meth:`declared`).
    _declared = False
    _declared_view: LocalOrg | None = None

    def __init__(self, path: str | os.PathLike[str], *, today: dt.date | str | None = None, timeout: float = 10.0):
        self._today = _coerce_today(today)
        if not isinstance(timeout, int | float) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self._timeout = float(timeout)
        resolved = Path(path).expanduser().resolve()
        if not resolved.is_file():
            raise FileNotFoundError(f"no org database at {str(resolved)!r}")
        self._backend: _Backend | None = _acquire(resolved)

    @classmethod
    def _view(cls, backend: _Backend, today: dt.date | None, timeout: float) -> LocalOrg:
        org = cls.__new__(cls)
        org._today, org._timeout = today, timeout
        with _REGISTRY_LOCK:
            backend.refs += 1
        org._backend = backend
        return org

    # -- properties ------------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The database file (resolved)."""
        return self._live().path

    @property
    def schema(self) -> OrgSchema:
        """The org kind's schema (``service`` for CRMArena's org, ``b2b`` or ``b2c`` for Pro's), read from the
        file's manifest."""
        return self._planner().catalog.schema

    @property
    def kind(self) -> str:
        """The org kind: ``service``, ``b2b`` or ``b2c``."""
        return self.schema.kind

    @property
    def today(self) -> dt.date | None:
        """The date relative literals resolve against (None: the current UTC date)."""
        return self._today

    @property
    def timeout(self) -> float:
        """Seconds a query may run."""
        return self._timeout

    @property
    def backend_cache(self) -> dict[str, object]:
        """A dict shared by every org and view on this backend, for engines that index the org."""
        return self._live().cache

    def with_today(self, today: dt.date | str | None) -> LocalOrg:
        """A view whose relative date literals resolve against ``today``, sharing this backend."""
        view = LocalOrg._view(self._live(), _coerce_today(today), self._timeout)
        view._declared = self._declared
        return view

    def declared(self) -> LocalOrg:
        """This org with objects and fields named as its kind declares them (see :meth:`Org.declared`).

        On a drifted org, a view over the same file (its date and timeout, its writes for a session) whose
        queries, searches and describes take the declared names and refuse the drifted ones; this org
        itself when it has not drifted. Made once and closed with this org.

        Example:
            >>> org = LocalOrg(getfixture("tiny_org"))
            >>> org.declared() is org  # a generated org: no drift
            True
        """
        if self._declared or self._live().catalog.schema.drift is None:
            return self
        view = self._declared_view
        if view is None or view._backend is None:
            view = self.with_today(self._today)
            view._declared = True
            self._declared_view = view
        return view

    def _planner(self) -> _Backend:
        """The backend whose catalog this view compiles against: the org's, or its declared names'."""
        backend = self._live()
        return declared_planner(backend) if self._declared else backend

    # -- queries ---------------------------------------------------------------------------------

    def query(self, soql: str) -> dict[str, Any]:
        """Run a SOQL query; see :meth:`Org.query`.

        Example:
            >>> org = LocalOrg(getfixture("tiny_org"))
            >>> org.query("SELECT Id, Owner.Name FROM Case LIMIT 1")["records"][0]["Owner"]["Name"]
            'Ada Byrne'
        """
        return self._guarded(soql, None)

    def query_head(self, soql: str, max_records: int) -> dict[str, Any]:
        """Run a SOQL query, shaping only its first ``max_records`` rows; see :meth:`Org.query_head`.

        Example:
            >>> org = LocalOrg(getfixture("tiny_org"))
            >>> head = org.query_head("SELECT Id FROM Case", 1)
            >>> len(head["records"]), head["totalSize"] == org.query("SELECT COUNT() FROM Case")["totalSize"]
            (1, True)
        """
        return self._guarded(soql, check_max_records(max_records))

    def _query_in_list(self, soql: str, at: int, raws: Sequence[str]) -> dict[str, Any] | None:
        """:meth:`query` of ``soql`` with its IN list at ``at`` holding the literals ``raws`` (as written)
        instead, bound into the plan of its shape (see :meth:`_Backend.plan_in_list`): how SOSL fetches
        its hits. None when that plan cannot take them: run the query written with them instead."""
        return self._guarded(soql, None, (at, raws))

    def _guarded(self, soql: str, keep: int | None, in_list: tuple[int, Sequence[str]] | None = None) -> dict[str, Any]:
        if not isinstance(soql, str):
            raise OrgError("MALFORMED_QUERY", f"a query is text, got {type(soql).__name__}: {soql!r}")
        try:
            if in_list is not None:
                plan = self._planner().plan_in_list(soql, *in_list)
                return None if plan is None else self._run_plan(plan, None)  # type: ignore[return-value]
            return self._run(soql, keep)
        except (OrgError, ValueError) as exc:
            if isinstance(exc, OrgError) or "closed" in str(exc):
                raise
            raise OrgError("UNKNOWN_EXCEPTION", f"the org could not run the query: {exc}") from None
        except (ArithmeticError, RecursionError, TypeError) as exc:  # a bug of ours must still not leak
            raise OrgError("UNKNOWN_EXCEPTION", f"the org could not run the query: {exc}") from None

    def _plan(self, soql: str) -> Plan:
        """The compiled plan of ``soql`` (a writable ``OrgSession`` compiles against its own columns)."""
        return self._planner().plan(soql)

    def _run(self, soql: str, keep: int | None = None) -> dict[str, Any]:
        # The timeout covers the whole query: reading and compiling it (a long statement takes a while to
        # parse), then each statement run, each given what is left.
        deadline = time.monotonic() + self._timeout
        return self._run_plan(self._plan(soql), keep, deadline)

    def _run_plan(self, plan: Plan, keep: int | None, deadline: float | None = None) -> dict[str, Any]:
        """Run a compiled plan: its first ``keep`` rows shaped, and the count of all, within ``deadline``."""
        if deadline is None:
            deadline = time.monotonic() + self._timeout
        params = plan.bind(self._effective_today()) if plan.relative else plan.params
        if plan.count_only:
            rows, _ = self._execute_head(plan.sql, params, None, _left(deadline))
            return {"totalSize": int(rows[0][0]) if rows else 0, "done": True, "records": []}
        rows, total = self._execute_head(plan.sql, params, keep, _left(deadline))
        records = plan.shape(rows)
        for child in plan.children:  # child subqueries run for the kept parents only
            child.attach(
                rows,
                records,
                0,
                lambda sql, p: self._execute_head(sql, p, None, _left(deadline))[0],
                self._effective_today(),
            )
        return {"totalSize": total, "done": total == len(records), "records": records}

    def _execute_head(
        self, sql: str, params: tuple[Any, ...], keep: int | None, timeout: float
    ) -> tuple[list[tuple[Any, ...]], int]:
        """Run a compiled plan's SQL within ``timeout`` seconds: its first ``keep`` rows and the count of all (a
        writable ``OrgSession`` runs it on its own connection)."""
        return self._live().execute_head(sql, params, timeout, keep)

    def explain(self, soql: str) -> tuple[str, tuple[Any, ...]]:
        """The SQL and parameters ``soql`` compiles to (for benchmarks and debugging).

        Raises:
            OrgError: As :meth:`query` would.
        """
        plan = self._plan(soql)
        return plan.sql, plan.bind(self._effective_today())

    def describe(self, object_name: str) -> dict[str, Any]:
        """Describe an object of this org; see :meth:`Org.describe`.

        Example:
            >>> org = LocalOrg(getfixture("tiny_org"))
            >>> [f["name"] for f in org.describe("Case")["fields"] if f["type"] == "boolean"]
            ['IsClosed', 'IsEscalated', 'IsDeleted']
        """
        from crmarena_gym.org._describe import describe_object

        if not isinstance(object_name, str):
            raise OrgError("NOT_FOUND", f"an object name is text, got {type(object_name).__name__}: {object_name!r}")
        return describe_object(object_name, self._planner().catalog)

    def search(self, sosl: str) -> dict[str, Any]:
        """Run a SOSL search; see :meth:`Org.search`.

        Like :meth:`query`, it raises nothing but :class:`OrgError` (``QUERY_TIMEOUT`` past the
        org's timeout, ``UNKNOWN_EXCEPTION`` for a damaged file), and ``ValueError`` once closed.
        """
        from crmarena_gym.org._sosl import run_search

        self._live()
        try:
            return run_search(self, sosl)
        except (OrgError, ValueError) as exc:
            if isinstance(exc, OrgError) or "closed" in str(exc):
                raise
            raise OrgError("UNKNOWN_EXCEPTION", f"the org could not run the search: {exc}") from None
        except (sqlite3.Error, OSError, ArithmeticError, RecursionError, TypeError) as exc:  # never a raw error
            raise OrgError("UNKNOWN_EXCEPTION", f"the org could not run the search: {exc}") from None

    # -- lifecycle -------------------------------------------------------------------------------

    def _effective_today(self) -> dt.date:
        return self._today or dt.datetime.now(dt.UTC).date()

    def _live(self) -> _Backend:
        if self._backend is None:
            raise ValueError("this LocalOrg is closed")
        return self._backend

    def close(self) -> None:
        """Release this org's hold on the shared backend (closed when the last holder lets go)."""
        backend, self._backend = self._backend, None
        if backend is None:
            return
        view, self._declared_view = self._declared_view, None
        if view is not None:
            view.close()
        with _REGISTRY_LOCK:
            backend.refs -= 1
            last = backend.refs <= 0
        if last:
            backend.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": str(self.path), "today": self._today, "timeout": self._timeout, "declared": self._declared}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], today=state["today"], timeout=state["timeout"])  # type: ignore[misc]
        self._declared = bool(state.get("declared"))

    def __repr__(self) -> str:
        where = str(self._backend.path) if self._backend is not None else "closed"
        return f"LocalOrg({where!r}, today={self._today.isoformat() if self._today else None!r})"
