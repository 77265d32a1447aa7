"""``crmarena-gym serve-org``: serve the embedded org as Salesforce's REST API on this machine."""

from __future__ import annotations

import argparse
import sys

from crmarena_gym._net import PortUnavailableError
from crmarena_gym.cli._voice import PORT_HINT


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``serve-org`` subcommand."""
    parser = subparsers.add_parser(
        "serve-org",
        help="serve the embedded org as Salesforce's REST API (simple-salesforce and any client run offline)",
        description=(
            "Serve the embedded org as Salesforce's REST API (the serve extra): query, queryAll, search, sobjects "
            "(describe, get, create, update, upsert, delete, updated, deleted), composite, composite/batch, "
            "composite/tree, composite/sobjects, limits, Bulk API 2.0 ingest and query jobs, and OAuth (the "
            "username-password token endpoint, revoke, userinfo, the identity URL). Every session id is an isolated "
            "copy-on-write session: its writes are seen by its own queries only, and the org file never changes. "
            "Without --persist a restart loses every session's writes and tokens. https with a self-signed "
            "certificate unless --http."
        ),
    )
    parser.add_argument("--org", metavar="PATH", help="the org database (default: the generated default org)")
    parser.add_argument(
        "--kind",
        choices=("service", "b2b", "b2c"),
        default=None,
        help="without --org: serve the generated default org of this kind (default service; b2b and b2c are "
        "CRMArena-Pro's, served for queries, searches and describes); with --org: the kind the file must be",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8443, help="the port (default 8443; 0 picks a free one)")
    parser.add_argument("--token", metavar="T", help="a session id valid from the start (default: a random one)")
    parser.add_argument("--password", metavar="P", help="the password of the token endpoint (default: a random one)")
    parser.add_argument("--http", action="store_true", help="plain http instead of https")
    parser.add_argument("--cert-dir", metavar="DIR", help="where the self-signed certificate is kept")
    parser.add_argument("--today", metavar="DATE", help="the date TODAY and LAST_N_DAYS resolve against (ISO)")
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=64,
        help="the most sessions in memory (default 64); past it the least recently used idle one ends (with "
        "--persist it is only unloaded to disk)",
    )
    parser.add_argument(
        "--persist",
        metavar="DIR",
        help="keep sessions' writes and tokens in DIR across restarts (SQLite, WAL: a killed server loses no "
        "acknowledged write); off by default",
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=7200,
        metavar="S",
        help="seconds of inactivity that end a session (default 7200, Salesforce's two hours; 0: never)",
    )
    parser.add_argument(
        "--session-storage-mb",
        type=float,
        default=64,
        metavar="MB",
        help="the most megabytes of records one session holds (default 64; each record counts at least 2 KB)",
    )
    parser.add_argument(
        "--cursor-mb", type=float, default=256, metavar="MB", help="the most megabytes all query cursors hold (256)"
    )
    parser.add_argument("--max-connections", type=int, default=1000, help="the most open connections (default 1000)")
    parser.add_argument(
        "--max-connections-per-client",
        type=int,
        default=None,
        metavar="N",
        help="the most open connections from one address (default: --max-connections)",
    )
    parser.add_argument("--allow-remote", action="store_true", help="allow an address other machines can reach")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    try:
        from crmarena_gym.org.serve import OrgServer, SessionHub
    except ImportError as err:
        print(f"crmarena-gym serve-org: {err} (pip install 'crmarena-gym[serve]')", file=sys.stderr)
        return 2
    from crmarena_gym.org import default_org_path

    if not 0 <= args.port <= 65535:
        print(f"crmarena-gym serve-org: --port must be 0 to 65535, got {args.port}", file=sys.stderr)
        return 2
    for name in ("session_storage_mb", "cursor_mb"):
        if not getattr(args, name) > 0:
            print(f"crmarena-gym serve-org: --{name.replace('_', '-')} must be positive", file=sys.stderr)
            return 2
    kind = getattr(args, "kind", None)
    if args.org is not None and kind is not None:
        from crmarena_gym.org import LocalOrg

        try:
            with_kind = LocalOrg(args.org)
        except (ValueError, FileNotFoundError) as err:
            print(f"crmarena-gym serve-org: {err}", file=sys.stderr)
            return 2
        found = with_kind.kind
        with_kind.close()
        if found != kind:
            print(f"crmarena-gym serve-org: --org {args.org!r} is a {found} org, not a {kind} org", file=sys.stderr)
            return 2
    try:
        hub = SessionHub(
            args.org or default_org_path(kind=kind or "service"),
            password=args.password,
            token=args.token,
            max_sessions=args.max_sessions,
            today=args.today,
            session_timeout=args.session_timeout,
            persist=args.persist,
            session_storage=max(2048, int(args.session_storage_mb * 2**20)),
            cursor_bytes=int(args.cursor_mb * 2**20),
        )
    except (ValueError, OSError) as err:
        print(f"crmarena-gym serve-org: {err}", file=sys.stderr)
        return 2
    try:
        server = OrgServer(
            hub,
            host=args.host,
            port=args.port,
            tls=not args.http,
            cert_dir=args.cert_dir,
            allow_remote=args.allow_remote,
            max_connections=args.max_connections,
            max_connections_per_client=args.max_connections_per_client,
        )
    except ValueError as err:
        hub.close()
        print(f"crmarena-gym serve-org: {err}", file=sys.stderr)
        return 2
    except PortUnavailableError as err:  # refused before serving anything, as view refuses it
        hub.close()
        print(f"crmarena-gym serve-org: {err} ({PORT_HINT})", file=sys.stderr)
        return 2
    except OSError as err:
        hub.close()
        print(f"crmarena-gym serve-org: {err}", file=sys.stderr)
        return 1
    what = "the org" if hub.base.kind == "service" else f"the {hub.base.kind} org"
    print(f"serving {what} {str(hub.base.path)!r} as Salesforce on {server.url}; Ctrl-C stops it", flush=True)
    print(f"  session id:  {hub.token}")
    print(f"  token endpoint: POST {server.url}/services/oauth2/token (grant_type=password, any username, "
          f"password {hub.password})")  # fmt: skip
    if server.cert is not None:
        print(f"  certificate: {server.cert} (clients: REQUESTS_CA_BUNDLE={server.cert})")
    print(f"  simple_salesforce.Salesforce(instance_url={server.url!r}, session_id={hub.token!r})", flush=True)
    if hub.persist is None:
        print(
            "  sessions live in memory: a restart loses their writes and tokens (--persist DIR keeps them)", flush=True
        )
    else:
        print(f"  sessions persist in {str(hub.persist)!r}: their writes and tokens outlive a restart", flush=True)
    server.run()
    return 0
