"""The default task set (the test set) and fresh training instances that never collide with it.

The default task set is 130 instances per task drawn with seed 0 from an org (by default the embedded
org, :func:`crmarena_gym.org.default_org_path`). It is generated once and cached as JSON Lines beside
the org, in a file named after the org's content hash, the seed, the size and the generator
versions, so that a changed org or generator never reuses a stale set. The SHA-256 of the file's bytes
is recorded beside it (``.sha256``) when it is written, and a set whose bytes no longer match (a gold
answer edited by hand, a damaged file) is generated again rather than trusted. Several processes may ask
at once: one generates under an exclusive file lock while the others wait, and the file appears by an
atomic rename.

Training instances come from :func:`training_tasks`: the same generators with another seed, minus
every instance whose defining parameters (see :func:`~crmarena_gym.tasks.instance_key`) are those of
a test instance. Two rules keep them apart: the training seed must differ from the test seed (so
the draws differ), and the test set's instance keys are excluded (so that no question of the test
set, however reworded, appears in training).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from crmarena_gym._files import exclusive_lock, file_sha256, read_digest, write_digest
from crmarena_gym.datagen import GENERATOR_VERSION, content_hash, read_manifest
from crmarena_gym.tasks._generate import (
    DEFAULT_DISTRIBUTION,
    TASK_GENERATOR_VERSION,
    Distribution,
    check_distribution,
    generate_tasks,
    instance_key,
)
from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._loader import TaskFileError, load_tasks, save_tasks

__all__ = ["DEFAULT_PER_TASK", "DEFAULT_TASK_SEED", "default_tasks", "task_cache_path", "training_tasks"]

#: The seed of the default (test) task set.
DEFAULT_TASK_SEED = 0
#: Instances per task in the default task set, as in the original benchmark.
DEFAULT_PER_TASK = 130


def _org_file(org: Any) -> Path:
    if org is None:
        from crmarena_gym.org import default_org_path  # generates the embedded org on first use

        return default_org_path()
    path = Path(org) if isinstance(org, str | os.PathLike) else getattr(org, "path", None)
    if path is None:
        raise TypeError(f"expected a LocalOrg or the path of an org database, got a {type(org).__name__}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no org database at {str(path)!r}")
    return path


def _org_hash(path: Path) -> str:
    """The org's content hash: from its manifest when the generator wrote one, else computed."""
    try:
        return read_manifest(path).content_hash
    except ValueError:  # an org not written by the generator (the original's dump): hash its rows
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return content_hash(conn)
        finally:
            conn.close()


def task_cache_path(
    org_path: str | os.PathLike[str],
    *,
    seed: int,
    per_task: int,
    distribution: Distribution = DEFAULT_DISTRIBUTION,
) -> Path:
    """Where the task set of an org, seed, size and distribution is cached: beside the org, named by its
    content hash.

    Example:
        >>> import tempfile, pathlib
        >>> from crmarena_gym.datagen import generate_org
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "org.sqlite"
        >>> _ = generate_org(path, seed=0, scale=0.05)
        >>> cache = task_cache_path(path, seed=0, per_task=130)
        >>> cache.parent == path.parent, cache.name.startswith("org.tasks-seed0-n130-"), cache.suffix
        (True, True, '.jsonl')
    """
    path = Path(org_path)
    digest = _org_hash(path)[:16]
    kind = "" if check_distribution(distribution) == DEFAULT_DISTRIBUTION else f"-{distribution}"
    name = (
        f"{path.stem}.tasks-seed{seed}-n{per_task}{kind}-g{GENERATOR_VERSION}-t{TASK_GENERATOR_VERSION}-{digest}.jsonl"
    )
    return path.with_name(name)


# Task sets already read in this process, by cache file: the file's identity when read, and its instances.
# Instances are frozen models shared by every environment of the process (64 envs hold one copy, and a
# second ``gym.make`` skips parsing); each caller gets a list of its own.
_LOADED: dict[Path, tuple[tuple[int, int, int], tuple[TaskInstance, ...]]] = {}
_LOADED_LOCK = threading.Lock()


def _file_identity(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


def _read_cached(path: Path, per_task: int) -> list[TaskInstance] | None:
    identity = _file_identity(path)
    if identity is None:
        return None
    with _LOADED_LOCK:
        loaded = _LOADED.get(path)
    if loaded is not None and loaded[0] == identity:  # the same file as when it was read
        return list(loaded[1])
    try:
        if file_sha256(path) != read_digest(path):
            return None  # edited or damaged since it was written (or written before digests): regenerated
        instances = load_tasks(path)
    except (OSError, ValueError, TaskFileError):
        return None  # a damaged file is regenerated
    tasks = {inst.task for inst in instances}
    if len(instances) != per_task * len(tasks) or len(tasks) != 9:
        return None
    with _LOADED_LOCK:
        _LOADED[path] = (identity, tuple(instances))
    return instances


def default_tasks(
    org_path: str | os.PathLike[str] | None = None,
    *,
    seed: int = DEFAULT_TASK_SEED,
    per_task: int | None = None,
    distribution: Distribution = DEFAULT_DISTRIBUTION,
) -> list[TaskInstance]:
    """The default task set of an org: ``per_task`` instances of each of the nine tasks (on a CRMArena-Pro org,
    of each Pro category with a generator: :func:`~crmarena_gym.tasks.pro.default_pro_tasks`).

    Generated on first use and cached beside the org (see the module docs); later calls, from any
    process, read the cache, and later calls in the same process share the instances read the first
    time (frozen models; each call returns a new list). When the org's directory is not writable the set
    is generated each time.

    Args:
        org_path: The org database (default: the embedded org, generated on first use).
        seed: The task seed (default 0: the test set).
        per_task: Instances per task (default 130, as in the original; 100 per category on a Pro org).
        distribution: ``"discriminating"`` (default) or ``"legacy"`` (the instances of task generator
            version 2, to reproduce earlier figures); see :func:`~crmarena_gym.tasks.generate_tasks`.

    Returns:
        The instances, numbered 0 to ``9 * per_task - 1`` in the original's task order.

    Raises:
        FileNotFoundError: No org at ``org_path``.
        TaskGenerationError: The org cannot yield the instances (too small, or not a generated org:
            PVI and KQA need the generator's latent variables).
    """
    path = _org_file(org_path)
    from crmarena_gym.tasks._generate import _org_kind

    if _org_kind(path) != "service":  # a CRMArena-Pro org: its categories' default set
        from crmarena_gym.tasks.pro._generate import DEFAULT_PRO_PER_TASK, default_pro_tasks

        return default_pro_tasks(path, seed=seed, per_task=DEFAULT_PRO_PER_TASK if per_task is None else per_task)
    per_task = DEFAULT_PER_TASK if per_task is None else per_task
    cache = task_cache_path(path, seed=seed, per_task=per_task, distribution=distribution)
    cached = _read_cached(cache, per_task)
    if cached is not None:
        return cached
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(exclusive_lock(cache.with_name(cache.name + ".lock")))
        except OSError:
            # A read-only directory: no cache.
            return generate_tasks(path, seed=seed, per_task=per_task, distribution=distribution)
        # Another process may have written the set while this one waited for the lock.
        cached = _read_cached(cache, per_task)
        if cached is not None:
            return cached
        instances = generate_tasks(path, seed=seed, per_task=per_task, distribution=distribution)
        save_tasks(instances, cache)
        write_digest(cache)
        identity = _file_identity(cache)
        if identity is not None:
            with _LOADED_LOCK:
                _LOADED[cache] = (identity, tuple(instances))
        return instances


def training_tasks(
    org: Any = None,
    *,
    seed: int,
    per_task: int | None = None,
    tasks: Iterable[str] | None = None,
    test_seed: int = DEFAULT_TASK_SEED,
    test_per_task: int | None = None,
    distribution: Distribution = DEFAULT_DISTRIBUTION,
) -> list[TaskInstance]:
    """Fresh instances for training, none of which asks a question of the org's test set.

    The test set is :func:`default_tasks` of the same org with ``test_seed`` and ``test_per_task``;
    every instance whose defining parameters match a test instance's is left out. A task whose pool
    of distinct questions runs out returns fewer instances rather than failing: a generated org
    has 144 knowledge facts, of which the test set takes 130, so KQA yields at most 14 training
    instances per org.

    Args:
        org: A :class:`~crmarena_gym.org.LocalOrg` or an org path (default: the embedded org).
        seed: The training seed; must differ from ``test_seed``. Different seeds give different sets
            (which may share instances with each other, never with the test set).
        per_task: Instances per task wanted.
        tasks: Task names or abbreviations (default: all nine).
        test_seed: The seed of the test set to stay clear of.
        test_per_task: The size per task of that test set.
        distribution: The distribution of both the training instances and the test set they stay
            clear of (``"discriminating"`` or ``"legacy"``).

    Raises:
        ValueError: ``seed`` equals ``test_seed``.
    """
    if seed == test_seed:
        raise ValueError(f"the training seed must differ from the test seed {test_seed}, got {seed!r}")
    path = _org_file(org)
    test = default_tasks(path, seed=test_seed, per_task=test_per_task, distribution=distribution)
    from crmarena_gym.tasks.pro._generate import pro_instance_key

    exclude = {
        pro_instance_key(inst.kind, inst.task, inst.params) if inst.is_pro else instance_key(inst.task, inst.params)
        for inst in test
    }
    return generate_tasks(
        path, seed=seed, per_task=per_task, tasks=tasks, exclude=exclude, allow_fewer=True, distribution=distribution
    )
