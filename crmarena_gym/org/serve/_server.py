"""Running the served org: uvicorn on a loopback socket, TLS by default with a self-signed certificate."""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from pathlib import Path
from typing import Any

from crmarena_gym._net import listening_socket
from crmarena_gym.org.serve._app import SessionHub, make_app
from crmarena_gym.org.serve._protocol import ConnectionGuard
from crmarena_gym.org.serve._tls import self_signed_certificate

#: Open connections at most (all clients), and from one client address.
MAX_CONNECTIONS = 1000
#: Seconds a connection has to deliver a request's head, and a request to be answered.
HEAD_TIMEOUT = 10.0
REQUEST_TIMEOUT = 120.0


class _QuietShutdown(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Cancel 0 running task(s)")


_QUIET_SHUTDOWN = _QuietShutdown()


def check_loopback(host: str) -> None:
    """Refuse an address other machines can reach (the served org is for this machine).

    Example:
        >>> check_loopback("127.0.0.1")
        >>> check_loopback("0.0.0.0")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: refusing to serve the org on '0.0.0.0', which other machines can reach; ...
    """
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror as err:
        raise ValueError(f"cannot resolve the host {host!r}: {err}") from None
    if not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
        raise ValueError(
            f"refusing to serve the org on {host!r}, which other machines can reach; "
            "pass --allow-remote (allow_remote=True) if that is what you want"
        )


class OrgServer:
    """The served org on ``host:port`` (port 0: a free one), in a background thread or in the foreground.

    Args:
        hub: The sessions to serve.
        host: The address (loopback unless ``allow_remote``).
        port: The port (0: a free one).
        tls: Serve https with a self-signed certificate kept in ``cert_dir`` (else plain http).
        cert_dir: Where the certificate lives (``cert.pem``, ``key.pem``).
        allow_remote: Allow an address other machines can reach.
        max_connections: Most open connections; past it the longest-waiting idle or stalled one is closed.
        max_connections_per_client: Most open connections from one address (likewise).
        head_timeout: Seconds a connection has to deliver a complete request head.
        request_timeout: Seconds a request has, from its head to the end of its response.

    Attributes:
        url: The instance URL (``https://127.0.0.1:PORT``).
        cert: The certificate clients must trust (None without TLS).
    """

    def __init__(
        self,
        hub: SessionHub,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: bool = True,
        cert_dir: str | Path | None = None,
        allow_remote: bool = False,
        max_connections: int = MAX_CONNECTIONS,
        max_connections_per_client: int | None = None,
        head_timeout: float = HEAD_TIMEOUT,
        request_timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        import uvicorn

        if not allow_remote:
            check_loopback(host)
        self.hub = hub
        self.cert: Path | None = None
        options: dict[str, Any] = {}
        if tls:
            if cert_dir is None:
                from crmarena_gym.org._cache import cache_dir

                cert_dir = cache_dir() / "serve-org"
            self.cert, key = self_signed_certificate(Path(cert_dir), host)
            options = {"ssl_certfile": str(self.cert), "ssl_keyfile": str(key)}
        self._sock = listening_socket(host, port)
        bound_host, bound_port = self._sock.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.url = f"{'https' if tls else 'http'}://{shown}:{bound_port}"
        self.guard = ConnectionGuard(
            max_connections=max_connections,
            max_per_client=max_connections_per_client or max_connections,
            head_timeout=head_timeout,
            request_timeout=request_timeout,
        )
        config = uvicorn.Config(
            make_app(hub),
            log_level="warning",
            http=self.guard.protocol(),  # deadlines and caps that stalled connections cannot exhaust
            timeout_keep_alive=30,
            # On Ctrl-C, requests under way get 5 s to finish; a client's idle keep-alive connection does not
            # hold the server open.
            timeout_graceful_shutdown=5,
            **options,
        )
        self._server = uvicorn.Server(config)
        # Idle keep-alive connections of clients still alive outlast the grace period on every stop; uvicorn
        # then logs an ERROR that reads like a failure. Nothing was under way: keep that line out.
        logging.getLogger("uvicorn.error").addFilter(_QUIET_SHUTDOWN)  # one filter, however many servers
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve in the foreground until interrupted."""
        try:
            self._server.run(sockets=[self._sock])
        finally:
            self._sock.close()
            self.hub.close()

    def __enter__(self) -> OrgServer:
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the served org did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._sock.close()
        self.hub.close()
