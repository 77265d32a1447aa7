"""CRMArena for OpenEnv's AutoEnv: the client, action and observation of :mod:`crmarena_gym.integrations.openenv`.

Example (against a running ``crmarena-gym serve-env``)::

    from openenv import AutoEnv, AutoAction

    env = AutoEnv.from_env("crmarena", base_url="http://127.0.0.1:8000")   # a CrmarenaEnv
    Action = AutoAction.from_env("crmarena")                               # CRMArenaAction
"""

from __future__ import annotations

from crmarena_env.client import CRMArenaAction, CrmarenaEnv, CRMArenaObservation

__all__ = ["CRMArenaAction", "CRMArenaObservation", "CrmarenaEnv"]
