"""Entry point of the ``crmarena-gym`` command: one subcommand per module."""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import logging
import os
import signal
import sqlite3
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from crmarena_gym import __version__
from crmarena_gym._secrets import redacted_output
from crmarena_gym._signals import watch_signals
from crmarena_gym.cli._voice import EXIT_CODES

# Each module defines ``register(subparsers)`` which adds its subcommand and sets ``func``.
_COMMAND_MODULES = (
    "crmarena_gym.cli._generate",
    "crmarena_gym.cli._perturb",
    "crmarena_gym.cli._query",
    "crmarena_gym.cli._tasks",
    "crmarena_gym.cli._eval",
    "crmarena_gym.cli._report",
    "crmarena_gym.cli._serve",
    "crmarena_gym.cli._serve_org",
    "crmarena_gym.cli._view",
    "crmarena_gym.cli._experiment",
    "crmarena_gym.cli._fetch",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    import importlib

    parser = argparse.ArgumentParser(
        prog="crmarena-gym",
        description="CRMArena as Gymnasium environments over an embedded Salesforce-like org.",
        epilog=EXIT_CODES,
    )
    parser.add_argument("--version", action="version", version=f"crmarena-gym {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in _COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    if argv is None:  # the command itself (code that passes arguments, such as tests, keeps its collector as is)
        # What the imports made lives until the process ends: out of the collector's sight, a command's
        # collections no longer walk the whole import-time heap (about 30 ms of an `eval --limit 1`).
        gc.freeze()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    args.argv = list(argv) if argv is not None else sys.argv[1:]  # to print the command that resumes a run
    previous = _stop_on_sigterm()
    # No key given on the command line (--api-base ...?key=), in the environment or echoed by a provider
    # reaches the terminal. Signals are watched, so that one SQLite swallowed still stops the command.
    with redacted_output(), watch_signals():
        return _run(args, previous)


def _run(args: argparse.Namespace, previous: Any) -> int:
    try:
        with _speaking_as(args.command):
            code = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader that left shows up here, not at exit
        return code
    except KeyboardInterrupt:
        signum = _received.pop() if _received else signal.SIGINT
        print(f"crmarena-gym: stopped by {signal.Signals(signum).name}", file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        return _closed_pipe()
    except (OSError, sqlite3.OperationalError) as err:
        # Whatever a command did not answer itself (a full disk under the org cache, a directory it cannot
        # write): one line saying what and where, never a traceback.
        print(f"crmarena-gym {args.command}: {one_line(err)}", file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _say(line: str) -> None:
    """Print one line on stderr above any progress bar (tqdm redraws it underneath)."""
    if "tqdm" in sys.modules:
        from tqdm import tqdm

        tqdm.write(line, file=sys.stderr)
    else:
        print(line, file=sys.stderr, flush=True)


class _CommandVoice(logging.Handler):
    """Prints a record as ``crmarena-gym COMMAND: message``, one line."""

    def __init__(self, command: str) -> None:
        super().__init__(logging.INFO)
        self.command = command

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _say(f"crmarena-gym {self.command}: {' '.join(record.getMessage().split())}")
        except Exception:  # never let a notice stop the command
            self.handleError(record)


@contextlib.contextmanager
def _speaking_as(command: str) -> Iterator[None]:
    """While the command runs, its notices speak as it does: a model call being retried
    (``crmarena-gym eval: gpt-4o: RateLimitError ...; retry 1 of 6 in 2.1 s``) and Python warnings
    (``crmarena-gym tasks: warning: could not draw 100 ...``), one line each, instead of a bare message or a
    warning's file, line and source."""
    from crmarena_gym._llm import RETRY_LOG

    handler = _CommandVoice(command)
    propagate = RETRY_LOG.propagate
    RETRY_LOG.addHandler(handler)
    RETRY_LOG.propagate = False

    def show(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
        _say(f"crmarena-gym {command}: warning: {' '.join(str(message).split())}")

    try:
        with warnings.catch_warnings():
            warnings.showwarning = show
            yield
    finally:
        RETRY_LOG.removeHandler(handler)
        RETRY_LOG.propagate = propagate


# The signal that stopped the command, when it was not Ctrl-C's SIGINT.
_received: list[int] = []


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM stops the command as Ctrl-C does, so that it cleans up and says how to go on."""
    _received.append(signum)
    raise KeyboardInterrupt


def _stop_on_sigterm() -> Any:
    """Route SIGTERM through KeyboardInterrupt while the command runs; the handler it replaced."""
    if threading.current_thread() is not threading.main_thread():
        return None  # signals can only be handled in the main thread (a command run from a test's thread)
    return signal.signal(signal.SIGTERM, _terminate)


def one_line(err: BaseException) -> str:
    """An OSError (or SQLite's error for one) in one line: what went wrong and, when known, the file.

    Example:
        >>> import errno
        >>> one_line(OSError(errno.ENOSPC, "No space left on device", "/data/run/results.jsonl"))
        "cannot use '/data/run/results.jsonl': No space left on device (free some space, or choose another place)"
        >>> one_line(sqlite3.OperationalError("database or disk is full"))
        'database or disk is full (free some space, or choose another place)'
    """
    full = (isinstance(err, OSError) and err.errno == errno.ENOSPC) or "disk is full" in str(err)
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        text = f"cannot use {os.fsdecode(err.filename)!r}: {err.strerror}"
    else:
        text = str(err) or type(err).__name__
    text = " ".join(text.split())  # one line, whatever the message held
    return text + (" (free some space, or choose another place)" if full else "")


def _closed_pipe() -> int:
    """The reader of our output went away (``crmarena-gym tasks list | head``): stop quietly, as Unix tools do.

    Python would report the failed flush of stdout again at exit; pointing stdout at /dev/null prevents it.
    The exit status is the shell's for a process killed by SIGPIPE.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (a test's capture): nothing will flush it
        pass
    return 128 + 13  # SIGPIPE
