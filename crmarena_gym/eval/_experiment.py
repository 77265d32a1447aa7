"""Experiment sweeps: policies times environment settings, each cell a resumable run, then a comparison.

A spec (TOML, see ``examples/ablation.toml``) names the policies, the instances every cell plays, and one
or more sweeps; a sweep is a grid over setting axes:

=====================  ================================================================
axis                   what a value does
=====================  ================================================================
``dropout_p``          ``ToolResultDropout(p=value)`` (mode ``drop`` unless ``dropout_mode``)
``dropout_mode``       its mode: ``drop``, ``error``, ``truncate``, ``corrupt``
``removed_groups``     ``FunctionRemoval(groups=value)``: a list of the paper's ablation groups
``removed_functions``  ``FunctionRemoval(functions=value)``: a list of function names
``max_turns``          ``TurnLimit(max_turns=value)`` (the paper's budget is 20)
``toolset``            the env's toolset: ``soql``, ``functions``, ``flex``
``aided``              the env shows the domain details (true) or not
``match``              answer matching: ``strict`` or ``lenient``
``answer_mode``        ``name`` (the env as given) or ``act`` (its act-mode id: the agent makes the change,
                       graded by the org's final state; see ``crmarena_gym.envs.act_counterpart``)
``user``               ``none`` (single-turn, the env as given), ``scripted`` or ``litellm:MODEL``: the env's
                       conversation id with that simulated user (``crmarena_gym.envs.interactive_counterpart``)
``schema_drift``       the org perturbed by ``schema_drift`` at this strength (0: the org as given)
``distractors``        the org perturbed by ``distractors`` at this strength
``dirty_values``       the org perturbed by ``dirty_values`` at this strength
``knowledge_drift``    the org perturbed by ``knowledge_drift`` at this strength
``perturbation_seed``  the seed of the org perturbations (default 0)
``request_limit``      ``ApiFaults(request_limit=value)``: requests allowed per episode
``unavailable_p``      ``ApiFaults(unavailable_p=value)``: transient 503s at this rate
``session_expires_after``  ``ApiFaults(session_expires_after=value)``: the session expires once after N
``latency_ms``         ``ApiFaults(latency_ms=value)``: simulated latency per request (counted, not slept)
=====================  ================================================================

An org perturbation (``crmarena_gym.datagen.perturb_org``) makes a cell play a perturbed org (cached by the
base org's hash and the perturbations) and the task set carried to it (``crmarena_gym.tasks.recompute_tasks``):
every instance's gold recomputed there, the instances whose gold the perturbation made ambiguous dropped;
the cell records the perturbed org, its perturbations and the dropped instances per reason.

Every (sweep, setting, policy) is a cell: a run directory ``OUT/cells/SWEEP/POLICY/SETTING`` written by
:func:`~crmarena_gym.eval.evaluate` and resumed when the experiment runs again, so an experiment killed at
any moment finishes where it stopped. A cell the policy cannot play (the oracles without task functions) is
recorded as such, and a policy whose ``requires_env`` variable (an API key) is unset is skipped with a note.
``OUT/experiment.json`` keeps the spec and each cell's state; :func:`write_experiment_report` compares them.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from crmarena_gym._files import atomic_write_text
from crmarena_gym._json import json_text
from crmarena_gym._secrets import redact_json
from crmarena_gym.envs import act_counterpart, interactive_counterpart
from crmarena_gym.eval._results import RESULTS_FILE
from crmarena_gym.eval._runner import RunStoppedError, evaluate
from crmarena_gym.policies import parse_policy_spec
from crmarena_gym.tools import ABLATION_GROUPS

__all__ = [
    "AXES",
    "EXPERIMENT_FILE",
    "Cell",
    "ExperimentSpec",
    "PolicyEntry",
    "Sweep",
    "experiment_cells",
    "load_experiment",
    "read_state",
    "run_experiment",
    "setting_label",
    "setting_perturbations",
    "setting_recipe",
]

EXPERIMENT_FILE = "experiment.json"
#: The axes a sweep can vary, in the order a cell's name shows them.
AXES = (
    "dropout_p",
    "dropout_mode",
    "removed_groups",
    "removed_functions",
    "max_turns",
    "toolset",
    "aided",
    "match",
    "answer_mode",
    "user",
    "schema_drift",
    "distractors",
    "dirty_values",
    "knowledge_drift",
    "perturbation_seed",
    "request_limit",
    "unavailable_p",
    "session_expires_after",
    "latency_ms",
)
#: The axes that perturb the org, by the perturbation kind they set the strength of.
ORG_PERTURBATION_AXES = ("schema_drift", "distractors", "dirty_values", "knowledge_drift")
_API_AXES = ("request_limit", "unavailable_p", "session_expires_after", "latency_ms")
_SHORT = {
    "dropout_p": "p",
    "dropout_mode": "mode",
    "removed_groups": "without",
    "removed_functions": "without_fn",
    "max_turns": "turns",
    "answer_mode": "answer",
    "schema_drift": "drift",
    "perturbation_seed": "pseed",
    "request_limit": "limit",
    "unavailable_p": "p503",
    "session_expires_after": "expiry",
    "latency_ms": "latency",
}


class PolicyEntry(BaseModel):
    """One policy of an experiment.

    Attributes:
        name: Its label in the report (and its cells' directory).
        spec: A policy spec (``oracle``, ``reactive-oracle``, ``random``, ``litellm:MODEL``, ``python:M:C``).
        options: Its constructor options (``framework``, ``temperature`` ... for litellm).
        requires_env: An environment variable the policy needs (an API key): unset, its cells are skipped.
    """

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    spec: str
    options: dict[str, Any] = Field(default_factory=dict)
    requires_env: str | None = None

    @field_validator("spec")
    @classmethod
    def _known_spec(cls, value: str) -> str:
        # A misspelt spec is refused with the file, not recorded cell by cell as "not playable".
        parse_policy_spec(value)
        return value


class Sweep(BaseModel):
    """A grid over setting axes (every combination is a setting; see the module's table)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    dropout_p: list[Annotated[float, Field(ge=0, le=1)]] | None = None
    dropout_mode: list[Literal["drop", "error", "truncate", "corrupt"]] | None = None
    removed_groups: list[list[str]] | None = None
    removed_functions: list[list[str]] | None = None
    max_turns: list[Annotated[int, Field(ge=1)]] | None = None
    toolset: list[Literal["soql", "functions", "flex"]] | None = None
    aided: list[bool] | None = None
    match: list[Literal["strict", "lenient"]] | None = None
    answer_mode: list[Literal["name", "act"]] | None = None
    schema_drift: list[Annotated[float, Field(ge=0, le=1)]] | None = None
    distractors: list[Annotated[float, Field(ge=0, le=1)]] | None = None
    dirty_values: list[Annotated[float, Field(ge=0, le=1)]] | None = None
    knowledge_drift: list[Annotated[float, Field(ge=0, le=1)]] | None = None
    perturbation_seed: list[Annotated[int, Field(ge=0)]] | None = None
    request_limit: list[Annotated[int, Field(ge=0)]] | None = None
    unavailable_p: list[Annotated[float, Field(ge=0, le=1)]] | None = None
    session_expires_after: list[Annotated[int, Field(ge=0)]] | None = None
    latency_ms: list[Annotated[float, Field(ge=0)]] | None = None
    user: list[str] | None = None

    @field_validator("user")
    @classmethod
    def _known_users(cls, values: list[str] | None) -> list[str] | None:
        for value in values or []:
            if value not in ("none", "scripted") and not (value.startswith("litellm:") and value[8:].strip()):
                raise ValueError(f"unknown user {value!r}; the users are 'none', 'scripted' and 'litellm:MODEL'")
        return values

    @field_validator(*AXES)
    @classmethod
    def _not_empty(cls, values: list[Any] | None) -> list[Any] | None:
        if values is not None and not values:
            raise ValueError("an axis needs at least one value")
        return values

    @field_validator("removed_groups")
    @classmethod
    def _known_groups(cls, values: list[list[str]] | None) -> list[list[str]] | None:
        unknown = sorted({g for groups in values or [] for g in groups} - set(ABLATION_GROUPS))
        if unknown:
            raise ValueError(f"unknown ablation groups {unknown}; the groups are {', '.join(ABLATION_GROUPS)}")
        return values

    def settings(self) -> list[dict[str, Any]]:
        """Every combination of the axes' values."""
        axes = [(axis, getattr(self, axis)) for axis in AXES if getattr(self, axis) is not None]
        if not axes:
            return [{}]
        names = [a for a, _ in axes]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(v for _, v in axes))]


class ExperimentSpec(BaseModel):
    """An experiment: policies, the instances every cell plays, and sweeps.

    Attributes:
        name: A title for the report.
        env: The registered env id.
        org: An org database (default: the embedded org); relative to the spec file.
        tasks: A task file (default: the generated test set); relative to the spec file.
        task: Only the instances of these tasks.
        per_task: Only the first N instances of each task.
        limit: Only the first N instances (after the above).
        trials: Episodes per instance.
        seed: The runs' seed.
        concurrency: Episodes at once within a cell (threads).
    """

    model_config = ConfigDict(extra="forbid")
    name: str = "experiment"
    env: str = "CRMArena-v0"
    org: str | None = None
    tasks: str | None = None
    task: list[str] | None = None
    per_task: int | None = Field(default=None, ge=1)
    limit: int | None = Field(default=None, ge=1)
    trials: int = Field(default=1, ge=1)
    seed: int = 0
    concurrency: int = Field(default=1, ge=1)
    policies: list[PolicyEntry] = Field(min_length=1)
    sweeps: list[Sweep] = Field(min_length=1)

    @field_validator("policies", "sweeps")
    @classmethod
    def _unique_names(cls, entries: list[Any]) -> list[Any]:
        names = [e.name for e in entries]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"names must be unique, and {', '.join(repeated)} repeat")
        return entries

    @model_validator(mode="after")
    def _act_mode_exists(self) -> ExperimentSpec:
        # A sweep over answer modes needs an env with an act mode: refused with the file, not cell by cell.
        if any("act" in (s.answer_mode or ()) for s in self.sweeps):
            act_counterpart(self.env)
        if any(set(s.user or ()) - {"none"} for s in self.sweeps):
            interactive_counterpart(self.env)
        for sweep in self.sweeps:
            if "act" in (sweep.answer_mode or ()) and set(sweep.user or ()) - {"none"}:
                raise ValueError(
                    f"sweep {sweep.name!r}: act mode has no conversation form (answer_mode act with a user)"
                )
        return self


def load_experiment(path: str | os.PathLike[str]) -> ExperimentSpec:
    """Read a TOML spec; relative ``org`` and ``tasks`` paths are taken from the spec's directory.

    Raises:
        ValueError: Not TOML, or not a valid spec (the message names the file and each bad field).
        FileNotFoundError: The file cannot be read.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise FileNotFoundError(f"cannot read the experiment spec {str(path)!r}: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{str(path)!r} is not a text file: {err}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{str(path)!r} is not valid TOML: {err}") from None
    try:
        spec = ExperimentSpec.model_validate(raw)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']} (got {e.get('input')!r})" for e in err.errors()
        )
        raise ValueError(f"{str(path)!r} is not a valid experiment spec: {problems}") from None
    for key in ("org", "tasks"):
        value = getattr(spec, key)
        if value is not None and not Path(value).is_absolute():
            setattr(spec, key, str((path.parent / value).resolve()))
    return spec


def _format(value: Any) -> str:
    if isinstance(value, list):
        return "+".join(map(str, value)) or "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


def setting_label(setting: dict[str, Any]) -> str:
    """A setting as text: ``p=0.3,mode=drop``; ``default`` for none.

    Example:
        >>> setting_label({"dropout_p": 0.3, "dropout_mode": "drop"}), setting_label({"removed_groups": []})
        ('p=0.3,mode=drop', 'without=none')
    """
    if not setting:
        return "default"
    return ",".join(f"{_SHORT.get(axis, axis)}={_format(value)}" for axis, value in setting.items())


def setting_recipe(setting: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The env arguments and wrapper specs of a setting (removal innermost, then dropout, then the limit).

    Example:
        >>> setting_recipe({"dropout_p": 0.2, "max_turns": 5, "aided": False})
        ({'aided': False}, [{'name': 'ToolResultDropout', 'kwargs': {'p': 0.2, 'mode': 'drop'}}, \
{'name': 'TurnLimit', 'kwargs': {'max_turns': 5}}])
    """
    env_kwargs = {k: setting[k] for k in ("toolset", "aided", "match") if k in setting}
    if setting.get("user", "none") != "none":
        env_kwargs["user"] = setting["user"]
    wrappers: list[dict[str, Any]] = []
    groups, functions = setting.get("removed_groups") or [], setting.get("removed_functions") or []
    if groups or functions:
        wrappers.append({"name": "FunctionRemoval", "kwargs": {"functions": functions, "groups": groups}})
    if "dropout_p" in setting or "dropout_mode" in setting:
        mode = setting.get("dropout_mode", "drop")
        wrappers.append({"name": "ToolResultDropout", "kwargs": {"p": setting.get("dropout_p", 0.0), "mode": mode}})
    api = {axis: setting[axis] for axis in _API_AXES if axis in setting}
    if api:
        wrappers.append({"name": "ApiFaults", "kwargs": api})
    if "max_turns" in setting:
        wrappers.append({"name": "TurnLimit", "kwargs": {"max_turns": setting["max_turns"]}})
    return env_kwargs, wrappers


def setting_perturbations(setting: dict[str, Any]) -> list[dict[str, Any]]:
    """The org perturbations of a setting, in the order they are applied (none for strengths of 0).

    Example:
        >>> setting_perturbations({"distractors": 0.2, "schema_drift": 0.0, "perturbation_seed": 3})
        [{'kind': 'distractors', 'strength': 0.2, 'seed': 3}]
    """
    seed = setting.get("perturbation_seed", 0)
    return [
        {"kind": axis, "strength": setting[axis], "seed": seed}
        for axis in ORG_PERTURBATION_AXES
        if setting.get(axis, 0) > 0
    ]


def _perturbed_inputs(spec: ExperimentSpec, out: Path, setting: dict[str, Any]) -> dict[str, Any] | None:
    """The perturbed org, the task file carried to it and what was dropped, for a setting that perturbs the
    org (None for one that does not)."""
    perturbations = setting_perturbations(setting)
    if not perturbations:
        return None
    import gymnasium as gym

    from crmarena_gym.org import default_org_path, perturbed_org_path
    from crmarena_gym.tasks import default_tasks, load_tasks, recompute_tasks, save_tasks

    kind = (gym.spec(spec.env).kwargs or {}).get("kind") or "service"  # a CRMArena-Pro id's org kind
    base = Path(spec.org) if spec.org else default_org_path(kind=kind)
    org = perturbed_org_path(base, perturbations)
    instances = load_tasks(spec.tasks) if spec.tasks else default_tasks(base)
    carried = recompute_tasks(instances, base, org)
    # Named after the perturbed org (the base org's hash and the perturbations'); written each time (the same
    # bytes), so a resumed cell plays the very instances it started with.
    tasks_file = out / "perturbed" / (org.stem + ".jsonl")
    tasks_file.parent.mkdir(parents=True, exist_ok=True)
    save_tasks(carried.kept, tasks_file)
    return {
        "org": str(org),
        "tasks": str(tasks_file),
        "perturbations": perturbations,
        "kept": len(carried.kept),
        "dropped": carried.dropped,
    }


@dataclass(frozen=True)
class Cell:
    """One run of an experiment: a policy under one setting of one sweep."""

    sweep: str
    policy: PolicyEntry
    setting: dict[str, Any]

    @property
    def label(self) -> str:
        return setting_label(self.setting)

    @property
    def path(self) -> Path:
        """The run directory, relative to the experiment's directory."""
        return Path("cells") / self.sweep / self.policy.name / re.sub(r"[^A-Za-z0-9.,=+_-]", "_", self.label)


def experiment_cells(spec: ExperimentSpec) -> list[Cell]:
    """Every cell, sweep by sweep, setting by setting, policy by policy."""
    return [Cell(s.name, p, setting) for s in spec.sweeps for setting in s.settings() for p in spec.policies]


def _state_file(out: Path) -> Path:
    return out / EXPERIMENT_FILE


def read_state(out: str | os.PathLike[str]) -> dict[str, Any]:
    """``experiment.json`` of an experiment directory.

    Raises:
        FileNotFoundError: The directory holds no experiment.
    """
    path = _state_file(Path(out))
    if not path.is_file():
        raise FileNotFoundError(f"{os.fspath(out)!r} holds no experiment (no {EXPERIMENT_FILE})")
    return json.loads(path.read_text(encoding="utf-8"))


def _iter_cells(
    spec: ExperimentSpec, out: Path, echo: Callable[[str], None], stopped_before: set[str]
) -> Iterator[dict[str, Any]]:
    stopped: dict[str, str] = {}  # policy -> why its remaining cells are skipped
    cells = experiment_cells(spec)
    for number, cell in enumerate(cells, 1):
        entry: dict[str, Any] = {
            "sweep": cell.sweep,
            "policy": cell.policy.name,
            "setting": cell.setting,
            "label": cell.label,
            "path": str(cell.path),
        }
        prefix = f"[{number}/{len(cells)}] {cell.sweep} / {cell.policy.name} / {cell.label}"
        env_var = cell.policy.requires_env
        if env_var and not os.environ.get(env_var):
            entry.update(status="skipped", reason=f"{env_var} is not set")
        elif cell.policy.name in stopped:
            entry.update(status="skipped", reason=stopped[cell.policy.name])
        else:
            env_kwargs, wrappers = setting_recipe(cell.setting)
            env_id = act_counterpart(spec.env) if cell.setting.get("answer_mode") == "act" else spec.env
            if cell.setting.get("user", "none") != "none":
                env_id = interactive_counterpart(spec.env)
            try:
                perturbed = _perturbed_inputs(spec, out, cell.setting)
                if perturbed is not None:
                    entry["perturbed"] = perturbed
                run = evaluate(
                    cell.policy.spec,
                    env_id=env_id,
                    tasks=perturbed["tasks"] if perturbed else spec.tasks,
                    org=perturbed["org"] if perturbed else spec.org,
                    policy_options=cell.policy.options,
                    env_kwargs=env_kwargs,
                    wrappers=wrappers,
                    trials=spec.trials,
                    concurrency=spec.concurrency,
                    out=out / cell.path,
                    resume=True,
                    # A cell that stopped last time (a rejected key) replays its failed episodes now.
                    retry_errors=str(cell.path) in stopped_before,
                    select_tasks=spec.task,
                    per_task=spec.per_task,
                    limit=spec.limit,
                    seed=spec.seed,
                    progress=False,
                    command=["crmarena-gym", "experiment", "(cell)", str(cell.path)],
                )
            except RunStoppedError as err:
                stopped[cell.policy.name] = f"an earlier cell of {cell.policy.name} stopped: {err}"
                entry.update(status="stopped", reason=str(err))
            except (ValueError, TypeError, ImportError) as err:  # the oracle on soql, a missing extra ...
                entry.update(status="not playable", reason=str(err))
            else:
                entry.update(status="done", episodes=len(run.results), new=run.new_episodes)
                entry["accuracy"] = run.summary["all"]["accuracy"] if run.results else None
        if entry["status"] == "done":
            echo(f"{prefix}: accuracy {entry['accuracy']:.3f} ({entry['episodes']} episodes, {entry['new']} new)")
        else:
            echo(f"{prefix}: {entry['status']} ({entry['reason']})")
        yield entry


def run_experiment(
    spec: ExperimentSpec,
    out: str | os.PathLike[str],
    *,
    echo: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Run (or resume) every cell of an experiment; return the state written to ``OUT/experiment.json``.

    Raises:
        ValueError: ``out`` holds an experiment of another spec (choose another directory), or is a file.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"the experiment needs a directory, and {os.fspath(out)!r} is a file")
    out.mkdir(parents=True, exist_ok=True)
    spec_data = spec.model_dump(mode="json")
    stopped_before: set[str] = set()
    if _state_file(out).is_file():
        before = read_state(out)
        stopped_before = {c["path"] for c in before.get("cells", []) if c.get("status") == "stopped"}
        previous = before.get("spec") or {}
        if previous != spec_data:
            differ = sorted(k for k in set(previous) | set(spec_data) if previous.get(k) != spec_data.get(k))
            raise ValueError(
                f"{os.fspath(out)!r} holds an experiment of another spec (it differs in {', '.join(differ)}): "
                "choose another --out, or run that spec again to resume it"
            )
    state: dict[str, Any] = {"spec": spec_data, "cells": []}
    for entry in _iter_cells(spec, out, echo, stopped_before):
        state["cells"].append(entry)
        atomic_write_text(_state_file(out), redact_json(json_text(state, indent=2, default=str)) + "\n")
    state["complete"] = all(c["status"] != "stopped" for c in state["cells"])
    atomic_write_text(_state_file(out), redact_json(json_text(state, indent=2, default=str)) + "\n")
    return state


def cell_results_path(out: Path, entry: dict[str, Any]) -> Path:
    """The results file of a cell recorded in ``experiment.json``."""
    return out / entry["path"] / RESULTS_FILE
