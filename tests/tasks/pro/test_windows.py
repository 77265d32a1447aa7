"""Pro's windows (PRO.md 2.2): both ends inclusive, quarters of three months, seasons, never past today."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from crmarena_gym.tasks.pro._windows import (
    draw_window,
    named_window,
    named_window_holding,
    relative_window,
    soql_date_in,
    soql_datetime_in,
)

TODAY = dt.date(2023, 5, 31)


@pytest.mark.parametrize(
    ("unit", "count", "start"),
    [("day", 14, "2023-05-17"), ("week", 3, "2023-05-10"), ("month", 3, "2023-02-28"), ("quarter", 2, "2022-11-30")],
)
def test_relative_windows_end_today_inclusive(unit: str, count: int, start: str) -> None:
    window = relative_window(np.random.default_rng(0), TODAY, unit, count)
    assert (window.start.isoformat(), window.end) == (start, TODAY)
    assert window.holds(f"{start}T00:00:00.000+0000") and window.holds("2023-05-31T23:59:59.000+0000")
    assert not window.holds("2023-06-01T00:00:00.000+0000")


@pytest.mark.parametrize(
    ("kind", "value", "year", "first", "last"),
    [
        ("month", "February", 2024, "2024-02-01", "2024-02-29"),
        ("quarter", 4, 2021, "2021-10-01", "2021-12-31"),
        ("season", "Winter", 2023, "2023-12-01", "2024-02-29"),
        ("season", "Autumn", 2020, "2020-09-01", "2020-11-30"),
    ],
)
def test_named_windows_are_whole_calendar_periods(kind: str, value: object, year: int, first: str, last: str) -> None:
    window = named_window(np.random.default_rng(1), kind, value, year)
    assert (window.start.isoformat(), window.end.isoformat()) == (first, last)


def test_drawn_windows_end_by_today_and_vary() -> None:
    rng = np.random.default_rng(2)
    windows = [w for _ in range(400) if (w := draw_window(rng, TODAY, earliest=dt.date(2020, 1, 1)))]
    assert all(w.end <= TODAY and w.start >= dt.date(2020, 1, 1) for w in windows)
    assert {next(iter(w.spec)) for w in windows} == {"unit", "month", "quarter", "season"}
    assert any("Fall" in w.phrase for w in windows) and any("fortnight" in w.phrase for w in windows)


def test_soql_conditions_cover_the_last_day() -> None:
    assert soql_datetime_in("CreatedDate", "2021-12-01", "2021-12-31").endswith("CreatedDate < 2022-01-01T00:00:00Z")
    assert soql_date_in("CompanySignedDate", "2021-12-01", "2021-12-31").endswith("<= 2021-12-31")


@pytest.mark.parametrize(
    ("day", "first", "last"),
    [("2022-01-15", "2021-12-01", "2022-02-28"), ("2022-12-03", "2022-12-01", "2023-02-28")],
)
def test_the_named_window_holding_a_day_holds_it(day: str, first: str, last: str) -> None:
    rng = np.random.default_rng(3)
    windows = [named_window_holding(rng, dt.date.fromisoformat(day)) for _ in range(30)]
    assert all(w.start <= dt.date.fromisoformat(day) <= w.end for w in windows)
    seasons = [w for w in windows if "season" in w.spec]
    assert seasons and all((w.start.isoformat(), w.end.isoformat()) == (first, last) for w in seasons)
