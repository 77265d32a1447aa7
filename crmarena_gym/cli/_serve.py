"""``crmarena-gym serve-env``: serve CRMArena as an OpenEnv environment over HTTP and WebSocket."""

from __future__ import annotations

import argparse
import sys

from crmarena_gym._net import PortUnavailableError
from crmarena_gym.cli._voice import PORT_HINT


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``serve-env`` subcommand."""
    parser = subparsers.add_parser(
        "serve-env",
        help="serve the environments to LLM trainers (OpenEnv, HTTP and WebSocket)",
        description=(
            "Serve CRMArena episodes as an OpenEnv environment (the openenv extra): POST /reset and /step, "
            "GET /state and /schema, a WebSocket session per connection at /ws, the tools as MCP at /mcp "
            "(tools/list, tools/call), GET /health and /metrics (Prometheus). A session's unfinished episode is "
            "dropped when it resets or leaves, and any unfinished episode after --idle-timeout seconds without "
            "an action. Listens on the loopback address only unless --allow-remote is given (the server has no "
            "authentication)."
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
    parser.add_argument(
        "--user",
        metavar="KIND",
        help=(
            "serve conversations with a simulated user: 'scripted' (the same conversation every time) or "
            "'litellm:MODEL'; the agent talks with the respond tool (default: single-turn episodes)"
        ),
    )
    parser.add_argument("--max-sessions", type=int, default=256, help="the most live episodes at once (default 256)")
    parser.add_argument(
        "--max-connections",
        type=int,
        metavar="N",
        help="the most WebSocket connections and MCP sessions at once (default: twice --max-sessions)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=_positive_seconds,
        default=600.0,
        metavar="SECONDS",
        help="drop an unfinished episode after this long without an action (default 600)",
    )
    parser.add_argument(
        "--request-timeout",
        type=_positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="the most time a request's head, and then its body, may take to arrive (default 30)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=1 << 20,
        metavar="N",
        help="the largest request body and WebSocket message (default 1048576)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    try:
        from crmarena_gym.integrations.openenv import HubConfig, ServerLimits, check_host, serve
    except ImportError as err:
        print(f"crmarena-gym serve-env: {err}", file=sys.stderr)
        return 2
    from crmarena_gym.users import LLMUser, LLMUserError, make_user

    try:
        check_host(args.host, allow_remote=args.allow_remote)
        if args.user is not None:
            user = make_user(args.user)
            if isinstance(user, LLMUser):
                user.check_ready()  # else every reset would answer an internal error after the model refused
        config = HubConfig(
            org=args.org,
            toolset=args.toolset,
            framework=args.framework,
            train_seed=args.train_seed,
            per_task=args.per_task,
            user=args.user,
            max_sessions=args.max_sessions,
            session_timeout=args.idle_timeout,
        )
        limits = ServerLimits(
            max_body_bytes=args.max_body_bytes,
            request_timeout=args.request_timeout,
            max_connections=args.max_connections,
        )
    except (ValueError, LLMUserError) as err:
        print(f"crmarena-gym serve-env: {err}", file=sys.stderr)
        return 2

    def announce(url: str) -> None:
        print(f"serving CRMArena (OpenEnv) on {url} (WebSocket at /ws); Ctrl-C stops it", flush=True)

    try:
        serve(config, host=args.host, port=args.port, allow_remote=args.allow_remote, limits=limits, announce=announce)
    except PortUnavailableError as err:  # refused before serving anything, as view refuses it
        print(f"crmarena-gym serve-env: {err} ({PORT_HINT})", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"crmarena-gym serve-env: {err}", file=sys.stderr)
        return 1
    return 0
