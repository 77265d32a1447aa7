"""Registering the environments with Gymnasium (done on ``import crmarena_gym``)."""

from __future__ import annotations

import gymnasium as gym

from crmarena_gym.tasks import ACT_TASKS, TASK_ABBREVS, get_task_spec

#: The paper's turn budget.
MAX_TURNS = 20
# The module path's third part is the heading ``gym.pprint_registry()`` lists the ids under.
ENTRY_POINT = "crmarena_gym.envs.crmarena_gym:CRMArenaEnv"
ACT_ENTRY_POINT = "crmarena_gym.envs.crmarena_gym:CRMArenaActEnv"
INTERACTIVE_ENTRY_POINT = "crmarena_gym.envs.crmarena_gym:CRMArenaInteractiveEnv"


def env_ids() -> list[str]:
    """Every registered id: one per task, then ``CRMArena-v0`` for all nine.

    Example:
        >>> env_ids()[:2], env_ids()[-1]
        (['CRMArena-KQA-v0', 'CRMArena-MTA-v0'], 'CRMArena-v0')
    """
    return [f"CRMArena-{abbrev}-v0" for abbrev in TASK_ABBREVS] + ["CRMArena-v0"]


def act_env_ids() -> list[str]:
    """The act-mode ids: one per task with an act mode (the agent makes the change; the final state is graded).

    Example:
        >>> act_env_ids()
        ['CRMArena-NCR-Act-v0']
    """
    return [f"CRMArena-{get_task_spec(name).abbrev}-Act-v0" for name in ACT_TASKS]


def act_counterpart(env_id: str) -> str:
    """The act-mode id of a name-mode id (``CRMArena-NCR-v0`` -> ``CRMArena-NCR-Act-v0``); an act id is its own.

    Raises:
        ValueError: The id has no act mode; the message lists the ids that have one.

    Example:
        >>> act_counterpart("CRMArena-NCR-v0")
        'CRMArena-NCR-Act-v0'
    """
    acts = act_env_ids()
    if env_id in acts:
        return env_id
    candidate = env_id.removesuffix("-v0") + "-Act-v0"
    if candidate not in acts:
        raise ValueError(f"{env_id!r} has no act mode; the act-mode ids: {', '.join(acts)}")
    return candidate


def interactive_env_ids() -> list[str]:
    """The conversation ids: one per task (a simulated user holds part of the request back), then all nine.

    Example:
        >>> interactive_env_ids()[0], interactive_env_ids()[-1]
        ('CRMArena-KQA-Interactive-v0', 'CRMArena-Interactive-v0')
    """
    return [f"CRMArena-{abbrev}-Interactive-v0" for abbrev in TASK_ABBREVS] + ["CRMArena-Interactive-v0"]


def interactive_counterpart(env_id: str) -> str:
    """The conversation id of a single-turn id (``CRMArena-HTU-v0`` -> ``CRMArena-HTU-Interactive-v0``); a
    conversation id is its own.

    Raises:
        ValueError: The id has no conversation form; the message lists the ids that have one.

    Example:
        >>> interactive_counterpart("CRMArena-v0"), interactive_counterpart("CRMArena-HTU-Interactive-v0")
        ('CRMArena-Interactive-v0', 'CRMArena-HTU-Interactive-v0')
    """
    ids = interactive_env_ids()
    if env_id in ids:
        return env_id
    candidate = env_id.removesuffix("-v0") + "-Interactive-v0"
    if candidate not in ids:
        raise ValueError(
            f"{env_id!r} has no conversation form; the single-turn ids that have one: {', '.join(env_ids())}"
        )
    return candidate


def register_envs() -> None:
    """Register every id (idempotent)."""
    for env_id, abbrev in zip(env_ids(), [*TASK_ABBREVS, None], strict=True):
        if env_id in gym.registry:
            continue
        gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"task": abbrev}, max_episode_steps=MAX_TURNS)
    for env_id, name in zip(act_env_ids(), ACT_TASKS, strict=True):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=ACT_ENTRY_POINT, kwargs={"task": name}, max_episode_steps=MAX_TURNS)
    for env_id, abbrev in zip(interactive_env_ids(), [*TASK_ABBREVS, None], strict=True):
        if env_id not in gym.registry:
            gym.register(
                id=env_id, entry_point=INTERACTIVE_ENTRY_POINT, kwargs={"task": abbrev}, max_episode_steps=MAX_TURNS
            )
