"""The original benchmark's published data, fetched from the Hugging Face hub where a network allows.

The original publishes its 1,170 task instances and the schema shown to agents as the dataset
``Salesforce/CRMArena`` (configurations ``CRMArena`` and ``schema``, split ``test``). The ``datasets``
library stores a table's rows with one set of columns, so a schema row there carries every field name of
every object, ``None`` where the object has no such field: :func:`schema_from_rows` drops those, as the
original's own loader does. The files written are those the tests read from ``../shared/crmarena``:
``tasks_original.json`` (a JSON list, loadable with :func:`~crmarena_gym.tasks.load_tasks`) and
``schema.json``. The original's sample of org rows (``org_rows_sample.json``) is not published there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from crmarena_gym._files import atomic_write_text
from crmarena_gym.tasks._instance import TaskInstance

__all__ = ["ORIGINAL_DATASET", "OriginalDataError", "fetch_original", "schema_from_rows", "tasks_from_rows"]

#: The original's data set on the Hugging Face hub.
ORIGINAL_DATASET = "Salesforce/CRMArena"


class OriginalDataError(RuntimeError):
    """The original's data cannot be fetched or read; the message says why and what to do."""


def tasks_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The task records of the data set's ``CRMArena`` rows, in the file format, each one validated.

    Raises:
        OriginalDataError: A row is not a task instance (the message names its idx and the problem).
    """
    records = []
    for n, row in enumerate(rows):
        record = {key: row.get(key) for key in ("idx", "answer", "task", "metadata", "query", "reward_metric")}
        metadata = record.get("metadata") or {}
        record["metadata"] = {k: v for k, v in dict(metadata).items() if v is not None}
        try:
            TaskInstance.model_validate(record)
        except ValueError as err:
            raise OriginalDataError(f"row {n} (idx {record.get('idx')!r}) is not a task instance: {err}") from None
        records.append(record)
    return records


def schema_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The objects of the data set's ``schema`` rows: each object's own fields, without the ``None`` the
    table's shared columns give it for every other object's fields."""
    return [
        {"object": row["object"], "fields": {k: v for k, v in dict(row["fields"]).items() if v is not None}}
        for row in rows
    ]


def fetch_original(out: str | os.PathLike[str]) -> list[Path]:
    """Download the original's task instances and schema into ``out`` (``tasks_original.json``, ``schema.json``).

    Needs the ``datasets`` package (in the ``trl`` extra) and a network that reaches the Hugging Face hub.

    Returns:
        The files written.

    Raises:
        OriginalDataError: ``datasets`` is missing, the hub cannot be reached, or what it sent is not the
            original's data; nothing is written then.
    """
    try:
        from datasets import load_dataset
    except ImportError:
        raise OriginalDataError(
            "fetching the original's data needs the datasets package: pip install datasets (or pip install -e '.[trl]')"
        ) from None
    try:
        tasks = load_dataset(ORIGINAL_DATASET, "CRMArena", split="test")
        schema = load_dataset(ORIGINAL_DATASET, "schema", split="test")
    except Exception as err:  # the hub's client raises many kinds (no network, no such repo, a proxy ...)
        raise OriginalDataError(
            f"cannot fetch {ORIGINAL_DATASET} from the Hugging Face hub ({type(err).__name__}: {err}); on a machine "
            "without that network, copy tasks_original.json and schema.json from one that has it"
        ) from None
    records = tasks_from_rows(tasks)
    objects = schema_from_rows(schema)
    if len(records) != 1170 or len(objects) != 16:
        raise OriginalDataError(
            f"{ORIGINAL_DATASET} sent {len(records)} task instances and {len(objects)} objects, where the original "
            "has 1,170 and 16: not written"
        )
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / "tasks_original.json", directory / "schema.json"]
    atomic_write_text(written[0], json.dumps(records, ensure_ascii=False))
    atomic_write_text(written[1], json.dumps(objects, ensure_ascii=False))
    return written
