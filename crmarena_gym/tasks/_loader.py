"""Reading and writing task sets: a JSON list or JSON Lines, in the original's format."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from crmarena_gym._files import atomic_write_text
from crmarena_gym._json import json_text
from crmarena_gym.tasks._instance import TaskInstance, is_pro_record


class TaskFileError(ValueError):
    """A task file or record that cannot be read; the message says where and what."""


def _records_from_text(text: str, where: str) -> list[Any]:
    stripped = text.lstrip()
    if not stripped:
        raise TaskFileError(f"{where}: the file is empty; expected a JSON list or JSON Lines of task instances")
    if stripped[0] == "[":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise TaskFileError(f"{where}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
        return list(data)
    records = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise TaskFileError(f"{where}: line {lineno} is not valid JSON ({err.msg}): {line[:80]!r}") from None
    return records


def _describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "record"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def load_tasks(
    source: str | os.PathLike[str] | Iterable[Mapping[str, Any]], *, kind: str | None = None
) -> list[TaskInstance]:
    """Load task instances.

    Args:
        source: A path to a JSON file holding a list of instances, or to a JSON Lines file with one
            instance per line (the original's ``tasks_original.json`` among them, or CRMArena-Pro's
            ``b2b_tasks.json``), or the records themselves.
        kind: The Pro org kind (``b2b`` or ``b2c``) that records in Pro's format without a ``kind`` of their
            own were made for (default: ``b2b``, as Pro's published file). CRMArena's records stay ``service``.

    Returns:
        The instances in file order. Null answers stay ``None``.

    Raises:
        FileNotFoundError: The path does not exist.
        TaskFileError: The file is not JSON, a record does not fit the format, or two records share
            an ``idx``; the message names the file, the record and the field.

    Example:
        >>> tasks = load_tasks([{"idx": 0, "task": "knowledge_qa", "query": "Q?", "answer": "A"}])
        >>> tasks[0].reward_metric
        'fuzzy_match'
    """
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no task file at {str(path)!r}")
        where = str(path)
        records: Iterable[Any] = _records_from_text(path.read_text(encoding="utf-8"), where)
    else:
        where = "task records"
        records = source
    if kind is not None and kind not in ("b2b", "b2c"):
        raise ValueError(f"kind must be 'b2b' or 'b2c' (the Pro org kind of Pro-format records), got {kind!r}")
    instances: list[TaskInstance] = []
    seen: dict[int, int] = {}
    for position, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise TaskFileError(f"{where}: record {position} is a {type(record).__name__}, not a JSON object")
        data = dict(record)
        if kind is not None and "kind" not in data and isinstance(data.get("task"), str) and is_pro_record(data):
            data["kind"] = kind
        try:
            inst = TaskInstance.model_validate(data)
        except ValidationError as err:
            label = f"record {position}" + (f" (idx {record['idx']!r})" if "idx" in record else "")
            raise TaskFileError(f"{where}: {label}: {_describe(err)}") from None
        if inst.idx in seen:
            raise TaskFileError(f"{where}: records {seen[inst.idx]} and {position} share idx {inst.idx}")
        seen[inst.idx] = position
        instances.append(inst)
    return instances


def save_tasks(instances: Iterable[TaskInstance], path: str | os.PathLike[str], *, public: bool = False) -> Path:
    """Write instances to ``path``: JSON Lines if it ends in ``.jsonl``, else a JSON list.

    Args:
        instances: The instances to write.
        path: Where to write; the file is replaced atomically.
        public: Leave out ``persona`` and ``params`` (the original's format, safe to show agents'
            authors; the gold ``answer`` stays).

    Returns:
        The path written.
    """
    path = Path(path)
    rows = [inst.to_public_dict() if public else inst.model_dump() for inst in instances]
    if path.suffix == ".jsonl":
        text = "".join(json_text(r) + "\n" for r in rows)
    else:
        text = json_text(rows, indent=1) + "\n"
    return atomic_write_text(path, text)
