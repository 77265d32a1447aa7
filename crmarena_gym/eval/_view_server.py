"""The trajectory viewer's web server (loopback only, standard library) and its static export.

The page (``viewer/index.html``, ``viewer.js``, ``viewer.css``, shipped in the package: nothing is fetched
from elsewhere) asks the server for JSON documents under ``/api/`` (see :meth:`ViewerData.api`) and polls
``/api/state`` to update while a run writes. :func:`export_viewer` writes the same page with every document
baked into ``data.js``, so that a report can link to episode pages that open from the disk with no server.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from crmarena_gym._json import json_text
from crmarena_gym._secrets import redact_json
from crmarena_gym.eval._viewer import ViewerData, ViewerError

__all__ = ["VIEWER_ASSETS", "export_viewer", "make_viewer_server"]

#: The page's files, as shipped in ``crmarena_gym/eval/viewer/``, with their content types.
VIEWER_ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "viewer.js": "text/javascript; charset=utf-8",
    "viewer.css": "text/css; charset=utf-8",
}
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
# The page loads only its own files and talks only to its own server.
_CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'"


def _asset(name: str) -> bytes:
    return resources.files("crmarena_gym.eval").joinpath("viewer", name).read_bytes()


class _Handler(BaseHTTPRequestHandler):
    server: _ViewerServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", _CSP)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        # A run written before secrets were redacted is shown without them too.
        self._send(status, redact_json(json_text(value, default=str)).encode(), "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message, "status": status})

    def do_GET(self) -> None:
        try:
            self._route()
        except Exception as err:  # the server must survive any request; say what failed
            self._error(500, f"the viewer failed on {self.path!r}: {type(err).__name__}: {err}")

    do_HEAD = do_GET

    def _refuse(self) -> None:
        self._error(405, f"the viewer only reads: {self.command} is not allowed (use GET)")

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

    def _route(self) -> None:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        if host not in _LOOPBACK:  # a page of another site reaching us by DNS rebinding
            self._error(403, f"the viewer answers requests for 127.0.0.1 or localhost only, not {host!r}")
            return
        path = urlsplit(self.path).path
        if path.startswith("/api/"):
            self.server.data.refresh()
            try:
                self._json(200, self.server.data.api(self.path))
            except ViewerError as err:
                self._error(err.status, str(err))
            return
        name = "index.html" if path == "/" else path.lstrip("/")
        if name == "data.js":  # the served page reads the server; only an exported copy has data here
            self._send(200, b"/* served: documents come from /api/ */\n", VIEWER_ASSETS["viewer.js"])
        elif name in VIEWER_ASSETS:
            self._send(200, _asset(name), VIEWER_ASSETS[name])
        else:
            self._error(404, f"no such page: {path!r} (the viewer's pages are under /#/)")


class _ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], data: ViewerData, verbose: bool) -> None:
        self.data = data
        self.verbose = verbose
        super().__init__(address, _Handler)


def make_viewer_server(
    sources: ViewerData | Sequence[str | os.PathLike[str]],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    verbose: bool = False,
) -> ThreadingHTTPServer:
    """A viewer server bound to a loopback address (call ``serve_forever()``; ``server_address`` has the port).

    Args:
        sources: A :class:`ViewerData`, or the run directories and trajectory files to show.
        host: A loopback address (the viewer has no authentication).
        port: The port (0: a free one).
        verbose: Log each request on stderr.

    Raises:
        ValueError: ``host`` is not a loopback address.
        OSError: The port cannot be bound.
    """
    if host not in _LOOPBACK:
        raise ValueError(f"the viewer listens on the loopback address only (it has no authentication), got {host!r}")
    data = sources if isinstance(sources, ViewerData) else ViewerData(sources)
    return _ViewerServer((host.strip("[]"), port), data, verbose)


def export_viewer(sources: ViewerData | Sequence[str | os.PathLike[str]], directory: str | os.PathLike[str]) -> Path:
    """Write the viewer with every document baked in (``data.js``): its pages open from the disk, no server.

    Returns:
        The page (``directory/index.html``); episode pages are ``index.html#/episode/RUN/IDX/TRIAL``.
    """
    data = sources if isinstance(sources, ViewerData) else ViewerData(sources)
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise ValueError(f"the viewer copy needs a directory, and {os.fspath(out)!r} is a file")
    out.mkdir(parents=True, exist_ok=True)
    for name in VIEWER_ASSETS:
        (out / name).write_bytes(_asset(name))
    documents = redact_json(json_text(data.snapshot(), default=str))  # a run written before redaction, too
    # "</" cannot close a script element inside a JSON string once escaped; JSON reads it back the same.
    documents = documents.replace("</", "<\\/")
    (out / "data.js").write_text(f"window.CRM_VIEWER_DATA = {documents};\n", encoding="utf-8")
    return out / "index.html"
