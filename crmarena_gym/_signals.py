"""Signals remembered, so that an interrupt something swallowed still stops the program.

Ctrl-C reaches Python as a KeyboardInterrupt raised wherever the main thread happens to be. Some places
swallow it: SQLite's callbacks (the progress handler that times a query, the authorizer that checks each
statement) turn it into an "interrupted" or "not authorized" error, and a library may catch it. An org then
answered the agent an error it never made, and an evaluation played on to its last episode and exited 0.

While :func:`watch_signals` is active (an evaluation, any command of the CLI), SIGINT and SIGTERM are also
counted: the org compares the count around each statement (:func:`received`) and raises KeyboardInterrupt
for a failure a signal caused, and the evaluation runner checks its :class:`Signalled` before each step.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Signalled", "received", "watch_signals"]

# The signals received while watched, in order. A list, not a lock-guarded counter: a handler runs between
# any two bytecodes of the main thread, which may hold that lock; appending is atomic.
_received: list[int] = []


def received() -> int:
    """How many signals have been received while watched: a statement that failed while this changed failed
    because of a signal."""
    return len(_received)


class Signalled:
    """Whether a signal came since this was made; ``is_set`` as :class:`threading.Event` has it."""

    def __init__(self) -> None:
        self._start = len(_received)

    def is_set(self) -> bool:
        return len(_received) > self._start

    @property
    def signum(self) -> int | None:
        """The last signal received since this was made (None when none came)."""
        return _received[-1] if self.is_set() else None


@contextmanager
def watch_signals() -> Iterator[Signalled]:
    """For the ``with`` block, SIGINT and SIGTERM are counted, then do what they did before.

    Only handlers written in Python are wrapped (the default Ctrl-C handler, a command's SIGTERM handler); a
    signal left at the system's default or ignored keeps that. Outside the main thread, where signals cannot
    be handled, nothing changes and the flag is never set by a signal.

    Example:
        >>> with watch_signals() as signalled:
        ...     pass  # the work that a signal may stop
        >>> signalled.is_set()
        False
    """
    flag = Signalled()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    replaced: dict[int, Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(signum)
        if callable(previous):

            def note(got: int, frame: Any, previous: Any = previous) -> None:
                _received.append(got)
                previous(got, frame)

            replaced[signum] = signal.signal(signum, note)
    try:
        yield flag
    finally:
        for signum, previous in replaced.items():
            signal.signal(signum, previous)
