"""The task-specific calculation functions: pure Python over their arguments, no org access.

Their docstrings' first paragraphs and ``Args:`` sections are what the model reads (the schemas are
generated from them), so they speak to the model; the rest is for programmers.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import Counter, defaultdict
from typing import Any, Literal

from crmarena_gym.tools._common import (
    ToolInputError,
    add_months,
    format_datetime,
    parse_datetime_argument,
    parse_row_datetime,
    require_fields,
    row_datetime,
)
from crmarena_gym.tools._tool import tool_function

__all__ = [
    "calculate_average_handle_time",
    "calculate_region_average_closure_times",
    "find_id_with_max_value",
    "find_id_with_min_value",
    "get_agents_with_max_cases",
    "get_agents_with_min_cases",
    "get_month_to_case_count",
    "get_period",
    "get_qualified_agent_ids_by_case_count",
    "get_start_date",
]

# The original's units, singular, and their plurals, which mean the same.
PeriodUnit = Literal["day", "week", "month", "quarter", "days", "weeks", "months", "quarters"]
PeriodName = Literal[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
    "Q1",
    "Q2",
    "Q3",
    "Q4",
    "Winter",
    "Spring",
    "Summer",
    "Autumn",
    "Fall",
]

# English names written out: calendar.month_name follows the process locale.
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
# (first month, number of months); Winter starts in December of the named year.
_SPANS = {
    **{name: (i + 1, 1) for i, name in enumerate(_MONTHS)},
    "Q1": (1, 3),
    "Q2": (4, 3),
    "Q3": (7, 3),
    "Q4": (10, 3),
    "Winter": (12, 3),
    "Spring": (3, 3),
    "Summer": (6, 3),
    "Autumn": (9, 3),
    "Fall": (9, 3),
}
_MONTHS_PER_UNIT = {"month": 1, "months": 1, "quarter": 3, "quarters": 3}
_DAYS_PER_UNIT = {"day": 1, "days": 1, "week": 7, "weeks": 7}


@tool_function(kind="calculation", dependency="independent", needs_org=False)
def get_start_date(end_date: str, period: PeriodUnit, interval_count: int) -> str:
    """Compute the start of a window that reaches back a number of days, weeks, months or quarters from end_date.

    Args:
        end_date: The end of the window, a UTC datetime YYYY-MM-DDTHH:MM:SSZ (for "the past 3 months"
            use today at 00:00:00).
        period: The unit to step back by: "day", "week", "month" or "quarter" (a quarter is 3 months);
            the plurals "days", "weeks", "months" and "quarters" mean the same.
        interval_count: How many units to step back, a non-negative integer (0 gives end_date back).

    Returns:
        The start datetime, in the same format. Months and quarters move by calendar months, with the
        day clamped to the end of a shorter month (March 31 minus one month is February 28 or 29).

    Example:
        >>> get_start_date("2024-03-31T00:00:00Z", "month", 1)
        '2024-02-29T00:00:00Z'
        >>> get_start_date("2024-03-31T00:00:00Z", "weeks", 2)
        '2024-03-17T00:00:00Z'
    """
    end = parse_datetime_argument(end_date, "end_date")
    if interval_count < 0:
        raise ToolInputError(f"interval_count must be a non-negative integer, got {interval_count}")
    if period in _DAYS_PER_UNIT:
        try:
            start = end - dt.timedelta(days=_DAYS_PER_UNIT[period] * interval_count)
        except OverflowError:
            raise ToolInputError(f"{interval_count} {period} before {end_date} leaves the calendar") from None
    else:
        start = add_months(end, -_MONTHS_PER_UNIT[period] * interval_count)
    return format_datetime(start)


@tool_function(kind="calculation", dependency="independent", needs_org=False)
def get_period(period_name: PeriodName, year: int) -> dict[str, str]:
    """Give the start and end datetimes of a named month, quarter or season of a year; the end is exclusive.

    Args:
        period_name: A month ("January" to "December"), a quarter ("Q1" to "Q4") or a season ("Winter",
            "Spring", "Summer", "Autumn" or "Fall"). Winter of a year runs from December 1 of that year to
            March 1 of the next.
        year: The year, for example 2022.

    Returns:
        ``{"start_date": ..., "end_date": ...}`` as ``YYYY-MM-DDTHH:MM:SSZ``, both at midnight; the
        window holds the moments ``start_date <= t < end_date``.

    Example:
        >>> get_period("Winter", 2021)
        {'start_date': '2021-12-01T00:00:00Z', 'end_date': '2022-03-01T00:00:00Z'}
        >>> get_period("Q2", 2020)
        {'start_date': '2020-04-01T00:00:00Z', 'end_date': '2020-07-01T00:00:00Z'}
    """
    if not 1000 <= year <= 9998:
        raise ToolInputError(f"year must be a four-digit year, got {year}")
    first_month, months = _SPANS[period_name]
    start = dt.datetime(year, first_month, 1)
    return {"start_date": format_datetime(start), "end_date": format_datetime(add_months(start, months))}


def _owner_counts(rows: list[dict[str, Any]], name: str) -> Counter[str]:
    require_fields(rows, name, ("OwnerId",))
    owners = [r["OwnerId"] for r in rows]
    if not _TEXT_OR_NULL.issuperset(map(type, owners)):
        for i, owner in enumerate(owners):
            if owner is not None and not isinstance(owner, str):
                _require_text(owner, f"{name} item {i} OwnerId")
    counts = Counter(owners)  # a Counter keeps the order of first appearance, which taking None out keeps
    counts.pop(None, None)
    return counts


_TEXT_OR_NULL = frozenset({str, type(None)})


def _require_text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise ToolInputError(f"{where} must be a string, got {value!r}")


def _ties(values: dict[str, Any], best: Any) -> list[str]:
    return [k for k, v in values.items() if v == best]


@tool_function(kind="calculation", dependency="dependent", needs_org=False)
def get_agents_with_max_cases(subset_cases: list[dict[str, Any]]) -> list[str]:
    """Find the agents (OwnerId) who own the most cases in a list of case records; every tied agent is returned.

    Args:
        subset_cases: Case records, each with an OwnerId field (for example the output of get_cases).

    Returns:
        The OwnerIds with the highest number of cases, in order of first appearance; ``[]`` for an
        empty list. Records whose OwnerId is null are not counted.

    Example:
        >>> get_agents_with_max_cases([{"OwnerId": "a"}, {"OwnerId": "b"}, {"OwnerId": "b"}])
        ['b']
    """
    counts = _owner_counts(subset_cases, "subset_cases")
    return _ties(counts, max(counts.values())) if counts else []


@tool_function(kind="calculation", dependency="dependent", needs_org=False)
def get_agents_with_min_cases(subset_cases: list[dict[str, Any]]) -> list[str]:
    """Find the agents (OwnerId) who own the fewest cases in a list of case records; every tied agent is returned.

    Only agents that own at least one case in the list are considered.

    Args:
        subset_cases: Case records, each with an OwnerId field (for example the output of get_cases).

    Returns:
        The OwnerIds with the lowest number of cases, in order of first appearance; ``[]`` for an
        empty list. Records whose OwnerId is null are not counted.

    Example:
        >>> get_agents_with_min_cases([{"OwnerId": "a"}, {"OwnerId": "b"}, {"OwnerId": "b"}, {"OwnerId": "c"}])
        ['a', 'c']
    """
    counts = _owner_counts(subset_cases, "subset_cases")
    return _ties(counts, min(counts.values())) if counts else []


def _durations(cases: list[dict[str, Any]], key: str) -> dict[Any, tuple[float, int]]:
    """``{key value: (total seconds from CreatedDate to ClosedDate, number of cases)}``.

    Cases with a null key or ClosedDate are skipped; the key order is that of first appearance.
    """
    require_fields(cases, "cases", (key, "CreatedDate", "ClosedDate"))
    totals: dict[Any, list[float]] = defaultdict(lambda: [0.0, 0])
    for i, case in enumerate(cases):
        group, closed_at = case[key], case["ClosedDate"]
        if group is None or closed_at is None:
            continue
        created_at = case["CreatedDate"]
        if (
            type(group) is str
            and type(created_at) is str
            and type(closed_at) is str
            and len(created_at) + len(closed_at) <= _SPAN_CHARS  # longer: no datetimes, and not kept by the cache
        ):
            seconds = _span_seconds(created_at, closed_at)
        else:
            seconds = None
        if seconds is None:
            # The messages (which name the record) are written only for a record that fails.
            _require_text(group, f"cases item {i} {key}")
            created = parse_row_datetime(created_at, f"cases item {i} CreatedDate")
            closed = parse_row_datetime(closed_at, f"cases item {i} ClosedDate")
            seconds = (closed - created).total_seconds()
        entry = totals[group]
        entry[0] += seconds
        entry[1] += 1
    return {k: (total, int(count)) for k, (total, count) in totals.items()}


# Most characters of the two datetimes whose span is kept (two record datetimes are 56).
_SPAN_CHARS = 80


# The same cases are pasted back to several tools and episodes: their durations are kept (bounded: 16,384 pairs
# of texts of at most _SPAN_CHARS characters).
@functools.lru_cache(maxsize=16384)
def _span_seconds(created_at: str, closed_at: str) -> float | None:
    """Seconds from one record datetime to another; None when either is no datetime."""
    created, closed = row_datetime(created_at), row_datetime(closed_at)
    return None if created is None or closed is None else (closed - created).total_seconds()


@tool_function(kind="calculation", dependency="dependent", needs_org=False)
def calculate_average_handle_time(cases: list[dict[str, Any]]) -> dict[str, float]:
    """Compute each agent's average handle time in minutes (ClosedDate minus CreatedDate) over a list of case records.

    Args:
        cases: Case records, each with OwnerId, CreatedDate and ClosedDate fields (for example the output
            of get_cases). Cases that are still open (ClosedDate null) are skipped.

    Returns:
        ``{OwnerId: average minutes}``, agents in order of first appearance. Records with a null
        OwnerId or ClosedDate are skipped.

    Example:
        >>> calculate_average_handle_time([
        ...     {"OwnerId": "a", "CreatedDate": "2021-01-01T10:00:00Z", "ClosedDate": "2021-01-01T11:00:00Z"},
        ...     {"OwnerId": "a", "CreatedDate": "2021-01-02T10:00:00Z", "ClosedDate": "2021-01-02T10:30:00Z"},
        ... ])
        {'a': 45.0}
    """
    seconds = _durations(cases, "OwnerId")
    # One division of exact totals: equal true averages give equal floats, so ties stay ties.
    return {owner: total / (60 * count) for owner, (total, count) in seconds.items()}


@tool_function(kind="calculation", dependency="dependent", needs_org=False)
def get_qualified_agent_ids_by_case_count(agent_handled_cases: dict[str, int], n_cases: int) -> list[str]:
    """List the agents who handled strictly more than n_cases cases.

    Args:
        agent_handled_cases: Cases handled per agent id, for example the output of
            get_agent_handled_cases_by_period.
        n_cases: The threshold; an agent qualifies with a count greater than this (not equal).

    Returns:
        The qualifying agent ids, in the order given.

    Example:
        >>> get_qualified_agent_ids_by_case_count({"a": 3, "b": 1, "c": 2}, 1)
        ['a', 'c']
    """
    return [agent for agent, count in agent_handled_cases.items() if count > n_cases]


@tool_function(kind="calculation", dependency="dependent", needs_org=False)
def calculate_region_average_closure_times(cases: list[dict[str, Any]]) -> dict[str, float]:
    """Compute the average time to close a case, in seconds, per shipping state.

    Args:
        cases: Case records, each with ShippingState, CreatedDate and ClosedDate fields (for example the
            output of get_shipping_state). Open cases (ClosedDate null) and cases without a state are
            skipped.

    Returns:
        ``{state: average seconds from CreatedDate to ClosedDate}``, states in order of first appearance.

    Example:
        >>> calculate_region_average_closure_times([
        ...     {"ShippingState": "CA", "CreatedDate": "2021-01-01T10:00:00Z", "ClosedDate": "2021-01-01T10:01:00Z"},
        ...     {"ShippingState": "NY", "CreatedDate": "2021-01-01T10:00:00.000+0000", "ClosedDate": None},
        ... ])
        {'CA': 60.0}
    """
    seconds = _durations(cases, "ShippingState")
    return {state: total / count for state, (total, count) in seconds.items()}


@tool_function(kind="calculation", dependency="dependent", needs_org=False)
def find_id_with_max_value(values_by_id: dict[str, float]) -> list[str]:
    """Find the keys with the largest value in a mapping of id to number; every tied key is returned.

    Args:
        values_by_id: Numbers keyed by id, for example the output of calculate_average_handle_time or
            get_issue_counts.

    Returns:
        The keys whose value equals the maximum, in the order given; ``[]`` for an empty mapping.

    Example:
        >>> find_id_with_max_value({"a": 2, "b": 5, "c": 5})
        ['b', 'c']
    """
    return _ties(values_by_id, max(values_by_id.values())) if values_by_id else []


@tool_function(kind="calculation", dependency="dependent", needs_org=False)
def find_id_with_min_value(values_by_id: dict[str, float]) -> list[str]:
    """Find the keys with the smallest value in a mapping of id to number; every tied key is returned.

    Args:
        values_by_id: Numbers keyed by id, for example the output of calculate_average_handle_time or
            calculate_region_average_closure_times.

    Returns:
        The keys whose value equals the minimum, in the order given; ``[]`` for an empty mapping.

    Example:
        >>> find_id_with_min_value({"a": 2, "b": 5, "c": 2.0})
        ['a', 'c']
    """
    return _ties(values_by_id, min(values_by_id.values())) if values_by_id else []


@tool_function(kind="calculation", dependency="dependent", needs_org=False)
def get_month_to_case_count(cases: list[dict[str, Any]]) -> dict[str, int]:
    """Count case records per calendar month of their CreatedDate; the same month of different years counts together.

    Args:
        cases: Case records, each with a CreatedDate field (for example the output of get_cases).

    Returns:
        ``{English month name: count}`` for the months that have cases, in the order the months first
        appear among the cases (as the original orders them).

    Example:
        >>> get_month_to_case_count([
        ...     {"CreatedDate": "2021-03-02T10:00:00.000+0000"},
        ...     {"CreatedDate": "2020-12-24T10:00:00.000+0000"},
        ...     {"CreatedDate": "2022-03-30T10:00:00.000+0000"},
        ... ])
        {'March': 2, 'December': 1}
    """
    require_fields(cases, "cases", ("CreatedDate",))
    counts: Counter[str] = Counter()
    for i, c in enumerate(cases):
        created = row_datetime(c["CreatedDate"])
        if created is None:  # the message names the record only for one that fails
            created = parse_row_datetime(c["CreatedDate"], f"cases item {i} CreatedDate")
        counts[_MONTHS[created.month - 1]] += 1
    return dict(counts)  # a Counter keeps the order of first appearance
