"""Metrics over episodes: accuracy, pass^k (the tau-bench estimator) and bootstrap intervals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import comb

import numpy as np


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

    Example:
        >>> bootstrap_ci([1.0, 1.0, 1.0])
        (1.0, 1.0)
    """
    if not values:
        raise ValueError("a confidence interval needs at least one value")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)
