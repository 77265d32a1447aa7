"""What the trajectory viewer shows, as JSON: runs, per-task tables, episode lists, transcripts.

:class:`ViewerData` reads run directories (``results.jsonl`` and ``metadata.json``, as
:func:`~crmarena_gym.eval.evaluate` writes them) and trajectory files written by
:class:`~crmarena_gym.wrappers.RecordTrajectory`, and answers the viewer's questions about them. A source
is read again when its files change, so a run still writing shows its new episodes. A damaged source
never stops the others: what could be read is shown, with a message saying what was wrong (a missing
file, a line that is not JSON, a torn last line, a results format this version does not know).

The answers are plain JSON documents, one per viewer page (see :meth:`ViewerData.api`); the HTTP
server (:func:`~crmarena_gym.eval.serve_viewer`) serves them and the static export
(:func:`~crmarena_gym.eval.export_viewer`) bakes them into a file the same page reads.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from crmarena_gym.envs import parse_action
from crmarena_gym.eval._metrics import bootstrap_ci
from crmarena_gym.eval._results import METADATA_FILE, RESULTS_FILE, _complete_lines
from crmarena_gym.eval._summary import ERROR_END_REASONS, summarize

__all__ = ["RESULTS_FORMAT", "ViewerData", "ViewerError"]

#: The version of the records :func:`~crmarena_gym.eval.evaluate` writes (``metadata.json``'s
#: ``results_format``; runs written before it was recorded have none and read as 1).
RESULTS_FORMAT = 1
# Observations longer than this (or with more lines) are shown folded.
_FOLD_CHARS, _FOLD_LINES = 1200, 24
# The part of each action kept in an episode list for search (an oracle's call may carry long lists).
_SEARCH_CHARS = 4000
# The usage figures the tables add up.
_USAGE_NUMBERS = frozenset({"calls", "prompt_tokens", "completion_tokens", "total_tokens", "cost", "unpriced_calls"})
# As the runner does: the raw result (the observation shows it) and what the record keeps on its own.
_TRAJECTORY_INFO_SKIPPED = frozenset({"result", "turn", "submitted", "reward_breakdown"})
_DROPOUT_EFFECTS = {
    "drop": "the result was dropped: an empty result was shown instead",
    "error": "the result was replaced by a transient error",
    "truncate": "the result was cut short",
    "corrupt": "one value of the result was changed",
}


class ViewerError(LookupError):
    """A request for something the viewer does not have (an unknown run or episode); ``status`` is its
    HTTP status."""

    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Source:
    """One run directory or trajectory file, as last read."""

    id: str
    path: Path
    kind: str  # "run" or "trajectory"
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


def _expand(path: Path) -> list[tuple[Path, str]]:
    """The sources a path names, with their names: a run directory or a trajectory file is one; a directory
    holding run directories (an experiment's, a folder of runs) is each of them, named by its relative path."""
    if path.is_file() and path.name == RESULTS_FILE:
        path = path.parent  # results.jsonl given: its run directory
    base = _slug(path.resolve().name if path.name in ("", ".", "..") else path.name)
    if path.is_file():
        return [(path, base.removesuffix(".jsonl"))]
    if path.is_dir() and not (path / RESULTS_FILE).exists():
        runs = sorted(found.parent for found in path.rglob(RESULTS_FILE))
        root = path / "cells" if (path / "experiment.json").is_file() and (path / "cells").is_dir() else path
        if runs:
            return [(run, _slug(".".join(run.relative_to(root).parts))) for run in runs]
    return [(path, base)]


def _number(value: Any) -> bool:
    """None or a number (not a bool)."""
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _repair(record: dict[str, Any]) -> list[str]:
    """Make a record safe to show (what a damaged or foreign line lacks is set aside); what was wrong."""
    problems = []
    if not isinstance(record.get("abbrev"), str):
        record["abbrev"] = "?"
    for key in ("reward", "turns"):
        if not _number(record.get(key)):
            problems.append(f"its {key} {record[key]!r} is not a number; shown as 0")
            record[key] = 0
    trajectory = record.get("trajectory")
    if trajectory is not None and (
        not isinstance(trajectory, list) or not all(isinstance(s, dict) for s in trajectory)
    ):
        problems.append("its trajectory is not a list of steps; shown without it")
        record["trajectory"] = []
    for key in ("usage", "reward_breakdown"):
        if record.get(key) is not None and not isinstance(record[key], dict):
            problems.append(f"its {key} is not an object; shown without it")
            record[key] = None
    usage = record.get("usage") or {}
    for key, value in list(usage.items()):
        if key in _USAGE_NUMBERS and not _number(value):
            problems.append(f"its usage {key} {value!r} is not a number; left out")
            del usage[key]
    return problems


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
        paths: Run directories (each with ``results.jsonl``) and trajectory files (JSON Lines written by
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
        >>> data.api("/api/runs/my-run/episodes/3/0")["steps"][0]["parsed"]["kind"]
        'submit'
    """

    def __init__(self, paths: Sequence[str | os.PathLike[str]]) -> None:
        if not paths:
            raise ValueError("the viewer needs at least one run directory or trajectory file")
        self._lock = threading.Lock()
        self.sources: list[_Source] = []
        used: set[str] = set()
        for raw in paths:
            for path, name in _expand(Path(raw)):
                kind = "trajectory" if path.is_file() else "run"
                unique, n = name, 2
                while unique in used:
                    unique, n = f"{name}-{n}", n + 1
                used.add(unique)
                self.sources.append(_Source(unique, path, kind))
        self.refresh()

    # -- reading -------------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Read again every source whose files changed; whether any did."""
        changed = False
        with self._lock:
            for source in self.sources:
                if source.kind == "run":
                    signature = (_stat(source.path / RESULTS_FILE), _stat(source.path / METADATA_FILE))
                else:
                    signature = (_stat(source.path),)
                if signature == source.signature:
                    continue
                previous, source.signature = source.signature, signature
                changed = True
                source.cache.clear()
                if _grew(previous, signature, source):
                    self._append(source)  # a run writing: read only its new lines
                else:
                    self._load(source)
        return changed

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
        for number in sorted(episodes):
            record = _trajectory_record(number, episodes[number])
            source.problems += [f"episode {number}: {problem}" for problem in _repair(record)]
            record["trial"] = trials[record["idx"]]
            trials[record["idx"]] += 1
            source.by_key[(record["idx"], record["trial"])] = record
        source.records = sorted(source.by_key.values(), key=lambda r: (r["idx"], r["trial"]))
        source.metadata = {"run": {"policy": "(recorded trajectory)", "env_id": "RecordTrajectory"}}

    # -- answers -------------------------------------------------------------------------------

    def api(self, target: str) -> dict[str, Any]:
        """The JSON document at a viewer API path (``/api/runs``, ``/api/runs/ID``, ``/api/runs/ID/episodes``,
        ``/api/runs/ID/episodes/IDX/TRIAL``, ``/api/instances``, ``/api/state``).

        Raises:
            ViewerError: An unknown path, run or episode (status 404), or a malformed one (400).
        """
        parts = [unquote(p) for p in urlsplit(target).path.strip("/").split("/")]
        if parts[:1] != ["api"]:
            raise ViewerError(f"no such API path: {target!r}")
        parts = parts[1:]
        with self._lock:
            if parts == ["state"]:
                return self._state()
            if parts == ["runs"]:
                return {"runs": [self._run_brief(s) for s in self.sources]}
            if parts == ["instances"]:
                return self._instances()
            if len(parts) >= 2 and parts[0] == "runs":
                source = self._source(parts[1])
                if len(parts) == 2:
                    return self._run_detail(source)
                if parts[2] == "episodes" and len(parts) == 3:
                    briefs = self._cached(source, "episodes", lambda: [_episode_brief(r) for r in source.records])
                    return {"run": source.id, "episodes": briefs}
                if parts[2] == "episodes" and len(parts) == 5:
                    return self._episode(source, parts[3], parts[4])
        raise ViewerError(f"no such API path: {target!r}")

    @staticmethod
    def _cached(source: _Source, key: str, compute: Any) -> Any:
        if key not in source.cache:
            source.cache[key] = compute()
        return source.cache[key]

    def _source(self, run_id: str) -> _Source:
        for source in self.sources:
            if source.id == run_id:
                return source
        known = ", ".join(s.id for s in self.sources[:10]) + (", ..." if len(self.sources) > 10 else "")
        raise ViewerError(f"no run {run_id!r} in this viewer (it shows {len(self.sources)}: {known})")

    def _state(self) -> dict[str, Any]:
        """One token per source that changes whenever its files do (the page polls it to update live)."""
        return {"runs": {s.id: f"{s.signature}" for s in self.sources}}

    def _run_brief(self, source: _Source) -> dict[str, Any]:
        run = source.metadata.get("run") or {}
        expected = source.metadata.get("episodes")
        brief: dict[str, Any] = {
            "id": source.id,
            "name": source.id,
            "kind": source.kind,
            "path": str(source.path),
            "policy": run.get("policy"),
            "framework": (run.get("policy_options") or {}).get("framework"),
            "env_id": run.get("env_id"),
            "env_kwargs": run.get("env_kwargs"),
            "wrappers": _wrappers(source.metadata.get("env_stack") or []),
            "trials": source.metadata.get("trials"),
            "episodes": len(source.records),
            "expected_episodes": expected,
            "complete": expected is not None and len(source.records) >= expected,
            "error": source.fatal,
            "problems": source.problems + _torn_problem(source),
            "accuracy": None,
        }
        rows = self._cached(source, "table", lambda: _table(source.records))
        if rows:  # some episode has ended
            brief["accuracy"] = rows["all"]["accuracy"]
            brief["accuracy_ci"] = rows["all"]["accuracy_ci"]
            brief["pass_k"] = rows["all"]["pass_k"]
        return brief

    def _run_detail(self, source: _Source) -> dict[str, Any]:
        detail = self._run_brief(source)
        detail["metadata"] = {k: v for k, v in source.metadata.items() if k != "system_prompts"}
        detail["system_prompts"] = source.metadata.get("system_prompts") or {}
        detail["table"] = self._cached(source, "table", lambda: _table(source.records))
        return detail

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

    def _instances(self) -> dict[str, Any]:
        """Which runs solved each instance: successes and trials per run."""
        instances: dict[int, dict[str, Any]] = {}
        for source in self.sources:
            for r in source.records:
                if r.get("end_reason") == "running":
                    continue
                row = instances.setdefault(r["idx"], {"idx": r["idx"], "abbrev": r.get("abbrev"), "runs": {}})
                cell = row["runs"].setdefault(source.id, {"successes": 0, "trials": 0, "trial_list": []})
                cell["trials"] += 1
                cell["successes"] += bool(_success(r))
                cell["trial_list"].append(r["trial"])
        rows = sorted(instances.values(), key=lambda row: row["idx"])
        for row in rows:
            row["solved_by"] = sum(1 for c in row["runs"].values() if c["successes"])
        return {"runs": [s.id for s in self.sources], "instances": rows}

    def snapshot(self) -> dict[str, Any]:
        """Every API document, by path: what a static copy of the viewer needs."""
        self.refresh()
        paths = ["/api/runs", "/api/instances"]
        for source in self.sources:
            paths += [f"/api/runs/{source.id}", f"/api/runs/{source.id}/episodes"]
            paths += [f"/api/runs/{source.id}/episodes/{r['idx']}/{r['trial']}" for r in source.records]
        return {path: self.api(path) for path in paths}


def _wrappers(stack: list[dict[str, Any]]) -> list[str]:
    """The env stack's wrappers as ``Name(arg=value, ...)``, outermost first (Gymnasium's checkers left out)."""
    shown = []
    for layer in stack[:-1]:
        name = str(layer.get("class", "?")).rpartition(":")[2].rpartition(".")[2]
        if name in ("OrderEnforcing", "PassiveEnvChecker"):
            continue
        kwargs = layer.get("kwargs") or {}
        shown.append(f"{name}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})")
    return shown


def _success(record: dict[str, Any]) -> bool:
    return float(record.get("reward") or 0.0) >= 1.0


def _table(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The per-task summary (:func:`~crmarena_gym.eval.summarize`) with a 95% bootstrap interval of the
    accuracy per row. Episodes still being recorded (a trajectory without its end) are left out."""
    finished = [r for r in records if r.get("end_reason") != "running"]
    if not finished:
        return {}
    rows = summarize(finished)
    for task, row in rows.items():
        rewards = [float(r.get("reward") or 0.0) for r in finished if task == "all" or r["abbrev"] == task]
        low, high = bootstrap_ci(rewards)
        row["accuracy_ci"] = [low, high]
    return rows


def _episode_brief(record: dict[str, Any]) -> dict[str, Any]:
    """One row of an episode list: what the filters and the search look at."""
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
        "answerable": record.get("answerable"),
        "tokens": usage.get("total_tokens"),
        "cost": usage.get("cost"),
        "actions": [str(s.get("action", ""))[:_SEARCH_CHARS] for s in steps],
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


def _effects(step: dict[str, Any]) -> list[str]:
    """What wrappers did to a step, in words."""
    effects = []
    dropout = step.get("dropout")
    if isinstance(dropout, dict) and dropout.get("hit"):
        text = _DROPOUT_EFFECTS.get(dropout.get("mode"), f"the result was hit ({dropout.get('mode')})")
        if dropout.get("mode") == "truncate" and "kept" in dropout:
            text += f" (kept {dropout['kept']})"
        if dropout.get("mode") == "corrupt" and dropout.get("changed"):
            text += f" (field {dropout['changed']})"
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
    compared, gold = breakdown.get("compared"), breakdown.get("gold", record.get("gold"))
    mode = breakdown.get("mode", "strict")
    read = "" if compared == breakdown.get("submitted") else f" (read as {compared!r} by the {mode} matching)"
    if breakdown.get("metric") == "fuzzy_match":
        return (
            f"token F1 between the submission{read} and the gold {gold!r} after normalisation: "
            f"{float(breakdown.get('reward') or 0):.3f}"
        )
    verdict = "equal: reward 1" if float(breakdown.get("reward") or 0) >= 1 else "different: reward 0"
    return f"exact match of the submission{read} against the gold {gold!r}: {verdict}"


def _episode_detail(run_id: str, record: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    trajectory = record.get("trajectory") or [{}]
    steps = []
    for step in trajectory[1:]:
        observation = step.get("observation")
        text = observation if isinstance(observation, str) else json.dumps(observation)
        policy = step.get("policy") if isinstance(step.get("policy"), dict) else {}
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
                "turns_left": step.get("turns_left"),
                "reply": policy.get("reply"),
                "note": policy.get("note"),
                "tool_calls": policy.get("tool_calls"),
                "usage": policy.get("usage"),
                "info": {
                    k: v
                    for k, v in step.items()
                    if k not in ("turn", "action", "observation", "policy", "action_kind", "error")
                },
            }
        )
    digest = record.get("system_prompt_sha256")
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
        "answerable": record.get("answerable"),
        "reward_breakdown": record.get("reward_breakdown"),
        "reward_explanation": _explain_reward(record),
        "usage": record.get("usage"),
        "system_prompt_sha256": digest,
        "system_prompt": (metadata.get("system_prompts") or {}).get(digest) if digest else None,
        "steps": steps,
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
        "answerable": None,
        "reward_breakdown": None,
        "usage": {},
    }
    trajectory: list[dict[str, Any]] = [{"observation": first.get("observation", "")}]
    for line in steps:
        step_info = dict(line.get("info") or {})
        step = {"turn": line.get("step"), "action": line.get("action"), "observation": line.get("observation")}
        step.update({k: v for k, v in step_info.items() if k not in _TRAJECTORY_INFO_SKIPPED})
        trajectory.append(step)
        if line.get("terminated"):
            record["reward"] = float(line.get("reward") or 0.0) if _number(line.get("reward")) else 0.0
            record["end_reason"] = "submitted"
            record["submitted"] = step_info.get("submitted")
            record["reward_breakdown"] = step_info.get("reward_breakdown")
            if record["gold"] is None and isinstance(record["reward_breakdown"], dict):
                record["gold"] = record["reward_breakdown"].get("gold")
        elif line.get("truncated"):
            record["end_reason"] = step_info.get("end_reason") or "max_turns"
    if not first:
        record["error"] = "the recording of this episode lacks its reset line"
    record["success"] = record["reward"] >= 1.0
    record["trajectory"] = trajectory
    return record
