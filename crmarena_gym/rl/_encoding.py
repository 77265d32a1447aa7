"""Observation encoders: the text state as a fixed-size vector of numbers in [0, 1].

Any object with ``size`` and ``encode(state, slots, sources)`` is an encoder (see :class:`Encoder`);
:class:`HashingEncoder` is the default.
"""

from __future__ import annotations

import re
import sys
import zlib
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from crmarena_gym._memory import bytes_cache
from crmarena_gym.rl._candidates import CandidateState
from crmarena_gym.rl._checks import require_positive_ints
from crmarena_gym.tasks import TASK_ABBREVS
from crmarena_gym.tools import toolset

__all__ = ["Encoder", "HashingEncoder", "stable_hash"]

_TOKEN_RE = re.compile(r"[A-Za-z0-9_]+")
#: The task-specific functions, in a fixed order (the "tools called" features).
FUNCTIONS: tuple[str, ...] = tuple(sorted(t.name for t in toolset("functions") if t.name != "submit"))


def stable_hash(text: str) -> int:
    """A hash that is the same in every process (Python's ``hash`` of a string is salted per process).

    Example:
        >>> stable_hash("get_cases") == stable_hash("get_cases"), stable_hash("a") != stable_hash("b")
        (True, True)
    """
    return zlib.crc32(text.encode("utf-8"))


def _texts_bytes(args: tuple[Any, ...]) -> int:
    """The bytes a cache entry's arguments hold (its texts, and a little per argument), without walking them."""
    return sum(sys.getsizeof(a) if isinstance(a, str) else 64 for a in args) + 200


# Token to hash: the tokens of questions and results recur at every step (forgotten at once past a bound).
_HASHES: dict[str, int] = {}


def stable_hashes(tokens: Iterable[str]) -> np.ndarray:
    """:func:`stable_hash` of each token, as an int64 array (each token's hash worked out once per process).

    Example:
        >>> stable_hashes(["get_cases", "a"]).tolist() == [stable_hash("get_cases"), stable_hash("a")]
        True
    """
    hashes = _HASHES
    if len(hashes) > 200_000:
        hashes.clear()
    out = []
    for token in tokens:
        value = hashes.get(token)
        if value is None:
            value = hashes[token] = zlib.crc32(token.encode("utf-8"))
        out.append(value)
    return np.array(out, dtype=np.int64)


# An observation's bag is the same in every episode that makes the same call; kept by measured bytes.
@bytes_cache(max_entries=16384, max_bytes=16 * 1024 * 1024, size=lambda args, found: _texts_bytes(args) + found.nbytes)
def _bag_buckets(text: str, buckets: int) -> np.ndarray:
    """The buckets (read-only, sorted) the hashed lower-case tokens of ``text`` fall in."""
    found = np.unique(stable_hashes(set(_TOKEN_RE.findall(text.lower()))) % buckets)
    found.setflags(write=False)
    return found


@runtime_checkable
class Encoder(Protocol):
    """The interface of an observation encoder.

    Attributes:
        size: The length of the vectors it makes.
    """

    size: int

    def encode(self, state: CandidateState, slots: Sequence[str | None], sources: Sequence[str | None]) -> np.ndarray:
        """A float32 vector of ``size`` values in [0, 1] describing ``state`` and its candidate slots."""
        ...


class HashingEncoder:
    """The default encoder: hashed bags of tokens, the turn, the tools used, and the candidate slots.

    The vector is the concatenation of, in order:

    - ``text_buckets`` values: which hashed (lower-case) tokens the question and its context contain
      (1 if any token falls in the bucket);
    - ``result_buckets`` values: the same for the first ``result_chars`` characters of the last
      observation;
    - 1 value: the turn as a fraction of the turn budget;
    - one value per task-specific function (sorted names): 1 if it was called successfully;
    - one value per function, plus one for "none": which function gave the last result;
    - 8 values about the last step: it failed, its result is empty, a list, a mapping, a text, None,
      its length (clipped at 100, divided by 100), it has exactly one element;
    - 9 values: the task family (one-hot, the original's task order);
    - 5 values: what the question states: ``direction`` min, ``direction`` max, a window, a quoted id, a
      case threshold;
    - per candidate slot, ``1 + slot_buckets`` values: whether the slot holds an action, and the hashed
      name of its function (for a submission slot, of the function whose result gave the value), so
      that a policy can tell what each slot does at this step.

    Args:
        num_slots: The number of candidate slots (the generator's ``num_slots``).
        text_buckets: Hash buckets for the question's tokens.
        result_buckets: Hash buckets for the last observation's tokens.
        slot_buckets: Hash buckets for each slot's function name.
        result_chars: How much of the last observation is read.

    Example:
        >>> from crmarena_gym.rl import QuestionFacts
        >>> enc = HashingEncoder(num_slots=4, text_buckets=16, result_buckets=8, slot_buckets=4)
        >>> state = CandidateState(QuestionFacts("BRI", "Which state closed cases fastest?"))
        >>> vec = enc.encode(state, ["submit None", None, None, None], ["submit", None, None, None])
        >>> vec.shape == (enc.size,), vec.dtype, float(vec.min()) >= 0.0, float(vec.max()) <= 1.0
        (True, dtype('float32'), True, True)
    """

    def __init__(
        self,
        num_slots: int,
        *,
        text_buckets: int = 256,
        result_buckets: int = 64,
        slot_buckets: int = 8,
        result_chars: int = 2000,
    ) -> None:
        require_positive_ints(
            num_slots=num_slots,
            text_buckets=text_buckets,
            result_buckets=result_buckets,
            slot_buckets=slot_buckets,
            result_chars=result_chars,
        )
        self.num_slots = num_slots
        self.text_buckets = text_buckets
        self.result_buckets = result_buckets
        self.slot_buckets = slot_buckets
        self.result_chars = result_chars
        self._functions = {name: i for i, name in enumerate(FUNCTIONS)}
        self._tasks = {abbrev: i for i, abbrev in enumerate(TASK_ABBREVS)}
        self.size = (
            text_buckets
            + result_buckets
            + 1
            + len(FUNCTIONS)
            + len(FUNCTIONS)
            + 1
            + 8
            + len(TASK_ABBREVS)
            + 5
            + num_slots * (1 + slot_buckets)
        )
        self._text_cache: tuple[str, np.ndarray] | None = None

    def _bag(self, text: str, buckets: int) -> np.ndarray:
        out = np.zeros(buckets, dtype=np.float32)
        out[_bag_buckets(text, buckets)] = 1.0
        return out

    def encode(self, state: CandidateState, slots: Sequence[str | None], sources: Sequence[str | None]) -> np.ndarray:
        """The state as a float32 vector of :attr:`size` values in [0, 1]."""
        if len(slots) != self.num_slots or len(sources) != self.num_slots:
            raise ValueError(f"expected {self.num_slots} slots and sources, got {len(slots)} and {len(sources)}")
        vector = np.concatenate(self.parts(state, slots, sources))
        assert vector.shape == (self.size,)
        return vector

    def parts(
        self, state: CandidateState, slots: Sequence[str | None], sources: Sequence[str | None]
    ) -> list[np.ndarray]:
        """The pieces :meth:`encode` joins, in order (a subclass appends its own)."""
        facts = state.facts
        if self._text_cache is None or self._text_cache[0] != facts.text:  # the question is the same all episode
            self._text_cache = (facts.text, self._bag(facts.text, self.text_buckets))
        parts = [self._text_cache[1], self._bag(state.observation[: self.result_chars], self.result_buckets)]
        # The turn, the functions called, the last one, the last result's summary, the task and what the
        # question states: written as one list, made an array once.
        functions = self._functions
        n = len(functions)
        middle = [0.0] * (1 + 2 * n + 1 + 8 + len(self._tasks) + 5)
        middle[0] = min(state.turn / max(state.max_turns, 1), 1.0)
        for step in state.history:
            if step.ok and step.function in functions:
                middle[1 + functions[step.function]] = 1.0
        last = state.history[-1] if state.history else None
        at = 1 + n
        if last is not None and last.ok and last.function in functions:
            middle[at + functions[last.function]] = 1.0
        else:
            middle[at + n] = 1.0
        at += n + 1
        if last is not None:
            result = last.result
            length = len(result) if isinstance(result, list | dict | str) else 0
            middle[at : at + 8] = (
                not last.ok,
                last.ok and length == 0,
                isinstance(result, list),
                isinstance(result, dict),
                isinstance(result, str),
                result is None,
                min(length, 100) / 100,
                length == 1,
            )
        at += 8
        if facts.task in self._tasks:
            middle[at + self._tasks[facts.task]] = 1.0
        at += len(self._tasks)
        has_id = any(v is not None for v in (facts.product_id, facts.contact_id, facts.case_id, facts.issue_id))
        middle[at:] = (
            facts.direction == "min",
            facts.direction == "max",
            facts.start is not None,
            has_id,
            facts.n_cases is not None,
        )
        parts.append(np.array(middle, dtype=np.float32))
        slot_features = np.zeros((self.num_slots, 1 + self.slot_buckets), dtype=np.float32)
        present = [i for i, text in enumerate(slots) if text is not None]
        slot_features[present, 0] = 1.0
        named = [i for i in present if sources[i] is not None]
        if named:
            hashed = stable_hashes([sources[i] for i in named])  # type: ignore[misc]
            slot_features[named, 1 + hashed % self.slot_buckets] = 1.0
        parts.append(slot_features.ravel())
        return parts

    def __repr__(self) -> str:
        return (
            f"HashingEncoder(num_slots={self.num_slots}, text_buckets={self.text_buckets}, "
            f"result_buckets={self.result_buckets}, slot_buckets={self.slot_buckets})"
        )
