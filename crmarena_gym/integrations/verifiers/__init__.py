"""CRMArena for verifiers (0.4, ``verifiers.v1``): a taskset and an environment that plays the user.

Needs ``pip install 'crmarena-gym[verifiers]'``. verifiers loads an environment from a taskset package id,
a top-level module: ``crmarena_verifiers`` re-exports this one (``--env.taskset.id crmarena_verifiers``),
and :func:`load_environment` builds the environment in Python:

    >>> env = load_environment(split="train", per_task=8, framework="react")  # doctest: +SKIP

Each task is an instance of a split (rows from :func:`~crmarena_gym.chat.episode_rows`, as TRL's and
SkyRL's): the project's system prompt and the question open the conversation, the model replies first,
and :class:`CRMArenaEnv` plays the environment as the run's user, through the chat core
(:class:`~crmarena_gym.chat.ChatSession`): each reply is read as the environment reads actions
(``execute <query>``, ``execute name({...})`` for the task functions, ``submit <answer>``, or the
paper's tags), and the observation comes back as the next user turn, until the model submits or the turn
budget runs out. The score is recorded as the trace's ``crmarena_reward`` (the shaped return when
shaping is set), and the episode's record (gold answer, score breakdown, trajectory: the fields of an
evaluation record) in ``trace.info["crmarena_record"]``.

With ``user="scripted"`` (or ``"litellm:MODEL"``) each task is a conversation (the interactive ids, CRMArena's
or CRMArena-Pro's by the org's kind): the prompt is the simulated user's opening, the system prompt tells the
model to ask for what it lacks, and a reply ``respond <message>`` goes to the simulated user, whose answer is
the next user turn; the episode ends when the user ends the conversation on the model's answer.

Function calling is not offered here. verifiers 0.4 runs a model's tool calls inside its harness program,
not in the environment: the tools are MCP servers (``Taskset.toolsets``/``Task.toolsets``, a
``verifiers.v1.mcp.Toolset`` served in its own process), and :meth:`CRMArenaEnv.run` sees only the
``Segment`` a harness turn ends with, after the harness's own tool loop. Carrying the chat core's semantics
there (its schemas, every call one turn, the end at ``submit``) would mean answering each call from task
hooks on the host (``@intercept`` verdicts, ``@stop`` at the submission) through a harness that supports tool
interception; the harness programs are PEP 723 scripts that ``Runtime.prepare_uv_script`` resolves with uv
when they launch, so that path cannot be tested offline, and an untested adapter is not shipped. Train
function calling with TRL, SkyRL or OpenEnv.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

try:
    import verifiers.v1 as vf
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ImportError("the verifiers adapter needs verifiers 0.4: pip install 'crmarena-gym[verifiers]'") from err

from pydantic import Field

from crmarena_gym.chat import (
    DEFAULT_TRAIN_SEED,
    ChatSession,
    Shaping,
    episode_rows,
    make_chat_env,
    run_metadata,
)
from crmarena_gym.envs import MAX_TURNS
from crmarena_gym.org import LocalOrg, default_org_path
from crmarena_gym.users import make_user

__all__ = [
    "TASKSET_ID",
    "CRMArenaConfig",
    "CRMArenaData",
    "CRMArenaEnv",
    "CRMArenaEnvConfig",
    "CRMArenaTask",
    "CRMArenaTaskset",
    "load_environment",
]

#: The taskset id verifiers loads the adapter by (a top-level module: verifiers imports ids that way).
TASKSET_ID = "crmarena_verifiers"
_TEXT_FRAMEWORKS = ("act", "react")


class CRMArenaConfig(vf.TasksetConfig):
    """What the taskset serves."""

    org: str | None = None
    """The org database (default: the embedded org)."""
    split: str = "train"
    """``train`` (fresh instances, never a test question) or ``test`` (the test set)."""
    train_seed: int = DEFAULT_TRAIN_SEED
    """The seed of the training instances."""
    per_task: int | None = None
    """Instances per task (default: 130 for train, all for test)."""
    tasks: list[str] | None = None
    """Task abbreviations (default: all nine)."""
    toolset: str = "soql"
    """``soql`` (the paper's Act/ReAct), ``functions`` (the task functions as text calls) or ``flex``."""
    framework: str = "react"
    """``react`` or ``act``."""
    max_turns: int = MAX_TURNS
    """The turn budget of each episode."""
    match: str = "strict"
    """``strict`` or ``lenient`` answer matching."""
    shaping: dict[str, float] = Field(default_factory=dict)
    """Optional penalties: ``refused_call`` and ``malformed_reply`` (see :class:`~crmarena_gym.chat.Shaping`)."""
    user: str | None = None
    """None for single-turn tasks; ``scripted`` or ``litellm:MODEL`` for conversations with a simulated user."""


class CRMArenaData(vf.TaskData):
    """One instance: the prompt and what the environment needs to play it."""

    info: dict[str, Any]
    """``task_id``, ``task``, ``split`` and the taskset's settings (org, toolset, framework ...)."""


class CRMArenaTask(vf.Task[CRMArenaData]):
    """A CRMArena task."""


class CRMArenaEnvConfig(vf.EnvConfig):
    """The environment's seat: one player."""

    player: vf.AgentConfig = vf.AgentConfig()


def session_for(info: dict[str, Any]) -> ChatSession:
    """A chat session for a task's ``info`` (a fresh environment per session: rollouts run concurrently)."""
    env = make_chat_env(
        _org(info["org"]),
        split=info["split"],
        seed=info["train_seed"],
        per_task=info["per_task"] if info["split"] == "train" else None,
        toolset=info["toolset"],
        match=info["match"],
        user=info.get("user"),
    )
    return ChatSession(env, info["framework"], shaping=Shaping(**info["shaping"]) if info["shaping"] else None)


@functools.lru_cache(maxsize=8)
def _org(path: str) -> LocalOrg:
    return LocalOrg(path or default_org_path())


class CRMArenaEnv(vf.Env[CRMArenaEnvConfig]):
    """Plays the environment as the run's user: the model's replies in, the observations out."""

    async def run(self, task: CRMArenaTask, agents: Any) -> None:
        info = task.data.info
        session = session_for(info)
        # A conversation's opening is the one the rows were built with (the scripted user's, seed 0).
        seed = 0 if info.get("user") else None
        session.reset(task_id=info["task_id"], max_turns=info["max_turns"], seed=seed)
        async with agents.player.interaction(task) as interaction:
            segment = await interaction.turn()  # the task's prompt opens: the model replies first
            while not segment.terminated:
                step = session.step_text(segment.last_reply)
                if session.done:
                    break
                segment = await interaction.turn(step.observation)
        if not session.done:
            session.stop()  # the run ended first (a limit of the harness)
        trace = interaction.trace
        trace.record_reward("crmarena_reward", float(session.reward))
        trace.info["crmarena_record"] = session.record


class CRMArenaTaskset(vf.Taskset[CRMArenaTask, CRMArenaConfig]):
    """The instances of a split, each with the project's system prompt and the question."""

    def load(self) -> Iterator[CRMArenaTask]:
        config = self.config
        if config.framework not in _TEXT_FRAMEWORKS:
            raise ValueError(
                f"the verifiers adapter plays the text frameworks (act, react), got {config.framework!r}: verifiers "
                "0.4 gives a model tools only through MCP servers; train function calling with TRL or OpenEnv"
            )
        if config.split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {config.split!r}")
        shaping = Shaping(**config.shaping) if config.shaping else None  # checked here, once
        if config.user is not None:
            make_user(config.user)  # an unknown user is refused here, not at the first episode
        rows = episode_rows(
            _org(config.org or ""),
            split=config.split,  # type: ignore[arg-type]
            seed=config.train_seed,
            per_task=config.per_task,
            tasks=config.tasks,
            toolset=config.toolset,
            framework=config.framework,  # type: ignore[arg-type]
            max_turns=config.max_turns,
            user=config.user,
        )
        settings = {
            "org": config.org or "",
            "train_seed": config.train_seed,
            "per_task": config.per_task,
            "toolset": config.toolset,
            "framework": config.framework,
            "match": config.match,
            "shaping": shaping.as_dict() if shaping else {},
            "user": config.user,
            "metadata": run_metadata(
                config.framework,  # type: ignore[arg-type]
                toolset=config.toolset,
                train_seed=config.train_seed,
                per_task=config.per_task,
                match=config.match,
                shaping=shaping,
                max_turns=config.max_turns,
                adapter="verifiers",
            ),
        }
        for row in rows:
            yield CRMArenaTask(
                CRMArenaData(
                    name=f"crmarena-{row['split']}-{row['task_id']}",
                    prompt=row["question"],
                    system_prompt=row["system_prompt"],
                    info={**settings, **{k: row[k] for k in ("task_id", "task", "split", "max_turns")}},
                ),
                config.task,
            )


def load_environment(**options: Any) -> vf.Env:
    """The verifiers environment over a split (options: :class:`CRMArenaConfig`'s fields).

    Raises:
        ValueError: An unknown option, or a value the taskset refuses (the message names it).
    """
    known = set(CRMArenaConfig.model_fields) - set(vf.TasksetConfig.model_fields)
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)}; the options are {', '.join(sorted(known))}")
    config = CRMArenaEnvConfig(taskset=CRMArenaConfig(id=TASKSET_ID, **options))
    return vf.load_environment(config)
