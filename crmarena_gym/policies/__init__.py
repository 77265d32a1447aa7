"""Policies that play the environments: the oracle, random actions, and LLM agents through litellm.

Example:
    >>> from crmarena_gym.policies import make_policy
    >>> policy = make_policy("oracle")
    >>> policy.toolset, policy.privileged
    ('functions', True)
"""

from __future__ import annotations

from crmarena_gym.policies._base import CallUsage, EpisodeEnded, EpisodeUsage, Policy, PolicyError
from crmarena_gym.policies._litellm import (
    FRAMEWORKS,
    LiteLLMPolicy,
    LLMConfigurationError,
    LLMError,
    LLMUnreachableError,
    import_litellm,
    system_prompt,
)
from crmarena_gym.policies._reactive import ReactiveOraclePolicy
from crmarena_gym.policies._simple import OraclePolicy, RandomPolicy, episode_instance
from crmarena_gym.policies._spec import make_policy, parse_policy_spec

__all__ = [
    "FRAMEWORKS",
    "CallUsage",
    "EpisodeEnded",
    "EpisodeUsage",
    "LLMConfigurationError",
    "LLMError",
    "LLMUnreachableError",
    "LiteLLMPolicy",
    "OraclePolicy",
    "Policy",
    "PolicyError",
    "RandomPolicy",
    "ReactiveOraclePolicy",
    "episode_instance",
    "import_litellm",
    "make_policy",
    "parse_policy_spec",
    "system_prompt",
]
