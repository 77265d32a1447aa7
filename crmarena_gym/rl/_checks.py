"""Argument checks shared by the RL adapter's parts (generators, encoders, featurizers, slot groups)."""

from __future__ import annotations

__all__ = ["require_positive_ints"]


def require_positive_ints(**values: object) -> None:
    """Raise ``ValueError`` naming the first argument that is not a positive integer (a bool is not one).

    Example:
        >>> require_positive_ints(num_slots=4, buckets=8)
        >>> require_positive_ints(num_slots=4, buckets=0)
        Traceback (most recent call last):
        ...
        ValueError: buckets must be a positive integer, got 0
    """
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
