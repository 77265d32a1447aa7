"""The default task set (cached beside its org) and training sets that stay clear of it."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import shutil
import sqlite3
from pathlib import Path

import pytest

from crmarena_gym.datagen import GENERATOR_VERSION, generate_org, read_latent
from crmarena_gym.tasks import (
    TASK_GENERATOR_VERSION,
    TASK_SPECS,
    TaskInstance,
    default_tasks,
    generate_tasks,
    instance_key,
    load_tasks,
    task_cache_path,
    training_tasks,
)
from crmarena_gym.tasks import _default as default_module
from tests.org_builder import OrgBuilder, ts


@pytest.fixture(scope="module")
def org_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("default") / "org.sqlite"
    generate_org(path, seed=0, scale=1.0)
    return path


@pytest.fixture(scope="module")
def test_set(org_path: Path) -> list[TaskInstance]:
    return default_tasks(org_path)


def test_the_default_set_is_seed_zero_with_130_per_task_cached_beside_the_org(
    org_path: Path, test_set: list[TaskInstance]
) -> None:
    assert [i.model_dump() for i in test_set] == [i.model_dump() for i in generate_tasks(org_path, seed=0)]
    cache = task_cache_path(org_path, seed=0, per_task=130)
    assert cache.parent == org_path.parent and cache.is_file()
    assert f"-g{GENERATOR_VERSION}-t{TASK_GENERATOR_VERSION}-" in cache.name
    assert load_tasks(cache) == test_set


def test_a_cached_set_is_read_not_generated(
    org_path: Path, test_set: list[TaskInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("generated again although a cache exists")

    monkeypatch.setattr(default_module, "generate_tasks", refuse)
    assert default_tasks(org_path) == test_set


def test_a_damaged_cache_is_regenerated(org_path: Path, test_set: list[TaskInstance]) -> None:
    cache = task_cache_path(org_path, seed=0, per_task=130)
    text = cache.read_text()
    cache.write_text(text[: len(text) // 2])  # cut mid-record
    assert default_tasks(org_path) == test_set
    assert cache.read_text() == text


def test_a_hand_edited_gold_answer_is_not_trusted(org_path: Path, test_set: list[TaskInstance]) -> None:
    cache = task_cache_path(org_path, seed=0, per_task=130)
    text = cache.read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    rows[5]["answer"] = "a gold answer edited by hand"
    cache.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    default_module._LOADED.clear()  # as a new process would
    assert default_tasks(org_path) == test_set
    assert cache.read_text() == text
    assert cache.with_name(cache.name + ".sha256").read_text().strip() == hashlib.sha256(text.encode()).hexdigest()


def test_the_cache_is_keyed_by_the_org_content(tmp_path: Path) -> None:
    b = OrgBuilder(tmp_path / "plain.sqlite")
    agent = b.add("User", FirstName="A", LastName="Agent")
    case = b.add("Case", OwnerId=agent, CreatedDate=ts("2023-01-01 10:00"), Status="New")
    b.close()
    before = task_cache_path(tmp_path / "plain.sqlite", seed=0, per_task=130)
    assert before.name.startswith("plain.tasks-seed0-n130-")
    conn = sqlite3.connect(tmp_path / "plain.sqlite")
    conn.execute("UPDATE \"Case\" SET Status = 'Closed' WHERE Id = ?", (case,))
    conn.commit()
    conn.close()
    after = task_cache_path(tmp_path / "plain.sqlite", seed=0, per_task=130)
    assert after != before
    assert task_cache_path(tmp_path / "plain.sqlite", seed=1, per_task=130) != after


def _load_in_child(path: str, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    queue.put([i.model_dump() for i in default_tasks(path, per_task=20)])


def test_processes_asking_at_once_share_one_generation(org_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "org.sqlite"
    shutil.copy(org_path, copy)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    children = [ctx.Process(target=_load_in_child, args=(str(copy), queue)) for _ in range(2)]
    for child in children:
        child.start()
    results = [queue.get(timeout=120) for _ in children]
    for child in children:
        child.join(timeout=60)
        assert child.exitcode == 0
    assert results[0] == results[1] == [i.model_dump() for i in generate_tasks(copy, seed=0, per_task=20)]
    assert [p.name for p in tmp_path.glob("*.jsonl")] == [task_cache_path(copy, seed=0, per_task=20).name]


def test_training_sets_never_collide_with_the_test_set(org_path: Path, test_set: list[TaskInstance]) -> None:
    test_keys = {instance_key(i.task, i.params) for i in test_set}
    train = training_tasks(org_path, seed=1)
    assert not {instance_key(i.task, i.params) for i in train} & test_keys
    counts = {spec.abbrev: sum(i.task == spec.name for i in train) for spec in TASK_SPECS}
    # Only KQA runs out: the org states a fixed number of facts and the test set took 130 of them.
    facts = len(read_latent(org_path)["kqa_facts"])
    assert counts.pop("KQA") == facts - 130
    assert set(counts.values()) == {130}
    other = training_tasks(org_path, seed=2, tasks=["NCR", "NED"], per_task=40)
    assert [i.params for i in other] != [i.params for i in train if i.abbrev in ("NCR", "NED")][:80]
    assert not {instance_key(i.task, i.params) for i in other} & test_keys


def test_the_training_seed_must_differ_from_the_test_seed(org_path: Path) -> None:
    with pytest.raises(ValueError, match="must differ from the test seed 0, got 0"):
        training_tasks(org_path, seed=0)


def test_a_missing_org_is_reported(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no org database at"):
        default_tasks(tmp_path / "nope.sqlite")
