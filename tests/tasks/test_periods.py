from __future__ import annotations

import datetime as dt

import pytest

from crmarena_gym.tasks import add_months, month_window, past_window, quarter_window, season_window

D = dt.datetime


def test_named_windows_by_hand() -> None:
    assert (month_window("december", 2023).start, month_window(12, 2023).end) == (D(2023, 12, 1), D(2024, 1, 1))
    assert (quarter_window(1, 2022).start, quarter_window(1, 2022).end) == (D(2022, 1, 1), D(2022, 4, 1))
    winter = season_window("Winter", 2020)
    assert (winter.start, winter.end) == (D(2020, 12, 1), D(2021, 3, 1))
    fall = season_window("fall", 2021)
    assert (fall.start, fall.end, fall.label) == (D(2021, 9, 1), D(2021, 12, 1), "Autumn 2021")
    assert winter.contains(D(2021, 2, 28, 23, 59)) and not winter.contains(D(2021, 3, 1))


def test_relative_windows_by_hand() -> None:
    today = dt.date(2024, 3, 31)
    assert past_window(today, "day", 14).start == D(2024, 3, 17)
    assert past_window(today, "week", 2).start == D(2024, 3, 17)
    assert past_window(today, "month", 1).start == D(2024, 2, 29)  # clamped to February's end
    assert past_window(today, "quarter", 2).start == D(2023, 9, 30)
    assert past_window(today, "month", 5).end == D(2024, 3, 31)
    assert add_months(dt.date(2023, 1, 31), 13) == dt.date(2024, 2, 29)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: month_window("Smarch", 2020), "'Smarch'"),
        (lambda: month_window(13, 2020), "13"),
        (lambda: quarter_window(5, 2020), "5"),
        (lambda: season_window("Monsoon", 2020), "'Monsoon'"),
        (lambda: past_window(dt.date(2020, 1, 1), "month", 0), "0"),
        (lambda: past_window(dt.date(2020, 1, 1), "year", 1), "'year'"),  # type: ignore[arg-type]
    ],
)
def test_bad_windows_quote_the_value(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call()
