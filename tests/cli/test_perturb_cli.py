"""``crmarena-gym perturb``: a recorded perturbed org, the task set carried to it, bad input refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from crmarena_gym.cli import main
from crmarena_gym.datagen import read_manifest
from crmarena_gym.tasks import TaskInstance, load_tasks, save_tasks


def test_perturb_writes_the_org_and_carries_the_tasks(
    tmp_path: Path, env_org: Path, env_tasks: list[TaskInstance], capsys: pytest.CaptureFixture[str]
) -> None:
    save_tasks(env_tasks, tmp_path / "tasks.jsonl")
    # Directories that do not exist yet are made, as generate makes them (SQLite said only "unable to open").
    out, carried = tmp_path / "orgs" / "p.sqlite", tmp_path / "sets" / "carried.jsonl"
    args = ["perturb", "dirty_values=0.5", "distractors=0.2", "--seed", "7", "--org", str(env_org)]
    args += ["--out", str(out), "--tasks", str(tmp_path / "tasks.jsonl"), "--tasks-out", str(carried)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    kinds = [(p["kind"], p["strength"], p["seed"]) for p in read_manifest(out).perturbations]
    assert kinds == [("dirty_values", 0.5, 7), ("distractors", 0.2, 7)]
    kept = load_tasks(carried)
    dropped = len(env_tasks) - len(kept)
    assert f"{len(kept)} of {len(env_tasks)} instances kept" in printed
    assert (dropped == 0) == ("dropped: none" in printed)
    # Every kept BRI instance's gold is the state with the shortest mean closure on the perturbed org.
    conn = sqlite3.connect(out)
    for inst in (t for t in kept if t.abbrev == "BRI" and t.answer is not None):
        rows = conn.execute(
            "SELECT a.ShippingState, "
            "AVG(julianday(substr(c.ClosedDate, 1, 19)) - julianday(substr(c.CreatedDate, 1, 19))) "
            'FROM "Case" c JOIN Account a ON a.Id = c.AccountId WHERE c.CreatedDate >= ? AND c.CreatedDate < ? '
            "AND c.ClosedDate IS NOT NULL AND a.ShippingState IS NOT NULL GROUP BY 1 ORDER BY 2 LIMIT 1",
            (inst.params["start"], inst.params["end"]),
        ).fetchone()
        assert rows[0] == inst.answer
    assert main(args) == 2  # the file exists
    assert "pass --force" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("chaos=0.3", "unknown perturbation kind 'chaos'; the kinds are schema_drift,"),
        ("schema_drif=0.3", "unknown perturbation kind 'schema_drif' (did you mean 'schema_drift'?); the kinds"),
        ("Distractors=0.3", "unknown perturbation kind 'Distractors' (did you mean 'distractors'?)"),
        ("distractors=1.5", "must be a number in (0, 1], got 1.5"),
        ("distractors", "KIND=STRENGTH"),
        ("distractors=lots", "'distractors=lots' is not a number"),
    ],
)
def test_perturb_refuses_bad_input(
    tmp_path: Path, env_org: Path, spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["perturb", spec, "--org", str(env_org), "--out", str(tmp_path / "x.sqlite")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.sqlite").exists()
