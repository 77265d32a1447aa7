"""sb3-contrib's MaskablePPO trains on the discrete env as it is (no ActionMasker glue), and its example runs."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import gymnasium as gym
import numpy as np
import pytest

from crmarena_gym.rl import DISCRETE_ENV_ID
from crmarena_gym.tasks import TaskInstance, generate_tasks, instance_key, load_tasks

sb3_contrib = pytest.importorskip("sb3_contrib")

ROOT = Path(__file__).resolve().parents[2]


def test_maskable_ppo_reads_the_masks_and_trains(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    from sb3_contrib.common.maskable.utils import get_action_masks

    env = gym.make(DISCRETE_ENV_ID, task="TII", org=env_org, tasks=env_tasks)
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=16, n_epochs=1, seed=0)
    # What MaskablePPO asks the (vectorised) env for is the wrapper's own mask of the candidates.
    obs = model.env.reset()
    masks = get_action_masks(model.env)
    assert masks.dtype == bool and masks.shape == (1, env.action_space.n)
    assert np.array_equal(masks[0], obs["action_mask"][0] == 1.0)
    model.learn(total_timesteps=64)
    assert model.num_timesteps >= 64
    # Masked slots are never chosen: every action the trained policy takes is a real candidate.
    obs, _ = env.reset(seed=1)
    for _ in range(5):
        action, _ = model.predict(obs, action_masks=env.get_wrapper_attr("action_masks")(), deterministic=False)
        assert obs["action_mask"][int(action)] == 1.0
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_maskable_example_runs_end_to_end_and_writes_its_figures(
    env_org: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = _load(ROOT / "examples" / "train_sb3_maskable.py")
    workdir = tmp_path / "run"
    workdir.mkdir()
    shutil.copy(env_org, workdir / "org.sqlite")  # the example generates an org only where there is none
    figures = tmp_path / "figures.json"
    argv = ["--families", "TII,BRI", "--train-per-task", "6", "--val-per-task", "2", "--eval-per-task", "3"]
    argv += ["--fixed-order-per-task", "2", "--fixed-order-beam", "4", "--baseline-repeats", "1"]
    argv += ["--iterations", "2", "--n-steps", "32", "--minibatch", "16", "--epochs", "1", "--eval-every", "1"]
    argv += ["--workdir", str(workdir), "--json", str(figures), "--out", str(tmp_path / "curve.png"), "--seed", "4"]
    assert example.main(argv) == 0
    assert "restored: test success unchanged" in capsys.readouterr().out
    run = json.loads(figures.read_text())
    assert (run["algo"], run["level"], run["privileged"], run["step_cost"]) == ("maskable-ppo", "parsed", False, 0.0)
    assert run["seeds"] == {"ppo": 4, "train": 1, "validation": 3, "test": 1031} and run["test_seed_frozen"]
    assert "partial" not in run and (tmp_path / "curve.png").stat().st_size > 0
    # Two iterations of 32 steps, each evaluated; the kept one is the best validation success, the later on ties.
    assert [h["env_steps"] for h in run["history"]] == [32, 64]
    assert [e["iteration"] for e in run["evals"]] == [1, 2]
    first, second = run["evals"]
    kept = second if second["validation"] >= first["validation"] else first
    assert run["kept_iteration"] == kept["iteration"] and run["trained"] == kept["per_family"]
    assert (workdir / "maskable_ppo_parsed_seed4.zip").exists()
    # The test instances are the frozen seed's, drawn as the RLlib example draws them.
    drawn = generate_tasks(env_org, seed=1031, per_task=3, tasks=["TII", "BRI"], distribution="discriminating")
    keys = {instance_key(inst.task, inst.params) for inst in drawn}
    assert {instance_key(inst.task, inst.params) for inst in load_tasks(workdir / "held_out.jsonl")} == keys
    assert set(run["trained"]) == set(run["baselines"]["random"]) == {"BRI", "TII"}
    # bench_rl reads the record into the MaskablePPO table of its level.
    bench = _load(ROOT / "benchmarks" / "bench_rl.py")
    text = bench.table([run])
    assert "Help level **parsed**" in text and "one MaskablePPO policy" in text
    assert (
        "| family | random candidates | most frequent answer | best fixed slot order | MaskablePPO | measure |" in text
    )
    assert bench.markers("parsed", "maskable-ppo")[0] == "<!-- bench_rl:maskable-ppo:parsed:start -->"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for level in ("parsed", "tools"):
        assert all(marker in readme for marker in bench.markers(level, "maskable-ppo"))


def test_the_maskable_example_refuses_what_it_cannot_train_on(capsys: pytest.CaptureFixture[str]) -> None:
    example = _load(ROOT / "examples" / "train_sb3_maskable.py")
    for argv, message in (
        (["--level", "text"], "MaskablePPO cannot train on it"),
        (["--n-steps", "64", "--minibatch", "128"], "must not exceed --n-steps"),
        (["--iterations", "0"], "--iterations must be at least 1"),
        # A misspelt family was a KeyError's traceback, after the org and the baselines' instances were made.
        (["--families", "TIX,BRI"], "--families: unknown task 'TIX' (did you mean 'TII'?)"),
        (["--families", ","], "--families names no family"),
    ):
        with pytest.raises(SystemExit) as stop:
            example.parse_args(argv)
        assert stop.value.code == 2 and message in capsys.readouterr().err, argv
