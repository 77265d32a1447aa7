"""The query tools' records are the org's records read field by field (a field left out is null), copied, never
changed in place: on the org's real answers and on a live org's odd ones."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

from crmarena_gym.org import LocalOrg, Org
from crmarena_gym.tools import get_cases, get_shipping_state, get_tool, search_knowledge_articles


def _same(got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> bool:
    """Equal rows with their keys in the same order (which the observation's text shows)."""
    return got == expected and [list(r) for r in got] == [list(r) for r in expected]


class _Answers(Org):
    """An org that answers every query with the given records (as a live org may: fields left out)."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records

    def query(self, soql: str) -> dict[str, Any]:
        return {"totalSize": len(self.records), "done": True, "records": self.records}

    def search(self, sosl: str) -> dict[str, Any]:
        return {"searchRecords": self.records}


def test_cases_are_read_as_field_by_field(env_org: Path) -> None:
    org = LocalOrg(env_org)
    names = ("OwnerId", "CreatedDate", "ClosedDate", "AccountId")
    records = org.query(f"SELECT {', '.join(names)} FROM Case WHERE Status = 'Closed'")["records"]
    expected = [{name: r.get(name) for name in names} for r in records]
    assert len(expected) > 100 and _same(get_cases(org, statuses=["Closed"]), expected)
    # Records without some fields (read as null) and with others: field by field.
    odd = [{"OwnerId": "005Ws000001xadBIAQ", "Extra": 1}, *records[:3]]
    assert _same(get_cases(_Answers(odd), statuses=["Closed"]), [{n: r.get(n) for n in names} for r in odd])
    articles = [{"Id": "ka0Ws000001xadBIAQ", "Title": "t"}, {"FAQ_Answer__c": "a"}]
    assert search_knowledge_articles(_Answers(articles), "t") == [
        {"Id": "ka0Ws000001xadBIAQ", "Title": "t", "Content": None},
        {"Id": None, "Title": None, "Content": "a"},
    ]


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
    # A trusted caller's records are not checked (nor made dicts): other mappings are copied too.
    proxies = [MappingProxyType(c) for c in cases]
    assert _same(get_tool("get_shipping_state").call({"cases": proxies}, org, trusted=True), expected)


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
