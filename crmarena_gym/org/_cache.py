"""The embedded default org: generated once into a cache directory, then reused.

The cache directory is ``$CRMARENA_GYM_CACHE`` if set, else ``$XDG_CACHE_HOME/crmarena-gym``, else
``~/.cache/crmarena-gym``. Files are named after the org kind, its generator version, the seed and the scale
(``org-v4-seed0-scale1.sqlite`` for the service org, ``org-b2b-v1-seed0-scale1.sqlite`` for Pro's B2B org), so a
newer generator never reuses an older org. Several processes may ask at once: one generates under
an exclusive file lock while the others wait, and the org appears by an atomic rename.

A cached org is trusted only once its content has been checked against its manifest: SQLite's structure
check and the SHA-256 of its rows (:func:`~crmarena_gym.datagen.content_hash`) must agree with what the
generator recorded. The check is remembered in a ``.verified`` file beside the org, keyed by the file's
size, modification time and inode, so that it runs again only when the file changes (a damaged or
edited file is regenerated). Damage that leaves all three unchanged (the disk itself rotting under an
unmodified file) is not looked for on every use: delete the ``.verified`` file to force the check.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from crmarena_gym._console import interactive, progress_bar
from crmarena_gym._files import atomic_write_text, exclusive_lock
from crmarena_gym.datagen import (
    GENERATOR_VERSIONS,
    content_hash,
    generate_org,
    read_manifest,
    validate_seed_scale,
)
from crmarena_gym.schema import DEFAULT_KIND, check_kind, quote_identifier

CACHE_ENV = "CRMARENA_GYM_CACHE"


class CacheError(OSError):
    """The embedded org cannot be made in the cache directory (no space, no permission); the message
    says where and how to choose another directory."""


def cache_dir() -> Path:
    """The directory that holds generated orgs (see the module docs for how it is chosen)."""
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


def _verified_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _verified_record(path: Path, digest: str) -> dict[str, object]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino, "content_hash": digest}


def _remember_verified(path: Path, digest: str) -> None:
    try:
        atomic_write_text(_verified_path(path), json.dumps(_verified_record(path, digest)))
    except OSError:  # a read-only cache: the check runs again next time, nothing is lost
        pass


def _checked_before(path: Path, digest: str) -> bool:
    try:
        return json.loads(_verified_path(path).read_text(encoding="utf-8")) == _verified_record(path, digest)
    except (OSError, ValueError):
        return False


def _content_matches(
    path: Path, row_counts: dict[str, int], digest: str, kind: str = DEFAULT_KIND, hidden: tuple[str, ...] = ()
) -> bool:
    """Whether SQLite finds the file sound and its rows hash to ``digest`` (seconds at scale 10)."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            if conn.execute("PRAGMA quick_check").fetchall() != [("ok",)]:
                return False
            for table, count in row_counts.items():  # cheap, and names a missing table before hashing
                (found,) = conn.execute(f"SELECT COUNT(*) FROM {quote_identifier(table)}").fetchone()
                if found != count:
                    return False
            return content_hash(conn, kind, hidden) == digest
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False


def _is_valid(path: Path, seed: int, scale: float, kind: str = DEFAULT_KIND) -> bool:
    """Whether ``path`` holds a complete, undamaged org of this kind, generator version, seed and scale."""
    if not path.is_file():
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
    if _checked_before(path, manifest.content_hash):
        return True
    counts = {**manifest.row_counts, **manifest.hidden_row_counts}
    if not _content_matches(path, counts, manifest.content_hash, kind, tuple(manifest.hidden_row_counts)):
        return False
    _remember_verified(path, manifest.content_hash)
    return True


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
        >>> default_org_path(seed=3, scale=0.05, kind="b2b").name
        'org-b2b-v1-seed3-scale0.05.sqlite'
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
                    manifest = generate_org(path, kind=kind, seed=seed, scale=scale, latent=True, progress=progress)
                finally:
                    if progress is not None:
                        progress.bar.close()
                # The generator hashed the rows it wrote: no need to read them again.
                _remember_verified(path, manifest.content_hash)
    except OSError as exc:
        raise CacheError(
            f"cannot make the embedded org in the cache directory {str(directory)!r} "
            f"({exc.strerror or exc}); it needs about {max(1, round(7 * scale))} MB there: free some space, "
            f"or set {CACHE_ENV} to a writable directory with room"
        ) from None
    return path
