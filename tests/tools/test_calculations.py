"""The pure calculation tools: hand-computed results, and every ``Error:`` path."""

from __future__ import annotations

import calendar
import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crmarena_gym.tools import (
    calculate_average_handle_time,
    calculate_region_average_closure_times,
    find_id_with_max_value,
    find_id_with_min_value,
    get_agents_with_max_cases,
    get_agents_with_min_cases,
    get_month_to_case_count,
    get_period,
    get_qualified_agent_ids_by_case_count,
    get_start_date,
    submit,
)


def _error(result: Any, *fragments: str) -> None:
    """``result`` is an ``Error:`` string containing every fragment."""
    assert isinstance(result, str) and result.startswith("Error: "), result
    for fragment in fragments:
        assert fragment in result, (fragment, result)


# --- get_start_date --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("end", "period", "count", "start"),
    [
        ("2021-01-10T00:00:00Z", "days", 14, "2020-12-27T00:00:00Z"),
        ("2021-01-10T00:00:00Z", "weeks", 2, "2020-12-27T00:00:00Z"),
        ("2021-03-01T06:30:15Z", "days", 1, "2021-02-28T06:30:15Z"),
        ("2024-03-31T00:00:00Z", "months", 1, "2024-02-29T00:00:00Z"),  # clamped: no February 31
        ("2023-05-31T12:34:56Z", "months", 3, "2023-02-28T12:34:56Z"),
        ("2023-01-31T00:00:00Z", "months", 13, "2021-12-31T00:00:00Z"),
        ("2024-03-31T00:00:00Z", "quarters", 2, "2023-09-30T00:00:00Z"),
        ("2020-02-29T00:00:00Z", "quarters", 4, "2019-02-28T00:00:00Z"),
        ("2022-07-15T00:00:00Z", "months", 6, "2022-01-15T00:00:00Z"),
    ],
)
def test_get_start_date(end: str, period: str, count: int, start: str) -> None:
    assert get_start_date(end, period, count) == start


# ORIGINAL.md section 3: "end date minus n days, weeks, months or quarters"; the original names the units
# 'day', 'week', 'month' and 'quarter' and steps back with relativedelta (calendar months, the day clamped).
UNITS = {"day": (1, 0), "week": (7, 0), "month": (0, 1), "quarter": (0, 3)}  # (days, months) per unit


def _stepped_back(end: dt.datetime, unit: str, count: int) -> dt.datetime:
    """``count`` units before ``end``, computed here with the calendar."""
    days, months = UNITS[unit]
    if days:
        return end - dt.timedelta(days=days * count)
    index = end.year * 12 + end.month - 1 - months * count
    year, month = divmod(index, 12)
    day = min(end.day, calendar.monthrange(year, month + 1)[1])
    return end.replace(year=year, month=month + 1, day=day)


def test_the_issue_call_with_a_singular_period() -> None:
    # Issue 37: the original answers 2023-03-31T00:00:00Z; ours refused the singular "month".
    assert get_start_date(end_date="2023-05-31T00:00:00Z", period="month", interval_count=2) == "2023-03-31T00:00:00Z"


@pytest.mark.parametrize("unit", sorted(UNITS))
@pytest.mark.parametrize(
    "end", ["2023-05-31T00:00:00Z", "2024-03-31T23:59:59Z", "2020-02-29T12:00:00Z", "2021-01-01T00:00:00Z"]
)
@pytest.mark.parametrize("count", [0, 1, 2, 5, 13])
def test_singular_and_plural_periods_step_back_alike(unit: str, end: str, count: int) -> None:
    expected = _stepped_back(dt.datetime.strptime(end, "%Y-%m-%dT%H:%M:%SZ"), unit, count)
    assert get_start_date(end, unit, count) == expected.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert get_start_date(end, unit + "s", count) == get_start_date(end, unit, count)


@given(
    end=st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2100, 12, 31)).map(
        lambda d: d.replace(microsecond=0)
    ),
    unit=st.sampled_from(sorted(UNITS)),
    count=st.integers(min_value=0, max_value=400),
    plural=st.booleans(),
)
def test_periods_step_back_as_relativedelta_does(end: dt.datetime, unit: str, count: int, plural: bool) -> None:
    relativedelta = pytest.importorskip("dateutil.relativedelta").relativedelta  # the original's library
    step = {"day": relativedelta(days=count), "week": relativedelta(weeks=count)}.get(unit) or relativedelta(
        months=count * UNITS[unit][1]
    )
    got = get_start_date(end.strftime("%Y-%m-%dT%H:%M:%SZ"), unit + "s" * plural, count)
    assert got == (end - step).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("period", ["year", "years", "Month", "MONTHS", "fortnight", "q", ""])
def test_periods_the_original_refuses_are_refused(period: str) -> None:
    # The original accepts exactly 'day', 'week', 'month' and 'quarter' (ours adds their plurals).
    _error(
        get_start_date("2024-03-31T00:00:00Z", period, 1),
        "argument 'period' must be one of 'day', 'week', 'month', 'quarter', 'days', 'weeks', 'months', 'quarters'",
        repr(period),
    )


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"end_date": "2024-03-31"}, ("end_date", "YYYY-MM-DDTHH:MM:SSZ", "'2024-03-31'")),
        ({"end_date": "2024-03-31T00:00:00.000+0000"}, ("end_date", "'2024-03-31T00:00:00.000+0000'")),
        ({"end_date": "2024-13-01T00:00:00Z"}, ("end_date", "'2024-13-01T00:00:00Z'")),
        ({"end_date": "2024-02-30T00:00:00Z"}, ("end_date", "'2024-02-30T00:00:00Z'")),
        ({"end_date": "2024-03-31 00:00:00"}, ("end_date", "'2024-03-31 00:00:00'")),
        ({"end_date": 20240331}, ("argument 'end_date' must be a string", "int 20240331")),
        ({"period": "years"}, ("argument 'period' must be one of 'day', 'week', 'month', 'quarter'", "'years'")),
        ({"period": "Months"}, ("argument 'period'", "'Months'")),
        ({"interval_count": -2}, ("interval_count must be a non-negative integer, got -2",)),
        ({"interval_count": "3"}, ("argument 'interval_count' must be an integer", "str '3'")),
        ({"interval_count": 1.5}, ("argument 'interval_count' must be an integer", "float 1.5")),
        ({"interval_count": 10**12, "period": "days"}, ("leaves the calendar",)),
        ({"interval_count": 10**6, "period": "months"}, ("leaves the calendar",)),
    ],
)
def test_get_start_date_errors(kwargs: dict[str, Any], fragments: tuple[str, ...]) -> None:
    arguments = {"end_date": "2024-03-31T00:00:00Z", "period": "months", "interval_count": 1, **kwargs}
    _error(get_start_date(**arguments), *fragments)


@pytest.mark.parametrize("period", ["day", "week", "month", "quarter", "days", "weeks", "months", "quarters"])
def test_get_start_date_with_no_interval_is_the_end_date(period: str) -> None:
    # ORIGINAL.md section 6: interval_count 0 returns the end date unchanged.
    assert get_start_date("2024-03-31T10:20:30Z", period, 0) == "2024-03-31T10:20:30Z"


def test_get_start_date_accepts_an_integral_float() -> None:
    assert get_start_date("2024-03-31T00:00:00Z", "days", 2.0) == "2024-03-29T00:00:00Z"


def test_call_shape_errors() -> None:
    _error(get_start_date("2024-03-31T00:00:00Z", "days"), "missing the required argument 'interval_count'")
    _error(get_start_date("2024-03-31T00:00:00Z", "days", 1, 2), "takes 3 arguments, got 4")
    _error(get_start_date("2024-03-31T00:00:00Z", "days", 1, end_date="x"), "two values for the argument 'end_date'")
    _error(get_start_date("2024-03-31T00:00:00Z", "days", 1, unit="x"), "unknown argument 'unit'")


# --- get_period ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "year", "start", "end"),
    [
        ("January", 2021, "2021-01-01", "2021-02-01"),
        ("February", 2024, "2024-02-01", "2024-03-01"),
        ("December", 2020, "2020-12-01", "2021-01-01"),
        ("Q1", 2022, "2022-01-01", "2022-04-01"),
        ("Q2", 2022, "2022-04-01", "2022-07-01"),
        ("Q3", 2022, "2022-07-01", "2022-10-01"),
        ("Q4", 2022, "2022-10-01", "2023-01-01"),
        ("Winter", 2021, "2021-12-01", "2022-03-01"),
        ("Spring", 2020, "2020-03-01", "2020-06-01"),
        ("Summer", 2020, "2020-06-01", "2020-09-01"),
        ("Autumn", 2021, "2021-09-01", "2021-12-01"),
        ("Fall", 2021, "2021-09-01", "2021-12-01"),
    ],
)
def test_get_period(name: str, year: int, start: str, end: str) -> None:
    assert get_period(name, year) == {"start_date": start + "T00:00:00Z", "end_date": end + "T00:00:00Z"}


@pytest.mark.parametrize(
    ("name", "year", "fragments"),
    [
        ("march", 2021, ("argument 'period_name' must be one of 'January'", "'march'")),
        ("Q5", 2021, ("argument 'period_name'", "'Q5'")),
        ("Monsoon", 2021, ("'Monsoon'",)),
        ("Q1", "2021", ("argument 'year' must be an integer", "str '2021'")),
        ("Q1", 99, ("year must be a four-digit year, got 99",)),
        ("Winter", 9999, ("year must be a four-digit year, got 9999",)),
        ("Q1", None, ("argument 'year' must be an integer, got null",)),
    ],
)
def test_get_period_errors(name: Any, year: Any, fragments: tuple[str, ...]) -> None:
    _error(get_period(name, year), *fragments)


# --- agents with most / fewest cases -----------------------------------------------------------

CASES = [{"OwnerId": o} for o in ("a", "b", "b", "c", "a", None, "d")]


def test_agents_with_max_and_min_cases() -> None:
    # a: 2, b: 2, c: 1, d: 1 (the null owner is not an agent)
    assert get_agents_with_max_cases(CASES) == ["a", "b"]
    assert get_agents_with_min_cases(CASES) == ["c", "d"]
    assert get_agents_with_max_cases([{"OwnerId": "x", "Other": 1}]) == ["x"]
    assert get_agents_with_max_cases([]) == [] and get_agents_with_min_cases([]) == []
    assert get_agents_with_min_cases([{"OwnerId": None}]) == []


@pytest.mark.parametrize("fn", [get_agents_with_max_cases, get_agents_with_min_cases])
@pytest.mark.parametrize(
    ("cases", "fragments"),
    [
        ("abc", ("argument 'subset_cases' must be a list", "str 'abc'")),
        ({"OwnerId": "a"}, ("argument 'subset_cases' must be a list",)),
        ([{"OwnerId": "a"}, 3], ("argument 'subset_cases' item 1 must be an object", "int 3")),
        ([{"OwnerId": "a"}, {"Id": "x"}], ("subset_cases item 1 has no 'OwnerId' field (its fields: Id)",)),
        ([{}], ("subset_cases item 0 has no 'OwnerId' field (its fields: none)",)),
        ([{"OwnerId": ["a"]}], ("subset_cases item 0 OwnerId must be a string, got ['a']",)),
    ],
)
def test_agents_with_cases_errors(fn: Any, cases: Any, fragments: tuple[str, ...]) -> None:
    _error(fn(cases), *fragments)


# --- handle time -----------------------------------------------------------------------------------


def _case(owner: Any, created: Any, closed: Any, **extra: Any) -> dict[str, Any]:
    return {"OwnerId": owner, "CreatedDate": created, "ClosedDate": closed, **extra}


def test_calculate_average_handle_time() -> None:
    cases = [
        _case("a", "2021-01-01T10:00:00.000+0000", "2021-01-01T11:00:00.000+0000"),  # 60 min
        _case("a", "2021-01-02T10:00:00.000+0000", "2021-01-03T10:30:00.000+0000"),  # 1470 min
        _case("b", "2021-01-01T00:00:00Z", "2021-01-01T00:00:30Z"),  # 0.5 min, argument format accepted
        _case("b", "2021-01-05T00:00:00.000+0000", None),  # open: skipped
        _case(None, "2021-01-05T00:00:00.000+0000", "2021-01-06T00:00:00.000+0000"),  # no owner: skipped
        _case("c", "2021-01-01T12:00:00.000+0200", "2021-01-01T10:10:00.000+0000"),  # offsets honoured: 10 min
    ]
    assert calculate_average_handle_time(cases) == {"a": (60 + 1470) / 2, "b": 0.5, "c": 10.0}
    assert calculate_average_handle_time([]) == {}


def test_equal_averages_are_equal_floats() -> None:
    # 1/3 minute averages reached through different totals must compare equal (ties stay ties).
    cases = [_case("a", "2021-01-01T00:00:00Z", "2021-01-01T00:00:20Z")]
    cases += [_case("b", "2021-01-01T00:00:00Z", f"2021-01-01T00:00:{s:02d}Z") for s in (10, 30, 20)]
    result = calculate_average_handle_time(cases)
    assert result["a"] == result["b"]
    assert find_id_with_min_value(result) == ["a", "b"]


@pytest.mark.parametrize(
    ("cases", "fragments"),
    [
        ("x", ("argument 'cases' must be a list",)),
        ([None], ("argument 'cases' item 0 must be an object", "null")),
        ([{"OwnerId": "a", "CreatedDate": "2021-01-01T00:00:00Z"}], ("cases item 0 has no 'ClosedDate' field",)),
        ([{"CreatedDate": "x", "ClosedDate": "y"}], ("cases item 0 has no 'OwnerId' field",)),
        (
            [_case("a", "2021-01-01", "2021-01-02T00:00:00Z")],
            ("cases item 0 CreatedDate must be a datetime", "'2021-01-01'"),
        ),
        ([_case("a", "2021-01-01T00:00:00Z", "soon")], ("cases item 0 ClosedDate must be a datetime", "'soon'")),
        ([_case("a", None, "2021-01-01T00:00:00Z")], ("cases item 0 CreatedDate must be a datetime", "None")),
        ([_case("a", "2021-02-30T00:00:00Z", "2021-03-01T00:00:00Z")], ("'2021-02-30T00:00:00Z'",)),
        ([_case(7, "2021-01-01T00:00:00Z", "2021-01-02T00:00:00Z")], ("cases item 0 OwnerId must be a string, got 7",)),
    ],
)
def test_calculate_average_handle_time_errors(cases: Any, fragments: tuple[str, ...]) -> None:
    _error(calculate_average_handle_time(cases), *fragments)


# --- qualified agents ------------------------------------------------------------------------------


def test_get_qualified_agent_ids_by_case_count_is_strict() -> None:
    handled = {"a": 3, "b": 1, "c": 2, "d": 0}
    assert get_qualified_agent_ids_by_case_count(handled, 1) == ["a", "c"]
    assert get_qualified_agent_ids_by_case_count(handled, 2) == ["a"]
    assert get_qualified_agent_ids_by_case_count(handled, 0) == ["a", "b", "c"]
    assert get_qualified_agent_ids_by_case_count(handled, 3) == []
    assert get_qualified_agent_ids_by_case_count({}, 0) == []
    assert get_qualified_agent_ids_by_case_count({"a": 2.0}, 1.0) == ["a"]


@pytest.mark.parametrize(
    ("handled", "n", "fragments"),
    [
        (["a"], 1, ("argument 'agent_handled_cases' must be an object (a dict)", "list ['a']")),
        ({"a": "3"}, 1, ("argument 'agent_handled_cases' value for key 'a' must be an integer", "str '3'")),
        ({"a": 2.5}, 1, ("value for key 'a' must be an integer", "float 2.5")),
        ({"a": None}, 1, ("value for key 'a' must be an integer, got null",)),
        ({"a": 3}, "1", ("argument 'n_cases' must be an integer", "str '1'")),
        ({"a": 3}, None, ("argument 'n_cases' must be an integer, got null",)),
    ],
)
def test_get_qualified_agent_ids_by_case_count_errors(handled: Any, n: Any, fragments: tuple[str, ...]) -> None:
    _error(get_qualified_agent_ids_by_case_count(handled, n), *fragments)


# --- region closure times --------------------------------------------------------------------------


def _regional(state: Any, created: Any, closed: Any) -> dict[str, Any]:
    return {"ShippingState": state, "CreatedDate": created, "ClosedDate": closed, "OwnerId": "x"}


def test_calculate_region_average_closure_times() -> None:
    cases = [
        _regional("CA", "2021-01-01T10:00:00.000+0000", "2021-01-01T10:01:00.000+0000"),  # 60 s
        _regional("CA", "2021-01-01T10:00:00.000+0000", "2021-01-01T12:00:00.000+0000"),  # 7200 s
        _regional("NY", "2021-01-01T10:00:00.000+0000", "2021-01-02T10:00:00.000+0000"),  # 86400 s
        _regional("NY", "2021-01-01T10:00:00.000+0000", None),  # open: skipped
        _regional(None, "2021-01-01T10:00:00.000+0000", "2021-01-01T10:00:05.000+0000"),  # no state: skipped
    ]
    assert calculate_region_average_closure_times(cases) == {"CA": (60 + 7200) / 2, "NY": 86400.0}
    assert calculate_region_average_closure_times([]) == {}


@pytest.mark.parametrize(
    ("cases", "fragments"),
    [
        ({"CA": 1}, ("argument 'cases' must be a list",)),
        ([{"CreatedDate": "x", "ClosedDate": "y"}], ("cases item 0 has no 'ShippingState' field",)),
        ([{"ShippingState": "CA", "ClosedDate": "y"}], ("cases item 0 has no 'CreatedDate' field",)),
        ([_regional("CA", "2021-01-01T00:00:00Z", 5)], ("cases item 0 ClosedDate must be a datetime", "5")),
        ([_regional(["CA"], "2021-01-01T00:00:00Z", "2021-01-02T00:00:00Z")], ("ShippingState must be a string",)),
    ],
)
def test_calculate_region_average_closure_times_errors(cases: Any, fragments: tuple[str, ...]) -> None:
    _error(calculate_region_average_closure_times(cases), *fragments)


# --- max / min over a mapping ----------------------------------------------------------------------


def test_non_finite_numbers_are_refused() -> None:
    for fn in (find_id_with_max_value, find_id_with_min_value):
        result = fn(values_by_id={"a": float("nan"), "b": 2.0})
        assert result.startswith("Error:") and "finite" in result and "nan" in result
        assert fn(values_by_id={"a": float("inf")}).startswith("Error:")


def test_find_id_with_max_and_min_value() -> None:
    values = {"a": 2, "b": 5.5, "c": 5.5, "d": -1, "e": -1.0}
    assert find_id_with_max_value(values) == ["b", "c"]
    assert find_id_with_min_value(values) == ["d", "e"]
    assert find_id_with_max_value({"only": 0}) == ["only"] == find_id_with_min_value({"only": 0})
    assert find_id_with_max_value({}) == [] and find_id_with_min_value({}) == []


@pytest.mark.parametrize("fn", [find_id_with_max_value, find_id_with_min_value])
@pytest.mark.parametrize(
    ("values", "fragments"),
    [
        ([1, 2], ("argument 'values_by_id' must be an object (a dict)", "list [1, 2]")),
        ("{'a': 1}", ("argument 'values_by_id' must be an object (a dict)", "str")),
        ({"a": "1"}, ("argument 'values_by_id' value for key 'a' must be a number", "str '1'")),
        ({"a": None}, ("value for key 'a' must be a number, got null",)),
        ({"a": True}, ("value for key 'a' must be a number, got bool True",)),
        ({"a": [1]}, ("value for key 'a' must be a number, got list [1]",)),
    ],
)
def test_find_id_errors(fn: Any, values: Any, fragments: tuple[str, ...]) -> None:
    _error(fn(values), *fragments)


# --- month counts ------------------------------------------------------------------------------------


def test_get_month_to_case_count_merges_years_in_case_order() -> None:
    cases = [
        {"CreatedDate": "2021-03-02T10:00:00.000+0000"},
        {"CreatedDate": "2020-12-31T23:59:59.000+0000"},
        {"CreatedDate": "2022-03-30T10:00:00.000+0000"},
        {"CreatedDate": "2022-01-01T00:00:00Z"},
        {"CreatedDate": "2021-01-01T00:30:00.000+0100"},  # 2020-12-31T23:30 UTC: December
    ]
    result = get_month_to_case_count(cases)
    assert result == {"January": 1, "March": 2, "December": 2}
    assert list(result) == ["March", "December", "January"]  # as the months first come (ORIGINAL.md section 6)
    assert get_month_to_case_count([]) == {}


@pytest.mark.parametrize(
    ("cases", "fragments"),
    [
        (5, ("argument 'cases' must be a list", "int 5")),
        ([{"ClosedDate": None}], ("cases item 0 has no 'CreatedDate' field (its fields: ClosedDate)",)),
        ([{"CreatedDate": "March"}], ("cases item 0 CreatedDate must be a datetime", "'March'")),
        ([{"CreatedDate": None}], ("cases item 0 CreatedDate must be a datetime", "None")),
    ],
)
def test_get_month_to_case_count_errors(cases: Any, fragments: tuple[str, ...]) -> None:
    _error(get_month_to_case_count(cases), *fragments)


# --- submit --------------------------------------------------------------------------------------------


def test_submit_returns_the_content() -> None:
    assert submit("005Ws000001xadBIAQ") == "005Ws000001xadBIAQ"
    assert submit("None") == "None"
    _error(submit(None), "argument 'content' must be a string, got null")
    _error(submit(["a"]), "argument 'content' must be a string, got list ['a']")
    _error(submit(), "missing the required argument 'content'")
