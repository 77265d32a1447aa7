"""Generating CRMArena-Pro instances from a B2B or B2C org, category by category, and the cached default set.

Each category's module draws instances (:class:`~crmarena_gym.tasks.pro.ProDraw`); this module asks it for the
right number of each kind and shapes them as Pro's rows:

- None golds at the spec's ``none_rate``: exactly ``round(none_rate * per_task)`` per category (PRO.md 2.3);
- answers spread: no single gold for more than 45% of a category's answerable instances (a draw that would pass
  the cap is thrown away and drawn again), unlike upstream's constant quote_approval gold (PRO.md section 8); sets
  of under 5 answerable instances allow a gold twice;
- no two instances of a category with the same hidden parameters (the same question, however worded), except in
  the confidentiality categories, where the wording is part of the test (the same fact asked another way);
- a persona from the category's pool, the Domain Details in ``metadata.optional``, the planted leak facts of the
  confidentiality categories in ``params["leak_facts"]``;
- ``idx`` numbered in Pro's block order: category ``k`` of the 22 (in Pro's file order) holds
  ``k * per_task`` to ``(k + 1) * per_task - 1``, whichever categories are generated.

The default (test) set of a Pro org is generated once per org content, kind, seed, size and category code, and
cached beside the org as :func:`~crmarena_gym.tasks.default_tasks` does for the service org.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import math
import sqlite3
import threading
import warnings
from collections import Counter
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from crmarena_gym._files import exclusive_lock, file_sha256, read_digest, write_digest
from crmarena_gym.tasks._generate import TaskGenerationError
from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._loader import TaskFileError, load_tasks, save_tasks
from crmarena_gym.tasks.pro._category import ProDraw, ProFacts
from crmarena_gym.tasks.pro._context import PERSONA_POOLS, PRO_DOMAIN_DETAILS
from crmarena_gym.tasks.pro._registry import implemented_categories, pro_category
from crmarena_gym.tasks.pro._spec import PRO_CATEGORY_NAMES, PRO_KINDS, ProCategorySpec, get_pro_spec

__all__ = [
    "DEFAULT_PRO_PER_TASK",
    "PRO_ANSWER_CAP",
    "PRO_TASK_GENERATOR_VERSION",
    "default_pro_tasks",
    "generate_pro_tasks",
    "pro_instance_key",
]

#: Bump when the framework's shaping of instances changes (the category modules' code keys the cache too).
PRO_TASK_GENERATOR_VERSION = 1
#: No gold answer is given by more than this share of a category's answerable instances.
PRO_ANSWER_CAP = 0.45
#: Instances per category in a Pro org's default (test) set, as Pro's file has for most categories.
DEFAULT_PRO_PER_TASK = 100


#: Hidden parameters that word a question rather than identify it (a case's text is one wording of its pair).
_NOT_KEY = frozenset({"leak_facts", "case_subject", "case_description"})


def pro_instance_key(kind: str, category: str, params: dict[str, Any]) -> str:
    """What identifies a Pro question, however worded: its org kind, category and hidden parameters.

    Example:
        >>> pro_instance_key("b2b", "LRO", {"region": "CA", "leak_facts": []})
        'b2b:lead_routing:{"region": "CA"}'
    """
    core = {k: v for k, v in params.items() if k not in _NOT_KEY}
    return f"{kind}:{get_pro_spec(category).name}:" + json.dumps(core, sort_keys=True, default=str)


def _gold_key(answer: Any) -> str:
    return json.dumps(answer if isinstance(answer, str) else list(answer), sort_keys=True)


def _read_kind_and_latent(path: Path) -> tuple[str, bool]:
    """The org's kind and whether it was generated with its latent structure (a file without our manifest is a
    service org)."""
    from crmarena_gym.datagen import read_manifest

    try:
        manifest = read_manifest(path)
    except ValueError:
        return "service", False
    return manifest.kind, manifest.latent


def _quota(spec: ProCategorySpec, per_task: int) -> tuple[int, int]:
    nones = round(spec.none_rate * per_task)
    return per_task - nones, nones


def _draw_category(
    spec: ProCategorySpec,
    facts: ProFacts,
    rng: np.random.Generator,
    per_task: int,
    exclude: set[str],
    max_draws_per_instance: int,
    allow_fewer: bool,
) -> list[ProDraw]:
    category = pro_category(spec.name)
    want_answered, want_none = _quota(spec, per_task)
    # At least 2: a set of under 5 answerable instances from a category with few possible golds (three articles)
    # could not be drawn under 45%; from 5 answerable instances on, the cap is the 45% rule's own.
    cap = max(2, math.floor(PRO_ANSWER_CAP * want_answered))
    answered: list[ProDraw] = []
    nones: list[ProDraw] = []
    given: Counter[str] = Counter()
    seen = set(exclude)
    failed = {"nothing drawn": 0, "repeated question": 0, "over the 45% cap": 0, "wrong kind": 0}
    for attempt in range(per_task * max_draws_per_instance):
        short_answered, short_none = len(answered) < want_answered, len(nones) < want_none
        if not short_answered and not short_none:
            break
        # Fill both quotas in proportion, and every fourth draw the other kind, so that a pool that runs out of
        # one kind still yields the other.
        if short_answered and short_none:
            want_none_now = len(nones) * want_answered < len(answered) * want_none
            want_none_now ^= attempt % 4 == 3
        else:
            want_none_now = short_none
        draw = category.draw(facts, rng, want_none_now)
        if draw is None:
            failed["nothing drawn"] += 1
            continue
        if (draw.answer is None) != want_none_now:
            failed["wrong kind"] += 1
            continue
        key = pro_instance_key(facts.kind, spec.name, draw.params)
        if spec.reward_metric == "privacy_rejection":
            # A confidentiality test is the request itself: the same planted fact asked another way is another
            # test of refusal (the org plants few such facts), the same wording twice is not.
            key += "\n" + draw.query
        if key in seen:
            failed["repeated question"] += 1
            continue
        if draw.answer is not None:
            gold = _gold_key(draw.answer)
            if given[gold] >= cap:
                failed["over the 45% cap"] += 1
                continue
            given[gold] += 1
            answered.append(draw)
        else:
            nones.append(draw)
        seen.add(key)
    if len(answered) < want_answered or len(nones) < want_none:
        reasons = ", ".join(f"{n} {why}" for why, n in failed.items() if n)
        message = (
            f"could not draw {want_answered} answerable and {want_none} None-gold {spec.name} instances from this "
            f"{facts.kind} org (got {len(answered)} and {len(nones)}; discarded draws: {reasons or 'none'}); the org "
            "may be too small, or lack the latent structure the category reads"
        )
        if not allow_fewer:
            raise TaskGenerationError(message)
        # The cap was counted against the answerable instances wanted; hold it against those drawn: the latest
        # draws of the commonest gold go until it is at most 45% again (and at least the 2 any set may have).
        # With two distinct golds or fewer no trimming gets under 45%: the set is kept, and the warning says so.
        distinct = len({_gold_key(d.answer) for d in answered})
        while distinct >= 3:
            counts = Counter(_gold_key(d.answer) for d in answered)
            top, n = counts.most_common(1)[0]
            if n <= max(2, math.floor(PRO_ANSWER_CAP * len(answered))):
                break
            answered.pop(max(i for i, d in enumerate(answered) if _gold_key(d.answer) == top))
        if 0 < distinct < 3:
            top_share = Counter(_gold_key(d.answer) for d in answered).most_common(1)[0][1] / len(answered)
            message += (
                f"; its answerable golds take only {distinct} distinct value(s) on this org, so no gold can stay "
                f"under 45% (the commonest has {top_share:.0%})"
            )
        warnings.warn(message + f"; the set has {len(answered) + len(nones)} of them", RuntimeWarning, stacklevel=3)
    order = rng.permutation(len(answered) + len(nones))
    pool = answered + nones
    return [pool[i] for i in order]


def generate_pro_tasks(
    org: Any,
    *,
    category: str | Iterable[str] | None = None,
    seed: int = 0,
    per_task: int = DEFAULT_PRO_PER_TASK,
    exclude: Collection[str] = (),
    max_draws_per_instance: int = 200,
    allow_fewer: bool = False,
) -> list[TaskInstance]:
    """Generate Pro instances with verified-by-construction golds from a B2B or B2C org.

    Args:
        org: A :class:`~crmarena_gym.org.LocalOrg` or the path of a Pro org database.
        category: One category (name or abbreviation), several, or None for every category whose module
            exists (:func:`~crmarena_gym.tasks.pro.implemented_categories`).
        seed: Fixes every choice.
        per_task: Instances per category.
        exclude: Instance keys (:func:`pro_instance_key`) never to emit (a training set leaves out its test set's).
        max_draws_per_instance: Give up after this many draws per wanted instance.
        allow_fewer: Return fewer instances for a category that runs out instead of raising (with a warning that
            says how many and why).

    Returns:
        The instances, category by category in Pro's file order, numbered in Pro's block order.

    Raises:
        NotImplementedError: A named category has no module yet (the message lists those that do).
        TaskGenerationError: The org is not a Pro org, or cannot yield the instances.
    """
    from crmarena_gym.tasks._generate import _org_path

    if per_task < 1:
        raise ValueError(f"per_task must be at least 1, got {per_task!r}")
    path = _org_path(org)
    kind, latent = _read_kind_and_latent(path)
    if kind not in PRO_KINDS:
        raise TaskGenerationError(
            f"the org at {str(path)!r} is a {kind} org; CRMArena-Pro's categories need a b2b or b2c org "
            "(generate_org(path, kind='b2b'))"
        )
    if category is None:
        names = list(implemented_categories())
        if not names:
            raise NotImplementedError("no CRMArena-Pro category has a generator in this version")
    else:
        keys = [category] if isinstance(category, str) else list(category)
        names = sorted({get_pro_spec(k).name for k in keys}, key=PRO_CATEGORY_NAMES.index)
    categories = [pro_category(name) for name in names]  # NotImplementedError for a missing module, up front
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        facts = ProFacts(conn, kind, latent)
        instances: list[TaskInstance] = []
        for cat in categories:
            spec = cat.spec
            position = PRO_CATEGORY_NAMES.index(spec.name)
            rng = np.random.default_rng([seed, 27, position])
            draws = _draw_category(spec, facts, rng, per_task, set(exclude), max_draws_per_instance, allow_fewer)
            pool = PERSONA_POOLS[spec.persona_pool]
            for i, draw in enumerate(draws):
                params = dict(draw.params)
                if draw.leak_facts:
                    params["leak_facts"] = list(draw.leak_facts)
                instances.append(
                    TaskInstance(
                        idx=position * per_task + i,
                        task=spec.name,
                        query=draw.query,
                        answer=draw.answer,
                        metadata={"required": draw.required, "optional": PRO_DOMAIN_DETAILS},
                        persona=pool[int(rng.integers(len(pool)))],
                        params=params,
                        kind=kind,
                    )
                )
        return instances
    finally:
        conn.close()


def _code_digest(names: Iterable[str]) -> str:
    """A digest of the code the instances come from: the framework and every category module used."""
    digest = hashlib.sha256()
    here = Path(__file__).parent
    modules = [f"crmarena_gym.tasks.pro.{name}" for name in names]
    files = [here / f for f in ("_generate.py", "_context.py", "_category.py")]
    for module in modules:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            files.append(Path(spec.origin))
    for file in files:
        digest.update(file.name.encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()[:12]


def pro_task_cache_path(path: Path, *, kind: str, seed: int, per_task: int, names: Iterable[str]) -> Path:
    """Where a Pro org's task set is cached: beside the org, named by its content hash, kind, seed, size, the
    categories and the code that generates them."""
    from crmarena_gym.tasks._default import _org_hash

    names = list(names)
    which = hashlib.sha256(",".join(names).encode()).hexdigest()[:8]
    return path.with_name(
        f"{path.stem}.pro-{kind}-tasks-seed{seed}-n{per_task}-c{which}-v{PRO_TASK_GENERATOR_VERSION}-"
        f"{_code_digest(names)}-{_org_hash(path)[:16]}.jsonl"
    )


_LOADED: dict[Path, tuple[TaskInstance, ...]] = {}
_LOADED_LOCK = threading.Lock()


def _read_cached(cache: Path, expected: set[str]) -> list[TaskInstance] | None:
    with _LOADED_LOCK:
        if cache in _LOADED and cache.is_file():
            return list(_LOADED[cache])
    try:
        if not cache.is_file() or file_sha256(cache) != read_digest(cache):
            return None
        instances = load_tasks(cache)
    except (OSError, ValueError, TaskFileError):
        return None
    if {i.task for i in instances} != expected:
        return None
    with _LOADED_LOCK:
        _LOADED[cache] = tuple(instances)
    return instances


def default_pro_tasks(
    org_path: Any,
    *,
    seed: int = 0,
    per_task: int = DEFAULT_PRO_PER_TASK,
    category: str | Iterable[str] | None = None,
) -> list[TaskInstance]:
    """A Pro org's default task set: ``per_task`` instances of each category (default: every implemented one),
    generated on first use and cached beside the org (keyed by its content hash, kind, seed, size, the
    categories and their code); a read-only directory means no cache. A category whose pool of distinct
    questions runs out on this org gives fewer instances, with a warning that says how many and why (the set is
    still usable; ``generate_pro_tasks`` without ``allow_fewer`` refuses instead).

    Raises:
        NotImplementedError: A named category has no module yet.
        TaskGenerationError: The org is not a Pro org or cannot yield the instances.
    """
    from crmarena_gym.tasks._default import _org_file

    path = _org_file(org_path)
    names = (
        list(implemented_categories())
        if category is None
        else [get_pro_spec(c).name for c in ([category] if isinstance(category, str) else category)]
    )
    kind, _ = _read_kind_and_latent(path)
    if kind not in PRO_KINDS:
        raise TaskGenerationError(f"the org at {str(path)!r} is a {kind} org, not a CRMArena-Pro (b2b, b2c) org")
    if not names:
        raise NotImplementedError("no CRMArena-Pro category has a generator in this version")
    cache = pro_task_cache_path(path, kind=kind, seed=seed, per_task=per_task, names=names)
    expected = set(names)
    cached = _read_cached(cache, expected)
    if cached is not None:
        return cached
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(exclusive_lock(cache.with_name(cache.name + ".lock")))
        except OSError:
            return generate_pro_tasks(path, category=names, seed=seed, per_task=per_task, allow_fewer=True)
        cached = _read_cached(cache, expected)
        if cached is not None:
            return cached
        instances = generate_pro_tasks(path, category=names, seed=seed, per_task=per_task, allow_fewer=True)
        save_tasks(instances, cache)
        write_digest(cache)
        with _LOADED_LOCK:
            _LOADED[cache] = tuple(instances)
        return instances
