"""CRMArena as an OpenEnv environment: typed models, the server (``crmarena-gym serve-env``) and clients.

Needs ``pip install 'crmarena-gym[openenv]'``. See :mod:`crmarena_gym.integrations.openenv._app` for the
endpoints and the session rules (a WebSocket connection or an MCP session owns its one episode; an HTTP
episode is addressed by the unguessable ``episode_id`` its reset returned; idle episodes are dropped).

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
    raise ImportError("the OpenEnv adapter needs OpenEnv: pip install 'crmarena-gym[openenv]'") from err

from crmarena_gym.integrations.openenv._app import CRMArenaApp, ServerLimits
from crmarena_gym.integrations.openenv._env import CRMArenaEnvironment, CRMArenaHub, HubConfig
from crmarena_gym.integrations.openenv._episodes import CapacityError
from crmarena_gym.integrations.openenv._models import CRMArenaAction, CRMArenaObservation, CRMArenaState, ToolCall
from crmarena_gym.integrations.openenv._server import (
    CRMArenaClient,
    CRMArenaHTTPClient,
    ServerBusyError,
    ServerThread,
    check_host,
    make_app,
    serve,
    uvicorn_config,
)

__all__ = [
    "CRMArenaAction",
    "CRMArenaApp",
    "CRMArenaClient",
    "CRMArenaEnvironment",
    "CRMArenaHTTPClient",
    "CRMArenaHub",
    "CRMArenaObservation",
    "CRMArenaState",
    "CapacityError",
    "HubConfig",
    "ServerBusyError",
    "ServerLimits",
    "ServerThread",
    "ToolCall",
    "check_host",
    "make_app",
    "serve",
    "uvicorn_config",
]
