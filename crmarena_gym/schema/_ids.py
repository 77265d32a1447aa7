"""Salesforce record ids: 15-character keys with the 3-character case-safe checksum."""

from __future__ import annotations

import functools
import re

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_SUFFIX_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
_ID_RE = re.compile(r"^[A-Za-z0-9]{15}(?:[A-Z0-5]{3})?$")
# The 4th and 5th characters of ids in the original org ("Ws" is its pod/instance marker).
ORG_INSTANCE = "Ws"
_INSTANCE_RE = re.compile(r"^[A-Za-z0-9]{2}$")


def id_checksum(id15: str) -> str:
    """The 3-character suffix that makes a 15-character id case-insensitively unique.

    Each 5-character chunk contributes one character: bit i is set when the chunk's i-th
    character is an upper-case letter.

    Example:
        >>> id_checksum("500Ws000007qlrj")
        'IAA'
    """
    if len(id15) != 15:
        raise ValueError(f"a Salesforce key has 15 characters, got {len(id15)} in {id15!r}")
    suffix = []
    for start in (0, 5, 10):
        bits = 0
        for i, ch in enumerate(id15[start : start + 5]):
            if "A" <= ch <= "Z":
                bits |= 1 << i
        suffix.append(_SUFFIX_CHARS[bits])
    return "".join(suffix)


def make_id(prefix: str, number: int, instance: str = ORG_INSTANCE) -> str:
    """The 18-character id of the ``number``-th record of the object with key ``prefix``.

    Args:
        prefix: The object's 3-character key prefix.
        number: The record's number (0 to 62**10 - 1).
        instance: The org's 2-character instance marker (the 4th and 5th characters): ``Ws`` for the
            CRMArena service org, others for the other org kinds (``crmarena_gym.schema.org_schema``).

    Example:
        >>> make_id("500", 1)
        '500Ws0000000001IAA'
        >>> make_id("006", 1, instance="Wt")
        '006Wt0000000001IAA'
    """
    if len(prefix) != 3:
        raise ValueError(f"a key prefix has 3 characters, got {prefix!r}")
    if not _INSTANCE_RE.match(instance):
        raise ValueError(f"an org instance marker has 2 letters or digits, got {instance!r}")
    if number < 0:
        raise ValueError(f"record number must be non-negative, got {number}")
    digits = []
    n = number
    for _ in range(10):
        n, r = divmod(n, 62)
        digits.append(_ALPHABET[r])
    if n:
        raise ValueError(f"record number {number} does not fit in a Salesforce id")
    id15 = prefix + instance + "".join(reversed(digits))
    return id15 + id_checksum(id15)


def is_valid_id(value: str) -> bool:
    """Whether ``value`` is a well-formed 15- or 18-character id (with a correct checksum).

    Example:
        >>> is_valid_id("500Ws000007qlrjIAA"), is_valid_id("500Ws000007qlrjAAA")
        (True, False)
    """
    # Only 15 or 18 characters can be an id: no other length reaches (and is kept by) the cache.
    return isinstance(value, str) and len(value) in (15, 18) and _valid_id_text(value)


# Tools check every id they are given, the same ids again and again: the answers are kept.
@functools.lru_cache(maxsize=16384)
def _valid_id_text(value: str) -> bool:
    if not _ID_RE.match(value):
        return False
    return len(value) == 15 or id_checksum(value[:15]) == value[15:]
