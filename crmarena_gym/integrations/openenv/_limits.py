"""What a server refuses to wait for or to hold: slow request heads, large or slow bodies.

uvicorn waits forever for a request head that never completes (a slowloris client sends a header byte
now and then) and reads any body it is sent. :class:`GuardedH11Protocol` closes a connection whose
request head has not arrived within ``request_timeout`` seconds of its first byte (or of the connection),
and :class:`BodyGuard` answers 413 to a body larger than ``max_body_bytes`` (before reading it when the
length is declared) and 408 to one that does not arrive within ``request_timeout``. A refused request
never reaches the application.

:func:`websocket_protocol` is the WebSocket side: uvicorn's protocol, reading on while a message or two wait
for the application, and answering at once the messages the application hands it a handler for.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["ANSWER_NOW", "AnswerNow", "BodyGuard", "GuardedH11Protocol", "guarded_protocol", "websocket_protocol"]

_TIMEOUT_TEXT = b"the request head did not arrive in time\n"
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    b"content-length: " + str(len(_TIMEOUT_TEXT)).encode() + b"\r\n\r\n" + _TIMEOUT_TEXT
)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head (a subclass per server sets it)."""

    request_timeout: float = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.get_protocol() is not self or self.conn.their_state is not h11.IDLE:
            self._disarm()  # a complete head (or a WebSocket upgrade): the application has it now
        elif self._head_timer is None:
            self._arm()  # part of a new request head: it must complete in time

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._head_timer = self.loop.call_later(self.request_timeout, self._head_timed_out)

    def _disarm(self) -> None:
        if getattr(self, "_head_timer", None) is not None:
            self._head_timer.cancel()  # type: ignore[union-attr]
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        if self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
            self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()


def guarded_protocol(request_timeout: float) -> type[GuardedH11Protocol]:
    """A :class:`GuardedH11Protocol` subclass with this deadline (uvicorn's ``http=`` takes a class)."""
    if not request_timeout > 0:
        raise ValueError(f"request_timeout must be positive, got {request_timeout!r}")
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"request_timeout": float(request_timeout)})


class BodyGuard:
    """ASGI middleware: a request body larger than ``max_body_bytes`` gets 413, one slower than
    ``request_timeout`` gets 408; the application then sees the client leave and its answer is dropped.

    Args:
        app: The ASGI application.
        max_body_bytes: The largest body accepted.
        request_timeout: Seconds for the whole body to arrive (from the request's start).
    """

    def __init__(self, app: Any, max_body_bytes: int, request_timeout: float) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.request_timeout = request_timeout
        self.refused: dict[str, int] = {"body_too_large": 0, "body_too_slow": 0}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.strip().isdigit() or int(declared) > self.max_body_bytes):
            self.refused["body_too_large"] += 1
            await _answer(
                send,
                413,
                f"the request body is {declared.decode(errors='replace')} bytes; at most "
                f"{self.max_body_bytes} are accepted",
            )
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request_timeout
        state = {"size": 0, "complete": False, "answered": False, "started": False}

        async def refuse(reason: str, status: int, detail: str) -> dict[str, Any]:
            if not state["answered"]:
                state["answered"] = True
                self.refused[reason] += 1
                if not state["started"]:
                    await _answer(send, status, detail)
            return {"type": "http.disconnect"}

        async def guarded_receive() -> dict[str, Any]:
            if state["answered"]:
                return {"type": "http.disconnect"}
            if state["complete"]:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
            except TimeoutError:
                return await refuse(
                    "body_too_slow", 408, f"the request body did not arrive within {self.request_timeout:g} s"
                )
            if message["type"] == "http.request":
                state["size"] += len(message.get("body", b""))
                if state["size"] > self.max_body_bytes:
                    return await refuse("body_too_large", 413, f"the request body exceeds {self.max_body_bytes} bytes")
                if not message.get("more_body", False):
                    state["complete"] = True
            return message

        async def guarded_send(message: dict[str, Any]) -> None:
            if state["answered"]:
                return
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        await self.app(scope, guarded_receive, guarded_send)


async def _answer(send: Any, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


#: Messages a WebSocket connection may have waiting for the application before its socket stops being read.
WS_QUEUED_MESSAGES = 2

#: The ASGI scope extension (``scope["extensions"]``) of :func:`websocket_protocol`'s connections: their
#: :class:`AnswerNow` hook.
ANSWER_NOW = "crmarena.answer_now"


class AnswerNow:
    """A WebSocket connection's hook for answering a text message as it arrives, in the protocol's own
    callback: no queue, no wake-up of the application's task, no ASGI ``websocket.send`` (together about a
    tenth of a functions-toolset step's CPU on the server).

    Attributes:
        handler: Set by the application only while its task waits in ``receive`` with no message queued, so
            answers keep their order: called with a text message, it returns the answer's text in UTF-8, or
            None for a message the application is to read through ``receive`` as usual.
    """

    __slots__ = ("handler",)

    def __init__(self) -> None:
        self.handler: Callable[[str], bytes | None] | None = None


# The state of uvicorn's sans-I/O protocol that answering at once reads and writes.
_SANSIO_STATE = ("conn", "transport", "queue", "frames", "curr_msg_data_type", "close_sent", "writable")


def websocket_protocol() -> type[asyncio.Protocol] | None:
    """uvicorn's sans-I/O WebSocket protocol, reading on while fewer than :data:`WS_QUEUED_MESSAGES` messages
    wait for the application, and offering it :class:`AnswerNow` (None where this uvicorn has no such
    protocol: its default is used, and the application reads every message through ``receive``).

    uvicorn's stops reading the socket after every message and starts again when the application takes it:
    two ``epoll_ctl`` calls and a selector update per message, about a tenth of a session step's CPU, for a
    client that sends one message and waits for the answer. A client that sends faster than the application
    answers is still stopped, with at most :data:`WS_QUEUED_MESSAGES` messages (each within the size limit) held.
    """
    try:
        from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
        from websockets.protocol import State
    except ImportError:
        return None
    if not all(hasattr(WebSocketsSansIOProtocol, name) for name in ("send_receive_event_to_app", "handle_connect")):
        return None

    class QueueingWebSocketProtocol(WebSocketsSansIOProtocol):  # type: ignore[misc]
        def handle_connect(self, event: Any) -> None:
            self.answer_now = AnswerNow()
            super().handle_connect(event)
            scope = getattr(self, "scope", None)  # made for an accepted handshake only; the task starts later
            # Offered only where uvicorn keeps the state _answered_now reads (another version may not).
            if scope is not None and all(hasattr(self, name) for name in _SANSIO_STATE):
                scope.setdefault("extensions", {})[ANSWER_NOW] = self.answer_now

        def send_receive_event_to_app(self) -> None:
            if self._answered_now():
                return
            paused = self.read_paused
            if not paused and self.queue.qsize() + 1 < WS_QUEUED_MESSAGES:
                self.read_paused = True  # seen as paused already, uvicorn does not pause the socket
                try:
                    super().send_receive_event_to_app()
                finally:
                    self.read_paused = paused
            else:
                super().send_receive_event_to_app()

        def _answered_now(self) -> bool:
            """Answer a complete text message through the application's :class:`AnswerNow` handler, if it has
            one set and the answer can be written at once (as uvicorn's ``send`` would write it)."""
            handler = self.answer_now.handler
            if (
                handler is None
                or self.curr_msg_data_type != "text"
                or not self.queue.empty()
                or self.close_sent
                or self.conn.state is not State.OPEN
                or not self.writable.is_set()  # the client is not reading: the application waits for it
            ):
                return False
            data = self.frames[0] if len(self.frames) == 1 else b"".join(self.frames)
            try:
                text = data.decode()
            except UnicodeDecodeError:
                return False  # uvicorn's own path closes the connection (1007)
            answer = handler(text)
            if answer is None:
                return False
            self.frames = []
            self.conn.send_text(answer)
            self.transport.write(b"".join(self.conn.data_to_send()))
            return True

    return QueueingWebSocketProtocol
