"""Registering the environments with Gymnasium (done on ``import crmarena_gym``)."""

from __future__ import annotations

import gymnasium as gym

from crmarena_gym.tasks import TASK_ABBREVS

#: The paper's turn budget.
MAX_TURNS = 20
# The module path's third part is the heading ``gym.pprint_registry()`` lists the ids under.
ENTRY_POINT = "crmarena_gym.envs.crmarena_gym:CRMArenaEnv"


def env_ids() -> list[str]:
    """Every registered id: one per task, then ``CRMArena-v0`` for all nine.

    Example:
        >>> env_ids()[:2], env_ids()[-1]
        (['CRMArena-KQA-v0', 'CRMArena-MTA-v0'], 'CRMArena-v0')
    """
    return [f"CRMArena-{abbrev}-v0" for abbrev in TASK_ABBREVS] + ["CRMArena-v0"]


def register_envs() -> None:
    """Register every id (idempotent)."""
    for env_id, abbrev in zip(env_ids(), [*TASK_ABBREVS, None], strict=True):
        if env_id in gym.registry:
            continue
        gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"task": abbrev}, max_episode_steps=MAX_TURNS)
