"""Bulk API 1.0 (``/services/async/XX.X/``) over the served org's sessions, in its JSON content type.

What simple-salesforce's ``sf.bulk`` (and any JSON Bulk 1.0 client) calls: ``POST job`` opens a job
(insert, update, upsert by an External ID field, delete, hardDelete, which is a delete here: the
session's recycle bin, query, queryAll); ``POST job/ID/batch`` adds a batch (a JSON list of records, or a
SOQL query) and runs it at once, each record on its own as Salesforce does (a failed record does not stop
the others); ``GET job/ID/batch/BATCH`` is its state, ``.../result`` its results (a query's: the ids of
its result sets, each read at ``.../result/RESULT``), ``.../request`` what was sent; ``GET job/ID/batch``
lists a job's batches; ``POST job/ID`` with ``{"state": "Closed"}`` (or ``Aborted``) closes it. Errors are
Bulk 1.0's ``{"exceptionCode", "exceptionMessage"}``. The XML and CSV content types are refused by name.
Jobs live in memory, bounded as the Bulk API 2.0's are (:mod:`._bulk`), and go with their session.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from crmarena_gym.org._base import OrgError
from crmarena_gym.org._session import OrgSession, format_datetime
from crmarena_gym.org.serve._bulk import MAX_JOBS, Bulk, session_jobs
from crmarena_gym.org.serve._hub import Client, SessionHub
from crmarena_gym.org.serve._rest import _versioned
from crmarena_gym.org.soql import parse
from crmarena_gym.org.soql._ast import ChildSubquery, FuncCall, SelectItem
from crmarena_gym.schema import make_id

#: Most records of one batch (Salesforce's limit).
MAX_BATCH_RECORDS = 10_000
_OPERATIONS = ("insert", "update", "upsert", "delete", "hardDelete", "query", "queryAll")
_NUMBERS = itertools.count(1)
_NUMBERS_LOCK = threading.Lock()


class BulkError(Exception):
    """A Bulk API 1.0 refusal: ``{"exceptionCode", "exceptionMessage"}`` with an HTTP status."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def body(self) -> dict[str, str]:
        return {"exceptionCode": self.code, "exceptionMessage": self.message}


def _number() -> int:
    with _NUMBERS_LOCK:
        return next(_NUMBERS)


@dataclass
class Batch:
    id: str
    job_id: str
    created: str
    request: Any  # the records (a list) or the query (text)
    state: str = "Completed"
    message: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)  # a DML batch's, one a record
    result_sets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # a query batch's
    processed: int = 0
    failed: int = 0

    def info(self) -> dict[str, Any]:
        return {
            "apexProcessingTime": 0,
            "apiActiveProcessingTime": 0,
            "createdDate": self.created,
            "id": self.id,
            "jobId": self.job_id,
            "numberRecordsFailed": self.failed,
            "numberRecordsProcessed": self.processed,
            "state": self.state,
            "stateMessage": self.message,
            "systemModstamp": self.created,
            "totalProcessingTime": 0,
        }


@dataclass
class Job1:
    id: str
    operation: str
    object: str
    created: str
    version: str
    external_id: str | None
    concurrency: str
    state: str = "Open"
    batches: dict[str, Batch] = field(default_factory=dict)
    size: int = 0

    def info(self) -> dict[str, Any]:
        states = [b.state for b in self.batches.values()]
        return {
            "apexProcessingTime": 0,
            "apiActiveProcessingTime": 0,
            "apiVersion": float(self.version),
            "concurrencyMode": self.concurrency,
            "contentType": "JSON",
            "createdById": None,
            "createdDate": self.created,
            **({"externalIdFieldName": self.external_id} if self.external_id else {}),
            "id": self.id,
            "numberBatchesCompleted": states.count("Completed"),
            "numberBatchesFailed": states.count("Failed"),
            "numberBatchesInProgress": 0,
            "numberBatchesQueued": 0,
            "numberBatchesTotal": len(states),
            "numberRecordsFailed": sum(b.failed for b in self.batches.values()),
            "numberRecordsProcessed": sum(b.processed for b in self.batches.values()),
            "numberRetries": 0,
            "object": self.object,
            "operation": self.operation,
            "state": self.state,
            "systemModstamp": self.created,
            "totalProcessingTime": 0,
        }


class Bulk1:
    """The ``/services/async/XX.X/job`` resources (see the module's description)."""

    def __init__(self, hub: SessionHub, bulk2: Bulk) -> None:
        self.hub = hub
        self.bulk2 = bulk2  # whose byte budget the jobs of both APIs share
        self._jobs: dict[str, dict[str, Job1]] = {}  # token digest -> job id -> job
        self._lock = threading.Lock()

    def dispatch(self, client: Client, method: str, version: str, parts: list[str], body: bytes) -> tuple[int, Any]:
        """Answer one request: (status, JSON body); refusals raise :class:`BulkError`."""
        org = client.org
        if org is None:
            raise BulkError(400, "InvalidSessionId", "Invalid session id: the session has ended")
        try:
            return self._route(client, org, method, version, parts, body)
        except OrgError as exc:
            raise BulkError(400, "InvalidBatch", f"{exc.code}: {exc.message}") from None

    def _route(
        self, client: Client, org: OrgSession, method: str, version: str, parts: list[str], body: bytes
    ) -> tuple[int, Any]:
        if parts[:1] != ["job"]:
            raise BulkError(404, "InvalidUrl", f"of the Bulk API 1.0 this org serves job/...: not {'/'.join(parts)!r}")
        jobs = self._jobs_of(client)
        if len(parts) == 1:
            _allow(method, "POST")
            job = self._open(org, version, _json(body))
            self._remember(client, jobs, job)
            return 201, job.info()
        job = jobs.get(parts[1])
        if job is None:
            raise BulkError(400, "InvalidJob", f"Unable to find job {parts[1][:20]!r} in this session")
        rest = parts[2:]
        if not rest:
            if method == "POST":
                wanted = _json(body)
                state = wanted.get("state") if isinstance(wanted, dict) else None
                if state not in ("Closed", "Aborted"):
                    raise BulkError(400, "InvalidJobState", f"a job becomes Closed or Aborted, not {state!r}")
                if job.state == "Open" or state == job.state:
                    job.state = state
                else:
                    raise BulkError(400, "InvalidJobState", f"the job is {job.state}: it cannot become {state}")
                return 200, job.info()
            _allow(method, "GET", "POST")
            return 200, job.info()
        if rest == ["batch"]:
            if method == "POST":
                batch = self._run_batch(org, job, body)
                size = len(body) + len(json.dumps(batch.results or batch.result_sets, default=str))
                self.bulk2.hold(size)  # past the server's budget: refused, and the batch is not kept
                job.size += size
                job.batches[batch.id] = batch
                return 201, batch.info()
            _allow(method, "GET", "POST")
            return 200, {"batchInfo": [b.info() for b in job.batches.values()]}
        if rest[0] != "batch" or len(rest) > 4:
            raise BulkError(404, "InvalidUrl", f"no resource job/ID/{'/'.join(rest)[:60]} in the Bulk API 1.0")
        batch = job.batches.get(rest[1])
        if batch is None:
            raise BulkError(400, "InvalidBatch", f"Unable to find batch {rest[1][:20]!r} in job {job.id}")
        _allow(method, "GET")
        if len(rest) == 2:
            return 200, batch.info()
        if rest[2] == "request" and len(rest) == 3:
            return 200, batch.request
        if rest[2] != "result":
            raise BulkError(404, "InvalidUrl", f"no resource job/ID/batch/ID/{rest[2][:40]} in the Bulk API 1.0")
        if batch.state != "Completed":
            raise BulkError(400, "InvalidBatch", f"Batch not completed: {batch.message or batch.state}")
        if job.operation not in ("query", "queryAll"):
            if len(rest) != 3:
                raise BulkError(404, "InvalidUrl", "a DML batch's results are at job/ID/batch/ID/result")
            return 200, batch.results
        if len(rest) == 3:
            return 200, list(batch.result_sets)
        records = batch.result_sets.get(rest[3])
        if records is None:
            raise BulkError(400, "InvalidBatch", f"Unable to find result {rest[3][:20]!r} of batch {batch.id}")
        return 200, records

    # -- jobs ------------------------------------------------------------------------------------------

    def _jobs_of(self, client: Client) -> dict[str, Job1]:
        with self._lock:
            jobs, gone = session_jobs(self._jobs, self.hub, client)
            self.bulk2.release(sum(j.size for j in gone))
            return jobs

    def _remember(self, client: Client, jobs: dict[str, Job1], job: Job1) -> None:
        with self._lock:
            jobs[job.id] = job
            for old in list(jobs.values())[: max(0, len(jobs) - MAX_JOBS)]:  # the oldest go first
                del jobs[old.id]
                self.bulk2.release(old.size)

    def _open(self, org: OrgSession, version: str, body: Any) -> Job1:
        if not isinstance(body, dict):
            raise BulkError(400, "InvalidJob", "a job is a JSON object: operation, object, contentType")
        content = body.get("contentType", "JSON")
        if content != "JSON":
            raise BulkError(
                400,
                "InvalidJob",
                f"contentType {content!r} is not served by this org's Bulk API 1.0: it takes JSON jobs "
                "(the Bulk API 2.0 takes CSV)",
            )
        operation = body.get("operation")
        if operation not in _OPERATIONS:
            raise BulkError(400, "InvalidJob", f"operation is one of {', '.join(_OPERATIONS)}, not {operation!r}")
        name = body.get("object")
        obj = org.schema.get_object(name, standard=True) if isinstance(name, str) else None
        if obj is None or not org._live().catalog.has(obj):
            raise BulkError(400, "InvalidJob", f"Unable to find object: {name!r}")
        if operation not in ("query", "queryAll") and org.schema.get_object(obj.name) is None:
            raise BulkError(
                400, "InvalidJob", f"Entity '{obj.name}' is not supported by the Bulk API here: it stores no rows"
            )
        external = body.get("externalIdFieldName")
        if operation == "upsert":
            key = obj.get_field(external) if isinstance(external, str) else None
            if key is None or not (key.external_id or key.name == "Id"):
                raise BulkError(
                    400, "InvalidJob", f"External ID was blank or not an External ID field of {obj.name}: {external!r}"
                )
            external = key.name
        elif external is not None:
            raise BulkError(400, "InvalidJob", "externalIdFieldName is for upsert jobs only")
        mode = body.get("concurrencyMode", "Parallel")
        concurrency = "Serial" if mode in ("Serial", 1, "1") else "Parallel"
        now = format_datetime(org._now())
        job_id = make_id("750", 10**9 + _number())
        return Job1(job_id, operation, obj.name, now, version, external, concurrency)

    # -- batches -----------------------------------------------------------------------------------------

    def _run_batch(self, org: OrgSession, job: Job1, body: bytes) -> Batch:
        if job.state != "Open":
            raise BulkError(400, "InvalidJobState", f"Job {job.id} is {job.state}: batches are added to open jobs")
        batch_id = make_id("751", 10**9 + _number())
        now = format_datetime(org._now())
        if job.operation in ("query", "queryAll"):
            try:
                soql = body.decode("utf-8")
            except UnicodeDecodeError:
                raise BulkError(400, "InvalidBatch", "the query is not UTF-8 text") from None
            batch = Batch(batch_id, job.id, now, soql)
            self._query(org, job, batch, soql)
        else:
            records = _json(body)
            if not isinstance(records, list) or not records or len(records) > MAX_BATCH_RECORDS:
                raise BulkError(
                    400, "InvalidBatch", f"a batch is a JSON list of 1 to {MAX_BATCH_RECORDS:,} records (objects)"
                )
            batch = Batch(batch_id, job.id, now, records)
            for record in records:
                batch.results.append(self._one(org, job, record))
            batch.processed = len(records)
            batch.failed = sum(not r["success"] for r in batch.results)
        return batch

    def _query(self, org: OrgSession, job: Job1, batch: Batch, soql: str) -> None:
        try:
            q = parse(soql)
            if any(isinstance(i, ChildSubquery) for i in q.items):
                raise OrgError("FUNCTIONALITY_NOT_ENABLED", "Aggregate Relationships not supported in Batch Query")
            aggregate = any(
                isinstance(i, SelectItem) and isinstance(i.expr, FuncCall) and i.expr.name != "FIELDS" for i in q.items
            )
            if q.group_by or aggregate:
                raise OrgError("FUNCTIONALITY_NOT_ENABLED", "Aggregate queries are not supported in Batch Query")
            if q.object_name.lower() != job.object.lower():
                raise OrgError("InvalidBatch", f"the query is of {q.object_name}, the job of {job.object}")
            records = org.query(soql, include_deleted=job.operation == "queryAll")["records"]
        except OrgError as exc:
            batch.state, batch.message = "Failed", f"InvalidBatch : Failed to process query: {exc.code}: {exc.message}"
            return
        prefix = f"/services/data/v{job.version}/sobjects/"
        for record in records:
            _versioned(record, prefix)
        batch.result_sets[make_id("752", 10**9 + _number())] = records
        batch.processed = len(records)

    def _one(self, org: OrgSession, job: Job1, record: Any) -> dict[str, Any]:
        """One record of a DML batch, run on its own: ``{"success", "created", "id", "errors"}``."""
        name, operation = job.object, job.operation
        try:
            if not isinstance(record, dict):
                raise OrgError("INVALID_FIELD", f"a record is a JSON object, got {str(record)[:60]!r}")
            values = {k: v for k, v in record.items() if k != "attributes"}
            id_keys = [k for k in values if k.lower() == "id"]
            record_id = values.pop(id_keys[0]) if id_keys else None
            created = False
            with org.batch(all_or_none=True):
                if operation == "insert":
                    if record_id is not None:
                        raise OrgError("INVALID_FIELD_FOR_INSERT_UPDATE", "cannot specify Id in an insert call")
                    record_id, created = org.create(name, values), True
                elif operation == "update":
                    if not isinstance(record_id, str):
                        raise OrgError("MISSING_ARGUMENT", "Id not specified in an update call")
                    org.update(name, record_id, values)
                elif operation == "upsert":
                    key = job.external_id or "Id"
                    value = (
                        record_id
                        if key == "Id"
                        else values.pop(next((k for k in values if k.lower() == key.lower()), key), None)
                    )
                    record_id, created = org.upsert(name, key, value, values)
                else:
                    if not isinstance(record_id, str):
                        raise OrgError("MISSING_ARGUMENT", "Id not specified in a delete call")
                    org.delete(name, record_id)
            return {"success": True, "created": created, "id": record_id, "errors": []}
        except OrgError as exc:
            error = {"statusCode": exc.code, "message": exc.message, "fields": list(getattr(exc, "fields", []) or [])}
            return {"success": False, "created": False, "id": None, "errors": [error]}


def _allow(method: str, *allowed: str) -> None:
    if method not in allowed and not (method == "HEAD" and "GET" in allowed):
        raise BulkError(405, "InvalidUrl", f"HTTP method {method} is not allowed here; allowed: {', '.join(allowed)}")


def _json(body: bytes) -> Any:
    text = body.strip()
    if text.startswith(b"<"):
        raise BulkError(
            400, "InvalidRequest", "XML is not served by this org's Bulk API 1.0: send JSON (contentType JSON)"
        )
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BulkError(400, "InvalidRequest", f"the request body is not valid JSON: {exc}") from None
