"""``crmarena-gym tasks list`` and ``crmarena-gym tasks show``: tables, full instances, sources and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crmarena_gym.cli._main import main
from crmarena_gym.datagen import generate_org
from crmarena_gym.tasks import generate_tasks

MARKER = "=== HIDDEN FROM AGENTS: the gold answer and the hidden parameters ==="


@pytest.fixture(scope="module")
def org_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "org.sqlite"
    generate_org(path, seed=0, scale=1.0)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["tasks", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _rows(out: str) -> list[list[str]]:
    lines = out.splitlines()
    assert lines[0].split() == ["idx", "task", "answer", "query"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    return [line.split(None, 3) for line in lines[2:-1]]


def test_list_the_original_file_by_task(capsys: pytest.CaptureFixture[str], shared_dir: Path) -> None:
    source = shared_dir / "tasks_original.json"
    records = {r["idx"]: r for r in json.loads(source.read_text())}
    code, out, err = _run(capsys, "list", "--source", str(source), "--task", "PVI")
    assert code == 0 and not err
    rows = _rows(out)
    assert [int(r[0]) for r in rows] == list(range(910, 1040))
    for idx, task, answer, query in rows:
        assert task == "PVI"
        assert answer == (records[int(idx)]["answer"] or "None")
        assert " ".join(records[int(idx)]["query"].split()).startswith(query.rstrip("…"))
    assert out.splitlines()[-1] == f"130 instances (39 unanswerable) from {source}"


def test_show_an_original_instance(capsys: pytest.CaptureFixture[str], shared_dir: Path) -> None:
    source = shared_dir / "tasks_original.json"
    record = next(r for r in json.loads(source.read_text()) if r["idx"] == 911)
    code, out, _ = _run(capsys, "show", "911", "--source", str(source))
    assert code == 0
    shown, hidden = out.split(MARKER)
    assert record["query"] in shown and record["metadata"]["required"].rstrip("\n") in shown
    assert record["answer"] not in shown  # the gold is only below the marker
    assert f"answer: {record['answer']}" in hidden and "params: (none)" in hidden


def test_list_and_show_the_default_set_of_an_org(
    capsys: pytest.CaptureFixture[str], org_path: Path, tmp_path: Path
) -> None:
    expected = generate_tasks(org_path, seed=0)
    code, out, _ = _run(capsys, "list", "--org", str(org_path))
    assert code == 0
    rows = _rows(out)
    assert [int(r[0]) for r in rows] == [i.idx for i in expected] == list(range(1170))
    assert [r[2] for r in rows if r[1] == "HTU"] == [i.answer or "None" for i in expected if i.abbrev == "HTU"]
    assert "1170 instances (195 unanswerable)" in out.splitlines()[-1]
    code, out, _ = _run(capsys, "list", "--org", str(org_path), "--task", "case_routing")
    assert {r[1] for r in _rows(out)} == {"NCR"} and len(_rows(out)) == 130

    inst = next(i for i in expected if i.abbrev == "NED")
    code, out, _ = _run(capsys, "show", str(inst.idx), "--org", str(org_path))
    assert code == 0
    shown, hidden = out.split(MARKER)
    assert inst.query in shown and inst.metadata.required in shown
    assert "described_product_id" not in shown and "described_product_id" in hidden
    assert json.loads(hidden.split("params: ", 1)[1]) == inst.params
    code, out, _ = _run(capsys, "show", str(inst.idx), "--org", str(org_path), "--json")
    assert json.loads(out) == inst.model_dump()

    code, out, _ = _run(capsys, "list", "--org", str(org_path), "--seed", "4", "--per-task", "12", "--task", "TCU")
    assert [r[2] for r in _rows(out)] == [
        i.answer or "None" for i in generate_tasks(org_path, seed=4, per_task=12, tasks=["TCU"])
    ]


def test_the_default_source_is_the_embedded_org(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(tmp_path))
    code, out, _ = _run(capsys, "list", "--task", "KQA")
    assert code == 0 and len(_rows(out)) == 130
    assert "from the default task set of the embedded org (seed 0, 130 per task, discriminating distribution)" in out
    assert len(list(tmp_path.glob("*.sqlite"))) == 1 and len(list(tmp_path.glob("*.tasks-*.jsonl"))) == 1


def test_errors_are_reported_with_exit_codes(
    capsys: pytest.CaptureFixture[str], org_path: Path, tmp_path: Path
) -> None:
    code, _, err = _run(capsys, "show", "5000", "--org", str(org_path))
    assert code == 2 and "no instance has idx 5000" in err and "idx runs from 0 to 1169" in err
    code, _, err = _run(capsys, "list", "--org", str(org_path), "--task", "XYZ")
    assert code == 2 and "unknown task 'XYZ'" in err
    code, _, err = _run(capsys, "list", "--source", str(tmp_path / "missing.json"))
    assert code == 2 and "no task file at" in err
    (tmp_path / "bad.jsonl").write_text('{"idx": 0, "task": "nope", "query": "q", "answer": null}\n')
    code, _, err = _run(capsys, "list", "--source", str(tmp_path / "bad.jsonl"))
    assert code == 2 and "unknown task 'nope'" in err
    code, _, err = _run(capsys, "list", "--source", str(tmp_path / "bad.jsonl"), "--seed", "3")
    assert code == 2 and "do not apply to --source" in err
    code, _, err = _run(capsys, "list", "--org", str(tmp_path / "missing.sqlite"))
    assert code == 2 and "no org database at" in err
    code, _, err = _run(capsys)
    assert code == 2 and "list" in err and "show" in err
    with pytest.raises(SystemExit) as exc:
        main(["tasks", "list", "--source", "a.json", "--org", "b.sqlite"])
    assert exc.value.code == 2


def test_summary_reports_the_rule_per_family_for_each_distribution(
    capsys: pytest.CaptureFixture[str], org_path: Path
) -> None:
    code, out, err = _run(capsys, "summary", "--org", str(org_path), "--per-task", "20", "--json")
    assert code == 0 and not err
    rows = {row["task"]: row for row in json.loads(out)}
    assert list(rows) == ["KQA", "MTA", "TII", "NCR", "NED", "HTU", "TCU", "PVI", "BRI"]
    for abbrev in ("MTA", "TII", "NCR", "NED", "HTU", "TCU", "BRI"):
        assert rows[abbrev]["measured"] == rows[abbrev]["meets_rule"] == 20
    assert min(rows["MTA"]["competitors"]) >= 2
    # The legacy distribution is the one issue 31 measured: most trend windows hold one month's cases.
    code, out, _ = _run(
        capsys, "summary", "--org", str(org_path), "--per-task", "20", "--distribution", "legacy", "--json"
    )
    legacy = {row["task"]: row for row in json.loads(out)}
    assert code == 0 and legacy["MTA"]["meets_rule"] == sum(c >= 2 for c in legacy["MTA"]["competitors"]) < 10
    code, out, _ = _run(capsys, "summary", "--org", str(org_path), "--per-task", "20")
    table = out.splitlines()
    assert table[0].split()[:4] == ["task", "instances", "None", "rate"]
    assert next(line for line in table if line.startswith("MTA")).split()[-1] == "20/20"
    assert "KQA, PVI: competition not counted" in out
    assert out.splitlines()[-1].endswith("(seed 0, 20 per task, discriminating distribution)")


def test_summary_of_a_file_made_for_another_org_says_so(
    capsys: pytest.CaptureFixture[str], org_path: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.sqlite"
    generate_org(other, seed=6, scale=0.5)
    source = tmp_path / "set.jsonl"
    from crmarena_gym.tasks import save_tasks

    save_tasks(generate_tasks(other, seed=1, per_task=3, tasks=["TII", "HTU"]), source)
    code, out, _ = _run(capsys, "summary", "--source", str(source), "--org", str(org_path))
    assert code == 0
    for abbrev in ("TII", "HTU"):
        line = next(line for line in out.splitlines() if line.startswith(f"{abbrev}: competition not counted"))
        assert line.endswith("gold is not what this org gives (made for another org, or edited)")
    code, _, err = _run(capsys, "summary", "--source", str(source), "--distribution", "legacy")
    assert code == 2 and "do not apply to --source" in err
    code, _, err = _run(capsys, "summary", "--org", str(tmp_path / "missing.sqlite"))
    assert code == 2 and "missing.sqlite" in err


def test_generate_defaults_to_the_embedded_org_and_writes_where_it_is_told(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, org_path: Path
) -> None:
    # --org was required here alone (every other command defaults to the embedded org); a new directory failed
    # naming a temporary file, and a directory as --out was a traceback.
    cache = tmp_path / "cache"
    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(cache))
    out = tmp_path / "new" / "dir" / "ncr.jsonl"
    code, stdout, err = _run(capsys, "generate", "--task", "NCR", "--per-task", "4", "--seed", "5", "--out", str(out))
    assert code == 0, err
    assert stdout.strip() == f"4 instances (0 with a None gold) written to {out}"
    assert len(list(cache.glob("*.sqlite"))) == 1  # the embedded org, generated into the cache
    written = [json.loads(line) for line in out.read_text().splitlines()]
    # The embedded org is the seed-0, scale-1 org: the same instances as drawn from org_path.
    expected = generate_tasks(org_path, seed=5, per_task=4, tasks=["NCR"])
    assert [(r["idx"], r["answer"]) for r in written] == [(i.idx, i.answer) for i in expected]
    for directory in (str(tmp_path), "/"):
        code, _, err = _run(capsys, "generate", "--task", "NCR", "--per-task", "4", "--out", directory)
        assert code == 2
        assert err == f"crmarena-gym tasks: --out {directory!r} is a directory: name a file such as tasks.jsonl\n"
    # An existing set is kept unless --force says otherwise, as generate and perturb keep an org.
    before = out.read_bytes()
    code, _, err = _run(capsys, "generate", "--task", "NCR", "--per-task", "2", "--out", str(out))
    assert code == 2 and err == f"crmarena-gym tasks: {str(out)!r} already exists; pass --force to overwrite it\n"
    assert out.read_bytes() == before
    code, _, err = _run(capsys, "generate", "--task", "NCR", "--per-task", "2", "--out", str(out), "--force")
    assert code == 0 and len(out.read_text().splitlines()) == 2, err
