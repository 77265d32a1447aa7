"""The evaluation runner: every (instance, trial) episode of a task set, resumable, in threads or on Ray.

Each episode gets its own seed, derived from the run's seed, the instance and the trial, so a result does
not depend on which worker ran it or in what order. Each worker (thread or Ray task process) owns its
environment and its policy; the threads share one org (it is thread-safe). The main thread alone
writes ``results.jsonl``, one line per finished episode, flushed as it ends (and synced to disk every
second), while it holds the directory's lock (a second run on the same directory fails at once).

An episode whose policy error is *fatal* (a missing or rejected API key: every other episode would
fail the same way) is recorded, then the run stops with :class:`RunStoppedError`; once the cause is
fixed, ``resume=True, retry_errors=True`` replays it and plays the rest.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import gymnasium as gym
import numpy as np

import crmarena_gym
from crmarena_gym._files import LockHeldError, exclusive_lock
from crmarena_gym._secrets import register_secret
from crmarena_gym._signals import Signalled, watch_signals
from crmarena_gym.chat import EpisodeRecorder, jsonable, prompt_sha256
from crmarena_gym.eval._progress import ProgressBar
from crmarena_gym.eval._results import (
    LOCK_FILE,
    RESULTS_FILE,
    ResultsWriter,
    episode_keys,
    read_results,
    rewrite_results,
    write_metadata,
)
from crmarena_gym.eval._summary import ERROR_END_REASONS, summarize
from crmarena_gym.eval._viewer import RESULTS_FORMAT
from crmarena_gym.org import LocalOrg, Org
from crmarena_gym.policies import EpisodeEnded, Policy, PolicyError, make_policy
from crmarena_gym.tasks import (
    DEFAULT_DISTRIBUTION,
    TASK_GENERATOR_VERSION,
    TaskInstance,
    first_per_task,
    spec_for,
)
from crmarena_gym.wrappers import env_stack as wrapped_env_stack

__all__ = [
    "EpisodeCancelled",
    "EvalRun",
    "PolicyFactory",
    "RunStoppedError",
    "apply_wrappers",
    "check_wrappers",
    "episode_seed",
    "evaluate",
    "run_episode",
    "select_instances",
]

_DEPENDENCIES = ("gymnasium", "numpy", "pydantic", "lark", "litellm", "ray", "simple-salesforce")
_SECRET_OPTIONS = ("api_key",)


# Environment arguments that are data, not settings (the org and the task set are recorded on their own).
class RunStoppedError(RuntimeError):
    """The run stopped early: an episode failed in a way every other episode would (a missing API key).

    The episode is recorded (in ``results.jsonl`` when the run has a directory).

    Attributes:
        record: The failed episode's record.
    """

    def __init__(self, message: str, record: dict[str, Any]) -> None:
        super().__init__(message)
        self.record = record


def _stop_message(record: dict[str, Any], directory: Path | None) -> str:
    again = (
        f"rerun with resume=True, retry_errors=True (crmarena-gym eval ... --out {str(directory)!r} --resume "
        "--retry-errors) to replay it and play the rest"
        if directory is not None
        else "run again"
    )
    return (
        f"the run stopped after episode (idx {record['idx']}, trial {record['trial']}) ended in "
        f"{record['end_reason']}, which every other episode would meet too: {record['error']}. Fix that, then "
        f"{again}."
    )


class _Unreachable:
    """When to stop a run whose model cannot be reached: every episode would end the same way.

    Two episodes in a row that could not reach the model stop a run that has reached it in no episode
    yet (each has already spent its retry budget); once the model has answered, five in a row do (the
    network went away).
    """

    def __init__(self) -> None:
        self.streak = 0
        self.reached = False

    def stop(self, record: dict[str, Any]) -> bool:
        if not record.get("unreachable"):
            self.streak = 0
            self.reached = True
            return False
        self.streak += 1
        return self.streak >= (5 if self.reached else 2)

    def message(self, record: dict[str, Any], directory: Path | None) -> str:
        again = (
            f"crmarena-gym eval ... --out {str(directory)!r} --resume --retry-errors (resume=True, retry_errors=True)"
            if directory is not None
            else "run again"
        )
        return (
            f"the run stopped: the last {self.streak} episodes could not reach the model ({record['error']}). "
            f"Check the network and the server (--api-base), then {again}."
        )


def episode_seed(seed: int, idx: int, trial: int) -> int:
    """The seed of one episode: a hash of the run's seed, the instance and the trial.

    Example:
        >>> episode_seed(0, 650, 1) == episode_seed(0, 650, 1) != episode_seed(0, 650, 0)
        True
    """
    return int(np.random.SeedSequence([seed, idx, trial]).generate_state(1)[0])


class EpisodeCancelled(BaseException):
    """The run is stopping (an interrupt): the episode is dropped unrecorded, to be played on resume."""


def run_episode(
    env: gym.Env,
    policy: Policy,
    idx: int,
    trial: int = 0,
    *,
    seed: int = 0,
    stop: threading.Event | Signalled | None = None,
) -> dict[str, Any]:
    """Play one episode and return its record (a line of ``results.jsonl``).

    A policy that gives up (:class:`~crmarena_gym.policies.PolicyError`, such as a model failing past
    its retry budget) or an unexpected exception does not stop the run: the episode ends with reward 0
    and the end reason ``llm_error``, ``policy_error`` or ``env_error``, with the message in ``error``
    (``fatal`` is true when the policy says every episode would fail the same way). A function-calling
    model's reply without a tool call ends the episode with no answer and no error (end reason
    ``no_tool_call``, the reply in ``final_reply``), as in every trainer adapter (:mod:`crmarena_gym.chat`).
    The record is built by :class:`~crmarena_gym.chat.EpisodeRecorder`, which the adapters share.

    Args:
        env: The environment (made with ``gym.make``, so the turn limit applies).
        policy: The policy, already attached to ``env``.
        idx: The instance.
        trial: The trial number (recorded; it changes the seed).
        seed: The run's seed.
        stop: Set when the run is stopping: the episode ends before its next step with
            :class:`EpisodeCancelled` (not recorded; a resumed run plays it).

    Returns:
        task, abbrev, idx, trial, seed, reward, f1 (KQA), success, turns, end_reason, error, fatal,
        submitted, gold (the instance's answer) and answerable (whether it has one), reward_breakdown, usage
        and the trajectory (the first observation, then one entry per step, with the step's ``info`` but its
        raw result: wrapper effects such as ``dropout`` included);
        for a policy that prompts a model, ``system_prompt`` and its ``system_prompt_sha256`` (:func:`evaluate`
        keeps the hash in each record and each distinct prompt once, in ``metadata.json``'s ``system_prompts``).
    """
    ep_seed = episode_seed(seed, idx, trial)
    observation, info = env.reset(seed=ep_seed, options={"task_id": idx})
    recorder = EpisodeRecorder(
        observation, info, instance=getattr(env.unwrapped, "instance", None), idx=idx, trial=trial, seed=ep_seed
    )
    record = recorder.record
    try:
        policy.reset(observation, info, seed=ep_seed)
        _note_system_prompt(record, policy)
        while not recorder.ended:
            if stop is not None and stop.is_set():
                raise EpisodeCancelled(f"episode (idx {idx}, trial {trial}) stopped with the run")
            action = policy.act(observation)
            observation, reward, terminated, truncated, step_info = env.step(action)
            policy.observe(step_info)
            recorder.step(action, observation, float(reward), terminated, truncated, step_info, policy.step_details())
    except EpisodeEnded as err:  # a function-calling reply without a tool call: no answer, no error
        recorder.end(err.end_reason, final_reply=err.final_reply)
    except PolicyError as err:
        recorder.end(err.end_reason, error=str(err) if err.is_error else None, fatal=bool(err.fatal))
        if err.unreachable:
            record["unreachable"] = True
    except Exception as err:  # an episode must never take the run down; keep what went wrong
        recorder.end("env_error", error=f"{type(err).__name__}: {err}")
    return recorder.finish(policy.usage().to_dict())


def _note_system_prompt(record: dict[str, Any], policy: Policy) -> None:
    """Put the episode's system prompt (a model's policy has one) and its hash in the record."""
    prompt = policy.system_prompt()
    if prompt:
        record["system_prompt_sha256"] = prompt_sha256(prompt)
        record["system_prompt"] = prompt


def _keep_system_prompt(record: dict[str, Any], metadata: dict[str, Any], directory: Path | None) -> None:
    """Move a record's system prompt into the run's metadata (once per distinct prompt, by its hash)."""
    prompt = record.pop("system_prompt", None)
    digest = record.get("system_prompt_sha256")
    if prompt is None or digest is None:
        return
    prompts = metadata.setdefault("system_prompts", {})
    if digest not in prompts:
        prompts[digest] = prompt
        if directory is not None:
            write_metadata(directory, metadata)


@dataclass(frozen=True)
class PolicyFactory:
    """Builds a fresh policy from a spec (picklable, for Ray workers).

    Attributes:
        spec: A policy spec (see :func:`~crmarena_gym.policies.make_policy`).
        options: The policy's constructor arguments.
    """

    spec: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self) -> Policy:
        return make_policy(self.spec, **dict(self.options))


def _env_kwargs_for(policy: Policy, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``gym.make`` arguments for a policy: the toolset it asks for (unless given) and privileged mode."""
    kwargs = dict(env_kwargs)
    if policy.toolset is not None:
        kwargs.setdefault("toolset", policy.toolset)
    if policy.privileged:
        kwargs["privileged"] = True
    return kwargs


def _wrapper_class(name: str) -> type[gym.Wrapper[Any, Any, Any, Any]]:
    if ":" in name:
        from gymnasium.envs.registration import load_env_creator

        try:
            cls = load_env_creator(name)
        except (ImportError, AttributeError, ValueError) as err:
            raise ValueError(f"cannot load the wrapper {name!r}: {err}") from None
    else:
        import crmarena_gym.wrappers as ours

        if name not in ours.__all__:
            known = ", ".join(n for n in ours.__all__ if isinstance(getattr(ours, n), type))
            raise ValueError(f"unknown wrapper {name!r}: one of {known}, or MODULE:CLASS")
        cls = getattr(ours, name)
    if not (isinstance(cls, type) and issubclass(cls, gym.Wrapper)):
        raise ValueError(f"{name!r} is not a gymnasium.Wrapper")
    return cls


def check_wrappers(wrappers: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Wrapper specs in their recorded form, ``{"name": ..., "kwargs": {...}}``, checked.

    A name is a wrapper of :mod:`crmarena_gym.wrappers` (``ToolResultDropout``) or ``MODULE:CLASS``.

    Raises:
        ValueError: A spec that is not a mapping with a known ``name`` and a mapping of ``kwargs``.

    Example:
        >>> check_wrappers([{"name": "TurnLimit", "kwargs": {"max_turns": 10}}])
        [{'name': 'TurnLimit', 'kwargs': {'max_turns': 10}}]
    """
    checked = []
    for spec in wrappers or ():
        if not isinstance(spec, Mapping) or set(spec) - {"name", "kwargs"} or not isinstance(spec.get("name"), str):
            raise ValueError(f"a wrapper is given as {{'name': NAME, 'kwargs': {{...}}}}, got {spec!r}")
        kwargs = spec.get("kwargs") or {}
        if not isinstance(kwargs, Mapping):
            raise ValueError(f"the kwargs of wrapper {spec['name']!r} must be a mapping, got {kwargs!r}")
        _wrapper_class(spec["name"])
        checked.append({"name": spec["name"], "kwargs": jsonable(dict(kwargs))})
    return checked


def apply_wrappers(env: gym.Env[Any, Any], wrappers: Sequence[Mapping[str, Any]] | None) -> gym.Env[Any, Any]:
    """``env`` inside the wrappers (the first given is the innermost), built from their specs.

    Raises:
        ValueError: An unknown wrapper, or arguments it refuses (the message names the wrapper).
    """
    for spec in check_wrappers(wrappers):
        try:
            env = _wrapper_class(spec["name"])(env, **spec["kwargs"])
        except (TypeError, ValueError) as err:
            raise ValueError(f"wrapper {spec['name']} with {spec['kwargs']}: {err}") from None
    return env


class _Worker:
    """One worker's environment and policy, built on first use."""

    def __init__(
        self,
        env_id: str,
        org: Org | str,
        instances: Sequence[TaskInstance],
        factory: Callable[[], Policy],
        env_kwargs: Mapping[str, Any],
        seed: int,
        wrappers: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.policy = factory()
        kwargs = _env_kwargs_for(self.policy, env_kwargs)
        self.env = apply_wrappers(gym.make(env_id, org=org, tasks=list(instances), **kwargs), wrappers)
        self.policy.attach(self.env)
        self.seed = seed

    def run(self, idx: int, trial: int, stop: threading.Event | Signalled | None = None) -> dict[str, Any]:
        return run_episode(self.env, self.policy, idx, trial, seed=self.seed, stop=stop)

    def close(self) -> None:
        self.policy.close()
        self.env.close()


@dataclass
class EvalRun:
    """What :func:`evaluate` returns.

    Attributes:
        results: Every episode of the run (resumed ones included), sorted by instance and trial.
        summary: Per-task and overall rows (see :func:`~crmarena_gym.eval.summarize`).
        metadata: What was written to ``metadata.json``.
        out: The run directory, or None when nothing was written.
        new_episodes: Episodes played by this call (the others were read back when resuming).
    """

    results: list[dict[str, Any]]
    summary: dict[str, dict[str, Any]]
    metadata: dict[str, Any]
    out: Path | None
    new_episodes: int


def _open_org(org: Org | str | os.PathLike[str] | None, kind: str = "service") -> Org:
    if isinstance(org, Org):
        return org
    if org is None:  # the embedded org of the env's kind (a CRMArena-Pro id's B2B or B2C org)
        from crmarena_gym.org import default_org_path

        return LocalOrg(default_org_path(kind=kind))
    path = Path(org)
    if not path.is_file():
        raise FileNotFoundError(f"no org database at {str(path)!r}")
    return LocalOrg(path)


def _org_metadata(org: Org) -> dict[str, Any]:
    path = getattr(org, "path", None)
    data: dict[str, Any] = {"type": type(org).__name__, "path": str(path) if path else None, "manifest": None}
    if path is not None:
        from crmarena_gym.datagen import read_manifest

        try:
            data["manifest"] = read_manifest(path).model_dump(mode="json")
        except (ValueError, OSError):
            pass  # not an org written by our generator (the original's dump, say)
    return data


def _versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"crmarena-gym": crmarena_gym.__version__, "python": platform.python_version()}
    for name in _DEPENDENCIES:
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _redact(options: Mapping[str, Any]) -> dict[str, Any]:
    redacted = {k: ("<redacted>" if k in _SECRET_OPTIONS and v else v) for k, v in options.items()}
    base = redacted.get("api_base")
    if isinstance(base, str) and "@" in base:  # https://user:secret@host/ keeps only the host
        parts = urlsplit(base)
        redacted["api_base"] = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return redacted


def _task_source(tasks: Any) -> Any:
    # A generated set is recorded with its distribution and generator version: figures made on the
    # legacy instances say so, and a run is never resumed on instances drawn another way.
    if tasks is None:
        tasks = {"split": "test"}
    if isinstance(tasks, str | os.PathLike):
        return str(Path(tasks).resolve())
    if isinstance(tasks, Mapping):
        return {"distribution": DEFAULT_DISTRIBUTION, **jsonable(tasks), "task_generator": TASK_GENERATOR_VERSION}
    return f"{len(tasks)} given instances"


def select_instances(
    instances: Sequence[TaskInstance],
    *,
    tasks: Sequence[str] | None = None,
    idx: Sequence[int] | None = None,
    per_task: int | None = None,
    limit: int | None = None,
) -> list[TaskInstance]:
    """The instances a run plays, in task-set order: those of the given tasks and idx, then the first
    ``per_task`` of each task, then the first ``limit`` of what is left.

    Args:
        instances: The task set.
        tasks: Task abbreviations or names (``HTU``, ``handle_time``); None for all.
        idx: Instance idx; None for all.
        per_task: At most this many instances of each task.
        limit: At most this many instances in all.

    Raises:
        ValueError: An unknown task, an idx the task set lacks, a count below 1, or nothing selected.

    Example:
        >>> from crmarena_gym.tasks import TaskInstance
        >>> pool = [TaskInstance(idx=i, task=t, query="q", answer="a") for i, t in enumerate(["HTU", "TCU"] * 3)]
        >>> [i.idx for i in select_instances(pool, per_task=2)]
        [0, 1, 2, 3]
        >>> [i.idx for i in select_instances(pool, tasks=["tcu"], limit=2)]
        [1, 3]
    """
    for name, count in (("per_task", per_task), ("limit", limit)):
        if count is not None and count < 1:
            raise ValueError(f"{name} must be at least 1, got {count!r}")
    chosen = list(instances)
    if tasks:
        kind = chosen[0].kind if chosen else "service"  # Pro's and CRMArena's task names overlap: the set's suite
        try:
            names = {spec_for(t, kind).name for t in tasks}
        except KeyError as err:
            raise ValueError(err.args[0]) from None
        chosen = [inst for inst in chosen if inst.task in names]
        if not chosen:
            have = sorted({inst.abbrev for inst in instances})
            raise ValueError(f"the task set has no instance of {', '.join(tasks)} (it has {', '.join(have)})")
    if idx:
        known = {inst.idx for inst in chosen}
        unknown = sorted(set(idx) - known)
        if unknown:
            where = f"of task(s) {', '.join(tasks)} " if tasks else ""
            raise ValueError(f"no instance {where}with idx {', '.join(map(str, unknown))} in the task set")
        wanted = set(idx)
        chosen = [inst for inst in chosen if inst.idx in wanted]
    if per_task is not None:
        chosen = first_per_task(chosen, per_task)
    if limit is not None:
        chosen = chosen[:limit]
    return chosen


def _check_task_set_belongs(instances: Sequence[TaskInstance], org: Org, source: Any) -> None:
    """Refuse a task set whose gold answers name records the org lacks: it was made for another org."""
    from crmarena_gym.org import OrgError
    from crmarena_gym.tasks import missing_gold_records

    try:
        missing = missing_gold_records(instances, org)
    except OrgError as err:
        where = getattr(org, "path", None) or type(org).__name__
        raise ValueError(f"the org {str(where)!r} cannot be read as a CRMArena org ({err})") from None
    if not missing:
        return
    examples = ", ".join(f"idx {i}: {rid}" for i, rid in missing[:3])
    named = f"the task file {os.fspath(source)!r}" if isinstance(source, str | os.PathLike) else "the task set"
    where = getattr(org, "path", None)
    org_text = f"the org {str(where)!r}" if where else "the org"
    raise ValueError(
        f"{named} was made for another org: {len(missing)} of its gold answers (for Pro, also its context's ids) "
        f"name records {org_text} does not "
        f"have ({examples}{', ...' if len(missing) > 3 else ''}). Pass the org it was made for (--org; the "
        "original's tasks_original.json needs the original's crmarena_data.db), or allow_foreign_tasks=True "
        "(--allow-foreign-tasks) to run it anyway"
    )


def _check_playable(policy: Policy, spec: Any, instances: Sequence[TaskInstance]) -> None:
    """Refuse a run with instances the policy says it cannot play (before any episode is recorded)."""
    refused = policy.unplayable(instances)
    if not refused:
        return
    name = spec if isinstance(spec, str) else type(policy).__name__
    first_idx, first_reason = next(iter(refused.items()))
    shown = ", ".join(str(i) for i in list(refused)[:10]) + (", ..." if len(refused) > 10 else "")
    raise ValueError(
        f"the policy {name!r} cannot play {len(refused)} of the {len(instances)} instances (idx {shown}): "
        f"instance {first_idx}: {first_reason}. Choose other instances (--task, --idx) or another task set"
    )


def _check_resumable(previous: Mapping[str, Any], run: Mapping[str, Any], directory: Path) -> None:
    old = previous.get("run") or {}
    differ = sorted(k for k in set(old) | set(run) if old.get(k) != run.get(k))
    if differ:
        details = "; ".join(f"{k}: was {old.get(k)!r}, now {run.get(k)!r}" for k in differ)
        raise ValueError(f"cannot resume {str(directory)!r}: the run differs ({details})")


def _near_env_id(env_id: str) -> str:
    """`` (did you mean 'CRMArena-NCR-v0'?)`` for a miscased CRMArena id or one at most two typos away
    (a letter wrong, missing, extra, or two swapped), when exactly one id is that close; else nothing.

    Example:
        >>> _near_env_id("crmarena-ncr-v0"), _near_env_id("CRMArena-NRC-v0"), _near_env_id("CRMArena-Nope-v0")
        (" (did you mean 'CRMArena-NCR-v0'?)", " (did you mean 'CRMArena-NCR-v0'?)", '')
    """
    by_case = {name.lower(): name for name in gym.registry if name.startswith("CRMArena")}
    wanted = env_id.lower()
    if wanted in by_case:
        return f" (did you mean {by_case[wanted]!r}?)"
    distances = {name: _typos(wanted, name) for name in by_case}
    best = min(distances.values(), default=3)
    close = [name for name, d in distances.items() if d == best]
    return f" (did you mean {by_case[close[0]]!r}?)" if best <= 2 and len(close) == 1 else ""


def _typos(a: str, b: str) -> int:
    """The fewest letters replaced, inserted, deleted or swapped with the next that turn ``a`` into ``b``.

    Example:
        >>> _typos("ncr", "nrc"), _typos("nope", "ned"), _typos("v1", "v0")
        (1, 3, 1)
    """
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        previous, row = row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
        before = previous
    return row[-1]


def evaluate(
    policy: str | Callable[[], Policy] = "oracle",
    *,
    env_id: str = "CRMArena-v0",
    tasks: Any = None,
    org: Org | str | os.PathLike[str] | None = None,
    policy_options: Mapping[str, Any] | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    wrappers: Sequence[Mapping[str, Any]] | None = None,
    trials: int = 1,
    concurrency: int = 1,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    retry_errors: bool = False,
    limit: int | None = None,
    select_tasks: Sequence[str] | None = None,
    idx: Sequence[int] | None = None,
    per_task: int | None = None,
    seed: int = 0,
    allow_foreign_tasks: bool = False,
    progress: bool | None = None,
    ray: bool = False,
    ray_address: str | None = None,
    command: Sequence[str] | None = None,
) -> EvalRun:
    """Run a policy on every instance of a task set, ``trials`` times each.

    Args:
        policy: A policy spec (``"oracle"``, ``"random"``, ``"litellm:MODEL"``, ``"python:MODULE:CLASS"``)
            or a function that builds a fresh :class:`~crmarena_gym.policies.Policy` (one per worker).
        env_id: A registered id (``CRMArena-HTU-v0`` ...; ``CRMArena-v0`` for all nine tasks).
        tasks: The task source (see :class:`~crmarena_gym.envs.CRMArenaEnv`): None for the default
            test set, a task file, a list of instances.
        org: The org: None for the embedded default, a database path, or an Org.
        policy_options: Constructor arguments of a spec's policy (``framework``, ``api_base`` ...).
        env_kwargs: More ``gym.make`` arguments (``toolset``, ``match``, ``observation_format`` ...);
            by default the toolset is the one the policy asks for.
        wrappers: Wrappers around each environment, innermost first: ``{"name": "ToolResultDropout",
            "kwargs": {"p": 0.2, "mode": "drop"}}`` (a wrapper of :mod:`crmarena_gym.wrappers`, or
            ``MODULE:CLASS``). They are part of the run (a resume must give the same) and of ``env_stack``.
        trials: Episodes per instance (pass^k is reported for k = 1 .. trials).
        concurrency: Episodes played at once (threads; or Ray tasks in flight with ``ray``).
        out: The run directory (``results.jsonl``, ``metadata.json``); None keeps results in memory.
        resume: Continue the run in ``out``: episodes already there are not played again.
        retry_errors: With ``resume``, play again the episodes that ended in an error
            (:data:`~crmarena_gym.eval.ERROR_END_REASONS`); their old records are first taken out of
            ``results.jsonl`` (rewritten atomically), so each episode stays in it exactly once.
        limit: Play only the first ``limit`` instances (of the selection below).
        select_tasks: Play only the instances of these tasks (abbreviations or names).
        idx: Play only the instances with these idx.
        per_task: Play only the first ``per_task`` instances of each task (see :func:`select_instances`).
        seed: The run's seed (each episode's seed derives from it, the instance and the trial).
        allow_foreign_tasks: Run a task set whose gold answers name records the org does not have (by
            default such a run is refused: the tasks were made for another org).
        progress: Draw a progress bar on stderr (default: yes; ``tqdm``, so also in a notebook and, redrawn
            every few seconds, in a piped log).
        ray: Spread the episodes over a Ray cluster (``pip install 'crmarena-gym[rl]'``).
        ray_address: The cluster's address (default: a local cluster).
        command: The command line to record in the metadata.

    Returns:
        The run's episodes, summary and metadata.

    Raises:
        ValueError: Bad arguments, ``out`` naming an existing file, a run directory that already holds
            results without ``resume``, a resume of a different run, a task set made for another org, or
            instances the policy cannot play (the oracle on published instances).
        LockHeldError: Another run is writing in ``out`` (an :class:`OSError`).
        OSError: ``out`` cannot be created or written.
        RunStoppedError: An episode failed in a way every other one would (a missing API key); it is
            recorded, and the run stops there.

    Example:
        >>> import pathlib, tempfile
        >>> from crmarena_gym.datagen import generate_org
        >>> from crmarena_gym.tasks import generate_tasks
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "org.sqlite"
        >>> _ = generate_org(path, seed=0, scale=0.2)
        >>> tasks = generate_tasks(path, seed=0, per_task=2, tasks=["BRI", "TCU"])
        >>> run = evaluate("oracle", tasks=tasks, org=path, trials=2, progress=False)
        >>> run.summary["all"]["accuracy"], run.summary["all"]["pass_k"], len(run.results)
        (1.0, {'1': 1.0, '2': 1.0}, 8)
    """
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials!r}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency!r}")
    if env_id not in gym.registry or not env_id.startswith("CRMArena"):
        from crmarena_gym.envs import env_ids

        raise ValueError(
            f"unknown environment {env_id!r}{_near_env_id(env_id)}; expected one of {', '.join(env_ids())}, "
            "or a CRMArena-Pro id "
            "(CRMArena-Pro-B2B-v0, CRMArena-Pro-B2C-v0, CRMArena-Pro-B2B-<ABBREV>-v0 such as CRMArena-Pro-B2B-LQU-v0)"
        )
    if resume and out is None:
        raise ValueError("resume needs the run directory (out)")
    if retry_errors and not resume:
        raise ValueError("retry_errors replays the failed episodes of an existing run: it needs resume=True (--resume)")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"out must be a run directory, and {os.fspath(out)!r} is an existing file")
    if isinstance(policy, Policy):
        raise TypeError("pass a policy spec or a function that builds a policy: each worker needs its own")
    options = dict(policy_options or {})
    for name in _SECRET_OPTIONS:  # never written or printed, whatever echoes it
        register_secret(options.get(name))
    factory: Callable[[], Policy] = PolicyFactory(policy, options) if isinstance(policy, str) else policy
    env_kwargs = dict(env_kwargs or {})
    for reserved in ("org", "tasks", "task"):
        if reserved in env_kwargs:
            raise ValueError(f"pass {reserved!r} as an argument of evaluate, not in env_kwargs")
    wrappers = check_wrappers(wrappers)

    env_spec = gym.spec(env_id)
    org_obj = _open_org(org, (env_spec.kwargs or {}).get("kind") or env_kwargs.get("kind") or "service")
    probe_policy = factory()  # fail here, once, on a bad spec or bad options, rather than in every worker
    try:
        probe_policy.check_ready()  # a missing key refuses the run before any episode is recorded
        probe = gym.make(env_id, org=org_obj, tasks=tasks, **_env_kwargs_for(probe_policy, env_kwargs))
        probe = apply_wrappers(probe, wrappers)
        probe_policy.attach(probe)  # a policy that cannot play this env (the oracle on soql) fails here, once
        instances: list[TaskInstance] = list(probe.unwrapped.instances)  # type: ignore[attr-defined]
        # gym.make(perturbations=...): the perturbed org played, its transforms, the instances kept and dropped.
        perturbation = getattr(probe.unwrapped, "perturbation", None)
        env_stack = wrapped_env_stack(probe)
        probe.close()
        if not allow_foreign_tasks:
            # The whole set, not the selection: the original's KQA instances name no record, so a run of
            # them alone on a generated org would pass a check of its own instances.
            _check_task_set_belongs(instances, org_obj, tasks)
        instances = select_instances(instances, tasks=select_tasks, idx=idx, per_task=per_task, limit=limit)
        _check_playable(probe_policy, policy, instances)
        policy_settings = jsonable(_redact(probe_policy.settings()))
    finally:
        probe_policy.close()
    episodes = [(inst.idx, trial) for inst in instances for trial in range(trials)]

    run_key = {
        "env_id": env_id,
        "tasks": _task_source(tasks),
        "org": str(getattr(org_obj, "path", None) or type(org_obj).__name__),
        "policy": policy if isinstance(policy, str) else getattr(policy, "__qualname__", repr(policy)),
        "policy_options": jsonable(_redact(options)),
        "env_kwargs": jsonable(env_kwargs),
        "seed": seed,
    }
    if wrappers:  # absent when none, so that runs recorded before wrappers existed still resume
        run_key["wrappers"] = wrappers
    spec = gym.spec(env_id)
    metadata: dict[str, Any] = {
        "results_format": RESULTS_FORMAT,
        "run": run_key,
        "trials": trials,
        "limit": limit,
        "selection": {
            "tasks": list(select_tasks) if select_tasks else None,
            "idx": list(idx) if idx else None,
            "per_task": per_task,
            "limit": limit,
        },
        "instances": len(instances),
        "episodes": len(episodes),
        "concurrency": concurrency,
        "ray": {"enabled": ray, "address": ray_address} if ray else None,
        "versions": _versions(),
        "policy_settings": policy_settings,
        "env_stack": env_stack,
        "env_spec": {
            "id": spec.id,
            "entry_point": str(spec.entry_point),
            "max_episode_steps": spec.max_episode_steps,
            "kwargs": jsonable(spec.kwargs),
        },
        "org": _org_metadata(org_obj),
        "command": list(command) if command is not None else list(sys.argv),
    }
    if perturbation is not None:
        metadata["perturbations"] = jsonable(perturbation)

    directory = Path(out) if out is not None else None
    with ExitStack() as stack:
        signalled = stack.enter_context(watch_signals())
        done: list[dict[str, Any]] = []
        writer: ResultsWriter | None = None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            try:
                stack.enter_context(exclusive_lock(directory / LOCK_FILE, blocking=False))
            except LockHeldError:
                raise LockHeldError(
                    f"{str(directory)!r} is in use by another run (it holds {str(directory / LOCK_FILE)!r}): "
                    "wait for that run to end, or choose another directory"
                ) from None
            results_path = directory / RESULTS_FILE
            if results_path.exists() and results_path.stat().st_size > 0:
                if not resume:
                    raise ValueError(
                        f"{str(results_path)!r} already holds results: pass resume=True (--resume) to finish that "
                        "run, or choose another directory"
                    )
                previous_path = directory / "metadata.json"
                if previous_path.is_file():
                    previous = json.loads(previous_path.read_text(encoding="utf-8"))
                    _check_resumable(previous, run_key, directory)
                    metadata["resumed_from"] = previous.get("command")
                    if previous.get("system_prompts"):
                        metadata["system_prompts"] = dict(previous["system_prompts"])
                done = read_results(results_path)
                if retry_errors:
                    kept = [r for r in done if r.get("end_reason") not in ERROR_END_REASONS]
                    metadata["retried_errors"] = len(done) - len(kept)
                    if len(kept) < len(done):
                        rewrite_results(results_path, kept)
                        done = kept
            write_metadata(directory, metadata)
            writer = stack.enter_context(ResultsWriter(results_path))

        wanted = set(episodes)
        finished = episode_keys(done)
        pending = [e for e in episodes if e not in finished]
        bar = ProgressBar(len(episodes), done=len(finished & wanted), enabled=progress)
        stack.callback(bar.close)
        new: list[dict[str, Any]] = []

        if pending:
            if ray:
                from crmarena_gym.eval._ray import run_on_ray

                org_path = getattr(org_obj, "path", None)
                if org_path is None:
                    raise ValueError("Ray workers open the org from a file: pass an org database path")
                stream = run_on_ray(
                    pending,
                    env_id=env_id,
                    org_path=str(org_path),
                    instances=[inst.model_dump(mode="json") for inst in instances],
                    factory=factory,
                    env_kwargs=env_kwargs,
                    seed=seed,
                    max_in_flight=concurrency,
                    wrappers=wrappers,
                    address=ray_address,
                )
            else:
                stream = _run_threads(
                    pending, env_id, org_obj, instances, factory, env_kwargs, seed, concurrency, wrappers, signalled
                )
            unreachable = _Unreachable()
            try:
                for result in _until_signalled(stream, signalled):
                    _keep_system_prompt(result, metadata, directory)
                    if writer is not None:
                        writer.write(result)
                    new.append(result)
                    bar.update(float(result["reward"]))
                    if result.get("fatal"):
                        raise RunStoppedError(_stop_message(result, directory), result)
                    if unreachable.stop(result):
                        raise RunStoppedError(unreachable.message(result, directory), result)
            finally:
                stream.close()  # stops the workers now (threads or Ray tasks), not when collected

    results = sorted([r for r in done if (r["idx"], r["trial"]) in wanted] + new, key=lambda r: (r["idx"], r["trial"]))
    return EvalRun(results, summarize(results), metadata, directory, len(new))


def _until_signalled(stream: Iterator[dict[str, Any]], signalled: Signalled) -> Iterator[dict[str, Any]]:
    """``stream``'s results until a signal stopped the run, then KeyboardInterrupt, as if it had not been
    swallowed: an episode that ended after the signal is not kept (the interrupt may be inside it)."""
    try:
        for result in stream:
            if signalled.is_set():
                break
            yield result
    except EpisodeCancelled:
        if not signalled.is_set():
            raise
    if signalled.is_set():
        raise KeyboardInterrupt


def _run_threads(
    pending: Sequence[tuple[int, int]],
    env_id: str,
    org: Org,
    instances: Sequence[TaskInstance],
    factory: Callable[[], Policy],
    env_kwargs: Mapping[str, Any],
    seed: int,
    concurrency: int,
    wrappers: Sequence[Mapping[str, Any]] = (),
    signalled: Signalled | None = None,
) -> Iterator[dict[str, Any]]:
    """Play the episodes on ``concurrency`` threads; yield each result as it ends.

    One episode at a time plays in the main thread, where a signal's KeyboardInterrupt lands: ``signalled``
    ends it before its next step should the interrupt have been swallowed on the way.
    """
    if concurrency == 1:
        worker = _Worker(env_id, org, instances, factory, env_kwargs, seed, wrappers)
        try:
            for idx, trial in pending:
                yield worker.run(idx, trial, signalled)
        finally:
            worker.close()
        return
    local = threading.local()
    workers: list[_Worker] = []
    lock = threading.Lock()
    # Set when the run stops early (an interrupt): episodes in flight end before their next step, so
    # that the run does not wait for them to finish.
    stop = threading.Event()

    def play(idx: int, trial: int) -> dict[str, Any]:
        worker = getattr(local, "worker", None)
        if worker is None:
            worker = local.worker = _Worker(env_id, org, instances, factory, env_kwargs, seed, wrappers)
            with lock:
                workers.append(worker)
        return worker.run(idx, trial, stop)

    queue = list(pending)
    queue.reverse()
    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="crmarena-eval")
    running: set[Future[dict[str, Any]]] = set()
    try:
        # Keep only a few episodes queued, so that an interrupted run has little in flight.
        while queue or running:
            while queue and len(running) < 2 * concurrency:
                running.add(executor.submit(play, *queue.pop()))
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                yield future.result()
    finally:
        stop.set()
        for future in running:
            future.cancel()
        executor.shutdown(wait=True, cancel_futures=True)
        for worker in workers:
            worker.close()
