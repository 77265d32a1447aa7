"""The command line's traps: choosing instances, task sets made for another org, instances the policy
cannot play, a closed pipe, and report files in formats that are not written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from crmarena_gym.cli._main import build_parser, main
from crmarena_gym.eval import read_results
from crmarena_gym.tasks import TaskInstance, save_tasks


@pytest.fixture(scope="module")
def nine_file(tmp_path_factory: pytest.TempPathFactory, env_org: Path) -> tuple[Path, list[TaskInstance]]:
    from crmarena_gym.tasks import generate_tasks

    tasks = generate_tasks(env_org, seed=11, per_task=3)
    path = tmp_path_factory.mktemp("traps") / "tasks.jsonl"
    save_tasks(tasks, path)
    return path, tasks


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_task_idx_and_per_task_choose_the_instances(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, env_org: Path, nine_file: tuple[Path, list[TaskInstance]]
) -> None:
    path, tasks = nine_file
    base = ["eval", "--tasks", str(path), "--org", str(env_org), "--policy", "oracle", "--no-progress"]
    out = tmp_path / "a"
    code, _, err = _run(capsys, *base, "--task", "NCR", "--task", "kqa", "--per-task", "2", "--out", str(out))
    assert code == 0, err
    ncr = [t.idx for t in tasks if t.abbrev == "NCR"][:2]
    kqa = [t.idx for t in tasks if t.abbrev == "KQA"][:2]
    assert sorted(r["idx"] for r in read_results(out / "results.jsonl")) == sorted(ncr + kqa)

    out = tmp_path / "b"
    picked = [tasks[4].idx, tasks[20].idx]
    code, _, err = _run(capsys, *base, "--idx", str(picked[0]), "--idx", str(picked[1]), "--out", str(out))
    assert code == 0, err
    assert sorted(r["idx"] for r in read_results(out / "results.jsonl")) == sorted(picked)

    code, _, err = _run(capsys, *base, "--idx", "99999")
    assert code == 2 and "idx 99999" in err


def test_the_env_flag_says_what_happens_without_it() -> None:
    parser = build_parser()
    eval_parser = parser._subparsers._group_actions[0].choices["eval"]  # type: ignore[union-attr]
    (env_action,) = [a for a in eval_parser._actions if "--env" in a.option_strings]
    assert env_action.default is None
    assert "default CRMArena-v0, all nine tasks" in (env_action.help or "")


def test_eval_without_env_plays_all_nine_tasks(capsys: pytest.CaptureFixture[str], env_org: Path) -> None:
    # The README's fault-injection command gives no --env: it runs under CRMArena-v0.
    wrapper = 'ToolResultDropout:{"p": 0.3, "mode": "error"}'
    argv = ["eval", "--org", str(env_org), "--policy", "reactive-oracle", "--wrapper", wrapper, "--per-task", "1"]
    code, out, err = _run(capsys, *argv, "--no-progress")
    assert code == 0, err
    rows = [line.split()[0] for line in out.splitlines()[1:]]
    assert rows == ["KQA", "MTA", "TII", "NCR", "NED", "HTU", "TCU", "PVI", "BRI", "all"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["eval", "--policy", "reactiv-oracle"],
            "unknown policy spec 'reactiv-oracle' (did you mean 'reactive-oracle'?)",
        ),
        (["eval", "--policy", "litelm:gpt-4o"], "(did you mean 'litellm:...'?)"),
    ],
)
def test_a_near_miss_is_named(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, _, err = _run(capsys, *argv)
    assert code == 2 and message in err


@pytest.mark.parametrize("command", ["view", "report"])
def test_view_and_report_refuse_a_directory_that_does_not_exist(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    # report said "'runs/oracel' is not a run directory: it has no results.jsonl", naming no near miss.
    (tmp_path / "runs" / "oracle").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    port = ["--port", "0"] if command == "view" else []
    code, out, err = _run(capsys, command, "runs/oracle", "runs/oracel", *port)
    assert code == 2 and not out  # refused before serving or writing
    assert err == f"crmarena-gym {command}: 'runs/oracel' does not exist (did you mean 'runs/oracle'?)\n"


def test_experiment_refuses_a_misspelt_policy_before_any_cell(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(
        'name = "x"\nenv = "CRMArena-v0"\nper_task = 1\n[[policies]]\nname = "o"\nspec = "oracel"\n'
        '[[sweeps]]\nname = "turns"\nmax_turns = [4]\n'
    )
    code, _, err = _run(capsys, "experiment", str(spec), "--out", str(tmp_path / "exp"))
    assert code == 2 and "unknown policy spec 'oracel' (did you mean 'oracle'?)" in err
    assert not (tmp_path / "exp" / "cells").exists()


def test_a_task_file_made_for_another_org_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, shared_dir: Path, env_org: Path
) -> None:
    original = shared_dir / "tasks_original.json"
    answers = {t["idx"]: t["answer"] for t in json.loads(original.read_text())}
    base = ["eval", "--tasks", str(original), "--org", str(env_org), "--no-progress"]
    code, _, err = _run(capsys, *base, "--policy", "random", "--out", str(tmp_path / "x"))
    assert code == 2
    assert "was made for another org" in err and "--allow-foreign-tasks" in err
    shown = err.split("(idx ", 1)[1].split(",")[0]  # "390: 005Ws..."
    idx, rid = shown.split(": ")
    assert answers[int(idx)] == rid
    assert not (tmp_path / "x" / "results.jsonl").exists()

    out = tmp_path / "y"
    code, _, err = _run(
        capsys, *base, "--policy", "random", "--task", "NCR", "--limit", "2", "--allow-foreign-tasks", "--out", str(out)
    )
    assert code == 0, err
    assert len(read_results(out / "results.jsonl")) == 2


def test_the_oracle_refuses_instances_it_cannot_solve_before_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, env_org: Path, nine_file: tuple[Path, list[TaskInstance]]
) -> None:
    _, tasks = nine_file
    published = [t.model_copy(update={"params": {}}) if t.abbrev == "TCU" else t for t in tasks]
    path = tmp_path / "published.jsonl"
    save_tasks(published, path)
    out = tmp_path / "run"
    base = ["eval", "--tasks", str(path), "--org", str(env_org), "--policy", "oracle", "--no-progress"]
    code, _, err = _run(capsys, *base, "--out", str(out))
    tcu = [t.idx for t in tasks if t.abbrev == "TCU"]
    assert code == 2
    assert f"cannot play {len(tcu)} of the {len(tasks)} instances (idx {', '.join(map(str, tcu))})" in err
    assert "no hidden parameters" in err
    assert not (out / "results.jsonl").exists() or not (out / "results.jsonl").read_text()
    code, _, err = _run(capsys, *base, "--task", "HTU", "--out", str(out))
    assert code == 0, err


def test_a_closed_pipe_ends_the_listing_quietly(shared_dir: Path) -> None:
    command = [sys.executable, "-c", "from crmarena_gym.cli import main; raise SystemExit(main())"]
    command += ["tasks", "list", "--source", str(shared_dir / "tasks_original.json")]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does once it has its line
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    assert first.strip()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert code == 141


@pytest.mark.parametrize(
    ("name", "fmt", "message"), [("r.pdf", None, "must end in .md or .html"), ("r.md", "html", "does not match")]
)
def test_report_refuses_formats_it_does_not_write(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    env_org: Path,
    nine_file: tuple[Path, list[TaskInstance]],
    name: str,
    fmt: str | None,
    message: str,
) -> None:
    path, _ = nine_file
    run = tmp_path / "run"
    assert (
        _run(
            capsys,
            "eval",
            "--tasks",
            str(path),
            "--org",
            str(env_org),
            "--policy",
            "oracle",
            "--limit",
            "1",
            "--no-progress",
            "--out",
            str(run),
        )[0]
        == 0
    )
    argv = ["report", str(run), "--out", str(tmp_path / name)] + (["--format", fmt] if fmt else [])
    code, _, err = _run(capsys, *argv)
    assert code == 2 and message in err and name in err
    assert not (tmp_path / name).exists()
    code, _, err = _run(capsys, "report", str(run), "--out", str(tmp_path / "r.html"))
    assert code == 0 and (tmp_path / "r.html").read_text().lstrip().lower().startswith("<!doctype html")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--per-task", "0"], "argument --per-task: must be at least 1, got 0"),
        (["--trials", "x"], "argument --trials: must be a whole number, got 'x'"),
        (["--resume"], "--resume finishes the run in --out DIR; give --out"),
        (["--retry-errors", "--out", "r"], "--retry-errors replays an existing run's failed episodes: add --resume"),
        (["--task", "NRC"], "unknown task 'NRC' (did you mean 'NCR'?)"),
    ],
)
def test_eval_speaks_in_flags_not_python_arguments(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    try:
        code = main(["eval", "--policy", "oracle", *argv])
    except SystemExit as stop:  # argparse refuses a bad value itself
        code = stop.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert code == 2 and message in err
    assert "per_task" not in err and "resume=True" not in err


def test_the_command_keeps_its_import_time_objects_out_of_the_collector_and_callers_their_own(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import gc

    before = gc.get_freeze_count()
    assert main([]) == 2  # called with arguments (as here): the caller's collector left as it is
    assert gc.get_freeze_count() == before
    monkeypatch.setattr(sys, "argv", ["crmarena-gym"])
    try:
        assert main() == 2  # the command itself
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()
    assert "usage: crmarena-gym" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["serve-org", "serve-env", "view"])
def test_a_port_in_use_is_refused_in_one_line_with_what_to_do(
    capsys: pytest.CaptureFixture[str], env_org: Path, tmp_path: Path, command: str
) -> None:
    # serve-org and serve-env exited 1 with no hint where view exited 2 with one: a busy port refuses before anything.
    import socket

    pytest.importorskip({"serve-org": "cryptography", "serve-env": "openenv.core", "view": "json"}[command])
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = str(holder.getsockname()[1])
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("")
    argv = {
        "serve-org": ["serve-org", "--org", str(env_org), "--http", "--cert-dir", str(tmp_path)],
        "serve-env": ["serve-env", "--org", str(env_org), "--per-task", "1"],
        "view": ["view", str(run)],
    }[command]
    try:
        code, _, err = _run(capsys, *argv, "--port", port)
    finally:
        holder.close()
    assert code == 2
    assert err.splitlines()[-1] == (
        f"crmarena-gym {command}: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(choose another port with --port, or --port 0 for a free one)"
    )
