"""Runs for the viewer's tests: real evaluations, a recorded trajectory with dropout, and damaged run directories."""

from __future__ import annotations

import json
import os
import threading
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
