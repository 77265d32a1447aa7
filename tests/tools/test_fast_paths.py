"""The tools' checks that decide whole lists at C speed answer as the item-by-item checks and plain loops do."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crmarena_gym.tools import (
    calculate_average_handle_time,
    calculate_region_average_closure_times,
    get_agents_with_max_cases,
    get_month_to_case_count,
)
from crmarena_gym.tools._common import ToolInputError, are_ids_of, is_id_of, require_fields
from crmarena_gym.tools._signature import _BadValue, _check

_IDS = ["005Ws000001xadBIAQ", "005Ws000001xadC", "500Ws000001aBcDIAZ", "001Ws000001aBcDIAZ", "bad", ""]
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(),
    st.sampled_from(_IDS),
    st.text(max_size=4),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 3)), inner, max_size=3)
    ),
    max_leaves=6,
)


def _outcome(check: Any) -> Any:
    try:
        return ("ok", check())
    except _BadValue as bad:
        return ("bad", bad.args[0])


def _same(a: Any, b: Any) -> bool:
    # NaN is never equal to itself; its repr is.
    return repr(a) == repr(b) and type(a) is type(b)


# Values of each hint's own kind, so that whole lists of them (the fast path's case) come up often.
_OWN = {
    str: st.text(max_size=4),
    int: st.integers(),
    float: st.floats(),
    dict[str, Any]: st.dictionaries(st.text(max_size=3), _SCALARS, max_size=3),
}


@pytest.mark.parametrize("item", list(_OWN))
@given(data=st.data())
@settings(max_examples=40)
def test_a_list_check_answers_as_its_items_checked_one_by_one(item: Any, data: st.DataObject) -> None:
    own = _OWN[item]
    values = data.draw(
        st.lists(own, max_size=6) | st.lists(st.integers(), max_size=3) | st.lists(own | _VALUES, max_size=6)
    )

    def one_by_one() -> list[Any]:
        return [_check(v, item, f"argument 'a' item {i}") for i, v in enumerate(values)]

    expected, got = _outcome(one_by_one), _outcome(lambda: _check(values, list[item], "argument 'a'"))
    assert _same(got, expected)


@pytest.mark.parametrize("entry", [int, float])
@given(data=st.data())
@settings(max_examples=40)
def test_a_dict_check_answers_as_its_values_checked_one_by_one(entry: Any, data: st.DataObject) -> None:
    own = _OWN[entry]
    values = data.draw(
        st.dictionaries(st.text(max_size=4), own, max_size=5)
        | st.dictionaries(st.text(max_size=4), own | _VALUES, max_size=5)
    )

    def one_by_one() -> dict[str, Any]:
        return {k: _check(v, entry, f"argument 'a' value for key {k!r}") for k, v in values.items()}

    expected, got = _outcome(one_by_one), _outcome(lambda: _check(values, dict[str, entry], "argument 'a'"))
    assert _same(got, expected)


@given(st.lists(st.lists(st.one_of(st.sampled_from(_IDS), _SCALARS), max_size=5), max_size=4))
@settings(max_examples=50)
def test_ids_are_accepted_as_one_by_one(batches: list[list[Any]]) -> None:
    # Several batches in turn: later ones meet the ids the earlier ones left accepted.
    for values in batches:
        for object_name in (None, "User", "Case"):
            assert are_ids_of(values, object_name) == all(is_id_of(v, object_name) for v in values)


@given(st.lists(st.dictionaries(st.sampled_from(["OwnerId", "CreatedDate", "x"]), st.none(), max_size=3), max_size=5))
def test_missing_fields_are_named_as_a_row_by_row_loop_names_them(rows: list[dict[str, Any]]) -> None:
    fields = ("OwnerId", "CreatedDate")
    missing = next(((i, f) for i, row in enumerate(rows) for f in fields if f not in row), None)
    if missing is None:
        require_fields(rows, "cases", fields)
        return
    with pytest.raises(ToolInputError, match=f"cases item {missing[0]} has no '{missing[1]}' field"):
        require_fields(rows, "cases", fields)


_MOMENTS = st.sampled_from(
    ["2021-01-01T10:00:00.000+0000", "2021-01-03T09:30:00.000+0000", "2021-01-01T10:00:00Z", "2021-02-28T23:59:59Z"]
)
_CASES = st.lists(
    st.fixed_dictionaries(
        {
            "OwnerId": st.one_of(st.none(), st.sampled_from(["005a", "005b", "005c"])),
            "ShippingState": st.one_of(st.none(), st.sampled_from(["CA", "NY"])),
            "CreatedDate": _MOMENTS,
            "ClosedDate": st.one_of(st.none(), _MOMENTS),
        }
    ),
    max_size=12,
)


def _seconds(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC).replace(tzinfo=None)


@given(_CASES)
@settings(max_examples=50)
def test_durations_and_counts_match_plain_loops(cases: list[dict[str, Any]]) -> None:
    for key, tool, scale in (
        ("OwnerId", calculate_average_handle_time, 60),
        ("ShippingState", calculate_region_average_closure_times, 1),
    ):
        totals: dict[str, list[float]] = {}
        for c in cases:
            if c[key] is None or c["ClosedDate"] is None:
                continue
            entry = totals.setdefault(c[key], [0.0, 0])
            entry[0] += (_seconds(c["ClosedDate"]) - _seconds(c["CreatedDate"])).total_seconds()
            entry[1] += 1
        assert tool(cases) == {k: total / (scale * n) for k, (total, n) in totals.items()}
    owners = Counter(c["OwnerId"] for c in cases if c["OwnerId"] is not None)
    assert get_agents_with_max_cases(cases) == [o for o, n in owners.items() if n == max(owners.values())]
    months = Counter(_seconds(c["CreatedDate"]).strftime("%B") for c in cases)
    assert list(get_month_to_case_count(cases).items()) == list(months.items())


def test_a_bad_record_among_good_ones_is_named() -> None:
    good = {"OwnerId": "005a", "CreatedDate": "2021-01-01T10:00:00Z", "ClosedDate": "2021-01-01T11:00:00Z"}
    cases = [good, good, {**good, "ClosedDate": "soon"}]
    assert calculate_average_handle_time(cases).startswith("Error: cases item 2 ClosedDate must be a datetime")
    assert get_agents_with_max_cases([good, {**good, "OwnerId": 7}]).startswith(
        "Error: subset_cases item 1 OwnerId must be a string"
    )
    assert get_month_to_case_count([good, {**good, "CreatedDate": 3}]).startswith(
        "Error: cases item 1 CreatedDate must be a datetime"
    )


_ODD = st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["soon", "", "2021-13-01T00:00:00Z"]), _MOMENTS)


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "OwnerId": st.one_of(st.none(), st.sampled_from(["005a", "005b"]), st.integers(0, 2)),
                "CreatedDate": _ODD,
                "ClosedDate": _ODD,
            }
        ),
        max_size=8,
    )
)
@settings(max_examples=150)
def test_durations_of_odd_records_answer_as_a_record_by_record_loop(cases: list[dict[str, Any]]) -> None:
    # The first record that counts and fails is named; otherwise the averages of the records that count.
    def moment(value: Any) -> dt.datetime | None:
        try:
            return _seconds(value) if isinstance(value, str) and "T" in value else None
        except ValueError:
            return None

    totals: dict[str, list[float]] = {}
    expected: Any = None
    for i, c in enumerate(cases):
        owner, created, closed = c["OwnerId"], moment(c["CreatedDate"]), moment(c["ClosedDate"])
        if owner is None or c["ClosedDate"] is None:
            continue
        if not isinstance(owner, str):
            expected = f"Error: cases item {i} OwnerId must be a string"
        elif created is None:
            expected = f"Error: cases item {i} CreatedDate must be a datetime"
        elif closed is None:
            expected = f"Error: cases item {i} ClosedDate must be a datetime"
        if expected is not None:
            break
        entry = totals.setdefault(owner, [0.0, 0])
        entry[0] += (closed - created).total_seconds()  # type: ignore[operator]
        entry[1] += 1
    got = calculate_average_handle_time(cases)
    if expected is None:
        assert got == {k: total / (60 * n) for k, (total, n) in totals.items()}
    else:
        assert isinstance(got, str) and got.startswith(expected), (got, expected)
