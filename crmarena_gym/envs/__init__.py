"""The Gymnasium environments: every CRMArena task as a text POMDP.

Example:
    >>> import gymnasium as gym
    >>> import crmarena_gym  # registers the environments
    >>> "CRMArena-NCR-v0" in gym.registry and "CRMArena-v0" in gym.registry
    True
"""

from __future__ import annotations

from crmarena_gym.envs._act import CRMArenaActEnv
from crmarena_gym.envs._actions import Action, parse_action, unwrap_code
from crmarena_gym.envs._env import FALLBACK_TODAY, CRMArenaEnv
from crmarena_gym.envs._interactive import DEFAULT_MAX_USER_TURNS, RESPOND_TOOL, CRMArenaInteractiveEnv
from crmarena_gym.envs._registration import (
    MAX_TURNS,
    act_counterpart,
    act_env_ids,
    env_ids,
    interactive_counterpart,
    interactive_env_ids,
    pro_env_ids,
    pro_interactive_env_ids,
    register_envs,
)
from crmarena_gym.envs._render import (
    QUERY_OUTPUT_PREFIX,
    render_error,
    render_head,
    render_query_result,
    render_value,
    result_rows,
)
from crmarena_gym.envs._result import StepResult
from crmarena_gym.envs._spaces import ActionText, UnicodeText

__all__ = [
    "DEFAULT_MAX_USER_TURNS",
    "FALLBACK_TODAY",
    "MAX_TURNS",
    "QUERY_OUTPUT_PREFIX",
    "RESPOND_TOOL",
    "Action",
    "ActionText",
    "CRMArenaActEnv",
    "CRMArenaEnv",
    "CRMArenaInteractiveEnv",
    "StepResult",
    "UnicodeText",
    "act_counterpart",
    "act_env_ids",
    "env_ids",
    "interactive_counterpart",
    "interactive_env_ids",
    "parse_action",
    "pro_env_ids",
    "pro_interactive_env_ids",
    "register_envs",
    "render_error",
    "render_head",
    "render_query_result",
    "render_value",
    "result_rows",
    "unwrap_code",
]
