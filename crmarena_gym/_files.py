"""File helpers shared by every layer: an exclusive lock across processes, atomic writes, and a file's digest
kept beside it.

This module sits below the layers (it imports none of them). On POSIX systems the lock is ``flock`` on
the lock file; elsewhere, and wherever ``flock`` cannot be had (a file system without it, a lock file that
cannot be opened for writing), it is the ``filelock`` library's, imported only then (its import pulls in
``asyncio``: about 25 ms of every command's start-up).
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


class LockHeldError(OSError):
    """Another process holds the lock asked for without waiting (``exclusive_lock(..., blocking=False)``)."""


@contextmanager
def exclusive_lock(path: str | os.PathLike[str], *, blocking: bool = True) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (created if missing) while the block runs.

    Processes that ask for the same lock wait their turn, so one of them builds a cached file while
    the others wait and then read it. With ``blocking=False`` the lock is taken only if it is free;
    otherwise :class:`LockHeldError` is raised at once.

    Raises:
        OSError: The lock file cannot be created (for example, a read-only directory).
        LockHeldError: ``blocking=False`` and another process (or another open of the file) holds it.

    Example:
        >>> import tempfile
        >>> lock = Path(tempfile.mkdtemp()) / "x.lock"
        >>> with exclusive_lock(lock):  # doctest: +ELLIPSIS
        ...     with exclusive_lock(lock, blocking=False):
        ...         pass
        Traceback (most recent call last):
        ...
        crmarena_gym._files.LockHeldError: ... is locked by another process
    """
    fd = _flock(path, blocking) if fcntl is not None else None
    if fd is None:
        with _filelock(path, blocking):
            yield
        return
    try:
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _held(path: str | os.PathLike[str]) -> LockHeldError:
    return LockHeldError(f"{os.fspath(path)!r} is locked by another process")


def _flock(path: str | os.PathLike[str], blocking: bool) -> int | None:
    """An open descriptor of ``path`` holding ``flock``'s exclusive lock; None where flock cannot be had."""
    try:
        # Opened anew per call: two opens in one process conflict as separate processes would.
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a missing directory, another user's file in a sticky directory ...: filelock copes
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if not blocking and exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            raise _held(path) from None
        return None  # a file system without flock (ENOSYS, EOPNOTSUPP, ENOLCK ...)
    except BaseException:  # interrupted while waiting
        os.close(fd)
        raise
    return fd


@contextmanager
def _filelock(path: str | os.PathLike[str], blocking: bool) -> Iterator[None]:
    from filelock import FileLock, Timeout

    # A new FileLock object per call: nested calls in one process conflict as separate processes would.
    lock = FileLock(os.fspath(path), timeout=-1 if blocking else 0)
    try:
        lock.acquire()
    except Timeout:
        raise _held(path) from None
    try:
        yield
    finally:
        lock.release()


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


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes (read in chunks: an org file may be hundreds of megabytes).

    Example:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "a.txt"
        >>> _ = target.write_bytes(b"abc")
        >>> file_sha256(target)[:16]
        'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def digest_path(path: str | os.PathLike[str]) -> Path:
    """Where the expected SHA-256 of a cached file is kept: beside it (``NAME.sha256``), not in it, so that an
    edit of the file cannot also vouch for itself."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def write_digest(path: str | os.PathLike[str]) -> str:
    """Record the SHA-256 of ``path``'s bytes in :func:`digest_path` (atomically); return it."""
    digest = file_sha256(path)
    atomic_write_text(digest_path(path), digest + "\n")
    return digest


def read_digest(path: str | os.PathLike[str]) -> str | None:
    """The SHA-256 recorded for ``path`` by :func:`write_digest`; None if there is none (or it is unreadable)."""
    try:
        text = digest_path(path).read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return None
    return text if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else None
