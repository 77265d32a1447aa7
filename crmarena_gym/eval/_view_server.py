"""The trajectory viewer's web server (loopback only, standard library) and its static export.

The page (``viewer/index.html``, ``viewer.js``, ``viewer.css``, shipped in the package: nothing is fetched
from elsewhere) asks the server for JSON documents under ``/api/`` (see :meth:`ViewerData.api`) and polls
``/api/state`` to update while a run writes. :func:`export_viewer` writes the same page with its documents in
``data.js`` and chunks beside it, so that a report can link to episode pages that open from the disk with no
server.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

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
    server = _ViewerServer((host.strip("[]"), port), data, verbose)
    data.warm()  # the tables and lists of large runs are ready before the first page asks for them
    return server


# A static copy's chunks hold about this much JSON each (episodes and instances are never split).
_CHUNK_BYTES = 1_000_000


def _chunks(documents: Iterator[tuple[Any, Any]], limit: int = _CHUNK_BYTES) -> Iterator[list[tuple[Any, str]]]:
    """(key, JSON text) pairs in runs of about ``limit`` bytes."""
    chunk: list[tuple[Any, str]] = []
    size = 0
    for key, value in documents:
        text = redact_json(json_text(value, default=str))  # a run written before redaction, too
        if chunk and size + len(text) > limit:
            yield chunk
            chunk, size = [], 0
        chunk.append((key, text))
        size += len(text)
    if chunk:
        yield chunk


def _write_chunk(out: Path, name: str, body: str) -> str:
    """Write ``data/NAME.js`` calling back the page with its documents; its path relative to the page."""
    path = out / "data" / f"{name}.js"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"window.CRM_VIEWER_CHUNK({json_text(f'data/{name}.js')}, {body});\n", encoding="utf-8")
    return f"data/{name}.js"


def _object(pairs: list[tuple[Any, str]]) -> str:
    return "{" + ",".join(f"{json_text(str(key))}:{text}" for key, text in pairs) + "}"


def export_viewer(sources: ViewerData | Sequence[str | os.PathLike[str]], directory: str | os.PathLike[str]) -> Path:
    """Write the viewer with its documents (its pages open from the disk, no server).

    ``data.js`` holds the runs and each run's table; the rest is split into chunks under ``data/`` of about
    a megabyte each (each run's episode list and search texts, its episodes, the solved-by matrix, the
    instances; an episode larger than that is a chunk of its own), which the page loads when it needs
    them: a copy of a sweep of thousands of episodes opens as fast as a small one. The page filters,
    sorts and pages what the server would.

    Returns:
        The page (``directory/index.html``); episode pages are ``index.html#/episode/RUN/IDX/TRIAL``.
    """
    data = sources if isinstance(sources, ViewerData) else ViewerData(sources)
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise ValueError(f"the viewer copy needs a directory, and {os.fspath(out)!r} is a file")
    out.mkdir(parents=True, exist_ok=True)
    if (out / "data").is_dir():  # chunks of an earlier copy would be read by nothing, or by mistake
        shutil.rmtree(out / "data")
    for name in VIEWER_ASSETS:
        (out / name).write_bytes(_asset(name))
    data.refresh()
    documents: dict[str, Any] = {"/api/runs": data.api("/api/runs")}
    runs: dict[str, Any] = {}
    for n, (run_id, briefs, search) in enumerate(data.episode_lists()):
        documents[f"/api/runs/{run_id}"] = data.api(f"/api/runs/{quote(run_id)}")
        entry: dict[str, Any] = {"episodes": [], "search": [], "details": []}
        for kind, values in (("episodes", briefs), ("search", search)):  # lists, in pieces loaded together
            for c, chunk in enumerate(_chunks(iter(enumerate(values)))):
                body = "[" + ",".join(text for _, text in chunk) + "]"
                entry[kind].append(_write_chunk(out, f"r{n}/{kind}{c}", body))
        keys = ((b["idx"], b["trial"]) for b in briefs)
        details = ((key, data.api(f"/api/runs/{quote(run_id)}/episodes/{key[0]}/{key[1]}")) for key in keys)
        for c, chunk in enumerate(_chunks(details)):
            body = _object([(f"{idx}/{trial}", text) for (idx, trial), text in chunk])
            entry["details"].append([*chunk[0][0], _write_chunk(out, f"r{n}/e{c}", body)])
        runs[run_id] = entry
    matrix = data.matrix()
    instances = []
    rows = ((row["idx"], data.api(f"/api/instances/{row['idx']}")) for row in matrix)
    for c, chunk in enumerate(_chunks(rows)):
        instances.append([chunk[0][0], _write_chunk(out, f"i{c}", _object(chunk))])
    manifest = {
        "documents": documents,
        "runs": runs,
        "matrix": [
            _write_chunk(out, f"matrix{c}", "[" + ",".join(text for _, text in chunk) + "]")
            for c, chunk in enumerate(_chunks(iter(enumerate(matrix))))
        ],
        "instances": instances,
    }
    text = redact_json(json_text(manifest, default=str)).replace("</", "<\\/")  # cannot close a script element
    (out / "data.js").write_text(f"window.CRM_VIEWER_DATA = {text};\n", encoding="utf-8")
    return out / "index.html"
