"""Salesforce's REST resources over one session: a router from (method, path, body) to (status, body).

The router knows nothing of HTTP connections, so that the composite resources (``/composite``,
``/composite/batch``) run their subrequests through it exactly as the requests would run alone. It runs
in a worker thread (the org is SQLite). Every refusal is an :class:`ApiError` in Salesforce's shape.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from crmarena_gym.org._base import OrgError
from crmarena_gym.org._session import OrgSession, parse_datetime_value, write_access
from crmarena_gym.org._sosl import MAX_RESULTS, escape_refused
from crmarena_gym.org.serve._describe import describe_global, describe_object, object_info
from crmarena_gym.org.serve._hub import ApiError, Client, SessionHub
from crmarena_gym.org.soql import URL_PREFIX, parse
from crmarena_gym.org.soql._ast import ChildSubquery, FieldPath, FuncCall, SelectItem, TypeOf
from crmarena_gym.schema import FieldType, OrgSchema, SObject, is_valid_id

#: The first API version Salesforce still serves (21.0 to 30.0 were retired in Summer '25).
FIRST_VERSION = 31
#: The newest API version (Winter '27).
LATEST_VERSION = 68
#: API versions the server answers (``/services/data/vXX.X/``): every one Salesforce serves.
VERSIONS = tuple(f"{v}.0" for v in range(FIRST_VERSION, LATEST_VERSION + 1))
#: Most bytes of a request body; larger ones are refused with 413.
MAX_BODY_BYTES = 8 * 2**20
#: Most records of one ``composite/sobjects`` or ``composite/tree`` request (Salesforce's limit).
MAX_COMPOSITE_RECORDS = 200
#: Most subrequests of one ``composite`` or ``composite/batch`` request (Salesforce's limit).
MAX_SUBREQUESTS = 25
DEFAULT_BATCH = 2000
#: Requests a day the limits resource reports (a Developer Edition's allowance is 15,000; an Enterprise
#: org's is larger; this server counts, it does not stop).
DAILY_REQUESTS = 15_000_000
_STATUS = {
    "NOT_FOUND": 404,
    "ENTITY_IS_DELETED": 404,
    "INVALID_SESSION_ID": 401,
    "REQUEST_LIMIT_EXCEEDED": 403,
    "UNKNOWN_EXCEPTION": 500,
    "SERVER_UNAVAILABLE": 503,
    "MULTIPLE_RECORDS_FOUND": 300,
}
# Sub-resources of an object Salesforce has and this org does not serve: 404, not a malformed id.
_OBJECT_RESOURCES = frozenset(
    {
        "listviews",
        "quickactions",
        "layouts",
        "compactlayouts",
        "approvallayouts",
        "eventschema",
        "suggestedarticles",
        "userpassword",
        "push",
        "richtextimagefields",
        "platformaction",
        "relevantitems",
        "describe",
    }
)
_SEASONS = ("Winter", "Spring", "Summer")
_APEX_TYPES = {
    FieldType.ID: "Id",
    FieldType.REFERENCE: "Id",
    FieldType.DATE: "Date",
    FieldType.DATETIME: "Datetime",
    FieldType.DOUBLE: "Double",
    FieldType.PERCENT: "Double",
    FieldType.CURRENCY: "Decimal",
    FieldType.INTEGER: "Integer",
    FieldType.BOOLEAN: "Boolean",
}
_REFERENCE = re.compile(r"@\{([^{}.\[\]]+)((?:\.[A-Za-z_][\w]*|\[\d+\])*)\}")


def version_label(version: str) -> str:
    """The release that introduced API ``version`` (``"60.0"`` -> ``"Spring '24"``).

    Example:
        >>> version_label("31.0"), version_label("62.0"), version_label("68.0")
        ("Summer '14", "Winter '25", "Winter '27")
    """
    n = int(float(version)) - 32  # 32.0 was Winter '15; three releases a year
    season, year = _SEASONS[n % 3], 15 + n // 3
    return f"{season} '{year:02d}"


def check_version(text: str) -> str:
    """``text`` (``60.0``) if the server answers that version; else 410 for a retired one, 404 otherwise."""
    m = re.fullmatch(r"(\d{1,3})\.0", text)
    if m is None or int(m.group(1)) > LATEST_VERSION or int(m.group(1)) < 7:
        raise ApiError(404, "NOT_FOUND", f"The requested resource does not exist: no API version v{text[:20]}")
    if int(m.group(1)) < FIRST_VERSION:
        raise ApiError(
            410,
            "UNSUPPORTED_API_VERSION",
            f"API version {m.group(1)}.0 is retired (versions 21.0 to 30.0 since Summer '25); use "
            f"{FIRST_VERSION}.0 to {LATEST_VERSION}.0",
        )
    return text


def from_org(exc: OrgError) -> ApiError:
    """An org's refusal as the REST API answers it."""
    return ApiError(_STATUS.get(exc.code, 400), exc.code, exc.message, getattr(exc, "fields", None))


def error_body(err: ApiError) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"message": err.message, "errorCode": err.code}
    if err.fields is not None:
        body["fields"] = err.fields
    return [body]


def parse_bool(value: object, name: str) -> bool:
    """A JSON boolean, or the strings true/false (any case) that Salesforce's parser also takes.

    Example:
        >>> parse_bool("false", "allOrNone"), parse_bool(True, "allOrNone")
        (False, True)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    shown = repr(value) if not isinstance(value, str) or len(value) < 60 else repr(value[:60]) + "..."
    raise ApiError(400, "JSON_PARSER_ERROR", f"{name} takes true or false, got {shown}")


def _shown(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass
class Call:
    """One request to the REST API, as the router sees it."""

    method: str
    parts: list[str]  # the path after /services/data/vXX.X/, split at "/"
    version: str
    query: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    parsed: Any = None  # the body already parsed (a composite subrequest's)
    instance: str = ""  # the instance URL the client reached (https://127.0.0.1:8443)
    params: list[tuple[str, str]] = field(default_factory=list)  # every query parameter, repeated ones too

    def json(self) -> Any:
        if self.parsed is not None:
            return self.parsed
        if not self.body.strip():
            raise ApiError(400, "JSON_PARSER_ERROR", "The request body is empty: a JSON object was expected")
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError) as exc:
            raise ApiError(400, "JSON_PARSER_ERROR", f"The request body is not valid JSON: {exc}") from None


@dataclass
class Reply:
    """A response: ``body`` JSON-able, pre-encoded bytes, or None (no content)."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json;charset=UTF-8"


def encode_json(value: Any) -> bytes:
    """JSON as Salesforce sends it (UTF-8); a lone surrogate (from a client's own ``\\ud800``) is escaped."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")
    except ValueError:  # NaN or infinity: never in the org, but never a 500 either
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=str).encode("ascii")


def _methods(call: Call, allowed: tuple[str, ...]) -> None:
    if call.method not in allowed and not (call.method == "HEAD" and "GET" in allowed):
        shown = ",".join(("HEAD", *allowed) if "GET" in allowed else allowed)
        raise ApiError(405, "METHOD_NOT_ALLOWED", f"HTTP Method '{call.method}' not allowed. Allowed are {shown}")


def _not_found(what: str = "") -> ApiError:
    return ApiError(404, "NOT_FOUND", "The requested resource does not exist" + (f": {what}" if what else ""))


#: Resources Salesforce has under /services/data/vXX.X/ that this org does not, with why.
_UNSERVED = {
    "tooling": "the Tooling API is not served by this org (it holds no metadata: no Apex, no custom fields to edit)",
    "analytics": "the Reports and Dashboards API is not served by this org (it has no reports)",
    "chatter": "Connect REST (Chatter) is not served by this org",
    "connect": "Connect REST is not served by this org",
    "ui-api": "the User Interface API is not served by this org",
    "actions": "invocable actions are not served by this org (it runs no flows or Apex)",
    "process": "approvals and process rules are not served by this org",
    "recent": "recently viewed items are not served by this org (it records no views)",
    "tabs": "tabs are not served by this org (it has no apps)",
    "theme": "themes are not served by this org (it has no apps)",
    "appMenu": "the app menu is not served by this org (it has no apps)",
    "quickActions": "quick actions are not served by this org",
    "licensing": "licensing is not served by this org",
    "consent": "consent is not served by this org",
    "jobs": "of the jobs resources this org serves jobs/ingest and jobs/query (the Bulk API 2.0)",
}


def _unserved(parts: list[str]) -> str:
    """What an unserved path under /services/data/vXX.X/ is, said so a client's user knows what is missing."""
    shown = "/".join(parts)
    shown = shown if len(shown) <= 80 else shown[:80] + "..."
    why = _UNSERVED.get(parts[0]) if parts else None
    if why is None:
        served = "sobjects, query, queryAll, search, parameterizedSearch, limits, composite, jobs"
        return f"{shown} is not served by this org (it serves {served})"
    return f"{shown}: {why}"


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)*")
_SCOPES = ("ALL", "NAME", "EMAIL", "PHONE")
_PER_OBJECT = ("fields", "limit", "where", "orderBy")
# Parameters of parameterizedSearch that filter by features this org has none of (data categories,
# divisions, communities, price books in search) or shape the answer in ways it does not (snippets,
# highlights, label metadata): refused by name, never silently ignored.
_UNSERVED_SEARCH = (
    "dataCategory",
    "dataCategories",
    "division",
    "netWorkIds",
    "networkIds",
    "pricebookId",
    "snippet",
    "highlights",
    "metadata",
)


def _search_bound(value: object, name: str, low: int, high: int) -> int:
    text = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""
    if not (text.isascii() and text.isdigit()) or len(text) > 6 or not low <= int(text) <= high:
        raise ApiError(400, "INVALID_SEARCH", f"{name} takes a whole number from {low} to {high}, got {_shown(value)}")
    return int(text)


def _search_names(value: object, what: str) -> list[str]:
    """Object or field names from a list or a comma-separated text, each checked to be a name."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ApiError(400, "INVALID_SEARCH", f"{what} takes names (a list or comma-separated), got {_shown(value)}")
    names = [i.strip() for i in items if i.strip()]
    for name in names:
        if not _NAME.fullmatch(name):
            raise ApiError(400, "INVALID_SEARCH", f"{what} takes names, got {_shown(name)}")
    return names


def _suggested(words: list[str], name: object) -> bool:
    """Whether ``name``'s words hold ``words`` in a row, the last of them as the start of a word."""
    have = [w.lower() for w in re.findall(r"[^\W_]+", name)] if isinstance(name, str) else []
    n = len(words)
    for i in range(len(have) - n + 1):
        if have[i : i + n - 1] == words[:-1] and have[i + n - 1].startswith(words[-1]):
            return True
    return False


def parameterized_sosl(call: Call) -> str:
    """``parameterizedSearch`` (GET parameters or a POST body) as the SOSL statement it stands for.

    ``q`` is a search term (``FIND {q}``): words, phrases, wildcards and operators as in SOSL, with a
    stray reserved character searched for rather than refused. ``in`` is the field scope; ``sobject``
    (repeatable; POST ``sobjects``) names the objects with their ``fields``, ``limit``, and, in a POST,
    ``where`` and ``orderBy`` (SOQL text); ``fields`` and ``defaultLimit`` apply to every object that
    sets none; ``offset`` needs a single object; ``overallLimit`` bounds the whole answer (2,000). The
    visibility and spelling switches (``updatable``, ``viewable``, ``spellCorrection``) are taken: every
    record of the org is viewable and updatable by its one user, and this org corrects no spelling.
    """
    objects: list[dict[str, Any]] = []
    if call.method == "POST":
        body = call.json()
        if not isinstance(body, dict):
            raise ApiError(400, "JSON_PARSER_ERROR", f"the search is a JSON object, got {_shown(body)}")
        given: dict[str, Any] = dict(body)
        sobjects = given.pop("sobjects", None)
        if sobjects is not None:
            if not isinstance(sobjects, list) or not all(isinstance(o, dict) for o in sobjects):
                raise ApiError(400, "INVALID_SEARCH", f"sobjects is a list of objects, got {_shown(sobjects)}")
            for o in sobjects:
                unknown = set(o) - {"name", *_PER_OBJECT}
                if unknown:
                    raise ApiError(
                        400,
                        "INVALID_SEARCH",
                        f"an entry of sobjects takes name, fields, limit, where and "
                        f"orderBy, not {', '.join(sorted(unknown))}",
                    )
                objects.append(dict(o))
    else:
        given = {}
        for key, value in call.params:
            if key == "sobject":
                objects.append({"name": value})
            elif "." in key and key.rsplit(".", 1)[1] in _PER_OBJECT:
                continue  # read below, once every sobject is known
            else:
                given.setdefault(key, value)
        by_name = {str(o["name"]).lower(): o for o in objects}
        for key, value in call.params:
            prefix, _, what = key.rpartition(".")
            if prefix and what in _PER_OBJECT:
                if prefix.lower() not in by_name:
                    raise ApiError(400, "INVALID_SEARCH", f"{key} names an object not given as sobject={prefix}")
                by_name[prefix.lower()].setdefault(what, value)
    for name in _UNSERVED_SEARCH:
        if name in given:
            raise ApiError(
                400,
                "INVALID_SEARCH",
                f"the {name} parameter is not served by this org (it has no data categories, "
                "divisions, communities or search snippets)",
            )
    for name in ("updatable", "viewable", "spellCorrection"):
        if name in given:
            parse_bool(given.pop(name), name)
    q = given.pop("q", None)
    if not isinstance(q, str) or not q.strip():
        raise ApiError(400, "MISSING_ARGUMENT", "the q parameter (the search string) is required")
    scope = given.pop("in", "ALL")
    if not isinstance(scope, str) or scope.strip().upper() not in _SCOPES:
        raise ApiError(400, "INVALID_SEARCH", f"in takes ALL, NAME, EMAIL or PHONE, got {_shown(scope)}")
    overall = _search_bound(given.pop("overallLimit", MAX_RESULTS), "overallLimit", 1, MAX_RESULTS)
    default_limit = given.pop("defaultLimit", None)
    fields = _search_names(given.pop("fields"), "fields") if "fields" in given else None
    offset = given.pop("offset", None)
    if given:
        raise ApiError(400, "INVALID_SEARCH", f"parameterizedSearch takes no parameter {sorted(given)[0]!r}")
    if (fields is not None or default_limit is not None or offset is not None) and not objects:
        raise ApiError(400, "INVALID_SEARCH", "fields, defaultLimit and offset need at least one sobject")
    if offset is not None and len(objects) != 1:
        raise ApiError(400, "INVALID_SEARCH", "offset is taken only with a single sobject")
    returning: list[str] = []
    for o in objects:
        raw_name = o.get("name")
        named = _search_names([raw_name], "sobject") if isinstance(raw_name, str) else []
        if len(named) != 1:
            raise ApiError(400, "INVALID_SEARCH", f"an sobject is named by its API name, got {_shown(raw_name)}")
        name = named[0]
        wanted = _search_names(o["fields"], f"{name}.fields") if "fields" in o else fields
        clauses = [", ".join(wanted or ["Id"])]
        where, order = o.get("where"), o.get("orderBy")
        if where is not None:
            if not isinstance(where, str) or not where.strip():
                raise ApiError(400, "INVALID_SEARCH", f"{name}'s where is SOQL text, got {_shown(where)}")
            clauses.append(f"WHERE {where}")
        if order is not None:
            if not isinstance(order, str) or not order.strip():
                raise ApiError(400, "INVALID_SEARCH", f"{name}'s orderBy is SOQL text, got {_shown(order)}")
            clauses.append(f"ORDER BY {order}")
        limit = o.get("limit", default_limit)
        if limit is not None:
            clauses.append(f"LIMIT {_search_bound(limit, f'{name}.limit', 1, MAX_RESULTS)}")
        if offset is not None:
            clauses.append(f"OFFSET {_search_bound(offset, 'offset', 0, 2000)}")
        returning.append(f"{name}({' '.join(clauses)})")
    term = escape_refused(q.strip())  # braces too: FIND {...} cannot be closed early
    sosl = f"FIND {{{term}}} IN {scope.strip().upper()} FIELDS"
    if returning:
        sosl += " RETURNING " + ", ".join(returning)
    return sosl + f" LIMIT {overall}"


def _versioned(value: Any, prefix: str) -> Any:
    """Records with their ``attributes.url`` in the requested API version (in place; returns ``value``)."""
    if isinstance(value, dict):
        attributes = value.get("attributes")
        if isinstance(attributes, dict):
            url = attributes.get("url")
            if isinstance(url, str) and url.startswith(URL_PREFIX):
                attributes["url"] = prefix + url[len(URL_PREFIX) :]
        for item in value.values():
            if isinstance(item, dict | list):
                _versioned(item, prefix)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                _versioned(item, prefix)
    return value


def _batch_size(call: Call) -> int:
    header = call.headers.get("sforce-query-options")
    if not header:
        return DEFAULT_BATCH
    m = re.search(r"batchSize\s*=\s*([^,;\s]*)", header, re.IGNORECASE)
    if m is None or not m.group(1).isdigit() or not m.group(1).isascii():
        raise ApiError(
            400, "INVALID_HEADER_TYPE", f"Sforce-Query-Options must be batchSize=N (200 to 2000), got {_shown(header)}"
        )
    digits = m.group(1).lstrip("0") or "0"
    return 2000 if len(digits) > 4 else min(max(int(digits), 200), 2000)  # Salesforce's bounds


class Rest:
    """The REST resources of the served org, over :class:`SessionHub`'s sessions."""

    def __init__(self, hub: SessionHub, extra: Callable[[Client, Call], Reply | None] | None = None) -> None:
        self.hub = hub
        self.extra = extra  # more resources (Bulk API 2.0), tried before NOT_FOUND

    # -- dispatch ----------------------------------------------------------------------------------

    def dispatch(self, client: Client, call: Call) -> Reply:
        """Answer one call; refusals raise :class:`ApiError`."""
        org = client.org
        if org is None:
            raise ApiError(401, "INVALID_SESSION_ID", "Session expired or invalid: the session has ended")
        try:
            return self._route(client, org, call)
        except OrgError as exc:
            raise from_org(exc) from None
        except ValueError as exc:
            if "closed" in str(exc):  # the session ended under a request (revoked, evicted)
                raise ApiError(401, "INVALID_SESSION_ID", "Session expired or invalid: the session has ended") from None
            raise

    def _route(self, client: Client, org: OrgSession, call: Call) -> Reply:
        parts, base = call.parts, f"/services/data/v{call.version}"
        if not parts:
            _methods(call, ("GET",))
            names = ("sobjects", "query", "queryAll", "search", "parameterizedSearch", "limits", "composite", "jobs")
            resources = {n: f"{base}/{n}" for n in names}
            if call.instance:  # the identity URL, as Salesforce lists it (jsforce's identity() reads it here)
                resources["identity"] = f"{call.instance}/id/{self.hub.org_id}/{self.hub.user_id}"
            return Reply(200, resources)
        head, tail = parts[0], parts[1:]
        if head in ("query", "queryAll"):
            _methods(call, ("GET",))
            if tail:
                return self._more(client, call, head, tail)
            return self._query(client, org, call, head)
        if head == "search" and not tail:
            _methods(call, ("GET",))
            return Reply(200, _versioned(org.search(call.query.get("q", "")), f"{base}/sobjects/"))
        if head == "search" and tail == ["suggestions"]:
            _methods(call, ("GET",))
            return Reply(200, _versioned(self._suggestions(org, call), f"{base}/sobjects/"))
        if head == "parameterizedSearch" and not tail:
            _methods(call, ("GET", "POST"))
            return Reply(200, _versioned(org.search(parameterized_sosl(call)), f"{base}/sobjects/"))
        if head == "limits" and not tail:
            _methods(call, ("GET",))
            return Reply(200, self._limits(org))
        if head == "sobjects":
            return self._sobjects(org, call, tail)
        if head == "composite":
            return self._composite(client, org, call, tail)
        if head == "crmarena" and tail == ["reset"]:  # our extension: forget the session's writes
            _methods(call, ("POST",))
            org.reset()
            with self.hub._lock:
                self.hub._drop_cursors(client)
            return Reply(204)
        if self.extra is not None:
            reply = self.extra(client, call)
            if reply is not None:
                return reply
        raise _not_found(_unserved(parts))

    # -- query -------------------------------------------------------------------------------------

    def _query(self, client: Client, org: OrgSession, call: Call, head: str) -> Reply:
        q = call.query.get("q", "")  # an empty query is the engine's to refuse, as Salesforce's parser
        if call.query.get("columns", "").lower() == "true":
            return Reply(200, self.columns(org, q))
        if "explain" in call.query:
            raise _not_found("the explain parameter (query plans) is not served by this org")
        size = _batch_size(call)
        result = org.query(q, include_deleted=head == "queryAll")
        prefix = f"/services/data/v{call.version}/sobjects/"
        records = _versioned(result["records"], prefix)
        if len(records) <= size:
            return Reply(200, result)
        rest = [encode_json(r) for r in records[size:]]
        locator = self.hub.open_cursor(client, rest, result["totalSize"], size)
        url = f"/services/data/v{call.version}/{head}/{locator}-{size}"
        return Reply(
            200, {"totalSize": result["totalSize"], "done": False, "nextRecordsUrl": url, "records": records[:size]}
        )

    def _more(self, client: Client, call: Call, head: str, tail: list[str]) -> Reply:
        locator, _, start = tail[0].partition("-")
        cursor = self.hub.cursor(client, locator) if len(tail) == 1 else None
        bad = ApiError(400, "INVALID_QUERY_LOCATOR", f"invalid query locator: {_shown(tail[0])}")
        if cursor is None or not start.isdigit() or not start.isascii() or len(start) > 9:
            raise bad
        offset = int(start) - cursor.batch  # the cursor keeps the records after the first batch
        if offset < 0 or offset >= len(cursor.records):
            raise bad
        chunk = cursor.records[offset : offset + cursor.batch]
        after = offset + len(chunk)
        done = after >= len(cursor.records)
        page = b'{"totalSize":%d,"done":%s,' % (cursor.total, b"true" if done else b"false")
        if not done:
            page += (
                b'"nextRecordsUrl":'
                + encode_json(f"/services/data/v{call.version}/{head}/{locator}-{after + cursor.batch}")
                + b","
            )
        page += b'"records":[' + b",".join(chunk) + b"]}"
        if done:
            self.hub.close_cursor(client, locator)
        return Reply(200, page)

    def columns(self, org: OrgSession, soql: str) -> dict[str, Any]:
        """``query?columns=true``: the query's columns, as Salesforce describes them (what ``sf data query``
        reads to lay out its table), without running it."""
        org.explain(soql)  # the engine's refusal of a bad query, exactly as running it would refuse
        q = parse(soql)
        schema = org.schema
        obj = schema.get_object(q.object_name, standard=True)
        assert obj is not None  # explain compiled it
        group = bool(q.group_by) or any(
            isinstance(i, SelectItem) and isinstance(i.expr, FuncCall) and i.expr.name != "FIELDS" for i in q.items
        )
        columns = self._columns_of(schema, obj, q.items, q.object_alias, [0])
        return {
            "columnMetadata": columns,
            "entityName": obj.name,
            "groupBy": group,
            "idSelected": any(c["columnName"] == "Id" and not c["joinColumns"] for c in columns),
            "keyPrefix": obj.key_prefix,
        }

    def _columns_of(
        self, schema: OrgSchema, obj: SObject, items: tuple[Any, ...], alias: str | None, counter: list[int]
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for item in items:
            if isinstance(item, ChildSubquery):
                rel = schema.get_child_relationship(obj, item.query.object_name)
                name = item.query.object_name
                child_columns: list[dict[str, Any]] = []
                if rel is not None:
                    child, f = rel
                    name = f.child_relationship or name
                    child_columns = self._columns_of(schema, child, item.query.items, item.query.object_alias, [0])
                out.append(_column(name, name, aggregate=True, join=child_columns))
            elif isinstance(item, TypeOf):
                rel_field = obj.get_relationship(item.relationship)
                name = rel_field.relationship_name if rel_field else item.relationship
                names: list[str] = []
                for _type, _pos, fields in item.whens:
                    names += [fp.text for fp in fields if fp.text not in names]
                names += [fp.text for fp in item.otherwise if fp.text not in names]
                out.append(
                    _column(name or item.relationship, name or item.relationship, join=[_column(n, n) for n in names])
                )
            elif isinstance(item, SelectItem) and isinstance(item.expr, FuncCall):
                if item.expr.name == "FIELDS":
                    kind = item.expr.arg.parts[0].upper() if isinstance(item.expr.arg, FieldPath) else "ALL"
                    catalog = org_catalog(self.hub)
                    for f in obj.fields:
                        if catalog.available(obj, f) and (kind == "ALL" or (kind == "CUSTOM") == f.custom):
                            out.append(_field_column(schema, obj, f.name))
                    continue
                if item.expr.name == "COUNT" and item.expr.arg is None:
                    continue  # COUNT() returns no column, only totalSize
                name = item.alias or f"expr{counter[0]}"
                counter[0] += item.alias is None
                out.append(_column(name, item.expr.text, aggregate=True))
            elif isinstance(item, SelectItem) and isinstance(item.expr, FieldPath):
                parts = list(item.expr.parts)
                if len(parts) > 1 and parts[0].lower() in {(alias or "").lower(), obj.name.lower()}:
                    parts = parts[1:]
                column = _path_column(schema, obj, parts)
                if item.alias:  # an aggregate query's alias names the column; the field is its display name
                    column = {**column, "columnName": item.alias, "displayName": ".".join(parts)}
                out.append(column)
        return out

    # -- search suggestions ------------------------------------------------------------------------

    def _suggestions(self, org: OrgSession, call: Call) -> dict[str, Any]:
        """``search/suggestions``: records whose name holds the search text (its last word as a prefix).

        As the REST API Developer Guide describes it: ``q`` (quotes and wildcards dropped; under three
        characters suggests nothing; over 255 is refused), ``sobject`` (one or more, comma-separated),
        ``limit`` (5 unless given; ``hasMoreResults`` says when more matched) and ``fields`` (more fields
        of each record). A match is the name's words holding the query's words in a row, the last one as
        the start of a word; records come in name order (Salesforce's own relevance order is not known).
        """
        params = dict(call.query)
        for name in ("dynamicFields", "groupId", "networkId", "topicId", "type", "userId", "useSearchScope", "where"):
            if name in params:
                raise ApiError(
                    400, "INVALID_SEARCH", f"the {name} parameter of search/suggestions is not served by this org"
                )
        if "ignoreUnsupportedSObjects" in params:
            parse_bool(params["ignoreUnsupportedSObjects"], "ignoreUnsupportedSObjects")
        q, wanted_objects = params.get("q"), params.get("sobject")
        if not q or not wanted_objects:
            raise ApiError(400, "MISSING_ARGUMENT", "search/suggestions needs both q (the search text) and sobject")
        if len(q) > 255:
            raise ApiError(400, "INVALID_SEARCH", f"the search text is {len(q)} characters; at most 255")
        limit = _search_bound(params.get("limit", "5"), "limit", 1, MAX_RESULTS)
        extra = _search_names(params["fields"], "fields") if "fields" in params else []
        words = [w.lower() for w in re.findall(r"[^\W_]+", q.replace('"', " ").replace("*", " ").replace("?", " "))]
        found: list[dict[str, Any]] = []
        for object_name in _search_names(wanted_objects, "sobject"):
            obj = org.schema.get_object(self._sobject(object_name, org), standard=True)
            assert obj is not None
            names = [f for f in obj.fields if f.name_field]
            key = next((f.name for f in names if f.name in ("Name", "Title")), names[0].name if names else "Id")
            if sum(len(w) for w in words) < 3 or key == "Id":
                continue
            columns = ", ".join(dict.fromkeys(["Id", key, *extra]))
            soql = f"SELECT {columns} FROM {obj.name} WHERE {key} LIKE '%{words[0]}%' ORDER BY {key}, Id"
            for record in org.query(soql)["records"]:
                if _suggested(words, record.get(key)):
                    found.append(record)
        return {"autoSuggestResults": found[:limit], "hasMoreResults": len(found) > limit}

    # -- limits and describe -----------------------------------------------------------------------

    def _limits(self, org: OrgSession) -> dict[str, Any]:
        hub = self.hub
        mb = org.max_storage // 2**20
        used = org.storage_used // 2**20
        return {
            "DailyApiRequests": {"Max": DAILY_REQUESTS, "Remaining": max(0, DAILY_REQUESTS - hub.served)},
            "ConcurrentSessions": {"Max": hub.max_sessions, "Remaining": max(0, hub.max_sessions - hub.sessions)},
            "DataStorageMB": {"Max": mb, "Remaining": max(0, mb - used)},
            "DailyBulkV2QueryJobs": {"Max": 10000, "Remaining": 10000},
            "DailyBulkApiBatches": {"Max": 15000, "Remaining": 15000},
        }

    # -- sobjects ----------------------------------------------------------------------------------

    def _sobject(self, name: str, org: OrgSession) -> str:
        obj = org.schema.get_object(name, standard=True)
        if obj is None or not org._live().catalog.has(obj):
            raise _not_found(f"no sObject type {_shown(name)}")
        return obj.name

    def _writable(self, name: str, action: str, org: OrgSession) -> None:
        if org.schema.get_object(name) is None:  # a standard object every org has: listed, queryable, never stored here
            raise ApiError(
                400,
                "INVALID_TYPE_FOR_OPERATION",
                f"entity type cannot be {action}: {name} (this org answers it with no rows and stores none)",
            )

    def _sobjects(self, org: OrgSession, call: Call, tail: list[str]) -> Reply:
        version = call.version
        if not tail:
            _methods(call, ("GET",))
            return Reply(200, describe_global(version, org._live().catalog))
        name = self._sobject(tail[0], org)
        if len(tail) == 1:
            _methods(call, ("GET", "POST"))
            if call.method == "POST":
                self._writable(name, "inserted", org)
                values = call.json()
                if not isinstance(values, dict):
                    raise ApiError(400, "JSON_PARSER_ERROR", f"a record is a JSON object, got {_shown(values)}")
                new_id = org.create(name, values)
                return Reply(
                    201,
                    {"id": new_id, "success": True, "errors": []},
                    {"Location": f"/services/data/v{version}/sobjects/{name}/{new_id}"},
                )
            return Reply(200, object_info(version, name, org.schema))
        second = tail[1]
        if len(tail) == 2 and second == "describe":
            _methods(call, ("GET",))
            return Reply(200, describe_object(version, org, name))
        if len(tail) == 2 and second in ("updated", "deleted"):
            _methods(call, ("GET",))
            return Reply(200, self._changes(org, name, call, second == "deleted"))
        if len(tail) == 3 and not is_valid_id(second) and second.lower() not in _OBJECT_RESOURCES:
            return self._by_external_id(org, call, name, second, tail[2])
        if len(tail) != 2 or second.lower() in _OBJECT_RESOURCES:
            raise _not_found(f"sobjects/{name}/{'/'.join(tail[1:])[:80]} is not served by this org")
        record_id = second
        _methods(call, ("GET", "PATCH", "DELETE"))
        if call.method in ("GET", "HEAD"):
            fields = call.query.get("fields")
            wanted = [f.strip() for f in fields.split(",") if f.strip()] if fields else None
            return Reply(200, _versioned(org.get(name, record_id, wanted), f"/services/data/v{version}/sobjects/"))
        self._writable(name, "updated" if call.method == "PATCH" else "deleted", org)
        if call.method == "DELETE":
            org.delete(name, record_id)
            return Reply(204)
        values = call.json()
        if not isinstance(values, dict):
            raise ApiError(400, "JSON_PARSER_ERROR", f"a record is a JSON object, got {_shown(values)}")
        org.update(name, record_id, values)
        return Reply(204)

    def _by_external_id(self, org: OrgSession, call: Call, name: str, field_name: str, value: str) -> Reply:
        """``sobjects/X/Field/value``: read, upsert (PATCH) or delete a record by an External ID field."""
        _methods(call, ("GET", "PATCH", "DELETE", "POST"))
        obj = org.schema.get_object(name, standard=True)
        assert obj is not None
        key = obj.get_field(field_name)
        if key is None or not (key.external_id or key.type is FieldType.ID):
            raise ApiError(
                404,
                "NOT_FOUND",
                f"Provided external ID field does not exist or is not accessible: {_shown(field_name)}",
            )
        if call.method in ("PATCH", "POST"):
            self._writable(name, "upserted", org)
            values = call.json()
            if not isinstance(values, dict):
                raise ApiError(400, "JSON_PARSER_ERROR", f"a record is a JSON object, got {_shown(values)}")
            try:
                record_id, created = org.upsert(name, key.name, value, values)
            except OrgError as exc:
                if exc.code == "MULTIPLE_RECORDS_FOUND":
                    ids = getattr(exc, "ids", [])
                    return Reply(300, [f"/services/data/v{call.version}/sobjects/{name}/{i}" for i in ids])
                raise
            body = {"id": record_id, "success": True, "errors": [], "created": created}
            if created:
                return Reply(201, body, {"Location": f"/services/data/v{call.version}/sobjects/{name}/{record_id}"})
            return Reply(200, body) if float(call.version) >= 46 else Reply(204)
        matches = self._matching(org, obj, key.name, value)
        if not matches:
            raise _not_found(f"no {name} with {key.name} {_shown(value)}")
        if len(matches) > 1:
            return Reply(300, [f"/services/data/v{call.version}/sobjects/{name}/{i}" for i in matches])
        if call.method == "DELETE":
            self._writable(name, "deleted", org)
            org.delete(name, matches[0])
            return Reply(204)
        fields = call.query.get("fields")
        wanted = [f.strip() for f in fields.split(",") if f.strip()] if fields else None
        return Reply(200, _versioned(org.get(name, matches[0], wanted), f"/services/data/v{call.version}/sobjects/"))

    @staticmethod
    def _matching(org: OrgSession, obj: SObject, field_name: str, value: str) -> list[str]:
        if field_name == "Id":
            return [value] if is_valid_id(value) else []
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        found = org.query(f"SELECT Id FROM {obj.name} WHERE {field_name} = '{escaped}' LIMIT 10")["records"]
        return [r["Id"] for r in found]

    def _changes(self, org: OrgSession, name: str, call: Call, deleted: bool) -> dict[str, Any]:
        """``sobjects/X/updated`` and ``sobjects/X/deleted`` over a window of ``start`` to ``end``."""
        bounds: list[dt.datetime] = []
        for key in ("start", "end"):
            text = call.query.get(key)
            if text is None:
                raise ApiError(400, "MISSING_ARGUMENT", f"the {key} parameter is required (a dateTime, UTC)")
            value = parse_datetime_value(text.replace(" ", "+"))
            if value is None:
                raise ApiError(400, "INVALID_REPLICATION_DATE", f"{key} is not a dateTime: {_shown(text)}")
            bounds.append(value)
        start, end = bounds
        if end <= start:  # the SOAP API Developer Guide's getDeleted()/getUpdated() rules: start precedes end
            raise ApiError(400, "INVALID_REPLICATION_DATE", "start must be before end")
        found = org.changes(name, start, end, deleted=deleted)
        covered = _format(min(end, dt.datetime.combine(org._effective_today(), dt.time(23, 59), dt.UTC)))
        if deleted:
            earliest = _format(dt.datetime.combine(org._effective_today(), dt.time(0), dt.UTC) - dt.timedelta(days=15))
            return {
                "deletedRecords": [{"id": r["id"], "deletedDate": r["date"]} for r in found],
                "earliestDateAvailable": earliest,
                "latestDateCovered": covered,
            }
        return {"ids": [r["id"] for r in found], "latestDateCovered": covered}

    # -- composite ---------------------------------------------------------------------------------

    def _composite(self, client: Client, org: OrgSession, call: Call, tail: list[str]) -> Reply:
        if not tail:
            _methods(call, ("POST",))
            return self._composite_graph(client, org, call)
        if tail == ["batch"]:
            _methods(call, ("POST",))
            return self._batch(client, call)
        if tail[0] == "tree" and len(tail) == 2:
            _methods(call, ("POST",))
            return self._tree(org, call, self._sobject(tail[1], org))
        if tail[0] == "sobjects":
            return self._collections(org, call, tail[1:])
        raise _not_found()

    def _collections(self, org: OrgSession, call: Call, tail: list[str]) -> Reply:
        _methods(call, ("GET", "POST", "PATCH", "DELETE"))
        if (tail and call.method in ("GET", "HEAD")) or (len(tail) == 1 and call.method == "POST"):
            if len(tail) != 1:
                raise _not_found()
            name = self._sobject(tail[0], org)
            if call.method == "POST":  # retrieve with the ids in the body (for long lists)
                body = call.json()
                ids = body.get("ids") if isinstance(body, dict) else None
                fields = body.get("fields") if isinstance(body, dict) else None
            else:
                ids = [i for i in call.query.get("ids", "").split(",") if i]
                fields = [f for f in call.query.get("fields", "").split(",") if f]
            if (
                not isinstance(ids, list)
                or not isinstance(fields, list)
                or not ids
                or not fields
                or len(ids) > 2000
                or not all(isinstance(x, str) for x in (*ids, *fields))
            ):
                raise ApiError(400, "MALFORMED_QUERY", "ids (1 to 2000) and fields are both required, as lists of text")
            out: list[Any] = []
            for record_id in ids:
                try:
                    out.append(
                        _versioned(org.get(name, record_id, fields), f"/services/data/v{call.version}/sobjects/")
                    )
                except OrgError as exc:
                    if exc.code == "INVALID_FIELD":
                        raise
                    out.append(None)
            return Reply(200, out)
        if len(tail) == 2 and call.method == "PATCH":  # upsert a collection by an External ID field
            return self._upsert_collection(org, call, self._sobject(tail[0], org), tail[1])
        if tail:
            raise _not_found()
        if call.method == "DELETE":
            ids = [i for i in call.query.get("ids", "").split(",") if i]
            all_or_none = parse_bool(call.query.get("allOrNone", "false"), "allOrNone")
            if not ids or len(ids) > MAX_COMPOSITE_RECORDS:
                raise ApiError(400, "INVALID_FIELD", f"ids must name 1 to {MAX_COMPOSITE_RECORDS} records")
            jobs: list[tuple[str, Any, Any, Any]] = [("delete", None, i, None) for i in ids]
            return Reply(200, run_jobs(org, jobs, all_or_none))
        body = call.json()
        records, all_or_none = _records_of(body)
        jobs = []
        for record in records:
            # A create keeps an Id it was given, to be refused ("cannot specify Id in an insert call").
            kind, values, record_id = _record_parts(record, keep_id=call.method == "POST")
            jobs.append(("create" if call.method == "POST" else "update", kind, record_id, values))
        return Reply(200, run_jobs(org, jobs, all_or_none))

    def _upsert_collection(self, org: OrgSession, call: Call, name: str, field_name: str) -> Reply:
        obj = org.schema.get_object(name)
        key = obj.get_field(field_name) if obj is not None else None
        if key is None or not (key.external_id or key.type is FieldType.ID):
            raise ApiError(
                404,
                "NOT_FOUND",
                f"Provided external ID field does not exist or is not accessible: {_shown(field_name)}",
            )
        records, all_or_none = _records_of(call.json())
        jobs = []
        for record in records:
            kind, values, _ = _record_parts(record, keep_id=True)
            jobs.append(("upsert", kind, key.name, values))
        return Reply(200, run_jobs(org, jobs, all_or_none))

    def _tree(self, org: OrgSession, call: Call, name: str) -> Reply:
        """``composite/tree/X``: records with nested children, created all or none; ids by referenceId."""
        body = call.json()
        roots = body.get("records") if isinstance(body, dict) else None
        if not isinstance(roots, list) or not roots:
            raise ApiError(400, "JSON_PARSER_ERROR", "the body must hold 'records': a list of records")
        flat: list[tuple[str, str, dict[str, Any], tuple[str, str] | None]] = []  # (ref, type, values, parent link)
        seen: set[str] = set()

        def walk(record: Any, expected: str, link: tuple[str, str] | None) -> None:
            if not isinstance(record, dict):
                raise ApiError(400, "JSON_PARSER_ERROR", f"a record is a JSON object, got {_shown(record)}")
            attributes = record.get("attributes")
            ref = attributes.get("referenceId") if isinstance(attributes, dict) else None
            kind = attributes.get("type") if isinstance(attributes, dict) else None
            if not isinstance(ref, str) or not ref or not isinstance(kind, str):
                raise ApiError(400, "INVALID_INPUT", "each record needs attributes with its type and a referenceId")
            if ref in seen:
                raise ApiError(400, "INVALID_INPUT", f"Duplicate ReferenceId provided in the request: {_shown(ref)}")
            seen.add(ref)
            obj = org.schema.get_object(kind)
            if obj is None or obj.name != expected:
                raise ApiError(400, "INVALID_TYPE", f"sObject type {_shown(kind)} is not {expected} here")
            values: dict[str, Any] = {}
            children: list[tuple[SObject, str, list[Any]]] = []
            for key, value in record.items():
                if key == "attributes":
                    continue
                rel = org.schema.get_child_relationship(obj, key) if isinstance(key, str) else None
                if rel is not None and isinstance(value, dict):
                    nested = value.get("records")
                    if not isinstance(nested, list):
                        raise ApiError(400, "JSON_PARSER_ERROR", f"{key} must hold 'records': a list")
                    children.append((rel[0], rel[1].name, nested))
                else:
                    values[key] = value
            flat.append((ref, obj.name, values, link))
            if len(flat) > MAX_COMPOSITE_RECORDS:
                raise ApiError(400, "LIMIT_EXCEEDED", f"a tree holds at most {MAX_COMPOSITE_RECORDS} records in all")
            for child, field_name, nested in children:
                for item in nested:
                    walk(item, child.name, (ref, field_name))

        for root in roots:
            walk(root, name, None)
        ids: dict[str, str] = {}
        failures: list[dict[str, Any]] = []
        try:
            with org.batch(all_or_none=True):
                for ref, kind, values, link in flat:
                    if link is not None:
                        values = {**values, link[1]: ids.get(link[0])}
                    try:
                        ids[ref] = org.create(kind, values)
                    except OrgError as exc:
                        failures.append(
                            {
                                "referenceId": ref,
                                "errors": [
                                    {
                                        "statusCode": exc.code,
                                        "message": exc.message,
                                        "fields": getattr(exc, "fields", []),
                                    }
                                ],
                            }
                        )
                if failures:
                    raise _Undo
        except _Undo:
            return Reply(400, {"hasErrors": True, "results": failures})
        return Reply(201, {"hasErrors": False, "results": [{"referenceId": r, "id": ids[r]} for r, *_ in flat]})

    def _sub_call(self, call: Call, method: object, url: object, body: Any, headers: object, *, batch: bool) -> Call:
        """A subrequest of a composite or batch request as a call of its own."""
        if not isinstance(method, str) or method.upper() not in ("GET", "POST", "PATCH", "PUT", "DELETE", "HEAD"):
            raise ApiError(
                400, "INVALID_INPUT", f"a subrequest's method is GET, POST, PATCH or DELETE, got {_shown(method)}"
            )
        if not isinstance(url, str) or not url:
            raise ApiError(400, "INVALID_INPUT", f"a subrequest's url is text, got {_shown(url)}")
        split = urlsplit(url)
        path = split.path
        if batch and not path.startswith("/"):
            path = "/services/data/" + path
        m = re.match(r"^/services/data/v([^/]+)/?(.*)$", path)
        if m is None:
            raise ApiError(400, "INVALID_INPUT", f"a subrequest's url starts /services/data/vXX.X/, got {_shown(url)}")
        version = check_version(m.group(1))
        parts = [unquote(p) for p in m.group(2).split("/") if p]
        query: dict[str, str] = {}
        params = parse_qsl(split.query, keep_blank_values=True)
        for k, v in params:
            query.setdefault(k, v)
        names = {str(k).lower(): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}
        inner = Call(
            method.upper(), parts, version, query, b"", {**call.headers, **names}, instance=call.instance, params=params
        )
        if body is not None:
            inner.parsed = body
        return inner

    def _composite_graph(self, client: Client, org: OrgSession, call: Call) -> Reply:
        """``/composite``: up to 25 subrequests in order, later ones naming earlier results by ``@{ref.field}``."""
        body = call.json()
        subs = body.get("compositeRequest") if isinstance(body, dict) else None
        if not isinstance(subs, list) or not subs or len(subs) > MAX_SUBREQUESTS:
            raise ApiError(
                400,
                "INVALID_INPUT",
                f"the body must hold 'compositeRequest': a list of 1 to {MAX_SUBREQUESTS} subrequests",
            )
        all_or_none = parse_bool(body.get("allOrNone", False), "allOrNone")
        refs: list[str] = []
        for sub in subs:
            ref = sub.get("referenceId") if isinstance(sub, dict) else None
            if not isinstance(ref, str) or not re.fullmatch(r"[A-Za-z0-9_]{1,80}", ref):
                raise ApiError(
                    400, "INVALID_INPUT", f"each subrequest needs a referenceId of letters, digits, _: {_shown(ref)}"
                )
            if ref in refs:
                raise ApiError(400, "INVALID_INPUT", f"Duplicate referenceId: {ref}")
            refs.append(ref)
        results: dict[str, Any] = {}
        answers: list[dict[str, Any]] = []
        failed = False

        def resolve(value: Any) -> Any:
            if isinstance(value, str):
                whole = _REFERENCE.fullmatch(value)
                if whole:
                    return _lookup(results, whole.group(1), whole.group(2))
                return _REFERENCE.sub(lambda m: str(_lookup(results, m.group(1), m.group(2))), value)
            if isinstance(value, dict):
                return {k: resolve(v) for k, v in value.items()}
            if isinstance(value, list):
                return [resolve(v) for v in value]
            return value

        try:
            with org.batch(all_or_none=all_or_none):
                for sub, ref in zip(subs, refs, strict=True):
                    if failed and all_or_none:
                        break
                    try:
                        url = resolve(sub.get("url"))
                        sub_body = resolve(sub.get("body"))
                        inner = self._sub_call(
                            call, sub.get("method"), url, sub_body, sub.get("httpHeaders"), batch=False
                        )
                        if inner.parts[:1] == ["composite"] and inner.parts[1:2] != ["sobjects"]:
                            raise ApiError(400, "INVALID_INPUT", "a composite subrequest cannot be another composite")
                        reply = self._route(client, org, inner)
                        status, out = reply.status, _decoded(reply.body)
                        results[ref] = out
                        answers.append(
                            {"body": out, "httpHeaders": reply.headers, "httpStatusCode": status, "referenceId": ref}
                        )
                        if status >= 400:
                            failed = True
                    except _Unresolved as exc:
                        failed = True
                        answers.append(_halted(ref, f"Invalid reference specified. No value for {exc} found"))
                    except OrgError as exc:
                        failed = True
                        err = from_org(exc)
                        answers.append(
                            {
                                "body": error_body(err),
                                "httpHeaders": {},
                                "httpStatusCode": err.status,
                                "referenceId": ref,
                            }
                        )
                    except ApiError as err:
                        failed = True
                        answers.append(
                            {
                                "body": error_body(err),
                                "httpHeaders": {},
                                "httpStatusCode": err.status,
                                "referenceId": ref,
                            }
                        )
                if failed and all_or_none:
                    raise _Undo
        except _Undo:
            rolled = "The transaction was rolled back since another operation in the same transaction failed."
            done = {a["referenceId"] for a in answers if a["httpStatusCode"] >= 400}
            answers = [a if a["referenceId"] in done else _halted(a["referenceId"], rolled) for a in answers]
            answers += [_halted(r, rolled) for r in refs[len(answers) :]]
        return Reply(200, {"compositeResponse": answers})

    def _batch(self, client: Client, call: Call) -> Reply:
        """``/composite/batch``: up to 25 independent subrequests (each its own transaction)."""
        org = client.org
        assert org is not None
        body = call.json()
        subs = body.get("batchRequests") if isinstance(body, dict) else None
        if not isinstance(subs, list) or not subs or len(subs) > MAX_SUBREQUESTS:
            raise ApiError(
                400,
                "INVALID_INPUT",
                f"the body must hold 'batchRequests': a list of 1 to {MAX_SUBREQUESTS} subrequests",
            )
        halt = parse_bool(body.get("haltOnError", False), "haltOnError")
        results: list[dict[str, Any]] = []
        errors = False
        for sub in subs:
            if errors and halt:
                results.append(
                    {
                        "statusCode": 412,
                        "result": [
                            {"errorCode": "BATCH_PROCESSING_HALTED", "message": "Batch processing halted per request"}
                        ],
                    }
                )
                continue
            try:
                if not isinstance(sub, dict):
                    raise ApiError(400, "INVALID_INPUT", f"a subrequest is a JSON object, got {_shown(sub)}")
                inner = self._sub_call(call, sub.get("method"), sub.get("url"), sub.get("richInput"), None, batch=True)
                if inner.parts[:1] == ["composite"]:
                    raise ApiError(400, "INVALID_INPUT", "a batch subrequest cannot be a composite request")
                with org.batch(all_or_none=True):
                    reply = self._route(client, org, inner)
                results.append({"statusCode": reply.status, "result": _decoded(reply.body)})
                errors = errors or reply.status >= 400
            except OrgError as exc:
                err = from_org(exc)
                results.append({"statusCode": err.status, "result": error_body(err)})
                errors = True
            except ApiError as err:
                results.append({"statusCode": err.status, "result": error_body(err)})
                errors = True
        return Reply(200, {"hasErrors": errors, "results": results})


class _Undo(Exception):
    pass


class _Unresolved(Exception):
    pass


def _halted(ref: str, message: str) -> dict[str, Any]:
    return {
        "body": [{"errorCode": "PROCESSING_HALTED", "message": message}],
        "httpHeaders": {},
        "httpStatusCode": 400,
        "referenceId": ref,
    }


def _lookup(results: Mapping[str, Any], ref: str, path: str) -> Any:
    """``@{ref.records[0].Id}``: a value of an earlier subrequest's result."""
    if ref not in results:
        raise _Unresolved(f"{ref}{path}")
    value: Any = results[ref]
    for step in re.findall(r"\.([A-Za-z_]\w*)|\[(\d+)\]", path):
        name, index = step
        if name and isinstance(value, dict) and name in value:
            value = value[name]
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            raise _Unresolved(f"{ref}{path}")
    return value


def _decoded(body: Any) -> Any:
    if isinstance(body, bytes):
        return json.loads(body)
    return body


def _format(value: dt.datetime) -> str:
    from crmarena_gym.org._session import format_datetime

    return format_datetime(value)


def org_catalog(hub: SessionHub) -> Any:
    return hub.base._live().catalog


def _column(
    name: str, display: str, *, aggregate: bool = False, join: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "aggregate": aggregate,
        "apexType": None,
        "booleanType": False,
        "columnName": name,
        "custom": name.endswith("__c") or name.endswith("__r"),
        "displayName": display,
        "foreignKeyName": None,
        "insertable": False,
        "joinColumns": join or [],
        "numberType": False,
        "textType": False,
        "updatable": False,
    }


def _field_column(schema: OrgSchema, obj: SObject, name: str) -> dict[str, Any]:
    f = obj.get_field(name)
    if f is None:
        return _column(name, name)
    createable, updateable = write_access(obj, f) if schema.get_object(obj.name) is not None else (False, False)
    column = _column(f.name, f.name)
    column.update(
        {
            "apexType": _APEX_TYPES.get(f.type, "String"),
            "booleanType": f.type is FieldType.BOOLEAN,
            "custom": f.custom,
            "insertable": createable,
            "numberType": f.type.is_numeric,
            "textType": f.type.is_text and f.type not in (FieldType.ID, FieldType.REFERENCE),
            "updatable": updateable,
        }
    )
    return column


def _path_column(schema: OrgSchema, obj: SObject, parts: list[str]) -> dict[str, Any]:
    if len(parts) == 1:
        return _field_column(schema, obj, parts[0])
    rel = obj.get_relationship(parts[0])
    if rel is None or rel.reference_to is None:
        return _column(parts[0], parts[0], join=[_column(".".join(parts[1:]), ".".join(parts[1:]))])
    parent = schema.get_object(rel.reference_to, standard=True)
    name = rel.relationship_name or parts[0]
    column = _column(name, name)
    column["foreignKeyName"] = rel.name
    column["joinColumns"] = [
        _path_column(schema, parent, parts[1:]) if parent is not None else _column(parts[1], parts[1])
    ]
    return column


def _records_of(body: Any) -> tuple[list[Any], bool]:
    records = body.get("records") if isinstance(body, dict) else None
    if not isinstance(records, list) or not records or len(records) > MAX_COMPOSITE_RECORDS:
        raise ApiError(
            400, "INVALID_FIELD", f"the body must hold 'records': a list of 1 to {MAX_COMPOSITE_RECORDS} records"
        )
    return records, parse_bool(body.get("allOrNone", False), "allOrNone")


def _record_parts(record: Any, *, keep_id: bool = False) -> tuple[Any, Any, Any]:
    """(type, fields, id) of a collection's record: the id taken from ``Id`` or ``id`` (as jsforce sends it)."""
    if not isinstance(record, dict):
        return None, None, None
    attributes = record.get("attributes")
    kind = attributes.get("type") if isinstance(attributes, dict) else None
    id_keys = [k for k in record if isinstance(k, str) and k.lower() == "id"]
    record_id = record[id_keys[0]] if id_keys else None
    if keep_id:
        values = {k: v for k, v in record.items() if k != "attributes"}
    else:
        values = {k: v for k, v in record.items() if k != "attributes" and k not in id_keys}
    return kind if isinstance(kind, str) else None, values, record_id


def run_jobs(org: OrgSession, jobs: list[tuple[str, Any, Any, Any]], all_or_none: bool) -> list[dict[str, Any]]:
    """Run an sObject collection's jobs, each answered ``{"id", "success", "errors"}`` in order (allOrNone:
    one fails, all are undone and the others answer ALL_OR_NONE_OPERATION_ROLLED_BACK)."""
    results: list[dict[str, Any]] = []
    failed = False

    def one(kind: str, sobject: Any, key: Any, values: Any) -> dict[str, Any]:
        if kind == "delete":
            obj = None
            if isinstance(key, str) and is_valid_id(key):
                obj = org.schema.object_for_id(key)
            if obj is None:
                raise OrgError("MALFORMED_ID", f"Invalid id: {_shown(key)}")
            org.delete(obj.name, key)
            return {"id": key}
        if sobject is None or values is None:
            raise OrgError("INVALID_TYPE", 'Each record needs attributes with its type: {"attributes": {"type": ...}}')
        if not isinstance(sobject, str) or org.schema.get_object(sobject) is None:
            raise OrgError("INVALID_TYPE", f"sObject type {_shown(sobject)} is not supported.")
        if kind == "create":
            if isinstance(values, dict) and any(isinstance(k, str) and k.lower() == "id" for k in values):
                raise OrgError("INVALID_FIELD_FOR_INSERT_UPDATE", "cannot specify Id in an insert call")
            return {"id": org.create(sobject, values)}
        if kind == "upsert":
            value = next((v for k, v in values.items() if isinstance(k, str) and k.lower() == key.lower()), None)
            rest = {k: v for k, v in values.items() if not (isinstance(k, str) and k.lower() == key.lower())}
            record_id, created = org.upsert(sobject, key, value, rest)
            return {"id": record_id, "created": created}
        if not isinstance(key, str):
            raise OrgError("MISSING_ARGUMENT", "Id not specified in an update call")
        org.update(sobject, key, values)
        return {"id": key}

    try:
        with org.batch(all_or_none):
            for kind, sobject, key, values in jobs:
                if failed and all_or_none:
                    results.append(_rolled_back())
                    continue
                try:
                    # Each record its own savepoint: a record that fails leaves nothing, the others stay.
                    with org.batch(all_or_none=True):
                        done = one(kind, sobject, key, values)
                    results.append(
                        {
                            "id": done["id"],
                            "success": True,
                            "errors": [],
                            **{k: v for k, v in done.items() if k == "created"},
                        }
                    )
                except OrgError as exc:
                    failed = True
                    error = {"statusCode": exc.code, "message": exc.message, "fields": getattr(exc, "fields", [])}
                    results.append({"success": False, "errors": [error]})
                except Exception as exc:
                    failed = True
                    error = {
                        "statusCode": "UNKNOWN_EXCEPTION",
                        "message": f"{type(exc).__name__}: {exc}"[:300],
                        "fields": [],
                    }
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
