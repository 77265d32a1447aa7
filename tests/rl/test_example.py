"""The PPO example's instance sets: held-out, validation and training, disjoint by instance key."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from crmarena_gym.tasks import generate_tasks, instance_key, load_tasks

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_rllib_ppo.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_rllib_ppo", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _args(**overrides: object) -> argparse.Namespace:
    args = {"families": "HTU,KQA", "train_seed": 1, "val_seed": 3, "test_seed": 2}
    args.update(train_per_task=400, val_per_task=4, eval_per_task=5)
    args.update(overrides)
    return argparse.Namespace(**args)


def _keys(instances: list) -> set[str]:
    return {instance_key(inst.task, inst.params) for inst in instances}


@pytest.mark.parametrize("val_per_task", [4, 0])
def test_the_three_sets_are_disjoint_and_training_gets_the_rest_of_a_short_pool(
    example: ModuleType, env_org: Path, tmp_path: Path, val_per_task: int
) -> None:
    sets = example.make_instances(env_org, _args(val_per_task=val_per_task), tmp_path)
    train, validation, held_out = (sets[name][1] for name in ("train", "validation", "held_out"))
    for name, (path, instances) in sets.items():
        if not instances:  # no validation instances: no file (an empty one would not load)
            assert name == "validation" and path is None and not val_per_task
            continue
        assert path == tmp_path / f"{name}.jsonl"
        assert [inst.params for inst in load_tasks(path)] == [inst.params for inst in instances]
    assert not _keys(train) & _keys(validation)
    assert not _keys(train) & _keys(held_out)
    assert not _keys(validation) & _keys(held_out)
    assert [inst.abbrev for inst in held_out].count("KQA") == 5
    assert [inst.abbrev for inst in validation].count("KQA") == val_per_task
    # KQA's pool (one instance a fact) is smaller than 400: training takes every fact the other sets left
    pool = _keys(generate_tasks(env_org, seed=7, per_task=10_000, tasks=["KQA"], allow_fewer=True))
    assert len(pool) < 400
    trained = _keys([inst for inst in train if inst.abbrev == "KQA"])
    assert trained == pool - _keys(validation) - _keys(held_out)
