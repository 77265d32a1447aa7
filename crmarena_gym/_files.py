"""File helpers shared by every layer: an exclusive lock across processes, and atomic writes.

This module sits below the layers (it imports none of them).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (created if missing) while the block runs.

    Processes that ask for the same lock wait their turn, so one of them builds a cached file while
    the others wait and then read it.

    Raises:
        OSError: The lock file cannot be created (for example, a read-only directory).

    Example:
        >>> import tempfile
        >>> with exclusive_lock(Path(tempfile.mkdtemp()) / "x.lock"):
        ...     pass
    """
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file renamed over it, so readers never see half a file.

    Example:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "a.json"
        >>> atomic_write_text(target, "{}").read_text()
        '{}'
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
