"""An instance's date is read when it loads: an impossible one is refused there, naming the instance and field."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from crmarena_gym.tasks import TaskFileError, TaskInstance, load_tasks


def _record(**changes: object) -> dict:
    record = {
        "idx": 7,
        "task": "HTU",
        "query": "Who?",
        "answer": None,
        "metadata": {"required": "- Today's date: 2021-02-28"},
    }
    record.update(changes)
    return record


def test_an_impossible_date_in_the_context_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([_record(), _record(idx=8, metadata={"required": "- Today's date: 2021-02-30"})]))
    with pytest.raises(TaskFileError) as err:
        load_tasks(path)
    message = str(err.value)
    assert "record 1 (idx 8)" in message and "metadata.required" in message and "'2021-02-30'" in message


def test_an_impossible_hidden_date_is_refused_too() -> None:
    with pytest.raises(TaskFileError, match=r"params.today holds '2022-13-01', which is not a date"):
        load_tasks([_record(params={"today": "2022-13-01"})])


def test_the_date_comes_from_the_parameters_then_the_context() -> None:
    assert load_tasks([_record()])[0].today == dt.date(2021, 2, 28)
    assert load_tasks([_record(params={"today": "2020-01-05"})])[0].today == dt.date(2020, 1, 5)
    assert TaskInstance(idx=1, task="KQA", query="Q?", answer="A").today is None


def test_every_original_instance_still_loads_with_its_date(shared_dir: Path) -> None:
    raw = json.loads((shared_dir / "tasks_original.json").read_text())
    loaded = {t.idx: t for t in load_tasks(shared_dir / "tasks_original.json")}
    for record in raw:
        line = next((p for p in record["metadata"]["required"].split("\n") if "Today's date:" in p), None)
        expected = dt.date.fromisoformat(line.split(":", 1)[1].strip()) if line else None
        assert loaded[record["idx"]].today == expected
