"""``crmarena-gym eval`` and ``crmarena-gym report``: tables, errors, and a run killed by SIGKILL then resumed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crmarena_gym.cli._main import main
from crmarena_gym.eval import read_results
from crmarena_gym.tasks import TaskInstance, save_tasks
from tests.policies.scripted_server import ScriptedServer

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory: pytest.TempPathFactory, env_tasks: list[TaskInstance]) -> Path:
    path = tmp_path_factory.mktemp("eval-cli") / "tasks.jsonl"
    save_tasks(env_tasks, path)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_eval_prints_the_table_and_writes_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tasks_file: Path, env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    out = tmp_path / "run"
    code, stdout, _ = _run(
        capsys,
        "eval",
        "--env",
        "CRMArena-TCU-v0",
        "--tasks",
        str(tasks_file),
        "--org",
        str(env_org),
        "--policy",
        "oracle",
        "--trials",
        "2",
        "--out",
        str(out),
        "--no-progress",
    )
    assert code == 0
    n = sum(i.abbrev == "TCU" for i in env_tasks)
    lines = stdout.splitlines()
    assert lines[0].split() == [
        "task",
        "instances",
        "episodes",
        "accuracy",
        "pass^1",
        "pass^2",
        "turns",
        "tokens",
        "cost/episode",
        "errors",
    ]
    assert lines[1].split()[:6] == ["TCU", str(n), str(2 * n), "1.000", "1.000", "1.000"]
    assert len(read_results(out / "results.jsonl")) == 2 * n
    code, report, _ = _run(capsys, "report", str(out))
    assert code == 0 and "| TCU | 1.000 |" in report


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--env", "CRMArena-v0", "--policy", "gpt-4o"], "unknown policy spec 'gpt-4o'"),
        (["--env", "CRMArena-v0", "--policy", "oracle", "--framework", "react"], "--framework apply to litellm"),
        (["--env", "CRMArena-Nope-v0", "--policy", "oracle"], "unknown environment 'CRMArena-Nope-v0'"),
        (["--env", "CRMArena-v0", "--policy", "litellm:x", "--api-key-env", "NO_SUCH_VAR_42"], "'NO_SUCH_VAR_42'"),
        (
            ["--tasks", "t.jsonl", "--task-distribution", "legacy", "--policy", "oracle"],
            "--task-distribution chooses a generated set; it does not apply to --tasks",
        ),
    ],
)
def test_eval_errors_are_one_clear_line(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, _, err = _run(capsys, "eval", *argv)
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("env_id", "hint"),
    [
        ("CRMArena-NRC-v0", " (did you mean 'CRMArena-NCR-v0'?)"),  # two letters swapped
        ("crmarena-ncr-v0", " (did you mean 'CRMArena-NCR-v0'?)"),  # gymnasium's ids are case-sensitive
        ("CRMArena-Pro-B2B-LQX-v0", " (did you mean 'CRMArena-Pro-B2B-LQU-v0'?)"),
        ("CRMArena-Interactiv-v0", " (did you mean 'CRMArena-Interactive-v0'?)"),
        ("CRMArena-Nope-v0", ";"),  # three typos from CRMArena-NED-v0: no guess
        ("CartPole-v1", ";"),  # registered, but not ours
    ],
)
def test_a_misspelt_env_id_names_its_near_miss(capsys: pytest.CaptureFixture[str], env_id: str, hint: str) -> None:
    code, _, err = _run(capsys, "eval", "--env", env_id, "--policy", "oracle")
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"crmarena-gym eval: unknown environment {env_id!r}{hint}"), err
    assert len(err.strip().splitlines()) == 1


def test_eval_says_its_default_framework_is_not_the_one_trl_trains(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--env", "CRMArena-v0", "--policy", "litellm:x", "--api-key-env", "NO_SUCH_VAR_42"]
    _, _, err = _run(capsys, "eval", *argv)
    assert "framework react (the default" in err and "pass --framework fc to evaluate what TRL trains" in err
    _, _, err = _run(capsys, "eval", *argv, "--framework", "fc")
    assert "TRL trains" not in err


def test_report_of_a_missing_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "report", str(tmp_path / "nothing"))
    assert code == 2 and f"{str(tmp_path / 'nothing')!r} does not exist" in err
    (tmp_path / "empty").mkdir()  # a directory that is not a run
    code, _, err = _run(capsys, "report", str(tmp_path / "empty"))
    assert code == 2 and "no results.jsonl" in err


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"idx": 0, "trial": 0, "turns": Infinity}', "its turns inf is not a finite number"),
        ('{"idx": 0, "trial": 0, "reward": NaN}', "its reward nan is not a finite number"),
        ('{"idx": 0, "trial": 0, "turns": [1]}', "its turns [1] is not a finite number"),
        ('{"idx": "a", "trial": 0}', "its idx 'a' is not an integer"),
        ('{"idx": 0, "trial": 0, "usage": 5}', "its usage 5 is not an object"),
        ('{"idx": 0, "trial": 0, "usage": {"cost": "x"}}', "its usage cost 'x' is not a finite number"),
        ('{"idx": 0, "trial": 0, "reward_breakdown": {"details": {"em": "z"}}}', "details lack a numeric em"),
    ],
)
def test_report_of_a_damaged_record_names_its_line_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, line: str, said: str
) -> None:
    good = '{"idx": 1, "trial": 0, "abbrev": "BRI", "reward": 1.0, "turns": 2}'
    (tmp_path / "results.jsonl").write_text(f"{good}\n{line}\n", encoding="utf-8")
    code, out, err = _run(capsys, "report", str(tmp_path))
    assert code == 2 and "line 2 is not an episode record" in err and said in err, err
    assert "Traceback" not in err and not out


def test_report_of_metadata_that_is_not_an_object(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "results.jsonl").write_text('{"idx": 1, "trial": 0, "reward": 1.0}\n', encoding="utf-8")
    (tmp_path / "metadata.json").write_text("[1]", encoding="utf-8")
    code, _, err = _run(capsys, "report", str(tmp_path))
    assert code == 2 and "metadata.json' is not a JSON object" in err, err


def test_a_killed_run_resumes_with_every_episode_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tasks_file: Path, env_org: Path
) -> None:
    out = tmp_path / "run"
    argv = [
        "eval",
        "--env",
        "CRMArena-v0",
        "--tasks",
        str(tasks_file),
        "--org",
        str(env_org),
        "--policy",
        "python:tests.eval.slow_policy:SlowOracle",
        "--limit",
        "6",
        "--trials",
        "2",
        "--concurrency",
        "2",
        "--out",
        str(out),
        "--no-progress",
    ]
    code = "from crmarena_gym.cli import main; raise SystemExit(main())"
    process = subprocess.Popen(
        [sys.executable, "-c", code, *argv], cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if results.exists() and results.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.02)
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        # while it runs, a second run on the same directory is refused at once
        started = time.monotonic()
        code, _, err = _run(capsys, *argv, "--resume")
        assert code == 2 and "is in use by another run" in err
        assert time.monotonic() - started < 30
        assert process.poll() is None  # the refused run did not disturb the running one
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert process.returncode == -signal.SIGKILL
    killed_at = read_results(results)
    assert 3 <= len(killed_at) < 12

    assert main([*argv, "--resume"]) == 0
    episodes = read_results(results)
    keys = [(r["idx"], r["trial"]) for r in episodes]
    assert len(keys) == len(set(keys)) == 12
    assert len(results.read_bytes().splitlines()) == 12  # no duplicate or torn line left in the file
    assert {k for k in keys} == {(idx, trial) for idx in {k[0] for k in keys} for trial in (0, 1)}
    assert all(r["reward"] == 1.0 for r in episodes)
    assert keys[: len(killed_at)] == [(r["idx"], r["trial"]) for r in killed_at]  # kept, not played again


def test_an_out_that_cannot_be_a_run_directory_is_one_clear_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tasks_file: Path, env_org: Path
) -> None:
    existing = tmp_path / "passwd"
    existing.write_text("root:x:0:0\n")
    base = ["eval", "--env", "CRMArena-BRI-v0", "--tasks", str(tasks_file), "--org", str(env_org)]
    base += ["--policy", "oracle", "--limit", "1", "--no-progress", "--out"]
    code, _, err = _run(capsys, *base, str(existing))
    assert code == 2 and f"{str(existing)!r} is an existing file" in err and "Traceback" not in err
    code, _, err = _run(capsys, *base, str(existing / "run"))
    assert code == 2 and f"cannot use {str(existing / 'run')!r}: Not a directory" in err
    assert len(err.strip().splitlines()) == 1
    assert existing.read_text() == "root:x:0:0\n"


def test_a_second_run_on_a_busy_directory_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tasks_file: Path, env_org: Path
) -> None:
    from crmarena_gym._files import exclusive_lock

    out = tmp_path / "run"
    out.mkdir()
    argv = ["eval", "--env", "CRMArena-BRI-v0", "--tasks", str(tasks_file), "--org", str(env_org)]
    argv += ["--policy", "oracle", "--limit", "1", "--no-progress", "--out", str(out)]
    with exclusive_lock(out / ".lock"):
        code, _, err = _run(capsys, *argv)
    assert code == 2 and "is in use by another run" in err and "Traceback" not in err
    assert _run(capsys, *argv)[0] == 0


def test_a_rejected_key_stops_the_run_and_retry_errors_replays_it(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    tasks_file: Path,
    env_org: Path,
) -> None:
    pytest.importorskip("litellm")
    monkeypatch.setenv("SCRIPTED_KEY", "wrong")
    out = tmp_path / "run"
    with ScriptedServer([{"status": 401, "message": "Incorrect API key provided"}]) as server:
        argv = ["eval", "--env", "CRMArena-BRI-v0", "--tasks", str(tasks_file), "--org", str(env_org)]
        argv += ["--policy", "litellm:openai/scripted", "--framework", "act", "--api-base", server.url]
        argv += ["--api-key-env", "SCRIPTED_KEY", "--limit", "2", "--no-progress", "--out", str(out)]
        code, _, err = _run(capsys, *argv)
        assert code == 2 and "Traceback" not in err
        assert "the run stopped after episode" in err and "--resume --retry-errors" in err
        assert len(server.requests) == 1 and len(read_results(out / "results.jsonl")) == 1
        server.add({"content": "submit None"}, {"content": "submit None"})
        assert _run(capsys, *argv, "--resume")[0] == 0  # without --retry-errors the error is kept
        assert len(server.requests) == 2
        code, _, _ = _run(capsys, *argv, "--resume", "--retry-errors")
    assert code == 0
    episodes = read_results(out / "results.jsonl")
    assert [r["end_reason"] for r in episodes] == ["submitted", "submitted"]
    assert len((out / "results.jsonl").read_bytes().splitlines()) == 2


def test_a_retried_model_call_says_so_while_the_run_waits(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    tasks_file: Path,
    env_org: Path,
) -> None:
    # A provider answering 503 made the run wait out its backoff (minutes at the defaults) with nothing said.
    pytest.importorskip("litellm")
    monkeypatch.setenv("SCRIPTED_KEY", "k")
    with ScriptedServer([{"status": 503, "message": "overloaded"}, {"content": "submit None"}]) as server:
        argv = ["eval", "--env", "CRMArena-BRI-v0", "--tasks", str(tasks_file), "--org", str(env_org)]
        argv += ["--policy", "litellm:openai/scripted", "--framework", "act", "--api-base", server.url]
        argv += ["--api-key-env", "SCRIPTED_KEY", "--max-retries", "1", "--limit", "1", "--no-progress"]
        code, _, err = _run(capsys, *argv, "--out", str(tmp_path / "run"))
    assert code == 0, err
    assert len(server.requests) == 2
    (line,) = [line for line in err.splitlines() if "retry" in line]
    assert line.startswith("crmarena-gym eval: openai/scripted: ") and "overloaded" in line
    assert line.endswith(" s") and "; retry 1 of 1 in " in line
    assert read_results(tmp_path / "run" / "results.jsonl")[0]["end_reason"] == "submitted"


def test_an_llm_user_without_its_key_is_refused_before_the_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env_org: Path
) -> None:
    # It was retried at the first reset for seconds, then a traceback (the missing key looks like a 500).
    pytest.importorskip("litellm")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    argv = ["eval", "--org", str(env_org), "--policy", "reactive-oracle", "--user", "litellm:gpt-4o"]
    code, out, err = _run(capsys, *argv, "--per-task", "1", "--no-progress", "--out", str(tmp_path / "run"))
    assert (code, out) == (2, "")
    assert err == "crmarena-gym eval: --user: the user's model gpt-4o needs OPENAI_API_KEY: set it in the environment\n"
    assert not (tmp_path / "run").exists()


def test_an_llm_user_that_fails_mid_run_stops_it_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env_org: Path
) -> None:
    pytest.importorskip("litellm")
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    with ScriptedServer([{"status": 401, "message": "Incorrect API key provided"}]) as server:
        argv = ["eval", "--org", str(env_org), "--policy", "reactive-oracle", "--user", "litellm:openai/user-model"]
        argv += ["--user-api-base", server.url, "--per-task", "1", "--no-progress", "--out", str(tmp_path / "run")]
        code, _, err = _run(capsys, *argv)
    assert code == 1 and len(server.requests) == 1  # a rejected key is not retried
    (line,) = err.strip().splitlines()
    assert line.startswith("crmarena-gym eval: the user's model openai/user-model refused the request for its")
    assert "Incorrect API key provided" in line and line.endswith("once the model answers, rerun with --resume")


def test_a_server_of_ones_own_without_a_key_is_told_any_value_will_do(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    tasks_file: Path,
    env_org: Path,
) -> None:
    # litellm's OpenAI client refuses to send without a key, even to a local server that checks none; the
    # message only said to set OPENAI_API_KEY, as if a real key were needed.
    pytest.importorskip("litellm")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer([{"content": "submit None"}]) as server:
        argv = ["eval", "--env", "CRMArena-BRI-v0", "--tasks", str(tasks_file), "--org", str(env_org)]
        argv += ["--policy", "litellm:openai/scripted", "--framework", "act", "--api-base", server.url]
        code, _, err = _run(capsys, *argv, "--limit", "1", "--no-progress", "--out", str(tmp_path / "run"))
        assert server.requests == []  # refused in the client
    assert code == 2 and "Traceback" not in err
    assert "set OPENAI_API_KEY in the environment (any value, for a server of one's own that checks none)" in err
    monkeypatch.setenv("OPENAI_API_KEY", "anything")  # as the message says
    with ScriptedServer([{"content": "submit None"}]) as server:
        argv[argv.index("--api-base") + 1] = server.url
        code, _, err = _run(capsys, *argv, "--limit", "1", "--no-progress", "--out", str(tmp_path / "run2"))
        assert code == 0, err
        assert len(server.requests) == 1


def test_the_task_distribution_is_played_and_recorded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, env_org: Path
) -> None:
    import json

    from crmarena_gym.tasks import default_tasks

    for distribution in ("legacy", None):
        out = tmp_path / f"run-{distribution}"
        argv = ["eval", "--env", "CRMArena-MTA-v0", "--org", str(env_org), "--policy", "oracle", "--limit", "3"]
        argv += ["--out", str(out), "--no-progress"]
        if distribution:
            argv += ["--task-distribution", distribution]
        code, _, err = _run(capsys, *argv)
        assert code == 0, err
        expected = default_tasks(env_org, distribution=distribution or "discriminating")
        played = {r["idx"]: r["gold"] for r in read_results(out / "results.jsonl")}
        assert played == {i.idx: i.answer for i in [i for i in expected if i.abbrev == "MTA"][:3]}
        source = json.loads((out / "metadata.json").read_text())["run"]["tasks"]
        assert source["split"] == "test" and source["distribution"] == (distribution or "discriminating")
        assert source["task_generator"] >= 3


def test_a_model_that_cannot_be_reached_stops_the_run_with_a_non_zero_exit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tasks_file: Path, env_org: Path
) -> None:
    pytest.importorskip("litellm")
    import socket

    with socket.socket() as probe:  # a port nobody listens on: every request is refused
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    monkeypatch.setenv("SCRIPTED_KEY", "k")
    out = tmp_path / "run"
    argv = ["eval", "--env", "CRMArena-BRI-v0", "--tasks", str(tasks_file), "--org", str(env_org), "--no-progress"]
    argv += ["--policy", "litellm:openai/scripted", "--framework", "act", "--api-base", closed, "--timeout", "2"]
    argv += ["--api-key-env", "SCRIPTED_KEY", "--max-retries", "0", "--out", str(out)]
    code, _, err = _run(capsys, *argv)
    assert code == 2 and "Traceback" not in err
    assert "the last 2 episodes could not reach the model" in err and "--resume --retry-errors" in err
    records = read_results(out / "results.jsonl")
    assert len(records) == 2 and all(r["end_reason"] == "llm_error" and r["unreachable"] for r in records)


def test_a_missing_key_refuses_the_run_before_any_episode(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tasks_file: Path, env_org: Path
) -> None:
    pytest.importorskip("litellm")
    for var in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    out = tmp_path / "run"
    argv = ["eval", "--env", "CRMArena-BRI-v0", "--tasks", str(tasks_file), "--org", str(env_org), "--no-progress"]
    code, _, err = _run(capsys, *argv, "--policy", "litellm:gpt-4o", "--out", str(out))
    assert code == 2 and "Traceback" not in err
    assert "gpt-4o needs OPENAI_API_KEY" in err
    assert not (out / "results.jsonl").exists() or read_results(out / "results.jsonl") == []


def test_the_foreign_task_check_reads_the_whole_file_not_the_selection(
    capsys: pytest.CaptureFixture[str], shared_dir: Path, env_org: Path
) -> None:
    # The original's KQA golds are phrases, which name no record: alone they would pass.
    argv = ["eval", "--tasks", str(shared_dir / "tasks_original.json"), "--org", str(env_org), "--task", "KQA"]
    code, _, err = _run(capsys, *argv, "--policy", "random", "--limit", "1", "--no-progress")
    assert code == 2 and "was made for another org" in err
