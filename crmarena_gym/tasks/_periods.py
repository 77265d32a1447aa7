"""Time windows that task queries name: relative ("past 3 months") or named ("Winter 2021").

Every window is a half-open interval ``[start, end)`` of UTC datetimes at midnight. The domain
details shown to agents (``metadata.optional``) describe the same conventions.
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass
from typing import Literal

Unit = Literal["day", "week", "month", "quarter"]

MONTH_NAMES: tuple[str, ...] = tuple(calendar.month_name[1:])
#: Season name -> (first month, number of months). Winter of year Y starts in December of Y.
SEASONS: dict[str, tuple[int, int]] = {"Winter": (12, 3), "Spring": (3, 3), "Summer": (6, 3), "Autumn": (9, 3)}
_SEASON_ALIASES = {"fall": "Autumn"}


@dataclass(frozen=True)
class Window:
    """A half-open time window ``[start, end)``.

    Attributes:
        start: First instant inside the window (UTC, naive).
        end: First instant after the window.
        label: How the window was named (``"Q3 2022"``, ``"past 5 months"``).
    """

    start: dt.datetime
    end: dt.datetime
    label: str

    def __post_init__(self) -> None:
        if self.end <= self.start:
            raise ValueError(f"window {self.label!r} ends ({self.end}) before it starts ({self.start})")

    def contains(self, moment: dt.datetime) -> bool:
        """Whether ``moment`` lies in ``[start, end)``."""
        return self.start <= moment < self.end


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day)


def add_months(day: dt.date, months: int) -> dt.date:
    """Move ``day`` by whole months, clamping to the month's last day.

    Example:
        >>> add_months(dt.date(2023, 3, 31), -1)
        datetime.date(2023, 2, 28)
    """
    index = day.year * 12 + (day.month - 1) + months
    year, month0 = divmod(index, 12)
    last = calendar.monthrange(year, month0 + 1)[1]
    return dt.date(year, month0 + 1, min(day.day, last))


def month_window(month: int | str, year: int) -> Window:
    """A calendar month.

    Example:
        >>> w = month_window("February", 2024); (w.start.date(), w.end.date())
        (datetime.date(2024, 2, 1), datetime.date(2024, 3, 1))
    """
    if isinstance(month, str):
        names = [m.lower() for m in MONTH_NAMES]
        if month.lower() not in names:
            raise ValueError(f"unknown month {month!r}; expected one of {', '.join(MONTH_NAMES)}")
        month = names.index(month.lower()) + 1
    if not 1 <= month <= 12:
        raise ValueError(f"month must be 1..12, got {month!r}")
    start = dt.date(year, month, 1)
    return Window(_midnight(start), _midnight(add_months(start, 1)), f"{MONTH_NAMES[month - 1]} {year}")


def quarter_window(quarter: int, year: int) -> Window:
    """A calendar quarter (Q1 = January to March).

    Example:
        >>> w = quarter_window(4, 2021); (w.start.date(), w.end.date())
        (datetime.date(2021, 10, 1), datetime.date(2022, 1, 1))
    """
    if quarter not in (1, 2, 3, 4):
        raise ValueError(f"quarter must be 1, 2, 3 or 4, got {quarter!r}")
    start = dt.date(year, 3 * (quarter - 1) + 1, 1)
    return Window(_midnight(start), _midnight(add_months(start, 3)), f"Q{quarter} {year}")


def season_window(season: str, year: int) -> Window:
    """A season; Winter of ``year`` runs from December of ``year`` to the end of February after.

    Example:
        >>> w = season_window("Winter", 2021); (w.start.date(), w.end.date())
        (datetime.date(2021, 12, 1), datetime.date(2022, 3, 1))
    """
    name = _SEASON_ALIASES.get(season.lower(), season.capitalize())
    if name not in SEASONS:
        raise ValueError(f"unknown season {season!r}; expected Winter, Spring, Summer, Autumn or Fall")
    first_month, length = SEASONS[name]
    start = dt.date(year, first_month, 1)
    return Window(_midnight(start), _midnight(add_months(start, length)), f"{name} {year}")


def past_window(today: dt.date, unit: Unit, count: int) -> Window:
    """The ``count`` units before ``today``: ``[today - count units, today)``.

    A quarter is three months; months clamp to the month's end.

    Example:
        >>> w = past_window(dt.date(2022, 8, 20), "quarter", 2); (w.start.date(), w.end.date())
        (datetime.date(2022, 2, 20), datetime.date(2022, 8, 20))
    """
    if count < 1:
        raise ValueError(f"a window needs at least one {unit}, got {count!r}")
    if unit == "day":
        start = today - dt.timedelta(days=count)
    elif unit == "week":
        start = today - dt.timedelta(weeks=count)
    elif unit == "month":
        start = add_months(today, -count)
    elif unit == "quarter":
        start = add_months(today, -3 * count)
    else:
        raise ValueError(f"unit must be day, week, month or quarter, got {unit!r}")
    plural = unit if count == 1 else f"{unit}s"
    return Window(_midnight(start), _midnight(today), f"past {count} {plural}")
