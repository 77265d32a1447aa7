"""The embedded default org: generated once into a cache directory, then reused.

The cache directory is ``$CRMARENA_GYM_CACHE`` if set, else ``$XDG_CACHE_HOME/crmarena-gym``, else
``~/.cache/crmarena-gym``. Files are named after the generator version, seed and scale, so a
newer generator never reuses an older org. Several processes may ask at once: one generates under
an exclusive file lock while the others wait, and the org appears by an atomic rename.

A cached org is trusted only once the whole file has been checked, before its first use in a process and
again whenever the file changes (its size, modification or change time, or inode): SQLite's structure check
(``PRAGMA quick_check``) and the SHA-256 of the file's bytes, which must equal the digest recorded when the
generator wrote it. The digest is kept beside the file (``NAME.sqlite.sha256``), never in it: the manifest
inside the file cannot vouch for the file (an edit of the rows that also updates the manifest's content
hash still changes the bytes). Any byte changed anywhere, an index page as much as a row, makes the file
untrusted, and it is regenerated; an org cached without a digest (by an older version) is regenerated once.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from crmarena_gym._console import interactive, progress_bar
from crmarena_gym._files import exclusive_lock, file_sha256, read_digest, write_digest
from crmarena_gym.datagen import (
    GENERATOR_VERSIONS,
    PERTURBATION_VERSION,
    Perturbation,
    generate_org,
    perturb_org,
    perturbation_hash,
    read_manifest,
    validate_seed_scale,
)
from crmarena_gym.schema import DEFAULT_KIND, check_kind

CACHE_ENV = "CRMARENA_GYM_CACHE"


class CacheError(OSError):
    """The embedded org cannot be made in the cache directory (no space, no permission); the message
    says where and how to choose another directory."""


def cache_dir() -> Path:
    """The directory that holds generated orgs and saved parsers (see the module docs for how it is chosen)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "crmarena-gym"


def _file_name(seed: int, scale: float, kind: str = DEFAULT_KIND) -> str:
    # The service org keeps the name it had before there were kinds.
    prefix = "org" if kind == DEFAULT_KIND else f"org-{kind}"
    return f"{prefix}-v{GENERATOR_VERSIONS[kind]}-seed{seed}-scale{scale:g}.sqlite"


# Files checked in this process, by path: the identity they had when checked. A file whose identity is the
# same has not been written since (a write changes the change time, which no one can set back).
_CHECKED: dict[Path, tuple[int, ...]] = {}
_CHECKED_LOCK = threading.Lock()


# A file written this recently may be written again within the same tick of the file system's clock without
# its times changing (they are coarse: a few milliseconds, two seconds on some): it is checked every time
# until its times are older than this.
_RACY_NS = 2_000_000_000


def _identity(path: Path) -> tuple[int, ...]:
    stat = path.stat()
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _remember(path: Path, identity: tuple[int, ...]) -> None:
    """Trust ``path`` in this process while its identity stays ``identity`` (taken before its check), unless
    it was written too recently for its times to tell a later write."""
    if time.time_ns() - max(identity[3], identity[4]) > _RACY_NS:
        with _CHECKED_LOCK:
            _CHECKED[path] = identity


def _file_sound(path: Path) -> bool:
    """Whether the file's bytes hash to the digest recorded beside it and SQLite finds its structure sound."""
    expected = read_digest(path)
    if expected is None or file_sha256(path) != expected:
        return False
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False


def _is_valid(path: Path, seed: int, scale: float, kind: str = DEFAULT_KIND) -> bool:
    """Whether ``path`` holds a complete, undamaged org of this kind, generator version, seed and scale."""
    try:
        identity = _identity(path)
    except OSError:
        return False
    with _CHECKED_LOCK:
        if _CHECKED.get(path) == identity:
            return True
    if not _file_sound(path):
        return False
    try:
        manifest = read_manifest(path)
    except (OSError, ValueError):
        return False
    if (manifest.kind, manifest.generator_version, manifest.seed, manifest.scale, manifest.latent) != (
        kind,
        GENERATOR_VERSIONS[kind],
        seed,
        scale,
        True,
    ):
        return False
    _remember(path, identity)  # as it was before the check: a write during it is checked next time
    return True


def _record(path: Path) -> None:
    """Record the digest of a file just generated (and trust it in this process)."""
    identity = _identity(path)
    write_digest(path)
    path.with_name(path.name + ".verified").unlink(missing_ok=True)  # an older version's record, no longer read
    _remember(path, identity)


class _GenerationProgress:
    """Draws the generator's progress (percent done and the stage) as a ``tqdm`` bar on stderr."""

    def __init__(self, label: str) -> None:
        self.bar = progress_bar(100, label, unit="%")

    def __call__(self, stage: str, fraction: float) -> None:
        self.bar.set_postfix_str(stage, refresh=False)
        self.bar.update(max(0, round(100 * min(fraction, 1.0)) - self.bar.n))
        if fraction >= 1.0:
            self.bar.close()


def default_org_path(*, seed: int = 0, scale: float = 1.0, kind: str = DEFAULT_KIND) -> Path:
    """The path of the embedded org of ``kind`` for ``seed`` and ``scale``, generating it on first use.

    Safe to call from several processes at once: they share one file. A cached file whose
    manifest does not match (another generator version, a truncated file) is regenerated. While
    generating, a progress bar is drawn on stderr when stderr is a terminal or a notebook's output.

    Args:
        seed: The org seed.
        scale: The customer-volume scale (1.0: the original's size).
        kind: The org kind: ``service`` (CRMArena's org, the default), ``b2b`` or ``b2c`` (CRMArena-Pro's).

    Raises:
        ValueError: ``seed``, ``scale`` or ``kind`` is invalid.

    Example:
        >>> import tempfile
        >>> getfixture("monkeypatch").setenv("CRMARENA_GYM_CACHE", tempfile.mkdtemp())
        >>> path = default_org_path(seed=3, scale=0.05)
        >>> path.name == f"org-v{GENERATOR_VERSIONS['service']}-seed3-scale0.05.sqlite", path.parent == cache_dir()
        (True, True)
        >>> b2b = default_org_path(seed=3, scale=0.05, kind="b2b")
        >>> b2b.name == f"org-b2b-v{GENERATOR_VERSIONS['b2b']}-seed3-scale0.05.sqlite"
        True
    """
    seed, scale = validate_seed_scale(seed, scale)
    kind = check_kind(kind)
    directory = cache_dir()
    path = directory / _file_name(seed, scale, kind)
    if _is_valid(path, seed, scale, kind):
        return path
    try:
        directory.mkdir(parents=True, exist_ok=True)
        lock_path = path.with_name(path.name + ".lock")
        with exclusive_lock(lock_path):
            # Another process may have finished the org while this one waited for the lock.
            if not _is_valid(path, seed, scale, kind):
                # A library call draws only where a person watches (a terminal or a notebook), not in logs.
                progress = None
                if interactive():
                    what = "org" if kind == DEFAULT_KIND else f"{kind} org"
                    progress = _GenerationProgress(f"generating {what} (seed {seed}, scale {scale:g})")
                try:
                    generate_org(path, kind=kind, seed=seed, scale=scale, latent=True, progress=progress)
                finally:
                    if progress is not None:
                        progress.bar.close()
                _record(path)
    except OSError as exc:
        raise CacheError(
            f"cannot make the embedded org in the cache directory {str(directory)!r} "
            f"({exc.strerror or exc}); it needs about {max(1, round(7 * scale))} MB there: free some space, "
            f"or set {CACHE_ENV} to a writable directory with room"
        ) from None
    return path


def perturbed_org_path(base: str | os.PathLike[str], perturbations: list[Any]) -> Path:
    """The perturbed org of ``base`` under ``perturbations`` in the cache directory, made on first use.

    The file is named after the transforms' version, the base org's content hash and the perturbations' hash
    (so a changed transform, base or spec never reuses a stale file), made under an exclusive lock, and
    trusted by its recorded digest as the embedded org is.

    Args:
        base: A generated org file.
        perturbations: ``datagen.Perturbation`` objects or their dicts, applied in order.

    Raises:
        ValueError: A perturbation is invalid, or ``base`` is not a generated org.
        FileNotFoundError: No file at ``base``.
        CacheError: The cache directory cannot hold the file.
    """
    specs = [p if isinstance(p, Perturbation) else Perturbation.model_validate(p) for p in perturbations]
    base_hash = read_manifest(base).content_hash
    directory = cache_dir()
    path = directory / f"perturbed-v{PERTURBATION_VERSION}-{base_hash[:16]}-{perturbation_hash(specs)[:16]}.sqlite"

    def sound() -> bool:
        return path.is_file() and _file_sound(path) and read_manifest(path).base_content_hash is not None

    if sound():
        return path
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(path.with_name(path.name + ".lock")):
            if not sound():
                partial = path.with_name(path.name + f".{os.getpid()}.partial")
                perturb_org(base, partial, specs)
                os.replace(partial, path)
                _record(path)
    except OSError as exc:
        raise CacheError(
            f"cannot make the perturbed org in the cache directory {str(directory)!r} ({exc.strerror or exc}); "
            f"set {CACHE_ENV} to a writable directory with room"
        ) from None
    return path
