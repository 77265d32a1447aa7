"""The time windows of Pro's time-based categories, resolved as PRO.md section 2.2 pins them.

Unlike :mod:`crmarena_gym.tasks._periods` (half-open windows ending before today, the original's
convention), a Pro window holds both its ends: "the past 3 months" on 2023-05-14 is 2023-02-14 to
2023-05-14 inclusive; a named month, quarter or season runs from its first to its last calendar day. A
record falls in a window when the date part of its timestamp does.

Relative windows use Pro's units and ranges: 14 or 21 days, 2-6 weeks (two weeks sometimes said "a
fortnight"), 1-11 months, 2-6 quarters (a quarter is three calendar months). Named windows are a month
("March 2020"), a quarter ("Q4 2021", "the fourth quarter of 2021") or a season ("Fall 2020", "the winter of
2023", which runs from December 2023 to February 2024); they are only drawn when they end on or before today
(PRO.md section 8, defect 12).

Example:
    >>> import numpy as np
    >>> w = relative_window(np.random.default_rng(0), dt.date(2023, 5, 14), "quarter", 2)
    >>> (w.start.isoformat(), w.end.isoformat())
    ('2022-11-14', '2023-05-14')
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from crmarena_gym.tasks._periods import MONTH_NAMES, add_months, month_window, quarter_window, season_window
from crmarena_gym.tasks._phrasing import pick, say_number

ProUnit = Literal["day", "week", "month", "quarter"]

#: Pro's relative windows (PRO.md 2.2): the unit and the counts it is asked with.
RELATIVE_COUNTS: dict[str, tuple[int, ...]] = {
    "day": (14, 21),
    "week": (2, 3, 4, 5, 6),
    "month": tuple(range(1, 12)),
    "quarter": (2, 3, 4, 5, 6),
}
_ORDINALS = ("first", "second", "third", "fourth")
_NAMED = ("month", "quarter", "season")
_SEASON_OF_MONTH = {m: ("Winter", "Spring", "Summer", "Autumn")[(m % 12) // 3] for m in range(1, 13)}


@dataclass(frozen=True)
class ProWindow:
    """A window with both ends inclusive, and the words a question uses for it.

    Attributes:
        start: The window's first day.
        end: The window's last day.
        phrase: The words, ready to follow a verb ("in the past 3 months", "during Q4 2021").
        spec: What the words name (``{"unit": "month", "count": 3}``, ``{"quarter": 4, "year": 2021}``).
    """

    start: dt.date
    end: dt.date
    phrase: str
    spec: Mapping[str, Any]

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"window {self.phrase!r} ends ({self.end}) before it starts ({self.start})")

    def holds(self, timestamp: str) -> bool:
        """Whether the date part of ``timestamp`` (``2021-06-01`` or ``2021-06-01T10:00:00.000+0000``) is in it."""
        return self.start.isoformat() <= timestamp[:10] <= self.end.isoformat()

    def params(self) -> dict[str, Any]:
        """The hidden parameters naming the window: ``start`` and ``end`` (ISO days, inclusive) and ``window``."""
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "window": dict(self.spec)}


def relative_window(rng: np.random.Generator, today: dt.date, unit: ProUnit, count: int) -> ProWindow:
    """The ``count`` units up to ``today``: ``[today - count units, today]``, phrased in one of several ways."""
    if count < 1:
        raise ValueError(f"a window needs at least one {unit}, got {count!r}")
    if unit == "day":
        start = today - dt.timedelta(days=count)
    elif unit == "week":
        start = today - dt.timedelta(days=7 * count)
    elif unit == "month":
        start = add_months(today, -count)
    elif unit == "quarter":
        start = add_months(today, -3 * count)
    else:
        raise ValueError(f"unit must be day, week, month or quarter, got {unit!r}")
    lead = pick(
        rng, ("in the past", "over the past", "in the last", "over the last", "during the past", "within the past")
    )
    if unit == "week" and count == 2 and rng.random() < 0.4:
        phrase = pick(rng, ("over the past fortnight", "in the last fortnight", "within the past fortnight"))
    elif count == 1:
        phrase = f"{lead} {unit}"
    else:
        phrase = f"{lead} {say_number(rng, count)} {unit}s"
    return ProWindow(start, today, phrase, {"unit": unit, "count": count})


def named_window(rng: np.random.Generator, kind: str, value: int | str, year: int) -> ProWindow:
    """A calendar month (``value`` its number or name), quarter (1-4) or season of ``year``, phrased in one of
    several ways; Winter of ``year`` runs from December of ``year`` to the end of February after."""
    if kind == "month":
        window = month_window(value, year)
        name = MONTH_NAMES[window.start.month - 1]
        phrase = pick(rng, (f"in {name} {year}", f"during {name} {year}", f"in {name} of {year}", f"for {name} {year}"))
        spec: dict[str, Any] = {"month": name, "year": year}
    elif kind == "quarter":
        quarter = int(value)
        window = quarter_window(quarter, year)
        phrase = pick(
            rng,
            (
                f"in Q{quarter} {year}",
                f"during Q{quarter} of {year}",
                f"in the {_ORDINALS[quarter - 1]} quarter of {year}",
                f"over Q{quarter} {year}",
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
    last = window.end.date() - dt.timedelta(days=1)
    return ProWindow(window.start.date(), last, phrase, spec)


def draw_window(
    rng: np.random.Generator,
    today: dt.date,
    *,
    earliest: dt.date,
    relative_share: float = 0.5,
    units: tuple[ProUnit, ...] = ("day", "week", "month", "quarter"),
    named: tuple[str, ...] = _NAMED,
) -> ProWindow | None:
    """A window of Pro's kinds ending by ``today`` and starting no earlier than ``earliest``.

    Args:
        rng: The random generator.
        today: The instance's date.
        earliest: The first day the question may reach back to (the org's first records).
        relative_share: The share of relative windows among all.
        units: The relative units to draw from.
        named: The named kinds to draw from (empty: relative windows only).

    Returns:
        A window, or None when this draw did not fit (the caller draws again).
    """
    if not named or (units and rng.random() < relative_share):
        unit = units[int(rng.integers(len(units)))]
        counts = RELATIVE_COUNTS[unit]
        window = relative_window(rng, today, unit, counts[int(rng.integers(len(counts)))])
    else:
        kind = named[int(rng.integers(len(named)))]
        year = int(rng.integers(earliest.year, today.year + 1))
        if kind == "month":
            value: int | str = int(rng.integers(1, 13))
        elif kind == "quarter":
            value = int(rng.integers(1, 5))
        else:
            value = pick(rng, ("Winter", "Spring", "Summer", "Autumn"))
        window = named_window(rng, kind, value, year)
    if window.end > today or window.start < earliest:
        return None
    return window


def draw_day(rng: np.random.Generator, first: dt.date, last: dt.date) -> dt.date:
    """A day from ``first`` to ``last`` inclusive, uniformly."""
    return first + dt.timedelta(days=int(rng.integers((last - first).days + 1)))


def today_line(today: dt.date) -> str:
    """The context line giving the instance's date, as Pro writes it."""
    return f"- Today's date: {today.isoformat()}"


def soql_datetime_in(field: str, start: str | dt.date, end: str | dt.date) -> str:
    """A SOQL condition: the date part of datetime ``field`` is from ``start`` to ``end`` (ISO days, inclusive).

    Example:
        >>> soql_datetime_in("CreatedDate", "2021-01-01", "2021-03-31")
        'CreatedDate >= 2021-01-01T00:00:00Z AND CreatedDate < 2021-04-01T00:00:00Z'
    """
    first = dt.date.fromisoformat(str(start))
    after = dt.date.fromisoformat(str(end)) + dt.timedelta(days=1)
    return f"{field} >= {first.isoformat()}T00:00:00Z AND {field} < {after.isoformat()}T00:00:00Z"


def soql_date_in(field: str, start: str | dt.date, end: str | dt.date) -> str:
    """A SOQL condition: date ``field`` is from ``start`` to ``end`` (ISO days, inclusive).

    Example:
        >>> soql_date_in("CompanySignedDate", "2021-01-01", "2021-03-31")
        'CompanySignedDate >= 2021-01-01 AND CompanySignedDate <= 2021-03-31'
    """
    return f"{field} >= {dt.date.fromisoformat(str(start))} AND {field} <= {dt.date.fromisoformat(str(end))}"


def more_than_phrase(rng: np.random.Generator, k: int, noun: str = "case") -> str:
    """``k`` as the "more than K cases" filter says it: digits or a word (``more than two cases``, ``more than 1
    case``)."""
    return f"more than {say_number(rng, k)} {noun}{'' if k == 1 else 's'}"


def named_window_holding(rng: np.random.Generator, day: dt.date, kinds: tuple[str, ...] = _NAMED) -> ProWindow:
    """A named month, quarter or season (one of ``kinds``) that holds ``day``, phrased in one of several ways."""
    kind = kinds[int(rng.integers(len(kinds)))]
    if kind == "month":
        return named_window(rng, "month", day.month, day.year)
    if kind == "quarter":
        return named_window(rng, "quarter", (day.month - 1) // 3 + 1, day.year)
    season = _SEASON_OF_MONTH[day.month]
    return named_window(rng, "season", season, day.year - 1 if day.month <= 2 else day.year)
