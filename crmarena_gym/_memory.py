"""Caches bounded by the bytes they hold, measured, not by their number of entries alone.

A cache bounded only by its count of entries holds whatever its entries hold: a refused query kept with
its traceback (every frame of the parser's recursion), a shaper compiled for a select list of 100,000
characters. :func:`measured_bytes` walks what an object holds (``sys.getsizeof`` over its referents,
shared classes, modules and functions' globals left out) and :class:`BytesLRU` keeps entries, least
recently used first, under a bound of entries and of measured bytes; :func:`bytes_cache` is a
``functools.lru_cache`` with that bound.

This module sits below the layers (it imports none of them).
"""

from __future__ import annotations

import functools
import gc
import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["BytesLRU", "bytes_cache", "measured_bytes"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# Shared by everything that uses them, never held by one cached value: not counted.
_SHARED = (type, types.ModuleType, types.BuiltinFunctionType, types.WrapperDescriptorType, types.MethodDescriptorType)


def measured_bytes(*objects: Any) -> int:
    """The bytes ``objects`` hold: each object reached from them counted once (``sys.getsizeof``).

    Classes, modules and built-in functions are shared, not held, and are not counted; a function counts its
    code, closure and defaults, not the module globals it reads. An object reached twice counts once, so
    the measure of two values that share a part is not the sum of their measures (it errs high when a part
    is shared with something outside them, as an interned name is).

    Example:
        >>> text = "x" * 10_000
        >>> measured_bytes(text) == sys.getsizeof(text), measured_bytes((text, text)) < 2 * len(text)
        (True, True)
        >>> measured_bytes(ValueError("boom")) < measured_bytes(ValueError("boom" * 1000))
        True
    """
    seen: set[int] = set()
    stack = list(objects)
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SHARED):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, types.FunctionType):
            stack += (obj.__code__, obj.__closure__, obj.__defaults__, obj.__kwdefaults__, obj.__dict__)
        elif isinstance(obj, BaseException):
            # An exception holds its traceback (and through it every frame's locals) and the ones before it.
            stack += (obj.args, obj.__traceback__, obj.__context__, obj.__cause__, getattr(obj, "__dict__", None))
        elif isinstance(obj, types.TracebackType):
            stack += (obj.tb_frame, obj.tb_next)
        elif isinstance(obj, types.FrameType):  # its locals; not its globals, nor the frames that called it
            stack.append(obj.f_locals)
        else:
            stack += gc.get_referents(obj)
    return total


class BytesLRU(Generic[K, V]):
    """A mapping that keeps at most ``max_entries`` entries and ``max_bytes`` measured bytes, least
    recently used dropped first. Thread-safe.

    An entry measured at more than ``max_bytes // 8`` is not kept (it is used once and dropped), so that one
    huge value cannot push every other out.

    Args:
        max_entries: Most entries kept.
        max_bytes: Most bytes kept, as :func:`measured_bytes` measures the keys and values (or as the caller
            measures them, see :meth:`put`).

    Example:
        >>> cache = BytesLRU(max_entries=100, max_bytes=64 * 1024)
        >>> cache.put("a", "x" * 100), cache.put("b", "y" * 60_000), cache.get("a") == "x" * 100, "b" in cache
        (True, False, True, False)
        >>> cache.bytes <= cache.max_bytes
        True
    """

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        #: The measured bytes of the entries kept.
        self.bytes = 0

    def get(self, key: K, default: Any = None) -> Any:
        """The value of ``key`` (now the most recently used), or ``default``."""
        # No lock: each OrderedDict call is atomic (the GIL), and a key another thread drops in between is
        # simply not moved. The hot path of every cached query.
        entry = self._entries.get(key)
        if entry is None:
            return default
        try:
            self._entries.move_to_end(key)
        except KeyError:
            pass
        return entry[0]

    def put(self, key: K, value: V, size: int | None = None) -> bool:
        """Keep ``value`` under ``key`` (measured with :func:`measured_bytes` unless ``size`` is given);
        False when it is too big to be kept."""
        if size is None:
            size = measured_bytes(key, value)
        if size > self.max_bytes // 8:
            return False
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._entries[key] = (value, size)
            self.bytes += size
            while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.bytes -= dropped
        return True

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self.bytes = 0

    def __getitem__(self, key: K) -> V:
        with self._lock:
            return self._entries[key][0]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)


def bytes_cache(
    max_entries: int, max_bytes: int, *, size: Callable[[tuple[Any, ...], Any], int] | None = None
) -> Callable[[Callable[..., V]], Callable[..., V]]:
    """``functools.lru_cache`` bounded by entries and measured bytes (see :class:`BytesLRU`): for functions
    whose arguments or answers may be large (a compiled select list, a search pattern, a text's words).

    The wrapper has ``cache_clear()`` and ``cache`` (its :class:`BytesLRU`). Positional arguments only; an
    exception is not cached. ``size(args, value)``, if given, says an entry's bytes where walking it with
    :func:`measured_bytes` would cost more than the call saves (a text and a small array of numbers).

    Example:
        >>> @bytes_cache(max_entries=16, max_bytes=1 << 20)
        ... def words(text: str) -> frozenset[str]:
        ...     return frozenset(text.split())
        >>> words("a b a") is words("a b a"), len(words.cache)
        (True, 1)
    """

    def decorate(fn: Callable[..., V]) -> Callable[..., V]:
        cache: BytesLRU[Any, V] = BytesLRU(max_entries, max_bytes)
        missing = object()

        @functools.wraps(fn)
        def wrapper(*args: Any) -> V:
            key = args if len(args) != 1 else args[0]
            value = cache.get(key, missing)
            if value is missing:
                value = fn(*args)
                cache.put(key, value, None if size is None else size(args, value))
            return value  # type: ignore[return-value]

        wrapper.cache = cache  # type: ignore[attr-defined]
        wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
        return wrapper

    return decorate
