"""``SalesforceOrg``: the :class:`~crmarena_gym.org.Org` interface over a live org, through simple-salesforce.

simple-salesforce is an optional dependency (``pip install 'crmarena-gym[salesforce]'``); it is imported
only when a ``SalesforceOrg`` connects, so this module imports without it.

What this layer adds to simple-salesforce:

- every failure becomes an :class:`~crmarena_gym.org.OrgError` carrying Salesforce's own ``errorCode``
  and message (taken from the response body), so agents see ``INVALID_FIELD: No such column ...`` as
  they would on the embedded org;
- transient failures (HTTP 5xx, HTTP 429, a concurrent-request limit, connection errors, timeouts) are
  retried with jittered exponential backoff, up to ``max_retries`` times per HTTP call;
- an expired session (HTTP 401 ``INVALID_SESSION_ID``) triggers one fresh login, then one more try;
- ``query`` follows ``nextRecordsUrl`` itself and keeps the first page's ``totalSize``, so that
  ``SELECT COUNT() FROM Case`` reports its count in ``totalSize`` (simple-salesforce's ``query_all``
  recomputes ``totalSize`` as the number of records, which is 0 for ``COUNT()``);
- records come back as plain ``dict`` objects, not ``OrderedDict``.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlparse

from crmarena_gym.org._base import Org, OrgError, check_max_records

_T = TypeVar("_T")

_INSTALL_HINT = "SalesforceOrg needs simple-salesforce: pip install 'crmarena-gym[salesforce]'"
_VERSION_RE = re.compile(r"^\d{2,3}\.\d$")
_OBJECT_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,79}$")
# The daily API allowance is spent for 24 hours; retrying cannot help. Other REQUEST_LIMIT_EXCEEDED
# errors (concurrent long-running requests) clear within seconds.
_DAILY_LIMIT_MARK = "totalrequests"


def _import_simple_salesforce() -> Any:
    try:
        import simple_salesforce
    except ImportError as exc:  # pragma: no cover - exercised only where the extra is missing
        raise ImportError(_INSTALL_HINT) from exc
    return simple_salesforce


def _import_requests() -> Any:
    try:
        import requests
    except ImportError as exc:  # pragma: no cover - requests comes with simple-salesforce
        raise ImportError(_INSTALL_HINT) from exc
    return requests


def _timeout_session(timeout: float) -> Any:
    """A ``requests.Session`` whose requests time out after ``timeout`` seconds unless told otherwise."""
    requests = _import_requests()

    class _TimeoutSession(requests.Session):  # type: ignore[misc, name-defined]
        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("timeout", timeout)
            return super().request(method, url, *args, **kwargs)

    return _TimeoutSession()


def _plain(value: Any) -> Any:
    """``value`` with every mapping turned into a plain ``dict`` (simple-salesforce uses OrderedDict)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _error_body(content: Any) -> tuple[str | None, str]:
    """Salesforce's ``(errorCode, message)`` from an error response body (a list of errors, usually)."""
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list) and content and all(isinstance(e, dict) for e in content):
        code = content[0].get("errorCode") or content[0].get("error")
        messages = [str(e.get("message") or e.get("error_description") or "") for e in content]
        return (str(code) if code else None), "; ".join(m for m in messages if m)
    if isinstance(content, bytes):
        content = content.decode("utf-8", "replace")
    return None, str(content or "").strip()


class SalesforceOrg(Org):
    """A live Salesforce org behind the same interface as :class:`~crmarena_gym.org.LocalOrg`.

    Log in with a username, password and security token (``domain="test"`` for a sandbox, or a My
    Domain such as ``"acme.my"``), or reuse a session with ``session_id`` and ``instance_url``. When
    both are given, the session is used first and the password serves to log in again once it expires.
    An already built ``simple_salesforce.Salesforce`` may be passed as ``sf`` instead.

    The password is kept in memory (and in pickles of this object) so that the org can log in again;
    it never appears in messages or ``repr``.

    Args:
        username: The Salesforce username.
        password: The user's password.
        security_token: The user's security token ("" when the org trusts the caller's IP range).
        session_id: An access token of an existing session.
        instance_url: The instance of that session, e.g. ``"https://acme.my.salesforce.com"``.
        domain: The login domain: ``"login"`` (default), ``"test"`` for sandboxes, or a My Domain.
        version: The REST API version, e.g. ``"60.0"``.
        max_retries: Retries per HTTP call after a transient failure (0 disables retrying).
        backoff: Base delay in seconds; retry ``n`` waits ``backoff * 2**n`` (capped at
            ``max_backoff``) times a random factor in [0.5, 1].
        max_backoff: Longest single wait, in seconds.
        timeout: Seconds before an HTTP request is abandoned (and counts as a transient failure).
        sleep: Called with each delay instead of ``time.sleep`` (tests pass a recorder); not pickled.
        seed: Seed of the jitter's random generator (None: seeded from the OS).
        sf: A ready ``simple_salesforce.Salesforce`` to use instead of logging in.

    Raises:
        ValueError: The credentials are incomplete or a setting is out of range.
        ImportError: simple-salesforce is not installed.
        OrgError: ``INVALID_LOGIN`` when Salesforce refuses the login (the org logs in at once when
            given a password, so bad credentials show up here, not at the first query).

    Example:
        >>> org = SalesforceOrg(username="agent@acme.com", password="...", security_token="...")  # doctest: +SKIP
        >>> org.query("SELECT COUNT() FROM Case")["totalSize"]  # doctest: +SKIP
        977
    """

    def __init__(
        self,
        *,
        username: str | None = None,
        password: str | None = None,
        security_token: str | None = None,
        session_id: str | None = None,
        instance_url: str | None = None,
        domain: str | None = None,
        version: str = "60.0",
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        timeout: float = 60.0,
        sleep: Callable[[float], None] | None = None,
        seed: int | None = None,
        sf: Any = None,
    ) -> None:
        if not isinstance(version, str) or not _VERSION_RE.match(version):
            raise ValueError(f"version must look like '60.0' (no leading 'v'), got {version!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        for name, value in (("backoff", backoff), ("max_backoff", max_backoff)):
            if not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name} must be a non-negative number of seconds, got {value!r}")
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        password_parts = {"username": username, "password": password, "security_token": security_token}
        given = [k for k, v in password_parts.items() if v is not None]
        if given and len(given) < 3:
            missing = ", ".join(k for k, v in password_parts.items() if v is None)
            raise ValueError(
                f"a password login needs username, password and security_token; missing: {missing} "
                "(pass security_token='' if the org trusts your IP range)"
            )
        if (session_id is None) != (instance_url is None):
            missing = "instance_url" if instance_url is None else "session_id"
            raise ValueError(f"a session login needs both session_id and instance_url; missing: {missing}")
        if instance_url is not None:
            parsed = urlparse(instance_url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise ValueError(
                    f"instance_url must be a URL like 'https://acme.my.salesforce.com', got {instance_url!r}"
                )
            if parsed.scheme == "http":  # simple-salesforce calls https://<host> whatever the scheme given
                raise ValueError(
                    f"instance_url must be https (simple-salesforce speaks nothing else), got {instance_url!r}; "
                    "a served org speaks https unless started with --http"
                )
        if sf is None and not given and session_id is None:
            raise ValueError(
                "SalesforceOrg needs credentials: username, password and security_token, "
                "or session_id and instance_url, or a ready simple_salesforce.Salesforce as sf"
            )
        if domain is not None and (not isinstance(domain, str) or not re.fullmatch(r"[A-Za-z0-9.-]+", domain)):
            raise ValueError(f"domain must be 'login', 'test' or a My Domain such as 'acme.my', got {domain!r}")
        _import_simple_salesforce()

        self._username = username
        self._password = password
        self._security_token = security_token
        self._domain = domain or "login"
        self._version = version
        self._max_retries = max_retries
        self._backoff = float(backoff)
        self._max_backoff = float(max_backoff)
        self._timeout = float(timeout)
        self._sleep = sleep
        self._seed = seed
        self._rng = random.Random(seed)
        self._http: Any = None
        self._sf: Any = sf
        # The session in use: (session id, instance host[:port]); None until logged in.
        self._session: tuple[str, str] | None = None
        if sf is not None:
            self._version = str(getattr(sf, "sf_version", version))
            if getattr(sf, "session_id", None) and getattr(sf, "sf_instance", None):
                self._session = (sf.session_id, sf.sf_instance)
        elif session_id is not None:
            assert instance_url is not None
            parsed = urlparse(instance_url)
            host = parsed.hostname or ""
            if parsed.port not in (None, 443):
                host += f":{parsed.port}"
            self._session = (session_id, host)
        else:
            self._connect()  # a password login: refuse bad credentials now, not at the first query

    # -- the Org interface -------------------------------------------------------------------------

    def query(self, soql: str) -> dict[str, Any]:
        """Run a SOQL query on the live org and return every row (following ``nextRecordsUrl``).

        Raises:
            OrgError: Salesforce's error code and message, e.g. ``MALFORMED_QUERY`` or ``INVALID_FIELD``.
        """
        return self._fetch(soql, None)

    def query_head(self, soql: str, max_records: int) -> dict[str, Any]:
        """Run a SOQL query on the live org, fetching batches only until ``max_records`` rows are in.

        See :meth:`Org.query_head`; ``totalSize`` is Salesforce's count of every row.
        """
        return self._fetch(soql, check_max_records(max_records))

    def _fetch(self, soql: str, keep: int | None) -> dict[str, Any]:
        _check_text(soql, "query")
        page = self._call(lambda sf: sf.query(soql))
        total = page.get("totalSize", 0)
        records = list(page.get("records", []))
        while not page.get("done", True) and (keep is None or len(records) < keep):
            next_url = page.get("nextRecordsUrl")
            if not next_url:
                raise OrgError("UNKNOWN_EXCEPTION", "Salesforce marked a page as not done but gave no nextRecordsUrl")
            page = self._call(lambda sf, url=next_url: sf.query_more(url, identifier_is_url=True))
            records.extend(page.get("records", []))
        # Stopped before the last batch, or the last batch brought more than the head: rows were left out.
        cut = keep is not None and (not page.get("done", True) or len(records) > keep)
        if cut:
            records = records[:keep]
        return {"totalSize": total, "done": not cut, "records": _plain(records)}

    def describe(self, object_name: str) -> dict[str, Any]:
        """Describe one object of the live org (REST ``sobjects/<name>/describe``).

        Raises:
            OrgError: NOT_FOUND for an unknown object, or Salesforce's error code and message.
        """
        if not isinstance(object_name, str) or not _OBJECT_NAME_RE.match(object_name):
            raise OrgError("NOT_FOUND", f"not an object name: {object_name!r}")
        return _plain(self._call(lambda sf: sf.restful(f"sobjects/{object_name}/describe")))

    def search(self, sosl: str) -> dict[str, Any]:
        """Run a SOSL search on the live org.

        Returns:
            ``{"searchRecords": [...]}`` (an empty list when nothing matches).

        Raises:
            OrgError: Salesforce's error code and message, e.g. ``MALFORMED_SEARCH``.
        """
        _check_text(sosl, "search")
        result = self._call(lambda sf: sf.search(sosl))
        if result is None:  # simple-salesforce turns an empty body into None
            return {"searchRecords": []}
        if isinstance(result, list):  # API versions before 37.0 answer with a bare list
            return {"searchRecords": _plain(result)}
        out = _plain(result)
        out.setdefault("searchRecords", [])
        return out

    @property
    def today(self) -> dt.date | None:
        """None: a live org resolves ``TODAY`` and the other relative date literals by its own clock."""
        return None

    def with_today(self, today: dt.date | str | None) -> SalesforceOrg:
        """This org itself when ``today`` is None; a live org cannot answer as of another day.

        A live org resolves relative date literals against its own clock and time zone, so a view that
        merely reported another date would give answers that silently disagree with it. The caller
        (the environment layer) catches the error, warns, and goes on with real time.

        Raises:
            ValueError: ``today`` is neither a date, an ISO date string nor None.
            NotImplementedError: ``today`` is a date.
        """
        if today is None:
            return self
        if isinstance(today, str):
            try:
                today = dt.date.fromisoformat(today)
            except ValueError:
                raise ValueError(f"today must be an ISO date like '2023-04-01', got {today!r}") from None
        elif isinstance(today, dt.datetime) or not isinstance(today, dt.date):
            raise ValueError(f"today must be a datetime.date, an ISO date string or None, got {today!r}")
        raise NotImplementedError(
            f"a live Salesforce org resolves TODAY, LAST_N_DAYS:n and other relative date literals by its "
            f"own clock; it cannot answer as of {today.isoformat()}. Write absolute dates, or use a LocalOrg."
        )

    def close(self) -> None:
        """Drop the HTTP connection pool (the org logs in again if used afterwards)."""
        if self._http is not None:
            self._http.close()
        self._http = None
        if self._session is not None or self._can_login:
            self._sf = None

    # -- pickling: credentials and session travel, connections do not ------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_http"] = None
        state["_sf"] = None
        state["_sleep"] = None  # often a test's lambda; an unpickled org sleeps with time.sleep
        if self._sf is not None and self._session is None and not self._can_login:
            raise TypeError("cannot pickle a SalesforceOrg built on an sf object that has no session id")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        who = f"username={self._username!r}" if self._username else "session"
        where = self._session[1] if self._session else f"{self._domain}.salesforce.com"
        return f"SalesforceOrg({who}, instance={where!r}, version={self._version!r})"

    # -- connection, retries, error mapping --------------------------------------------------------

    @property
    def _can_login(self) -> bool:
        return self._username is not None and self._password is not None and self._security_token is not None

    @property
    def _login_url(self) -> str:
        return f"https://{self._domain}.salesforce.com/services/Soap/u/{self._version}"

    def _http_session(self) -> Any:
        if self._http is None:
            self._http = _timeout_session(self._timeout)
        return self._http

    def _connect(self, *, fresh_login: bool = False) -> Any:
        """The simple-salesforce client, logging in first if there is no session (or ``fresh_login``)."""
        if self._sf is not None and not fresh_login:
            return self._sf
        ssf = _import_simple_salesforce()
        if fresh_login or self._session is None:
            if not self._can_login:
                raise OrgError("INVALID_SESSION_ID", self._no_login_message())
            self._session = self._with_retries(self._login)
        session_id, instance = self._session
        self._sf = ssf.Salesforce(
            session_id=session_id,
            instance=instance,
            version=self._version,
            session=self._http_session(),
            object_pairs_hook=dict,
        )
        return self._sf

    def _login(self) -> tuple[str, str]:
        ssf = _import_simple_salesforce()
        requests = _import_requests()
        try:
            return ssf.SalesforceLogin(
                username=self._username,
                password=self._password,
                security_token=self._security_token,
                sf_version=self._version,
                domain=self._domain,
                session=self._http_session(),
            )
        except ssf.SalesforceAuthenticationFailed as exc:
            # A refusal is a SOAP fault with an exceptionCode. Without one (an HTML error page, whose
            # status simple-salesforce reports as the code when the page is not XML) the login server
            # itself failed: worth retrying.
            if exc.code is None or (isinstance(exc.code, int) and (exc.code >= 500 or exc.code == 429)):
                status = f"HTTP {exc.code}" if exc.code else "an error page"
                detail = self._scrub(str(exc.auth_message or "").strip())[:200]
                raise _Transient(
                    "SERVER_UNAVAILABLE", f"the login server {self._login_url} answered {status}: {detail}"
                ) from None
            code = str(exc.code) if exc.code else "INVALID_LOGIN"
            detail = self._scrub(str(exc.auth_message or "").strip())
            raise OrgError(
                "INVALID_LOGIN",
                f"Salesforce refused the login of user {self._username!r} at {self._login_url} "
                f"(tried username, password and security token; password not shown): {code}: {detail}",
            ) from None
        except requests.exceptions.Timeout as exc:
            raise _Transient(
                "SERVER_UNAVAILABLE", f"no answer from {self._login_url} within {self._timeout:g} s: {exc}"
            ) from None
        except requests.exceptions.ConnectionError as exc:
            raise _Transient("SERVER_UNAVAILABLE", f"could not reach {self._login_url}: {exc}") from None

    def _no_login_message(self) -> str:
        where = self._session[1] if self._session else "the org"
        return (
            f"the session for {where} expired or is invalid, and SalesforceOrg has no username, password "
            "and security_token to log in again; pass them, or a fresh session_id"
        )

    def _call(self, fn: Callable[[Any], _T]) -> _T:
        """``fn(client)`` with retries on transient failures and one re-login on an expired session."""
        ssf = _import_simple_salesforce()
        relogged = False
        while True:
            sf = self._connect()
            try:
                return self._with_retries(lambda client=sf: self._attempt(fn, client, ssf))
            except _ExpiredSession as exc:
                if relogged or not self._can_login:
                    message = self._no_login_message() if not self._can_login else exc.message
                    raise OrgError("INVALID_SESSION_ID", message) from None
                relogged = True
                self._connect(fresh_login=True)

    def _attempt(self, fn: Callable[[Any], _T], sf: Any, ssf: Any) -> _T:
        """One try of ``fn(sf)``, with simple-salesforce's and requests' exceptions sorted out."""
        requests = _import_requests()
        try:
            return fn(sf)
        except ssf.SalesforceExpiredSession as exc:
            code, message = _error_body(exc.content)
            raise _ExpiredSession(code or "INVALID_SESSION_ID", message or "Session expired or invalid") from None
        except ssf.SalesforceError as exc:
            code, message = _error_body(exc.content)
            status = int(exc.status or 0)
            if status >= 500 or status == 429:
                raise _Transient(code or "SERVER_UNAVAILABLE", message or f"HTTP {status} from {exc.url}") from None
            if code == "REQUEST_LIMIT_EXCEEDED" and _DAILY_LIMIT_MARK not in message.lower().replace(" ", ""):
                raise _Transient(code, message) from None
            if code is None:
                code = "NOT_FOUND" if status == 404 else "UNKNOWN_EXCEPTION"
                message = f"HTTP {status} from {exc.url}: {message}" if message else f"HTTP {status} from {exc.url}"
            raise OrgError(code, message) from None
        except requests.exceptions.Timeout as exc:
            raise _Transient("SERVER_UNAVAILABLE", f"no answer within {self._timeout:g} s: {exc}") from None
        except requests.exceptions.ConnectionError as exc:
            raise _Transient("SERVER_UNAVAILABLE", f"could not reach Salesforce: {exc}") from None

    def _with_retries(self, fn: Callable[[], _T]) -> _T:
        attempt = 0
        while True:
            try:
                return fn()
            except _Transient as exc:
                if attempt >= self._max_retries:
                    raise OrgError(
                        exc.code, f"{exc.message} (gave up after {attempt} retr{'y' if attempt == 1 else 'ies'})"
                    ) from None
                delay = min(self._max_backoff, self._backoff * 2**attempt) * self._rng.uniform(0.5, 1.0)
                (time.sleep if self._sleep is None else self._sleep)(delay)
                attempt += 1

    def _scrub(self, text: str) -> str:
        """``text`` with the password and security token blanked out, should a server ever echo them."""
        for secret in (
            (self._password or "") + (self._security_token or ""),
            self._password or "",
            self._security_token or "",
        ):
            if len(secret) >= 3:
                text = text.replace(secret, "***")
        return text


class _Transient(Exception):
    """A failure worth retrying (internal: becomes an OrgError when retries run out)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class _ExpiredSession(Exception):
    """HTTP 401: the session id was refused (internal: triggers one re-login, never a plain retry)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _check_text(text: object, what: str) -> None:
    if not isinstance(text, str):
        raise OrgError(
            "MALFORMED_QUERY" if what == "query" else "MALFORMED_SEARCH",
            f"the {what} must be a string, got {type(text).__name__}: {text!r}",
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # no request can carry it: refuse here, never a raw encoding error
        raise OrgError(
            "MALFORMED_QUERY" if what == "query" else "MALFORMED_SEARCH",
            f"the {what} holds {exc.object[exc.start : exc.end]!r} at character {exc.start}, which UTF-8 cannot "
            f"encode (a lone surrogate), so no request to Salesforce can carry it: {text!r}",
        ) from None
