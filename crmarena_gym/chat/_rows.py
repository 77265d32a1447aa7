"""Dataset rows and run metadata, one function each for every trainer adapter (TRL, SkyRL, verifiers).

:func:`episode_rows` gives, for each instance of a split, what any trainer's dataset needs: the instance's
``task_id``, ``task`` and ``split``, the system prompt, the question (the first user message), the tool
schemas (function calling), the turn budget and the org it is played on. Each adapter shapes these rows
into its own format (:func:`crmarena_gym.integrations.trl.trl_dataset_rows`,
:func:`crmarena_gym.integrations.skyrl.skyrl_dataset_rows`,
:func:`crmarena_gym.integrations.verifiers.load_environment`).

:func:`run_metadata` says what a training run plays (framework, toolset, split seed, episode semantics,
turn budget, shaping), for the run to keep beside its results.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import crmarena_gym
from crmarena_gym.chat._prompt import FRAMEWORKS, Framework
from crmarena_gym.chat._session import DEFAULT_TRAIN_SEED, ChatSession, Shaping, Split, chat_tasks, make_chat_env
from crmarena_gym.envs import MAX_TURNS
from crmarena_gym.org import Org
from crmarena_gym.tasks import DEFAULT_DISTRIBUTION, TASK_GENERATOR_VERSION
from crmarena_gym.users import make_user

__all__ = ["TOOL_CALLS_PER_REPLY", "check_row_split", "episode_rows", "run_metadata"]

#: How many tool calls of one reply run (see :mod:`crmarena_gym.chat`).
TOOL_CALLS_PER_REPLY = "all, in order, one turn each"
_TEXT_REPLY_IN_FC = "ends the episode unanswered (end reason no_tool_call)"


def run_metadata(
    framework: Framework,
    *,
    toolset: str,
    train_seed: int | None = DEFAULT_TRAIN_SEED,
    per_task: int | None = None,
    match: str = "strict",
    shaping: Shaping | None = None,
    max_turns: int = MAX_TURNS,
    adapter: str | None = None,
) -> dict[str, Any]:
    """What a run plays: the framework, the toolset, the training split, the episode semantics and shaping.

    Example:
        >>> meta = run_metadata("fc", toolset="functions", shaping=Shaping(refused_call=0.1))
        >>> meta["shaping"], meta["max_turns"], meta["text_reply_in_fc"]
        ({'refused_call': 0.1, 'malformed_reply': 0.0}, 20, 'ends the episode unanswered (end reason no_tool_call)')
    """
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
    return {
        "crmarena_gym": crmarena_gym.__version__,
        "adapter": adapter,
        "framework": framework,
        "toolset": toolset,
        "train_seed": train_seed,
        "per_task": per_task,
        "match": match,
        "distribution": DEFAULT_DISTRIBUTION,
        "task_generator": TASK_GENERATOR_VERSION,
        "max_turns": max_turns,
        "tool_calls_per_reply": TOOL_CALLS_PER_REPLY,
        "text_reply_in_fc": _TEXT_REPLY_IN_FC,
        "shaping": (shaping or Shaping()).as_dict(),
    }


def check_row_split(row: Any, *, train_seed: int, per_task: int | None) -> None:
    """Refuse a row drawn with another training seed or size than the environment's (its ``task_id`` would
    name another instance). Rows without these keys are taken as they are.

    Raises:
        ValueError: The row's ``train_seed`` or ``per_task`` differ from the environment's.

    Example:
        >>> check_row_split({"split": "train", "train_seed": 1, "per_task": 2}, train_seed=1, per_task=None)
        Traceback (most recent call last):
        ...
        ValueError: this row was built with per_task=2, the environment with per_task=None: build both with the same
    """
    if (row.get("split") or "train") != "train":
        return
    for key, value in (("train_seed", train_seed), ("per_task", per_task)):
        if key in row and row[key] != value:
            raise ValueError(
                f"this row was built with {key}={row[key]!r}, the environment with {key}={value!r}: build both with "
                "the same"
            )


def episode_rows(
    org: Org | str | os.PathLike[str] | None = None,
    *,
    split: Split = "train",
    seed: int = DEFAULT_TRAIN_SEED,
    per_task: int | None = None,
    tasks: Iterable[str] | None = None,
    toolset: str = "functions",
    framework: Framework = "fc",
    max_turns: int = MAX_TURNS,
    user: str | None = None,
) -> list[dict[str, Any]]:
    """One row per instance of a split: what every trainer's dataset is made from.

    Args:
        org: The org (default: the embedded org).
        split: ``"train"`` (fresh training instances, never a test question) or ``"test"``.
        seed: The training seed.
        per_task: Instances per task.
        tasks: Task abbreviations or names (default: all nine).
        toolset: The toolset played (the system prompt depends on it).
        framework: ``"fc"``, ``"act"`` or ``"react"``.
        max_turns: The turn budget to put in each row (at most :data:`~crmarena_gym.envs.MAX_TURNS`).
        user: None for single-turn rows; for conversations, the user kind (``"scripted"``, ``"litellm:MODEL"``):
            the system prompt is the conversation's and ``question`` the scripted user's opening (the rows are
            built with the scripted user whatever the kind: an LLM user writes its own opening at reset).

    Returns:
        Rows with ``task_id``, ``task``, ``split``, ``system_prompt``, ``question`` (the first user
        message), ``tools`` (the schemas shown, function calling; else None), ``max_turns``, and the
        ``train_seed`` and ``per_task`` the instances were drawn with (an environment checks them: a row
        built with other ones would name another instance).

    Raises:
        ValueError: Bad arguments (the message names them).
    """
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or not 1 <= max_turns <= MAX_TURNS:
        raise ValueError(f"max_turns must be an integer from 1 to {MAX_TURNS}, got {max_turns!r}")
    instances = chat_tasks(org, split=split, seed=seed, per_task=per_task, tasks=tasks)
    if user is not None:
        make_user(user)  # an unknown user is refused here
    env = make_chat_env(org, instances=instances, toolset=toolset, user="scripted" if user is not None else None)
    session = ChatSession(env, framework)
    rows = []
    for instance in instances:
        start = session.reset(task_id=instance.idx, seed=0 if user is not None else None)
        rows.append(
            {
                "task_id": instance.idx,
                "task": instance.abbrev,
                "split": split,
                "system_prompt": start.system_prompt,
                "question": start.observation,
                "tools": start.tools if framework == "fc" else None,
                "max_turns": max_turns,
                "train_seed": seed if split == "train" else None,
                "per_task": per_task,
            }
        )
    env.close()
    return rows
