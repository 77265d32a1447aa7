"""The served org's sessions: tokens, their isolated ``OrgSession``s, query cursors and logins, each bounded.

A session id (token) names one isolated :class:`~crmarena_gym.org.OrgSession`. What a token can go through,
and what the client is told:

- **Expiry**: a session idle for ``session_timeout`` seconds (Salesforce's default session timeout, two
  hours) ends; its token then answers 401 ``INVALID_SESSION_ID``.
- **Revocation** (``/services/oauth2/revoke``) ends the session, the start token's too.
- **Eviction**: at most ``max_sessions`` sessions are held in memory. Past it the least recently used
  idle one is evicted, one without writes first. Without ``persist`` an evicted session's writes are
  gone: its token answers 401 ``INVALID_SESSION_ID`` saying so, never a fresh empty session. With
  ``persist`` eviction only unloads it: its token goes on, with its writes, from the disk.
- **Login** (OAuth username-password flow) always makes a new session, and its token response says so
  (``crmarena_new_session``), with a notice when the same username's previous session ended with writes.
  Ten failed logins lock a username out for 15 minutes, and a username logs in at most 3,600 times an
  hour (Salesforce's limits).

Query cursors (``nextRecordsUrl``) keep their remaining records as encoded JSON, expire after 15 minutes of
inactivity and count against ``cursor_bytes`` for the whole server: past it the least recently used go.

With ``persist`` (a directory) every session keeps its writes in a SQLite file of its own (WAL: a killed
server loses no write it acknowledged) and a registry there keeps the tokens (as SHA-256 digests), so
that a restarted server goes on where it stopped. The org file itself is never written.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crmarena_gym.org._base import OrgError
from crmarena_gym.org._local import LocalOrg
from crmarena_gym.org._session import SESSION_STORAGE_BYTES, OrgSession, day_clock
from crmarena_gym.schema import id_checksum, make_id

#: Salesforce's default session timeout: a session idle this long (seconds) ends.
SESSION_TIMEOUT = 2 * 60 * 60
#: A query cursor idle this long (seconds) is released (Salesforce's former rule; it keeps them longer now,
#: a local server bounds its memory).
CURSOR_TIMEOUT = 15 * 60
#: The bytes all open query cursors hold at most (their records, as encoded JSON).
CURSOR_BYTES = 256 * 2**20
#: Open query cursors per session; past it the session's oldest is released.
MAX_CURSORS = 10
#: Requests one session may have under way at once (Salesforce allows 25 long-running requests per org).
MAX_CONCURRENT_REQUESTS = 25
#: Failed logins of one username before it is locked out, and for how long (seconds): Salesforce's defaults.
MAX_LOGIN_FAILURES = 10
LOCKOUT_SECONDS = 15 * 60
#: Logins of one username per hour (Salesforce's limit).
MAX_LOGINS_PER_HOUR = 3600
#: The org id every token and identity URL names (15 characters in tokens, 18 in URLs).
ORG_ID = make_id("00D", 1)
_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._"
_ENDED_KEPT = 10_000  # ended tokens remembered, to tell their clients why


class ApiError(Exception):
    """A refusal answered as Salesforce answers: ``[{"message": ..., "errorCode": ...}]`` and a status."""

    def __init__(self, status: int, code: str, message: str, fields: list[str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.fields = status, code, message, fields


class LoginError(Exception):
    """A refused OAuth token request: ``{"error", "error_description"}`` with status 400."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error, self.description = error, description


def new_token() -> str:
    """A session id in Salesforce's form: the org id (15 characters), ``!``, then opaque characters.

    Example:
        >>> token = new_token()
        >>> token.startswith(ORG_ID[:15] + "!") and len(token) > 90
        True
    """
    return ORG_ID[:15] + "!" + "".join(secrets.choice(_TOKEN_CHARS) for _ in range(96))


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Cursor:
    """The rest of a query's records (each encoded as JSON), for ``nextRecordsUrl``."""

    records: list[bytes]
    total: int
    batch: int
    size: int
    last_used: float


@dataclass
class Client:
    """One live token: its session (None while unloaded to disk) and what it is doing."""

    token: str
    digest: str
    username: str
    org: OrgSession | None
    last_used: float
    created: float
    inflight: int = 0
    requests: int = 0
    ended: str | None = None  # why it ended (set when it ends while requests are under way)
    store: Path | None = None
    cursors: OrderedDict[str, Cursor] = field(default_factory=OrderedDict)


class SessionHub:
    """The served org's sessions (see the module's description).

    Args:
        org: The org file (or a :class:`LocalOrg` on it); it is only read.
        password: The secret of ``POST /services/oauth2/token`` (None: one is made).
        token: A session id valid from the start (None: one is made, in Salesforce's form).
        max_sessions: Most sessions held in memory.
        today: The date the org's relative date literals resolve against, and the day its clock shows
            (None: the real date).
        session_timeout: Seconds of inactivity that end a session (0: never).
        persist: A directory keeping sessions and tokens across restarts (None: memory only).
        session_storage: Most bytes of records one session holds (STORAGE_LIMIT_EXCEEDED past it).
        cursor_bytes: Most bytes all query cursors hold.
        cursor_timeout: Seconds of inactivity that release a cursor.
        clock: The monotonic clock of timeouts (tests move it).
    """

    def __init__(
        self,
        org: LocalOrg | str | Path,
        *,
        password: str | None = None,
        token: str | None = None,
        max_sessions: int = 64,
        today: str | None = None,
        session_timeout: float = SESSION_TIMEOUT,
        persist: str | Path | None = None,
        session_storage: int = SESSION_STORAGE_BYTES,
        cursor_bytes: int = CURSOR_BYTES,
        cursor_timeout: float = CURSOR_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise ValueError(f"max_sessions must be a positive integer, got {max_sessions!r}")
        if not isinstance(session_timeout, int | float) or session_timeout < 0:
            raise ValueError(f"session_timeout must be a number of seconds (0: never), got {session_timeout!r}")
        if token is not None and (not isinstance(token, str) or not token.strip() or len(token) > 4096):
            raise ValueError("token must be a non-empty string of at most 4096 characters")
        self.base = org if isinstance(org, LocalOrg) else LocalOrg(org, today=today)
        if today is not None and isinstance(org, LocalOrg):
            self.base = org.with_today(today)
        self.password = password or secrets.token_urlsafe(18)
        self.max_sessions = max_sessions
        self.session_timeout = float(session_timeout)
        self.session_storage = session_storage
        self.cursor_bytes = cursor_bytes
        self.cursor_timeout = float(cursor_timeout)
        self.signing_key = secrets.token_bytes(32)
        self._clock = clock
        self._org_clock = day_clock(self.base.today)
        self._lock = threading.RLock()
        self._clients: OrderedDict[str, Client] = OrderedDict()  # by token digest, least recently used first
        self._ended: OrderedDict[str, str] = OrderedDict()  # digest -> why the session ended
        self._last_session: dict[str, str] = {}  # username -> digest of its latest session
        self._failures: dict[str, deque[float]] = {}
        self._logins: dict[str, deque[float]] = {}
        self._cursor_total = 0
        self._last_sweep = clock()
        self.served = 0
        self.user_id, self.username = self._api_user()
        self.persist = Path(persist).expanduser().resolve() if persist is not None else None
        self._registry: sqlite3.Connection | None = None
        if self.persist is not None:
            try:
                self._open_registry()
            except sqlite3.Error as exc:
                raise ValueError(f"cannot keep sessions in {str(self.persist)!r}: {exc}") from None
        start = token or new_token()
        self.token = start
        with self._lock:
            if self._digest_known(_digest(start)):
                self._touch_start(start)
            else:
                self._add(start, self.username)

    # -- identity ----------------------------------------------------------------------------------

    def _api_user(self) -> tuple[str, str]:
        probe = OrgSession(self.base)
        try:
            user = probe.user or make_id("005", 1)
            found = probe.query(f"SELECT Username FROM User WHERE Id = '{user}'")["records"]
        finally:
            probe.drop()
        return user, (found[0]["Username"] if found and found[0]["Username"] else "api@crmarena.local")

    @property
    def org_id(self) -> str:
        """The org's 18-character id (tokens carry its first 15 characters)."""
        return ORG_ID[:15] + id_checksum(ORG_ID[:15])

    # -- the persisted registry ----------------------------------------------------------------------

    def _open_registry(self) -> None:
        assert self.persist is not None
        self.persist.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.persist / "sessions.sqlite", check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS sessions (digest TEXT PRIMARY KEY, store TEXT NOT NULL, "
            "username TEXT NOT NULL, created REAL NOT NULL, last_used REAL NOT NULL)"
        )
        stat = self.base.path.stat()
        identity = json.dumps({"org": str(self.base.path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
        row = conn.execute("SELECT value FROM meta WHERE key = 'org'").fetchone()
        if row is None:
            conn.execute("INSERT INTO meta VALUES ('org', ?)", (identity,))
        elif row[0] != identity:
            conn.close()
            was = json.loads(row[0])
            raise ValueError(
                f"{str(self.persist)!r} keeps the sessions of another org file ({was.get('org')!r}, "
                f"{was.get('size')} bytes): its records' ids would not match {str(self.base.path)!r}; "
                "give --persist another directory"
            )
        self._registry = conn

    def _digest_known(self, digest: str) -> bool:
        if digest in self._clients:
            return True
        if self._registry is None:
            return False
        return self._registry.execute("SELECT 1 FROM sessions WHERE digest = ?", (digest,)).fetchone() is not None

    def _touch_start(self, token: str) -> None:
        digest = _digest(token)
        if digest not in self._clients:
            self._load(token, digest)

    def _load(self, token: str, digest: str) -> Client | None:
        """The client of a persisted token, its session loaded (None: not a persisted token)."""
        if self._registry is None:
            return None
        row = self._registry.execute(
            "SELECT store, username, created, last_used FROM sessions WHERE digest = ?", (digest,)
        ).fetchone()
        if row is None:
            return None
        store, username, _created, _last_used = row
        self._make_room()
        session = self._session(Path(store))
        now = self._clock()
        client = Client(token, digest, username, session, now, now, store=Path(store))
        self._clients[digest] = client
        return client

    def _session(self, store: Path | None) -> OrgSession:
        return OrgSession(
            self.base, user=self.user_id, clock=self._org_clock, store=store, max_storage=self.session_storage
        )

    # -- sessions ----------------------------------------------------------------------------------

    def _add(self, token: str, username: str) -> Client:
        digest = _digest(token)
        self._make_room()
        store = None
        if self.persist is not None and self._registry is not None:
            store = self.persist / f"session-{digest[:24]}.sqlite"
        session = self._session(store)
        now = self._clock()
        client = Client(token, digest, username, session, now, now, store=store)
        self._clients[digest] = client
        if self._registry is not None and store is not None:
            self._registry.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?)",
                (digest, str(store), username, time.time(), time.time()),
            )
        self._last_session[username] = digest
        return client

    def _make_room(self) -> None:
        """Evict (or, persisted, unload) sessions until one more fits (call with the lock held)."""
        loaded = [c for c in self._clients.values() if c.org is not None]
        excess = len(loaded) + 1 - self.max_sessions
        if excess <= 0:
            return
        idle = [c for c in loaded if c.inflight == 0 and c.token != self.token]
        # Sessions without writes go first, then the least recently used.
        idle.sort(key=lambda c: (bool(c.org is not None and c.org._state.written), c.last_used))
        for victim in idle[:excess]:
            if self.persist is not None:
                self._unload(victim)
            else:
                wrote = bool(victim.org is not None and victim.org._state.written)
                why = f"the session was ended to make room for newer ones (--max-sessions {self.max_sessions})" + (
                    "; its writes are gone (serve with --persist to keep them)" if wrote else ""
                )
                self._end(victim, why)

    def _unload(self, client: Client) -> None:
        self._drop_cursors(client)
        if client.org is not None:
            client.org.close()
            client.org = None
        self._clients.pop(client.digest, None)

    def _end(self, client: Client, why: str) -> None:
        """End a session for good: its token answers 401 with ``why`` (call with the lock held)."""
        self._drop_cursors(client)
        self._clients.pop(client.digest, None)
        self._ended[client.digest] = why
        while len(self._ended) > _ENDED_KEPT:
            self._ended.popitem(last=False)
        if client.inflight > 0:
            client.ended = why  # closed when its last request finishes
        elif client.org is not None:
            client.org.drop()
            client.org = None
        if self._registry is not None:
            self._registry.execute("DELETE FROM sessions WHERE digest = ?", (client.digest,))
            if client.store is not None:
                for suffix in ("", "-wal", "-shm"):
                    Path(str(client.store) + suffix).unlink(missing_ok=True)

    def _sweep(self) -> None:
        """End sessions idle past the timeout and release idle cursors (at most every few seconds)."""
        now = self._clock()
        if now - self._last_sweep < 5:
            return
        self._last_sweep = now
        if self.session_timeout > 0:
            for client in list(self._clients.values()):
                if client.inflight == 0 and now - client.last_used > self.session_timeout:
                    self._end(client, f"the session expired after {self.session_timeout:g} s without a request")
        for client in list(self._clients.values()):
            for locator, cursor in list(client.cursors.items()):
                if now - cursor.last_used > self.cursor_timeout:
                    self._release(client, locator)
        if self._registry is not None and self.session_timeout > 0:  # stored sessions not in memory expire too
            cutoff = time.time() - self.session_timeout
            loaded = {c.digest for c in self._clients.values()}
            for digest, store in self._registry.execute(
                "SELECT digest, store FROM sessions WHERE last_used < ?", (cutoff,)
            ).fetchall():
                if digest not in loaded:
                    self._registry.execute("DELETE FROM sessions WHERE digest = ?", (digest,))
                    self._ended[digest] = f"the session expired after {self.session_timeout:g} s without a request"
                    for suffix in ("", "-wal", "-shm"):
                        Path(store + suffix).unlink(missing_ok=True)

    def login(self, username: str, password: str) -> dict[str, Any]:
        """A new session for ``username`` (the OAuth username-password flow).

        Returns:
            ``{"token", "new": True, "notice": str | None}``.

        Raises:
            LoginError: ``invalid_grant`` for a wrong password, a locked-out username or too many logins.
        """
        now = self._clock()
        with self._lock:
            self._sweep()
            failures = self._failures.setdefault(username, deque())
            while failures and now - failures[0] > LOCKOUT_SECONDS:
                failures.popleft()
            if len(failures) >= MAX_LOGIN_FAILURES:
                wait = int(LOCKOUT_SECONDS - (now - failures[0])) // 60 + 1
                raise LoginError(
                    "invalid_grant",
                    f"authentication failure: {MAX_LOGIN_FAILURES} failed logins, the username is locked out "
                    f"for {wait} more minute(s)",
                )
            if not hmac.compare_digest(password.encode("utf-8", "surrogatepass"), self.password.encode()):
                failures.append(now)
                while len(self._failures) > 10_000:  # usernames tried: bounded
                    self._failures.pop(next(iter(self._failures)))
                raise LoginError("invalid_grant", "authentication failure")
            logins = self._logins.setdefault(username, deque())
            while logins and now - logins[0] > 3600:
                logins.popleft()
            if len(logins) >= MAX_LOGINS_PER_HOUR:
                raise LoginError("invalid_grant", f"login rate exceeded: {MAX_LOGINS_PER_HOUR} logins an hour")
            logins.append(now)
            while len(self._logins) > 10_000:
                self._logins.pop(next(iter(self._logins)))
            previous = self._last_session.get(username)
            notice = None
            if previous is not None and previous in self._ended:
                notice = f"this is a new session, without the writes of your previous one: {self._ended[previous]}"
            token = new_token()
            self._add(token, username)
            return {"token": token, "new": True, "notice": notice}

    @contextmanager
    def use(self, token: str) -> Iterator[Client]:
        """The live client of ``token`` for one request (loaded from disk if persisted and unloaded).

        Raises:
            ApiError: 401 INVALID_SESSION_ID (unknown, expired, revoked or evicted: the message says which),
                403 REQUEST_LIMIT_EXCEEDED (too many requests of this session at once).
        """
        digest = _digest(token)
        with self._lock:
            self._sweep()
            client = self._clients.get(digest)
            if client is None:
                why = self._ended.get(digest)
                if why is None:
                    client = self._load(token, digest)
                if client is None:
                    raise ApiError(
                        401, "INVALID_SESSION_ID", "Session expired or invalid" + (f": {why}" if why else "")
                    )
            now = self._clock()
            if self.session_timeout > 0 and client.inflight == 0 and now - client.last_used > self.session_timeout:
                self._end(client, f"the session expired after {self.session_timeout:g} s without a request")
                raise ApiError(401, "INVALID_SESSION_ID", f"Session expired or invalid: {self._ended[digest]}")
            if client.inflight >= MAX_CONCURRENT_REQUESTS:
                raise ApiError(
                    403,
                    "REQUEST_LIMIT_EXCEEDED",
                    f"ConcurrentRequests: this session already has {client.inflight} requests under way "
                    f"(at most {MAX_CONCURRENT_REQUESTS})",
                )
            self._clients.move_to_end(digest)
            client.last_used = now
            client.inflight += 1
            client.requests += 1
            self.served += 1
            if self._registry is not None and client.requests % 50 == 1:
                self._registry.execute("UPDATE sessions SET last_used = ? WHERE digest = ?", (time.time(), digest))
        try:
            yield client
        finally:
            with self._lock:
                client.inflight -= 1
                if client.ended is not None and client.inflight == 0 and client.org is not None:
                    client.org.drop()
                    client.org = None

    def ended_reason(self, token: str) -> str | None:
        """Why ``token``'s session ended (None: it did not, or it is unknown)."""
        with self._lock:
            return self._ended.get(_digest(token))

    def revoke(self, token: str) -> bool:
        """End ``token``'s session (its writes are discarded, its token invalid): whether it was live."""
        digest = _digest(token)
        with self._lock:
            client = self._clients.get(digest)
            if client is None:
                if self._ended.get(digest) is not None:
                    return False
                client = self._load(token, digest)
                if client is None:
                    return False
            self._end(client, "the session's token was revoked")
            return True

    # -- query cursors -------------------------------------------------------------------------------

    def open_cursor(self, client: Client, records: list[bytes], total: int, batch: int) -> str:
        """Keep ``records`` (the rest of a result, encoded) for ``nextRecordsUrl``: the cursor's locator.

        Raises:
            ApiError: 403 REQUEST_LIMIT_EXCEEDED when the rest alone exceeds the bound of all cursors.
        """
        size = sum(len(r) + 48 for r in records) + 256
        if size > self.cursor_bytes:
            raise ApiError(
                403,
                "REQUEST_LIMIT_EXCEEDED",
                f"the query's result is {size:,} bytes past its first batch, more than all query cursors may hold "
                f"({self.cursor_bytes:,}); select fewer fields or rows, or page with LIMIT and OFFSET",
            )
        locator = "0r8" + "".join(secrets.choice(_TOKEN_CHARS[:62]) for _ in range(12))
        locator += id_checksum(locator)
        with self._lock:
            while len(client.cursors) >= MAX_CURSORS:
                self._release(client, next(iter(client.cursors)))
            while self._cursor_total + size > self.cursor_bytes and self._evict_oldest_cursor():
                pass
            client.cursors[locator] = Cursor(records, total, batch, size, self._clock())
            self._cursor_total += size
        return locator

    def cursor(self, client: Client, locator: str) -> Cursor | None:
        with self._lock:
            cursor = client.cursors.get(locator)
            if cursor is not None:
                if self._clock() - cursor.last_used > self.cursor_timeout:
                    self._release(client, locator)
                    return None
                cursor.last_used = self._clock()
                client.cursors.move_to_end(locator)
            return cursor

    def close_cursor(self, client: Client, locator: str) -> None:
        with self._lock:
            self._release(client, locator)

    def _release(self, client: Client, locator: str) -> None:
        cursor = client.cursors.pop(locator, None)
        if cursor is not None:
            self._cursor_total -= cursor.size

    def _drop_cursors(self, client: Client) -> None:
        for locator in list(client.cursors):
            self._release(client, locator)

    def _evict_oldest_cursor(self) -> bool:
        oldest: tuple[float, Client, str] | None = None
        for client in self._clients.values():
            for locator, cursor in client.cursors.items():
                if oldest is None or cursor.last_used < oldest[0]:
                    oldest = (cursor.last_used, client, locator)
        if oldest is None:
            return False
        self._release(oldest[1], oldest[2])
        return True

    @property
    def cursor_bytes_held(self) -> int:
        """The bytes all open query cursors hold."""
        with self._lock:
            return self._cursor_total

    @property
    def sessions(self) -> int:
        """Sessions held in memory."""
        with self._lock:
            return sum(1 for c in self._clients.values() if c.org is not None)

    def session_counts(self) -> Counter[str]:
        """Sessions by state (for tests and the limits resource): loaded, ended."""
        with self._lock:
            return Counter(loaded=self.sessions, ended=len(self._ended))

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), OrderedDict()
            registry, self._registry = self._registry, None
        for client in clients:
            if client.org is not None:
                if self.persist is not None:
                    client.org.close()
                else:
                    client.org.drop()
                client.org = None
        if registry is not None:
            registry.close()
        self.base.close()


__all__ = ["ApiError", "Client", "LoginError", "OrgError", "SessionHub", "new_token"]
