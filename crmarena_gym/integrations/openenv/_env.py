"""The OpenEnv environment: CRMArena episodes as chat sessions, over HTTP and WebSocket.

One :class:`CRMArenaHub` per server holds the shared read-only org, the instances of each split (made
once) and the live episodes (:class:`~crmarena_gym.integrations.openenv._episodes.EpisodeRegistry`); the
server makes one light :class:`CRMArenaEnvironment` per session (a WebSocket connection, an MCP session)
and per stateless HTTP request, each episode a :class:`~crmarena_gym.chat.ChatSession` of its own.

A session (``transport="session"``) holds one episode at a time and only its own: a reset drops the
episode it had, closing the session drops it too, and an ``episode_id`` it did not start is unknown to
it. Over stateless HTTP (``transport="http"``) an episode is addressed by the ``episode_id`` its reset
returned, an unguessable token the server chooses: send it with every step. Every unfinished episode is
dropped after ``session_timeout`` idle seconds, and one that is played out is dropped at once.

Nothing a client sends can crash the server: malformed actions are refused by the models' validation
(HTTP 422, a WebSocket error message), and bad tool names, bad arguments, unknown episodes, steps after
the end and bad reset options come back as observations whose ``error`` says what was wrong.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

import crmarena_gym
from crmarena_gym.chat import (
    DEFAULT_TRAIN_SEED,
    FRAMEWORKS,
    SPLITS,
    ChatSession,
    ChatStep,
    Shaping,
    chat_tasks,
    make_chat_env,
    run_metadata,
)
from crmarena_gym.integrations.openenv._episodes import HTTP_OWNER, Episode, EpisodeRegistry
from crmarena_gym.integrations.openenv._models import CRMArenaAction, CRMArenaObservation, CRMArenaState, ToolCall
from crmarena_gym.org import LocalOrg, default_org_path
from crmarena_gym.tasks import TaskInstance, spec_for
from crmarena_gym.users import make_user

__all__ = ["CRMArenaEnvironment", "CRMArenaHub", "HubConfig"]

_RESET_OPTIONS = ("seed", "episode_id", "task_id", "split", "task")
TRANSPORTS = ("session", "http")


@dataclass(frozen=True)
class HubConfig:
    """What a server serves.

    Attributes:
        org: The org database (default: the embedded org).
        toolset: ``"functions"`` (the task functions; the default), ``"soql"`` (the query tools) or ``"flex"``.
        framework: ``"fc"`` (tool calls), ``"act"`` or ``"react"`` (text replies): the system prompt's flavour.
        train_seed: The seed of the training instances (never the test set's, 0).
        per_task: Training instances per task (default 130); the test split is always the whole test set.
        max_sessions: The most live episodes at once (a reset past it is refused with a capacity error).
        session_timeout: Seconds an unfinished episode may stay idle (no action) before it is dropped.
        match: ``"strict"`` or ``"lenient"`` answer matching.
        shaping: Optional penalties (:class:`~crmarena_gym.chat.Shaping`); ``/metadata`` says which.
        user: None for single-turn episodes; ``"scripted"`` or ``"litellm:MODEL"`` for conversations (a
            simulated user holds part of the request back; the agent talks with ``respond``).
    """

    org: str | None = None
    toolset: str = "functions"
    framework: str = "fc"
    train_seed: int = DEFAULT_TRAIN_SEED
    per_task: int | None = None
    max_sessions: int = 256
    session_timeout: float = 600.0
    match: str = "strict"
    shaping: Shaping | None = None
    user: str | None = None

    def __post_init__(self) -> None:
        if self.user is not None:
            make_user(self.user)  # an unknown user is refused when the server starts
        if self.toolset not in ("soql", "functions", "flex"):
            raise ValueError(f"toolset must be 'soql', 'functions' or 'flex', got {self.toolset!r}")
        if self.framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {self.framework!r}")
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {self.max_sessions!r}")
        if self.session_timeout <= 0:
            raise ValueError(f"session_timeout must be positive, got {self.session_timeout!r}")


class CRMArenaHub:
    """The state a server shares between its sessions: the org, the splits' instances, the live episodes.

    Args:
        config: What to serve.

    Example:
        >>> from crmarena_gym.integrations.openenv import CRMArenaAction
        >>> hub = CRMArenaHub(HubConfig(org=str(getfixture("tiny_org"))))
        >>> env = hub.make_environment()
        >>> obs = env.step(CRMArenaAction(text="submit None"))
        >>> obs.error, obs.text
        ('NO_EPISODE', 'NO_EPISODE: no episode: reset() first (over HTTP, send its episode_id)')
        >>> env.reset(split="dev").text
        "BAD_RESET: reset refused: split must be one of train, test, got 'dev'"
    """

    def __init__(self, config: HubConfig | None = None) -> None:
        self.config = config or HubConfig()
        self.org = LocalOrg(self.config.org or default_org_path())
        self._instances: dict[tuple[str, str | None], list[TaskInstance]] = {}
        self._lock = threading.Lock()
        self._tools: list[dict[str, Any]] | None = None
        self.episodes = EpisodeRegistry(self.config.max_sessions, self.config.session_timeout)

    def make_environment(self, transport: str = "session") -> CRMArenaEnvironment:
        """A new environment over this hub: a session's (the default), or a stateless HTTP request's."""
        return CRMArenaEnvironment(self, transport=transport)

    def instances(self, split: str, task: str | None) -> list[TaskInstance]:
        """The instances of a split (of one task, or all), made once per hub."""
        key = (split, task)
        with self._lock:
            cached = self._instances.get(key)
        if cached is None:
            cached = chat_tasks(
                self.org,
                split=split,  # type: ignore[arg-type]
                seed=self.config.train_seed,
                per_task=self.config.per_task if split == "train" else None,
                tasks=[task] if task else None,
            )
            with self._lock:
                self._instances[key] = cached
        return cached

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tool schemas an episode starts with (OpenAI format; the same for every instance of a toolset)."""
        if self._tools is None:
            instance = self.instances("test", None)[:1]
            env = make_chat_env(
                self.org,
                instances=instance,
                toolset=self.config.toolset,
                match=self.config.match,
                user=self.config.user,
            )
            self._tools = ChatSession(env, self.config.framework).reset(seed=0).tools  # type: ignore[arg-type]
            env.close()
        return [dict(t) for t in self._tools]

    @property
    def live_episodes(self) -> int:
        """Episodes live now."""
        return self.episodes.live

    def close(self) -> None:
        """Stop dropping idle episodes in the background (the hub stays usable)."""
        self.episodes.stop()


class CRMArenaEnvironment(Environment[CRMArenaAction, CRMArenaObservation, CRMArenaState]):
    """A CRMArena session for OpenEnv: ``reset`` draws an instance, ``step`` takes a tool call or a text reply.

    Args:
        hub: The server's shared state (one per server; :meth:`CRMArenaHub.make_environment` makes these).
        transport: ``"session"`` (the default: it owns its one episode, which a reset or :meth:`close`
            drops) or ``"http"`` (a stateless request's: it acts in the HTTP episode its action names).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, hub: CRMArenaHub, transport: str = "session") -> None:
        super().__init__()
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
        self.hub = hub
        self.transport = transport
        self._episode: Episode | None = None

    # -- OpenEnv's interface ---------------------------------------------------------------------

    def reset(
        self,
        /,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: int | None = None,
        split: str | None = None,
        task: str | None = None,
        **options: Any,
    ) -> CRMArenaObservation:
        """Start an episode.

        A session's unfinished episode is dropped first.

        Args:
            seed: Draws the instance (the same seed, split and task give the same instance).
            episode_id: A session's label for the episode (default: a new unguessable id). Over HTTP the
                server names the episode: the id returned is the only handle on it.
            task_id: The instance's ``idx`` in the split (instead of a drawn one).
            split: ``"train"`` (the default: fresh training instances, never a test question) or ``"test"``.
            task: One task's abbreviation or name (default: all nine).

        Raises:
            CapacityError: The server holds ``max_sessions`` live episodes.
        """
        if self._episode is not None:
            self.hub.episodes.end(self._episode, "reset")
            self._episode = None
        split = split or "train"
        try:
            if options:
                raise ValueError(
                    f"unknown reset option(s) {sorted(options)}; the options are {', '.join(_RESET_OPTIONS)}"
                )
            if episode_id is not None and self.transport == "http":
                raise ValueError(
                    "over HTTP the server names the episode (an unguessable id, returned in the observation): "
                    "send no episode_id"
                )
            if episode_id is not None and (not isinstance(episode_id, str) or not 0 < len(episode_id) <= 255):
                raise ValueError(f"episode_id must be a string of 1 to 255 characters, got {episode_id!r}")
            if split not in SPLITS:
                raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
            # The hub's org kind says which suite a task name is in (handle_time is CRMArena's and Pro's).
            abbrev = spec_for(task, getattr(self.hub.org, "kind", "service")).abbrev if task else None
            if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
                raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
            if task_id is not None and (not isinstance(task_id, int) or isinstance(task_id, bool)):
                raise ValueError(f"task_id must be an integer, got {task_id!r}")
        except (ValueError, TypeError, KeyError) as err:
            return _error_observation("BAD_RESET", f"reset refused: {err}", episode_id)
        owner = HTTP_OWNER if self.transport == "http" else self
        episode = self.hub.episodes.open(owner, split, episode_id)  # refused at capacity, before any work
        try:
            instances = self.hub.instances(split, abbrev)
            env = make_chat_env(
                self.hub.org,
                task=abbrev,
                instances=instances,
                toolset=self.hub.config.toolset,
                match=self.hub.config.match,
                user=self.hub.config.user,
            )
            session = ChatSession(env, self.hub.config.framework, shaping=self.hub.config.shaping)  # type: ignore[arg-type]
            start = session.reset(seed=seed, task_id=task_id)
        except (ValueError, TypeError, KeyError) as err:
            self.hub.episodes.end(episode, "bad_reset")
            return _error_observation("BAD_RESET", f"reset refused: {err}", episode_id)
        except BaseException:
            self.hub.episodes.end(episode, "bad_reset")
            raise
        self.hub.episodes.touch(episode)  # idle from now on, not from the start of its setup
        episode.session = session
        if self.transport == "session":
            self._episode = episode
        return CRMArenaObservation(
            text=start.observation,
            message=dict(start.messages[-1]),
            episode_id=episode.episode_id,
            task=start.task,
            task_id=start.task_id,
            split=split,
            system_prompt=start.system_prompt,
            tools=start.tools,
            messages=start.messages,
            done=False,
            reward=0.0,
        )

    def step(self, action: CRMArenaAction, episode_id: str | None = None, **_: Any) -> CRMArenaObservation:  # type: ignore[override]
        """Carry out a tool call or a text reply in this session's episode (over HTTP: the one named by
        ``episode_id``, in the action or beside it)."""
        episode_id = action.episode_id or episode_id
        episode = self._find(episode_id)
        if episode is None:
            if episode_id is None:
                return _error_observation("NO_EPISODE", "no episode: reset() first (over HTTP, send its episode_id)")
            return _error_observation(
                "NO_EPISODE",
                f"no live episode {episode_id!r}: it ended, timed out or never existed; reset()",
                episode_id,
            )
        episode_id = episode.episode_id
        with episode.lock:
            session = episode.session
            if episode.ended == "idle" or session is None:
                timeout = self.hub.config.session_timeout
                return _error_observation(
                    "NO_EPISODE", f"the episode was dropped after {timeout:g} s without an action; reset()", episode_id
                )
            if session.done:
                return _error_observation("EPISODE_OVER", "the episode is over: reset() to start another", episode_id)
            self.hub.episodes.touch(episode)
            before = len(session.messages)
            steps = session.reply(action.reply())
            added = [dict(m) for m in session.messages[before + 1 :]]  # after the reply's own message
            if steps[-1].done:
                self.hub.episodes.end(episode, "done")
        return _step_observation(steps, added, episode_id, session, episode.split)

    def _find(self, episode_id: str | None) -> Episode | None:
        """The episode an action is for: a session's own (if ``episode_id`` names it or is None), or over HTTP
        the live HTTP episode of that id. Another session's episode is never found."""
        if self.transport == "http":
            return None if episode_id is None else self.hub.episodes.lookup(episode_id, HTTP_OWNER)
        episode = self._episode
        if episode is None or (episode_id is not None and episode_id != episode.episode_id):
            return None
        return episode

    @property
    def episode_live(self) -> bool:
        """The session holds an unfinished episode."""
        return self._episode is not None and self._episode.ended is None

    @property
    def episode_ended_at(self) -> float | None:
        """When the session's last episode ended (``time.monotonic()``), None if it is live or there was none."""
        return None if self._episode is None else self._episode.ended_at

    def attach(self, episode_id: str) -> bool:
        """Over HTTP: report (in :attr:`state`) on the live HTTP episode of that id; False if there is none."""
        self._episode = self._find(episode_id)
        return self._episode is not None

    def list_tools(self) -> list[dict[str, Any]]:
        """The tools as MCP describes them (``name``, ``description``, ``inputSchema``): the same functions,
        with the same schemas, as the typed action's tool calls."""
        tools = []
        for schema in self.hub.tool_schemas():
            function = schema.get("function", schema)
            parameters = function.get("parameters") or {"type": "object", "properties": {}}
            tools.append(
                {"name": function["name"], "description": function.get("description", ""), "inputSchema": parameters}
            )
        return tools

    def call_tool(
        self, name: str, arguments: dict[str, Any] | str | None = None, episode_id: str | None = None
    ) -> CRMArenaObservation:
        """An MCP tool call: the same as :meth:`step` with a ``tool_call`` action (one turn, the same observation).

        Raises:
            pydantic.ValidationError: ``name`` or ``arguments`` cannot make a tool call.
        """
        call = ToolCall(name=name, arguments={} if arguments is None else arguments)
        return self.step(CRMArenaAction(tool_call=call), episode_id)

    @property
    def state(self) -> CRMArenaState:
        """The state of this session's latest episode."""
        episode = self._episode
        session = None if episode is None else episode.session
        if session is None:
            return CRMArenaState(
                episode_id=None if episode is None else episode.episode_id,
                framework=self.hub.config.framework,
                toolset=self.hub.config.toolset,
            )
        start = session.env.unwrapped.instance  # type: ignore[attr-defined]
        return CRMArenaState(
            episode_id=episode.episode_id,
            step_count=session.turns,
            task=start.abbrev if start else None,
            task_id=start.idx if start else None,
            split=episode.split,
            done=session.done,
            reward=session.reward,
            framework=self.hub.config.framework,
            toolset=self.hub.config.toolset,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        """What ``/metadata`` answers: the name, what is served (episode semantics and shaping), the version."""
        config = self.hub.config
        meta = run_metadata(
            config.framework,  # type: ignore[arg-type]
            toolset=config.toolset,
            train_seed=config.train_seed,
            per_task=config.per_task,
            match=config.match,
            shaping=config.shaping,
            adapter="openenv",
        )
        return EnvironmentMetadata(
            name="CRMArena",
            description=(
                "CRMArena customer-service tasks over an embedded Salesforce-like org; tools of the "
                f"{config.toolset!r} toolset, {config.framework!r} system prompt; splits train and test; "
                f"tool calls per reply: {meta['tool_calls_per_reply']}; a text reply in function calling "
                f"{meta['text_reply_in_fc']}; turn budget {meta['max_turns']}; shaping {meta['shaping']}"
            ),
            version=crmarena_gym.__version__,
        )

    def close(self) -> None:
        """End the session: its unfinished episode is dropped. (A stateless HTTP request's environment
        leaves its episode to the next request.)"""
        if self.transport == "session" and self._episode is not None:
            self.hub.episodes.end(self._episode, "closed")
        self._episode = None


def _error_observation(code: str, message: str, episode_id: str | None = None) -> CRMArenaObservation:
    return CRMArenaObservation(
        text=f"{code}: {message}",
        message={"role": "user", "content": f"{code}: {message}"},
        episode_id=episode_id,
        error=code,
        done=code == "BAD_RESET",
        reward=0.0,
    )


def _step_observation(
    steps: list[ChatStep], added: list[dict[str, Any]], episode_id: str, session: ChatSession, split: str
) -> CRMArenaObservation:
    step = steps[-1]
    instance = session.env.unwrapped.instance  # type: ignore[attr-defined]
    # Built without validation: every value is the chat session's own, of the field's type (validating would
    # copy each message and the whole record once more, on every step).
    return CRMArenaObservation.model_construct(
        text=step.observation,
        message=dict(step.message or {}),
        messages=added,
        end_reason=session.end_reason,
        record=session.record,
        episode_id=episode_id,
        task=instance.abbrev,
        task_id=instance.idx,
        split=split,
        turn=session.turns,
        truncated=step.truncated,
        error=step.error,
        done=step.done,
        reward=float(sum(s.reward for s in steps)),
        # Every field given: a default would be looked up (pydantic inspects each default factory's signature).
        system_prompt=None,
        tools=None,
        metadata={},
    )
