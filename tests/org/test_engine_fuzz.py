"""Fuzzing the SOQL engine: random and mutated queries only ever raise OrgError, and never write."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crmarena_gym.org import LocalOrg, OrgError
from tests.org.conftest import file_sha256

CORPUS = [
    "SELECT Id, Subject, Status FROM Case WHERE Status = 'Closed' LIMIT 10",
    "SELECT Id, Owner.Name, Contact.Owner.Email FROM Case ORDER BY CreatedDate DESC NULLS LAST",
    "SELECT OwnerId, COUNT(Id) cnt FROM Case GROUP BY OwnerId HAVING COUNT(Id) > 1 ORDER BY COUNT(Id) DESC",
    "SELECT COUNT() FROM Case WHERE CreatedDate = LAST_N_DAYS:30",
    "SELECT Id FROM Case WHERE Id IN (SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment')",
    "SELECT Id FROM Case WHERE (Priority = 'High' OR Priority = 'Low') AND NOT Status = 'New'",
    "SELECT CALENDAR_MONTH(CreatedDate), COUNT(Id) FROM Case GROUP BY CALENDAR_MONTH(CreatedDate)",
    "SELECT Product2Id, Order.EffectiveDate FROM OrderItem WHERE Order.AccountId = '001Ws00000000G9IAI'",
    "SELECT Id, Title FROM Knowledge__kav WHERE Title LIKE '%Return%' AND PublishStatus = 'Online'",
    "SELECT SUM(Quantity), AVG(UnitPrice), MIN(UnitPrice), MAX(Quantity) FROM OrderItem",
    "SELECT Id FROM Case WHERE CreatedDate >= 2022-01-01T00:00:00Z AND CreatedDate < 2022-04-01T00:00:00+02:00",
    "SELECT Id FROM Order WHERE EffectiveDate = 2022-03-05 OR EffectiveDate = THIS_YEAR",
    "SELECT Id, Name FROM Account WHERE ShippingState NOT IN ('CA', null) OFFSET 3",
    "SELECT DAY_ONLY(CreatedDate) d, COUNT_DISTINCT(OwnerId) FROM Case GROUP BY DAY_ONLY(CreatedDate)",
    "SELECT Id FROM Contact WHERE OwnerId NOT IN (SELECT OwnerId FROM Case WHERE Status = 'Closed')",
    "SELECT NewValue__c, COUNT(Id) FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' GROUP BY NewValue__c",
]

VOCABULARY = [
    "SELECT",
    "FROM",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "IN",
    "LIKE",
    "GROUP",
    "BY",
    "HAVING",
    "ORDER",
    "ASC",
    "DESC",
    "NULLS",
    "FIRST",
    "LAST",
    "LIMIT",
    "OFFSET",
    "null",
    "true",
    "false",
    "(",
    ")",
    ",",
    ".",
    "=",
    "!=",
    "<>",
    "<",
    ">=",
    "*",
    "-",
    "+",
    ";",
    ":",
    "'",
    "\\",
    "COUNT()",
    "COUNT(Id)",
    "SUM(Subject)",
    "Id",
    "Subject",
    "Description",
    "Owner.Name",
    "Account.Owner.Name",
    "Case",
    "Order",
    "User",
    "crmarena_manifest",
    "sqlite_master",
    "Foo__c",
    "CreatedDate",
    "EffectiveDate",
    "TODAY",
    "LAST_N_DAYS:7",
    "N_DAYS_AGO:99999999",
    "LAST_N_YEARS:9999",
    "NEXT_N_MONTHS:99999",
    "2020-01-01",
    "2020-01-01T00:00:00Z",
    "9999-12-31T23:59:59-14:00",
    "0000-01-01",
    "99999999999999999999999",
    "1e308",
    "-1",
    "'x'",
    "'\\u0000'",
    "'%'",
    "'500Ws00000000G9IAI'",
    "(SELECT Id FROM Case)",
    "CALENDAR_MONTH(CreatedDate)",
    "DAY_ONLY(CreatedDate)",
    "ATTACH",
    "PRAGMA",
]
ALPHABET = st.sampled_from([*"abcXYZ019 _.,()'\"\\%*=<>!:;-+\n\t{}", "é", "\x00"])


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(CORPUS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "duplicate", "insert", "token"]))
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 12)))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(st.text(ALPHABET, min_size=1, max_size=4)) + text[i:]
        else:
            words = text.split(" ")
            k = draw(st.integers(0, len(words) - 1))
            words[k] = draw(st.sampled_from(VOCABULARY) | st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True))
            text = " ".join(words)
    return text


@st.composite
def token_soup(draw: st.DrawFn) -> str:
    return " ".join(draw(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=14)))


def _check(org: LocalOrg, soql: str) -> None:
    try:
        result = org._run(soql)  # below query()'s last-resort net: a bug must show up here
    except OrgError:
        return
    assert result["done"] is True and isinstance(result["records"], list)
    assert result["totalSize"] >= len(result["records"])


def _settings(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@_settings(150)
@given(soql=mutated())
def test_mutated_queries_raise_only_org_errors(small_org: LocalOrg, soql: str) -> None:
    _check(small_org, soql)


@_settings(80)
@given(soql=token_soup())
def test_token_soup_raises_only_org_errors(small_org: LocalOrg, soql: str) -> None:
    _check(small_org, soql)


@_settings(70)
@given(soql=st.text(max_size=80) | st.text(ALPHABET, max_size=60).map(lambda s: "SELECT Id FROM Case WHERE " + s))
def test_random_text_raises_only_org_errors(small_org: LocalOrg, soql: str) -> None:
    _check(small_org, soql)


def test_file_hash_unchanged_by_fuzzing(small_org: LocalOrg, small_org_path: Path) -> None:
    before = file_sha256(small_org_path)
    for soql in CORPUS:
        _check(small_org, soql)
        assert small_org.query(soql)["done"] is True  # every corpus query is valid
    test_token_soup_raises_only_org_errors(small_org)
    assert file_sha256(small_org_path) == before
