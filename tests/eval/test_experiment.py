"""Experiment sweeps: every cell a run whose figures match its results file, cells a policy cannot play or
lacks a key for said so, a report with its plots, and a killed experiment resumed cell by cell."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crmarena_gym.cli import main
from crmarena_gym.eval import ViewerData, experiment_cells, load_experiment, read_results
from crmarena_gym.tasks import TaskInstance, save_tasks

SPEC = """
name = "test sweep"
env = "CRMArena-v0"
org = "{org}"
tasks = "tasks.json"
trials = 1

[[policies]]
name = "oracle"
spec = "oracle"

[[policies]]
name = "reactive"
spec = "reactive-oracle"

[[policies]]
name = "random"
spec = "random"

[[policies]]
name = "model"
spec = "litellm:gpt-4o"
requires_env = "CRMARENA_TEST_NO_SUCH_KEY"
{sweeps}
"""

SWEEPS = """
[[sweeps]]
name = "dropout"
dropout_p = [0.0, 0.6]
dropout_mode = ["drop", "error"]

[[sweeps]]
name = "removal"
removed_groups = [[], ["dependent_calculation"]]

[[sweeps]]
name = "turns"
max_turns = [2, 20]

[[sweeps]]
name = "toolset"
toolset = ["functions", "soql"]
"""


def _write_spec(directory: Path, org: Path, tasks: list[TaskInstance], sweeps: str = SWEEPS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    chosen = [t for t in tasks if t.abbrev in ("HTU", "BRI")][:4]
    save_tasks(chosen, directory / "tasks.json")
    path = directory / "spec.toml"
    path.write_text(SPEC.format(org=org, sweeps=sweeps))
    return path


def test_every_cell_is_a_run_and_the_report_compares_them(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance], capsys: pytest.CaptureFixture[str]
) -> None:
    spec_path = _write_spec(tmp_path / "spec", env_org, nine_tasks)
    out = tmp_path / "out"
    assert main(["experiment", str(spec_path), "--out", str(out)]) == 0
    state = json.loads((out / "experiment.json").read_text())
    cells = {(c["sweep"], c["policy"], c["label"]): c for c in state["cells"]}
    assert len(cells) == (4 + 2 + 2 + 2) * 4
    for cell in state["cells"]:
        if cell["policy"] == "model":
            assert cell["status"] == "skipped" and "CRMARENA_TEST_NO_SUCH_KEY is not set" in cell["reason"]
            continue
        if cell["sweep"] == "toolset" and cell["label"] == "toolset=soql" and cell["policy"] != "random":
            assert cell["status"] == "not playable" and "toolset" in cell["reason"]
            continue
        assert cell["status"] == "done", cell
        records = read_results(out / cell["path"] / "results.jsonl")
        assert len(records) == 4 and cell["accuracy"] == pytest.approx(sum(r["reward"] for r in records) / 4)
        metadata = json.loads((out / cell["path"] / "metadata.json").read_text())
        layers = [layer["class"].rpartition(":")[2] for layer in metadata["env_stack"]]
        if cell["sweep"] == "dropout":
            assert "ToolResultDropout" in layers
        if cell["sweep"] == "turns":
            assert "TurnLimit" in layers
    # Hand-known values: the oracles are perfect without faults, the replaying one whatever is dropped.
    assert cells[("dropout", "oracle", "p=0.6,mode=drop")]["accuracy"] == 1.0
    assert cells[("dropout", "reactive", "p=0.0,mode=error")]["accuracy"] == 1.0
    assert cells[("turns", "reactive", "turns=20")]["accuracy"] == 1.0
    report = (out / "report.html").read_text()
    for sweep in ("dropout", "removal", "turns", "toolset"):
        assert f'src="plots/{sweep}.png"' in report
        assert (out / "plots" / f"{sweep}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "95% interval" in report and "skipped: CRMARENA_TEST_NO_SUCH_KEY is not set" in report
    assert "| p=0.6,mode=drop | oracle | done | 4 | 1.000 | [1.000, 1.000] |" in (out / "report.md").read_text()
    capsys.readouterr()

    # The viewer opens every cell of the experiment at once.
    runs = {r["id"]: r for r in ViewerData([out]).api("/api/runs")["runs"]}
    assert len(runs) == sum(c["status"] == "done" for c in state["cells"])
    assert runs["dropout.oracle.p-0.6-mode-drop"]["accuracy"] == 1.0

    # The same experiment again plays nothing; another spec in the same directory is refused.
    assert main(["experiment", str(spec_path), "--out", str(out)]) == 0
    assert "0 new" in capsys.readouterr().err
    other = _write_spec(tmp_path / "other", env_org, nine_tasks, sweeps=SWEEPS.replace("0.6", "0.7"))
    assert main(["experiment", str(other), "--out", str(out)]) == 2
    assert "holds an experiment of another spec (it differs in sweeps, tasks)" in capsys.readouterr().err


def test_a_bad_spec_says_what_is_wrong(tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]) -> None:
    typo = _write_spec(tmp_path, env_org, nine_tasks, sweeps='[[sweeps]]\nname = "x"\ndropout_prob = [0.1]\n')
    with pytest.raises(ValueError, match=r"sweeps\.0\.dropout_prob: Extra inputs are not permitted"):
        load_experiment(typo)
    bad = typo.read_text().replace("dropout_prob = [0.1]", 'dropout_p = [1.5]\nremoved_groups = [["queries"]]')
    typo.write_text(bad)
    with pytest.raises(ValueError, match=r"dropout_p\.0: Input should be less than or equal to 1 \(got 1\.5\)") as err:
        load_experiment(typo)
    assert "unknown ablation groups ['queries']" in str(err.value)
    typo.write_text("name = [unclosed")
    with pytest.raises(ValueError, match="is not valid TOML"):
        load_experiment(typo)
    spec = _write_spec(tmp_path, env_org, nine_tasks)
    assert len(experiment_cells(load_experiment(spec))) == 40


def test_a_killed_experiment_resumes_every_cell(tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]) -> None:
    sweeps = '[[sweeps]]\nname = "dropout"\ndropout_p = [0.0, 0.2, 0.4, 0.6, 0.8]\ndropout_mode = ["drop", "error"]\n'
    spec_path = _write_spec(tmp_path / "spec", env_org, nine_tasks, sweeps=sweeps)
    out = tmp_path / "out"
    main_code = "from crmarena_gym.cli import main; raise SystemExit(main())"
    command = [sys.executable, "-c", main_code, "experiment", str(spec_path), "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # kill it once some cells are done, in the middle of the others
        state = out / "experiment.json"
        if state.is_file() and len(json.loads(state.read_text())["cells"]) >= 6:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    before = {p.parent: len(read_results(p)) for p in out.glob("cells/*/*/*/results.jsonl")}  # a torn line left out
    assert before and len(json.loads((out / "experiment.json").read_text())["cells"]) < 40

    assert main(["experiment", str(spec_path), "--out", str(out)]) == 0
    state = json.loads((out / "experiment.json").read_text())
    done = [c for c in state["cells"] if c["status"] == "done"]
    assert len(done) == 30  # 10 settings x the three policies that run; the model is skipped
    for cell in done:
        directory = out / cell["path"]
        records = read_results(directory / "results.jsonl")
        assert sorted((r["idx"], r["trial"]) for r in records) == sorted({(r["idx"], r["trial"]) for r in records})
        assert len(records) == 4  # every episode exactly once
        assert cell["new"] == 4 - before.get(directory, 0)  # only what the killed run had not written


def test_the_example_spec_is_the_papers_ablation_design() -> None:
    from crmarena_gym.tools import ABLATION_GROUPS

    spec = load_experiment(Path(__file__).resolve().parents[2] / "examples" / "ablation.toml")
    assert [p.spec for p in spec.policies][:3] == ["oracle", "reactive-oracle", "random"]
    sweeps = {s.name: s for s in spec.sweeps}
    assert sweeps["removal"].removed_groups == [[], *([g] for g in ABLATION_GROUPS)]  # one group at a time
    assert set(sweeps["dropout"].dropout_mode or []) == {"drop", "error", "truncate", "corrupt"}
    assert max(sweeps["turns"].max_turns or []) == 20  # up to the paper's budget


def test_a_cell_stopped_by_a_missing_key_is_replayed_once_it_is_set(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CRMARENA_TEST_KEY", raising=False)
    sweeps = '[[sweeps]]\nname = "turns"\nmax_turns = [5, 10]\n'
    spec_text = _write_spec(tmp_path, env_org, nine_tasks, sweeps=sweeps).read_text()
    policy = '[[policies]]\nname = "keyed"\nspec = "python:tests.eval.viewer_runs:NeedsKey"\n'
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text.split("[[policies]]")[0] + policy + sweeps)
    out = tmp_path / "out"
    assert main(["experiment", str(spec), "--out", str(out)]) == 1  # a cell stopped: say so by the exit code
    cells = json.loads((out / "experiment.json").read_text())["cells"]
    assert [c["status"] for c in cells] == ["stopped", "skipped"]
    assert "CRMARENA_TEST_KEY is not set" in cells[0]["reason"] and "stopped" in cells[1]["reason"]
    monkeypatch.setenv("CRMARENA_TEST_KEY", "set")
    assert main(["experiment", str(spec), "--out", str(out)]) == 0
    cells = json.loads((out / "experiment.json").read_text())["cells"]
    assert [c["status"] for c in cells] == ["done", "done"]
    for cell in cells:
        records = read_results(out / cell["path"] / "results.jsonl")
        assert len(records) == 4 and all(r["end_reason"] == "submitted" for r in records)


def test_a_sweep_over_answer_modes_plays_the_act_mode_id(
    tmp_path: Path, env_org: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from crmarena_gym.tasks import generate_tasks

    tasks = generate_tasks(env_org, seed=11, per_task=3, tasks=["NCR"])
    save_tasks(tasks, tmp_path / "ncr.json")
    spec = tmp_path / "modes.toml"
    spec.write_text(
        f'env = "CRMArena-NCR-v0"\norg = "{env_org}"\ntasks = "ncr.json"\n'
        '[[policies]]\nname = "oracle"\nspec = "oracle"\n'
        '[[sweeps]]\nname = "mode"\nanswer_mode = ["name", "act"]\ntoolset = ["flex"]\n'
    )
    out = tmp_path / "out"
    assert main(["experiment", str(spec), "--out", str(out)]) == 0
    cells = {c["label"]: c for c in json.loads((out / "experiment.json").read_text())["cells"]}
    assert {c["status"] for c in cells.values()} == {"done"}
    assert cells["toolset=flex,answer=act"]["accuracy"] == 1.0
    acted = read_results(out / cells["toolset=flex,answer=act"]["path"] / "results.jsonl")
    named = read_results(out / cells["toolset=flex,answer=name"]["path"] / "results.jsonl")
    assert {r["submitted"] for r in acted} == {"done"} and {r["reward_breakdown"]["metric"] for r in acted} == {
        "state_diff"
    }
    # The named answers are the owners the act-mode episodes set.
    final = [r["trajectory"][-1]["state_diff"] for r in acted]  # the last step: the diff and its check
    owners = [d[0]["fields"]["OwnerId"]["new"] for d in final]
    assert owners == [r["submitted"] for r in named]
    capsys.readouterr()
    # An env without an act mode is refused with the spec.
    spec.write_text(spec.read_text().replace("CRMArena-NCR-v0", "CRMArena-HTU-v0"))
    with pytest.raises(ValueError, match="'CRMArena-HTU-v0' has no act mode"):
        load_experiment(spec)


def test_a_sweep_over_users_plays_the_conversation_id(
    tmp_path: Path, env_org: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from crmarena_gym.tasks import generate_tasks

    tasks = generate_tasks(env_org, seed=11, per_task=3, tasks=["HTU", "PVI"])
    save_tasks(tasks, tmp_path / "two.json")
    spec = tmp_path / "users.toml"
    spec.write_text(
        f'env = "CRMArena-v0"\norg = "{env_org}"\ntasks = "two.json"\n'
        '[[policies]]\nname = "oracle"\nspec = "reactive-oracle"\n'
        '[[sweeps]]\nname = "users"\nuser = ["none", "scripted"]\ntoolset = ["functions"]\n'
    )
    out = tmp_path / "out"
    assert main(["experiment", str(spec), "--out", str(out)]) == 0
    cells = {c["label"]: c for c in json.loads((out / "experiment.json").read_text())["cells"]}
    assert {c["status"] for c in cells.values()} == {"done"}
    assert [c["accuracy"] for c in cells.values()] == [1.0, 1.0]
    single = read_results(out / cells["toolset=functions,user=none"]["path"] / "results.jsonl")
    talked = read_results(out / cells["toolset=functions,user=scripted"]["path"] / "results.jsonl")
    assert all("conversation" not in r for r in single)
    assert {r["conversation"]["end"] for r in talked} == {"user_stop"}
    assert {tuple(r["conversation"]["revealed"]) for r in talked} == {("window", "direction", "n_cases"), ("case",)}
    capsys.readouterr()
    spec.write_text(spec.read_text().replace('"scripted"]', '"gpt-4o"]'))
    with pytest.raises(ValueError, match="unknown user 'gpt-4o'"):
        load_experiment(spec)
