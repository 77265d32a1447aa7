from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from crmarena_gym.tasks import TaskFileError, TaskInstance, load_tasks, save_tasks


def test_original_task_file_loads_unchanged(shared_dir: Path) -> None:
    raw = json.loads((shared_dir / "tasks_original.json").read_text())
    tasks = load_tasks(shared_dir / "tasks_original.json")
    assert len(tasks) == 1170
    assert Counter(t.task for t in tasks) == Counter(r["task"] for r in raw)
    assert all(count == 130 for count in Counter(t.abbrev for t in tasks).values())
    nulls = Counter(t.abbrev for t in tasks if t.answer is None)
    assert nulls == {"TII": 39, "NED": 39, "HTU": 39, "TCU": 39, "PVI": 39}
    # Every public field survives the round trip as the file has it.
    for inst, record in zip(tasks, raw, strict=True):
        assert inst.to_public_dict() == record


def test_jsonl_round_trip_keeps_params(tmp_path: Path) -> None:
    inst = TaskInstance(
        idx=3,
        task="TII",
        query="Which issue?",
        answer=None,
        metadata={"required": "- Today's date: 2022-01-01"},
        params={"today": "2022-01-01", "product_id": "01tWs0000000001IAA"},
    )
    path = save_tasks([inst], tmp_path / "set.jsonl")
    assert path.read_text().count("\n") == 1
    (back,) = load_tasks(path)
    assert back == inst and back.params["today"] == "2022-01-01"
    public = save_tasks([inst], tmp_path / "set.json", public=True)
    assert "params" not in json.loads(public.read_text())[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty"),
        ("[1, 2", "invalid JSON at line 1"),
        ('{"idx": 0}\nnot json\n', "line 2 is not valid JSON"),
        ('[{"idx": 0, "task": "nope", "query": "q", "answer": null}]', "unknown task 'nope'"),
        ('[{"idx": 0, "task": "handle_time", "answer": null}]', "query: Field required"),
        ('[{"idx": 1, "task": "HTU", "query": "q", "answer": null, "reward_metric": "fuzzy_match"}]', "scored by"),
        ('[{"idx": 1, "task": "HTU", "query": "q", "answer": null, "colour": 1}]', "colour"),
        (
            '[{"idx": 1, "task": "HTU", "query": "q", "answer": null}, {"idx": 1, "task": "HTU", "query": "r", '
            '"answer": null}]',
            "share idx 1",
        ),
        ("[3]", "record 0 is a int"),
    ],
)
def test_bad_files_say_what_is_wrong(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(TaskFileError, match=message) as info:
        load_tasks(path)
    assert str(path) in str(info.value)


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nowhere\.json"):
        load_tasks(tmp_path / "nowhere.json")
