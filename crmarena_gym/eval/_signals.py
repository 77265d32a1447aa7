"""A run remembers that it was signalled, so that an interrupt something swallowed still stops it.

Ctrl-C reaches a run as a KeyboardInterrupt raised wherever the main thread happens to be. Some places
swallow it: SQLite's progress callback turns it into an "interrupted" error, which the org answers as a
signal only for the query it times (a statement elsewhere, such as a write or a describe, reports it as an
ordinary failure that the episode goes on from), and a library may catch it. A run then played on to its
last episode and exited 0 as if never stopped. While :func:`watch_signals` is active, SIGINT and SIGTERM
also set a flag that the runner checks before each step and before it records an episode.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Signalled", "watch_signals"]


class Signalled:
    """Whether (and by which signal) the run was stopped; ``is_set`` as :class:`threading.Event` has it.

    A plain attribute, not an Event: a signal handler runs between any two bytecodes of the main thread,
    which may be holding the Event's lock at that moment.
    """

    def __init__(self) -> None:
        self.signum: int | None = None

    def is_set(self) -> bool:
        return self.signum is not None


@contextmanager
def watch_signals() -> Iterator[Signalled]:
    """For the ``with`` block, SIGINT and SIGTERM set the returned flag, then do what they did before.

    Only handlers written in Python are wrapped (the default Ctrl-C handler, a command's SIGTERM handler);
    a signal left at the system's default or ignored keeps that. Outside the main thread, where signals
    cannot be handled, the flag is returned and never set.

    Example:
        >>> with watch_signals() as signalled:
        ...     pass  # the run plays here
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

            def note(received: int, frame: Any, previous: Any = previous) -> None:
                flag.signum = received
                previous(received, frame)

            replaced[signum] = signal.signal(signum, note)
    try:
        yield flag
    finally:
        for signum, previous in replaced.items():
            signal.signal(signum, previous)
