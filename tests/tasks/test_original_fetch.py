"""Fetching the original's data: the rows as the ``datasets`` library gives them become the published files.

The hub cannot be reached from the tests, so ``load_dataset`` is replaced by a ``datasets.Dataset`` built
from the shared copy of the original's files: the same library, the same table representation (a schema
row carries every object's field names, ``None`` where it has no such field).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crmarena_gym.cli._main import main
from crmarena_gym.tasks import load_tasks, schema_from_rows, tasks_from_rows
from tests.conftest import require_shared

datasets = pytest.importorskip("datasets", reason="the datasets package (the trl extra) is not installed")


@pytest.fixture(scope="module")
def shared() -> tuple[list[dict], list[dict]]:
    root = require_shared()
    return json.loads((root / "tasks_original.json").read_text()), json.loads((root / "schema.json").read_text())


def test_the_libraries_rows_become_the_published_records(shared: tuple[list[dict], list[dict]]) -> None:
    tasks, schema = shared
    table = datasets.Dataset.from_list(schema)
    assert any(v is None for v in table[0]["fields"].values())  # the shared columns the converter must drop
    assert schema_from_rows(table) == schema
    records = tasks_from_rows(datasets.Dataset.from_list(tasks))
    assert [r["idx"] for r in records] == [t["idx"] for t in tasks]
    assert records == [
        {k: t[k] for k in ("idx", "answer", "task", "metadata", "query", "reward_metric")} for t in tasks
    ]


def test_fetch_original_writes_loadable_files_and_nothing_on_failure(
    shared: tuple[list[dict], list[dict]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    tasks, schema = shared
    asked: list[tuple[str, str, str]] = []

    def load_dataset(name: str, config: str, split: str):  # type: ignore[no-untyped-def]
        asked.append((name, config, split))
        return datasets.Dataset.from_list(tasks if config == "CRMArena" else schema)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    assert main(["fetch-original", "--out", str(tmp_path / "o")]) == 0
    assert asked == [("Salesforce/CRMArena", "CRMArena", "test"), ("Salesforce/CRMArena", "schema", "test")]
    assert [i.model_dump() for i in load_tasks(tmp_path / "o" / "tasks_original.json")] == [
        i.model_dump() for i in load_tasks(require_shared() / "tasks_original.json")
    ]
    assert json.loads((tmp_path / "o" / "schema.json").read_text()) == schema

    def offline(*args: object, **kwargs: object) -> None:
        raise ConnectionError("Couldn't reach 'Salesforce/CRMArena' on the Hub")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    capsys.readouterr()
    assert main(["fetch-original", "--out", str(tmp_path / "p")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("crmarena-gym fetch-original: cannot fetch Salesforce/CRMArena") and "Traceback" not in err
    assert not (tmp_path / "p").exists()
