"""The server's front: OpenEnv's wire protocol, with sessions that have an owner and a lifetime.

The session-bearing endpoints are served here; everything else (``/schema``, ``/metadata``, ``/docs``,
``/openapi.json`` ...) by OpenEnv's own app behind it:

* ``POST /reset``, ``POST /step``, ``GET /state`` -- stateless HTTP. A reset returns an unguessable
  ``episode_id``, the only handle on that episode: send it with each step (``GET /state?episode_id=``
  reads it). At capacity a reset answers 503 ``{"detail": {"code": "CAPACITY_REACHED", ...}}``.
* ``/ws`` -- a WebSocket session (OpenEnv's ``EnvClient``): ``{"type": "reset" | "step" | "state" |
  "close" | "mcp", "data": {...}}`` messages, answered in OpenEnv's envelopes. The session owns one
  episode at a time, dropped when it resets or leaves. A malformed message gets an ``error`` answer and
  the session goes on. A session past capacity is told ``CAPACITY_REACHED`` in answer to its first message.
* ``/mcp`` -- the tools as MCP: JSON-RPC ``tools/list`` and ``tools/call`` (the same functions and
  schemas as the typed action, the same turn), OpenEnv's ``openenv/session/create`` and
  ``openenv/session/close``; over HTTP, a WebSocket, or as ``{"type": "mcp"}`` messages of a ``/ws`` session.
* ``GET /health`` (JSON) and ``GET /metrics`` (Prometheus text): live episodes and sessions, refusals.

Every unfinished episode is dropped after the hub's ``session_timeout`` idle seconds, and an MCP session
with it; a WebSocket connection that holds no episode and sends nothing for that long is closed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

try:  # the openenv extra's: pydantic-core's bytes (tested) in about 60% of its CPU
    import orjson
except ImportError:  # pragma: no cover - an install without the extra's newer requirement
    orjson = None
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.websockets import WebSocket, WebSocketDisconnect

from crmarena_gym.integrations.openenv._env import CRMArenaEnvironment, CRMArenaHub
from crmarena_gym.integrations.openenv._episodes import END_REASONS, CapacityError, new_id
from crmarena_gym.integrations.openenv._limits import ANSWER_NOW, BodyGuard
from crmarena_gym.integrations.openenv._models import CRMArenaAction, CRMArenaObservation

__all__ = ["CRMArenaApp", "ServerLimits"]

_log = logging.getLogger(__name__)

# The step messages of OpenEnv's MCPToolClient (``{"type": "step", "data": {"type": ...}}``).
_MCP_STEPS = ("list_tools", "call_tool")
_MESSAGE_SHAPE = 'a message is a JSON object {"type": "reset" | "step" | "state" | "close" | "mcp", "data": {...}}'
# JSON-RPC 2.0 error codes (and OpenEnv's use of -32000 for a refused session).
_PARSE_ERROR, _INVALID_REQUEST, _METHOD_NOT_FOUND, _INVALID_PARAMS, _INTERNAL, _SERVER_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
    -32000,
)


@dataclass(frozen=True)
class ServerLimits:
    """What the server accepts from a client and how long it waits.

    Attributes:
        max_body_bytes: The largest HTTP request body and WebSocket message (larger: 413, or the
            WebSocket closed with 1009).
        request_timeout: Seconds for a request's head to arrive (from its first byte) and for its body.
        max_connections: The most WebSocket connections and MCP sessions at once (default: twice the
            hub's ``max_sessions``).
        inline_steps: Run a WebSocket session's steps on the event loop rather than in a worker thread: the
            thread's hand-off costs about as much CPU as a task function's step (~65 us). A step then holds
            every other connection until it returns. None (the default): inline for the ``functions``
            toolset, whose calls are fixed, indexed queries; in worker threads for ``soql`` and ``flex``,
            where an agent's free-form query may run up to the org's timeout. Under ``serve-env``'s uvicorn
            protocol an inline step is answered in the protocol's own callback as it arrives
            (:class:`~crmarena_gym.integrations.openenv._limits.AnswerNow`), with the same bytes.
    """

    max_body_bytes: int = 1 << 20
    request_timeout: float = 30.0
    max_connections: int | None = None
    inline_steps: bool | None = None

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1024:
            raise ValueError(f"max_body_bytes must be at least 1024, got {self.max_body_bytes!r}")
        if not self.request_timeout > 0:
            raise ValueError(f"request_timeout must be positive, got {self.request_timeout!r}")
        if self.max_connections is not None and self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {self.max_connections!r}")


class _McpSession:
    """An MCP session (``openenv/session/create``): a session environment addressed by an unguessable id."""

    def __init__(self, env: CRMArenaEnvironment) -> None:
        self.env = env
        self.attached = False  # a /ws?session_id= connection is using it
        self.last_used = time.monotonic()


class _IdleWatch:
    """Closes a WebSocket connection that holds no episode and has sent nothing for the idle timeout (counted
    from its last message or the end of its episode, whichever came last): a timer that looks now and then,
    rather than a deadline on every receive (``asyncio.wait_for`` makes a task and a timer per message).

    When it finds the connection idle while its task waits for a message, it cancels that wait (``fired``).
    """

    def __init__(self, env: CRMArenaEnvironment, idle: float, task: asyncio.Task[Any] | None) -> None:
        self.env, self.idle, self.task = env, idle, task
        self.last_message = time.monotonic()
        self.receiving = self.fired = False
        self._loop = asyncio.get_running_loop()
        self._timer = self._loop.call_later(idle, self._look)

    def left(self) -> float:
        """Seconds until the connection is idle (the idle timeout while it holds a live episode)."""
        if self.env.episode_live:
            return self.idle
        return max(self.last_message, self.env.episode_ended_at or 0.0) + self.idle - time.monotonic()

    def _look(self) -> None:
        left = self.left()
        if left <= 0 and self.receiving and self.task is not None:
            self.fired = True
            self.task.cancel()
            return
        # Busy with a message (it counts as activity once answered), or not idle yet: look again later.
        self._timer = self._loop.call_later(left if left > 0 else min(self.idle, 1.0), self._look)

    def stop(self) -> None:
        self._timer.cancel()


class _BadJSON(ValueError):
    """A message or body that is not JSON (or holds what JSON readers refuse: a 5,000-digit integer ...)."""


def _loads(raw: str | bytes) -> Any:
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise _BadJSON("not valid JSON: the text is not UTF-8") from None
    except RecursionError:
        raise _BadJSON("not valid JSON: nested too deeply") from None
    except ValueError as err:  # JSONDecodeError, or an integer past Python's 4,300-digit limit
        detail = err.msg if isinstance(err, json.JSONDecodeError) else str(err).split(";")[0]
        raise _BadJSON(f"not valid JSON: {detail}") from None


# Types orjson would write otherwise than pydantic-core (dates, dataclasses, str and int subclasses) are left
# to pydantic-core.
_ORJSON_OPTIONS = (
    0
    if orjson is None
    else orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def encode_answer(answer: Any) -> bytes:
    """A WebSocket answer's JSON text (UTF-8), as OpenEnv's own server writes its answers (pydantic's
    ``model_dump_json``: compact, UTF-8, NaN and infinities as ``null``), in pydantic-core's encoder or, where
    it is installed, orjson's, which writes the same bytes (what it would write otherwise, it refuses: integers
    past 64 bits, keys that are not strings ... go to pydantic-core): a fifth of ``json.dumps``'s CPU for an
    observation of ~10 kB.

    Text that UTF-8 cannot carry (a lone surrogate, which a client's JSON escapes can smuggle in to be echoed
    back) is written by ``json.dumps``, compact and ASCII with ``\\u`` escapes: the same value read back.

    Example:
        >>> encode_answer({"text": "café", "reward": 1.0, "score": float("nan")}).decode()
        '{"text":"café","reward":1.0,"score":null}'
        >>> encode_answer({"name": "get_\\ud800"})
        b'{"name":"get_\\\\ud800"}'
    """
    if orjson is not None:
        try:
            return orjson.dumps(answer, option=_ORJSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError
            pass
    try:
        return to_json(answer, inf_nan_mode="null")
    except PydanticSerializationError:
        return json.dumps(answer, separators=(",", ":")).encode()


def _validation_errors(err: ValidationError) -> list[dict[str, Any]]:
    """A validation error's details, JSON-safe (without the input echoed back)."""
    return [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in err.errors(include_url=False)
    ]


def _rpc_error(request_id: Any, code: int, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "error": error, "id": request_id}


def _rpc_result(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "result": result, "id": request_id}


def _capacity_data(err: CapacityError) -> dict[str, Any]:
    return {"message": str(err), "code": "CAPACITY_REACHED", "active_sessions": err.active, "max_sessions": err.limit}


_OBSERVATION_FIELDS = tuple(f for f in CRMArenaObservation.model_fields if f not in ("reward", "done"))


def serialize_observation(observation: CRMArenaObservation) -> dict[str, Any]:
    """The observation in OpenEnv's wire shape, as ``openenv``'s ``serialize_observation`` gives it (the same
    keys in the same order), without its ``model_dump`` copy of every message and of the record: the answer
    is encoded to JSON at once and dropped, so the observation's own values serve.

    Example:
        >>> from openenv.core.env_server.serialization import serialize_observation as openenv_serialize
        >>> obs = CRMArenaObservation(text="hi", messages=[{"role": "tool", "content": "hi"}], reward=1.0, done=True)
        >>> serialize_observation(obs) == openenv_serialize(obs)
        True
    """
    result: dict[str, Any] = {
        "observation": {name: getattr(observation, name) for name in _OBSERVATION_FIELDS},
        "reward": observation.reward,
        "done": observation.done,
    }
    if observation.metadata:
        result["metadata"] = observation.metadata
    return result


def _observation_response(observation: CRMArenaObservation) -> Response:
    """An HTTP answer with the observation, encoded as the WebSocket answers are (the bytes Starlette's
    ``JSONResponse`` writes, in a third of the CPU, and without its 500 for a NaN or a lone surrogate)."""
    return Response(encode_answer(serialize_observation(observation)), media_type="application/json")


def _tool_result(observation: CRMArenaObservation) -> dict[str, Any]:
    """An MCP tool result: the observation as text content; ``isError`` for an error the episode answered
    (it used the turn); the step's outcome as structured content (also as ``data``, which OpenEnv's
    ``MCPToolClient.call_tool`` returns)."""
    outcome = {
        "observation": observation.text,
        "done": observation.done,
        "reward": observation.reward,
        "error": observation.error,
        "turn": observation.turn,
        "truncated": observation.truncated,
        "episode_id": observation.episode_id,
    }
    return {
        "content": [{"type": "text", "text": observation.text}],
        "isError": observation.error is not None,
        "structuredContent": outcome,
        "data": outcome,
    }


class CRMArenaApp:
    """The ASGI application (see the module's docstring for what it serves).

    Args:
        hub: The environments' shared state.
        limits: What the server accepts.
        fallback: The ASGI app for every other path (OpenEnv's ``create_app``).
    """

    def __init__(self, hub: CRMArenaHub, limits: ServerLimits, fallback: Any) -> None:
        self.hub = hub
        self.limits = limits
        self.max_connections = limits.max_connections or 2 * hub.config.max_sessions
        self.connections = 0
        self.inline_steps = hub.config.toolset == "functions" if limits.inline_steps is None else limits.inline_steps
        self.mcp_sessions: dict[str, _McpSession] = {}
        self.refused: Counter[str] = Counter(connections=0, sessions=0)
        self._lock = threading.Lock()
        self._fallback = fallback
        self._executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="crmarena-openenv")
        self._guard = BodyGuard(self._route, limits.max_body_bytes, limits.request_timeout)
        self._http: dict[tuple[str, str], Callable[[Request], Any]] = {
            ("POST", "/reset"): self._reset,
            ("POST", "/step"): self._step,
            ("GET", "/state"): self._state,
            ("GET", "/health"): self._health,
            ("GET", "/metrics"): self._metrics,
            ("POST", "/mcp"): self._mcp_http,
        }
        hub.episodes.reap_hooks.append(self._reap_mcp_sessions)
        hub.episodes.start_reaper()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self._guard(scope, receive, send)

    async def _route(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            handler = self._http.get((scope["method"], scope["path"]))
            if handler is not None:
                request = Request(scope, receive)
                try:
                    response = await handler(request)
                except ClientDisconnect:
                    return  # the body guard answered (too large, too slow), or the client left
                except Exception as err:  # a bug: answer it, keep serving
                    _log.exception("error serving %s %s", scope["method"], scope["path"])
                    response = JSONResponse({"detail": f"internal error: {type(err).__name__}: {err}"}, 500)
                await response(scope, receive, send)
                return
        elif scope["type"] == "websocket" and scope["path"] in ("/ws", "/mcp"):
            await self._websocket(WebSocket(scope, receive, send), receive, send)
            return
        await self._fallback(scope, receive, send)

    async def _run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run a blocking environment call in the worker threads."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    # -- stateless HTTP ----------------------------------------------------------------------------

    async def _json_body(self, request: Request) -> Any:
        raw = await request.body()
        return None if not raw.strip() else _loads(raw)

    async def _reset(self, request: Request) -> Response:
        try:
            options = await self._json_body(request)
        except _BadJSON as err:
            return JSONResponse({"detail": f"the reset body is {err}"}, 422)
        options = {} if options is None else options
        if not isinstance(options, dict):
            return JSONResponse({"detail": "the reset body must be a JSON object of options (seed, task_id ...)"}, 422)
        env = self.hub.make_environment("http")
        try:
            observation = await self._run(env.reset, **options)
        except CapacityError as err:
            return JSONResponse({"detail": _capacity_data(err)}, 503, headers={"retry-after": "1"})
        except TypeError as err:  # an option named like a positional parameter
            return JSONResponse({"detail": f"reset refused: {err}"}, 422)
        return _observation_response(observation)

    async def _step(self, request: Request) -> Response:
        try:
            body = await self._json_body(request)
        except _BadJSON as err:
            return JSONResponse({"detail": f"the step body is {err}"}, 422)
        if not isinstance(body, dict) or not isinstance(body.get("action"), dict):
            return JSONResponse({"detail": 'the step body must be a JSON object {"action": {...}}'}, 422)
        episode_id = body.get("episode_id")
        if episode_id is not None and not isinstance(episode_id, str):
            return JSONResponse({"detail": "episode_id must be a string"}, 422)
        try:
            action = CRMArenaAction.model_validate(body["action"])
        except ValidationError as err:
            return JSONResponse({"detail": _validation_errors(err)}, 422)
        env = self.hub.make_environment("http")
        observation = await self._run(env.step, action, episode_id)
        return _observation_response(observation)

    async def _state(self, request: Request) -> Response:
        env = self.hub.make_environment("http")
        episode_id = request.query_params.get("episode_id")
        if episode_id is not None:
            env.attach(episode_id)
        return JSONResponse(env.state.model_dump())

    # -- health and metrics ------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Live episodes and sessions, limits, and what was refused or ended (what /health reports)."""
        registry = self.hub.episodes
        with self._lock:
            mcp_sessions = len(self.mcp_sessions)
        return {
            "live_episodes": registry.live,
            "live_episodes_by_transport": registry.live_by_owner_kind(),
            "max_episodes": registry.capacity,
            "websocket_connections": self.connections,
            "mcp_sessions": mcp_sessions,
            "max_connections": self.max_connections,
            "idle_timeout_s": registry.idle_timeout,
            "episodes_started": registry.started,
            "episodes_ended": dict(registry.ended),
            "refused": {
                "episodes": registry.refused,
                "connections": self.refused["connections"],
                "sessions": self.refused["sessions"],
                **self._guard.refused,
            },
        }

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "healthy", **self.snapshot()})

    async def _metrics(self, request: Request) -> Response:
        state = self.snapshot()
        lines: list[str] = []

        def metric(name: str, kind: str, text: str, samples: list[tuple[str, float]]) -> None:
            lines.extend((f"# HELP crmarena_{name} {text}", f"# TYPE crmarena_{name} {kind}"))
            lines.extend(f"crmarena_{name}{labels} {value:g}" for labels, value in samples)

        by_transport = state["live_episodes_by_transport"]
        metric("live_episodes", "gauge", "Episodes in progress.", [
            (f'{{transport="{kind}"}}', by_transport[kind]) for kind in ("http", "session")
        ])  # fmt: skip
        metric("max_episodes", "gauge", "The most live episodes at once.", [("", state["max_episodes"])])
        metric("websocket_connections", "gauge", "Open WebSocket connections.", [("", state["websocket_connections"])])
        metric("mcp_sessions", "gauge", "Open MCP sessions.", [("", state["mcp_sessions"])])
        metric("max_connections", "gauge", "The most WebSocket connections and MCP sessions.", [
            ("", state["max_connections"])
        ])  # fmt: skip
        metric("episodes_started_total", "counter", "Episodes started.", [("", state["episodes_started"])])
        metric("episodes_ended_total", "counter", "Episodes ended, by how.", [
            (f'{{reason="{reason}"}}', state["episodes_ended"].get(reason, 0)) for reason in END_REASONS
        ])  # fmt: skip
        metric("refused_total", "counter", "Requests and sessions refused, by why.", [
            (f'{{reason="{reason}"}}', count) for reason, count in sorted(state["refused"].items())
        ])  # fmt: skip
        return PlainTextResponse("\n".join(lines) + "\n", media_type="text/plain; version=0.0.4; charset=utf-8")

    # -- MCP -------------------------------------------------------------------------------------------

    async def _mcp_http(self, request: Request) -> Response:
        try:
            message = await self._json_body(request)
        except _BadJSON as err:
            return JSONResponse(_rpc_error(None, _PARSE_ERROR, f"Parse error: {err}"))
        return JSONResponse(await self._rpc(message, None))

    async def _rpc(self, message: Any, own: CRMArenaEnvironment | None) -> dict[str, Any]:
        """Answer one JSON-RPC request; ``own`` is the environment of the session it came in (if any)."""
        if not isinstance(message, dict):
            return _rpc_error(None, _INVALID_REQUEST, "Invalid request: a JSON-RPC request is one JSON object")
        request_id = message.get("id")
        if request_id is not None and (not isinstance(request_id, (str, int)) or isinstance(request_id, bool)):
            request_id = None
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return _rpc_error(request_id, _INVALID_REQUEST, 'Invalid request: {"jsonrpc": "2.0", "method": ...}')
        params = message.get("params")
        params = {} if params is None else params
        if not isinstance(params, dict):
            return _rpc_error(request_id, _INVALID_PARAMS, "Params must be an object")
        if method == "tools/list":
            env = own or self.hub.make_environment("http")
            return _rpc_result(request_id, {"tools": await self._run(env.list_tools)})
        if method == "tools/call":
            return await self._tools_call(request_id, params, own)
        if method == "openenv/session/create":
            try:
                session_id = self._open_mcp_session()
            except CapacityError as err:
                data = {"active_sessions": err.active, "max_sessions": err.limit, "code": "CAPACITY_REACHED"}
                return _rpc_error(request_id, _SERVER_ERROR, str(err), data)
            return _rpc_result(request_id, {"session_id": session_id})
        if method == "openenv/session/close":
            session_id = params.get("session_id")
            if not isinstance(session_id, str) or not session_id:
                return _rpc_error(request_id, _INVALID_PARAMS, "Invalid params - 'session_id' is required")
            if not await self._close_mcp_session(session_id):
                return _rpc_error(request_id, _INVALID_PARAMS, f"Unknown session_id: {session_id}")
            return _rpc_result(request_id, {"session_id": session_id, "closed": True})
        return _rpc_error(request_id, _METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _tools_call(self, request_id: Any, params: dict[str, Any], own: CRMArenaEnvironment | None) -> dict:
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not name:
            return _rpc_error(request_id, _INVALID_PARAMS, "Missing 'name' in params")
        if arguments is not None and not isinstance(arguments, (dict, str)):
            return _rpc_error(request_id, _INVALID_PARAMS, "'arguments' must be an object")
        env, episode_id = own, None
        if env is None:
            session_id = params.get("session_id")
            if not isinstance(session_id, str) or not session_id:
                return _rpc_error(
                    request_id,
                    _INVALID_PARAMS,
                    "tools/call acts in an episode: pass the session_id of an MCP session (openenv/session/create, "
                    "then reset over /ws?session_id=...) or the episode_id of an HTTP episode (POST /reset)",
                )
            with self._lock:
                session = self.mcp_sessions.get(session_id)
            if session is not None:
                session.last_used = time.monotonic()
                env = session.env
            else:  # the id of an HTTP episode, or nothing (the same answer either way)
                env, episode_id = self.hub.make_environment("http"), session_id
        try:
            observation = await self._run(env.call_tool, name, arguments, episode_id)
        except ValidationError as err:
            return _rpc_error(request_id, _INVALID_PARAMS, f"Invalid params: {_validation_errors(err)}")
        if observation.error in ("NO_EPISODE", "EPISODE_OVER"):
            return _rpc_error(request_id, _SERVER_ERROR, observation.text, {"code": observation.error})
        return _rpc_result(request_id, _tool_result(observation))

    def _open_mcp_session(self) -> str:
        with self._lock:
            active = self.connections + len(self.mcp_sessions)
            if active >= self.max_connections:
                self.refused["sessions"] += 1
                raise CapacityError(active, self.max_connections, "sessions")
            session_id = new_id()
            self.mcp_sessions[session_id] = _McpSession(self.hub.make_environment("session"))
        return session_id

    async def _close_mcp_session(self, session_id: str) -> bool:
        with self._lock:
            session = self.mcp_sessions.pop(session_id, None)
        if session is None:
            return False
        await self._run(session.env.close)
        return True

    def _reap_mcp_sessions(self) -> None:
        """Close the MCP sessions nobody has used for the idle timeout (runs in the hub's reaper thread)."""
        cutoff = time.monotonic() - self.hub.episodes.idle_timeout
        with self._lock:
            stale = [k for k, s in self.mcp_sessions.items() if not s.attached and s.last_used < cutoff]
            closed = [self.mcp_sessions.pop(k) for k in stale]
        for session in closed:
            session.env.close()

    # -- WebSocket sessions ---------------------------------------------------------------------------

    def _take_connection(self) -> bool:
        with self._lock:
            if self.connections + len(self.mcp_sessions) >= self.max_connections:
                self.refused["connections"] += 1
                return False
            self.connections += 1
            return True

    async def _websocket(self, ws: WebSocket, receive: Any, send: Any) -> None:
        """A WebSocket connection: accepted (or refused) through Starlette's ``WebSocket``, then its messages
        read and answered with the raw ASGI ``receive`` and ``send`` (Starlette's checks of the connection's
        state on every message are the server's own here)."""
        rpc_only = ws.scope["path"] == "/mcp"
        session: _McpSession | None = None
        session_id = None if rpc_only else ws.query_params.get("session_id")
        if session_id is not None:
            with self._lock:
                session = self.mcp_sessions.get(session_id)
                if session is not None and session.attached:
                    session = None
                elif session is not None:
                    session.attached = True
            if session is None:
                message = f"Unknown session_id {session_id!r}, or a WebSocket is attached to it already"
                await self._refuse(ws, message, "SESSION_ERROR", 1008)
                return
            env = session.env
        elif not self._take_connection():
            active = self.connections + len(self.mcp_sessions)
            err = CapacityError(active, self.max_connections, "sessions")
            await self._refuse(ws, str(err), "CAPACITY_REACHED", 1013, active_sessions=active, max_sessions=err.limit)
            return
        else:
            env = self.hub.make_environment("session")
        try:
            await ws.accept()
            await self._serve_websocket(ws, receive, send, env, session, rpc_only)
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass  # the client left (a send to a closed socket raises RuntimeError in Starlette)
        finally:
            if session is not None:
                session.attached = False
                session.last_used = time.monotonic()
            else:
                try:
                    await self._run(env.close)
                finally:
                    with self._lock:  # counted down last: no connection open means no session episode left
                        self.connections -= 1

    async def _refuse(self, ws: WebSocket, message: str, code: str, close_code: int, **data: Any) -> None:
        """Refuse a WebSocket session in OpenEnv's error shape, as the answer to its first message (a client
        that sends at once would otherwise meet a closed socket, not the reason), then close it."""
        try:
            await ws.accept()
            try:
                await asyncio.wait_for(ws.receive(), min(5.0, self.limits.request_timeout))
            except TimeoutError:
                pass
            answer = {"type": "error", "data": {"message": message, "code": code, **data}}
            await ws.send_text(encode_answer(answer).decode())
            await ws.close(close_code, reason=code)
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass

    async def _serve_websocket(
        self,
        ws: WebSocket,
        receive: Any,
        send: Any,
        env: CRMArenaEnvironment,
        session: _McpSession | None,
        rpc_only: bool,
    ) -> None:
        idle = self.hub.episodes.idle_timeout
        watch = _IdleWatch(env, idle, asyncio.current_task())
        # Steps run on the event loop are answered as they arrive, while this task waits (see AnswerNow).
        hook = ws.scope.get("extensions", {}).get(ANSWER_NOW) if self.inline_steps and not rpc_only else None

        def answer_now(raw: str) -> bytes | None:
            watch.last_message = time.monotonic()
            if session is not None:
                session.last_used = watch.last_message
            answer = self._ws_step_now(raw, env)
            return None if answer is None else encode_answer(answer)

        try:
            while True:
                if watch.left() <= 0:
                    await ws.close(1001, reason=f"idle for {idle:g} s")
                    return
                watch.receiving = True
                if hook is not None:
                    hook.handler = answer_now
                try:
                    message = await receive()
                except asyncio.CancelledError:
                    if not watch.fired:
                        raise
                    watch.task.uncancel()  # type: ignore[union-attr]
                    await ws.close(1001, reason=f"idle for {idle:g} s")
                    return
                finally:
                    watch.receiving = False
                    if hook is not None:
                        hook.handler = None
                watch.last_message = time.monotonic()
                if message["type"] != "websocket.receive":  # websocket.disconnect: the client left
                    return
                if session is not None:
                    session.last_used = watch.last_message
                raw = message.get("text")
                raw = message.get("bytes", b"") if raw is None else raw
                if rpc_only:
                    try:
                        answer = await self._rpc(_loads(raw), env)
                    except _BadJSON as err:
                        answer = _rpc_error(None, _PARSE_ERROR, f"Parse error: {err}")
                else:
                    answer, stop = await self._ws_message(raw, env, mcp_attached=session is not None)
                    if stop:
                        await ws.close()
                        return
                await send({"type": "websocket.send", "text": encode_answer(answer).decode()})
        finally:
            watch.stop()

    def _ws_step_now(self, raw: str, env: CRMArenaEnvironment) -> dict[str, Any] | None:
        """The answer to a ``/ws`` message that is a typed action's step run on the event loop, as
        :meth:`_ws_message` gives it; None for any other message (it goes the general way)."""
        try:
            message = _loads(raw)
        except _BadJSON:
            return None
        if not isinstance(message, dict) or message.get("type") != "step":
            return None
        data = message.get("data")
        data = {} if data is None else data
        if not isinstance(data, dict) or data.get("type") in _MCP_STEPS or not self.inline_steps:
            return None
        try:
            return self._step_now(data, env)
        except Exception as err:  # a bug: answer it, keep the session (as _ws_message does)
            _log.exception("error serving a %r message", "step")
            return _ws_error(f"{type(err).__name__}: {err}", "EXECUTION_ERROR")

    async def _ws_message(
        self, raw: str | bytes, env: CRMArenaEnvironment, *, mcp_attached: bool = False
    ) -> tuple[dict[str, Any] | None, bool]:
        """The answer to one ``/ws`` message, and whether the session ends.

        In a session attached to an MCP session, a reset's observation leaves out the OpenAI-format ``tools``
        (an MCP client lists them with ``tools/list``, and OpenEnv's ``MCPToolClient`` would read an
        observation with ``tools`` as a tool listing and lose the question).
        """
        try:
            message = _loads(raw)
        except _BadJSON as err:
            return _ws_error(f"Invalid JSON: {err}", "INVALID_JSON"), False
        kind = message.get("type") if isinstance(message, dict) else None
        data = message.get("data") if isinstance(message, dict) else None
        data = {} if data is None else data
        if not isinstance(kind, str) or not isinstance(data, dict):
            return _ws_error(f"Invalid message: {_MESSAGE_SHAPE}", "VALIDATION_ERROR"), False
        try:
            if kind == "reset":
                try:
                    observation = await self._run(env.reset, **data)
                except CapacityError as err:
                    return {"type": "error", "data": _capacity_data(err)}, False
                except TypeError as err:
                    return _ws_error(f"reset refused: {err}", "VALIDATION_ERROR"), False
                payload = serialize_observation(observation)
                if mcp_attached:
                    payload["observation"].pop("tools", None)
                return {"type": "observation", "data": payload}, False
            if kind == "step":
                return await self._ws_step(data, env), False
            if kind == "state":
                return {"type": "state", "data": env.state.model_dump()}, False
            if kind == "close":
                return None, True
            if kind == "mcp":
                return {"type": "mcp", "data": await self._rpc(data, env)}, False
        except Exception as err:  # a bug: answer it, keep the session
            _log.exception("error serving a %r message", kind)
            return _ws_error(f"{type(err).__name__}: {err}", "EXECUTION_ERROR"), False
        return _ws_error(f"Unknown message type: {kind!r}; {_MESSAGE_SHAPE}", "UNKNOWN_TYPE"), False

    async def _ws_step(self, data: dict[str, Any], env: CRMArenaEnvironment) -> dict[str, Any]:
        mcp_kind = data.get("type")
        if mcp_kind == _MCP_STEPS[0]:  # OpenEnv's MCP actions, as its step-based MCPToolClient sends them
            tools = await self._run(env.list_tools)
            return {"type": "observation", "data": {"observation": {"tools": tools}, "reward": None, "done": False}}
        if mcp_kind == _MCP_STEPS[1]:
            name, arguments = data.get("tool_name"), data.get("arguments")
            outcome: dict[str, Any] = {"tool_name": name, "result": None, "error": None}
            try:
                observation = await self._run(env.call_tool, name, arguments)
            except ValidationError as err:
                outcome["error"] = {"error_type": "invalid_args", "message": str(_validation_errors(err))}
                return {"type": "observation", "data": {"observation": outcome, "reward": None, "done": False}}
            if observation.error in ("NO_EPISODE", "EPISODE_OVER"):
                outcome["error"] = {"error_type": "execution_error", "message": observation.text}
            else:
                outcome["result"] = _tool_result(observation)
            payload = {"observation": outcome, "reward": observation.reward, "done": observation.done}
            return {"type": "observation", "data": payload}
        action = _action(data)
        if not isinstance(action, CRMArenaAction):
            return action
        observation = env.step(action) if self.inline_steps else await self._run(env.step, action)
        return {"type": "observation", "data": serialize_observation(observation)}

    @staticmethod
    def _step_now(data: dict[str, Any], env: CRMArenaEnvironment) -> dict[str, Any]:
        """A typed action's step, run here and now: its answer (the one :meth:`_ws_step` gives)."""
        action = _action(data)
        if not isinstance(action, CRMArenaAction):
            return action
        return {"type": "observation", "data": serialize_observation(env.step(action))}

    def close(self) -> None:
        """Release the worker threads and the MCP sessions."""
        if self._reap_mcp_sessions in self.hub.episodes.reap_hooks:
            self.hub.episodes.reap_hooks.remove(self._reap_mcp_sessions)
        with self._lock:
            sessions, self.mcp_sessions = list(self.mcp_sessions.values()), {}
        for session in sessions:
            session.env.close()
        self._executor.shutdown(wait=False, cancel_futures=True)


def _action(data: dict[str, Any]) -> CRMArenaAction | dict[str, Any]:
    """A step message's typed action, or the error answer saying why it is not one."""
    try:
        return CRMArenaAction.model_validate(data)
    except ValidationError as err:
        return _ws_error("Invalid message", "VALIDATION_ERROR", errors=_validation_errors(err))


def _ws_error(message: str, code: str, **data: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **data}}
