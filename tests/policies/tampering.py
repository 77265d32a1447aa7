"""Playing a policy against an environment that shows a tampered result of one function: the reactive oracle's
reads are tested by what it submits when what it reads is lost or points elsewhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym

from crmarena_gym.tasks import TaskInstance

Tamper = Callable[[Any], Any]


class TamperResult(gym.Wrapper[str, str, str, str]):
    """Shows ``tamper(result)`` in place of every result of the function ``name`` (the environment's own rendering)."""

    def __init__(self, env: gym.Env[str, str], name: str, tamper: Tamper) -> None:
        super().__init__(env)
        self.name = name
        self.tamper = tamper
        self.tampered = 0

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if info.get("function") == self.name and "result" in info:
            self.tampered += 1
            obs = self.env.unwrapped.render_result(self.tamper(info["result"].value), query=False)
        return obs, reward, terminated, truncated, info


def play(policy: Any, env: gym.Env[str, str]) -> tuple[str, float]:
    """One episode: what the policy submitted, and the reward."""
    policy.attach(env)
    observation, info = env.reset(seed=0)
    policy.reset(observation, info)
    for _ in range(40):
        action = policy.act(observation)
        observation, reward, terminated, truncated, step_info = env.step(action)
        policy.observe(step_info)
        if terminated or truncated:
            call = json.loads(action)
            assert call["name"] == "submit", call
            return call["arguments"]["content"], float(reward)
    raise AssertionError("the episode did not end")


def tampered_env(org: Path, instance: TaskInstance, name: str, tamper: Tamper) -> TamperResult:
    made = gym.make("CRMArena-v0", org=org, tasks=[instance], toolset="functions", privileged=True)
    return TamperResult(made, name, tamper)
