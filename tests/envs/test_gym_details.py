"""Gymnasium details: the registry heading, the ``idx`` reset option, and what ``ansi`` renders."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import pytest

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.envs import env_ids
from crmarena_gym.tasks import TaskInstance


def test_pprint_registry_lists_every_id_under_a_crmarena_gym_heading() -> None:
    pytest.importorskip("ray")
    import crmarena_gym.rl  # noqa: F401 - registers CRMArena-Discrete-v0

    text = gym.pprint_registry(disable_print=True)
    assert text is not None
    sections = dict(re.findall(r"===== (\S+) =====\n(.*?)(?=\n=====|\Z)", text, flags=re.S))
    assert "crmarena_gym" in sections, sorted(sections)
    assert {*env_ids(), "CRMArena-Discrete-v0"} <= set(sections["crmarena_gym"].split())
    elsewhere = {name: body for name, body in sections.items() if name != "crmarena_gym" and "CRMArena-" in body}
    assert not elsewhere
    assert not any(name.startswith("_") for name in sections)


def test_idx_and_task_id_pick_the_same_instance(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    env = gym.make("CRMArena-HTU-v0", org=env_org, tasks=env_tasks)
    wanted = [t for t in env_tasks if t.abbrev == "HTU"][3]
    by_idx = env.reset(seed=0, options={"idx": wanted.idx})
    by_task_id = env.reset(seed=0, options={"task_id": wanted.idx})
    assert by_idx[1]["idx"] == by_task_id[1]["idx"] == wanted.idx
    assert by_idx[0] == by_task_id[0] and by_idx[0].startswith(wanted.query.strip())
    assert env.reset(options={"idx": wanted.idx, "task_id": wanted.idx})[1]["idx"] == wanted.idx
    with pytest.raises(ValueError, match=r"idx=.* and task_id=.* name different instances"):
        env.reset(options={"idx": wanted.idx, "task_id": wanted.idx + 1})
    with pytest.raises(ValueError, match="task_id 99999"):
        env.reset(options={"idx": 99999})


def test_ansi_render_shows_turn_action_reward_and_observation(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    env = gym.make("CRMArena-BRI-v0", org=env_org, tasks=env_tasks, render_mode="ansi")
    inst = next(t for t in env_tasks if t.abbrev == "BRI")
    first, _ = env.reset(seed=0, options={"idx": inst.idx})
    shown = env.render()
    assert shown == f"Turn 0 (instance {inst.idx}, BRI, running)\nObservation:\n{first}"

    obs, *_ = env.step("execute SELECT COUNT() FROM Case")
    lines = env.render().split("\n")  # type: ignore[union-attr]
    assert lines[:4] == [
        f"Turn 1 (instance {inst.idx}, BRI, running)",
        "Action: execute SELECT COUNT() FROM Case",
        "Reward: 0.0",
        "Observation:",
    ]
    assert "\n".join(lines[4:]) == obs

    _, reward, terminated, *_ = env.step(f"submit {inst.answer}")
    assert terminated and reward == 1.0
    assert env.render().split("\n")[:3] == [  # type: ignore[union-attr]
        f"Turn 2 (instance {inst.idx}, BRI, ended)",
        f"Action: submit {inst.answer}",
        "Reward: 1.0",
    ]


def test_no_render_without_a_render_mode(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    env = gym.make("CRMArena-BRI-v0", org=env_org, tasks=env_tasks)
    env.reset(seed=0)
    assert env.render() is None
