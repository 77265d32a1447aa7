"""CRMArena as an OpenEnv environment: typed models, the server (``crmarena-gym serve-env``) and clients.

Needs ``pip install 'crmarena-gym[openenv]'``. See :mod:`crmarena_gym.integrations.openenv._env` for
the session rules (WebSocket connections are sessions; HTTP episodes are addressed by ``episode_id``).

Example:
    >>> from crmarena_gym.integrations.openenv import CRMArenaAction
    >>> action = CRMArenaAction(tool_call={"name": "get_period", "arguments": {"period_name": "Q1", "year": 2021}})
    >>> action.tool_call.name
    'get_period'
"""

from __future__ import annotations

try:
    import openenv.core  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ImportError("the OpenEnv adapter needs openenv-core: pip install 'crmarena-gym[openenv]'") from err

from crmarena_gym.integrations.openenv._env import CRMArenaEnvironment, CRMArenaHub, HubConfig
from crmarena_gym.integrations.openenv._models import CRMArenaAction, CRMArenaObservation, CRMArenaState, ToolCall
from crmarena_gym.integrations.openenv._server import (
    CRMArenaClient,
    CRMArenaHTTPClient,
    ServerThread,
    check_host,
    make_app,
    serve,
)

__all__ = [
    "CRMArenaAction",
    "CRMArenaClient",
    "CRMArenaEnvironment",
    "CRMArenaHTTPClient",
    "CRMArenaHub",
    "CRMArenaObservation",
    "CRMArenaState",
    "HubConfig",
    "ServerThread",
    "ToolCall",
    "check_host",
    "make_app",
    "serve",
]
