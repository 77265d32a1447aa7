"""Connections that cannot starve the server: uvicorn's HTTP/1.1 protocol with deadlines and a connection cap.

uvicorn alone has no deadline for a request's head or body: a client that opens connections and sends
nothing (or a byte now and then) holds them for ever, and with ``limit_concurrency`` a few hundred such
connections make the server answer 503 to everyone. Here:

- a connection must deliver a complete request head within ``head_timeout`` seconds of its first byte
  (or of connecting), and a request must be answered within ``request_timeout`` seconds of its head
  (a body sent slowly, or a response not read, ends the connection);
- at most ``max_connections`` connections are open, at most ``max_per_client`` from one address; a new
  connection past either first closes the connection that has waited longest without a request under
  way (a stalled one before an idle keep-alive one), and is refused only when every connection is busy.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

_log = logging.getLogger("uvicorn.error")


class ConnectionGuard:
    """The shared bookkeeping of one server's connections (see the module's description)."""

    def __init__(
        self, *, max_connections: int, max_per_client: int, head_timeout: float, request_timeout: float
    ) -> None:
        for name, value in (("max_connections", max_connections), ("max_per_client", max_per_client)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name, limit in (("head_timeout", head_timeout), ("request_timeout", request_timeout)):
            if not isinstance(limit, int | float) or not limit > 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {limit!r}")
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.head_timeout = float(head_timeout)
        self.request_timeout = float(request_timeout)
        self.open: dict[GuardedProtocol, None] = {}  # in the order they connected
        self.closed_stalled = 0  # connections closed for a head or request past its deadline
        self.closed_for_room = 0  # connections closed to make room for new ones
        self.refused = 0  # new connections refused (every open one busy)

    def protocol(self) -> type[GuardedProtocol]:
        """The protocol class uvicorn builds connections with (``Config(http=...)``)."""
        return type("GuardedH11Protocol", (GuardedProtocol,), {"guard": self})

    def admit(self, conn: GuardedProtocol) -> bool:
        """Make room for ``conn`` if the caps are reached: whether it may stay."""
        host = conn.peer_host
        same = [c for c in self.open if c.peer_host == host]
        while len(self.open) >= self.max_connections or len(same) >= self.max_per_client:
            pool = same if len(same) >= self.max_per_client else list(self.open)
            victim = min(
                (c for c in pool if not c.busy),
                key=lambda c: (c.served > 0, c.idle_since),  # stalled ones (never served) first, then the idlest
                default=None,
            )
            if victim is None:
                self.refused += 1
                return False
            victim.close_quietly()
            self.closed_for_room += 1
            self.open.pop(victim, None)
            if victim in same:
                same.remove(victim)
        self.open[conn] = None
        return True


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and caps of a :class:`ConnectionGuard`."""

    guard: ConnectionGuard

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._request_timer: asyncio.TimerHandle | None = None
        self._current: Any = None  # the request-response cycle under way
        self.served = 0
        self.peer_host = ""
        self.idle_since = 0.0

    @property
    def busy(self) -> bool:
        """Whether a request is under way (its head arrived, its response is not complete)."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and self._request_timer is not None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.peer_host = self.client[0] if self.client else ""
        self.idle_since = self.loop.time()
        if not self.guard.admit(self):
            self.close_quietly()
            return
        self._arm_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.open.pop(self, None)
        self._cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.cycle is None or self.cycle.response_complete:
            if self._head_timer is None:  # the first byte of a new request starts its deadline
                self._arm_head()
        super().data_received(data)
        self._check_new_request()

    def on_response_complete(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None
        self.served += 1
        self.idle_since = self.loop.time()
        super().on_response_complete()  # may start a pipelined request
        self._check_new_request()

    def _check_new_request(self) -> None:
        cycle = self.cycle
        if cycle is not None and cycle is not self._current and not cycle.response_complete:
            self._current = cycle
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            if self._request_timer is not None:
                self._request_timer.cancel()
            self._request_timer = self.loop.call_later(self.guard.request_timeout, self._request_expired, cycle)

    def _arm_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.guard.head_timeout, self._head_expired)

    def _head_expired(self) -> None:
        self._head_timer = None
        if not self.busy:
            self.guard.closed_stalled += 1
            self.close_quietly()

    def _request_expired(self, cycle: Any) -> None:
        self._request_timer = None
        if self.cycle is cycle and not cycle.response_complete:
            self.guard.closed_stalled += 1
            _log.warning("closing a connection whose request took more than %.0f s", self.guard.request_timeout)
            cycle.disconnected = True
            self.close_quietly()

    def _cancel(self) -> None:
        for timer in (self._head_timer, self._request_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._request_timer = None

    def shutdown(self) -> None:
        """The server stops: an idle connection ends at once (a TLS one would wait for its client's goodbye)."""
        if self.busy or self.transport is None:
            super().shutdown()
            return
        self._cancel()
        self.transport.abort()

    def close_quietly(self) -> None:
        """Close the connection now (its client sees the connection end)."""
        self._cancel()
        self.guard.open.pop(self, None)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()
