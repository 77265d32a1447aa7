"""Bulk API 2.0 over the served org's sessions: ingest jobs (CSV in, results CSV out) and query jobs.

Ingest: ``POST jobs/ingest`` opens a job (insert, update, upsert by an External ID field, delete or
hardDelete, which is a delete here: the session's recycle bin), ``PUT jobs/ingest/ID/batches`` uploads
CSV, ``PATCH jobs/ingest/ID`` with ``{"state": "UploadComplete"}`` runs it (each row on its own, as
Salesforce does: a failed row does not stop the others), ``GET .../successfulResults``,
``.../failedResults`` and ``.../unprocessedrecords`` answer CSV. Query: ``POST jobs/query`` runs a SOQL
query (or queryAll), ``GET jobs/query/ID/results`` pages its CSV with ``maxRecords`` and the
``Sforce-Locator`` header. Jobs belong to the session that made them and count against a memory bound;
the oldest finished ones of a session go past :data:`MAX_JOBS`, and a session's jobs go when it ends (they
live in memory: ``--persist`` keeps what a job wrote, not the job).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import threading
from dataclasses import dataclass, field
from typing import Any, TypeVar

from crmarena_gym.org._base import OrgError
from crmarena_gym.org._session import OrgSession, format_datetime
from crmarena_gym.org.serve._hub import ApiError, Client, SessionHub
from crmarena_gym.schema import FieldType, make_id

#: Most bytes of one CSV upload (Salesforce takes 150 MB; a local server keeps less in memory).
MAX_UPLOAD_BYTES = 64 * 2**20
#: Jobs one session keeps (the oldest finished ones go past it).
MAX_JOBS = 50
#: Bytes all jobs' data (uploads and results) hold at most.
BULK_BYTES = 256 * 2**20
_DELIMITERS = {"COMMA": ",", "TAB": "\t", "PIPE": "|", "SEMICOLON": ";", "CARET": "^", "BACKQUOTE": "`"}
_OPERATIONS = ("insert", "update", "upsert", "delete", "hardDelete")
_JOB_NUMBERS = itertools.count(1)
_JOB_LOCK = threading.Lock()


_J = TypeVar("_J")


def session_jobs(registry: dict[str, dict[str, _J]], hub: SessionHub, client: Client) -> tuple[dict[str, _J], list[_J]]:
    """The jobs of ``client``'s session in ``registry`` (token digest -> job id -> job), and the jobs dropped from it:
    a session's first job forgets those of the sessions that ended (their bytes are the caller's to give back).
    Call with the registry's lock held."""
    gone: list[_J] = []
    if client.digest not in registry:
        with hub._lock:
            live = set(hub._clients)
        for digest in [d for d in registry if d not in live]:
            gone += registry.pop(digest).values()
    return registry.setdefault(client.digest, {}), gone


def _job_id() -> str:
    with _JOB_LOCK:
        number = next(_JOB_NUMBERS)
    return make_id("750", number)


@dataclass
class Job:
    """One Bulk API 2.0 job of a session."""

    id: str
    kind: str  # ingest or query
    operation: str
    object: str
    created: str
    version: str
    delimiter: str = "COMMA"
    line_ending: str = "LF"
    external_id: str | None = None
    query: str = ""
    state: str = "Open"
    uploads: list[bytes] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    successes: list[list[str]] = field(default_factory=list)
    failures: list[list[str]] = field(default_factory=list)
    unprocessed: list[list[str]] = field(default_factory=list)
    rows: list[bytes] = field(default_factory=list)  # a query job's CSV lines (without the header)
    processed: int = 0
    failed: int = 0
    error: str = ""
    size: int = 0
    modstamp: str = ""

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "id": self.id,
            "operation": self.operation,
            "object": self.object,
            "createdById": None,
            "createdDate": self.created,
            "systemModstamp": self.modstamp or self.created,
            "state": self.state,
            "concurrencyMode": "Parallel",
            "contentType": "CSV",
            "apiVersion": float(self.version),
            "lineEnding": self.line_ending,
            "columnDelimiter": self.delimiter,
        }
        if self.kind == "ingest":
            info["contentUrl"] = f"services/data/v{self.version}/jobs/ingest/{self.id}/batches"
            if self.external_id:
                info["externalIdFieldName"] = self.external_id
        return info

    def details(self) -> dict[str, Any]:
        return {
            **self.info(),
            "jobType": "V2Ingest" if self.kind == "ingest" else "V2Query",
            "numberRecordsProcessed": self.processed,
            "numberRecordsFailed": self.failed,
            "retries": 0,
            "totalProcessingTime": 0,
            "apiActiveProcessingTime": 0,
            "apexProcessingTime": 0,
            **({"errorMessage": self.error} if self.error else {}),
        }


class Bulk:
    """The ``jobs/ingest`` and ``jobs/query`` resources (see the module's description)."""

    def __init__(self, hub: SessionHub) -> None:
        self.hub = hub
        self._jobs: dict[str, dict[str, Job]] = {}  # token digest -> job id -> job
        self._lock = threading.Lock()
        self._held = 0

    def dispatch(self, client: Client, call: Any) -> Any:
        from crmarena_gym.org.serve._rest import Reply

        parts = call.parts
        if parts[:1] != ["jobs"] or len(parts) < 2 or parts[1] not in ("ingest", "query"):
            return None
        kind, rest = parts[1], parts[2:]
        org = client.org
        assert org is not None
        jobs = self._jobs_of(client)
        if not rest:
            if call.method == "POST":
                return Reply(200, self._open(org, client, call, kind).info())
            if call.method in ("GET", "HEAD"):
                mine = [j.info() for j in jobs.values() if j.kind == kind]
                return Reply(200, {"done": True, "records": mine, "nextRecordsUrl": None})
            raise _method(call, "GET, POST")
        job = jobs.get(rest[0])
        if job is None or job.kind != kind:
            raise ApiError(404, "NOT_FOUND", f"The requested resource does not exist: no {kind} job {rest[0][:20]!r}")
        if len(rest) == 1:
            if call.method in ("GET", "HEAD"):
                return Reply(200, job.details())
            if call.method == "DELETE":
                if job.state in ("Open", "InProgress"):
                    raise ApiError(
                        400, "INVALIDJOBSTATE", f"a job in state {job.state} cannot be deleted: abort it first"
                    )
                self._forget(client, job)
                return Reply(204)
            if call.method == "PATCH":
                return Reply(200, self._change_state(org, job, call).info())
            raise _method(call, "GET, PATCH, DELETE")
        sub = rest[1]
        if kind == "ingest" and sub == "batches" and len(rest) == 2:
            if call.method != "PUT":
                raise _method(call, "PUT")
            if job.state != "Open":
                raise ApiError(400, "INVALIDJOBSTATE", f"data can be uploaded to an Open job, this one is {job.state}")
            self._hold(len(call.body))
            job.uploads.append(call.body)
            job.size += len(call.body)
            return Reply(201)
        served = "successfulResults, failedResults, unprocessedrecords" if kind == "ingest" else "results"
        unknown = ApiError(
            404, "NOT_FOUND", f"The requested resource does not exist: a {kind} job's are {served} (GET)"
        )
        if call.method not in ("GET", "HEAD") or len(rest) != 2:
            raise unknown
        # The Guide writes unprocessedrecords; simple-salesforce asks for unprocessedRecords: either is read.
        results = {"successfulresults": "successfulResults", "failedresults": "failedResults"}
        results["unprocessedrecords"] = "unprocessedrecords"
        if kind == "ingest" and sub.lower() in results:
            return self._ingest_results(job, results[sub.lower()])
        if kind == "query" and sub == "results":
            return self._query_results(job, call)
        raise unknown

    # -- jobs ----------------------------------------------------------------------------------------

    def _jobs_of(self, client: Client) -> dict[str, Job]:
        with self._lock:
            jobs, gone = session_jobs(self._jobs, self.hub, client)
            self._held -= sum(j.size for j in gone)
            return jobs

    def _hold(self, n: int) -> None:
        with self._lock:
            if self._held + n > BULK_BYTES:
                raise ApiError(
                    403,
                    "REQUEST_LIMIT_EXCEEDED",
                    f"the server's Bulk jobs hold {self._held:,} bytes, at most {BULK_BYTES:,}: delete finished jobs",
                )
            self._held += n

    def hold(self, n: int) -> None:
        """Count ``n`` more bytes against the budget all Bulk jobs share (403 past it)."""
        self._hold(n)

    def release(self, n: int) -> None:
        """Give back ``n`` bytes of the shared budget (a job that went)."""
        with self._lock:
            self._held -= n

    def _forget(self, client: Client, job: Job) -> None:
        with self._lock:
            self._jobs.get(client.digest, {}).pop(job.id, None)
            self._held -= job.size

    def _open(self, org: OrgSession, client: Client, call: Any, kind: str) -> Job:
        body = call.json()
        if not isinstance(body, dict):
            raise ApiError(400, "JSON_PARSER_ERROR", "a job is a JSON object")
        delimiter = body.get("columnDelimiter", "COMMA")
        ending = body.get("lineEnding", "LF")
        if delimiter not in _DELIMITERS:
            raise ApiError(400, "INVALIDENTITY", f"columnDelimiter is one of {', '.join(_DELIMITERS)}")
        if ending not in ("LF", "CRLF"):
            raise ApiError(400, "INVALIDENTITY", "lineEnding is LF or CRLF")
        if body.get("contentType", "CSV") != "CSV":
            raise ApiError(400, "INVALIDENTITY", "contentType is CSV")
        now = format_datetime(org._now()) if hasattr(org, "_now") else ""
        if kind == "query":
            operation = body.get("operation", "query")
            if operation not in ("query", "queryAll"):
                raise ApiError(400, "INVALIDENTITY", "operation is query or queryAll")
            soql = body.get("query")
            if not isinstance(soql, str) or not soql.strip():
                raise ApiError(400, "INVALIDENTITY", "query is required: a SOQL query")
            try:
                result = org.query(soql, include_deleted=operation == "queryAll")
            except OrgError as exc:
                raise ApiError(400, "INVALIDJOB", f"{exc.code}: {exc.message}") from None
            header, rows = _query_csv(soql, result["records"], _DELIMITERS[delimiter], ending)
            obj = re.search(r"\bFROM\s+([A-Za-z_][\w]*)", soql, re.IGNORECASE)
            job = Job(_job_id(), "query", operation, obj.group(1) if obj else "", now, call.version, delimiter, ending)
            job.query, job.header, job.rows = soql, header, rows
            job.size = sum(len(r) for r in rows)
            self._hold(job.size)
            job.state, job.processed = "JobComplete", len(rows)
        else:
            operation = body.get("operation")
            if operation not in _OPERATIONS:
                raise ApiError(400, "INVALIDENTITY", f"operation is one of {', '.join(_OPERATIONS)}")
            obj = org.schema.get_object(str(body.get("object", "")))
            if obj is None or obj.name not in org._state.tables:
                raise ApiError(400, "INVALIDENTITY", f"object {str(body.get('object'))[:80]!r} is not supported")
            external = body.get("externalIdFieldName")
            if operation == "upsert":
                key = obj.get_field(str(external or ""))
                if key is None or not (key.external_id or key.type is FieldType.ID):
                    raise ApiError(
                        400, "INVALIDENTITY", f"externalIdFieldName {external!r} is no External ID field of {obj.name}"
                    )
                external = key.name
            job = Job(_job_id(), "ingest", operation, obj.name, now, call.version, delimiter, ending, external)
        jobs = self._jobs_of(client)
        with self._lock:
            while len(jobs) >= MAX_JOBS:
                finished = [j for j in jobs.values() if j.state not in ("Open", "InProgress")] or list(jobs.values())
                old = finished[0]
                jobs.pop(old.id, None)
                self._held -= old.size
            jobs[job.id] = job
        return job

    def _change_state(self, org: OrgSession, job: Job, call: Any) -> Job:
        body = call.json()
        state = body.get("state") if isinstance(body, dict) else None
        if state == "Aborted":
            if job.state in ("JobComplete", "Failed"):
                raise ApiError(400, "INVALIDJOBSTATE", f"a job in state {job.state} cannot be aborted")
            job.state = "Aborted"
            return job
        if state != "UploadComplete" or job.kind != "ingest":
            raise ApiError(400, "INVALIDJOBSTATE", "the state may be set to UploadComplete (ingest) or Aborted")
        if job.state != "Open":
            raise ApiError(400, "INVALIDJOBSTATE", f"the job is {job.state}, not Open")
        job.state = "UploadComplete"
        self._run(org, job)
        shown = Job(**{**job.__dict__, "state": "UploadComplete"})  # the answer to this call; the job has run
        return shown

    def _run(self, org: OrgSession, job: Job) -> None:
        delimiter = _DELIMITERS[job.delimiter]
        obj = org.schema.get_object(job.object)
        assert obj is not None
        header: list[str] | None = None
        for upload in job.uploads:
            try:
                text = upload.decode("utf-8-sig")
            except UnicodeDecodeError:
                job.state, job.error = "Failed", "InvalidBatch : the upload is not UTF-8"
                return
            reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
            try:
                rows = list(reader)
            except csv.Error as exc:
                job.state, job.error = "Failed", f"InvalidBatch : {exc}"
                return
            if not rows:
                continue
            if header is None:
                header = rows[0]
            elif rows[0] != header:
                job.state, job.error = "Failed", "InvalidBatch : every upload of a job has the same columns"
                return
            for row in rows[1:]:
                if not row:  # a blank line; a line of empty values ('""', ',,') is a record, as Salesforce reads it
                    continue
                self._one(org, job, obj.name, header, row)
        job.header = header or []
        job.uploads = []
        job.state = "JobComplete" if job.state == "UploadComplete" else job.state
        job.modstamp = format_datetime(org._now())

    def _one(self, org: OrgSession, job: Job, name: str, header: list[str], row: list[str]) -> None:
        job.processed += 1
        if len(row) != len(header):
            job.failed += 1
            job.failures.append(["", f"INVALID_FIELD:the row has {len(row)} values for {len(header)} columns:--", *row])
            return
        obj = org.schema.get_object(name)
        assert obj is not None
        values: dict[str, Any] = {}
        try:
            for column, cell in zip(header, row, strict=True):
                f = obj.get_field(column)
                if f is None:
                    raise OrgError("INVALID_FIELD", f"No such column '{column}' on entity '{name}'")
                if cell == "":
                    continue  # Bulk API: an empty value leaves the field as it is
                values[f.name] = None if cell == "#N/A" else _typed(f.type, f.name, cell)
            record_id = values.pop("Id", None)
            created = False
            with org.batch(all_or_none=True):
                if job.operation == "insert":
                    if record_id is not None:
                        raise OrgError("INVALID_FIELD_FOR_INSERT_UPDATE", "cannot specify Id in an insert call")
                    record_id, created = org.create(name, values), True
                elif job.operation == "update":
                    if not isinstance(record_id, str):
                        raise OrgError("MISSING_ARGUMENT", "Id not specified in an update call")
                    org.update(name, record_id, values)
                elif job.operation == "upsert":
                    key = job.external_id or "Id"
                    value = record_id if key == "Id" else values.pop(key, None)
                    record_id, created = org.upsert(name, key, value, values)
                else:
                    if not isinstance(record_id, str):
                        raise OrgError("MISSING_ARGUMENT", "Id not specified in a delete call")
                    org.delete(name, record_id)
            job.successes.append([str(record_id), "true" if created else "false", *row])
        except OrgError as exc:
            job.failed += 1
            fields = ",".join(getattr(exc, "fields", []) or [])
            job.failures.append(["", f"{exc.code}:{exc.message}:{fields or '--'}", *row])

    # -- results -------------------------------------------------------------------------------------

    def _ingest_results(self, job: Job, which: str) -> Any:
        from crmarena_gym.org.serve._rest import Reply

        if job.state not in ("JobComplete", "Failed", "Aborted"):
            raise ApiError(400, "INVALIDJOBSTATE", f"results are ready when the job is complete; it is {job.state}")
        if which == "successfulResults":
            head, rows = ["sf__Id", "sf__Created", *job.header], job.successes
        elif which == "failedResults":
            head, rows = ["sf__Id", "sf__Error", *job.header], job.failures
        else:
            head, rows = job.header, job.unprocessed
        out = io.StringIO()
        writer = csv.writer(
            out,
            delimiter=_DELIMITERS[job.delimiter],
            lineterminator="\r\n" if job.line_ending == "CRLF" else "\n",
            quoting=csv.QUOTE_ALL,
        )
        if head:
            writer.writerow(head)
        writer.writerows(rows)
        return Reply(200, out.getvalue().encode("utf-8"), content_type="text/csv")

    def _query_results(self, job: Job, call: Any) -> Any:
        from crmarena_gym.org.serve._rest import Reply

        if job.state != "JobComplete":
            raise ApiError(400, "INVALIDJOBSTATE", f"results are ready when the job is complete; it is {job.state}")
        text = call.query.get("maxRecords", "")
        if text and (not text.isascii() or not text.isdigit() or len(text) > 9 or int(text) < 1):
            raise ApiError(400, "INVALIDENTITY", f"maxRecords is a positive number, got {text[:20]!r}")
        size = int(text) if text else 50_000
        locator = call.query.get("locator", "")
        start = 0
        if locator:
            if not locator.isascii() or not locator.isdigit() or len(locator) > 9 or int(locator) > len(job.rows):
                raise ApiError(400, "INVALIDLOCATOR", f"invalid locator {locator[:20]!r}")
            start = int(locator)
        chunk = job.rows[start : start + size]
        after = start + len(chunk)
        ending = b"\r\n" if job.line_ending == "CRLF" else b"\n"
        out = io.StringIO()
        csv.writer(
            out, delimiter=_DELIMITERS[job.delimiter], lineterminator=ending.decode(), quoting=csv.QUOTE_ALL
        ).writerow(job.header)
        body = out.getvalue().encode("utf-8") + b"".join(chunk)
        headers = {
            "Sforce-Locator": str(after) if after < len(job.rows) else "null",
            "Sforce-NumberOfRecords": str(len(chunk)),
        }
        return Reply(200, body, headers, content_type="text/csv")


def _method(call: Any, allowed: str) -> ApiError:
    return ApiError(405, "METHOD_NOT_ALLOWED", f"HTTP Method '{call.method}' not allowed. Allowed are {allowed}")


def _typed(kind: FieldType, name: str, cell: str) -> Any:
    """A CSV cell as the field's type takes it (booleans and numbers; the rest is text the org checks)."""
    if kind is FieldType.BOOLEAN:
        lowered = cell.strip().lower()
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
    elif kind.is_numeric:
        try:
            number = float(cell.strip())
            return int(number) if kind is FieldType.INTEGER and number.is_integer() else number
        except ValueError:
            pass
    else:
        return cell
    raise OrgError("INVALID_TYPE_ON_FIELD_IN_RECORD", f"{name}: value not of required type: {cell[:80]}")


def _flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key == "attributes":
            continue
        if isinstance(value, dict) and "records" in value:
            raise ApiError(400, "INVALIDJOB", "Bulk API 2.0 query jobs do not take child subqueries")
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def _query_csv(soql: str, records: list[dict[str, Any]], delimiter: str, ending: str) -> tuple[list[str], list[bytes]]:
    """A query's records as CSV lines (one bytes per record) and their header."""
    flat = [_flatten(r) for r in records]
    header: list[str] = []
    for row in flat:
        for key in row:
            if key not in header:
                header.append(key)
    if not header:
        m = re.match(r"\s*SELECT\s+(.*?)\s+FROM\s", soql, re.IGNORECASE | re.DOTALL)
        header = [c.strip() for c in m.group(1).split(",")] if m else []
    lines: list[bytes] = []
    for row in flat:
        out = io.StringIO()
        csv.writer(
            out, delimiter=delimiter, lineterminator="\r\n" if ending == "CRLF" else "\n", quoting=csv.QUOTE_ALL
        ).writerow(
            [
                ""
                if row.get(h) is None
                else ("true" if row[h] is True else "false" if row[h] is False else str(row[h]))
                for h in header
            ]
        )
        lines.append(out.getvalue().encode("utf-8", "surrogatepass"))
    return header, lines
