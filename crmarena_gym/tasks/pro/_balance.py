"""Spreading a category's golds: draw again, and thin out the golds a small org would otherwise repeat.

A small org (the B2B one has about 150 cases) makes some answers far likelier than others: the agent who
transfers most, the busiest state. :func:`retry` repeats a cheap attempt a few times inside one draw, and
:func:`thin` refuses a share of the draws whose gold is frequent, from a pilot run over the same org, so that no
gold answers much more than ``cap`` of a category's instances.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

from crmarena_gym.tasks.pro._category import ProFacts

T = TypeVar("T")

#: The seed of the pilot runs (one per org and category; the pilot only estimates how often each gold comes).
PILOT_SEED = 20_240_527


def retry(attempt: Callable[[], T | None], times: int) -> T | None:
    """The first of ``times`` calls of ``attempt`` that is not None, or None."""
    for _ in range(times):
        found = attempt()
        if found is not None:
            return found
    return None


def gold_shares(
    facts: ProFacts, key: str, attempt: Callable[[np.random.Generator], Hashable | None], tries: int
) -> dict[Hashable, float]:
    """How often each gold comes out of ``tries`` pilot ``attempt``s (their golds, None for a failed attempt),
    computed once per org and ``key``."""

    def build() -> dict[Hashable, float]:
        rng = np.random.default_rng(PILOT_SEED)
        golds = Counter(gold for _ in range(tries) if (gold := attempt(rng)) is not None)
        total = sum(golds.values())
        return {gold: n / total for gold, n in golds.items()}

    return facts.once(f"gold-shares:{key}", build)


def thin(rng: np.random.Generator, shares: dict[Hashable, float], gold: Hashable, cap: float) -> bool:
    """Whether to keep a draw of ``gold``: always when its pilot share is at most the cap, else with probability
    ``cap / share`` (a gold the pilot never saw is kept). The cap is ``cap`` or, when lower, the second largest
    pilot share, so that no gold outweighs the runner-up even where one answer dominates a small org."""
    share = shares.get(gold, 0.0)
    ranked = sorted(shares.values(), reverse=True)
    limit = min(cap, ranked[1]) if len(ranked) > 1 else cap
    return share <= limit or rng.random() < limit / share


def balanced_draw(
    facts: ProFacts,
    key: str,
    attempt: Callable[[np.random.Generator, bool], tuple[Any, ...] | None],
    rng: np.random.Generator,
    want_none: bool,
    *,
    attempts: int,
    cap: float,
    pilot: int,
) -> tuple[Any, ...] | None:
    """A category's draw whose ``attempt(rng, want_none)`` gives a tuple with the gold first: up to ``attempts``
    attempts (:func:`retry`), then a frequent gold thinned (:func:`thin`) against the golds of ``pilot`` pilot
    attempts (:func:`gold_shares`, under ``key``). A None gold (an unanswerable question) is never thinned."""
    found = retry(lambda: attempt(rng, want_none), attempts)
    if found is None or found[0] is None:
        return found
    shares = gold_shares(facts, key, lambda r: (attempt(r, False) or (None,))[0], pilot)
    return found if thin(rng, shares, found[0], cap) else None
