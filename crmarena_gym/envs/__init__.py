"""The Gymnasium environments: actions, observations and (next) the POMDP itself."""

from __future__ import annotations

from crmarena_gym.envs._actions import Action, parse_action, unwrap_code
from crmarena_gym.envs._render import (
    QUERY_OUTPUT_PREFIX,
    render_error,
    render_query_result,
    render_value,
    result_rows,
)

__all__ = [
    "QUERY_OUTPUT_PREFIX",
    "Action",
    "parse_action",
    "render_error",
    "render_query_result",
    "render_value",
    "result_rows",
    "unwrap_code",
]
