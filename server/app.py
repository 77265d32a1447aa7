"""CRMArena as an OpenEnv environment: the entry point OpenEnv's tools expect (``app: server.app:app``).

``python -m server.app [options]`` serves it as ``crmarena-gym serve-env [options]`` does (the same options;
loopback only unless ``--allow-remote``), with the server's limits on slow and large requests. ``app`` is
the ASGI app for another server (``uvicorn server.app:app``), configured from the environment:
``CRMARENA_ORG`` (an org database; default the embedded org), ``CRMARENA_TOOLSET``, ``CRMARENA_FRAMEWORK``,
``MAX_CONCURRENT_ENVS`` (the most live episodes) and ``CRMARENA_IDLE_TIMEOUT`` (seconds). uvicorn run that
way has no deadline on a request's head: serve with ``python -m server.app`` where clients are untrusted.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from crmarena_gym.cli import main as cli_main

__all__ = ["build_app", "main"]  # and ``app``, made on first use


def build_app() -> Any:
    """The ASGI app, configured from the environment variables above."""
    from crmarena_gym.integrations.openenv import HubConfig, make_app

    options: dict[str, Any] = {}
    for variable, field, kind in (
        ("CRMARENA_ORG", "org", str),
        ("CRMARENA_TOOLSET", "toolset", str),
        ("CRMARENA_FRAMEWORK", "framework", str),
        ("MAX_CONCURRENT_ENVS", "max_sessions", int),
        ("CRMARENA_IDLE_TIMEOUT", "session_timeout", float),
    ):
        value = os.environ.get(variable)
        if value:
            try:
                options[field] = kind(value)
            except ValueError:
                raise ValueError(f"{variable} must be a {kind.__name__}, got {value!r}") from None
    return make_app(HubConfig(**options))


def __getattr__(name: str) -> Any:
    # The app is made on first use (`uvicorn server.app:app`), not when `python -m server.app` imports this.
    if name == "app":
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted (the options of ``crmarena-gym serve-env``)."""
    return cli_main(["serve-env", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
