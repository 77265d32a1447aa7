"""The live episodes of a server: unguessable ids, an owner each, a capacity and an idle timeout.

An episode belongs to the session that started it: a WebSocket connection (or an MCP session) owns its
episode outright, and it is never reachable from elsewhere; an episode started over stateless HTTP is
owned by whoever holds its id, a 144-bit token from :mod:`secrets`, never a counter. An episode ends when
it is played out, when its session resets or leaves, or when nothing has acted in it for
``idle_timeout`` seconds (a reaper thread drops it then, so a trainer that abandons rollouts cannot fill
the server). The registry counts what it refuses and how episodes ended, for ``/metrics``.
"""

from __future__ import annotations

import secrets
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = ["END_REASONS", "HTTP_OWNER", "CapacityError", "Episode", "EpisodeRegistry", "new_id"]

#: The owner of the episodes started over stateless HTTP: whoever holds the id may act in them.
HTTP_OWNER = "http"

#: How an episode can end: played out, replaced by a reset, its session gone, idle too long, refused at reset.
END_REASONS = ("done", "reset", "closed", "idle", "bad_reset")


def new_id() -> str:
    """An unguessable id (24 URL-safe characters, 144 random bits)."""
    return secrets.token_urlsafe(18)


class CapacityError(RuntimeError):
    """The server holds as many live episodes (or sessions) as it may.

    Attributes:
        active: How many it holds.
        limit: The most it may hold.
        what: What ran out (``"episodes"`` or ``"sessions"``).
    """

    def __init__(self, active: int, limit: int, what: str = "episodes") -> None:
        self.active, self.limit, self.what = active, limit, what
        super().__init__(
            f"server at capacity: {active}/{limit} live {what}; finish, close or reset one "
            "(an abandoned one is dropped after the idle timeout), or start the server with a larger limit"
        )


class Episode:
    """A live episode: its chat session, who owns it, and a lock that serialises its steps.

    Attributes:
        key: The registry's key (the id over HTTP; an unexposed token for a session's episode).
        episode_id: The id shown to the client (over a WebSocket, the one it asked for, if any).
        owner: The session that started it, or :data:`HTTP_OWNER`.
        split: The split it was drawn from.
        session: The :class:`~crmarena_gym.chat.ChatSession` (None once ended: its memory is released).
        ended: Why it ended (one of :data:`END_REASONS`), None while live.
        ended_at: When it ended (``time.monotonic()``), None while live.
    """

    def __init__(self, key: str, episode_id: str, owner: object, split: str) -> None:
        self.key = key
        self.episode_id = episode_id
        self.owner = owner
        self.split = split
        self.session: Any = None
        self.ended: str | None = None
        self.ended_at: float | None = None  # time.monotonic() when it ended
        self.lock = threading.Lock()
        self.last_used = time.monotonic()  # for the idle timeout only; never shown to an agent


class EpisodeRegistry:
    """The live episodes of a server (thread-safe).

    Args:
        capacity: The most live episodes at once.
        idle_timeout: Seconds without an action after which an unfinished episode is dropped.

    Example:
        >>> registry = EpisodeRegistry(capacity=1, idle_timeout=60)
        >>> first = registry.open(owner="a", split="train")
        >>> len(first.episode_id), registry.live
        (24, 1)
        >>> registry.open(owner="b", split="train")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        crmarena_gym.integrations.openenv._episodes.CapacityError: server at capacity: 1/1 live episodes; ...
        >>> registry.end(first, "done"); registry.live, registry.ended["done"], registry.refused
        (0, 1, 1)
    """

    def __init__(self, capacity: int, idle_timeout: float) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity!r}")
        if not idle_timeout > 0:
            raise ValueError(f"idle_timeout must be positive, got {idle_timeout!r}")
        self.capacity = capacity
        self.idle_timeout = float(idle_timeout)
        self._episodes: dict[str, Episode] = {}
        self._lock = threading.Lock()
        self.started = 0
        self.refused = 0
        self.ended: Counter[str] = Counter({reason: 0 for reason in END_REASONS})
        #: Called after each reaping round (the server drops its idle MCP sessions there).
        self.reap_hooks: list[Callable[[], None]] = []
        self._reaper: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def live(self) -> int:
        """Episodes live now."""
        with self._lock:
            return len(self._episodes)

    def live_by_owner_kind(self) -> dict[str, int]:
        """Live episodes over stateless HTTP and in sessions."""
        with self._lock:
            http = sum(1 for e in self._episodes.values() if e.owner == HTTP_OWNER)
            return {"http": http, "session": len(self._episodes) - http}

    def open(self, owner: object, split: str, episode_id: str | None = None) -> Episode:
        """Hold a new episode for ``owner`` (its chat session is set by the caller).

        Args:
            owner: The session starting it, or :data:`HTTP_OWNER`.
            split: The split it is drawn from.
            episode_id: The id to show (a session's own label); an HTTP episode's id is always a new token.

        Raises:
            CapacityError: ``capacity`` episodes are live (idle ones are dropped first).
        """
        self.start_reaper()
        self.reap()
        key = new_id()
        episode = Episode(key, key if episode_id is None or owner == HTTP_OWNER else episode_id, owner, split)
        with self._lock:
            if len(self._episodes) >= self.capacity:
                self.refused += 1
                raise CapacityError(len(self._episodes), self.capacity)
            self._episodes[key] = episode
            self.started += 1
        return episode

    def lookup(self, key: str, owner: object) -> Episode | None:
        """The live episode of that key if ``owner`` owns it, else None (whether it exists is not told)."""
        with self._lock:
            episode = self._episodes.get(key)
        if episode is None or episode.owner != owner:
            return None
        return episode

    def touch(self, episode: Episode) -> None:
        """Note an action in the episode (it is not idle)."""
        episode.last_used = time.monotonic()

    def end(self, episode: Episode, reason: str) -> None:
        """End an episode (once; later calls do nothing). Unless it was played out (its owner may still read
        its state), its chat session is released."""
        if reason not in END_REASONS:
            raise ValueError(f"reason must be one of {', '.join(END_REASONS)}, got {reason!r}")
        with self._lock:
            if episode.ended is not None:
                return
            episode.ended, episode.ended_at = reason, time.monotonic()
            self._episodes.pop(episode.key, None)
            self.ended[reason] += 1
        if reason != "done":
            episode.session = None

    def reap(self) -> int:
        """Drop the episodes idle longer than ``idle_timeout``; returns how many."""
        cutoff = time.monotonic() - self.idle_timeout
        with self._lock:  # an episode still being set up (no session yet) is not idle
            stale = [e for e in self._episodes.values() if e.last_used < cutoff and e.session is not None]
        dropped = 0
        for episode in stale:
            if not episode.lock.acquire(blocking=False):
                continue  # a step is running: it is not idle
            try:
                if episode.ended is None and episode.last_used < cutoff:
                    self.end(episode, "idle")
                    dropped += 1
            finally:
                episode.lock.release()
        return dropped

    def start_reaper(self) -> None:
        """Drop idle episodes (and run :attr:`reap_hooks`) in a background thread from now on (once)."""
        if self._reaper is not None:
            return
        with self._lock:
            if self._reaper is None:
                interval = min(max(self.idle_timeout / 4, 0.02), 5.0)
                self._reaper = threading.Thread(
                    target=_reap_forever, args=(weakref.ref(self), self._stop, interval), daemon=True
                )
                self._reaper.start()

    def stop(self) -> None:
        """Stop the reaper thread (the registry still works; idle episodes are then dropped at each open)."""
        self._stop.set()
        if self._reaper is not None:
            self._reaper.join(timeout=10)


def _reap_forever(ref: weakref.ReferenceType[EpisodeRegistry], stop: threading.Event, interval: float) -> None:
    """Reap every ``interval`` seconds while the registry lives (a weak reference: the thread never keeps it)."""
    while not stop.wait(interval):
        registry = ref()
        if registry is None:
            return
        registry.reap()
        for hook in list(registry.reap_hooks):
            hook()
        del registry
