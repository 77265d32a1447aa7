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

import copy
import functools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym

from crmarena_gym.chat._episode import NO_TOOL_CALL, ChatEpisode
from crmarena_gym.chat._prompt import FRAMEWORKS, Framework, prompt_sha256
from crmarena_gym.chat._record import EpisodeRecorder
from crmarena_gym.chat._training import OrgRoutedEnv, instance_org, training_instances
from crmarena_gym.envs import env_ids
from crmarena_gym.org import LocalOrg, Org
from crmarena_gym.tasks import (
    DEFAULT_TASK_SEED,
    TaskInstance,
    default_tasks,
    first_per_task,
    get_task_spec,
    spec_for,
)

__all__ = [
    "DEFAULT_TRAIN_SEED",
    "MALFORMED_ERRORS",
    "SPLITS",
    "ChatReset",
    "ChatSession",
    "ChatStep",
    "EpisodeOverError",
    "Shaping",
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
_STEP_INFO_KEYS = (
    "turn",
    "action_kind",
    "error",
    "function",
    "query",
    "submitted",
    "reward_breakdown",
    # act mode's grade: the episode's changes, their check against the required ones, the named answer's check
    "state_diff",
    "diff_check",
    "answer_check",
)


class EpisodeOverError(RuntimeError):
    """A step after the episode ended (or before it started)."""


#: Error codes of a reply that could not be read as an action (the rest are refused calls).
MALFORMED_ERRORS = frozenset({"FORMAT_ERROR", "NO_TOOL_CALL"})


@dataclass(frozen=True)
class Shaping:
    """Optional reward shaping, the same for every adapter: penalties subtracted from the episode's reward.

    Evaluation never shapes: its records hold the score alone. A shaped session's step rewards carry the
    penalties (so a trainer that sums step rewards, or reads :attr:`ChatSession.reward`, gets the shaped
    return), and its record keeps the unshaped score in ``reward`` with the penalties under ``shaping``.

    Attributes:
        refused_call: Subtracted for each action the environment refused (an unknown function, bad
            arguments, a failing query: a step whose ``error`` is not a format error).
        malformed_reply: Subtracted for each reply that could not be read as an action (``FORMAT_ERROR``, or
            a function-calling reply without a tool call).

    Example:
        >>> Shaping(refused_call=0.05).penalty("FUNCTION_ERROR"), Shaping(refused_call=0.05).penalty(None)
        (0.05, 0.0)
    """

    refused_call: float = 0.0
    malformed_reply: float = 0.0

    def __post_init__(self) -> None:
        for name in ("refused_call", "malformed_reply"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value < float("inf"):
                raise ValueError(f"a shaping penalty must be a finite number of 0 or more; {name}={value!r}")

    @property
    def active(self) -> bool:
        """Some penalty is set."""
        return bool(self.refused_call or self.malformed_reply)

    def penalty(self, error: str | None) -> float:
        """The penalty of a step with this error code."""
        if error is None:
            return 0.0
        return float(self.malformed_reply if error in MALFORMED_ERRORS else self.refused_call)

    def as_dict(self) -> dict[str, float]:
        """The penalties, for a run's metadata."""
        return {"refused_call": float(self.refused_call), "malformed_reply": float(self.malformed_reply)}


@dataclass(frozen=True)
class ChatReset:
    """The start of an episode.

    Attributes:
        observation: The first observation (the question and its context).
        system_prompt: The system prompt.
        tools: The tool schemas the model is shown (function calling: :func:`~crmarena_gym.chat.chat_tool_schemas`),
            None in the text frameworks (their system prompt lists the functions).
        messages: The conversation so far: the system prompt and the question as a user message.
        task_id: The instance's ``idx``.
        task: The task's abbreviation.
        info: The reset ``info`` (schema, tools, context, ...).
    """

    observation: str
    system_prompt: str
    tools: list[dict[str, Any]] | None
    messages: list[dict[str, Any]]
    task_id: int
    task: str
    info: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class ChatStep:
    """What one action gave (or the end of the episode at a function-calling reply without a call).

    Attributes:
        observation: The environment's observation text (:data:`~crmarena_gym.chat.NO_TOOL_CALL` when a
            function-calling reply made no call).
        message: The observation as the next chat message (``tool`` after a tool call, else ``user``); None
            when a reply without a call ended the episode (the model is shown nothing more).
        reward: The step's reward (the score at a submission: 1 or 0, the token F1 for knowledge
            questions), less the shaping penalty of the step when shaping is on.
        terminated: The agent submitted.
        truncated: The turn budget ran out.
        error: The error code when the action failed (``FORMAT_ERROR``, ``FUNCTION_ERROR``,
            ``MALFORMED_QUERY`` ..., ``NO_TOOL_CALL``), else None.
        info: The step's plain-valued info (turn, action kind, error, submitted answer ...).
        done: The episode is over (submitted, out of turns, or ended by a reply without a call).
        action: The env action carried out ("" when none was).
    """

    observation: str
    message: dict[str, Any] | None
    reward: float
    terminated: bool
    truncated: bool
    error: str | None
    info: dict[str, Any] = field(repr=False)
    done: bool = False
    action: str = ""


class ChatSession:
    """One environment played as a conversation, with the episode semantics of :class:`ChatEpisode`.

    Args:
        env: A CRMArena environment (from ``gym.make``, so that the turn limit applies).
        framework: ``"fc"`` (tool calls; the default) or ``"act"``/``"react"`` (text replies).
        shaping: Optional penalties (:class:`Shaping`); none by default.

    Attributes:
        reward: The episode's return so far (the score once submitted, less any shaping penalties).
        score: The environment's reward at the submission (unshaped), 0 before.
        end_reason: ``submitted``, ``max_turns``, ``no_tool_call`` or ``stopped`` (:meth:`stop`) once the
            episode is over, else None.

    Example:
        >>> import gymnasium as gym
        >>> env = gym.make("CRMArena-BRI-v0", org=getfixture("tiny_org"), toolset="functions",
        ...     tasks=[{"idx": 0, "task": "BRI", "query": "Which state?", "answer": "OR",
        ...             "metadata": {"required": "- Today's date: 2021-03-01"}}])
        >>> session = ChatSession(env)
        >>> start = session.reset(seed=0)
        >>> [m["role"] for m in start.messages], len(start.tools)
        (['system', 'user'], 25)
        >>> step = session.step_tool_call("get_period", {"period_name": "Q1", "year": 2021})
        >>> step.message["role"], step.observation
        ('tool', "{'start_date': '2021-01-01T00:00:00Z', 'end_date': '2021-04-01T00:00:00Z'}")
        >>> session.step_tool_call("submit", {"content": "OR"}).reward, session.done, session.record["gold"]
        (1.0, True, 'OR')
    """

    def __init__(self, env: gym.Env, framework: Framework = "fc", *, shaping: Shaping | None = None) -> None:
        if framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
        if shaping is not None and not isinstance(shaping, Shaping):
            raise TypeError(f"shaping must be a Shaping, got {type(shaping).__name__}")
        self.env = env
        self.framework: Framework = framework
        self.shaping = shaping or Shaping()
        self.chat = ChatEpisode(framework)
        self.reward = 0.0
        self.score = 0.0
        self.done = True
        self.turns = 0
        self.end_reason: str | None = None
        self.steps: list[ChatStep] = []
        self.penalties = {"refused_calls": 0, "malformed_replies": 0}
        self.max_turns: int | None = None
        self._recorder: EpisodeRecorder | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation so far."""
        return self.chat.messages

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The tool schemas the model is shown (function calling), else None."""
        return self.chat.tools

    def reset(self, *, seed: int | None = None, task_id: int | None = None, max_turns: int | None = None) -> ChatReset:
        """Start an episode (on the instance ``task_id``, or one drawn with ``seed``).

        Args:
            seed: Draws the instance when no ``task_id`` is given.
            task_id: The instance's ``idx``.
            max_turns: A smaller turn budget for this episode (actions; the environment's own limit,
                :data:`~crmarena_gym.envs.MAX_TURNS`, still holds): the episode ends ``max_turns`` when it runs out.

        Raises:
            ValueError: An unknown instance, or a ``max_turns`` that is not a positive integer.
        """
        if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1):
            raise ValueError(f"max_turns must be a positive integer, got {max_turns!r}")
        self.max_turns = max_turns
        options = {"task_id": task_id} if task_id is not None else None
        observation, info = self.env.reset(seed=seed, options=options)
        self.chat.start(info)
        self.chat.observe(observation)
        self.reward, self.score, self.done, self.turns, self.steps = 0.0, 0.0, False, 0, []
        self.end_reason = None
        self.penalties = {"refused_calls": 0, "malformed_replies": 0}
        instance = getattr(self.env.unwrapped, "instance", None)
        self._recorder = EpisodeRecorder(observation, info, instance=instance, idx=int(info["idx"]), seed=seed)
        return ChatReset(
            observation=observation,
            system_prompt=self.chat.system_prompt or "",
            tools=self.chat.tools,
            messages=[dict(m) for m in self.chat.messages],
            task_id=int(info["idx"]),
            task=str(info["abbrev"]),
            info=info,
        )

    def reply(self, message: dict[str, Any]) -> list[ChatStep]:
        """Carry out a model's whole reply (``content`` and ``tool_calls``): every tool call in order, or the
        text reply's action; returns one step per action carried out (one ``NO_TOOL_CALL`` step when a
        function-calling reply made no call).

        Raises:
            EpisodeOverError: The episode is over, or was never started.
        """
        if self.done:
            raise EpisodeOverError("the episode is over (or has not started): reset() to start another")
        read = self.chat.reply(message)
        details = {"reply": read.message.get("content") or ""}
        if read.message.get("tool_calls"):
            details["tool_calls"] = [c["function"] for c in read.message["tool_calls"]]
        if read.ends_unanswered:
            return [self._end_unanswered(details["reply"])]
        steps = []
        for n, action in enumerate(read.actions):
            if self.done:
                break
            steps.append(self._act(action, details if n == 0 else None))
        if self.chat.pending_calls:
            self.chat.close_calls()
        return steps

    def step(self, action: str) -> ChatStep:
        """Carry out an env action given as text (``execute ...``, ``submit ...`` or a JSON tool call).

        The same as :meth:`step_text`.

        Raises:
            EpisodeOverError: The episode is over, or was never started.
        """
        return self.step_text(action)

    def step_text(self, text: str) -> ChatStep:
        """Carry out a model's text reply (in function calling, it ends the episode without an answer)."""
        if not isinstance(text, str):
            raise TypeError(f"a text reply must be a str, got {type(text).__name__}")
        return self.reply({"role": "assistant", "content": text})[-1]

    def step_tool_call(self, name: str, arguments: str | dict[str, Any] | None = None) -> ChatStep:
        """Carry out a reply of one tool call; ``arguments`` as a JSON object or its text (as OpenAI sends it).

        An unknown tool, arguments that are not JSON or not what the tool takes give an error
        observation (the turn is used), never an exception.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"a tool call needs a function name, got {name!r}")
        if self.framework != "fc":
            raise ValueError(f"a tool call needs the function-calling framework; this session plays {self.framework!r}")
        call = {"type": "function", "function": {"name": name, "arguments": arguments}}
        return self.reply({"role": "assistant", "content": None, "tool_calls": [call]})[-1]

    def stop(self) -> None:
        """End an episode the trainer stopped before it ended by itself (end reason ``stopped``): TRL ends
        its rollout at a reply without a call, or at its own length or iteration limits, without telling
        the environment which. Nothing happens when the episode is already over."""
        if self.done or self._recorder is None:
            return
        self.done, self.end_reason = True, "stopped"
        self.chat.close_calls()
        self._recorder.end("stopped")

    @property
    def record(self) -> dict[str, Any] | None:
        """Once the episode is over, its record (the fields of an evaluation record, see
        :class:`~crmarena_gym.chat.EpisodeRecorder`, with the gold answer and the score breakdown, plus
        ``shaping``); None while it runs."""
        if not self.done or self._recorder is None:
            return None
        record = copy.deepcopy(self._recorder.finish())
        record["system_prompt_sha256"] = prompt_sha256(self.chat.system_prompt or "")
        record["shaping"] = (
            {**self.shaping.as_dict(), **self.penalties, "return": self.reward} if self.shaping.active else None
        )
        return record

    def _penalise(self, error: str | None) -> float:
        penalty = self.shaping.penalty(error)
        if error is not None:
            self.penalties["malformed_replies" if error in MALFORMED_ERRORS else "refused_calls"] += 1
        return penalty

    def _end_unanswered(self, reply: str) -> ChatStep:
        penalty = self._penalise("NO_TOOL_CALL")
        self.reward -= penalty
        self.done, self.end_reason = True, "no_tool_call"
        assert self._recorder is not None
        self._recorder.end("no_tool_call", final_reply=reply)
        step = ChatStep(
            observation=NO_TOOL_CALL,
            message=None,
            reward=-penalty,
            terminated=False,
            truncated=False,
            error="NO_TOOL_CALL",
            info={"turn": self.turns, "action_kind": "none", "error": "NO_TOOL_CALL"},
            done=True,
        )
        self.steps.append(step)
        return step

    def _act(self, action: str, details: dict[str, Any] | None) -> ChatStep:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.chat.observe(observation)
        self.turns += 1
        if self.max_turns is not None and self.turns >= self.max_turns and not terminated:
            truncated = True  # this episode's own, smaller budget
        error = info.get("error")
        shaped = float(reward) - self._penalise(error)
        self.reward += shaped
        if terminated:
            self.score = float(reward)
        self.done = bool(terminated or truncated)
        assert self._recorder is not None
        self._recorder.step(action, observation, float(reward), bool(terminated), bool(truncated), info, details)
        if self.done:
            self.end_reason = self._recorder.record["end_reason"]
        step = ChatStep(
            observation=observation,
            message=dict(self.chat.messages[-1]),
            reward=shaped,
            terminated=bool(terminated),
            truncated=bool(truncated),
            error=error,
            info={k: info[k] for k in _STEP_INFO_KEYS if k in info},
            done=self.done,
            action=action,
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
    if seed == DEFAULT_TASK_SEED:
        raise ValueError(f"the training seed must differ from the test seed {DEFAULT_TASK_SEED}, got {seed!r}")
    if tasks is not None:
        # Ids number the whole split, so that an instance has the same id whichever tasks are selected.
        return tuple(i for i in _cached_tasks(path, split, seed, per_task, None) if i.abbrev in tasks)
    if _kind(path) != "service":  # a CRMArena-Pro org: fresh draws of its categories, clear of its test set
        from crmarena_gym.tasks import training_tasks

        return tuple(training_tasks(path, seed=seed, per_task=per_task))
    return tuple(training_instances(path, seed=seed, per_task=per_task))


def _kind(path: Path) -> str:
    """The org kind of an org file (``service`` for a file without our manifest)."""
    from crmarena_gym.datagen import read_manifest

    try:
        return read_manifest(path).kind
    except ValueError:
        return "service"


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
        split: ``"train"`` (fresh instances, never a question or a knowledge fact of the test set; drawn
            from sibling orgs for the families the org cannot fill, ids ``0 .. N-1``: see
            :func:`~crmarena_gym.chat.training_instances`) or ``"test"`` (the default task set).
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
    path = _org_path(org)
    kind = _kind(path)
    try:
        abbrevs = None if tasks is None else tuple(sorted({spec_for(t, kind).abbrev for t in tasks}))
    except KeyError as err:
        raise ValueError(err.args[0]) from None
    return list(_cached_tasks(path, split, seed, per_task, abbrevs))


def make_chat_env(
    org: Org | str | os.PathLike[str] | None = None,
    *,
    task: str | None = None,
    instances: Sequence[TaskInstance] | None = None,
    split: Split = "train",
    seed: int = DEFAULT_TRAIN_SEED,
    per_task: int | None = None,
    toolset: str = "functions",
    user: str | None = None,
    **env_kwargs: Any,
) -> gym.Env:
    """A CRMArena environment (through ``gym.make``, with the turn limit) over a split's instances.

    Training instances drawn from sibling orgs (:mod:`crmarena_gym.chat._training`) are each played on
    their own org, through an :class:`~crmarena_gym.chat.OrgRoutedEnv`.

    Args:
        org: The org, shared read-only by every environment made over it (a :class:`LocalOrg` or a path).
        task: One task's abbreviation or name, or None for all nine.
        instances: The instances to play (default: :func:`chat_tasks` of ``split``).
        split: ``"train"`` or ``"test"`` (see :func:`chat_tasks`).
        seed: The training seed.
        per_task: Instances per task.
        toolset: ``"functions"`` (the task functions), ``"soql"`` (the query tools) or ``"flex"``.
        user: None for single-turn episodes; ``"scripted"`` or ``"litellm:MODEL"`` for conversations (the
            interactive ids: a simulated user holds part of the request back; the agent talks with ``respond``).
        **env_kwargs: More ``gym.make`` arguments (``match=``, ``observation_format=`` ...).
    """
    if not isinstance(org, Org):
        org = LocalOrg(_org_path(org))
    if instances is None:
        instances = chat_tasks(org, split=split, seed=seed, per_task=per_task, tasks=[task] if task else None)
    kind = getattr(org, "kind", "service")
    if kind == "service":
        env_id = env_ids()[-1] if task is None else f"CRMArena-{get_task_spec(task).abbrev}-v0"
    else:  # a CRMArena-Pro org: its kind's ids
        env_id = f"CRMArena-Pro-{kind.upper()}" + (f"-{spec_for(task, kind).abbrev}" if task else "") + "-v0"
    if user is not None:  # the conversation ids, CRMArena's or CRMArena-Pro's
        env_id = env_id.removesuffix("-v0") + "-Interactive-v0"
        env_kwargs["user"] = user
    base = Path(org.path) if isinstance(org, LocalOrg) else None
    by_org: dict[Path | None, list[TaskInstance]] = {}
    for instance in instances:
        by_org.setdefault(instance_org(instance, base) if base is not None else None, []).append(instance)
    if len(by_org) <= 1 and base in by_org:
        return gym.make(env_id, org=org, tasks=list(instances), toolset=toolset, **env_kwargs)
    if None in by_org:
        raise ValueError("instances drawn from sibling orgs are played on their own orgs: pass a LocalOrg")
    envs = [
        gym.make(env_id, org=org if path == base else _sibling_org(path), tasks=group, toolset=toolset, **env_kwargs)
        for path, group in by_org.items()
    ]
    return OrgRoutedEnv(envs)


@functools.lru_cache(maxsize=16)
def _sibling_org(path: Path) -> LocalOrg:
    return LocalOrg(path)
