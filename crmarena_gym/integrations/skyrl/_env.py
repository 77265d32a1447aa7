"""A SkyRL text environment (``skyrl_gym``'s ``BaseTextEnv``) stepping the chat core, and its dataset rows.

SkyRL makes an environment per trajectory with ``skyrl_gym.make("crmarena", env_config=..., extras=row)``
where the row's extras name the instance (``task_id``, ``split``, ``task``) and its turn budget
(``max_turns``). ``init`` gives the conversation to start from (the system prompt and the question, as
the litellm policy is evaluated with) and each ``step`` takes the model's reply as text:

- Act and ReAct: ``execute ...``/``submit ...`` or the paper's tags (a function call as
  ``execute name({...})`` or a JSON tool call); the answer comes back as the next ``user`` message.
- Function calling: the reply's Hermes-style ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  blocks (the format of Qwen's and most open models' chat templates); each call runs in order and is
  answered by a ``tool`` message; a reply without a block ends the episode unanswered. The tool schemas are
  in ``init``'s metadata (``tools``): render them into the prompt with the chat template
  (``apply_chat_template(messages, tools=...)``), as every other path shows them.

The episode semantics are the chat core's (:mod:`crmarena_gym.chat`). ``postprocessed_action`` is the
reply as the conversation keeps it when that differs from what the model wrote (text after the action
the environment reads is dropped). Once the episode is over, the step's metadata holds the episode's
record (gold answer, score breakdown, trajectory: the fields of an evaluation record).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from crmarena_gym.chat import (
    DEFAULT_TRAIN_SEED,
    FRAMEWORKS,
    ChatSession,
    Shaping,
    Split,
    check_row_split,
    episode_rows,
    make_chat_env,
    parse_text_tool_calls,
    read_text_reply,
    run_metadata,
)
from crmarena_gym.envs import MAX_TURNS
from crmarena_gym.org import LocalOrg, Org, default_org_path

__all__ = ["ENV_ID", "CRMArenaTextEnv", "register_skyrl", "skyrl_dataset_rows"]

#: The id the environment is registered under in skyrl_gym.
ENV_ID = "crmarena"
_CONFIG_KEYS = ("org", "toolset", "framework", "train_seed", "per_task", "match", "shaping", "user")
_CALL_BLOCK_END = re.compile(r"</tool_call>", re.IGNORECASE)


@functools.lru_cache(maxsize=8)
def _org(path: str) -> LocalOrg:
    return LocalOrg(path or default_org_path())


def _get(config: Any, key: str, default: Any) -> Any:
    if config is None:
        return default
    if isinstance(config, Mapping):
        return config.get(key, default)
    return getattr(config, key, default)  # a dataclass or an OmegaConf DictConfig


def _shaping(value: Any) -> Shaping | None:
    if value is None or isinstance(value, Shaping):
        return value
    try:
        return Shaping(**dict(value))
    except TypeError:
        raise ValueError(f"env_config shaping takes refused_call and malformed_reply, got {value!r}") from None
    except ValueError as err:
        raise ValueError(f"env_config shaping: {err}") from None


def _read_reply(action: str, framework: str) -> str:
    """The reply as the conversation keeps it (function calling: up to the last complete tool call)."""
    if framework != "fc":
        return read_text_reply(action)
    ends = list(_CALL_BLOCK_END.finditer(action))
    return action[: ends[-1].end()].strip() if ends else action.strip()


class CRMArenaTextEnv(BaseTextEnv):
    """One CRMArena episode for SkyRL.

    Args:
        env_config: ``org`` (a database path; default: the embedded org), ``toolset`` (``"soql"``, the
            default, as the paper's Act/ReAct agents; ``"functions"`` or ``"flex"``), ``framework``
            (``"react"``, the default, ``"act"`` or ``"fc"``), ``train_seed``, ``per_task``, ``match``,
            ``shaping`` (``{"refused_call": ..., "malformed_reply": ...}``), ``user`` (``"scripted"`` or
            ``"litellm:MODEL"``: conversations, the user's replies coming back as ``user`` messages).
        extras: The dataset row's extras: ``task_id`` (required), ``split`` (``train`` by default or
            ``test``), ``task`` (an abbreviation, to pick among one task's instances), ``seed``,
            ``max_turns`` (this row's turn budget, at most :data:`~crmarena_gym.envs.MAX_TURNS`).

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
        if framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
        max_turns = extras.get("max_turns", MAX_TURNS)
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or not 1 <= max_turns <= MAX_TURNS:
            raise ValueError(f"a row's max_turns must be an integer from 1 to {MAX_TURNS}, got {max_turns!r}")
        org = _org(str(_get(env_config, "org", None) or ""))
        check_row_split(
            extras,
            train_seed=int(_get(env_config, "train_seed", DEFAULT_TRAIN_SEED)),
            per_task=_get(env_config, "per_task", None),
        )
        split = extras.get("split") or "train"
        task = extras.get("task")
        toolset = _get(env_config, "toolset", "soql")
        shaping = _shaping(_get(env_config, "shaping", None))
        env = make_chat_env(
            org,
            task=task,
            split=split,
            seed=int(_get(env_config, "train_seed", DEFAULT_TRAIN_SEED)),
            per_task=_get(env_config, "per_task", None) if split == "train" else None,
            toolset=toolset,
            match=_get(env_config, "match", "strict"),
            user=_get(env_config, "user", None),  # "scripted" or "litellm:MODEL": a conversation
        )
        self.framework = framework
        self.session = ChatSession(env, framework, shaping=shaping)
        self.task_id = int(extras["task_id"])
        self.seed = extras.get("seed")
        self.max_turns = max_turns
        self.metadata = run_metadata(
            framework,
            toolset=toolset,
            train_seed=int(_get(env_config, "train_seed", DEFAULT_TRAIN_SEED)),
            per_task=_get(env_config, "per_task", None),
            match=_get(env_config, "match", "strict"),
            shaping=shaping,
            max_turns=max_turns,
            adapter="skyrl",
        )

    def init(self, prompt: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Start the episode; returns the system prompt and the question (the row's prompt is not used),
        with the task, the instance and, in function calling, the tool schemas to render."""
        start = self.session.reset(seed=self.seed, task_id=self.task_id, max_turns=self.max_turns)
        self.turns = 0
        metadata: dict[str, Any] = {"task": start.task, "task_id": start.task_id}
        if self.framework == "fc":
            metadata["tools"] = start.tools
        return [dict(m) for m in start.messages], metadata

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Carry out the model's reply; the answers come back as the next messages."""
        before = len(self.session.messages)
        if self.framework == "fc":
            content, calls = parse_text_tool_calls(action)
            steps = self.session.reply({"role": "assistant", "content": content, "tool_calls": calls})
        else:
            steps = self.session.reply({"role": "assistant", "content": action})
        added = [dict(m) for m in self.session.messages[before + 1 :]]
        self.turns = self.session.turns
        done = self.session.done
        metadata: dict[str, Any] = {k: v for k, v in steps[-1].info.items() if k != "reward_breakdown"}
        if done:
            metadata["end_reason"] = self.session.end_reason
            metadata["record"] = self.session.record
        kept = _read_reply(action, self.framework)
        return BaseTextEnvStepOutput(
            observations=[] if done else added,
            reward=sum(s.reward for s in steps),
            done=done,
            metadata=metadata,
            postprocessed_action=kept if kept != action else None,
        )

    def get_metrics(self) -> dict[str, Any]:
        """The episode's reward, score and turns."""
        return {"reward": self.session.reward, "score": self.session.score, "turns": self.session.turns}

    def close(self) -> None:
        """Close the environment."""
        self.session.env.close()


def skyrl_dataset_rows(
    org: Org | str | os.PathLike[str] | None = None,
    *,
    split: Split = "train",
    seed: int = DEFAULT_TRAIN_SEED,
    per_task: int | None = None,
    tasks: list[str] | None = None,
    toolset: str = "soql",
    framework: str = "react",
    max_turns: int = MAX_TURNS,
    data_source: str = "crmarena",
) -> list[dict[str, Any]]:
    """SkyRL dataset rows of a split: ``data_source``, ``prompt`` (the system prompt and the question),
    ``env_class`` (``"crmarena"``) and the ``extras`` the environment reads (``task_id``, ``task``,
    ``split``, ``max_turns``). Built by :func:`~crmarena_gym.chat.episode_rows`, as TRL's and verifiers'
    rows are. Write them with ``datasets.Dataset.from_list(rows).to_parquet(path)`` for skyrl-train.

    Args:
        org: The org (default: the embedded org).
        split: ``"train"`` (fresh instances, never a test question) or ``"test"``.
        seed: The training seed (the env_config's ``train_seed``).
        per_task: Instances per task (the env_config's ``per_task``).
        tasks: Task abbreviations or names (default: all nine).
        toolset: The env_config's toolset.
        framework: The env_config's framework.
        max_turns: Each row's turn budget.
        data_source: The rows' ``data_source`` column.
    """
    rows = episode_rows(
        org,
        split=split,
        seed=seed,
        per_task=per_task,
        tasks=tasks,
        toolset=toolset,
        framework=framework,  # type: ignore[arg-type]
        max_turns=max_turns,
    )
    return [
        {
            "data_source": data_source,
            "prompt": [
                {"role": "system", "content": row["system_prompt"]},
                {"role": "user", "content": row["question"]},
            ],
            "env_class": ENV_ID,
            "extras": {k: row[k] for k in ("task_id", "task", "split", "max_turns", "train_seed", "per_task")},
        }
        for row in rows
    ]


def register_skyrl() -> None:
    """Register :class:`CRMArenaTextEnv` with skyrl_gym as ``"crmarena"`` (idempotent)."""
    import skyrl_gym

    if ENV_ID not in skyrl_gym.registry:
        skyrl_gym.register(id=ENV_ID, entry_point="crmarena_gym.integrations.skyrl._env:CRMArenaTextEnv")
