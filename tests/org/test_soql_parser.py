"""The parser, literals and date ranges on their own (no database)."""

from __future__ import annotations

import datetime as dt

import pytest

from crmarena_gym.org import OrgError
from crmarena_gym.org.soql import (
    RELATIVE_LITERALS,
    RELATIVE_LITERALS_WITH_N,
    Catalog,
    canonical_id,
    compile_query,
    decode_string,
    parse,
    parse_datetime,
    relative_range,
)
from crmarena_gym.org.soql._ast import And, Compare, InSelect, Not, Or
from crmarena_gym.schema import make_id


def test_keywords_are_case_insensitive_and_object_names_may_be_keywords() -> None:
    q = parse("select Id from Order where Status = 'Activated' order by EffectiveDate desc nulls last limit 3 offset 1")
    assert q.object_name == "Order" and q.limit == 3 and q.offset == 1
    assert q.order_by[0].descending and q.order_by[0].nulls_first is False
    assert isinstance(q.where, Compare) and q.where.right.value == "Activated"


def test_condition_tree_shapes() -> None:
    q = parse(
        "SELECT Id FROM Case WHERE (a = 1 OR b = 2) AND NOT c = 3 AND Id IN (SELECT CaseId__c FROM CaseHistory__c)"
    )
    assert isinstance(q.where, And) and len(q.where.items) == 3
    assert isinstance(q.where.items[0], Or) and isinstance(q.where.items[1], Not)
    assert isinstance(q.where.items[2], InSelect) and q.where.items[2].query.object_name == "CaseHistory__c"


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (r"'it\'s'", "it's"),
        (r"'a\\b'", "a\\b"),
        (r"'line\nbreak'", "line\nbreak"),
        (r"'tab\tq'", "tab\tq"),
        (r"'quote\"'", 'quote"'),
        (r"'\u00e9t\u00E9'", "été"),
        (r"'100\%'", "100%"),
    ],
)
def test_string_escapes(raw: str, value: str) -> None:
    assert decode_string(raw, raw, 0) == value


def test_like_keeps_wildcard_escapes() -> None:
    assert decode_string(r"'a\%b\_c\\d%'", "", 0, like=True) == r"a\%b\_c\\d%"


@pytest.mark.parametrize(
    ("literal", "stored"),
    [
        ("2023-01-01T00:00:00Z", "2023-01-01T00:00:00.000+0000"),
        ("2023-01-01T00:00:00+02:00", "2022-12-31T22:00:00.000+0000"),
        ("2023-01-01T23:30:00-0800", "2023-01-02T07:30:00.000+0000"),
        ("2023-01-01T10:00:00.25Z", "2023-01-01T10:00:00.250+0000"),
    ],
)
def test_datetime_literals_become_stored_utc_text(literal: str, stored: str) -> None:
    assert parse_datetime(literal) == stored


def test_every_relative_literal_is_accepted() -> None:
    catalog = Catalog.full()
    for name in sorted(RELATIVE_LITERALS) + [f"{n}:3" for n in sorted(RELATIVE_LITERALS_WITH_N)]:
        text = f"SELECT Id FROM Case WHERE CreatedDate = {name}"
        plan = compile_query(text, parse(text), catalog)
        start, end = plan.bind(dt.date(2024, 2, 29))
        assert start < end, name
    assert {"YESTERDAY", "TODAY", "TOMORROW", "LAST_90_DAYS", "NEXT_90_DAYS", "THIS_FISCAL_YEAR"} <= RELATIVE_LITERALS
    for unit in ("DAYS", "WEEKS", "MONTHS", "QUARTERS", "YEARS", "FISCAL_QUARTERS", "FISCAL_YEARS"):
        assert {f"LAST_N_{unit}", f"NEXT_N_{unit}", f"N_{unit}_AGO"} <= RELATIVE_LITERALS_WITH_N
    for unit in ("WEEK", "MONTH", "QUARTER", "YEAR"):
        assert {f"THIS_{unit}", f"LAST_{unit}", f"NEXT_{unit}"} <= RELATIVE_LITERALS


@pytest.mark.parametrize(
    ("name", "n", "start", "end"),
    [
        # today = Thursday 2024-02-29 (leap day)
        ("LAST_N_DAYS", 1, "2024-02-28", "2024-03-01"),
        ("NEXT_N_DAYS", 2, "2024-03-01", "2024-03-03"),
        ("NEXT_90_DAYS", None, "2024-03-01", "2024-05-30"),
        ("TOMORROW", None, "2024-03-01", "2024-03-02"),
        ("NEXT_WEEK", None, "2024-03-03", "2024-03-10"),
        ("NEXT_N_WEEKS", 2, "2024-03-03", "2024-03-17"),
        ("N_WEEKS_AGO", 1, "2024-02-18", "2024-02-25"),
        ("NEXT_MONTH", None, "2024-03-01", "2024-04-01"),
        ("NEXT_N_MONTHS", 11, "2024-03-01", "2025-02-01"),
        ("LAST_N_MONTHS", 14, "2022-12-01", "2024-02-01"),
        ("NEXT_QUARTER", None, "2024-04-01", "2024-07-01"),
        ("NEXT_N_QUARTERS", 3, "2024-04-01", "2025-01-01"),
        ("NEXT_YEAR", None, "2025-01-01", "2026-01-01"),
        ("NEXT_N_YEARS", 2, "2025-01-01", "2027-01-01"),
        ("N_YEARS_AGO", 4, "2020-01-01", "2021-01-01"),
        ("LAST_N_YEARS", 2, "2022-01-01", "2024-01-01"),
        ("LAST_N_FISCAL_QUARTERS", 1, "2023-10-01", "2024-01-01"),
        ("N_FISCAL_YEARS_AGO", 1, "2023-01-01", "2024-01-01"),
    ],
)
def test_relative_ranges(name: str, n: int | None, start: str, end: str) -> None:
    assert relative_range(name, n, dt.date(2024, 2, 29)) == (dt.date.fromisoformat(start), dt.date.fromisoformat(end))


def test_canonical_ids() -> None:
    full = make_id("500", 123456)
    assert canonical_id(full) == full
    assert canonical_id(full[:15]) == full
    assert canonical_id(full.swapcase()[:15] + full[15:].lower()) == full
    assert canonical_id("abc") is None and canonical_id("500Ws000007qlrj!!!") is None


def test_parse_errors_are_org_errors_with_position() -> None:
    with pytest.raises(OrgError) as info:
        parse("SELECT Id FROM Case WHERE")
    assert info.value.code == "MALFORMED_QUERY" and "ERROR at Row:1:Column:" in info.value.message


def test_deep_nesting_is_refused_not_crashing() -> None:
    text = "SELECT Id FROM Case WHERE " + "(" * 3000 + "Status = 'New'" + ")" * 3000
    with pytest.raises(OrgError):
        compile_query(text, parse(text), Catalog.full())
