"""Simulated users for conversations: between the tasks (what is asked) and the environments (who asks).

``user="scripted"`` is :class:`ScriptedUser` (the same conversation every time); ``user="litellm:MODEL"`` is
:class:`LLMUser` (a model plays the person asking). :func:`make_user` reads either spec.
"""

from __future__ import annotations

from typing import Any

from crmarena_gym._console import did_you_mean
from crmarena_gym.users._base import END_MARKER, UserReply, UserSimulator, parse_end_marker
from crmarena_gym.users._llm import GREETING, LLMUser, LLMUserError, user_system_prompt
from crmarena_gym.users._scripted import ScriptedUser, is_question, looks_like_id

__all__ = [
    "END_MARKER",
    "GREETING",
    "LLMUser",
    "LLMUserError",
    "ScriptedUser",
    "UserReply",
    "UserSimulator",
    "is_question",
    "looks_like_id",
    "make_user",
    "parse_end_marker",
    "user_system_prompt",
]


def make_user(spec: str | UserSimulator, **kwargs: Any) -> UserSimulator:
    """A user simulator from its spec: ``"scripted"``, ``"litellm:MODEL"``, or a simulator (returned as is).

    Args:
        spec: The spec.
        **kwargs: For an LLM user, :class:`LLMUser`'s options (``api_base``, ``completion_kwargs`` ...).

    Raises:
        ValueError: An unknown spec; the message names a near miss and lists the valid ones.

    Example:
        >>> make_user("scripted").kind, make_user("litellm:gpt-4o").model
        ('scripted', 'gpt-4o')
        >>> try:
        ...     make_user("scriptd")
        ... except ValueError as err:
        ...     str(err).split(";")[0]
        "unknown user 'scriptd' (did you mean 'scripted'?)"
    """
    if not isinstance(spec, str):
        if callable(getattr(spec, "start", None)) and callable(getattr(spec, "reply", None)):
            return spec
        raise ValueError(f"a user is 'scripted', 'litellm:MODEL' or a simulator, got {type(spec).__name__}")
    if spec == "scripted":
        if kwargs:
            raise ValueError(f"the scripted user takes no options, got {sorted(kwargs)}")
        return ScriptedUser()
    if spec.startswith("litellm:") and spec[len("litellm:") :].strip():
        return LLMUser(spec[len("litellm:") :].strip(), **kwargs)
    shown = {"scripted": "scripted", "litellm": "litellm:MODEL"}
    hint = did_you_mean(spec.partition(":")[0].lower(), list(shown), show=shown.__getitem__)
    raise ValueError(f"unknown user {spec!r}{hint}; the users are 'scripted' and 'litellm:MODEL' (e.g. litellm:gpt-4o)")
