"""Ways of saying things in generated queries: windows, numbers, extremes.

Every choice draws from the caller's ``numpy.random.Generator``, so a seed fixes the wording.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from crmarena_gym.tasks._periods import (
    MONTH_NAMES,
    Unit,
    Window,
    month_window,
    past_window,
    quarter_window,
    season_window,
)

#: The small numbers as words, by value (``say_number`` writes them; readers of the queries read them back).
NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty"
).split()
_ORDINAL_QUARTERS = ("first", "second", "third", "fourth")
_T = TypeVar("_T")


def pick(rng: np.random.Generator, options: Sequence[_T]) -> _T:
    """One of ``options`` (wordings, or any records), uniformly."""
    return options[int(rng.integers(len(options)))]


def say_number(rng: np.random.Generator, n: int) -> str:
    """``n`` as digits or, half the time when small, as a word.

    Example:
        >>> say_number(np.random.default_rng(0), 42)
        '42'
    """
    if n < len(NUMBER_WORDS) and rng.random() < 0.5:
        return NUMBER_WORDS[n]
    return str(n)


@dataclass(frozen=True)
class PhrasedWindow:
    """A time window and the words a query uses for it.

    Attributes:
        window: The window itself.
        phrase: The words, ready to follow a verb ("in the past 3 months", "during Q3 2022").
        kind: ``relative`` or ``named``.
        spec: A machine-readable description (``{"unit": "month", "count": 3}`` or
            ``{"season": "Winter", "year": 2021}``), kept in the hidden params.
    """

    window: Window
    phrase: str
    kind: str
    spec: dict[str, object]


def relative_window(rng: np.random.Generator, today: dt.date, unit: Unit, count: int) -> PhrasedWindow:
    """The ``count`` units before ``today``, phrased in one of several ways."""
    window = past_window(today, unit, count)
    if unit == "week" and count == 2 and rng.random() < 0.4:
        phrase = pick(rng, ("over the past fortnight", "in the last fortnight"))
    elif count == 1:
        # Not "the previous quarter": that names the last calendar quarter, not the span before today.
        phrase = pick(rng, (f"in the past {unit}", f"over the past {unit}", f"over the last {unit}"))
    else:
        amount = say_number(rng, count)
        lead = pick(rng, ("in the past", "over the past", "in the last", "over the last", "during the past"))
        phrase = f"{lead} {amount} {unit}s"
    return PhrasedWindow(window, phrase, "relative", {"unit": unit, "count": count})


def named_window(rng: np.random.Generator, kind: str, value: int | str, year: int) -> PhrasedWindow:
    """A named month, quarter or season of ``year``, phrased in one of several ways."""
    if kind == "month":
        window = month_window(value, year)
        name = MONTH_NAMES[window.start.month - 1]
        phrase = pick(rng, (f"in {name} {year}", f"during {name} {year}", f"in {name} of {year}"))
        spec: dict[str, object] = {"month": name, "year": year}
    elif kind == "quarter":
        quarter = int(value)
        window = quarter_window(quarter, year)
        phrase = pick(
            rng,
            (
                f"in Q{quarter} {year}",
                f"during Q{quarter} of {year}",
                f"in the {_ORDINAL_QUARTERS[quarter - 1]} quarter of {year}",
            ),
        )
        spec = {"quarter": quarter, "year": year}
    elif kind == "season":
        window = season_window(str(value), year)
        season = window.label.split()[0]
        shown = season if season != "Autumn" else pick(rng, ("Autumn", "Fall"))
        phrase = pick(rng, (f"in {shown} {year}", f"during {shown} {year}", f"in the {shown.lower()} of {year}"))
        spec = {"season": season, "year": year}
    else:
        raise ValueError(f"named window kind must be month, quarter or season, got {kind!r}")
    return PhrasedWindow(window, phrase, "named", spec)


def random_window(
    rng: np.random.Generator,
    today: dt.date,
    *,
    earliest: dt.date,
    min_months: int = 0,
    relative_share: float = 0.5,
) -> PhrasedWindow | None:
    """A random window that ends by ``today`` and starts no earlier than ``earliest``.

    Args:
        rng: The random generator.
        today: The instance's date; every window ends on or before it.
        earliest: The first day with data; windows starting earlier are not drawn.
        min_months: Draw only windows at least this many months long (0: any).
        relative_share: The share of relative windows ("past 3 months") among named ones.

    Returns:
        A window, or None if the draw did not fit (the caller draws again).
    """
    if rng.random() < relative_share:
        units: list[tuple[Unit, int, int]] = [("month", 1, 12), ("quarter", 1, 4)]
        if min_months <= 0:
            units += [("day", 7, 90), ("week", 2, 12)]
        unit, low, high = units[int(rng.integers(len(units)))]
        count = int(rng.integers(low, high + 1))
        months = count if unit == "month" else 3 * count if unit == "quarter" else 0
        if months < min_months:
            return None
        phrased = relative_window(rng, today, unit, count)
    else:
        kinds = ["quarter", "season"] if min_months > 1 else ["month", "quarter", "season"]
        if min_months > 3:
            return None
        kind = kinds[int(rng.integers(len(kinds)))]
        year = int(rng.integers(earliest.year, today.year + 1))
        if kind == "month":
            value: int | str = int(rng.integers(1, 13))
        elif kind == "quarter":
            value = int(rng.integers(1, 5))
        else:
            value = pick(rng, ("Winter", "Spring", "Summer", "Autumn"))
        phrased = named_window(rng, kind, value, year)
    window = phrased.window
    if window.end.date() > today or window.start.date() < earliest:
        return None
    return phrased


def capitalize_first(text: str) -> str:
    """``text`` with its first letter in upper case (the rest untouched)."""
    return text[:1].upper() + text[1:]
