"""The client AutoEnv imports (``<name>_env.client.<Name>Env``): CRMArena's WebSocket client under that name."""

from __future__ import annotations

from crmarena_gym.integrations.openenv import CRMArenaAction, CRMArenaClient, CRMArenaObservation

__all__ = ["CRMArenaAction", "CRMArenaObservation", "CrmarenaEnv"]


class CrmarenaEnv(CRMArenaClient):
    """:class:`~crmarena_gym.integrations.openenv.CRMArenaClient` under the name AutoEnv looks for."""
