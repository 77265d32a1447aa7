"""Metrics over episodes: accuracy, pass^k (the tau-bench estimator) and bootstrap intervals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import comb

import numpy as np

# Up to this many distinct values, bootstrap_ci draws how often each is drawn instead of the draws.
_FEW_DISTINCT = 64
# The most values bootstrap_ci resamples at once (memory: eight bytes each, twice).
_BLOCK_DRAWS = 4_000_000


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """The chance that ``k`` trials drawn without replacement from ``trials`` all succeed.

    This is tau-bench's unbiased estimator ``C(c, k) / C(n, k)`` for one task with ``c`` successes in
    ``n`` trials.

    Example:
        >>> pass_hat_k(2, 4, 2)  # C(2,2) / C(4,2) = 1/6
        0.16666666666666666
    """
    if trials < 1:
        raise ValueError(f"a task needs at least one trial, got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be between 0 and the {trials} trials, got {successes}")
    if not 1 <= k <= trials:
        raise ValueError(f"k must be between 1 and the {trials} trials, got {k}")
    return comb(successes, k) / comb(trials, k)


def pass_k_curve(outcomes: Mapping[object, Sequence[bool]], max_k: int | None = None) -> dict[int, float]:
    """pass^k for k = 1 .. ``max_k``, averaged over tasks.

    Args:
        outcomes: For each task, the success of each of its trials. Every task must have at least
            ``max_k`` trials.
        max_k: The largest k (default: the fewest trials any task has).

    Example:
        >>> pass_k_curve({"a": [True, True], "b": [True, False]})
        {1: 0.75, 2: 0.5}
    """
    if not outcomes:
        raise ValueError("pass^k needs at least one task")
    fewest = min(len(v) for v in outcomes.values())
    max_k = fewest if max_k is None else max_k
    if max_k > fewest:
        raise ValueError(f"pass^{max_k} needs {max_k} trials per task, but a task has only {fewest}")
    return {
        k: float(np.mean([pass_hat_k(sum(map(bool, v)), len(v), k) for v in outcomes.values()]))
        for k in range(1, max_k + 1)
    }


def bootstrap_ci(
    values: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """A percentile bootstrap confidence interval of the mean.

    A resample's mean depends only on how many times each distinct value is drawn, so when the values
    take few distinct values (rewards: 0, 1 and some F1 scores) the counts are drawn from the multinomial
    distribution directly: the same bootstrap in time and memory that do not grow with the number of
    values (a 20,000-episode run). Otherwise the values are resampled in blocks of bounded size.

    Example:
        >>> bootstrap_ci([1.0, 1.0, 1.0])
        (1.0, 1.0)
    """
    if not values:
        raise ValueError("a confidence interval needs at least one value")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    data = np.asarray(values, dtype=float)
    n = len(data)
    rng = np.random.default_rng(seed)
    distinct, counts = np.unique(data, return_counts=True)
    if len(distinct) <= _FEW_DISTINCT:
        drawn = rng.multinomial(n, counts / n, size=resamples)
        means = drawn @ distinct / n
    else:
        block = max(1, _BLOCK_DRAWS // n)
        means = np.concatenate(
            [
                data[rng.integers(0, n, size=(min(block, resamples - start), n))].mean(axis=1)
                for start in range(0, resamples, block)
            ]
        )
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)
