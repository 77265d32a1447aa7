"""Robustness sweeps: org perturbation axes play a perturbed org with its carried task set, API axes wrap the
env in ApiFaults, and the reactive oracle re-issues what a careful agent would."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

from crmarena_gym.cli import main
from crmarena_gym.datagen import read_manifest
from crmarena_gym.eval import load_experiment, read_results
from crmarena_gym.eval._experiment import setting_perturbations, setting_recipe
from crmarena_gym.policies import ReactiveOraclePolicy
from crmarena_gym.tasks import TaskInstance, load_tasks, save_tasks
from crmarena_gym.wrappers import ApiFaults

SPEC = """
name = "robustness test"
env = "CRMArena-v0"
org = "{org}"
tasks = "tasks.json"

[[policies]]
name = "oracle"
spec = "oracle"

[[policies]]
name = "reactive"
spec = "reactive-oracle"

[[sweeps]]
name = "dirty"
dirty_values = [0.0, 0.5]

[[sweeps]]
name = "expiry"
session_expires_after = [1]
"""


def test_setting_recipes_of_the_new_axes() -> None:
    env_kwargs, wrappers = setting_recipe({"unavailable_p": 0.2, "request_limit": 5, "max_turns": 9})
    assert env_kwargs == {}
    assert wrappers == [
        {"name": "ApiFaults", "kwargs": {"request_limit": 5, "unavailable_p": 0.2}},
        {"name": "TurnLimit", "kwargs": {"max_turns": 9}},
    ]
    assert setting_perturbations({"schema_drift": 0.1, "dirty_values": 0.3}) == [
        {"kind": "schema_drift", "strength": 0.1, "seed": 0},
        {"kind": "dirty_values", "strength": 0.3, "seed": 0},
    ]


def test_a_perturbed_cell_plays_the_perturbed_org_and_its_carried_tasks(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(tmp_path / "cache"))
    spec_dir = tmp_path / "spec"
    spec_dir.mkdir()
    save_tasks(nine_tasks, spec_dir / "tasks.json")
    (spec_dir / "spec.toml").write_text(SPEC.format(org=env_org))
    out = tmp_path / "out"
    assert main(["experiment", str(spec_dir / "spec.toml"), "--out", str(out)]) == 0
    state = json.loads((out / "experiment.json").read_text())
    cells = {(c["sweep"], c["policy"], c["label"]): c for c in state["cells"]}
    dirty = cells[("dirty", "reactive", "dirty_values=0.5")]
    assert dirty["status"] == "done"
    perturbed = dirty["perturbed"]
    manifest = read_manifest(perturbed["org"])
    assert manifest.base_content_hash == read_manifest(env_org).content_hash
    assert manifest.perturbations[0]["kind"] == "dirty_values" and manifest.perturbations[0]["strength"] == 0.5
    carried = load_tasks(perturbed["tasks"])
    assert len(carried) == perturbed["kept"] and perturbed["kept"] + sum(perturbed["dropped"].values()) == 27
    assert dirty["episodes"] == perturbed["kept"]
    metadata = json.loads((out / dirty["path"] / "metadata.json").read_text())
    assert Path(perturbed["org"]).name in json.dumps(metadata["org"])  # the run records the org it played
    assert "perturbed" not in cells[("dirty", "reactive", "dirty_values=0.0")]
    # The reactive oracle re-issues a request refused by an expired session: it loses nothing.
    expiry = cells[("expiry", "reactive", "expiry=1")]
    assert expiry["accuracy"] == cells[("dirty", "reactive", "dirty_values=0.0")]["accuracy"] == 1.0
    records = read_results(out / expiry["path"] / "results.jsonl")
    assert len(records) == 27
    report = (out / "report.md").read_text()
    assert "perturbed org: dirty_values=0.5 (seed 0); task set kept" in report
    assert (out / "plots" / "dirty.png").is_file()


def test_the_reactive_oracle_gives_up_at_the_request_limit(env_org: Path, nine_tasks: list[TaskInstance]) -> None:
    made = gym.make("CRMArena-v0", org=env_org, tasks=nine_tasks, toolset="functions", privileged=True)
    env = ApiFaults(made, request_limit=1)
    policy = ReactiveOraclePolicy()
    policy.attach(env)
    inst = next(t for t in nine_tasks if t.abbrev == "TII" and t.answer is not None)
    observation, info = env.reset(options={"idx": inst.idx})
    policy.reset(observation, info)
    notes, done, steps = [], False, 0
    while not done and steps < 20:
        observation, _, done, _, info = env.step(policy.act(observation))
        notes.append(policy.step_details().get("note"))
        steps += 1
    assert done and info["submitted"] == "None"
    assert any(n and "request limit" in n for n in notes)


def test_the_example_robustness_spec_loads() -> None:
    spec = load_experiment(Path(__file__).resolve().parents[2] / "examples" / "robustness.toml")
    assert [p.name for p in spec.policies] == ["oracle", "reactive-oracle", "random"]
    swept = {axis for s in spec.sweeps for axis, v in s.model_dump().items() if v is not None and axis != "name"}
    axes = {"schema_drift", "distractors", "dirty_values", "knowledge_drift", "unavailable_p", "session_expires_after"}
    assert axes <= swept


def test_gym_make_plays_the_perturbed_org_and_records_it(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    from crmarena_gym.eval import evaluate
    from crmarena_gym.tasks import recompute_tasks

    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(tmp_path / "cache"))
    spec = "schema_drift=0.5 dirty_values=0.5"
    env = gym.make("CRMArena-v0", org=env_org, tasks=nine_tasks, toolset="functions", perturbations=spec)
    record = env.unwrapped.perturbation
    assert [(p["kind"], p["strength"], p["seed"]) for p in record["perturbations"]] == [
        ("schema_drift", 0.5, 0),
        ("dirty_values", 0.5, 0),
    ]
    manifest = read_manifest(record["org"])
    assert manifest.base_content_hash == read_manifest(env_org).content_hash
    assert [p["kind"] for p in manifest.perturbations] == ["schema_drift", "dirty_values"]
    carried = recompute_tasks(nine_tasks, env_org, record["org"])  # the same instances, the same gold
    assert [(i.idx, i.answer) for i in env.unwrapped.instances] == [(i.idx, i.answer) for i in carried.kept]
    assert record["kept"] == len(carried.kept) and record["dropped"] == carried.dropped
    assert record["kept"] + sum(record["dropped"].values()) == len(nine_tasks)
    assert env.unwrapped.metadata["perturbations"] == record
    _, info = env.reset(seed=0)
    assert info["perturbations"] == record
    from crmarena_gym.org import LocalOrg
    from crmarena_gym.schema import schema_text

    assert info["schema"] == LocalOrg(record["org"]).schema.text() != schema_text()  # the drifted names shown
    # The same perturbations as a mapping give the same org; the run records what it played.
    same = gym.make(
        "CRMArena-v0", org=env_org, tasks=nine_tasks, perturbations={"schema_drift": 0.5, "dirty_values": 0.5}
    )
    assert same.unwrapped.perturbation == record
    run = evaluate(
        "oracle",
        env_id="CRMArena-v0",
        org=env_org,
        tasks=nine_tasks,
        env_kwargs={"toolset": "functions", "perturbations": spec},
        per_task=1,
        out=tmp_path / "run",
        progress=False,
    )
    assert run.summary["all"]["accuracy"] == 1.0  # the task functions follow the drift
    metadata = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert metadata["perturbations"] == json.loads(json.dumps(record))
    assert metadata["run"]["env_kwargs"]["perturbations"] == spec


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("chaos=0.3", "unknown perturbation kind 'chaos'"),
        ({"distractors": 3}, "the strength of distractors must be a number in (0, 1], got 3"),
        ("distractors=", "the strength in 'distractors=' is not a number"),
    ],
)
def test_gym_make_refuses_a_bad_perturbation(env_org: Path, nine_tasks: list[TaskInstance], bad, message) -> None:
    import re

    with pytest.raises(ValueError, match=re.escape(message)):
        gym.make("CRMArena-v0", org=env_org, tasks=nine_tasks, perturbations=bad)


def test_the_example_pro_robustness_spec_loads() -> None:
    spec = load_experiment(Path(__file__).resolve().parents[2] / "examples" / "robustness_pro.toml")
    assert spec.env == "CRMArena-Pro-B2B-v0"
    assert [p.name for p in spec.policies] == ["oracle", "reactive-oracle", "random"]
    swept = {axis for s in spec.sweeps for axis, v in s.model_dump().items() if v is not None and axis != "name"}
    assert {"schema_drift", "distractors", "dirty_values", "knowledge_drift"} <= swept


def test_act_mode_under_schema_drift(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The episode's set-up records are written under the drifted names; the oracle's change too."""
    from crmarena_gym.eval import evaluate

    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(tmp_path / "cache"))
    run = evaluate(
        "oracle",
        env_id="CRMArena-NCR-Act-v0",
        org=env_org,
        tasks=nine_tasks,
        env_kwargs={"toolset": "functions", "perturbations": "schema_drift=1.0"},
        limit=3,
        progress=False,
    )
    assert len(run.results) == 3 and run.summary["all"]["accuracy"] == 1.0
