"""Child processes for tests that signal them: default signal handling restored, and never left running.

A shell may start pytest (and so its children) with SIGINT ignored, as it does for background jobs; a
Python child then ignores Ctrl-C, and a test that sends it SIGINT waits in vain. Children started here
get the default SIGINT and SIGTERM handling back before they run, and :func:`running` stops its child on
the way out whatever happened in the test (SIGINT, then SIGKILL after a grace period).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator
from typing import Any


def _default_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def popen(command: list[str], **kwargs: Any) -> subprocess.Popen:  # type: ignore[type-arg]
    """:class:`subprocess.Popen` with SIGINT and SIGTERM at their default handling in the child."""
    return subprocess.Popen(command, preexec_fn=_default_signals, **kwargs)


@contextlib.contextmanager
def running(command: list[str], *, grace: float = 10.0, **kwargs: Any) -> Iterator[subprocess.Popen]:  # type: ignore[type-arg]
    """Run ``command`` (see :func:`popen`) for the ``with`` block; on leaving, a child still running gets
    SIGINT, then SIGKILL after ``grace`` seconds, so that a failing test leaves no server behind."""
    process = popen(command, **kwargs)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
