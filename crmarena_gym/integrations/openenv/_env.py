"""The OpenEnv environment: CRMArena episodes as chat sessions, over HTTP and WebSocket.

One :class:`CRMArenaHub` per server holds the shared read-only org, the instances of each split (made
once) and the live episodes; the server's factory makes one light :class:`CRMArenaEnvironment` per
WebSocket connection (and per stateless HTTP request), each episode a
:class:`~crmarena_gym.chat.ChatSession` of its own.

Over WebSocket (OpenEnv's ``EnvClient``) a connection is a session: reset and step as often as wanted;
its episodes are dropped when the connection closes. OpenEnv's HTTP endpoints make a fresh environment
per request, so an HTTP episode is addressed by the ``episode_id`` that reset returns (send it with
every step); it is dropped after its last step, or after ``session_timeout`` idle seconds.

Nothing a client sends can crash the server: malformed actions are refused by the models' validation
(HTTP 422, a WebSocket error message), and bad tool names, bad arguments, unknown episodes, steps after
the end and bad reset options come back as observations whose ``error`` says what was wrong.
"""

from __future__ import annotations

import itertools
import threading
import time
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
from crmarena_gym.integrations.openenv._models import CRMArenaAction, CRMArenaObservation, CRMArenaState
from crmarena_gym.org import LocalOrg, default_org_path
from crmarena_gym.tasks import TaskInstance, get_task_spec

__all__ = ["CRMArenaEnvironment", "CRMArenaHub", "HubConfig"]

_RESET_OPTIONS = ("seed", "episode_id", "task_id", "split", "task")


@dataclass(frozen=True)
class HubConfig:
    """What a server serves.

    Attributes:
        org: The org database (default: the embedded org).
        toolset: ``"functions"`` (the task functions; the default), ``"soql"`` (the query tools) or ``"flex"``.
        framework: ``"fc"`` (tool calls), ``"act"`` or ``"react"`` (text replies): the system prompt's flavour.
        train_seed: The seed of the training instances (never the test set's, 0).
        per_task: Training instances per task (default 130); the test split is always the whole test set.
        max_sessions: The most live episodes (and WebSocket connections) at once.
        session_timeout: Seconds an HTTP episode may stay idle before it is dropped.
        match: ``"strict"`` or ``"lenient"`` answer matching.
        shaping: Optional penalties (:class:`~crmarena_gym.chat.Shaping`); ``/metadata`` says which.
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

    def __post_init__(self) -> None:
        if self.toolset not in ("soql", "functions", "flex"):
            raise ValueError(f"toolset must be 'soql', 'functions' or 'flex', got {self.toolset!r}")
        if self.framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {self.framework!r}")
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {self.max_sessions!r}")
        if self.session_timeout <= 0:
            raise ValueError(f"session_timeout must be positive, got {self.session_timeout!r}")


class _Episode:
    """A live episode: its chat session, the split it was drawn from, and a lock for its steps."""

    def __init__(self, session: ChatSession, split: str) -> None:
        self.session = session
        self.split = split
        self.lock = threading.Lock()
        self.last_used = time.monotonic()  # for the idle timeout only; never shown to an agent


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
        self._episodes: dict[str, _Episode] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def make_environment(self) -> CRMArenaEnvironment:
        """A new environment over this hub (the server's factory)."""
        return CRMArenaEnvironment(self)

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

    @property
    def live_episodes(self) -> int:
        """Episodes held now."""
        with self._lock:
            return len(self._episodes)

    def open(self, episode: _Episode, episode_id: str | None) -> str:
        """Hold an episode under ``episode_id`` (replacing one of that id) or a new id; returns the id.

        Raises:
            RuntimeError: The server holds ``max_sessions`` episodes (idle HTTP ones are dropped first).
        """
        now = time.monotonic()
        with self._lock:
            stale = [k for k, e in self._episodes.items() if now - e.last_used > self.config.session_timeout]
            for key in stale:
                del self._episodes[key]
            if episode_id not in self._episodes and len(self._episodes) >= self.config.max_sessions:
                raise RuntimeError(
                    f"the server holds its maximum of {self.config.max_sessions} live episodes: finish or close one "
                    "(or start the server with a larger --max-sessions)"
                )
            episode_id = episode_id or f"episode-{next(self._ids)}"
            self._episodes[episode_id] = episode
        return episode_id

    def get(self, episode_id: str) -> _Episode | None:
        """The live episode of that id, or None."""
        with self._lock:
            episode = self._episodes.get(episode_id)
        if episode is not None:
            episode.last_used = time.monotonic()
        return episode

    def drop(self, episode_id: str, episode: _Episode | None = None) -> None:
        """Forget an episode (only if it is still ``episode``, when given)."""
        with self._lock:
            if episode is None or self._episodes.get(episode_id) is episode:
                self._episodes.pop(episode_id, None)


class CRMArenaEnvironment(Environment[CRMArenaAction, CRMArenaObservation, CRMArenaState]):
    """A CRMArena session for OpenEnv: ``reset`` draws an instance, ``step`` takes a tool call or a text reply.

    Args:
        hub: The server's shared state (one per server; :meth:`CRMArenaHub.make_environment` makes these).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, hub: CRMArenaHub) -> None:
        super().__init__()
        self.hub = hub
        self._episode_id: str | None = None
        self._episode: _Episode | None = None
        self._owned: list[str] = []
        self._calls = 0

    # -- OpenEnv's interface ---------------------------------------------------------------------

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: int | None = None,
        split: str | None = None,
        task: str | None = None,
        **options: Any,
    ) -> CRMArenaObservation:
        """Start an episode.

        Args:
            seed: Draws the instance (the same seed, split and task give the same instance).
            episode_id: The id to hold the episode under (default: a new one, returned in the observation).
            task_id: The instance's ``idx`` in the split (instead of a drawn one).
            split: ``"train"`` (the default: fresh training instances, never a test question) or ``"test"``.
            task: One task's abbreviation or name (default: all nine).
        """
        self._calls += 1
        split = split or "train"
        try:
            if options:
                raise ValueError(
                    f"unknown reset option(s) {sorted(options)}; the options are {', '.join(_RESET_OPTIONS)}"
                )
            if split not in SPLITS:
                raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
            abbrev = get_task_spec(task).abbrev if task else None
            if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
                raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
            instances = self.hub.instances(split, abbrev)
            env = make_chat_env(
                self.hub.org,
                task=abbrev,
                instances=instances,
                toolset=self.hub.config.toolset,
                match=self.hub.config.match,
            )
            session = ChatSession(env, self.hub.config.framework, shaping=self.hub.config.shaping)  # type: ignore[arg-type]
            start = session.reset(seed=seed, task_id=task_id)
        except (ValueError, TypeError, KeyError) as err:
            return _error_observation("BAD_RESET", f"reset refused: {err}", episode_id)
        episode = _Episode(session, split)
        try:
            episode_id = self.hub.open(episode, episode_id)
        except RuntimeError as err:
            return _error_observation("SERVER_BUSY", str(err), episode_id)
        self._episode_id, self._episode = episode_id, episode
        self._owned.append(episode_id)
        return CRMArenaObservation(
            text=start.observation,
            message=dict(start.messages[-1]),
            episode_id=episode_id,
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
        """Carry out a tool call or a text reply in this session's episode (or the one named by ``episode_id``)."""
        self._calls += 1
        episode_id = action.episode_id or episode_id
        if episode_id is None:  # this session's own episode (a WebSocket session)
            episode_id, episode = self._episode_id, self._episode
            if episode_id is None or episode is None:
                return _error_observation("NO_EPISODE", "no episode: reset() first (over HTTP, send its episode_id)")
        else:
            episode = self.hub.get(episode_id)
        if episode is None:
            return _error_observation(
                "NO_EPISODE",
                f"no live episode {episode_id!r}: it ended, timed out or never existed; reset()",
                episode_id,
            )
        with episode.lock:
            session = episode.session
            if session.done:
                return _error_observation("EPISODE_OVER", "the episode is over: reset() to start another", episode_id)
            before = len(session.messages)
            steps = session.reply(action.reply())
            added = [dict(m) for m in session.messages[before + 1 :]]  # after the reply's own message
        if steps[-1].done:
            self.hub.drop(episode_id, episode)
        return _step_observation(steps, added, episode_id, session, episode.split)

    @property
    def state(self) -> CRMArenaState:
        """The state of this session's latest episode."""
        episode = self._episode
        if episode is None:
            return CRMArenaState(
                episode_id=self._episode_id,
                framework=self.hub.config.framework,
                toolset=self.hub.config.toolset,
            )
        session = episode.session
        start = session.env.unwrapped.instance  # type: ignore[attr-defined]
        return CRMArenaState(
            episode_id=self._episode_id,
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
        """Drop this session's episodes when it is a WebSocket session (it has served more than one call).

        A stateless HTTP request's environment serves one call: its episode lives on for the next request.
        """
        if self._calls > 1:
            for episode_id in self._owned:
                self.hub.drop(episode_id)
        self._owned, self._episode = [], None


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
    return CRMArenaObservation(
        text=step.observation,
        message=step.message or {},
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
        reward=sum(s.reward for s in steps),
    )
