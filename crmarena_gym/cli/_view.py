"""``crmarena-gym view``: a local web viewer over run directories and recorded trajectories."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from crmarena_gym.cli._voice import PORT_HINT, did_you_mean


def register(subparsers: Any) -> None:
    """Add the ``view`` subcommand."""
    parser = subparsers.add_parser(
        "view",
        help="browse runs in a local web viewer: per-task tables, episodes as transcripts, runs side by side",
        description="Serve a web viewer on the loopback address over run directories (written by crmarena-gym "
        "eval) and trajectory files (written by the RecordTrajectory wrapper): runs and per-task tables with "
        "pass^k and bootstrap intervals, episode lists with filters and search, each episode as a transcript, "
        "two runs side by side on one instance, and which run solved each instance. The page updates while a "
        "run is still writing. Every file of the page ships with the package; nothing is fetched from the network.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories or RecordTrajectory files")
    parser.add_argument("--port", type=int, default=8780, help="the port (default 8780; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)")
    parser.add_argument("--open", action="store_true", help="open the page in the default web browser")
    parser.set_defaults(func=run_view)


def run_view(args: argparse.Namespace) -> int:
    """Serve until interrupted; return the exit code."""
    from crmarena_gym.eval import ViewerData, make_viewer_server

    missing = [path for path in args.runs if not Path(path).exists()]
    if missing:  # a misspelt directory is refused, not served as an empty source
        for path in missing:
            print(f"crmarena-gym view: {path!r} does not exist{did_you_mean(Path(path))}", file=sys.stderr)
        return 2
    try:
        data = ViewerData(args.runs)
        server = make_viewer_server(data, host=args.host, port=args.port)
    except ValueError as err:
        print(f"crmarena-gym view: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(
            f"crmarena-gym view: cannot listen on {args.host}:{args.port}: {err.strerror or err} ({PORT_HINT})",
            file=sys.stderr,
        )
        return 2
    host, port = server.server_address[:2]
    url = f"http://{host}:{port}/"
    for source in data.api("/api/runs")["runs"]:
        if source["error"]:
            print(f"crmarena-gym view: {source['name']}: {source['error']}", file=sys.stderr)
    print(f"viewer on {url} ({len(data.sources)} source(s)); Ctrl-C stops it", flush=True)
    if args.open:
        import webbrowser

        webbrowser.open(url)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
