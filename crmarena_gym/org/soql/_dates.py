"""Date and datetime literals of SOQL, and the ranges of the relative ones.

Stored values are text: dates ``2020-12-22`` and datetimes ``2020-12-22T11:00:00.000+0000`` in UTC,
so comparing the text compares the instants. Relative literals (``LAST_N_DAYS:7``) denote a range of
whole days ``[start, end)`` computed from an injected "today" (UTC), never from the wall clock here.
Weeks start on Sunday (the en_US locale) and fiscal periods equal calendar periods (the org's fiscal
year starts in January).
"""

from __future__ import annotations

import datetime as dt
import re

_DATETIME_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:(Z)|([+-])(\d{2}):?(\d{2}))$", re.IGNORECASE
)
_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")

# name -> (unit, kind); kind: this/last/next (no n), or last_n/next_n/n_ago (takes n).
_FIXED: dict[str, tuple[str, str, int]] = {
    "YESTERDAY": ("day", "ago", 1),
    "TODAY": ("day", "ago", 0),
    "TOMORROW": ("day", "ago", -1),
    "LAST_90_DAYS": ("day", "last_n", 90),
    "NEXT_90_DAYS": ("day", "next_n", 90),
}
for _unit, _plural in (("week", "WEEK"), ("month", "MONTH"), ("quarter", "QUARTER"), ("year", "YEAR")):
    _FIXED[f"THIS_{_plural}"] = (_unit, "ago", 0)
    _FIXED[f"LAST_{_plural}"] = (_unit, "ago", 1)
    _FIXED[f"NEXT_{_plural}"] = (_unit, "ago", -1)
for _unit, _plural in (("quarter", "QUARTER"), ("year", "YEAR")):
    _FIXED[f"THIS_FISCAL_{_plural}"] = (_unit, "ago", 0)
    _FIXED[f"LAST_FISCAL_{_plural}"] = (_unit, "ago", 1)
    _FIXED[f"NEXT_FISCAL_{_plural}"] = (_unit, "ago", -1)

_WITH_N: dict[str, tuple[str, str]] = {}
for _unit, _plural in (
    ("day", "DAYS"),
    ("week", "WEEKS"),
    ("month", "MONTHS"),
    ("quarter", "QUARTERS"),
    ("year", "YEARS"),
    ("quarter", "FISCAL_QUARTERS"),
    ("year", "FISCAL_YEARS"),
):
    _WITH_N[f"LAST_N_{_plural}"] = (_unit, "last_n")
    _WITH_N[f"NEXT_N_{_plural}"] = (_unit, "next_n")
    _WITH_N[f"N_{_plural}_AGO"] = (_unit, "ago")

#: The largest ``n`` of a relative date literal, by unit: about ten thousand years, the span of dates.
MAX_RELATIVE_N = {"day": 3_652_500, "week": 521_800, "month": 120_000, "quarter": 40_000, "year": 10_000}

#: Every relative date literal name, without and with ``:n``.
RELATIVE_LITERALS = frozenset(_FIXED)
RELATIVE_LITERALS_WITH_N = frozenset(_WITH_N)


class DateLiteralError(ValueError):
    """A malformed date, datetime or relative date literal."""


def parse_date(text: str) -> dt.date:
    """A ``YYYY-MM-DD`` literal as a date.

    Example:
        >>> parse_date("2020-09-03")
        datetime.date(2020, 9, 3)
    """
    m = _DATE_RE.match(text)
    if not m:
        raise DateLiteralError(f"invalid date: {text}")
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError as exc:
        raise DateLiteralError(f"invalid date: {text}") from exc


def parse_datetime(text: str) -> str:
    """A datetime literal in the stored form: UTC, milliseconds, ``+0000``.

    Example:
        >>> parse_datetime("2023-01-01T02:30:00+02:00")
        '2023-01-01T00:30:00.000+0000'
    """
    m = _DATETIME_RE.match(text)
    if not m:
        raise DateLiteralError(f"invalid datetime: {text}")
    frac = (m[7] or "0")[:6].ljust(6, "0")
    try:
        value = dt.datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), int(frac))
        if not m[8]:
            sign = 1 if m[9] == "+" else -1
            hours, minutes = int(m[10]), int(m[11])
            if hours > 23 or minutes > 59:
                raise ValueError("offset out of range")
            value -= sign * dt.timedelta(hours=hours, minutes=minutes)
    except (ValueError, OverflowError) as exc:
        raise DateLiteralError(f"invalid datetime: {text}") from exc
    return format_datetime(value)


def format_datetime(value: dt.datetime) -> str:
    """The stored text of a naive UTC datetime."""
    return f"{value.strftime('%Y-%m-%dT%H:%M:%S')}.{value.microsecond // 1000:03d}+0000"


def format_day_start(day: dt.date) -> str:
    """The stored text of midnight UTC starting ``day``."""
    return f"{day.isoformat()}T00:00:00.000+0000"


def check_relative(name: str, n: int | None, raw: str | None = None) -> None:
    """Raise DateLiteralError unless ``name`` (upper case) with ``n`` is a relative date literal.

    ``raw`` is the literal as written, quoted in the message. ``n`` may span at most about ten thousand
    years (:data:`MAX_RELATIVE_N`): a larger one names no date at all.

    Example:
        >>> try:
        ...     check_relative("LAST_N_YEARS", 99999999, "LAST_N_YEARS:99999999")
        ... except DateLiteralError as exc:
        ...     print(exc)
        Invalid date literal: LAST_N_YEARS:99999999 (n must be at most 10000)
    """
    shown = raw if raw is not None else name if n is None else f"{name}:{n}"
    if name in _FIXED:
        if n is not None:
            raise DateLiteralError(f"Invalid date literal: {shown}")
    elif name in _WITH_N:
        if n is None:
            raise DateLiteralError(f"Invalid date literal: {name} needs a number, as in {name}:3")
        most = MAX_RELATIVE_N[_WITH_N[name][0]]
        if n > most:
            raise DateLiteralError(f"Invalid date literal: {shown} (n must be at most {most})")
    else:
        raise DateLiteralError(f"unexpected token: '{name}'")


def _period_start(day: dt.date, unit: str) -> dt.date:
    if unit == "day":
        return day
    if unit == "week":  # weeks start on Sunday
        return day - dt.timedelta(days=(day.weekday() + 1) % 7)
    if unit == "month":
        return day.replace(day=1)
    if unit == "quarter":
        return dt.date(day.year, (day.month - 1) // 3 * 3 + 1, 1)
    return dt.date(day.year, 1, 1)


def _shift(start: dt.date, unit: str, k: int) -> dt.date:
    # A range reaching past year 1 or 9999 stops there: every stored date is inside it.
    if unit in ("day", "week"):
        try:
            return start + dt.timedelta(days=k * (7 if unit == "week" else 1))
        except OverflowError:
            return dt.date.max if k > 0 else dt.date.min
    months = {"month": 1, "quarter": 3, "year": 12}[unit] * k
    index = start.year * 12 + start.month - 1 + months
    if index < dt.MINYEAR * 12:
        return dt.date.min
    if index > dt.MAXYEAR * 12 + 11:
        return dt.date.max
    return dt.date(index // 12, index % 12 + 1, 1)


def relative_range(name: str, n: int | None, today: dt.date) -> tuple[dt.date, dt.date]:
    """The days ``[start, end)`` that a relative date literal denotes on ``today``.

    ``LAST_N_DAYS:n`` includes today (n + 1 days); ``NEXT_N_DAYS:n`` starts tomorrow; ``LAST_N_MONTHS:n``
    (and weeks, quarters, years) covers the n whole periods before the current one; ``N_MONTHS_AGO:n``
    is the single period n periods back.

    Example:
        >>> relative_range("LAST_N_DAYS", 2, dt.date(2024, 3, 10))
        (datetime.date(2024, 3, 8), datetime.date(2024, 3, 11))
        >>> relative_range("LAST_N_MONTHS", 2, dt.date(2024, 3, 10))
        (datetime.date(2024, 1, 1), datetime.date(2024, 3, 1))
    """
    if name in _FIXED:
        unit, kind, k = _FIXED[name]
    else:
        unit, kind = _WITH_N[name]
        k = int(n or 0)
    current = _period_start(today, unit)
    if kind == "ago":
        start = _shift(current, unit, -k)
        return start, _shift(start, unit, 1)
    if kind == "last_n":
        if unit == "day":  # LAST_N_DAYS includes today
            return _shift(current, unit, -k), _shift(current, unit, 1)
        return _shift(current, unit, -k), current
    nxt = _shift(current, unit, 1)
    return nxt, _shift(nxt, unit, k)
