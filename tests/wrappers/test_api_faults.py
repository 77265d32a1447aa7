"""API perturbations: request limits, transient 503s, session expiry and simulated latency."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.envs import CRMArenaEnv
from crmarena_gym.tasks import TaskInstance
from crmarena_gym.wrappers import ApiFaults, TurnLimit, env_stack

QUERY = "execute SELECT Id, Name FROM Issue__c ORDER BY Name"
CALL = "get_issues()"


def _env(env_org: Path, env_tasks: list[TaskInstance], **kwargs: Any) -> ApiFaults:
    return ApiFaults(CRMArenaEnv("TII", org=env_org, tasks=env_tasks), **kwargs)


def test_request_limit_refuses_every_request_past_it_without_running_it(env_org: Path, env_tasks: list) -> None:
    env = _env(env_org, env_tasks, request_limit=2)
    env.reset(seed=0)
    first = env.step(QUERY)
    assert "api_fault" not in first[4] and "result" in first[4]
    env.step(QUERY)
    obs, reward, terminated, truncated, info = env.step(QUERY)
    assert info["api_fault"] == "REQUEST_LIMIT_EXCEEDED" and "REQUEST_LIMIT_EXCEEDED" in obs
    assert "result" not in info  # never carried out
    assert info["api"] == {
        "requests": 3,
        "faults": {"REQUEST_LIMIT_EXCEEDED": 1},
        "fault": "REQUEST_LIMIT_EXCEEDED",
        "latency_ms": 0.0,
    }
    assert (reward, terminated, truncated) == (0.0, False, False)
    # A submission is no request: it still ends the episode.
    inst = env.unwrapped.instance
    _, reward, terminated, _, info = env.step(f"submit {inst.answer}")
    assert terminated and reward == 1.0 and info["api"]["requests"] == 3
    env.reset(seed=0)  # the count is per episode
    assert "api_fault" not in env.step(QUERY)[4]


def test_session_expiry_is_passed_by_reissuing(env_org: Path, env_tasks: list) -> None:
    env = _env(env_org, env_tasks, session_expires_after=1)
    env.reset(seed=0)
    good = env.step(QUERY)[0]
    obs, _, _, _, info = env.step(QUERY)
    assert info["api_fault"] == "INVALID_SESSION_ID" and "Session expired" in obs
    again = env.step(QUERY)
    assert "api_fault" not in again[4] and again[0] == good  # re-issued: the same rows
    assert all("api_fault" not in env.step(QUERY)[4] for _ in range(3))


def test_unavailable_rate_is_seeded_and_near_p(env_org: Path, env_tasks: list) -> None:
    def schedule(seed: int) -> list[bool]:
        env = _env(env_org, env_tasks, unavailable_p=0.3)
        env.reset(seed=seed)
        return [env.step(CALL)[4].get("api_fault") == "SERVER_UNAVAILABLE" for _ in range(200)]

    a, b, c = schedule(1), schedule(1), schedule(2)
    assert a == b != c
    assert 0.2 < sum(a) / len(a) < 0.4


def test_latency_is_counted_not_slept_and_the_wrapper_recorded(env_org: Path, env_tasks: list) -> None:
    env = _env(env_org, env_tasks, latency_ms=250.0, request_limit=3)
    env.reset(seed=0)
    for _ in range(4):
        info = env.step(QUERY)[4]
    assert info["api"]["latency_ms"] == 750.0  # the refused 4th request reached no server
    assert env_stack(env)[0]["kwargs"] == {
        "request_limit": 3,
        "unavailable_p": 0.0,
        "session_expires_after": None,
        "latency_ms": 250.0,
    }


def test_refused_requests_use_turns_under_the_registered_limit(env_org: Path, env_tasks: list) -> None:
    env = TurnLimit(ApiFaults(gym.make("CRMArena-TII-v0", org=env_org, tasks=env_tasks), request_limit=0), max_turns=3)
    env.reset(seed=0)
    steps = [env.step(QUERY) for _ in range(3)]
    assert [s[4]["api_fault"] for s in steps] == ["REQUEST_LIMIT_EXCEEDED"] * 3
    assert steps[-1][3] is True  # truncated at the turn limit


@pytest.mark.parametrize(
    "kwargs", [{"request_limit": -1}, {"unavailable_p": 1.5}, {"session_expires_after": 1.5}, {"latency_ms": -1}]
)
def test_bad_arguments_refused(env_org: Path, env_tasks: list, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        _env(env_org, env_tasks, **kwargs)
