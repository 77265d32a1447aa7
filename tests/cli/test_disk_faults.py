"""Clear messages when the disk refuses: a full cache, a full run directory, a file that is not an org."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.cli._main import main
from crmarena_gym.eval import ResultsWriter, read_results
from crmarena_gym.org import CacheError, LocalOrg
from crmarena_gym.tasks import TaskInstance, save_tasks


def _full_disk(*args: Any, **kwargs: Any) -> Any:
    raise sqlite3.OperationalError("database or disk is full")


def _no_space(path: Path) -> Any:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    return fail


def test_a_full_cache_says_where_and_how_to_choose_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(cache))
    # SQLite's own words for ENOSPC, raised where the generator writes rows.
    monkeypatch.setattr("crmarena_gym.datagen._generator.create_tables", _full_disk)
    with pytest.raises(CacheError) as err:
        gym.make("CRMArena-BRI-v0")
    message = str(err.value)
    assert str(cache) in message and "database or disk is full" in message and "CRMARENA_GYM_CACHE" in message
    assert not [p for p in cache.iterdir() if p.suffix in (".sqlite", ".tmp")]  # nothing half-written is left

    assert main(["eval", "--env", "CRMArena-BRI-v0", "--policy", "oracle", "--no-progress"]) == 2
    printed = capsys.readouterr().err
    assert "Traceback" not in printed and "CRMARENA_GYM_CACHE" in printed and str(cache) in printed

    out = tmp_path / "mine.sqlite"
    assert main(["generate", "--out", str(out)]) == 1
    printed = capsys.readouterr().err
    assert "Traceback" not in printed and str(out) in printed and "database or disk is full" in printed


def test_a_cache_directory_that_cannot_be_locked_points_at_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(tmp_path / "ro"))

    def read_only(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "ro" / "x.lock"))

    monkeypatch.setattr("crmarena_gym.org._cache.exclusive_lock", read_only)
    with pytest.raises(CacheError, match=r"\(Permission denied\).*set CRMARENA_GYM_CACHE"):
        gym.make("CRMArena-BRI-v0")


def test_a_full_run_directory_keeps_the_lines_written_and_says_how_to_resume(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env_org: Path,
    env_tasks: list[TaskInstance],
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    save_tasks(env_tasks, tasks)
    out = tmp_path / "run"
    real_init = ResultsWriter.__init__

    class FillingFile:
        """The results file on a disk that fills up during the third episode's line."""

        def __init__(self, inner: Any) -> None:
            self.inner, self.lines = inner, 0

        def write(self, data: bytes) -> int:
            self.lines += 1
            if self.lines == 3:
                self.inner.write(data[:8])  # a torn line, as a disk filling mid-write leaves
                self.inner.flush()
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.inner.write(data)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    def filling_init(self: ResultsWriter, path: Any) -> None:
        real_init(self, path)
        self._file = FillingFile(self._file)  # type: ignore[assignment]

    monkeypatch.setattr(ResultsWriter, "__init__", filling_init)
    argv = ["eval", "--env", "CRMArena-HTU-v0", "--tasks", str(tasks), "--org", str(env_org)]
    argv += ["--policy", "oracle", "--no-progress", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"cannot use {str(out / 'results.jsonl')!r}: No space left on device" in err
    assert "--resume" in err and "Traceback" not in err
    assert len(read_results(out / "results.jsonl")) == 2  # the lines written before stay whole

    monkeypatch.setattr(ResultsWriter, "__init__", real_init)
    assert main([*argv, "--resume"]) == 0
    assert len(read_results(out / "results.jsonl")) == sum(t.abbrev == "HTU" for t in env_tasks)


@pytest.mark.parametrize("content", [b"", b"not a database at all, just text" * 100], ids=["empty", "text"])
def test_an_org_file_that_is_not_an_org_is_refused_by_name(
    content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "org.sqlite"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="org database"):
        LocalOrg(path)
    assert main(["eval", "--env", "CRMArena-BRI-v0", "--org", str(path), "--policy", "random", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err and "no such table" not in err


_EXPERIMENT = """
name = "full disk"
env = "CRMArena-BRI-v0"
limit = 1

[[policies]]
name = "oracle"
spec = "oracle"

[[sweeps]]
name = "turns"
max_turns = [20]
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "SELECT Id FROM Case LIMIT 1"],
        ["tasks", "list"],
        ["tasks", "show", "1"],
        ["serve-org", "--port", "0", "--http"],
        ["serve-env", "--port", "0"],
        ["experiment", "SPEC", "--out", "OUT"],
        ["eval", "--env", "CRMArena-BRI-v0", "--policy", "oracle", "--no-progress"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_every_command_answers_a_full_cache_disk_in_one_line(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 36: four commands printed a traceback when the cache disk was full (their message was clear).
    cache = tmp_path / "cache"
    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(cache))
    monkeypatch.setattr("crmarena_gym.datagen._generator.create_tables", _full_disk)
    spec = tmp_path / "spec.toml"
    spec.write_text(_EXPERIMENT)
    argv = [str(spec) if a == "SPEC" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and all("database or disk is full" not in line or line is lines[-1] for line in lines)
    last = lines[-1]
    assert last.startswith(f"crmarena-gym {argv[0]}") and str(cache) in last and "database or disk is full" in last


def test_an_oserror_no_command_answers_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env_org: Path,
    env_tasks: list[TaskInstance],
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    save_tasks(env_tasks, tasks)
    run = tmp_path / "run"
    argv = ["eval", "--env", "CRMArena-BRI-v0", "--tasks", str(tasks), "--org", str(env_org), "--limit", "1"]
    assert main([*argv, "--policy", "oracle", "--no-progress", "--out", str(run)]) == 0
    capsys.readouterr()
    report = tmp_path / "report.md"
    real_write = Path.write_text

    def full(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == report:
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    assert main(["report", str(run), "--out", str(report)]) != 0
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert str(report) in err and "No space left on device" in err and "free some space" in err
