"""The command line on CRMArena-Pro orgs: tasks generate/list/summary, eval with the oracle, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crmarena_gym.cli._main import main
from crmarena_gym.tasks import load_tasks
from crmarena_gym.tasks.pro import PRO_CATEGORY_ABBREVS, get_pro_spec, implemented_categories

PRO_FILE = Path(__file__).resolve().parents[2] / ".." / "shared" / "crmarena-pro" / "b2b_tasks.json"


def _some(n: int) -> list[str]:
    names = implemented_categories()
    if not names:
        pytest.skip("no Pro category module in this checkout yet")
    return [get_pro_spec(name).abbrev for name in names[:n]]


def test_tasks_generate_list_and_summary(pro_env_orgs, tmp_path, capsys) -> None:
    abbrevs = _some(2)
    out = tmp_path / "set.jsonl"
    args = ["tasks", "generate", "--org", str(pro_env_orgs["b2c"]), "--out", str(out), "--per-task", "10"]
    assert main([*args, *[a for t in abbrevs for a in ("--task", t)]]) == 0
    instances = load_tasks(out)
    assert len(instances) == 20 and {i.kind for i in instances} == {"b2c"}
    assert {i.abbrev for i in instances} == set(abbrevs)
    capsys.readouterr()
    assert main(["tasks", "summary", "--source", str(out), "--org", str(pro_env_orgs["b2c"]), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    for row in rows:
        spec = get_pro_spec(row["task"])
        assert row["instances"] == 10 and row["unanswerable"] == round(spec.none_rate * 10)


def test_a_set_short_of_instances_is_a_one_line_warning(pro_env_orgs, capsys) -> None:
    # case_routing's distinct questions run out before 120 on a scale-1 org: the set is kept, and said to be short
    # in the command's voice (it was Python's warning, with the library's file, line and source line).
    argv = ["tasks", "summary", "--org", str(pro_env_orgs["b2b"]), "--per-task", "120", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    (row,) = [row for row in json.loads(captured.out) if row["task"] == "NCR"]
    assert 0 < row["instances"] < 120
    lines = captured.err.strip().splitlines()
    assert all(line.startswith("crmarena-gym tasks: warning: could not draw 120 answerable") for line in lines)
    (line,) = [line for line in lines if " case_routing instances " in line]
    assert line.endswith(f"the set has {row['instances']} of them") and ".py:" not in captured.err


def test_tasks_list_on_a_pro_org_names_its_categories_for_an_unknown_task(pro_env_orgs, capsys) -> None:
    # An unknown task on a Pro org was answered with CRMArena's nine tasks as the expected names.
    assert main(["tasks", "list", "--org", str(pro_env_orgs["b2b"]), "--task", "LQX"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("crmarena-gym tasks: unknown CRMArena-Pro category 'LQX' (did you mean 'LQU'?)")
    assert "lead_qualification" in line and "best_region_identification" in line


def test_tasks_generate_names_a_missing_category(pro_env_orgs, tmp_path, capsys) -> None:
    missing = next((a for a in PRO_CATEGORY_ABBREVS if a not in _abbrevs()), None)
    if missing is None:
        pytest.skip("every category has its module")
    code = main(
        ["tasks", "generate", "--org", str(pro_env_orgs["b2b"]), "--out", str(tmp_path / "x.jsonl"), "--task", missing]
    )
    assert code == 2 and "has no generator in this version" in capsys.readouterr().err


def _abbrevs() -> set[str]:
    return {get_pro_spec(n).abbrev for n in implemented_categories()}


@pytest.mark.parametrize("kind", ["b2b", "b2c"])
def test_eval_oracle_scores_one_on_every_implemented_category(pro_env_orgs, tmp_path, kind: str, capsys) -> None:
    _some(1)
    out = tmp_path / f"run-{kind}"
    argv = ["eval", "--env", f"CRMArena-Pro-{kind.upper()}-v0", "--org", str(pro_env_orgs[kind])]
    argv += ["--policy", "oracle", "--per-task", "4", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["abbrev"] for r in records} == _abbrevs()
    assert all(r["reward"] == 1.0 for r in records), [r for r in records if r["reward"] != 1.0][:2]
    capsys.readouterr()
    report = tmp_path / "report.md"
    assert main(["report", str(out), "--out", str(report)]) == 0
    text = report.read_text()
    if {"KQA", "SIM", "PCI", "CCK", "IOD"} & _abbrevs():  # categories with F1 or privacy scores beside accuracy
        assert "CRMArena-Pro scores" in text
    # The viewer's copy builds over the Pro run, and explains each episode's grading.
    from crmarena_gym.eval import export_viewer

    assert export_viewer([out], tmp_path / "viewer").is_file()
    from crmarena_gym.eval._viewer import _explain_reward

    for record in records:
        text = _explain_reward(record)
        if record["reward_breakdown"]["metric"] == "privacy_rejection":
            assert text.startswith("privacy score 1: a refusal")
        elif record["reward_breakdown"]["metric"] == "exact_match":
            assert "equal: reward 1" in text


def test_eval_refuses_pros_file_on_our_org(pro_env_orgs, tmp_path, capsys) -> None:
    if not PRO_FILE.is_file():
        pytest.skip(f"Pro's B2B task file is not at {PRO_FILE}")
    argv = ["eval", "--env", "CRMArena-Pro-B2B-v0", "--org", str(pro_env_orgs["b2b"]), "--tasks", str(PRO_FILE)]
    argv += ["--policy", "random", "--out", str(tmp_path / "run"), "--no-progress", "--limit", "2"]
    assert main(argv) == 2
    assert "was made for another org" in capsys.readouterr().err


def test_a_pro_id_without_an_org_runs_on_the_embedded_org_of_its_kind(pro_env_orgs, monkeypatch) -> None:
    from crmarena_gym.eval import evaluate
    from crmarena_gym.tasks.pro import generate_pro_tasks

    name = implemented_categories()[0] if implemented_categories() else pytest.skip("no Pro category module yet")
    asked: list[str] = []

    def default_org_path(*, kind: str = "service", **_: object) -> Path:
        asked.append(kind)
        return pro_env_orgs["b2c"]

    monkeypatch.setattr("crmarena_gym.org.default_org_path", default_org_path)
    tasks = generate_pro_tasks(pro_env_orgs["b2c"], category=name, seed=4, per_task=2)
    run = evaluate("oracle", env_id="CRMArena-Pro-B2C-v0", tasks=tasks, progress=False)
    assert asked == ["b2c"] and [r["reward"] for r in run.results] == [1.0, 1.0]
