"""The embedded org behind Salesforce's REST API: an ASGI app (Starlette) over isolated ``OrgSession``s."""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from crmarena_gym.org._base import OrgError
from crmarena_gym.org._local import LocalOrg
from crmarena_gym.org._session import OrgSession
from crmarena_gym.org.serve._describe import describe_global, describe_object, object_info
from crmarena_gym.schema import make_id

#: API versions the server answers (``/services/data/vXX.X/``).
VERSIONS = tuple(f"{v}.0" for v in range(31, 63))
#: Most bytes of a request body; larger ones are refused with 413.
MAX_BODY_BYTES = 8 * 2**20
#: Most records of one ``composite/sobjects`` request (Salesforce's limit).
MAX_COMPOSITE_RECORDS = 200
#: Open query cursors per session (Salesforce keeps 10 per user); the oldest is dropped past it.
MAX_CURSORS = 10
DEFAULT_BATCH = 2000
_STATUS = {
    "NOT_FOUND": 404,
    "ENTITY_IS_DELETED": 404,
    "INVALID_SESSION_ID": 401,
    "REQUEST_LIMIT_EXCEEDED": 403,
    "UNKNOWN_EXCEPTION": 500,
    "SERVER_UNAVAILABLE": 503,
}
_LOCATORS = itertools.count(1)


class ApiError(Exception):
    """A refusal answered as Salesforce answers: ``[{"message": ..., "errorCode": ...}]`` and a status."""

    def __init__(self, status: int, code: str, message: str, fields: list[str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.fields = status, code, message, fields

    def response(self) -> JSONResponse:
        body: dict[str, Any] = {"message": self.message, "errorCode": self.code}
        if self.fields is not None:
            body["fields"] = self.fields
        return JSONResponse([body], status_code=self.status)


def _from_org(exc: OrgError) -> ApiError:
    return ApiError(_STATUS.get(exc.code, 400), exc.code, exc.message, getattr(exc, "fields", None))


@dataclass
class _Client:
    """One session id: its isolated org session and its open query cursors."""

    org: OrgSession
    cursors: OrderedDict[str, tuple[list[dict[str, Any]], int]] = field(default_factory=OrderedDict)
    last_used: float = field(default_factory=time.monotonic)
    requests: int = 0


class SessionHub:
    """The served org's sessions: one isolated :class:`OrgSession` per session id, at most ``max_sessions``.

    Args:
        org: The org file (or a :class:`LocalOrg` on it); it is only read.
        password: The secret of ``POST /services/oauth2/token`` (None: one is made).
        token: A session id that is valid from the start (None: one is made).
        max_sessions: Most live sessions; a login past it drops the least recently used one (not ``token``'s).
        today: The date the org's relative date literals resolve against (None: the current UTC date).
    """

    def __init__(
        self,
        org: LocalOrg | str | Path,
        *,
        password: str | None = None,
        token: str | None = None,
        max_sessions: int = 64,
        today: str | None = None,
    ) -> None:
        if not isinstance(max_sessions, int) or max_sessions < 1:
            raise ValueError(f"max_sessions must be a positive integer, got {max_sessions!r}")
        self.base = org if isinstance(org, LocalOrg) else LocalOrg(org, today=today)
        if today is not None and isinstance(org, LocalOrg):
            self.base = org.with_today(today)
        self.password = password or secrets.token_urlsafe(18)
        self.token = token or "00D" + secrets.token_urlsafe(30)
        self.max_sessions = max_sessions
        self.signing_key = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self.served = 0
        self._clients[self.token] = _Client(OrgSession(self.base))

    def login(self) -> str:
        """A new session id with its own isolated session (the least recently used one goes past the bound)."""
        token = "00D" + secrets.token_urlsafe(30)
        session = OrgSession(self.base)
        with self._lock:
            while len(self._clients) >= self.max_sessions:
                victim = next((t for t in self._clients if t != self.token), None)
                if victim is None:
                    break
                self._clients.pop(victim).org.drop()
            self._clients[token] = _Client(session)
        return token

    def client(self, token: str) -> _Client:
        with self._lock:
            client = self._clients.get(token)
            if client is None:
                raise ApiError(401, "INVALID_SESSION_ID", "Session expired or invalid")
            self._clients.move_to_end(token)
            client.last_used = time.monotonic()
            client.requests += 1
            self.served += 1
            return client

    def drop(self, token: str) -> bool:
        """End a session (its writes are discarded); the start token's session is reset instead."""
        with self._lock:
            client = self._clients.get(token)
            if client is None:
                return False
            if token == self.token:
                client.org.reset()
                client.cursors.clear()
                return True
            del self._clients[token]
        client.org.drop()
        return True

    @property
    def sessions(self) -> int:
        with self._lock:
            return len(self._clients)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), OrderedDict()
        for client in clients:
            client.org.drop()
        self.base.close()


# -- request helpers --------------------------------------------------------------------------------


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() not in ("bearer", "oauth") or not value.strip():
        raise ApiError(401, "INVALID_SESSION_ID", "Session expired or invalid")
    return value.strip()


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ApiError(
            413, "REQUEST_ENTITY_TOO_LARGE", f"the request body is {declared} bytes; at most {MAX_BODY_BYTES}"
        )
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise ApiError(413, "REQUEST_ENTITY_TOO_LARGE", f"the request body exceeds {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _json(request: Request) -> Any:
    raw = await _body(request)
    if not raw.strip():
        raise ApiError(400, "JSON_PARSER_ERROR", "The request body is empty: a JSON object was expected")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, "JSON_PARSER_ERROR", f"The request body is not valid JSON: {exc}") from None


def _methods(request: Request, allowed: tuple[str, ...]) -> None:
    if request.method not in allowed and not (request.method == "HEAD" and "GET" in allowed):
        shown = ",".join(("HEAD", *allowed) if "GET" in allowed else allowed)
        raise ApiError(405, "METHOD_NOT_ALLOWED", f"HTTP Method '{request.method}' not allowed. Allowed are {shown}")


def _not_found() -> ApiError:
    return ApiError(404, "NOT_FOUND", "The requested resource does not exist")


def _sobject(name: str, org: LocalOrg) -> str:
    obj = org.schema.get_object(name, standard=True)
    if obj is None or not org._live().catalog.has(obj):
        raise ApiError(404, "NOT_FOUND", f"The requested resource does not exist: no sObject type {name!r}")
    return obj.name


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return await run_in_threadpool(fn, *args)
    except OrgError as exc:
        raise _from_org(exc) from None


def _batch_size(request: Request) -> int:
    header = request.headers.get("sforce-query-options")
    if not header:
        return DEFAULT_BATCH
    m = re.search(r"batchSize\s*=\s*([^,;\s]*)", header, re.IGNORECASE)
    if m is None or not m.group(1).isdigit():
        raise ApiError(
            400, "INVALID_HEADER_TYPE", f"Sforce-Query-Options must be batchSize=N (200 to 2000), got {header!r}"
        )
    return min(max(int(m.group(1)), 200), 2000)  # Salesforce's bounds


def _page(records: list[dict[str, Any]], total: int, start: int, size: int, url: str | None) -> dict[str, Any]:
    chunk = records[start : start + size]
    done = start + size >= len(records)
    page: dict[str, Any] = {"totalSize": total, "done": done}
    if not done:
        page["nextRecordsUrl"] = f"{url}-{start + size}"
    page["records"] = chunk
    return page


# -- the app ----------------------------------------------------------------------------------------


def make_app(hub: SessionHub) -> Starlette:
    """The ASGI app serving ``hub``'s org as Salesforce's REST API (see the README's serve-org section)."""

    async def token(request: Request) -> Response:
        _methods(request, ("POST",))
        raw = await _body(request)
        form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
        form.update({k: v for k, v in request.query_params.items() if k not in form})
        if form.get("grant_type") != "password":
            return JSONResponse(
                {"error": "unsupported_grant_type", "error_description": "grant type not supported"}, status_code=400
            )
        given = form.get("password", "")
        if not form.get("username") or not hmac.compare_digest(given.encode(), hub.password.encode()):
            return JSONResponse({"error": "invalid_grant", "error_description": "authentication failure"}, 400)
        session_id = await run_in_threadpool(hub.login)
        issued = str(int(time.time() * 1000))
        instance = str(request.base_url).rstrip("/")
        ident = f"{instance}/id/00DWs0000000001/005Ws0000000001"
        signature = base64.b64encode(
            hmac.new(hub.signing_key, (ident + issued).encode(), hashlib.sha256).digest()
        ).decode()
        return JSONResponse(
            {
                "access_token": session_id,
                "instance_url": instance,
                "id": ident,
                "token_type": "Bearer",
                "issued_at": issued,
                "signature": signature,
            }
        )

    async def revoke(request: Request) -> Response:
        _methods(request, ("POST", "GET"))
        raw = await _body(request) if request.method == "POST" else b""
        form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
        value = form.get("token") or request.query_params.get("token", "")
        if not value or not hub.drop(value):
            return JSONResponse({"error": "unsupported_token_type", "error_description": "this token is invalid"}, 400)
        return Response(status_code=200)

    async def versions(request: Request) -> Response:
        _methods(request, ("GET",))
        return JSONResponse([{"label": f"API {v}", "url": f"/services/data/v{v}", "version": v} for v in VERSIONS])

    async def data(request: Request) -> Response:
        try:
            version = request.path_params["version"]
            if version not in VERSIONS:
                raise _not_found()
            rest = [p for p in request.path_params.get("rest", "").split("/") if p]
            client = hub.client(_bearer(request))
            return await _route(request, client, version, rest)
        except ApiError as err:
            return err.response()

    async def _route(request: Request, client: _Client, version: str, rest: list[str]) -> Response:
        org = client.org
        base = f"/services/data/v{version}"
        if not rest:
            _methods(request, ("GET",))
            names = ("sobjects", "query", "queryAll", "search", "limits", "composite")
            return JSONResponse({n: f"{base}/{n}" for n in names})
        head, tail = rest[0], rest[1:]
        if head in ("query", "queryAll"):
            _methods(request, ("GET",))
            if tail:
                return _more(client, base, head, tail)
            q = request.query_params.get("q", "")  # an empty query is the engine's to refuse, as Salesforce's parser
            size = _batch_size(request)
            result = await _call(org.query, q)
            records = result["records"]
            if len(records) <= size:
                return JSONResponse(result)
            locator = make_id("01g", next(_LOCATORS))[:15]
            with hub._lock:
                client.cursors[locator] = (records, size)
                while len(client.cursors) > MAX_CURSORS:
                    client.cursors.popitem(last=False)
            return JSONResponse(_page(records, result["totalSize"], 0, size, f"{base}/{head}/{locator}"))
        if head == "search" and not tail:
            _methods(request, ("GET",))
            q = request.query_params.get("q", "")
            return JSONResponse(await _call(org.search, q))
        if head == "limits" and not tail:
            _methods(request, ("GET",))
            used = hub.served
            return JSONResponse(
                {
                    "DailyApiRequests": {"Max": 15000000, "Remaining": max(0, 15000000 - used)},
                    "ConcurrentSessions": {"Max": hub.max_sessions, "Remaining": hub.max_sessions - hub.sessions},
                    "DataStorageMB": {"Max": 1024, "Remaining": 1024},
                }
            )
        if head == "sobjects":
            return await _sobjects(request, client, version, tail)
        if head == "composite" and tail[:1] == ["sobjects"]:
            return await _composite(request, client, tail[1:])
        if head == "crmarena" and tail == ["reset"]:  # our extension: forget the session's writes
            _methods(request, ("POST",))
            await run_in_threadpool(org.reset)
            return Response(status_code=204)
        raise _not_found()

    def _more(client: _Client, base: str, head: str, tail: list[str]) -> Response:
        locator, _, start = tail[0].partition("-")
        records, step = client.cursors.get(locator, ([], 0))
        if len(tail) != 1 or not records or not start.isdigit() or int(start) >= len(records):
            raise ApiError(400, "INVALID_QUERY_LOCATOR", f"invalid query locator: {tail[0]!r}")
        page = _page(records, len(records), int(start), step, f"{base}/{head}/{locator}")
        if page["done"]:
            with hub._lock:
                client.cursors.pop(locator, None)
        return JSONResponse(page)

    async def _sobjects(request: Request, client: _Client, version: str, tail: list[str]) -> Response:
        org = client.org
        if not tail:
            _methods(request, ("GET",))
            return JSONResponse(describe_global(version, org._live().catalog))
        name = _sobject(tail[0], org)
        if len(tail) == 1:
            _methods(request, ("GET", "POST"))
            if request.method == "POST":
                if org.schema.get_object(name) is None:  # a standard object every org has: queryable, never stored
                    raise ApiError(
                        400,
                        "INVALID_TYPE_FOR_OPERATION",
                        f"entity type cannot be inserted: {name} (this org answers it with no rows and stores none)",
                    )
                values = await _json(request)
                if not isinstance(values, dict):
                    raise ApiError(400, "JSON_PARSER_ERROR", f"a record is a JSON object, got {str(values)[:80]!r}")
                new_id = await _call(org.create, name, values)
                return JSONResponse({"id": new_id, "success": True, "errors": []}, status_code=201)
            return JSONResponse(object_info(version, name, org.schema))
        if len(tail) == 2 and tail[1] == "describe":
            _methods(request, ("GET",))
            return JSONResponse(await _call(describe_object, version, org, name))
        if len(tail) != 2:
            raise _not_found()
        record_id = tail[1]
        _methods(request, ("GET", "PATCH", "DELETE"))
        if request.method == "GET":
            fields = request.query_params.get("fields")
            wanted = [f.strip() for f in fields.split(",") if f.strip()] if fields else None
            return JSONResponse(await _call(org.get, name, record_id, wanted))
        if request.method == "DELETE":
            await _call(org.delete, name, record_id)
            return Response(status_code=204)
        values = await _json(request)
        if not isinstance(values, dict):
            raise ApiError(400, "JSON_PARSER_ERROR", f"a record is a JSON object, got {str(values)[:80]!r}")
        await _call(org.update, name, record_id, values)
        return Response(status_code=204)

    async def _composite(request: Request, client: _Client, tail: list[str]) -> Response:
        org = client.org
        _methods(request, ("GET", "POST", "PATCH", "DELETE"))
        if request.method == "GET":
            if len(tail) != 1:
                raise _not_found()
            name = _sobject(tail[0], org)
            ids = [i for i in request.query_params.get("ids", "").split(",") if i]
            fields = [f for f in request.query_params.get("fields", "").split(",") if f]
            if not ids or not fields or len(ids) > 2000:
                raise ApiError(400, "MALFORMED_QUERY", "ids (at most 2000) and fields are both required")

            def read() -> list[Any]:
                out: list[Any] = []
                for record_id in ids:
                    try:
                        out.append(org.get(name, record_id, fields))
                    except OrgError as exc:
                        if exc.code == "INVALID_FIELD":
                            raise
                        out.append(None)
                return out

            return JSONResponse(await _call(read))
        if tail:
            raise _not_found()
        if request.method == "DELETE":
            ids = [i for i in request.query_params.get("ids", "").split(",") if i]
            all_or_none = request.query_params.get("allOrNone", "false").lower() == "true"
            if not ids or len(ids) > MAX_COMPOSITE_RECORDS:
                raise ApiError(400, "INVALID_FIELD", f"ids must name 1 to {MAX_COMPOSITE_RECORDS} records")
            jobs = [("delete", None, i, None) for i in ids]
        else:
            body = await _json(request)
            records = body.get("records") if isinstance(body, dict) else None
            if not isinstance(records, list) or not records or len(records) > MAX_COMPOSITE_RECORDS:
                raise ApiError(
                    400,
                    "INVALID_FIELD",
                    f"the body must hold 'records': a list of 1 to {MAX_COMPOSITE_RECORDS} records",
                )
            all_or_none = bool(body.get("allOrNone", False))
            jobs = []
            for record in records:
                kind = record.get("attributes", {}).get("type") if isinstance(record, dict) else None
                values = {k: v for k, v in record.items() if k not in ("attributes", "Id")} if kind else None
                rid = record.get("Id") if isinstance(record, dict) else None
                jobs.append(("create" if request.method == "POST" else "update", kind, rid, values))
        return JSONResponse(await _call(_run_jobs, org, jobs, all_or_none))

    async def fallback(request: Request) -> Response:
        return _not_found().response()

    app = Starlette(
        routes=[
            Route("/services/oauth2/token", token, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            Route("/services/oauth2/revoke", revoke, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            Route("/services/data", versions, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]),
            Route("/services/data/", versions, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]),
            Route("/services/data/v{version}", data, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]),
            Route(
                "/services/data/v{version}/{rest:path}", data, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
            ),
            Route("/{rest:path}", fallback, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]),
        ],
        exception_handlers={ApiError: lambda _r, e: e.response(), Exception: _internal},  # type: ignore[dict-item]
    )
    app.state.hub = hub
    return app


def _internal(_request: Request, exc: Exception) -> Response:
    return ApiError(500, "UNKNOWN_EXCEPTION", f"An unexpected error occurred: {type(exc).__name__}").response()


def _run_jobs(org: OrgSession, jobs: list[tuple[str, Any, Any, Any]], all_or_none: bool) -> list[dict[str, Any]]:
    """Run composite/sobjects jobs, each answered ``{"id", "success", "errors"}`` (allOrNone: one fails, all undone)."""
    results: list[dict[str, Any]] = []
    failed = False

    def one(kind: str, sobject: Any, rid: Any, values: Any) -> str:
        if kind == "delete":
            obj = org.schema.object_for_id(rid) if isinstance(rid, str) else None
            if obj is None:
                raise OrgError("MALFORMED_ID", f"Invalid id: {rid!r}")
            org.delete(obj.name, rid)
            return rid
        if sobject is None or values is None:
            raise OrgError("INVALID_TYPE", "Each record needs attributes with its type: {'attributes': {'type': ...}}")
        if org.schema.get_object(str(sobject)) is None:
            raise OrgError("INVALID_TYPE", f"sObject type {sobject!r} is not supported.")
        if kind == "create":
            return org.create(sobject, values)
        if not isinstance(rid, str):
            raise OrgError("MISSING_ARGUMENT", "Id not specified in an update call")
        org.update(sobject, rid, values)
        return rid

    class _Undo(Exception):
        pass

    try:
        with org.batch(all_or_none):
            for kind, sobject, rid, values in jobs:
                if failed and all_or_none:
                    results.append(_rolled_back())
                    continue
                try:
                    done = one(kind, sobject, rid, values)
                    results.append({"id": done, "success": True, "errors": []})
                except OrgError as exc:
                    failed = True
                    error = {"statusCode": exc.code, "message": exc.message, "fields": getattr(exc, "fields", [])}
                    results.append({"success": False, "errors": [error]})
            if failed and all_or_none:
                raise _Undo
    except _Undo:
        results = [r if not r["success"] else _rolled_back() for r in results]
    return results


def _rolled_back() -> dict[str, Any]:
    return {
        "success": False,
        "errors": [
            {
                "statusCode": "ALL_OR_NONE_OPERATION_ROLLED_BACK",
                "message": (
                    "Record rolled back because not all records were valid and the request was using AllOrNone header"
                ),
                "fields": [],
            }
        ],
    }
