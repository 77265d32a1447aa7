"""Seeded random sources: named numpy streams and a fast scalar picker for text.

Every random draw of the generator flows from the org seed. Each part of the generator takes its
own stream (``stream(seed, "cases")``), so a change in one part does not shift the draws of the
others. Text rendering makes millions of tiny choices; it uses :class:`Rand`, which wraps
``random.Random`` but only its ``random()`` method, whose sequence Python guarantees to be the same
on every platform and version for a given integer seed.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def stream(seed: int, name: str) -> np.random.Generator:
    """The numpy generator of one named part of the org, derived from the org seed.

    Example:
        >>> a, b = stream(0, "cases"), stream(0, "cases")
        >>> int(a.integers(1000)) == int(b.integers(1000))
        True
    """
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


class Rand:
    """A small, fast, platform-stable random source for picking words and numbers.

    Example:
        >>> r = Rand(7)
        >>> r.choice(["a", "b", "c"]) in {"a", "b", "c"}, 0 <= r.integers(0, 5) < 5
        (True, True)
    """

    __slots__ = ("_random",)

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed).random

    def random(self) -> float:
        """A float in [0, 1)."""
        return self._random()

    def integers(self, low: int, high: int) -> int:
        """An integer in [low, high), like ``numpy.random.Generator.integers``."""
        return low + int(self._random() * (high - low))

    def choice(self, items: Sequence[T]) -> T:
        """One item of a non-empty sequence."""
        return items[int(self._random() * len(items))]

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self._random() < p
