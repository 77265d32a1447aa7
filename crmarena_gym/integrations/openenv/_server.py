"""The OpenEnv server (served by uvicorn, with :mod:`._app`'s sessions in front of OpenEnv's ``create_app``)
and its clients."""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.http_server import create_app

from crmarena_gym._net import listening_socket
from crmarena_gym.integrations.openenv._app import CRMArenaApp, ServerLimits
from crmarena_gym.integrations.openenv._env import CRMArenaHub, HubConfig
from crmarena_gym.integrations.openenv._limits import guarded_protocol, websocket_protocol
from crmarena_gym.integrations.openenv._models import CRMArenaAction, CRMArenaObservation, CRMArenaState

__all__ = [
    "CRMArenaClient",
    "CRMArenaHTTPClient",
    "ServerBusyError",
    "ServerThread",
    "check_host",
    "make_app",
    "serve",
    "uvicorn_config",
]


def make_app(
    config: HubConfig | None = None, *, hub: CRMArenaHub | None = None, limits: ServerLimits | None = None
) -> CRMArenaApp:
    """The ASGI app: OpenEnv's ``/reset``, ``/step``, ``/state``, ``/ws`` and ``/mcp`` with owned sessions,
    ``/health`` and ``/metrics``, and OpenEnv's ``/schema``, ``/metadata``, ``/docs`` ...

    Serve it with :func:`uvicorn_config` (which adds the request-head deadline), :func:`serve` or
    :class:`ServerThread`.

    Args:
        config: What to serve (default: the embedded org, the functions toolset, function calling).
        hub: A hub to serve (instead of one made from ``config``).
        limits: What the server accepts (body size, timeouts, connections).
    """
    hub = hub or CRMArenaHub(config)
    fallback = create_app(
        hub.make_environment,
        CRMArenaAction,
        CRMArenaObservation,
        env_name="crmarena",
        max_concurrent_envs=hub.config.max_sessions,
    )
    return CRMArenaApp(hub, limits or ServerLimits(), fallback)


def uvicorn_config(app: CRMArenaApp, **options: Any) -> Any:
    """A ``uvicorn.Config`` for the app: its limits on request heads, bodies and WebSocket messages.

    Args:
        app: The app (:func:`make_app`).
        **options: More ``uvicorn.Config`` arguments.
    """
    import uvicorn

    limits = app.limits
    settings: dict[str, Any] = {
        "log_level": "warning",
        "http": guarded_protocol(limits.request_timeout),
        "ws_max_size": limits.max_body_bytes,
        # No per-message compression: it more than doubled the server's CPU per step (zlib on every
        # observation, and on the client's side too) for messages of a few kilobytes. A client that offers it
        # is answered uncompressed, as the WebSocket protocol allows; pass ws_per_message_deflate=True to offer it.
        "ws_per_message_deflate": False,
        # A vanished WebSocket peer is noticed within a minute (its session and episode are then dropped).
        "ws_ping_interval": 20.0,
        "ws_ping_timeout": 20.0,
        "timeout_keep_alive": 5,
        "timeout_graceful_shutdown": 5,
    }
    ws_protocol = websocket_protocol()
    if ws_protocol is not None:
        settings["ws"] = ws_protocol
    settings.update(options)
    return uvicorn.Config(app, **settings)


def check_host(host: str, *, allow_remote: bool = False) -> None:
    """Refuse an address other machines can reach, unless ``allow_remote``.

    The server has no authentication: anyone who reaches it can play (and load) it.

    Example:
        >>> check_host("127.0.0.1"), check_host("localhost")
        (None, None)
        >>> check_host("0.0.0.0")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: refusing to listen on '0.0.0.0', which other machines can reach ...
    """
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror as err:
        raise ValueError(f"cannot resolve the host {host!r}: {err}") from None
    loopback = all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)
    if not loopback and not allow_remote:
        raise ValueError(
            f"refusing to listen on {host!r}, which other machines can reach (the server has no authentication); "
            "pass --allow-remote (allow_remote=True) if that is what you want"
        )


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(
    config: HubConfig | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    allow_remote: bool = False,
    limits: ServerLimits | None = None,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve the environment with uvicorn until interrupted (loopback only unless ``allow_remote``).

    Args:
        config: What to serve.
        host: The address to listen on.
        port: The port (0: a free one).
        allow_remote: Allow an address other machines can reach.
        limits: What the server accepts.
        announce: Called with the server's URL once the socket is bound (before serving).
    """
    import uvicorn

    check_host(host, allow_remote=allow_remote)
    app = make_app(config, limits=limits)
    sock = listening_socket(host, port)
    if announce is not None:
        announce(_url(sock))
    server = uvicorn.Server(uvicorn_config(app))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        app.close()
        app.hub.close()


class ServerThread:
    """The server in a background thread of this process, on a free port of 127.0.0.1 (a context manager).

    For notebooks, tests and benchmarks; ``crmarena-gym serve-env`` is the standalone server.

    Args:
        config: What to serve.
        hub: A hub to serve (instead of one made from ``config``).
        limits: What the server accepts.

    Attributes:
        url: The server's address, ``http://127.0.0.1:PORT``.
        hub: The served hub.
        app: The served app (its :meth:`~CRMArenaApp.snapshot` is what ``/health`` reports).
    """

    def __init__(
        self, config: HubConfig | None = None, *, hub: CRMArenaHub | None = None, limits: ServerLimits | None = None
    ) -> None:
        import uvicorn

        self.hub = hub or CRMArenaHub(config)
        self._sock = listening_socket("127.0.0.1", 0)
        self.url = _url(self._sock)
        self.app = make_app(hub=self.hub, limits=limits)
        self._server = uvicorn.Server(uvicorn_config(self.app))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def __enter__(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the OpenEnv server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()
        self.app.close()


def _result(payload: dict[str, Any]) -> StepResult[CRMArenaObservation]:
    observation = CRMArenaObservation(
        **payload.get("observation", {}), done=payload.get("done", False), reward=payload.get("reward")
    )
    return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))


def _payload(action: CRMArenaAction) -> dict[str, Any]:
    return action.model_dump(exclude_none=True, exclude={"metadata"})


class CRMArenaClient(EnvClient[CRMArenaAction, CRMArenaObservation, CRMArenaState]):
    """The WebSocket client (OpenEnv's ``EnvClient``; asynchronous, ``.sync()`` for a blocking one).

    Example (against a running ``crmarena-gym serve-env``)::

        async with CRMArenaClient(base_url="http://127.0.0.1:8000") as env:
            result = await env.reset(split="train", task="BRI", seed=0)
            result = await env.step(CRMArenaAction(tool_call={"name": "get_issues"}))
    """

    def _step_payload(self, action: CRMArenaAction) -> dict[str, Any]:
        return _payload(action)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CRMArenaObservation]:
        return _result(payload)

    def _parse_state(self, payload: dict[str, Any]) -> CRMArenaState:
        return CRMArenaState(**payload)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context (httpx's trust store, certifi) for every HTTP client: httpx builds one per client
    otherwise, which takes tens of milliseconds, more than a whole episode's requests."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class ServerBusyError(RuntimeError):
    """The server is at capacity (HTTP 503): its message reads as OpenEnv's client words a refused session,
    ``Server error: ... (code: CAPACITY_REACHED)``."""


class CRMArenaHTTPClient:
    """A blocking client over OpenEnv's stateless HTTP endpoints; it sends the episode's id with each step.

    Args:
        base_url: The server (``http://127.0.0.1:8000``).
        timeout: Seconds per request.

    Example (against a running ``crmarena-gym serve-env``)::

        with CRMArenaHTTPClient("http://127.0.0.1:8000") as env:
            result = env.reset(split="test", task="HTU", seed=3)
            result = env.step(CRMArenaAction(text="submit None"))
    """

    def __init__(self, base_url: str, *, timeout: float = 60.0) -> None:
        self.http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout, verify=_tls_context())
        self.episode_id: str | None = None

    def reset(self, **options: Any) -> StepResult[CRMArenaObservation]:
        """Start an episode (options as :meth:`CRMArenaEnvironment.reset` takes them)."""
        result = _result(self._post("/reset", options))
        self.episode_id = result.observation.episode_id
        return result

    def step(self, action: CRMArenaAction) -> StepResult[CRMArenaObservation]:
        """Carry out an action in the current episode."""
        body: dict[str, Any] = {"action": _payload(action)}
        if self.episode_id is not None and action.episode_id is None:
            body["action"]["episode_id"] = self.episode_id
        return _result(self._post("/step", body))

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(path, json=body)
        if response.status_code == 422:
            raise ValueError(f"the server refused the request to {path}: {response.json().get('detail')}")
        if response.status_code == 503:
            detail = response.json().get("detail", {})
            raise ServerBusyError(f"Server error: {detail.get('message')} (code: {detail.get('code')})")
        response.raise_for_status()
        return response.json()

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    def __enter__(self) -> CRMArenaHTTPClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
