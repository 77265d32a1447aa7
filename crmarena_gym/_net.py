"""The listening socket every server here opens (the REST API of ``serve-org``, OpenEnv's ``serve-env``).

Kept below every layer, so that both servers listen the same way and a port in use is the same error.
"""

from __future__ import annotations

import socket

__all__ = ["PortUnavailableError", "listening_socket"]


class PortUnavailableError(OSError):
    """The server cannot listen on the address and port asked for (in use, or not allowed)."""


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (port 0: a free one), with Nagle's delay off (else each HTTP answer
    waits about 40 ms for the client's delayed acknowledgement). It listens at once: a client that connects
    while the server is still starting waits in the backlog instead of being refused.

    Raises:
        PortUnavailableError: The address cannot be bound (a port in use, a privileged port); the message says
            which and why.

    Example:
        >>> sock = listening_socket("127.0.0.1", 0)
        >>> taken = sock.getsockname()[1]
        >>> try:
        ...     listening_socket("127.0.0.1", taken)
        ... except PortUnavailableError as err:
        ...     str(err) == f"cannot listen on 127.0.0.1:{taken}: Address already in use"
        True
        >>> sock.close()
    """
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind(address)
        sock.listen(2048)  # connections queue from now on, before the server loop runs (the URL is printed first)
    except OSError as err:
        sock.close()
        raise PortUnavailableError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    return sock
