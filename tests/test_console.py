from __future__ import annotations

import errno
import io
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from crmarena_gym._console import interactive, progress_bar, text_table
from crmarena_gym._files import LockHeldError, atomic_write_text, exclusive_lock


def test_text_table_aligns_and_refuses_ragged_rows() -> None:
    table = text_table(["name", "count"], [["a", "1"], ["longer", "22"]], align=["<", ">"], rule=False)
    assert table.splitlines() == ["name    count", "a           1", "longer     22"]
    with pytest.raises(ValueError, match=r"\['x'\]"):
        text_table(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="align has 1"):
        text_table(["a", "b"], [], align=["<"])


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_piped_and_on_a_terminal_but_not_when_disabled() -> None:
    piped = io.StringIO()  # not a terminal: a log or a pipe still gets the bar
    bar = progress_bar(3, "gen", stream=piped, unit="ep")
    bar.update(3)
    bar.close()
    # One whole line per update (a log read later, or a pipe into grep), never carriage returns.
    lines = piped.getvalue().splitlines()
    assert "\r" not in piped.getvalue() and piped.getvalue().endswith("\n")
    assert lines[0].startswith("gen:   0%") and lines[-1].startswith("gen: 100%") and "3/3" in lines[-1]
    quiet = io.StringIO()
    bar = progress_bar(3, "gen", stream=quiet, enabled=False)
    bar.update(3)
    bar.close()
    assert quiet.getvalue() == ""
    assert interactive(_Terminal()) and not interactive(io.StringIO())


def test_a_piped_bar_is_redrawn_at_most_every_few_seconds() -> None:
    piped, watched = io.StringIO(), _Terminal()
    bars = [progress_bar(500, "x", stream=piped), progress_bar(500, "x", stream=watched)]
    for _ in range(500):
        for bar in bars:
            bar.update(1)
            time.sleep(0.0005)
    for bar in bars:
        bar.close()
    # About 0.5 s of updates: the terminal's bar (every 0.1 s) is redrawn more often than the piped one.
    assert len(piped.getvalue().splitlines()) <= 3 < watched.getvalue().count("\r")


def test_a_terminal_that_reports_no_width_still_gets_a_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(os, "get_terminal_size", lambda *_: os.terminal_size((0, 0)))
    watched = _Terminal()
    bar = progress_bar(2, "eval", stream=watched)
    bar.update(2)
    bar.close()
    assert "2/2" in watched.getvalue().split("\r")[-1]


def _hold(lock: str, log: str, tag: str) -> None:
    with exclusive_lock(lock):
        with open(log, "a") as handle:
            handle.write(f"{tag}+")
        time.sleep(0.2)
        with open(log, "a") as handle:
            handle.write(f"{tag}-")


def test_exclusive_lock_serialises_processes(tmp_path: Path) -> None:
    lock, log = str(tmp_path / "l.lock"), str(tmp_path / "log")
    procs = [multiprocessing.Process(target=_hold, args=(lock, log, tag)) for tag in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(10)
    text = Path(log).read_text()
    assert text in ("a+a-b+b-", "b+b-a+a-")  # never interleaved


def _hold_until(lock: str, ready: str, release: str) -> None:
    with exclusive_lock(lock):
        Path(ready).touch()
        deadline = time.monotonic() + 10
        while not Path(release).exists() and time.monotonic() < deadline:
            time.sleep(0.01)


def test_a_non_blocking_lock_fails_at_once_while_another_process_holds_it(tmp_path: Path) -> None:
    lock, ready, release = str(tmp_path / "l.lock"), tmp_path / "ready", tmp_path / "release"
    holder = multiprocessing.Process(target=_hold_until, args=(lock, str(ready), str(release)))
    holder.start()
    try:
        deadline = time.monotonic() + 10
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists()
        started = time.monotonic()
        with pytest.raises(LockHeldError, match=r"l\.lock' is locked by another process"):
            with exclusive_lock(lock, blocking=False):
                pass
        assert time.monotonic() - started < 5  # it did not wait for the holder (who holds it 10 s)
        assert isinstance(LockHeldError("x"), OSError)
    finally:
        release.touch()
        holder.join(10)
    assert holder.exitcode == 0
    entered = []
    with exclusive_lock(lock, blocking=False):  # free again once the holder has let go
        entered.append(True)
    assert entered == [True]


@pytest.mark.skipif(os.name != "posix", reason="flock is POSIX's")
@pytest.mark.filterwarnings("ignore:flock not supported")
def test_where_flock_fails_the_lock_is_filelocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    import filelock

    def no_flock(fd: int, operation: int) -> None:
        raise OSError(errno.ENOSYS, "Function not implemented")

    taken: list[str] = []

    class Recording(filelock.FileLock):  # type: ignore[misc, valid-type]
        def acquire(self, *args: object, **kwargs: object) -> object:
            taken.append(self.lock_file)
            return super().acquire(*args, **kwargs)

    monkeypatch.setattr(fcntl, "flock", no_flock)  # as on a file system without it
    monkeypatch.setattr(filelock, "FileLock", Recording)
    lock = tmp_path / "l.lock"
    ran = []
    with exclusive_lock(lock):
        ran.append(True)
    assert ran == [True] and taken == [str(lock)]


def test_a_lock_in_a_missing_directory_is_made_there(tmp_path: Path) -> None:
    lock = tmp_path / "not" / "yet" / "l.lock"
    with exclusive_lock(lock):
        with pytest.raises(LockHeldError):
            with exclusive_lock(lock, blocking=False):
                pass
    assert lock.parent.is_dir()


def test_atomic_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = atomic_write_text(tmp_path / "f.txt", "hello")
    assert target.read_text() == "hello" and [p.name for p in tmp_path.iterdir()] == ["f.txt"]
    with pytest.raises(FileNotFoundError):
        atomic_write_text(tmp_path / "missing" / "f.txt", "x")
