"""``crmarena-gym serve-env``: serve CRMArena as an OpenEnv environment over HTTP and WebSocket."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``serve-env`` subcommand."""
    parser = subparsers.add_parser(
        "serve-env",
        help="serve the environments to LLM trainers (OpenEnv, HTTP and WebSocket)",
        description=(
            "Serve CRMArena episodes as an OpenEnv environment (the openenv extra): POST /reset and /step, "
            "GET /state and /schema, and a WebSocket session per connection at /ws. Listens on the loopback "
            "address only unless --allow-remote is given (the server has no authentication)."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="the port (default 8000; 0 picks a free one)")
    parser.add_argument("--allow-remote", action="store_true", help="allow an address other machines can reach")
    parser.add_argument("--org", metavar="PATH", help="the org database (default: the generated default org)")
    parser.add_argument(
        "--toolset", choices=("functions", "soql", "flex"), default="functions", help="the tools (default functions)"
    )
    parser.add_argument(
        "--framework", choices=("fc", "act", "react"), default="fc", help="the system prompt's flavour (default fc)"
    )
    parser.add_argument("--train-seed", type=int, default=1, help="the seed of the training instances (default 1)")
    parser.add_argument("--per-task", type=int, metavar="N", help="training instances per task (default 130)")
    parser.add_argument("--max-sessions", type=int, default=256, help="the most live episodes at once (default 256)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    try:
        from crmarena_gym.integrations.openenv import HubConfig, check_host, serve
    except ImportError as err:
        print(f"crmarena-gym serve-env: {err}", file=sys.stderr)
        return 2
    try:
        check_host(args.host, allow_remote=args.allow_remote)
        config = HubConfig(
            org=args.org,
            toolset=args.toolset,
            framework=args.framework,
            train_seed=args.train_seed,
            per_task=args.per_task,
            max_sessions=args.max_sessions,
        )
    except ValueError as err:
        print(f"crmarena-gym serve-env: {err}", file=sys.stderr)
        return 2

    def announce(url: str) -> None:
        print(f"serving CRMArena (OpenEnv) on {url} (WebSocket at /ws); Ctrl-C stops it", flush=True)

    try:
        serve(config, host=args.host, port=args.port, allow_remote=args.allow_remote, announce=announce)
    except OSError as err:
        print(f"crmarena-gym serve-env: {err}", file=sys.stderr)
        return 1
    return 0
