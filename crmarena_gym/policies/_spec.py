"""Policy specs: the text that names a policy on the command line and in run metadata."""

from __future__ import annotations

import importlib
from typing import Any

from crmarena_gym._console import did_you_mean as near_miss
from crmarena_gym.policies._base import Policy
from crmarena_gym.policies._reactive import ReactiveOraclePolicy
from crmarena_gym.policies._simple import OraclePolicy, RandomPolicy

__all__ = ["make_policy", "parse_policy_spec"]

_FORMS = "'oracle', 'reactive-oracle', 'random', 'litellm:MODEL' or 'python:MODULE:CLASS'"


def parse_policy_spec(spec: str) -> tuple[str, str | None]:
    """Split a spec into its kind and argument.

    Example:
        >>> parse_policy_spec("litellm:anthropic/claude-haiku-4-5")
        ('litellm', 'anthropic/claude-haiku-4-5')
        >>> parse_policy_spec("oracle")
        ('oracle', None)
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a policy spec must be {_FORMS}; got {spec!r}")
    kind, _, argument = spec.strip().partition(":")
    kind = kind.lower()
    if kind in ("oracle", "reactive-oracle", "random") and not argument:
        return kind, None
    if kind in ("litellm", "python") and argument:
        return kind, argument
    raise ValueError(f"unknown policy spec {spec!r}{_did_you_mean(kind)}; expected {_FORMS}")


def _did_you_mean(kind: str) -> str:
    """``; did you mean 'oracle'?`` for a near miss of a kind's name, else nothing."""
    kinds = ("oracle", "reactive-oracle", "random", "litellm", "python")
    return near_miss(kind, kinds, show=lambda c: c + ":..." if c in ("litellm", "python") else c)


def make_policy(spec: str, **options: Any) -> Policy:
    """Build a policy from its spec.

    Args:
        spec: ``oracle``, ``reactive-oracle``, ``random``, ``litellm:MODEL`` (a litellm model name) or
            ``python:MODULE:CLASS`` (any :class:`Policy` subclass, built with ``options``).
        **options: Constructor arguments: ``seed`` for random; ``max_retries`` for reactive-oracle;
            ``framework``, ``temperature``,
            ``max_tokens``, ``timeout``, ``max_retries``, ``api_base``, ``api_key`` ... for litellm.

    Example:
        >>> type(make_policy("random", seed=3)).__name__
        'RandomPolicy'
        >>> make_policy("llm:gpt-4o")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown policy spec 'llm:gpt-4o' (did you mean 'litellm:...'?); expected 'oracle', ...
    """
    kind, argument = parse_policy_spec(spec)
    if kind == "oracle":
        _no_options(spec, options)
        return OraclePolicy()
    if kind == "reactive-oracle":
        extra = set(options) - {"max_retries"}
        if extra:
            raise ValueError(f"the reactive-oracle policy takes only max_retries, got {sorted(extra)}")
        return ReactiveOraclePolicy(**options)
    if kind == "random":
        extra = set(options) - {"seed"}
        if extra:
            raise ValueError(f"the random policy takes only a seed, got {sorted(extra)}")
        return RandomPolicy(**options)
    if kind == "litellm":
        from crmarena_gym.policies._litellm import LiteLLMPolicy

        return LiteLLMPolicy(str(argument), **options)
    module_name, _, attr = str(argument).rpartition(":")
    if not module_name or not attr:
        raise ValueError(f"a python policy spec is python:MODULE:CLASS, got {spec!r}")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"cannot load the policy {argument!r}: {err}") from err
    policy = factory(**options)
    if not isinstance(policy, Policy):
        raise TypeError(f"{argument!r} built a {type(policy).__name__}, not a crmarena_gym.policies.Policy")
    return policy


def _no_options(spec: str, options: dict[str, Any]) -> None:
    if options:
        raise ValueError(f"the {spec} policy takes no options, got {sorted(options)}")
