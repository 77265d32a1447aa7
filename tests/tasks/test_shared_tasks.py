"""The default task set is read once per process and shared, immutable, by every environment."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gymnasium as gym
import pydantic
import pytest

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.datagen import generate_org
from crmarena_gym.tasks import default_tasks, task_cache_path


@pytest.fixture(scope="module")
def small_org(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shared") / "org.sqlite"
    generate_org(path, seed=4, scale=0.5)
    return path


def test_envs_share_the_instances_and_each_has_its_own_list(small_org: Path) -> None:
    first = default_tasks(small_org, per_task=4)
    second = default_tasks(small_org, per_task=4)
    assert first == second and first is not second
    assert all(a is b for a, b in zip(first, second, strict=True))  # one copy of each instance
    second.clear()  # a caller's list is its own
    assert len(default_tasks(small_org, per_task=4)) == 36


def test_environments_of_a_process_hold_one_copy_of_the_default_set() -> None:
    one, two = gym.make("CRMArena-v0"), gym.make("CRMArena-HTU-v0")
    all_tasks = one.unwrapped.instances  # type: ignore[attr-defined]
    htu = two.unwrapped.instances  # type: ignore[attr-defined]
    assert len(all_tasks) == 1170 and len(htu) == 130
    by_idx = {inst.idx: inst for inst in all_tasks}
    assert all(by_idx[inst.idx] is inst for inst in htu)


def test_instances_cannot_be_changed(small_org: Path) -> None:
    inst = default_tasks(small_org, per_task=4)[0]
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        inst.answer = "something else"  # type: ignore[misc]


def test_a_cache_file_edited_after_it_was_read_is_neither_served_from_memory_nor_trusted(
    small_org: Path, tmp_path: Path
) -> None:
    org = tmp_path / "org.sqlite"
    shutil.copyfile(small_org, org)
    before = default_tasks(org, per_task=2)
    cache = task_cache_path(org, seed=0, per_task=2)
    text = cache.read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    rows[0]["answer"] = "an edited gold answer"
    cache.write_text("".join(json.dumps(r) + "\n" for r in rows))
    after = default_tasks(org, per_task=2)
    assert after == before and after[0].answer != "an edited gold answer"
    assert cache.read_text() == text  # generated again over the edited file
