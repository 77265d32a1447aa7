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
    args = {
        "families": "HTU,KQA",
        "train_seed": 1,
        "val_seed": 3,
        "test_seed": 2,
        "task_distribution": "discriminating",
    }
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


def test_the_example_refuses_the_text_level_and_names_who_trains_on_it(
    example: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["train_rllib_ppo.py", "--level", "text"])
    with pytest.raises(SystemExit) as stop:
        example.parse_args()
    assert stop.value.code == 2
    assert "RLlib cannot train on it" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["train_rllib_ppo.py", "--families", "KQA,htu,NRC"])
    with pytest.raises(SystemExit) as stop:
        example.parse_args()
    assert stop.value.code == 2 and "--families: unknown task 'NRC' (did you mean 'NCR'?)" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["train_rllib_ppo.py"])
    args = example.parse_args()
    assert (args.level, args.test_seed, args.val_seed, args.step_cost) == ("parsed", 1031, 3, 0.0)
    monkeypatch.setattr("sys.argv", ["train_rllib_ppo.py", "--eval-seed", "2"])  # the old name still works
    assert example.parse_args().test_seed == 2


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_rl", EXAMPLE.parents[1] / "benchmarks" / "bench_rl.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(seed: int, bri: float, level: str = "parsed") -> dict:
    baselines = {
        "random": {"BRI": 0.1, "TII": 0.2},
        "answer_prior": {"BRI": 0.0, "TII": 0.3},
        "fixed_order": {"BRI": 1.0, "TII": 0.5},
        "random_overall": 0.15,
        "answer_prior_overall": 0.15,
        "fixed_order_overall": 0.75,
        "fixed_order_slots": {"BRI": ["cases_of_window"], "TII": ["order_items"]},
    }
    return {
        "level": level,
        "seeds": {"ppo": seed, "test": 1031},
        "test_seed_frozen": True,
        "baselines": baselines,
        "trained": {"BRI": bri, "TII": 0.9},
        "trained_overall": (bri + 0.9) / 2,
        "kept_iteration": 10,
        "history": [{"env_steps": 2000}],
        "args": {"eval_per_task": "30"},
    }


def test_the_bench_table_names_the_level_and_gives_an_interval_over_seeds(tmp_path: Path) -> None:
    bench = _bench()
    text = bench.table([_run(0, 0.8), _run(1, 0.9), _run(2, 1.0)])
    assert "Help level **parsed**" in text and "task seed 1031 (frozen" in text
    # BRI: mean 0.9; sample sd 0.1; t(2 dof) = 4.303: half-width 4.303 * 0.1 / sqrt(3) = 0.248
    assert "| BRI | 0.10 | 0.00 | 1.00 | 0.90 ± 0.25 | success rate |" in text
    assert "| TII | 0.20 | 0.30 | 0.50 | 0.90 ± 0.00 | success rate |" in text
    with pytest.raises(SystemExit, match="different help levels"):
        bench.table([_run(0, 0.8), _run(1, 0.9, level="tools")])
    readme = tmp_path / "README.md"
    start, end = bench.markers("parsed")
    readme.write_text(f"before\n{start}\nold\n{end}\nafter\n")
    bench.write_readme([_run(0, 0.8)], readme)
    written = readme.read_text()
    assert written.startswith("before\n") and written.endswith("after\n") and "old" not in written
    assert "| BRI | 0.10 | 0.00 | 1.00 | 0.80 | success rate |" in written
    real = (EXAMPLE.parents[1] / "README.md").read_text()
    for level in ("tools", "parsed", "oracle-args"):
        assert all(marker in real for marker in bench.markers(level))
