"""An environment played as a chat: what every LLM-trainer adapter steps.

:class:`ChatSession` pairs a CRMArena environment with a :class:`~crmarena_gym.chat.ChatEpisode`:
reset gives the system prompt, the tool schemas and the first message; a step takes a model's text
reply or tool call, carries it out, and gives the next message with the reward. The adapters (OpenEnv,
TRL, SkyRL) are thin layers over it, so that the prompt and the action handling a model is trained with
are those it is evaluated with (the litellm policy uses the same :class:`ChatEpisode`).

:func:`chat_tasks` picks the instances of a split: ``"train"`` draws fresh instances with
:func:`~crmarena_gym.tasks.training_tasks` (never a question of the test set), ``"test"`` is the
default task set, for evaluation.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym

from crmarena_gym.chat._episode import ChatEpisode
from crmarena_gym.chat._prompt import FRAMEWORKS, Framework
from crmarena_gym.envs import env_ids
from crmarena_gym.org import LocalOrg, Org
from crmarena_gym.tasks import TaskInstance, default_tasks, first_per_task, get_task_spec, training_tasks

__all__ = [
    "DEFAULT_TRAIN_SEED",
    "SPLITS",
    "ChatReset",
    "ChatSession",
    "ChatStep",
    "EpisodeOverError",
    "Split",
    "chat_tasks",
    "make_chat_env",
]

Split = Literal["train", "test"]
#: The splits: fresh training instances, or the default task set (the test set, for evaluation).
SPLITS: tuple[str, ...] = ("train", "test")
#: The seed of the training instances when none is given (the test set's is 0).
DEFAULT_TRAIN_SEED = 1
# Keys of the env's step info that are plain values (the raw rows of a result are left out).
_STEP_INFO_KEYS = ("turn", "action_kind", "error", "function", "query", "submitted", "reward_breakdown")


class EpisodeOverError(RuntimeError):
    """A step after the episode ended (or before it started)."""


@dataclass(frozen=True)
class ChatReset:
    """The start of an episode.

    Attributes:
        observation: The first observation (the question and its context).
        system_prompt: The system prompt.
        tools: The tool schemas (OpenAI format) of the environment's toolset.
        messages: The conversation so far: the system prompt and the question as a user message.
        task_id: The instance's ``idx``.
        task: The task's abbreviation.
        info: The reset ``info`` (schema, tools, context, ...).
    """

    observation: str
    system_prompt: str
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    task_id: int
    task: str
    info: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class ChatStep:
    """What one action gave.

    Attributes:
        observation: The environment's observation text.
        message: The observation as the next chat message (``tool`` after a tool call, else ``user``).
        reward: The step's reward (1 or 0 at a submission, the token F1 for knowledge questions).
        terminated: The agent submitted.
        truncated: The turn budget ran out.
        error: The error code when the action failed (``FORMAT_ERROR``, ``FUNCTION_ERROR``,
            ``MALFORMED_QUERY`` ...), else None.
        info: The step's plain-valued info (turn, action kind, error, submitted answer ...).
    """

    observation: str
    message: dict[str, Any]
    reward: float
    terminated: bool
    truncated: bool
    error: str | None
    info: dict[str, Any] = field(repr=False)

    @property
    def done(self) -> bool:
        """The episode is over."""
        return self.terminated or self.truncated


class ChatSession:
    """One environment played as a conversation.

    Args:
        env: A CRMArena environment (from ``gym.make``, so that the turn limit applies).
        framework: ``"fc"`` (tool calls; the default) or ``"act"``/``"react"`` (text replies).

    Example:
        >>> import gymnasium as gym
        >>> env = gym.make("CRMArena-BRI-v0", org=getfixture("tiny_org"), toolset="functions",
        ...     tasks=[{"idx": 0, "task": "BRI", "query": "Which state?", "answer": "OR",
        ...             "metadata": {"required": "- Today's date: 2021-03-01"}}])
        >>> session = ChatSession(env)
        >>> start = session.reset(seed=0)
        >>> [m["role"] for m in start.messages], len(start.tools)
        (['system', 'user'], 25)
        >>> step = session.step_tool_call("get_period", {"period_name": "Q1", "year": 2021}, call_id="c1")
        >>> step.message["role"], step.observation
        ('tool', "{'start_date': '2021-01-01T00:00:00Z', 'end_date': '2021-04-01T00:00:00Z'}")
        >>> session.step_tool_call("submit", {"content": "OR"}).reward, session.done
        (1.0, True)
    """

    def __init__(self, env: gym.Env, framework: Framework = "fc") -> None:
        if framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
        self.env = env
        self.framework: Framework = framework
        self.chat = ChatEpisode(framework)
        self.reward = 0.0
        self.done = True
        self.turns = 0
        self.steps: list[ChatStep] = []
        self._calls = 0

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation so far."""
        return self.chat.messages

    def reset(self, *, seed: int | None = None, task_id: int | None = None) -> ChatReset:
        """Start an episode (on the instance ``task_id``, or one drawn with ``seed``)."""
        options = {"task_id": task_id} if task_id is not None else None
        observation, info = self.env.reset(seed=seed, options=options)
        self.chat.start(info)
        self.chat.observe(observation)
        self.reward, self.done, self.turns, self.steps, self._calls = 0.0, False, 0, [], 0
        return ChatReset(
            observation=observation,
            system_prompt=self.chat.system_prompt or "",
            tools=list(info.get("tools") or []),
            messages=[dict(m) for m in self.chat.messages],
            task_id=int(info["idx"]),
            task=str(info["abbrev"]),
            info=info,
        )

    def step(self, action: str) -> ChatStep:
        """Carry out an env action given as text (``execute ...``, ``submit ...`` or a JSON tool call).

        The same as :meth:`step_text`: in the ReAct flavour an untagged thought line is dropped.

        Raises:
            EpisodeOverError: The episode is over, or was never started.
        """
        if not isinstance(action, str):
            raise TypeError(f"an action must be a str, got {type(action).__name__}")
        return self._step({"role": "assistant", "content": action})

    def step_text(self, text: str) -> ChatStep:
        """Carry out a model's text reply (ReAct's thought line is dropped when the action has no tags)."""
        if not isinstance(text, str):
            raise TypeError(f"a text reply must be a str, got {type(text).__name__}")
        return self._step({"role": "assistant", "content": text})

    def step_tool_call(
        self, name: str, arguments: str | dict[str, Any] | None = None, call_id: str | None = None
    ) -> ChatStep:
        """Carry out a model's tool call; ``arguments`` as a JSON object or its text (as OpenAI sends it).

        An unknown tool, arguments that are not JSON or not what the tool takes give an error
        observation (the turn is used), never an exception.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"a tool call needs a function name, got {name!r}")
        call_id = call_id or f"call_{self._calls}"
        self._calls += 1
        text = "{}" if arguments is None else arguments if isinstance(arguments, str) else json.dumps(arguments)
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}
        return self._step({"role": "assistant", "content": None, "tool_calls": [call]})

    def _step(self, reply: dict[str, Any]) -> ChatStep:
        if self.done:
            raise EpisodeOverError("the episode is over (or has not started): reset() to start another")
        action = self.chat.reply(reply)
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.chat.observe(observation)
        self.turns += 1
        self.reward = float(reward) if terminated else self.reward
        self.done = bool(terminated or truncated)
        step = ChatStep(
            observation=observation,
            message=dict(self.chat.messages[-1]),
            reward=float(reward),
            terminated=bool(terminated),
            truncated=bool(truncated),
            error=info.get("error"),
            info={k: info[k] for k in _STEP_INFO_KEYS if k in info},
        )
        self.steps.append(step)
        return step


def _org_path(org: Org | str | os.PathLike[str] | None) -> Path:
    if org is None:
        from crmarena_gym.org import default_org_path

        return default_org_path()
    path = getattr(org, "path", None) if isinstance(org, Org) else org
    if path is None:
        raise ValueError("chat tasks are generated from an org database: pass a LocalOrg or a database path")
    return Path(path).resolve()


@functools.lru_cache(maxsize=32)
def _cached_tasks(
    path: Path, split: str, seed: int, per_task: int | None, tasks: tuple[str, ...] | None
) -> tuple[TaskInstance, ...]:
    if split == "test":
        instances = default_tasks(path)
        if tasks is not None:
            instances = [i for i in instances if i.abbrev in tasks]
        if per_task is not None:
            instances = first_per_task(instances, per_task)
        return tuple(instances)
    options: dict[str, Any] = {"seed": seed, "tasks": tasks}
    if per_task is not None:
        options["per_task"] = per_task
    return tuple(training_tasks(path, **options))


def chat_tasks(
    org: Org | str | os.PathLike[str] | None = None,
    *,
    split: Split = "train",
    seed: int = DEFAULT_TRAIN_SEED,
    per_task: int | None = None,
    tasks: Iterable[str] | None = None,
) -> list[TaskInstance]:
    """The instances of a split (cached per org, split, seed, size and tasks).

    Args:
        org: A :class:`~crmarena_gym.org.LocalOrg` or an org path (default: the embedded org).
        split: ``"train"`` (fresh instances from :func:`~crmarena_gym.tasks.training_tasks`, never a
            question of the test set) or ``"test"`` (the default task set).
        seed: The training seed (must differ from the test set's, 0); unused for ``"test"``.
        per_task: Instances per task (default: 130 for ``"train"``, all for ``"test"``).
        tasks: Task abbreviations or names (default: all nine).

    Raises:
        ValueError: An unknown split or task, or a training seed equal to the test seed.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if per_task is not None and per_task < 1:
        raise ValueError(f"per_task must be at least 1, got {per_task!r}")
    abbrevs = None if tasks is None else tuple(sorted({get_task_spec(t).abbrev for t in tasks}))
    return list(_cached_tasks(_org_path(org), split, seed, per_task, abbrevs))


def make_chat_env(
    org: Org | str | os.PathLike[str] | None = None,
    *,
    task: str | None = None,
    instances: Sequence[TaskInstance] | None = None,
    split: Split = "train",
    seed: int = DEFAULT_TRAIN_SEED,
    per_task: int | None = None,
    toolset: str = "functions",
    **env_kwargs: Any,
) -> gym.Env:
    """A CRMArena environment (through ``gym.make``, with the turn limit) over a split's instances.

    Args:
        org: The org, shared read-only by every environment made over it (a :class:`LocalOrg` or a path).
        task: One task's abbreviation or name, or None for all nine.
        instances: The instances to play (default: :func:`chat_tasks` of ``split``).
        split: ``"train"`` or ``"test"`` (see :func:`chat_tasks`).
        seed: The training seed.
        per_task: Instances per task.
        toolset: ``"functions"`` (the task functions), ``"soql"`` (the query tools) or ``"flex"``.
        **env_kwargs: More ``gym.make`` arguments (``match=``, ``observation_format=`` ...).
    """
    if not isinstance(org, Org):
        org = LocalOrg(_org_path(org))
    if instances is None:
        instances = chat_tasks(org, split=split, seed=seed, per_task=per_task, tasks=[task] if task else None)
    env_id = env_ids()[-1] if task is None else f"CRMArena-{get_task_spec(task).abbrev}-v0"
    return gym.make(env_id, org=org, tasks=list(instances), toolset=toolset, **env_kwargs)
