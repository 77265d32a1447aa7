"""Runs for the viewer's tests: real evaluations, a recorded trajectory with dropout, and damaged run directories."""

from __future__ import annotations

import json
import os
import random
import threading
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gymnasium as gym

from crmarena_gym.eval import evaluate, make_viewer_server
from crmarena_gym.policies import OraclePolicy, Policy, PolicyError
from crmarena_gym.tasks import TaskInstance
from crmarena_gym.wrappers import RecordTrajectory, ToolResultDropout


class Scripted(Policy):
    """A refused query, a function call, a bad call, then a guess: every kind of step and two error codes."""

    toolset = "flex"
    ACTIONS = (
        "execute SELECT NoSuchField__c FROM Case",
        '{"name": "get_issues", "arguments": {}}',
        'execute get_cases({"start_date": 5})',
        "submit None",
    )

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        super().reset(observation, info, seed=seed)
        self._turn = 0

    def act(self, observation: str) -> str:
        self._turn += 1
        return self.ACTIONS[self._turn - 1]


def make_runs(root: Path, org: Path, tasks: list[TaskInstance]) -> dict[str, Path]:
    """An oracle run, a random run (2 trials) and a scripted run over three instances of each of four tasks."""
    chosen = [t for t in tasks if t.abbrev in ("HTU", "BRI", "NCR", "KQA")]
    runs = {"oracle": root / "oracle", "random": root / "random", "scripted": root / "scripted"}
    evaluate("oracle", tasks=chosen, org=org, out=runs["oracle"], progress=False)
    evaluate("random", tasks=chosen, org=org, out=runs["random"], trials=2, progress=False)
    evaluate(Scripted, tasks=chosen[:4], org=org, out=runs["scripted"], progress=False)
    return runs


def record_dropout_trajectory(path: Path, org: Path, tasks: list[TaskInstance], episodes: int = 3) -> list[dict]:
    """Oracle episodes through ToolResultDropout(p=0.5, mode="drop") recorded by RecordTrajectory; the
    dropout info of each step, as the wrapper reported it."""
    chosen = [t for t in tasks if t.abbrev == "HTU"][:episodes]
    env = gym.make("CRMArena-v0", org=org, tasks=chosen, toolset="functions", privileged=True)
    env = RecordTrajectory(ToolResultDropout(env, p=0.5, mode="drop"), path)
    policy = OraclePolicy()
    policy.attach(env)
    reported: list[dict] = []
    for n, inst in enumerate(chosen):
        obs, info = env.reset(seed=n, options={"idx": inst.idx})
        policy.reset(obs, info)
        done = False
        while not done:
            try:
                action = policy.act(obs)
            except Exception:  # the replaying oracle gives up on a lost result: end the episode by hand
                action = "submit None"
            obs, _, terminated, truncated, step_info = env.step(action)
            reported.append({"episode": n, "idx": inst.idx, "dropout": step_info.get("dropout")})
            done = terminated or truncated
    env.close()
    return reported


def write_run(directory: Path, lines: list[Any], metadata: dict[str, Any] | None = None, tail: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines) + tail
    (directory / "results.jsonl").write_text(text)
    if metadata is not None:
        (directory / "metadata.json").write_text(json.dumps(metadata))
    return directory


@contextmanager
def serving(sources: list[Path]) -> Iterator[str]:
    """A viewer server on a free loopback port, in a thread; its base URL."""
    server = make_viewer_server(sources, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def llm_record() -> dict[str, Any]:
    """An episode of a model's policy, as the runner records it: the reply, tokens and cost of each call."""
    usage = {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940, "cost": 0.0031, "attempts": 1}
    step = {
        "turn": 1,
        "action": "submit 005Ws000001xSR9IAM",
        "observation": "Answer submitted. The episode is over.",
        "action_kind": "submit",
        "policy": {"reply": "Thought: the agent with the fewest ...\nsubmit 005Ws000001xSR9IAM", "usage": usage},
    }
    record = {
        "idx": 4, "trial": 0, "abbrev": "HTU", "reward": 0.0, "turns": 1, "end_reason": "submitted",
        "submitted": "005Ws000001xSR9IAM", "gold": "005Ws000001xAAAAAA",
        "reward_breakdown": {"reward": 0.0, "metric": "exact_match", "mode": "lenient",
                             "submitted": "Thought ... 005Ws000001xSR9IAM", "compared": "005Ws000001xSR9IAM"},
        "usage": {"calls": 1, "total_tokens": 940, "prompt_tokens": 900, "completion_tokens": 40, "cost": 0.0031},
        "system_prompt_sha256": "ab" * 32,
        "trajectory": [{"observation": "Which agent ...?"}, step],
    }  # fmt: skip
    return record


class NeedsKey(Policy):
    """Submits None, but only with ``CRMARENA_TEST_KEY`` set: without it every episode would fail alike."""

    def act(self, observation: str) -> str:
        if not os.environ.get("CRMARENA_TEST_KEY"):
            error = PolicyError("CRMARENA_TEST_KEY is not set")
            error.fatal = True
            raise error
        return "submit None"


# -- synthetic sweeps: as many episodes and cells as real sweeps have, written in seconds --------------

TASKS = ("HTU", "TCU", "TII", "MTA", "BRI", "NCR", "NED", "PVI", "KQA")


def _sf_id(rng: random.Random, prefix: str) -> str:
    return f"{prefix}Ws00000{rng.getrandbits(40):010x}"[:18]


def _synthetic_steps(rng: random.Random, dropout: str | None, timed: bool) -> list[dict[str, Any]]:
    """The steps of an episode before its answer: queries, calls, errors, dropout effects, timing."""
    steps: list[dict[str, Any]] = []
    for turn in range(1, rng.randint(2, 7)):
        kind = rng.random()
        prefix = "Salesforce instance output: "
        if kind < 0.4:
            account = _sf_id(rng, "001")
            action = (
                f"execute SELECT Id, OwnerId, CreatedDate FROM Case WHERE AccountId = '{account}' "
                f"AND CreatedDate >= 2021-0{rng.randint(1, 9)}-01T00:00:00Z AND Status != 'New' "
                "ORDER BY CreatedDate LIMIT 20"
            )
            result: list[dict[str, Any]] = [
                {"Id": _sf_id(rng, "500"), "OwnerId": _sf_id(rng, "005"), "CreatedDate": "2021-03-04T10:00:00.000+0000"}
                for _ in range(rng.randint(1, 4))
            ]
            step: dict[str, Any] = {"action_kind": "query", "query": action.removeprefix("execute ")}
        elif kind < 0.55:
            action = "execute FIND {late delivery} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title)"
            result = [{"Id": _sf_id(rng, "ka0"), "Title": "Shipping delays"}]
            step = {"action_kind": "query", "query": action.removeprefix("execute ")}
        else:
            ids = [_sf_id(rng, "a1M") for _ in range(rng.randint(1, 6))]
            action = json.dumps({"name": "get_cases", "arguments": {"issue_ids": ids, "statuses": ["Closed"]}})
            result = [
                {"OwnerId": _sf_id(rng, "005"), "AccountId": _sf_id(rng, "001")} for _ in range(rng.randint(1, 4))
            ]
            prefix = ""
            step = {"action_kind": "call", "function": "get_cases"}
        if rng.random() < 0.08:
            step["error"] = rng.choice(["INVALID_FIELD", "MALFORMED_QUERY", "FUNCTION_ERROR"])
            observation = f"[{step['error']}] something in the action is wrong"
        else:
            if dropout:  # what ToolResultDropout does and records
                step["dropout"] = {"hit": rng.random() < 0.3, "mode": dropout}
            if dropout and step["dropout"]["hit"]:
                if dropout == "corrupt":
                    row, field = rng.randrange(len(result)), rng.choice(sorted(result[0]))
                    result[row][field] = "X" + str(result[row][field])[1:]
                    step["dropout"].update(changed=field, path=[row, field])
                elif dropout == "truncate":
                    result = result[: rng.randrange(len(result))]
                    step["dropout"]["kept"] = len(result)
                else:
                    result = []
            observation = f"{prefix}{result!r}"
        if timed:
            step["timing"] = {"policy": round(rng.uniform(0.2, 4.0), 3), "env": round(rng.uniform(0.001, 0.05), 4)}
        steps.append({"turn": turn, "action": action, "observation": observation, **step})
    return steps


def synthetic_record(
    rng: random.Random,
    idx: int,
    trial: int,
    *,
    quality: float = 0.5,
    dropout: str | None = None,
    timed: bool = True,
    steps: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An episode record as the runner writes one: SOQL and SOSL queries, function calls, an error code now
    and then, dropout effects when ``dropout`` names a mode, per-step timing when ``timed`` (or the given
    ``steps``), then an answer, right with probability ``quality``. Instances whose idx is a multiple of 13
    are unanswerable."""
    abbrev = TASKS[idx % len(TASKS)]
    answerable = idx % 13 != 0
    gold = _sf_id(random.Random(idx), "005") if answerable else None
    steps = [
        {"observation": f"Question {idx} ({abbrev}): which agent handled the most cases?"},
        *(steps if steps is not None else _synthetic_steps(rng, dropout, timed)),
    ]
    success = rng.random() < quality
    submitted = (gold if answerable else "None") if success else _sf_id(rng, "005")
    turn = len(steps)
    steps.append(
        {"turn": turn, "action": f"submit {submitted}", "observation": "Answer submitted. The episode is over.",
         "action_kind": "submit"}
    )  # fmt: skip
    return {
        "task": "handle_time", "abbrev": abbrev, "idx": idx, "trial": trial, "seed": idx * 1000 + trial,
        "reward": 1.0 if success else 0.0, "success": success, "turns": turn, "end_reason": "submitted",
        "error": None, "fatal": False, "submitted": submitted, "gold": gold, "answerable": answerable,
        "reward_breakdown": {"reward": 1.0 if success else 0.0, "metric": "exact_match", "mode": "strict",
                             "submitted": submitted, "compared": submitted, "gold": gold},
        "usage": {"calls": turn, "prompt_tokens": 900 * turn, "completion_tokens": 40 * turn,
                  "total_tokens": 940 * turn, "cost": 0.003 * turn, "unpriced_calls": 0},
        "trajectory": steps,
    }  # fmt: skip


def synthetic_run(
    directory: Path,
    instances: int,
    trials: int = 1,
    *,
    seed: int = 0,
    quality: float = 0.5,
    dropout: str | None = None,
    wrappers: list[dict[str, Any]] | None = None,
    policy: str = "litellm:synthetic-model",
) -> Path:
    """A run directory of ``instances * trials`` synthetic episodes with its metadata."""
    rng = random.Random(seed)
    # Episodes draw their steps from a pool: a 20,000-episode run is written in about a second.
    pool = [_synthetic_steps(rng, dropout, True) for _ in range(min(instances * trials, 400))]
    records = [
        synthetic_record(rng, idx, trial, quality=quality, steps=rng.choice(pool))
        for idx in range(instances)
        for trial in range(trials)
    ]
    stack = [{"class": f"crmarena_gym.wrappers._common:{w['name']}", "kwargs": w["kwargs"]} for w in wrappers or []]
    stack.append({"class": "crmarena_gym.envs._env:CRMArenaEnv", "kwargs": {"toolset": "flex"}})
    metadata = {
        "results_format": 1, "trials": trials, "episodes": len(records), "instances": instances,
        "run": {"env_id": "CRMArena-v0", "policy": policy, "policy_options": {"framework": "react"},
                "env_kwargs": {}, "seed": seed, **({"wrappers": wrappers} if wrappers else {})},
        "env_stack": stack,
        "command": ["crmarena-gym", "eval", "--policy", policy, "--trials", str(trials), "--out", str(directory)],
    }  # fmt: skip
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "results.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    (directory / "metadata.json").write_text(json.dumps(metadata))
    return directory


SYNTHETIC_SPEC = """
name = "synthetic sweep"
per_task = 5
trials = 1

[[policies]]
name = "oracle"
spec = "oracle"

[[policies]]
name = "reactive"
spec = "reactive-oracle"

[[policies]]
name = "random"
spec = "random"

[[policies]]
name = "model-a"
spec = "litellm:model-a"

[[policies]]
name = "model-b"
spec = "litellm:model-b"

[[policies]]
name = "model-c"
spec = "litellm:model-c"
requires_env = "SYNTHETIC_NO_SUCH_KEY"

[[sweeps]]
name = "dropout"
dropout_p = [0.0, 0.2, 0.4, 0.6, 0.8]
dropout_mode = ["corrupt"]

[[sweeps]]
name = "turns"
max_turns = [2, 4, 6, 8, 10]

[[sweeps]]
name = "removal"
removed_groups = [[], ["query"], ["calculation"], ["independent"], ["dependent"]]

[[sweeps]]
name = "functions"
removed_functions = [[], ["get_cases"], ["get_issues"], ["get_start_date"], ["get_period"]]
"""


def synthetic_experiment(directory: Path, instances: int = 40, trials: int = 1) -> dict[str, Any]:
    """An experiment directory as ``crmarena-gym experiment`` leaves it: 4 sweeps of 5 or 6 settings by 6
    policies (120 cells): 100 cells done (a run each), the 20 of the policy whose key is unset skipped.
    Each cell's quality falls with its index so that the report's lines differ. Returns the state written."""
    from crmarena_gym.eval._experiment import ExperimentSpec, experiment_cells, setting_recipe

    spec = ExperimentSpec.model_validate({**tomllib.loads(SYNTHETIC_SPEC), "trials": trials})
    cells = []
    for n, cell in enumerate(experiment_cells(spec)):
        entry: dict[str, Any] = {
            "sweep": cell.sweep, "policy": cell.policy.name, "setting": cell.setting, "label": cell.label,
            "path": str(cell.path),
        }  # fmt: skip
        if cell.policy.requires_env:
            entry.update(status="skipped", reason=f"{cell.policy.requires_env} is not set")
        else:
            _, wrappers = setting_recipe(cell.setting)
            quality = max(0.05, 0.95 - 0.1 * (n % 7) - 0.05 * spec.policies.index(cell.policy))
            mode = cell.setting.get("dropout_mode")
            synthetic_run(
                directory / cell.path, instances, trials, seed=n, quality=quality, dropout=mode, wrappers=wrappers,
                policy=cell.policy.spec,
            )  # fmt: skip
            entry.update(status="done", episodes=instances * trials, new=instances * trials)
        cells.append(entry)
    state = {"spec": spec.model_dump(mode="json"), "cells": cells, "complete": True}
    (directory / "experiment.json").write_text(json.dumps(state, indent=2))
    return state
