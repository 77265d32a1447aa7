"""The embedded org behind Salesforce's REST API: an ASGI app (Starlette) over :class:`SessionHub`'s sessions.

Routes: the OAuth token, revoke and userinfo endpoints, the identity URL, ``/services/data`` (versions)
and every resource under ``/services/data/vXX.X/`` (:mod:`._rest`, :mod:`._bulk`). Each request's body
is bounded and read under the connection's deadline; the org work runs in a worker thread. No request
answers 500: a refusal is Salesforce's error shape with its status.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import threading
import time
from typing import Any
from urllib.parse import parse_qsl, unquote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crmarena_gym.org.serve._bulk import MAX_UPLOAD_BYTES, Bulk
from crmarena_gym.org.serve._bulk1 import Bulk1, BulkError
from crmarena_gym.org.serve._hub import ApiError, Client, LoginError, SessionHub
from crmarena_gym.org.serve._rest import (
    LATEST_VERSION,
    MAX_BODY_BYTES,
    VERSIONS,
    Call,
    Reply,
    Rest,
    check_version,
    encode_json,
    error_body,
    version_label,
)

__all__ = ["MAX_BODY_BYTES", "VERSIONS", "ApiError", "SessionHub", "make_app"]

#: Bytes of request bodies held at once by the whole server (past it: 503, retry later).
BODY_BUDGET = 512 * 2**20
#: Token requests one client address may make per second (after a burst of LOGIN_BURST).
LOGIN_RATE = 20.0
LOGIN_BURST = 200
_log = logging.getLogger("crmarena_gym.serve")
_ALL = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]


class _Json(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return content if isinstance(content, bytes) else encode_json(content)


def _error(err: ApiError, headers: dict[str, str] | None = None) -> Response:
    return _Json(error_body(err), status_code=err.status, headers=headers)


class _Budget:
    """Bytes of request bodies held at once, across every connection."""

    def __init__(self, limit: int) -> None:
        self.limit, self.held, self.lock = limit, 0, threading.Lock()

    def take(self, n: int) -> bool:
        with self.lock:
            if self.held + n > self.limit:
                return False
            self.held += n
            return True

    def give(self, n: int) -> None:
        with self.lock:
            self.held -= n


class _Bucket:
    """Token-bucket rates by client address (bounded in addresses)."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst, self.state, self.lock = rate, burst, {}, threading.Lock()

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        with self.lock:
            tokens, then = self.state.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - then) * self.rate)
            if len(self.state) > 10_000:
                self.state.clear()
            if tokens < 1:
                self.state[key] = (tokens, now)
                return False
            self.state[key] = (tokens - 1, now)
            return True


async def _body(request: Request, budget: _Budget, limit: int) -> bytes:
    """The request body, at most ``limit`` bytes (413 past it), counted against the server's budget."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and (len(declared) > 12 or int(declared) > limit):
        raise ApiError(413, "REQUEST_ENTITY_TOO_LARGE", f"the request body is {declared[:20]} bytes; at most {limit}")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ApiError(413, "REQUEST_ENTITY_TOO_LARGE", f"the request body exceeds {limit} bytes")
            if not budget.take(len(chunk)):
                raise ApiError(
                    503, "SERVER_UNAVAILABLE", "the server holds as many request bodies as it may; retry shortly"
                )
            chunks.append(chunk)
    except BaseException:
        budget.give(sum(len(c) for c in chunks))
        raise
    return b"".join(chunks)


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() not in ("bearer", "oauth") or not value.strip():
        raise ApiError(401, "INVALID_SESSION_ID", "Session expired or invalid")
    return value.strip()


def _path_parts(request: Request) -> list[str]:
    """The segments after ``/services/data/vXX.X/``, split on the raw path and then each decoded once.

    Splitting the decoded path would cut a value holding an encoded ``/`` (an External ID ``A/B`` sent as
    ``A%2FB``) in two, and decoding again would read ``%41`` in a value as ``A``.
    """
    decoded = [p for p in request.path_params.get("rest", "").split("/") if p]
    raw = request.scope.get("raw_path")
    if not isinstance(raw, bytes):
        return decoded
    segments = [unquote(p, errors="replace") for p in raw.decode("utf-8", "replace").split("?", 1)[0].split("/") if p]
    if segments[:2] != ["services", "data"] or len(segments) < 3:  # an encoded "/" in the prefix: keep the route's
        return decoded
    return segments[3:]


def _form(raw: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True):
        out.setdefault(k, v)
    return out


def make_app(hub: SessionHub) -> Starlette:
    """The ASGI app serving ``hub``'s org as Salesforce's REST API (see the README's serve-org section)."""
    bulk = Bulk(hub)
    bulk1 = Bulk1(hub, bulk)
    rest = Rest(hub, extra=bulk.dispatch)
    budget = _Budget(BODY_BUDGET)
    logins = _Bucket(LOGIN_RATE, LOGIN_BURST)

    def instance(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    def identity_url(request: Request) -> str:
        return f"{instance(request)}/id/{hub.org_id}/{hub.user_id}"

    async def token(request: Request) -> Response:
        if request.method != "POST":
            return _error(
                ApiError(405, "METHOD_NOT_ALLOWED", f"HTTP Method '{request.method}' not allowed. Allowed are POST")
            )
        peer = request.client.host if request.client else ""
        if not logins.allow(peer):
            return _Json({"error": "invalid_grant", "error_description": "login rate exceeded"}, status_code=400)
        raw = await _body(request, budget, 64 * 1024)
        try:
            form = _form(raw)
        finally:
            budget.give(len(raw))
        for k, v in request.query_params.items():
            form.setdefault(k, v)
        if form.get("grant_type") != "password":
            return _Json(
                {"error": "unsupported_grant_type", "error_description": "grant type not supported"}, status_code=400
            )
        username = form.get("username", "")
        if not username:
            return _Json({"error": "invalid_grant", "error_description": "authentication failure"}, status_code=400)
        try:
            granted = await run_in_threadpool(hub.login, username, form.get("password", ""))
        except LoginError as err:
            return _Json({"error": err.error, "error_description": err.description}, status_code=400)
        issued = str(int(time.time() * 1000))
        ident = identity_url(request)
        signature = base64.b64encode(
            hmac.new(hub.signing_key, (ident + issued).encode(), hashlib.sha256).digest()
        ).decode()
        body: dict[str, Any] = {
            "access_token": granted["token"],
            "instance_url": instance(request),
            "id": ident,
            "token_type": "Bearer",
            "issued_at": issued,
            "signature": signature,
            # Ours: every password login is a new, empty session (a client that re-logs in after its session
            # ended is told, not silently handed an empty one).
            "crmarena_new_session": True,
        }
        if granted["notice"]:
            body["crmarena_notice"] = granted["notice"]
        return _Json(body)

    async def revoke(request: Request) -> Response:
        if request.method not in ("POST", "GET"):
            return _error(ApiError(405, "METHOD_NOT_ALLOWED", "HTTP Method not allowed. Allowed are GET,POST"))
        raw = await _body(request, budget, 64 * 1024) if request.method == "POST" else b""
        budget.give(len(raw))
        value = _form(raw).get("token") or request.query_params.get("token", "")
        if not value or not await run_in_threadpool(hub.revoke, value):
            return _Json({"error": "unsupported_token_type", "error_description": "this token is invalid"}, 400)
        return Response(status_code=200)

    def _user_claims(request: Request, client: Client) -> dict[str, Any]:
        org = client.org
        assert org is not None
        found = org.query(
            f"SELECT Id, Username, FirstName, LastName, Name, Email, Alias, TimeZoneSidKey, LanguageLocaleKey, "
            f"LocaleSidKey FROM User WHERE Id = '{hub.user_id}'"
        )["records"]
        return found[0] if found else {}

    def _urls(request: Request) -> dict[str, str]:
        base = instance(request)
        rest_base = f"{base}/services/data/v{{version}}/"
        return {
            "enterprise": f"{base}/services/Soap/c/{{version}}/{hub.org_id}",
            "metadata": f"{base}/services/Soap/m/{{version}}/{hub.org_id}",
            "partner": f"{base}/services/Soap/u/{{version}}/{hub.org_id}",
            "rest": rest_base,
            "sobjects": f"{rest_base}sobjects/",
            "search": f"{rest_base}search/",
            "query": f"{rest_base}query/",
            "recent": f"{rest_base}recent/",
            "tooling_soap": f"{base}/services/Soap/T/{{version}}/{hub.org_id}",
            "tooling_rest": f"{rest_base}tooling/",
            "profile": f"{base}/{hub.user_id}",
            "feeds": f"{rest_base}chatter/feeds",
            "groups": f"{rest_base}chatter/groups",
            "users": f"{rest_base}chatter/users",
            "feed_items": f"{rest_base}chatter/feed-items",
            "feed_elements": f"{rest_base}chatter/feed-elements",
            "custom_domain": base,
        }

    async def _authorized(request: Request, work: Any) -> Response:
        try:
            # The identity URL also takes the token as ?oauth_token= (as Salesforce's does, and jsforce sends it).
            given = request.query_params.get("oauth_token")
            with hub.use(given if given and "authorization" not in request.headers else _bearer(request)) as client:
                return await work(client)
        except ApiError as err:
            if err.status == 401 and request.url.path.startswith(("/services/oauth2", "/id/")):
                return _Json({"error": "invalid_token", "error_description": err.message}, status_code=403)
            return _error(err)

    async def userinfo(request: Request) -> Response:
        async def work(client: Client) -> Response:
            user = await run_in_threadpool(_user_claims, request, client)
            return _Json(
                {
                    "sub": identity_url(request),
                    "user_id": hub.user_id,
                    "organization_id": hub.org_id,
                    "preferred_username": user.get("Username") or hub.username,
                    "nickname": user.get("Alias") or "",
                    "name": user.get("Name") or "",
                    "email": user.get("Email") or "",
                    "email_verified": True,
                    "given_name": user.get("FirstName") or "",
                    "family_name": user.get("LastName") or "",
                    "zoneinfo": user.get("TimeZoneSidKey") or "America/Los_Angeles",
                    "photos": {"picture": "", "thumbnail": ""},
                    "profile": f"{instance(request)}/{hub.user_id}",
                    "picture": "",
                    "address": {},
                    "urls": _urls(request),
                    "active": True,
                    "user_type": "STANDARD",
                    "language": user.get("LanguageLocaleKey") or "en_US",
                    "locale": user.get("LocaleSidKey") or "en_US",
                    "utcOffset": 0,
                    "updated_at": "2000-01-01T00:00:00Z",
                    "is_app_installed": True,
                }
            )

        if request.method not in ("GET", "POST", "HEAD"):
            return _error(ApiError(405, "METHOD_NOT_ALLOWED", "HTTP Method not allowed. Allowed are GET,POST"))
        return await _authorized(request, work)

    async def identity(request: Request) -> Response:
        org_id, user_id = request.path_params["org"], request.path_params["user"]
        if org_id[:15] != hub.org_id[:15] or user_id[:15] != hub.user_id[:15]:
            return _Json({"error": "Bad_Id", "error_description": "Bad id " + org_id[:18]}, status_code=404)

        async def work(client: Client) -> Response:
            user = await run_in_threadpool(_user_claims, request, client)
            return _Json(
                {
                    "id": identity_url(request),
                    "asserted_user": True,
                    "user_id": hub.user_id,
                    "organization_id": hub.org_id,
                    "username": user.get("Username") or hub.username,
                    "nick_name": user.get("Alias") or "",
                    "display_name": user.get("Name") or "",
                    "email": user.get("Email") or "",
                    "email_verified": True,
                    "first_name": user.get("FirstName") or "",
                    "last_name": user.get("LastName") or "",
                    "timezone": user.get("TimeZoneSidKey") or "America/Los_Angeles",
                    "photos": {"picture": "", "thumbnail": ""},
                    "addr_street": None,
                    "addr_city": None,
                    "addr_state": None,
                    "addr_country": None,
                    "addr_zip": None,
                    "mobile_phone": None,
                    "mobile_phone_verified": False,
                    "is_lightning_login_user": False,
                    "status": {"created_date": None, "body": None},
                    "urls": _urls(request),
                    "active": True,
                    "user_type": "STANDARD",
                    "language": user.get("LanguageLocaleKey") or "en_US",
                    "locale": user.get("LocaleSidKey") or "en_US",
                    "utcOffset": 0,
                    "last_modified_date": "2000-01-01T00:00:00.000+0000",
                    "is_app_installed": True,
                }
            )

        return await _authorized(request, work)

    async def versions(request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return _error(ApiError(405, "METHOD_NOT_ALLOWED", "HTTP Method not allowed. Allowed are HEAD,GET"))
        return _Json([{"label": version_label(v), "url": f"/services/data/v{v}", "version": v} for v in VERSIONS])

    async def data(request: Request) -> Response:
        headers = {"Sforce-Limit-Info": f"api-usage={hub.served}/{15_000_000}"}
        try:
            version = check_version(request.path_params["version"])
            parts = _path_parts(request)
            with hub.use(_bearer(request)) as client:
                is_upload = len(parts) == 4 and parts[:2] == ["jobs", "ingest"] and parts[3] == "batches"
                limit = MAX_UPLOAD_BYTES if is_upload else MAX_BODY_BYTES
                raw = (
                    await _body(request, budget, limit) if request.method in ("POST", "PUT", "PATCH", "DELETE") else b""
                )
                try:
                    query: dict[str, str] = {}
                    for k, v in request.query_params.multi_items():
                        query.setdefault(k, v)
                    call = Call(
                        request.method,
                        parts,
                        version,
                        query,
                        raw,
                        {k.lower(): v for k, v in request.headers.items()},
                        instance=instance(request),
                        params=list(request.query_params.multi_items()),
                    )
                    reply: Reply = await run_in_threadpool(rest.dispatch, client, call)
                finally:
                    budget.give(len(raw))
            headers = {"Sforce-Limit-Info": f"api-usage={hub.served}/{15_000_000}", **reply.headers}
            if reply.body is None or request.method == "HEAD":
                return Response(status_code=reply.status, headers=headers, media_type=None)
            if reply.content_type.startswith("application/json"):
                return _Json(reply.body, status_code=reply.status, headers=headers)
            return Response(reply.body, status_code=reply.status, headers=headers, media_type=reply.content_type)
        except ApiError as err:
            return _error(err, headers)

    async def bulk_v1(request: Request) -> Response:
        """The Bulk API 1.0 (:mod:`._bulk1`): its session header or a bearer token, its error shape."""
        try:
            version = check_version(request.path_params["version"])
            token = request.headers.get("x-sfdc-session", "").strip() or _bearer(request)
            with hub.use(token) as client:
                writes = request.method in ("POST", "PUT", "PATCH")
                raw = await _body(request, budget, MAX_UPLOAD_BYTES) if writes else b""
                try:
                    parts = [p for p in request.path_params["rest"].split("/") if p]
                    status, body = await run_in_threadpool(bulk1.dispatch, client, request.method, version, parts, raw)
                finally:
                    budget.give(len(raw))
        except BulkError as err:
            return _Json(err.body(), status_code=err.status)
        except ApiError as err:  # Bulk 1.0 answers an invalid session 400 InvalidSessionId
            code, status = ("InvalidSessionId", 400) if err.status == 401 else (err.code, err.status)
            return _Json({"exceptionCode": code, "exceptionMessage": err.message}, status_code=status)
        if isinstance(body, str):  # a query batch's request: the SOQL as sent
            return Response(body, status_code=status, media_type="text/plain; charset=utf-8")
        return _Json(body, status_code=status)

    async def fallback(request: Request) -> Response:
        path = request.url.path
        if path.startswith("/services/Soap/"):
            return _soap_fault(path)
        return _error(ApiError(404, "NOT_FOUND", f"The requested resource does not exist: {_unserved(path)}"))

    app = Starlette(
        routes=[
            Route("/services/oauth2/token", token, methods=_ALL),
            Route("/services/oauth2/revoke", revoke, methods=_ALL),
            Route("/services/oauth2/userinfo", userinfo, methods=_ALL),
            Route("/id/{org}/{user}", identity, methods=_ALL),
            Route("/services/data", versions, methods=_ALL),
            Route("/services/data/", versions, methods=_ALL),
            Route("/services/data/v{version}", data, methods=_ALL),
            Route("/services/data/v{version}/{rest:path}", data, methods=_ALL),
            Route("/services/async/{version}/{rest:path}", bulk_v1, methods=_ALL),
            Route("/{rest:path}", fallback, methods=_ALL),
        ],
        exception_handlers={ApiError: lambda _r, e: _error(e), Exception: _internal},  # type: ignore[dict-item]
    )
    app.state.hub = hub
    app.state.latest = LATEST_VERSION
    return app


def _unserved(path: str) -> str:
    """What a path outside the served resources is, said so a client's user knows what is missing."""
    shown = path if len(path) <= 80 else path[:80] + "..."
    if path.startswith("/services/async/"):
        return f"{shown}: of the Bulk API 1.0 this org serves /services/async/XX.X/job/... (JSON jobs)"
    if path.startswith("/services/apexrest"):
        return f"{shown}: Apex REST (/services/apexrest) is not served: this org runs no Apex classes"
    if path.startswith("/services/oauth2/"):
        return f"{shown}: of the OAuth endpoints this org serves token, revoke and userinfo"
    return f"{shown} is not served by this org (it serves /services/data/vXX.X/ and /services/oauth2/)"


def _soap_fault(path: str) -> Response:
    """A SOAP fault for the SOAP APIs (Partner, Enterprise, Metadata, Tooling): a SOAP client raises it as
    such (zeep's Fault, with this text) instead of failing to parse a JSON error as XML."""
    shown = path if len(path) <= 80 else path[:80] + "..."
    text = (
        f"{shown}: the SOAP APIs (Partner, Enterprise, Metadata, Tooling) are not served by this org; "
        "it serves the REST API (/services/data/vXX.X/)"
    )
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
        'xmlns:sf="urn:fault.partner.soap.sforce.com"><soapenv:Body><soapenv:Fault>'
        f"<faultcode>sf:NOT_FOUND</faultcode><faultstring>NOT_FOUND: {text}</faultstring>"
        "</soapenv:Fault></soapenv:Body></soapenv:Envelope>"
    )
    return Response(body.encode("utf-8"), status_code=404, media_type="text/xml; charset=utf-8")


def _internal(_request: Request, exc: Exception) -> Response:
    if isinstance(exc, asyncio.CancelledError | ConnectionError):
        return Response(status_code=499)
    _log.exception("unexpected error answering a request", exc_info=exc)
    return _error(ApiError(500, "UNKNOWN_EXCEPTION", f"An unexpected error occurred: {type(exc).__name__}"))
