"""Salesforce ids in bulk: the same ids as ``crmarena_gym.schema.make_id``, built with numpy."""

from __future__ import annotations

import zlib

import numpy as np

from crmarena_gym.schema._ids import _ALPHABET, _SUFFIX_CHARS, ORG_INSTANCE

_ALPHA = np.frombuffer(_ALPHABET.encode("ascii"), dtype=np.uint8)
_SUFFIX = np.frombuffer(_SUFFIX_CHARS.encode("ascii"), dtype=np.uint8)
_POW = 62 ** np.arange(9, -1, -1, dtype=np.int64)


def id_base(prefix: str) -> int:
    """The record number of an object's first id, so ids look like a real org's, not ``...0000001``."""
    return 25_000_000 + zlib.crc32(prefix.encode("ascii")) % 2_000_000


def bulk_ids(prefix: str, start: int, count: int, instance: str = ORG_INSTANCE) -> list[str]:
    """``make_id(prefix, id_base(prefix) + n, instance)`` for n in ``start .. start + count - 1``.

    Ids of one object sort (as strings, byte-wise) in the order of their numbers.

    Example:
        >>> from crmarena_gym.schema import make_id
        >>> bulk_ids("500", 0, 2) == [make_id("500", id_base("500")), make_id("500", id_base("500") + 1)]
        True
    """
    if count <= 0:
        return []
    return ids_for(prefix, np.arange(start, start + count, dtype=np.int64), instance)


def ids_for(prefix: str, indexes: np.ndarray, instance: str = ORG_INSTANCE) -> list[str]:
    """The ids of the records with the given 0-based indexes (any order, repeats allowed), with the org's
    2-character instance marker (the service org's ``Ws`` by default)."""
    numbers = np.asarray(indexes, dtype=np.int64) + id_base(prefix)
    count = len(numbers)
    if count == 0:
        return []
    out = np.empty((count, 18), dtype=np.uint8)
    out[:, :3] = np.frombuffer(prefix.encode("ascii"), dtype=np.uint8)
    out[:, 3:5] = np.frombuffer(instance.encode("ascii"), dtype=np.uint8)
    out[:, 5:15] = _ALPHA[(numbers[:, None] // _POW[None, :]) % 62]
    upper = (out[:, :15] >= ord("A")) & (out[:, :15] <= ord("Z"))
    weights = 1 << np.arange(5)
    for chunk in range(3):
        bits = (upper[:, chunk * 5 : chunk * 5 + 5] * weights).sum(axis=1)
        out[:, 15 + chunk] = _SUFFIX[bits]
    return out.view("S18").ravel().astype("U18").tolist()
