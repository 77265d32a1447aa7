"""The ``crmarena-gym`` command line."""

from __future__ import annotations

from crmarena_gym.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
