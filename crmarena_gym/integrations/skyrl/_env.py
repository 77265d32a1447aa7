"""A SkyRL text environment (``skyrl_gym``'s ``BaseTextEnv``) stepping the chat core.

SkyRL makes an environment per trajectory with ``skyrl_gym.make("crmarena", env_config=..., extras=row)``
where the row's ``extras`` name the instance (``task_id``, ``split``, ``task``); ``init`` gives the
conversation to start from (the system prompt and the question, as the litellm policy is evaluated
with) and each ``step`` takes the model's text reply (``execute ...``/``submit ...`` or the paper's
tags; a function call as ``execute name({...})`` or a JSON tool call) and answers with the next user
message, the reward (at the submission) and whether the episode is over.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from crmarena_gym.chat import DEFAULT_TRAIN_SEED, ChatSession, make_chat_env
from crmarena_gym.envs import MAX_TURNS
from crmarena_gym.org import LocalOrg, default_org_path

__all__ = ["ENV_ID", "CRMArenaTextEnv", "register_skyrl"]

#: The id the environment is registered under in skyrl_gym.
ENV_ID = "crmarena"
_CONFIG_KEYS = ("org", "toolset", "framework", "train_seed", "per_task", "match")


@functools.lru_cache(maxsize=8)
def _org(path: str) -> LocalOrg:
    return LocalOrg(path or default_org_path())


def _get(config: Any, key: str, default: Any) -> Any:
    if config is None:
        return default
    if isinstance(config, Mapping):
        return config.get(key, default)
    return getattr(config, key, default)  # a dataclass or an OmegaConf DictConfig


class CRMArenaTextEnv(BaseTextEnv):
    """One CRMArena episode for SkyRL.

    Args:
        env_config: ``org`` (a database path; default: the embedded org), ``toolset`` (``"soql"``, the
            default, as the paper's Act/ReAct agents; ``"functions"`` or ``"flex"``), ``framework``
            (``"react"``, the default, or ``"act"``), ``train_seed``, ``per_task``, ``match``.
        extras: The dataset row's extras: ``task_id`` (required), ``split`` (``train`` by default or
            ``test``), ``task`` (an abbreviation, to pick among one task's instances), ``seed``.

    Example:
        >>> import skyrl_gym
        >>> import crmarena_gym.integrations.skyrl  # registers "crmarena"
        >>> "crmarena" in skyrl_gym.registry
        True
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = dict(extras or {})
        unknown = set(dict(env_config or {}) if isinstance(env_config, Mapping) else {}) - set(_CONFIG_KEYS)
        if unknown:
            raise ValueError(f"unknown env_config key(s) {sorted(unknown)}; the keys are {', '.join(_CONFIG_KEYS)}")
        if extras.get("task_id") is None:
            raise ValueError(f"a CRMArena row's extras need a task_id; got keys {sorted(extras)}")
        framework = _get(env_config, "framework", "react")
        if framework not in ("act", "react"):
            raise ValueError(f"SkyRL steps text replies: framework must be 'act' or 'react', got {framework!r}")
        org = _org(str(_get(env_config, "org", None) or ""))
        split = extras.get("split") or "train"
        task = extras.get("task")
        env = make_chat_env(
            org,
            task=task,
            split=split,
            seed=int(_get(env_config, "train_seed", DEFAULT_TRAIN_SEED)),
            per_task=_get(env_config, "per_task", None) if split == "train" else None,
            toolset=_get(env_config, "toolset", "soql"),
            match=_get(env_config, "match", "strict"),
        )
        self.session = ChatSession(env, framework)
        self.task_id = int(extras["task_id"])
        self.seed = extras.get("seed")
        self.max_turns = MAX_TURNS

    def init(self, prompt: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Start the episode; returns the system prompt and the question (the row's prompt is not used)."""
        start = self.session.reset(seed=self.seed, task_id=self.task_id)
        self.turns = 0
        return [dict(m) for m in start.messages], {"task": start.task, "task_id": start.task_id}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Carry out the model's reply; the observation comes back as the next user message."""
        step = self.session.step_text(action)
        self.turns = self.session.turns
        done = step.done or self.turns >= self.max_turns
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": step.observation}],
            reward=step.reward,
            done=done,
            metadata={k: v for k, v in step.info.items() if k != "reward_breakdown"},
        )

    def get_metrics(self) -> dict[str, Any]:
        """The episode's reward and turns."""
        return {"reward": self.session.reward, "turns": self.session.turns}

    def close(self) -> None:
        """Close the environment."""
        self.session.env.close()


def register_skyrl() -> None:
    """Register :class:`CRMArenaTextEnv` with skyrl_gym as ``"crmarena"`` (idempotent)."""
    import skyrl_gym

    if ENV_ID not in skyrl_gym.registry:
        skyrl_gym.register(id=ENV_ID, entry_point="crmarena_gym.integrations.skyrl._env:CRMArenaTextEnv")
