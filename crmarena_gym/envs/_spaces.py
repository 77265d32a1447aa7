"""Text spaces for the environments.

Gymnasium's ``Text`` space only admits characters from a fixed charset (alphanumerics by default), so
query results with quotes, brackets, accents or emoji would fall outside it. These spaces admit any
Unicode text up to a length bound; the action space samples well-formed actions.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Space

_SAMPLE_CHARS = string.ascii_letters + string.digits + string.punctuation + " \n" + "éüßçñøåæœ€£→–—…“”’😀"


class UnicodeText(Space[str]):
    """Any Unicode string of at most ``max_length`` characters.

    Example:
        >>> space = UnicodeText(20)
        >>> space.contains("Owner: {'Name': 'Zoë'} ✓"), space.contains("x" * 21), space.contains(5)
        (False, False, False)
        >>> space.contains("{'Name': 'Zoë'} ✓")
        True
    """

    def __init__(self, max_length: int, *, seed: int | np.random.Generator | None = None) -> None:
        if not isinstance(max_length, int | np.integer) or max_length < 1:
            raise ValueError(f"max_length must be a positive integer, got {max_length!r}")
        self.max_length = int(max_length)
        super().__init__(dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Text has no fixed-size numeric form."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Random text of printable characters (ASCII and a few others), at most 64 long."""
        if mask is not None or probability is not None:
            raise ValueError("UnicodeText.sample does not take a mask or probability")
        length = int(self.np_random.integers(0, min(self.max_length, 64) + 1))
        chars = self.np_random.choice(list(_SAMPLE_CHARS), size=length)
        return "".join(chars)

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a string no longer than ``max_length``."""
        return isinstance(x, str) and len(x) <= self.max_length

    def to_jsonable(self, sample_n: Sequence[str]) -> list[str]:
        return list(sample_n)

    def from_jsonable(self, sample_n: list[str]) -> list[str]:
        return list(sample_n)

    def __repr__(self) -> str:
        return f"UnicodeText({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.max_length == self.max_length  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.max_length))


class ActionText(UnicodeText):
    """Agent actions: any text up to ``max_length``; :meth:`sample` draws well-formed actions.

    Args:
        max_length: The longest action accepted.
        examples: Well-formed actions to sample from (queries, function calls, submissions).
        seed: Seed of the sampler.

    Example:
        >>> space = ActionText(1000, examples=("submit None", "execute SELECT Id FROM Case LIMIT 1"), seed=0)
        >>> space.sample() in ("submit None", "execute SELECT Id FROM Case LIMIT 1")
        True
    """

    def __init__(
        self, max_length: int, *, examples: Sequence[str], seed: int | np.random.Generator | None = None
    ) -> None:
        super().__init__(max_length, seed=seed)
        if not examples:
            raise ValueError("ActionText needs at least one example action to sample from")
        too_long = [e for e in examples if len(e) > max_length]
        if too_long:
            raise ValueError(f"example action longer than max_length {max_length}: {too_long[0][:60]!r}")
        self.examples = tuple(examples)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """One of the example actions, uniformly."""
        if mask is not None or probability is not None:
            raise ValueError("ActionText.sample does not take a mask or probability")
        return self.examples[int(self.np_random.integers(len(self.examples)))]

    def __repr__(self) -> str:
        return f"ActionText({self.max_length}, {len(self.examples)} examples)"

    def __eq__(self, other: object) -> bool:
        return super().__eq__(other) and other.examples == self.examples  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.max_length, self.examples))
