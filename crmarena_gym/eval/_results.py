"""The run directory: ``results.jsonl`` (one line per episode, appended and synced as each ends) and
``metadata.json``.

A run killed at any moment leaves at most one torn line at the end of ``results.jsonl``; reading the
file drops it (and :class:`ResultsWriter` cuts it off before appending), so a resumed run writes every
episode exactly once. Replaying episodes that ended in an error (``evaluate(..., retry_errors=True)``)
first rewrites the file without them, atomically (:func:`rewrite_results`), then appends their new
records: the file never holds an episode twice, and a run killed in between replays them next time.
A run directory also holds ``.lock``, locked while a run writes there, so that two runs cannot share it.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from crmarena_gym._files import atomic_write_text
from crmarena_gym._json import json_line, json_text
from crmarena_gym._secrets import redact_json, redact_value

__all__ = [
    "LOCK_FILE",
    "METADATA_FILE",
    "RESULTS_FILE",
    "USAGE_NUMBERS",
    "ResultsWriter",
    "finite_number",
    "load_run",
    "read_results",
    "record_problems",
    "rewrite_results",
    "write_metadata",
]

RESULTS_FILE = "results.jsonl"
METADATA_FILE = "metadata.json"
#: Locked (``fcntl``) by the run writing in the directory.
LOCK_FILE = ".lock"


#: The counts a record's ``usage`` may hold (numbers, summed by the summaries).
USAGE_NUMBERS = frozenset({"calls", "prompt_tokens", "completion_tokens", "total_tokens", "cost", "unpriced_calls"})


def finite_number(value: Any) -> bool:
    """None or a finite number, not a bool (Python's JSON reads Infinity and NaN, which poison every sum).

    Example:
        >>> finite_number(None), finite_number(2.5), finite_number(float("inf")), finite_number(True)
        (True, True, False, False)
    """
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value))


def record_problems(record: Any) -> list[tuple[str, str]]:
    """What keeps ``record`` from being read as an episode record (the fields the summaries compute with): a
    ``(field, problem)`` pair each, the field as ``usage.cost`` inside an object; ``[]`` when nothing does.

    Example:
        >>> record_problems({"idx": 1, "trial": 0, "reward": 1.0})
        []
        >>> record_problems({"idx": 1, "trial": 0, "turns": [3], "usage": {"cost": float("nan")}})
        [('turns', 'its turns [3] is not a finite number'), ('usage.cost', 'its usage cost nan is not a finite number')]
    """
    if not isinstance(record, dict):
        return [("", "it is not a JSON object")]
    problems = []
    for key in ("idx", "trial"):
        value = record.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            problems.append((key, f"its {key} {value!r} is not an integer"))
    for key in ("reward", "turns", "f1"):
        if not finite_number(record.get(key)):
            problems.append((key, f"its {key} {record[key]!r} is not a finite number"))
    trajectory = record.get("trajectory")
    if trajectory is not None and not (isinstance(trajectory, list) and all(isinstance(s, dict) for s in trajectory)):
        problems.append(("trajectory", "its trajectory is not a list of steps"))
    usage, breakdown = record.get("usage"), record.get("reward_breakdown")
    for key, value in (("usage", usage), ("reward_breakdown", breakdown)):
        if value is not None and not isinstance(value, dict):
            problems.append((key, f"its {key} {value!r} is not an object"))
    for key, value in usage.items() if isinstance(usage, dict) else ():
        if key in USAGE_NUMBERS and not finite_number(value):
            problems.append((f"usage.{key}", f"its usage {key} {value!r} is not a finite number"))
    details = breakdown.get("details") if isinstance(breakdown, dict) else None
    if details is not None and not (isinstance(details, dict) and finite_number(details.get("em"))):
        problems.append(("reward_breakdown.details", "its reward_breakdown details lack a numeric em"))
    return problems


def _complete_lines(data: bytes) -> tuple[list[bytes], int]:
    """The complete lines of ``data`` and the offset where a torn last line starts."""
    end = data.rfind(b"\n") + 1
    return [line for line in data[:end].split(b"\n") if line.strip()], end


def read_results(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The episodes in a results file, a torn last line left out.

    Each episode appears once: should a line repeat an earlier ``(idx, trial)``, the first one counts.

    Raises:
        FileNotFoundError: No file at ``path``.
        ValueError: A complete line is not a JSON object (the file is damaged, not just cut short).

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.jsonl"
        >>> _ = path.write_text('{"idx": 1, "trial": 0, "reward": 1.0}\\n{"idx": 2, "tri')
        >>> [r["idx"] for r in read_results(path)]
        [1]
    """
    path = Path(path)
    lines, _ = _complete_lines(path.read_bytes())
    results: list[dict[str, Any]] = []
    seen: set[tuple[int, int]] = set()
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"{str(path)!r} line {number} is not JSON ({err}): {line[:80]!r}") from err
        problems = record_problems(record)
        if problems:
            raise ValueError(f"{str(path)!r} line {number} is not an episode record ({problems[0][1]}): {line[:80]!r}")
        key = (record["idx"], record["trial"])
        if key in seen:
            warnings.warn(f"{str(path)!r} repeats episode {key} at line {number}; the first counts", stacklevel=2)
            continue
        seen.add(key)
        results.append(record)
    return results


def _line(record: dict[str, Any]) -> bytes:
    # No secret reaches the file: a key a provider echoed in an error, a model repeated, an option held. The
    # env's observations (most of a record) are searched for the keys known to this process only.
    return json_line(redact_value(record, known_only=("observation",)), default=str)


def rewrite_results(path: str | os.PathLike[str], records: Iterable[dict[str, Any]]) -> Path:
    """Replace the results file with ``records`` (one line each), atomically: a reader sees the old
    file or the new one, never a mix.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.jsonl"
        >>> _ = path.write_text('{"idx": 1, "trial": 0}\\n{"idx": 2, "trial": 0}\\n')
        >>> [r["idx"] for r in read_results(rewrite_results(path, [{"idx": 2, "trial": 0}]))]
        [2]
    """
    return atomic_write_text(path, b"".join(_line(r) for r in records).decode())


class ResultsWriter:
    """Appends episode records to ``results.jsonl``.

    Each line reaches the operating system before :meth:`write` returns, so a run killed at any moment
    (SIGKILL included) keeps every episode it wrote; lines are synced to the disk at most every
    ``sync_interval`` seconds and on close, which bounds what a crash of the machine itself can lose to
    the last few episodes (a resumed run plays them again). Opening it cuts off a torn last line left by
    a killed run.

    Args:
        path: The results file (created if missing).
        sync_interval: Seconds between two syncs to the disk (0: after every line).
    """

    def __init__(self, path: str | os.PathLike[str], *, sync_interval: float = 1.0) -> None:
        self.path = Path(path)
        self.sync_interval = sync_interval
        self._synced = time.monotonic()
        if self.path.exists():
            _, end = _complete_lines(self.path.read_bytes())
            if end != self.path.stat().st_size:
                with open(self.path, "r+b") as handle:
                    handle.truncate(end)
        self._file = open(self.path, "ab")

    def write(self, record: dict[str, Any]) -> None:
        """Append one episode, durably.

        Raises:
            OSError: The line could not be written (a full disk ...); the error names the file. The lines
                written before stay whole (a torn last line is cut off when the run resumes).
        """
        try:
            self._file.write(_line(record))
            self._file.flush()
            if time.monotonic() - self._synced >= self.sync_interval:
                self._sync()
        except OSError as err:
            raise OSError(err.errno, err.strerror or str(err), str(self.path)) from None

    def _sync(self) -> None:
        os.fsync(self._file.fileno())
        self._synced = time.monotonic()

    def close(self) -> None:
        """Sync the lines written to the disk and close the file."""
        if self._file.closed:
            return
        try:
            self._sync()
        except OSError as err:
            raise OSError(err.errno, err.strerror or str(err), str(self.path)) from None
        finally:
            self._file.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_metadata(directory: str | os.PathLike[str], metadata: dict[str, Any]) -> Path:
    """Write ``metadata.json`` atomically (a temporary file renamed over the old one)."""
    # The command line, the policy's options and settings may hold a key (--api-base ...?key=): redacted.
    text = redact_json(json_text(metadata, indent=2, sort_keys=True, default=str)) + "\n"
    return atomic_write_text(Path(directory) / METADATA_FILE, text)


def load_run(directory: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The metadata and episodes of a run directory.

    Raises:
        FileNotFoundError: The directory has no ``results.jsonl``.
    """
    directory = Path(directory)
    results_path = directory / RESULTS_FILE
    if not results_path.is_file():
        raise FileNotFoundError(f"{str(directory)!r} is not a run directory: it has no {RESULTS_FILE}")
    metadata_path = directory / METADATA_FILE
    metadata = json.loads(metadata_path.read_text(encoding="utf-8")) if metadata_path.is_file() else {}
    if not isinstance(metadata, dict):
        raise ValueError(f"{str(metadata_path)!r} is not a JSON object: it is not a run's metadata")
    return metadata, read_results(results_path)


def episode_keys(results: Iterable[dict[str, Any]]) -> set[tuple[int, int]]:
    """The ``(idx, trial)`` of each episode."""
    return {(r["idx"], r["trial"]) for r in results}
