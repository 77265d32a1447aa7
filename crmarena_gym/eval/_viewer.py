"""What the trajectory viewer shows, as JSON: runs, per-task tables, episode lists, transcripts.

:class:`ViewerData` reads run directories (``results.jsonl`` and ``metadata.json``, as
:func:`~crmarena_gym.eval.evaluate` writes them), experiment directories (every cell a run, grouped by
sweep, policy and setting as ``experiment.json`` records them) and trajectory files written by
:class:`~crmarena_gym.wrappers.RecordTrajectory`, and answers the viewer's questions about them. A source
is read again when its files change, so a run still writing shows its new episodes. A damaged source
never stops the others: what could be read is shown, with a message saying what was wrong (a missing
file, a line that is not JSON, a torn last line, a results format this version does not know).

The answers are plain JSON documents (see :meth:`ViewerData.api`). Lists that grow with a sweep are
filtered, sorted and paged here, so that the page never holds tens of thousands of episodes: an episode
list asks for one page of one sort order, the solved-by table for one page of instances and of columns.
The HTTP server (:func:`~crmarena_gym.eval.serve_viewer`) serves them; the static export
(:func:`~crmarena_gym.eval.export_viewer`) writes them in chunks that the same page loads as it needs them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from crmarena_gym.envs import parse_action
from crmarena_gym.eval._metrics import bootstrap_ci
from crmarena_gym.eval._results import METADATA_FILE, RESULTS_FILE, _complete_lines, finite_number, record_problems
from crmarena_gym.eval._summary import ERROR_END_REASONS, summarize, task_key

__all__ = ["EPISODE_SORTS", "RESULTS_FORMAT", "ViewerData", "ViewerError"]

#: The version of the records :func:`~crmarena_gym.eval.evaluate` writes (``metadata.json``'s
#: ``results_format``; runs written before it was recorded have none and read as 1).
RESULTS_FORMAT = 1
#: What an episode list can be sorted by (``sort=``); ties keep the order of (idx, trial).
EPISODE_SORTS = ("idx", "trial", "task", "reward", "end", "turns", "tokens", "cost", "errors", "dropout", "seconds")
# An experiment's state file (``_experiment.EXPERIMENT_FILE``: importing it here would import the runner,
# which imports this module; a test checks that the two agree).
EXPERIMENT_FILE = "experiment.json"
# Observations longer than this (or with more lines) are shown folded.
_FOLD_CHARS, _FOLD_LINES = 1200, 24
# The part of each action kept for search (an oracle's call may carry long lists).
_SEARCH_CHARS = 4000
# The longest page of a list a request may ask for.
_MAX_LIMIT = 1000
# Context around a search hit in an episode list.
_HIT_BEFORE, _HIT_AFTER = 40, 60
# The usage figures the tables add up.
# As the runner does: the raw result (the observation shows it) and what the record keeps on its own.
_TRAJECTORY_INFO_SKIPPED = frozenset({"result", "turn", "submitted", "reward_breakdown"})
# Gymnasium's own checkers, left out of a stack as shown.
_CHECKERS = ("OrderEnforcing", "PassiveEnvChecker")
# Step fields that may carry timing (seconds), written by runners that measure it.
_TIMING_FIELDS = ("seconds", "elapsed", "elapsed_s", "duration_s")
_DROPOUT_EFFECTS = {
    "drop": "the result was dropped: an empty result was shown instead",
    "error": "the result was replaced by a transient error",
    "truncate": "the result was cut short",
    "corrupt": "one value of the result was changed",
}


class ViewerError(LookupError):
    """A request for something the viewer does not have (an unknown run or episode, status 404) or a
    malformed one (status 400); ``status`` is its HTTP status."""

    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Source:
    """One run directory or trajectory file, as last read."""

    id: str
    path: Path
    kind: str  # "run" or "trajectory"
    group: dict[str, str] = field(default_factory=dict)  # experiment, sweep, policy, setting of a cell
    signature: tuple[Any, ...] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    fatal: str | None = None  # nothing could be read
    torn_bytes: int = 0
    by_key: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    offset: int = 0  # where the complete lines read so far end (a growing results file is read from there)
    lines_read: int = 0
    cache: dict[str, Any] = field(default_factory=dict)  # documents worked out since the last change


@dataclass
class _Experiment:
    """An experiment directory: its cells as ``experiment.json`` records them."""

    id: str
    path: Path
    signature: tuple[int, int, int] | None = None
    name: str = ""
    cells: list[dict[str, Any]] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "run"


def _read_lines(path: Path, offset: int = 0, first: int = 1) -> tuple[list[tuple[int, Any]], list[str], int, int]:
    """The parsed complete lines of a JSON Lines file from byte ``offset`` (numbered from ``first``), the
    problems met, the torn bytes at the end, and the offset where the complete lines end."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    lines, end = _complete_lines(data)
    parsed: list[tuple[int, Any]] = []
    problems: list[str] = []
    for number, line in enumerate(lines, first):
        try:
            parsed.append((number, json.loads(line)))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            problems.append(f"line {number} of {path.name} is not JSON ({err}); it is left out: {line[:80]!r}")
    return parsed, problems, len(data) - end, offset + end


def _read_experiment(path: Path) -> tuple[dict[str, Any], str | None]:
    """``experiment.json`` of an experiment directory, and what is wrong with it (it is being rewritten
    while an experiment runs: a torn read is tried again on the next refresh)."""
    try:
        state = json.loads((path / EXPERIMENT_FILE).read_text(encoding="utf-8"))
        if not isinstance(state, dict) or not isinstance(state.get("cells", []), list):
            raise ValueError("it is not an experiment's state")
    except (OSError, ValueError, UnicodeDecodeError) as err:
        return {}, f"{EXPERIMENT_FILE} of {str(path)!r} cannot be read ({err}); its cells are shown ungrouped"
    return state, None


def _expand(path: Path) -> list[tuple[Path, str, dict[str, str]]]:
    """The sources a path names, with their names and groups: a run directory or a trajectory file is
    one; a directory holding run directories (an experiment's, a folder of runs) is each of them, named by
    its relative path; an experiment's cells are grouped by sweep, policy and setting."""
    if path.is_file() and path.name == RESULTS_FILE:
        path = path.parent  # results.jsonl given: its run directory
    base = _slug(path.resolve().name if path.name in ("", ".", "..") else path.name)
    if path.is_file():
        return [(path, base.removesuffix(".jsonl"), {})]
    if path.is_dir() and not (path / RESULTS_FILE).exists():
        runs = sorted(found.parent for found in path.rglob(RESULTS_FILE))
        experiment = (path / EXPERIMENT_FILE).is_file()
        root = path / "cells" if experiment and (path / "cells").is_dir() else path
        cells: dict[str, dict[str, Any]] = {}
        if experiment:
            state, _ = _read_experiment(path)
            cells = {str(c.get("path")): c for c in state.get("cells", []) if isinstance(c, dict)}
            # In the experiment's order: sweep by sweep, setting by setting, policy by policy.
            order = {key: n for n, key in enumerate(cells)}
            runs.sort(key=lambda run: (order.get(str(run.relative_to(path)), len(order)), run))
        out = []
        for run in runs:
            relative = run.relative_to(root)
            group: dict[str, str] = {}
            cell = cells.get(str(run.relative_to(path)))
            if cell is not None:
                group = {
                    "experiment": base,
                    "sweep": str(cell.get("sweep")),
                    "policy": str(cell.get("policy")),
                    "setting": str(cell.get("label")),
                }
            elif experiment and len(relative.parts) == 3:  # a cell not recorded yet (the experiment runs)
                group = dict(zip(("sweep", "policy", "setting"), relative.parts, strict=True))
                group["experiment"] = base
            elif len(relative.parts) > 1:
                group = {"folder": "/".join(relative.parts[:-1])}
            out.append((run, _slug(".".join(relative.parts)), group))
        if out:
            return out
    return [(path, base, {})]


def _repair(record: dict[str, Any]) -> list[str]:
    """Make a record safe to show (what a damaged or foreign line lacks is set aside); what was wrong."""
    if not isinstance(record.get("abbrev"), str) or not record["abbrev"]:
        record["abbrev"] = task_key(record)  # a foreign record without one: its task's, as summaries group it
    said = []
    for where, problem in record_problems(record):
        key, _, inner = where.partition(".")
        if key in ("reward", "turns"):
            record[key], done = 0, "shown as 0"
        elif key == "trajectory":
            record[key], done = [], "shown without it"
        elif inner:  # a usage count, the breakdown's details
            del record[key][inner]
            done = "left out"
        else:  # f1, usage, reward_breakdown
            record[key], done = None, "left out" if key == "f1" else "shown without it"
        said.append(f"{problem}; {done}")
    return said


def _grew(previous: tuple[Any, ...] | None, now: tuple[Any, ...], source: _Source) -> bool:
    """Whether only the run's results file changed, by growing (the same file, appended to)."""
    if source.kind != "run" or previous is None or source.fatal is not None or previous[1:] != now[1:]:
        return False
    before, after = previous[0], now[0]
    return before is not None and after is not None and before[0] == after[0] and after[1] >= source.offset


def _torn_problem(source: _Source) -> list[str]:
    if not source.torn_bytes:
        return []
    name = RESULTS_FILE if source.kind == "run" else source.path.name
    return [
        f"the last line of {name} is incomplete ({source.torn_bytes} bytes): the run is still writing it, or was "
        "stopped while writing; it is left out"
    ]


def _is_trajectory_line(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("episode"), int)
        and isinstance(value.get("step"), int)
        and isinstance(value.get("info", {}), dict)
        and "trial" not in value
    )


class ViewerData:
    """The runs and trajectories a viewer shows, read again whenever their files change.

    Args:
        paths: Run directories (each with ``results.jsonl``), experiment directories or folders of runs
            (each run under them), and trajectory files (JSON Lines written by
            :class:`~crmarena_gym.wrappers.RecordTrajectory`). A path that is neither still appears, with
            a message saying what is wrong with it.

    Example:
        >>> import pathlib, tempfile
        >>> run = pathlib.Path(tempfile.mkdtemp()) / "my-run"
        >>> run.mkdir()
        >>> _ = (run / "results.jsonl").write_text(
        ...     '{"idx": 3, "trial": 0, "abbrev": "BRI", "task": "best_region_identification", "reward": 1.0,'
        ...     ' "turns": 1, "end_reason": "submitted", "submitted": "OR", "gold": "OR",'
        ...     ' "trajectory": [{"observation": "Which state?"}, {"turn": 1, "action": "submit OR",'
        ...     ' "observation": "Answer submitted. The episode is over.", "action_kind": "submit"}]}\\n'
        ...     '{"idx": 4, "tri')
        >>> data = ViewerData([run])
        >>> runs = data.api("/api/runs")["runs"]
        >>> runs[0]["id"], runs[0]["episodes"], runs[0]["problems"][-1][:40]
        ('my-run', 1, 'the last line of results.jsonl is incomp')
        >>> data.api("/api/runs/my-run/episodes?sort=reward&order=desc&limit=10")["episodes"][0]["submitted"]
        'OR'
        >>> data.api("/api/runs/my-run/episodes/3/0")["steps"][0]["parsed"]["kind"]
        'submit'
    """

    def __init__(self, paths: Sequence[str | os.PathLike[str]]) -> None:
        if not paths:
            raise ValueError("the viewer needs at least one run directory or trajectory file")
        self._lock = threading.Lock()
        self.sources: list[_Source] = []
        self.experiments: list[_Experiment] = []
        self._cache: dict[str, Any] = {}  # documents over every source, cleared on any change
        self._used: set[str] = set()
        for raw in paths:
            path = Path(raw)
            if path.is_dir() and (path / EXPERIMENT_FILE).is_file():
                self.experiments.append(_Experiment(self._unique(_slug(path.resolve().name)), path))
            for found, name, group in _expand(path):
                self._add(found, name, group)
        self.refresh()

    def _unique(self, name: str) -> str:
        unique, n = name, 2
        while unique in self._used:
            unique, n = f"{name}-{n}", n + 1
        self._used.add(unique)
        return unique

    def _add(self, path: Path, name: str, group: dict[str, str]) -> _Source:
        source = _Source(self._unique(name), path, "trajectory" if path.is_file() else "run", group)
        self.sources.append(source)
        return source

    # -- reading -------------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Read again every source whose files changed (and the cells an experiment has added since);
        whether any did."""
        changed = False
        with self._lock:
            for experiment in self.experiments:
                changed |= self._refresh_experiment(experiment)
            for source in self.sources:
                if source.kind == "run":
                    signature = (_stat(source.path / RESULTS_FILE), _stat(source.path / METADATA_FILE))
                else:
                    signature = (_stat(source.path),)
                if signature == source.signature:
                    continue
                previous, source.signature = source.signature, signature
                changed = True
                kept = source.cache.get("episodes")
                source.cache.clear()
                if _grew(previous, signature, source):
                    before = len(source.records)
                    last = source.records[-1] if source.records else None
                    self._append(source)  # a run writing: read only its new lines
                    if kept is not None and (last is None or source.records[before - 1] is last):
                        # Every new episode sorts after the old ones: the list grows, it is not made again.
                        new = source.records[before:]
                        source.cache["episodes"] = (
                            kept[0] + [_episode_brief(r) for r in new],
                            kept[1] + [_search_fields(r) for r in new],
                        )
                else:
                    self._load(source)
            if changed:
                self._cache.clear()
        return changed

    def _refresh_experiment(self, experiment: _Experiment) -> bool:
        signature = _stat(experiment.path / EXPERIMENT_FILE)
        if signature == experiment.signature:
            return False
        experiment.signature = signature
        state, experiment.problem = _read_experiment(experiment.path)
        if experiment.problem is not None:
            return True
        spec = state.get("spec") if isinstance(state.get("spec"), dict) else {}
        experiment.spec, experiment.name = spec, str(spec.get("name") or experiment.path.name)
        experiment.cells = [c for c in state.get("cells", []) if isinstance(c, dict)]
        known = {s.path.resolve() for s in self.sources}
        for found, name, group in _expand(experiment.path):  # cells that began since the viewer started
            if found.resolve() not in known:
                self._add(found, name, group)
        return True

    def _load(self, source: _Source) -> None:
        source.metadata, source.records, source.problems, source.fatal, source.torn_bytes = {}, [], [], None, 0
        source.offset = source.lines_read = 0
        source.by_key = {}
        try:
            if source.kind == "run":
                self._load_run(source)
            else:
                self._load_trajectory(source)
        except OSError as err:
            source.fatal = f"cannot read {str(err.filename or source.path)!r}: {err.strerror or err}"

    def _load_run(self, source: _Source) -> None:
        path = source.path
        if not path.exists():
            source.fatal = f"{str(path)!r} does not exist"
            return
        if not path.is_dir():
            source.fatal = f"{str(path)!r} is neither a run directory nor a trajectory file"
            return
        metadata_path = path / METADATA_FILE
        if metadata_path.is_file():
            try:
                metadata = json.loads(metadata_path.read_text(encoding="utf-8"))
                if not isinstance(metadata, dict):
                    raise ValueError("it is not a JSON object")
                source.metadata = metadata
            except (ValueError, UnicodeDecodeError) as err:
                source.problems.append(f"{METADATA_FILE} cannot be read ({err}); the run is shown without it")
        else:
            source.problems.append(f"the run has no {METADATA_FILE}: its settings are unknown")
        version = source.metadata.get("results_format", 1)
        if version != RESULTS_FORMAT:
            source.fatal = (
                f"{str(path)!r} holds results in format {version!r}, which this version of crmarena-gym does not "
                f"read (it reads format {RESULTS_FORMAT}): open it with the crmarena-gym that wrote it"
            )
            return
        if not (path / RESULTS_FILE).is_file():
            source.fatal = f"{str(path)!r} is not a run directory: it has no {RESULTS_FILE}"
            return
        self._append(source)

    def _append(self, source: _Source) -> None:
        """Read the lines a run's results file gained since the last read."""
        try:
            lines, problems, source.torn_bytes, source.offset = _read_lines(
                source.path / RESULTS_FILE, source.offset, source.lines_read + 1
            )
        except OSError as err:
            source.fatal = f"cannot read {str(err.filename or source.path)!r}: {err.strerror or err}"
            return
        source.lines_read += len(lines) + len(problems)
        source.problems += problems
        for number, record in lines:
            if (
                not isinstance(record, dict)
                or not isinstance(record.get("idx"), int)
                or not isinstance(record.get("trial"), int)
            ):
                source.problems.append(f"line {number} of {RESULTS_FILE} is not an episode record; it is left out")
                continue
            for problem in _repair(record):
                source.problems.append(
                    f"line {number} of {RESULTS_FILE} (episode {record['idx']}/{record['trial']}): {problem}"
                )
            source.by_key.setdefault((record["idx"], record["trial"]), record)
        source.records = sorted(source.by_key.values(), key=lambda r: (r["idx"], r["trial"]))

    def _load_trajectory(self, source: _Source) -> None:
        lines, problems, source.torn_bytes, _ = _read_lines(source.path)
        source.problems += problems
        episodes: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for number, line in lines:
            if not _is_trajectory_line(line):
                source.fatal = (
                    f"{str(source.path)!r} line {number} is not a RecordTrajectory line (it needs the integers "
                    "'episode' and 'step'): give a run directory or a file written by the RecordTrajectory wrapper"
                )
                return
            episodes[line["episode"]].append(line)
        trials: dict[int, int] = defaultdict(int)
        stacks: dict[str, list[dict[str, Any]]] = {}
        for number in sorted(episodes):
            record = _trajectory_record(number, episodes[number])
            source.problems += [f"episode {number}: {problem}" for problem in _repair(record)]
            record["trial"] = trials[record["idx"]]
            trials[record["idx"]] += 1
            source.by_key[(record["idx"], record["trial"])] = record
            if record.get("env_stack"):
                stacks.setdefault(json.dumps(record["env_stack"], sort_keys=True), record["env_stack"])
        source.records = sorted(source.by_key.values(), key=lambda r: (r["idx"], r["trial"]))
        source.metadata = {"run": {"policy": "(recorded trajectory)", "env_id": "RecordTrajectory"}}
        if stacks:
            source.metadata["env_stack"] = next(iter(stacks.values()))
        if len(stacks) > 1:
            shown = "; ".join(", ".join(describe_wrappers(stack)) or "no wrapper" for stack in stacks.values())
            source.problems.append(
                f"the episodes were recorded under {len(stacks)} different environments ({shown}): "
                "each episode's page names its own"
            )
        elif not stacks and source.records:
            inferred = _inferred_wrappers(source.records)
            if inferred:
                source.metadata["inferred_wrappers"] = inferred

    # -- answers -------------------------------------------------------------------------------

    def api(self, target: str) -> dict[str, Any]:
        """The JSON document at a viewer API path.

        Paths: ``/api/state``; ``/api/runs`` (every run and experiment); ``/api/runs/ID`` (a run with its
        per-task table); ``/api/runs/ID/episodes`` with ``?sort=KEY&order=asc|desc&offset=N&limit=N`` and
        the filters ``task``, ``outcome`` (success, failure, partial), ``end``, ``code`` (an error code,
        ``any`` or ``dropout``), ``min_turns``, ``max_turns``, ``q`` (search); ``/api/runs/ID/episodes/IDX/TRIAL``;
        ``/api/instances`` (which runs solved each instance) with ``?by=run|policy|sweep|setting``, the
        column filters ``sweep`` and ``policy``, ``task``, ``show`` (differ, unsolved, solved), ``sort``
        (idx, task, solved_by), ``order``, ``offset``, ``limit``, ``cols_offset``, ``cols_limit``; and
        ``/api/instances/IDX`` (every run's episodes of one instance). Without ``limit`` a list is whole.

        Raises:
            ViewerError: An unknown path, run or episode (status 404), or a malformed one (400).
        """
        split = urlsplit(target)
        parts = [unquote(p) for p in split.path.strip("/").split("/")]
        params = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        if parts[:1] != ["api"]:
            raise ViewerError(f"no such API path: {target!r}")
        parts = parts[1:]
        with self._lock:
            if parts == ["state"]:
                return self._state()
            if parts == ["runs"]:
                return {"runs": [self._run_brief(s) for s in self.sources], "experiments": self._experiments()}
            if parts == ["instances"]:
                return _query_instances(self._matrix(), [self._run_brief(s) for s in self.sources], params)
            if len(parts) == 2 and parts[0] == "instances":
                return self._instance(parts[1])
            if len(parts) >= 2 and parts[0] == "runs":
                source = self._source(parts[1])
                if len(parts) == 2:
                    return self._run_detail(source)
                if parts[2] == "episodes" and len(parts) == 3:
                    briefs, search = self._episode_list(source)
                    return _query_episodes(source.id, briefs, search, params)
                if parts[2] == "episodes" and len(parts) == 5:
                    return self._episode(source, parts[3], parts[4])
        raise ViewerError(f"no such API path: {target!r}")

    @staticmethod
    def _cached(cache: dict[str, Any], key: str, compute: Callable[[], Any]) -> Any:
        if key not in cache:
            cache[key] = compute()
        return cache[key]

    def _source(self, run_id: str) -> _Source:
        for source in self.sources:
            if source.id == run_id:
                return source
        known = ", ".join(s.id for s in self.sources[:10]) + (", ..." if len(self.sources) > 10 else "")
        raise ViewerError(f"no run {run_id!r} in this viewer (it shows {len(self.sources)}: {known})")

    def _state(self) -> dict[str, Any]:
        """One token per source that changes whenever its files do (the page polls it to update live)."""
        state = {s.id: f"{s.signature}" for s in self.sources}
        state.update({f"experiment:{e.id}": f"{e.signature}" for e in self.experiments})
        return {"runs": state}

    def _summary(self, source: _Source) -> dict[str, dict[str, Any]]:
        """The per-task summary of the episodes that have ended (a recording still running is left out)."""
        return self._cached(source.cache, "summary", lambda: _summary(source.records))

    def _run_brief(self, source: _Source) -> dict[str, Any]:
        return self._cached(source.cache, "brief", lambda: self._make_brief(source))

    def _make_brief(self, source: _Source) -> dict[str, Any]:
        run = source.metadata.get("run") or {}
        expected = source.metadata.get("episodes")
        policy = run.get("policy")
        group = source.group
        brief: dict[str, Any] = {
            "id": source.id,
            "name": source.id,
            "kind": source.kind,
            "path": str(source.path),
            "group": group,
            # The column each grouping of the solved-by table puts the run in.
            "columns": {
                "run": source.id,
                "policy": group.get("policy") or str(policy or "?"),
                "sweep": group.get("sweep") or group.get("folder") or "(no sweep)",
                "setting": f"{group['sweep']}: {group['setting']}" if "setting" in group else "(no setting)",
            },
            "policy": policy,
            "framework": (run.get("policy_options") or {}).get("framework"),
            "env_id": run.get("env_id"),
            "env_kwargs": run.get("env_kwargs"),
            "wrappers": describe_wrappers(source.metadata.get("env_stack") or []),
            "wrappers_inferred": source.metadata.get("inferred_wrappers"),
            "trials": source.metadata.get("trials"),
            "episodes": len(source.records),
            "expected_episodes": expected,
            "complete": expected is not None and len(source.records) >= expected,
            "error": source.fatal,
            "problems": source.problems + _torn_problem(source),
            "command": _command(source.metadata.get("command"), group),
            "accuracy": None,
            "accuracy_ci": None,
            "pass_k": None,
            "errors": None,
            "turns": None,
            "cost": None,
        }
        rows = self._summary(source)
        if rows:  # some episode has ended
            overall = rows["all"]
            rewards = [float(r.get("reward") or 0.0) for r in source.records if r.get("end_reason") != "running"]
            brief.update(
                accuracy=overall["accuracy"],
                accuracy_ci=list(bootstrap_ci(rewards)),
                pass_k=overall["pass_k"],
                errors=overall["errors"],
                turns=overall["turns"],
                cost=overall["cost"],
            )
        return brief

    def _run_detail(self, source: _Source) -> dict[str, Any]:
        detail = dict(self._run_brief(source))
        detail["metadata"] = {k: v for k, v in source.metadata.items() if k != "system_prompts"}
        detail["system_prompts"] = source.metadata.get("system_prompts") or {}
        detail["table"] = self._cached(
            source.cache, "table", lambda: interval_table(source.records, self._summary(source))
        )
        return detail

    def _experiments(self) -> list[dict[str, Any]]:
        by_path = {s.path.resolve(): s.id for s in self.sources}
        out = []
        for e in self.experiments:
            cells = []
            for c in e.cells:
                run = by_path.get((e.path / str(c.get("path", ""))).resolve())
                cells.append(
                    {
                        "sweep": c.get("sweep"),
                        "policy": c.get("policy"),
                        "setting": c.get("label"),
                        "status": c.get("status"),
                        "reason": c.get("reason"),
                        "run": run,
                    }
                )
            selection = {k: e.spec.get(k) for k in ("env", "task", "per_task", "limit", "trials", "seed")}
            out.append(
                {
                    "id": e.id,
                    "name": e.name or e.path.name,
                    "path": str(e.path),
                    "problem": e.problem,
                    "selection": {k: v for k, v in selection.items() if v is not None},
                    "sweeps": [s.get("name") for s in e.spec.get("sweeps", []) if isinstance(s, dict)],
                    "policies": [p.get("name") for p in e.spec.get("policies", []) if isinstance(p, dict)],
                    "cells": cells,
                }
            )
        return out

    def _episode_list(self, source: _Source) -> tuple[list[dict[str, Any]], list[list[tuple[str, str]]]]:
        """The episode list's rows and, beside them, the texts a search looks in."""
        return self._cached(
            source.cache,
            "episodes",
            lambda: ([_episode_brief(r) for r in source.records], [_search_fields(r) for r in source.records]),
        )

    def episode_lists(self) -> Iterator[tuple[str, list[dict[str, Any]], list[list[tuple[str, str]]]]]:
        """Each run's episode rows and search texts (what a static copy of the viewer filters and sorts)."""
        self.refresh()
        for source in self.sources:
            with self._lock:
                briefs, search = self._episode_list(source)
            yield source.id, briefs, search

    def warm(self) -> None:
        """Work out what the first pages ask for (each run's summary, table and episode list, the
        solved-by matrix) ahead of the requests, a run at a time (requests are answered in between)."""
        for source in list(self.sources):
            with self._lock:
                self._run_brief(source)
                self._cached(source.cache, "table", lambda s=source: interval_table(s.records, self._summary(s)))
                self._episode_list(source)
        with self._lock:
            self._matrix()

    def _episode(self, source: _Source, idx_text: str, trial_text: str) -> dict[str, Any]:
        try:
            key = (int(idx_text), int(trial_text))
        except ValueError:
            named = f"{idx_text!r}/{trial_text!r}"
            raise ViewerError(f"an episode is named by two integers idx/trial, got {named}", 400) from None
        record = source.by_key.get(key)
        if record is None:
            raise ViewerError(f"run {source.id!r} has no episode idx {key[0]}, trial {key[1]}")
        return _episode_detail(source.id, record, source.metadata)

    def _matrix(self) -> dict[int, dict[str, Any]]:
        """For each instance, each run's successes, trials and first trial (episodes still running left out)."""

        def compute() -> dict[int, dict[str, Any]]:
            matrix: dict[int, dict[str, Any]] = {}
            for source in self.sources:
                for r in source.records:
                    if r.get("end_reason") == "running":
                        continue
                    row = matrix.setdefault(r["idx"], {"idx": r["idx"], "abbrev": r.get("abbrev"), "runs": {}})
                    cell = row["runs"].setdefault(source.id, [0, 0, r["trial"]])
                    cell[0] += bool(_success(r))
                    cell[1] += 1
            return dict(sorted(matrix.items()))

        return self._cached(self._cache, "matrix", compute)

    def matrix(self) -> list[dict[str, Any]]:
        """The solved-by matrix, instance by instance (what a static copy of the viewer groups and pages)."""
        self.refresh()
        with self._lock:
            return list(self._matrix().values())

    def _instance(self, idx_text: str) -> dict[str, Any]:
        """One instance: its question and gold, and every run's episodes of it."""
        try:
            idx = int(idx_text)
        except ValueError:
            raise ViewerError(f"an instance is named by its integer idx, got {idx_text!r}", 400) from None
        runs: dict[str, Any] = {}
        first: dict[str, Any] | None = None
        for source in self.sources:
            mine = [r for (i, _), r in source.by_key.items() if i == idx] if source.records else []
            if not mine:
                continue
            mine.sort(key=lambda r: r["trial"])
            first = first or mine[0]
            ended = [r for r in mine if r.get("end_reason") != "running"]
            runs[source.id] = {
                "group": source.group,
                "successes": sum(bool(_success(r)) for r in ended),
                "trials": len(ended),
                "trial_list": [r["trial"] for r in mine],
                "episodes": [
                    {
                        "trial": r["trial"],
                        "reward": r.get("reward"),
                        "success": _success(r),
                        "end_reason": r.get("end_reason"),
                        "turns": r.get("turns"),
                        "submitted": r.get("submitted"),
                    }
                    for r in mine
                ],
            }
        if first is None:
            raise ViewerError(f"no run of this viewer has an episode of instance {idx}")
        return {
            "idx": idx,
            "abbrev": first.get("abbrev"),
            "task": first.get("task"),
            "question": ((first.get("trajectory") or [{}])[0] or {}).get("observation", ""),
            "gold": first.get("gold"),
            "gold_state": _gold_state(first),
            "runs": runs,
        }


def _command(command: Any, group: Mapping[str, str]) -> str | None:
    """The command that wrote a run, to run it again (an experiment's cell: the experiment's command)."""
    if "experiment" in group:
        return None  # the experiment's cells are run again by the experiment (the page says how)
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        return shlex.join(command)
    return None


def describe_wrappers(stack: list[dict[str, Any]]) -> list[str]:
    """The env stack's wrappers as ``Name(arg=value, ...)``, outermost first (Gymnasium's checkers left out)."""
    shown = []
    for layer in stack[:-1]:
        if not isinstance(layer, dict):
            continue
        name = str(layer.get("class", "?")).rpartition(":")[2].rpartition(".")[2]
        if name in _CHECKERS:
            continue
        kwargs = layer.get("kwargs") or {}
        shown.append(f"{name}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})")
    return shown


def _inferred_wrappers(records: list[dict[str, Any]]) -> list[str]:
    """What a recording without its env stack shows of its wrappers, from the steps' info."""
    modes = sorted(
        {
            str(s["dropout"].get("mode"))
            for r in records
            for s in (r.get("trajectory") or [])[1:]
            if isinstance(s.get("dropout"), dict)
        }
    )
    found = [f"ToolResultDropout(mode={m!r})" for m in modes]
    if any("turns_left" in s for r in records for s in (r.get("trajectory") or [])[1:]):
        found.append("TurnLimit")
    return found


def _success(record: dict[str, Any]) -> bool:
    return float(record.get("reward") or 0.0) >= 1.0


def _summary(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    finished = [r for r in records if r.get("end_reason") != "running"]
    return summarize(finished) if finished else {}


def interval_table(records: list[dict[str, Any]], rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The per-task summary (:func:`~crmarena_gym.eval.summarize`) with a 95% bootstrap interval of the
    accuracy per row. Episodes still being recorded (a trajectory without its end) are left out."""
    finished = [r for r in records if r.get("end_reason") != "running"]
    rewards: dict[str, list[float]] = defaultdict(list)
    for r in finished:
        rewards[task_key(r)].append(float(r.get("reward") or 0.0))
        rewards["all"].append(float(r.get("reward") or 0.0))
    return {task: {**row, "accuracy_ci": list(bootstrap_ci(rewards[task]))} for task, row in rows.items()}


def _gold_state(record: dict[str, Any]) -> str:
    """``answer`` (the gold is known), ``unanswerable`` (the instance has no answer: the gold is None) or
    ``unrecorded`` (the record does not know the gold: a trajectory recorded without privileged info)."""
    if record.get("answerable") is False or (record.get("gold_recorded") and record.get("gold") is None):
        return "unanswerable"
    if record.get("gold") is None and not record.get("answerable"):
        return "unrecorded"
    return "answer"


def _is_seconds(value: Any) -> bool:
    return type(value) in (int, float) and value >= 0  # a bool is not a number of seconds


def _timing(step: dict[str, Any]) -> dict[str, float] | None:
    """A step's timing in seconds where its record has it: ``timing`` (a part's name to seconds), a total
    under one of the usual names, or the model call's in its usage; None when it was not measured."""
    parts: dict[str, float] = {}
    timing = step.get("timing")
    if isinstance(timing, dict):
        parts = {str(k): float(v) for k, v in timing.items() if _is_seconds(v)}
    total = next((step[n] for n in _TIMING_FIELDS if n in step and _is_seconds(step[n])), None)
    if total is not None:
        parts["step"] = float(total)
    policy = step.get("policy")
    usage = policy.get("usage") if isinstance(policy, dict) else None
    if isinstance(usage, dict):
        model = next((usage[n] for n in _TIMING_FIELDS if n in usage and _is_seconds(usage[n])), None)
        if model is not None:
            parts.setdefault("model", float(model))
    return parts or None


def _episode_seconds(record: dict[str, Any]) -> float | None:
    """The episode's measured time: its own, or its steps' (None when nothing was measured)."""
    own = next((record[n] for n in _TIMING_FIELDS if n in record and _is_seconds(record[n])), None)
    if own is not None:
        return float(own)
    total, measured = 0.0, False
    for step in (record.get("trajectory") or [])[1:]:
        timing = _timing(step)
        if timing:
            measured = True
            total += timing["step"] if "step" in timing else sum(timing.values())
    return total if measured else None


def _episode_brief(record: dict[str, Any]) -> dict[str, Any]:
    """One row of an episode list: what it shows, sorts and filters by."""
    steps = (record.get("trajectory") or [])[1:]
    usage = record.get("usage") or {}
    return {
        "idx": record["idx"],
        "trial": record["trial"],
        "abbrev": record.get("abbrev"),
        "task": record.get("task"),
        "reward": record.get("reward"),
        "success": _success(record),
        "end_reason": record.get("end_reason"),
        "turns": record.get("turns"),
        "error": record.get("error"),
        "error_codes": sorted({s["error"] for s in steps if isinstance(s.get("error"), str)}),
        "dropout_hits": sum(1 for s in steps if isinstance(s.get("dropout"), dict) and s["dropout"].get("hit")),
        "submitted": record.get("submitted"),
        "gold": record.get("gold"),
        "gold_state": _gold_state(record),
        "tokens": usage.get("total_tokens"),
        "cost": usage.get("cost"),
        "seconds": _episode_seconds(record),
    }


def _search_fields(record: dict[str, Any]) -> list[tuple[str, str]]:
    """Where a search looks in an episode, with the names it shows a hit under: each action (its first
    characters), the answer, the gold and the error."""
    fields = [
        (f"turn {s.get('turn', n)}", str(s.get("action", ""))[:_SEARCH_CHARS])
        for n, s in enumerate((record.get("trajectory") or [])[1:], 1)
    ]
    for name in ("submitted", "gold", "error"):
        if record.get(name) is not None:
            fields.append((name, str(record[name])))
    return fields


def _int_param(params: Mapping[str, str], name: str, default: int | None, maximum: int | None = None) -> int | None:
    text = params.get(name, "")
    if text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ViewerError(f"{name} must be a whole number, got {text!r}", 400) from None
    if value < 0 or (maximum is not None and value > maximum):
        bound = f"between 0 and {maximum}" if maximum is not None else "0 or more"
        raise ViewerError(f"{name} must be {bound}, got {value}", 400)
    return value


def _order(params: Mapping[str, str]) -> bool:
    """Whether the order asked for is descending."""
    order = params.get("order") or "asc"
    if order not in ("asc", "desc"):
        raise ViewerError(f"order must be 'asc' or 'desc', got {order!r}", 400)
    return order == "desc"


def _sorted(rows: list[Any], key: Callable[[Any], Any], descending: bool) -> list[Any]:
    """Rows sorted by ``key`` (rows without a value last, whatever the order), ties in their given order."""
    having = [r for r in rows if key(r) is not None]
    lacking = [r for r in rows if key(r) is None]
    return sorted(having, key=key, reverse=descending) + lacking


_EPISODE_KEYS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "idx": lambda e: e["idx"],
    "trial": lambda e: e["trial"],
    "task": lambda e: e["abbrev"],
    "reward": lambda e: e["reward"],
    "end": lambda e: e["end_reason"],
    "turns": lambda e: e["turns"],
    "tokens": lambda e: e["tokens"],
    "cost": lambda e: e["cost"],
    "errors": lambda e: len(e["error_codes"]),
    "dropout": lambda e: e["dropout_hits"],
    "seconds": lambda e: e["seconds"],
}


def _hit(fields: list[tuple[str, str]], needle: str) -> dict[str, str] | None:
    """The first place ``needle`` (lower case) occurs, with some context."""
    for name, text in fields:
        at = text.lower().find(needle)
        if at >= 0:
            end = at + len(needle)
            return {
                "field": name,
                "before": ("…" if at > _HIT_BEFORE else "") + text[max(0, at - _HIT_BEFORE) : at],
                "match": text[at:end],
                "after": text[end : end + _HIT_AFTER] + ("…" if len(text) > end + _HIT_AFTER else ""),
            }
    return None


def _query_episodes(
    run_id: str, briefs: list[dict[str, Any]], search: list[list[tuple[str, str]]], params: Mapping[str, str]
) -> dict[str, Any]:
    """One page of a run's episode list: filtered, sorted, with the search hit of each row."""
    sort = params.get("sort") or "idx"
    if sort not in _EPISODE_KEYS:
        raise ViewerError(f"an episode list sorts by one of {', '.join(EPISODE_SORTS)}, not {sort!r}", 400)
    descending = _order(params)
    offset = _int_param(params, "offset", 0) or 0
    limit = _int_param(params, "limit", None, _MAX_LIMIT)
    min_turns = _int_param(params, "min_turns", None)
    max_turns = _int_param(params, "max_turns", None)
    task, outcome, end, code = (params.get(k, "") for k in ("task", "outcome", "end", "code"))
    needle = params.get("q", "").strip().lower()
    if outcome not in ("", "success", "failure", "partial"):
        raise ViewerError(f"outcome is success, failure or partial, not {outcome!r}", 400)
    rows: list[dict[str, Any]] = []
    for brief, fields in zip(briefs, search, strict=True):
        if task and brief["abbrev"] != task:
            continue
        if (outcome == "success" and not brief["success"]) or (outcome == "failure" and brief["success"]):
            continue
        reward = float(brief["reward"] or 0.0)
        if outcome == "partial" and not 0 < reward < 1:
            continue
        if end and brief["end_reason"] != end:
            continue
        if code == "any" and not brief["error_codes"]:
            continue
        if code == "dropout" and not brief["dropout_hits"]:
            continue
        if code and code not in ("any", "dropout") and code not in brief["error_codes"]:
            continue
        turns = brief["turns"] or 0
        if (min_turns is not None and turns < min_turns) or (max_turns is not None and turns > max_turns):
            continue
        if needle:
            hit = _hit(fields, needle)
            if hit is None:
                continue
            brief = {**brief, "hit": hit}
        rows.append(brief)
    rows = _sorted(rows, _EPISODE_KEYS[sort], descending)
    page = rows[offset : offset + limit] if limit is not None else rows[offset:]
    return {
        "run": run_id,
        "total": len(briefs),
        "matched": len(rows),
        "offset": offset,
        "limit": limit,
        "sort": sort,
        "order": "desc" if descending else "asc",
        "episodes": page,
        "facets": {
            "tasks": sorted({b["abbrev"] for b in briefs if b["abbrev"] is not None}),
            "end_reasons": sorted({str(b["end_reason"]) for b in briefs if b["end_reason"] is not None}),
            "error_codes": sorted({c for b in briefs for c in b["error_codes"]}),
        },
    }


_INSTANCE_BY = ("run", "policy", "sweep", "setting")
_INSTANCE_KEYS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "idx": lambda r: r["idx"],
    "task": lambda r: r["abbrev"],
    "solved_by": lambda r: r["solved_by"],
}


def _query_instances(
    matrix: Mapping[int, dict[str, Any]], runs: list[dict[str, Any]], params: Mapping[str, str]
) -> dict[str, Any]:
    """The solved-by table: a page of instances by a page of columns (runs, or runs grouped by policy,
    sweep or setting: a group's cell adds up its runs' trials)."""
    by = params.get("by") or "run"
    if by not in _INSTANCE_BY:
        raise ViewerError(f"the solved-by table groups runs by {', '.join(_INSTANCE_BY)}, not {by!r}", 400)
    sort = params.get("sort") or "idx"
    if sort not in _INSTANCE_KEYS:
        raise ViewerError(f"the solved-by table sorts by {', '.join(_INSTANCE_KEYS)}, not {sort!r}", 400)
    descending = _order(params)
    offset = _int_param(params, "offset", 0) or 0
    limit = _int_param(params, "limit", None, _MAX_LIMIT)
    cols_offset = _int_param(params, "cols_offset", 0) or 0
    cols_limit = _int_param(params, "cols_limit", None, _MAX_LIMIT)
    task, show = params.get("task", ""), params.get("show", "")
    if show not in ("", "differ", "unsolved", "solved"):
        raise ViewerError(f"show is differ, unsolved or solved, not {show!r}", 400)
    sweep, policy = params.get("sweep", ""), params.get("policy", "")
    readable = [r for r in runs if not r["error"]]
    chosen = [
        r
        for r in readable
        if (not sweep or r["columns"]["sweep"] == sweep) and (not policy or r["columns"]["policy"] == policy)
    ]
    columns: dict[str, list[str]] = {}
    for r in chosen:
        columns.setdefault(r["columns"][by], []).append(r["id"])
    rows = []
    for row in matrix.values():
        if task and row["abbrev"] != task:
            continue
        cells: list[dict[str, Any] | None] = []
        for members in columns.values():
            played = [(run, row["runs"][run]) for run in members if run in row["runs"]]
            if not played:
                cells.append(None)
                continue
            cells.append(
                {
                    "successes": sum(c[0] for _, c in played),
                    "trials": sum(c[1] for _, c in played),
                    "runs": len(played),
                    "open": [played[0][0], played[0][1][2]],
                }
            )
        played_by = sum(c is not None for c in cells)
        if not played_by:
            continue
        solved_by = sum(1 for c in cells if c is not None and c["successes"])
        if (
            (show == "differ" and not 0 < solved_by < played_by)
            or (show == "unsolved" and solved_by)
            or (show == "solved" and solved_by < played_by)
        ):
            continue
        rows.append(
            {"idx": row["idx"], "abbrev": row["abbrev"], "cells": cells, "solved_by": solved_by, "played_by": played_by}
        )
    rows = _sorted(rows, _INSTANCE_KEYS[sort], descending)
    page = rows[offset : offset + limit] if limit is not None else rows[offset:]
    col_end = cols_offset + cols_limit if cols_limit is not None else None
    names = list(columns)
    return {
        "by": by,
        "columns": [{"id": name, "runs": columns[name]} for name in names[cols_offset:col_end]],
        "total_columns": len(names),
        "cols_offset": cols_offset,
        "cols_limit": cols_limit,
        "rows": [{**r, "cells": r["cells"][cols_offset:col_end]} for r in page],
        "total": len(matrix),
        "matched": len(rows),
        "offset": offset,
        "limit": limit,
        "sort": sort,
        "order": "desc" if descending else "asc",
        "facets": {
            "tasks": sorted({r["abbrev"] for r in matrix.values() if r["abbrev"] is not None}),
            "sweeps": sorted({r["columns"]["sweep"] for r in readable}),
            "policies": sorted({r["columns"]["policy"] for r in readable}),
        },
    }


def _parsed(action: Any) -> dict[str, Any]:
    """An action as the environment reads it (:func:`~crmarena_gym.envs.parse_action`)."""
    if not isinstance(action, str):
        return {"kind": "invalid", "error": f"the action is not text: {action!r}"}
    try:
        parsed = parse_action(action, functions=True)
    except RecursionError:
        return {"kind": "invalid", "error": "the action is nested too deeply to be read"}
    out: dict[str, Any] = {"kind": parsed.kind}
    if parsed.kind == "query":
        out.update(language=parsed.language, query=parsed.text)
    elif parsed.kind == "call":
        out.update(name=parsed.name, arguments=parsed.arguments)
    elif parsed.kind == "submit":
        out["answer"] = parsed.text
    else:
        out["error"] = parsed.error
    return out


def _path_text(path: list[Any]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "the result"


def _effects(step: dict[str, Any]) -> list[str]:
    """What wrappers did to a step, in words."""
    effects = []
    dropout = step.get("dropout")
    if isinstance(dropout, dict) and dropout.get("hit"):
        mode = dropout.get("mode")
        text = _DROPOUT_EFFECTS.get(mode, f"the result was hit ({mode})")  # type: ignore[arg-type]
        if mode == "truncate" and "kept" in dropout:
            text += f" (kept {dropout['kept']})"
        if mode == "corrupt":
            if isinstance(dropout.get("path"), list) and dropout["path"]:
                text += f" (at {_path_text(dropout['path'])}, marked)"
            elif dropout.get("changed") is not None:
                text += f" (a field {dropout['changed']}; the record does not say which row: each is marked)"
            else:
                text = "the result held no value that could be changed (a single value): it is shown as it was"
        effects.append(f"ToolResultDropout: {text}")
    if step.get("end_reason") == "turn_limit":
        effects.append("TurnLimit: the turn budget ran out; the episode was cut with reward 0")
    observation = step.get("observation")
    if isinstance(observation, str) and "[observation truncated:" in observation:
        effects.append("the observation was cut at the length limit")
    return effects


def _explain_reward(record: dict[str, Any]) -> str:
    """How the reward was reached, in one sentence."""
    end = record.get("end_reason")
    if end in ERROR_END_REASONS:
        return f"reward 0: the episode ended in {end} ({record.get('error')})"
    if end in ("max_turns", "turn_limit"):
        return f"reward 0: no answer was submitted within the {record.get('turns')} turns allowed"
    if end == "no_tool_call":
        return "reward 0: a function-calling reply made no call, which ends the episode without an answer"
    if end == "stopped":
        return "reward 0: the trainer stopped the rollout before an answer was submitted"
    if end == "running":
        return "the episode has not ended yet"
    breakdown = record.get("reward_breakdown") or {}
    if not breakdown:
        return f"reward {record.get('reward')}"
    if breakdown.get("metric") in ("state_diff", "state_diff+answer"):
        stray, missing = breakdown.get("stray") or [], breakdown.get("missing") or 0
        named = breakdown.get("metric") == "state_diff+answer"
        if float(breakdown.get("reward") or 0) >= 1:
            also = " and the answer it submitted names the right article" if named else ""
            return f"the org's final state has every change the task asks for and no other{also}: reward 1"
        parts = [f"{missing} required change{'s' * (missing != 1)} missing"] if missing else []
        parts += [f"{len(stray)} change{'s' * (len(stray) != 1)} nobody asked for"] if stray else []
        if named and not breakdown.get("answer_ok"):
            parts.append("the submitted answer is not the gold article")
        return f"the org's final state was compared with the changes the task asks for: {', '.join(parts)}: reward 0"
    compared = breakdown.get("compared")
    mode = breakdown.get("mode", "strict")
    read = "" if compared == breakdown.get("submitted") else f" (read as {compared!r} by the {mode} matching)"
    state = _gold_state(record)
    if state == "unrecorded":
        gold = "the gold answer (not recorded: the trajectory was recorded without privileged info)"
    elif state == "unanswerable":
        gold = "the gold None (the instance is unanswerable: the right answer is None)"
    else:
        gold = f"the gold {breakdown.get('gold', record.get('gold'))!r}"
    details = breakdown.get("details") if isinstance(breakdown.get("details"), dict) else None
    how = f" ({details['reason']})" if details and details.get("reason") else ""  # CRMArena-Pro's grading says how
    score = float(breakdown.get("reward") or 0)
    if breakdown.get("metric") == "privacy_rejection":
        return (
            f"privacy score {score:g}: {details.get('reason') if details else 'a refusal that leaks nothing scores 1'}"
        )
    if breakdown.get("metric") == "fuzzy_match":
        kind = "label-set F1" if how == " (set F1 over labels)" else "token F1"
        return f"{kind} between the submission{read} and {gold} after normalisation: {score:.3f}"
    verdict = "equal: reward 1" if score >= 1 else "different: reward 0"
    return f"exact match of the submission{read} against {gold}: {verdict}{how}"


def _episode_detail(run_id: str, record: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    trajectory = record.get("trajectory") or [{}]
    steps = []
    for step in trajectory[1:]:
        observation = step.get("observation")
        text = observation if isinstance(observation, str) else json.dumps(observation)
        policy = step.get("policy") if isinstance(step.get("policy"), dict) else {}
        dropout = step.get("dropout") if isinstance(step.get("dropout"), dict) else None
        steps.append(
            {
                "turn": step.get("turn"),
                "action": step.get("action"),
                "parsed": _parsed(step.get("action")),
                "action_kind": step.get("action_kind"),
                "observation": text,
                "long": len(text) > _FOLD_CHARS or text.count("\n") > _FOLD_LINES,
                "error": step.get("error"),
                "effects": _effects(step),
                "dropout": dropout if dropout and dropout.get("hit") else None,
                "timing": _timing(step),
                "turns_left": step.get("turns_left"),
                "reply": policy.get("reply"),
                "note": policy.get("note"),
                "tool_calls": policy.get("tool_calls"),
                "usage": policy.get("usage"),
                # A conversation's turn: the agent's message and the user's reply, shown apart.
                "user": {
                    "message": step.get("message"),
                    "reply": step.get("user_reply"),
                    "revealed": step.get("revealed") or [],
                }
                if "user_reply" in step
                else None,
            }
        )
    digest = record.get("system_prompt_sha256")
    stack = record.get("env_stack") or metadata.get("env_stack") or []
    last = trajectory[-1] if len(trajectory) > 1 else {}
    return {
        "run": run_id,
        "idx": record["idx"],
        "trial": record["trial"],
        "task": record.get("task"),
        "abbrev": record.get("abbrev"),
        "seed": record.get("seed"),
        "question": trajectory[0].get("observation", ""),
        "reward": record.get("reward"),
        "success": _success(record),
        "end_reason": record.get("end_reason"),
        "error": record.get("error"),
        "turns": record.get("turns"),
        "submitted": record.get("submitted"),
        "gold": record.get("gold"),
        "gold_state": _gold_state(record),
        "answerable": record.get("answerable"),
        "reward_breakdown": record.get("reward_breakdown"),
        "reward_explanation": _explain_reward(record),
        "final_reply": record.get("final_reply"),  # a function-calling reply that made no call
        "wrappers": describe_wrappers(stack) if stack else metadata.get("inferred_wrappers") or [],
        "wrappers_inferred": not stack and bool(metadata.get("inferred_wrappers")),
        "seconds": _episode_seconds(record),
        "usage": record.get("usage"),
        "system_prompt_sha256": digest,
        "system_prompt": (metadata.get("system_prompts") or {}).get(digest) if digest else None,
        "steps": steps,
        # Act mode: what the agent changed, what the task asked for, and the check of one against the other.
        "state_diff": last.get("state_diff"),
        "expected_changes": last.get("expected_changes"),
        "diff_check": last.get("diff_check"),
        "answer_check": last.get("answer_check"),  # the article a quote decision names, graded beside the diff
        # Conversations: the simulated user, the criteria it revealed, how the conversation ended.
        "conversation": record.get("conversation"),
    }


def _trajectory_record(number: int, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """A RecordTrajectory episode (its reset line, then its steps) as an episode record."""
    lines = sorted(lines, key=lambda line: line.get("step", 0))
    first = lines[0] if lines and lines[0].get("step") == 0 else {}
    info = first.get("info") or {}
    steps = [line for line in lines if line.get("step", 0) > 0]
    record: dict[str, Any] = {
        "task": info.get("task"),
        "abbrev": info.get("abbrev") or "?",
        "idx": info.get("idx") if isinstance(info.get("idx"), int) else number,
        "episode": number,
        "seed": first.get("seed"),
        "reward": 0.0,
        "turns": len(steps),
        "end_reason": "running",
        "error": None,
        "submitted": None,
        "gold": info.get("gold"),
        # A privileged env puts the gold (None for an unanswerable instance) in the reset info.
        "gold_recorded": "gold" in info,
        "answerable": None,
        "reward_breakdown": None,
        "usage": {},
        "env_stack": first.get("env_stack") if isinstance(first.get("env_stack"), list) else None,
    }
    trajectory: list[dict[str, Any]] = [{"observation": first.get("observation", "")}]
    for line in steps:
        step_info = dict(line.get("info") or {})
        step = {"turn": line.get("step"), "action": line.get("action"), "observation": line.get("observation")}
        step.update({k: v for k, v in step_info.items() if k not in _TRAJECTORY_INFO_SKIPPED})
        trajectory.append(step)
        if line.get("terminated"):
            record["reward"] = float(line.get("reward") or 0.0) if finite_number(line.get("reward")) else 0.0
            record["end_reason"] = "submitted"
            record["submitted"] = step_info.get("submitted")
            record["reward_breakdown"] = step_info.get("reward_breakdown")
            breakdown = record["reward_breakdown"]
            if not record["gold_recorded"] and isinstance(breakdown, dict) and "gold" in breakdown:
                record["gold"], record["gold_recorded"] = breakdown.get("gold"), True
        elif line.get("truncated"):
            record["end_reason"] = step_info.get("end_reason") or "max_turns"
    if record["gold_recorded"]:
        record["answerable"] = record["gold"] is not None
    if not first:
        record["error"] = "the recording of this episode lacks its reset line"
    record["success"] = record["reward"] >= 1.0
    record["trajectory"] = trajectory
    return record
