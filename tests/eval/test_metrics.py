from __future__ import annotations

import itertools

import pytest

from crmarena_gym.eval import bootstrap_ci, pass_hat_k, pass_k_curve


def _enumerated_pass_k(trials: list[bool], k: int) -> float:
    # Independent definition: the share of k-subsets of the trials that are all successes.
    subsets = list(itertools.combinations(trials, k))
    return sum(all(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize(
    "trials", [[True] * 4, [True, False, True, True], [False] * 3, [True, False, False, True, True]]
)
def test_pass_hat_k_matches_subset_enumeration(trials: list[bool]) -> None:
    for k in range(1, len(trials) + 1):
        assert pass_hat_k(sum(trials), len(trials), k) == pytest.approx(_enumerated_pass_k(trials, k))


def test_pass_k_curve_small_example_by_hand() -> None:
    # Task a: 3/3, task b: 2/3, task c: 0/3.
    # k=1: (1 + 2/3 + 0)/3 = 5/9; k=2: (1 + 1/3 + 0)/3 = 4/9; k=3: (1 + 0 + 0)/3 = 1/3.
    curve = pass_k_curve({"a": [True] * 3, "b": [True, True, False], "c": [False] * 3})
    assert curve == pytest.approx({1: 5 / 9, 2: 4 / 9, 3: 1 / 3})


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: pass_hat_k(1, 0, 1), "at least one trial"),
        (lambda: pass_hat_k(5, 3, 1), "got 5"),
        (lambda: pass_hat_k(1, 3, 4), "got 4"),
        (lambda: pass_k_curve({}), "at least one task"),
        (lambda: pass_k_curve({"a": [True], "b": [True, True]}, max_k=2), "only 1"),
        (lambda: bootstrap_ci([]), "at least one value"),
        (lambda: bootstrap_ci([1.0], confidence=1.5), "1.5"),
    ],
)
def test_bad_input_is_refused(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call()


def test_bootstrap_interval_brackets_the_mean_and_is_seeded() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    low, high = bootstrap_ci(values, seed=3)
    assert low < sum(values) / len(values) < high
    assert (low, high) == bootstrap_ci(values, seed=3)
