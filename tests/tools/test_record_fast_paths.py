"""The query tools' records copied at C speed are the records read field by field, on the org's real answers and
on records of any other shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from crmarena_gym.org import LocalOrg
from crmarena_gym.tools import get_cases, get_shipping_state, search_knowledge_articles
from crmarena_gym.tools._queries import _CASE_FIELDS, _fields


def _field_by_field(records: list[Any], names: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{name: r.get(name) for name in names} for r in records]


def _same(got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> bool:
    """Equal rows with their keys in the same order (which the observation's text shows)."""
    return got == expected and [list(r) for r in got] == [list(r) for r in expected]


def test_the_orgs_case_records_are_copied_as_read_field_by_field(env_org: Path) -> None:
    org = LocalOrg(env_org)
    records = org.query(f"SELECT {', '.join(_CASE_FIELDS)} FROM Case")["records"]
    assert len(records) > 100 and any(r["ClosedDate"] is None for r in records)
    before = [dict(r) for r in records]
    rows = _fields(records, _CASE_FIELDS)
    assert _same(rows, _field_by_field(records, _CASE_FIELDS))
    assert records == before  # the org's records are left as they were
    start = min(r["CreatedDate"] for r in records)[:10] + "T00:00:00Z"
    assert _same(get_cases(org, start_date=start), _field_by_field(records, _CASE_FIELDS))


def test_the_shipping_states_are_added_to_copies(env_org: Path) -> None:
    org = LocalOrg(env_org)
    cases = get_cases(org, statuses=["Closed"])[:50]
    cases[0] = {"ShippingState": "old", **cases[0]}  # a case that has the field keeps it in its place
    before = [dict(c) for c in cases]
    states = {r["Id"]: r["ShippingState"] for r in org.query("SELECT Id, ShippingState FROM Account")["records"]}
    expected = [{**c, "ShippingState": states.get(c["AccountId"])} for c in cases]
    got = get_shipping_state(org, cases)
    assert isinstance(got, list) and _same(got, expected)
    assert cases == before and all(g is not c for g, c in zip(got, cases, strict=True))


def test_articles_are_read_as_field_by_field(env_org: Path) -> None:
    org = LocalOrg(env_org)
    for term in ("return", "warranty", "gift card"):
        sosl = (
            f"FIND {{{term}}} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, FAQ_Answer__c"
            " WHERE PublishStatus = 'Online' AND Language = 'en_US')"
        )
        records = org.search(sosl)["searchRecords"]
        expected = [{"Id": r.get("Id"), "Title": r.get("Title"), "Content": r.get("FAQ_Answer__c")} for r in records]
        assert _same(search_knowledge_articles(org, term), expected)


_KEYS = st.sampled_from(["attributes", "OwnerId", "CreatedDate", "ClosedDate", "AccountId", "Other"])


@given(
    st.lists(st.dictionaries(_KEYS, st.one_of(st.none(), st.text(max_size=3)), max_size=6), max_size=4),
    st.booleans(),
)
@settings(max_examples=200)
def test_records_of_any_shape_are_read_as_field_by_field(records: list[dict[str, Any]], shaped: bool) -> None:
    if shaped:  # most records in the org's shape, so that lists of them all in it come up often
        records = [{"attributes": {}, **dict.fromkeys(_CASE_FIELDS, "x")}, *records[:1]]
    assert _same(_fields(records, _CASE_FIELDS), _field_by_field(records, _CASE_FIELDS))
