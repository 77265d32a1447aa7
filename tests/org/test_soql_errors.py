"""Salesforce's refusals: each bad query fails with its error code, naming the offending token."""

from __future__ import annotations

import pytest

from crmarena_gym.org import LocalOrg, OrgError

REFUSALS = [
    # (query, code, a fragment the message must contain)
    ("SELECT * FROM Case", "MALFORMED_QUERY", "unexpected token: '*'"),
    ("SELECT Id FROM", "MALFORMED_QUERY", "unexpected token: <EOF>"),
    ("SELECT Id", "MALFORMED_QUERY", "unexpected token: <EOF>"),
    ("SELECT Id, Subject Case", "MALFORMED_QUERY", "unexpected token"),
    ("SELECT Id FROM Case LIMIT 5 garbage", "MALFORMED_QUERY", "unexpected token: 'garbage'"),
    ("SELECT Id FROM Case; DROP TABLE Case", "MALFORMED_QUERY", "unexpected token: ';'"),
    ("DELETE FROM Case", "MALFORMED_QUERY", "unexpected token: 'DELETE'"),
    ("", "MALFORMED_QUERY", "<EOF>"),
    (
        "SELECT Id FROM Case WHERE Status = 'New' AND Priority = 'Low' OR Channel = 'Web'",
        "MALFORMED_QUERY",
        "unexpected token: 'OR'",
    ),
    (
        "SELECT Id FROM Case WHERE Status = 'New' OR Priority = 'Low' AND Channel = 'Web'",
        "MALFORMED_QUERY",
        "unexpected token: 'AND'",
    ),
    (
        "SELECT Id FROM Foo",
        "INVALID_TYPE",
        "sObject type 'Foo' is not supported. If you are attempting to use a custom object",
    ),
    ("SELECT Id FROM crmarena_manifest", "INVALID_TYPE", "sObject type 'crmarena_manifest' is not supported"),
    ("SELECT Id FROM sqlite_master", "INVALID_TYPE", "sObject type 'sqlite_master'"),
    (
        "SELECT Foo FROM Case",
        "INVALID_FIELD",
        "No such column 'Foo' on entity 'Case'. If you are attempting to use a custom field",
    ),
    ("SELECT Id FROM Case WHERE Foo__c = 'x'", "INVALID_FIELD", "No such column 'Foo__c' on entity 'Case'"),
    ("SELECT Owner.Foo FROM Case", "INVALID_FIELD", "No such column 'Foo' on entity 'User'"),
    ("SELECT Foo.Name FROM Case", "INVALID_FIELD", "Didn't understand relationship 'Foo' in field path"),
    ("SELECT IssueId__c.Name FROM Case", "INVALID_FIELD", "Didn't understand relationship 'IssueId__c'"),
    ("SELECT Owner FROM Case", "INVALID_FIELD", "No such column 'Owner' on entity 'Case'"),
    (
        "SELECT Id, (SELECT Id FROM Cases) FROM Account",
        "INVALID_TYPE",
        "Didn't understand relationship 'Cases' in FROM part",
    ),
    ("SELECT Id FROM Case WHERE CreatedDate - 1 > 2020-01-01", "MALFORMED_QUERY", "unexpected token: '-'"),
    ("SELECT ClosedDate - CreatedDate FROM Case", "MALFORMED_QUERY", "unexpected token: '-'"),
    (
        "SELECT Id FROM Case WHERE Description = 'x'",
        "INVALID_FIELD",
        "field 'Description' can not be filtered in a query call",
    ),
    ("SELECT Id FROM Case WHERE Description LIKE '%x%'", "INVALID_FIELD", "field 'Description' can not be filtered"),
    (
        "SELECT Id FROM Knowledge__kav WHERE FAQ_Answer__c != null",
        "INVALID_FIELD",
        "field 'FAQ_Answer__c' can not be filtered",
    ),
    (
        "SELECT Description, COUNT(Id) FROM Case GROUP BY Description",
        "INVALID_FIELD",
        "field 'Description' can not be grouped in a query call",
    ),
    (
        "SELECT Id FROM Case ORDER BY Description",
        "INVALID_FIELD",
        "field 'Description' can not be sorted in a query call",
    ),
    ("SELECT Subject, COUNT(Id) FROM Case", "MALFORMED_QUERY", "Field must be grouped or aggregated: Subject"),
    (
        "SELECT Subject, COUNT(Id) FROM Case GROUP BY Status",
        "MALFORMED_QUERY",
        "Field must be grouped or aggregated: Subject",
    ),
    (
        "SELECT Status FROM Case GROUP BY Status ORDER BY CreatedDate",
        "MALFORMED_QUERY",
        "Field must be grouped or aggregated: CreatedDate",
    ),
    (
        "SELECT CALENDAR_MONTH(CreatedDate) FROM Case",
        "MALFORMED_QUERY",
        "Field must be grouped or aggregated: CALENDAR_MONTH(CreatedDate)",
    ),
    (
        "SELECT Id FROM Case WHERE CreatedDate > 2020-01-01",
        "INVALID_FIELD",
        "field 'CreatedDate' must be of type dateTime",
    ),
    (
        "SELECT Id FROM Order WHERE EffectiveDate > 2020-01-01T00:00:00Z",
        "INVALID_FIELD",
        "field 'EffectiveDate' must be of type date",
    ),
    (
        "SELECT Id FROM Case WHERE CreatedDate > '2020-01-01'",
        "INVALID_FIELD",
        "must be of type dateTime and should not be enclosed in quotes",
    ),
    ("SELECT Id FROM OrderItem WHERE Quantity = '2'", "INVALID_FIELD", "field 'Quantity' must be of type double"),
    ("SELECT Id FROM Product2 WHERE IsActive = 'true'", "INVALID_FIELD", "must be of type boolean"),
    (
        "SELECT Id FROM Case WHERE Subject = 5",
        "INVALID_FIELD",
        "must be of type string and should be enclosed in quotes",
    ),
    ("SELECT Id FROM Case WHERE Status = TODAY", "INVALID_FIELD", "field 'Status' must be of type string"),
    ("SELECT Id FROM Case WHERE Id = 'abc'", "INVALID_QUERY_FILTER_OPERATOR", "invalid ID field: abc"),
    (
        "SELECT Id FROM Case WHERE OwnerId IN ('005Ws00000000G9IAI', 'nope')",
        "INVALID_QUERY_FILTER_OPERATOR",
        "invalid ID field: nope",
    ),
    ("SELECT Id FROM Case WHERE CreatedDate = 2020-13-45T00:00:00Z", "MALFORMED_QUERY", "invalid datetime"),
    ("SELECT Id FROM Order WHERE EffectiveDate = 2021-02-30", "MALFORMED_QUERY", "invalid date: 2021-02-30"),
    ("SELECT Id FROM Case WHERE CreatedDate = LAST_N_DAYS", "MALFORMED_QUERY", "LAST_N_DAYS"),
    ("SELECT Id FROM Case WHERE CreatedDate = LAST_N_DAYZ:3", "MALFORMED_QUERY", "LAST_N_DAYZ"),
    ("SELECT Id FROM Case WHERE CreatedDate = TODAY:3", "MALFORMED_QUERY", "TODAY:3"),
    (
        "SELECT Id FROM Case WHERE Subject = 'a\\qb'",
        "MALFORMED_QUERY",
        "Illegal character sequence '\\q' in string literal",
    ),
    ("SELECT Id FROM Case WHERE Subject = 'open", "MALFORMED_QUERY", "'open"),
    ("SELECT Subject s FROM Case", "MALFORMED_QUERY", "Only aggregate expressions use field aliasing"),
    ("SELECT Id, Id FROM Case", "MALFORMED_QUERY", "duplicate field selected: Id"),
    ("SELECT COUNT(Id) n, MAX(CreatedDate) n FROM Case", "MALFORMED_QUERY", "duplicate alias: n"),
    ("SELECT COUNT(), Id FROM Case", "MALFORMED_QUERY", "COUNT()"),
    ("SELECT SUM(Subject) FROM Case", "MALFORMED_QUERY", "field Subject does not support aggregate operator SUM"),
    (
        "SELECT COUNT(Description) FROM Case",
        "MALFORMED_QUERY",
        "field Description does not support aggregate operator COUNT",
    ),
    ("SELECT Id FROM Case WHERE COUNT(Id) > 1", "MALFORMED_QUERY", "COUNT(Id)"),
    ("SELECT COUNT(Id) FROM Case GROUP BY COUNT(Id)", "MALFORMED_QUERY", "COUNT(Id)"),
    ("SELECT LOWER(Subject) FROM Case", "MALFORMED_QUERY", "LOWER"),
    (
        "SELECT CALENDAR_MONTH(Subject), COUNT(Id) FROM Case GROUP BY CALENDAR_MONTH(Subject)",
        "MALFORMED_QUERY",
        "Subject",
    ),
    ("SELECT Id FROM Case WHERE Subject INCLUDES ('a')", "INVALID_QUERY_FILTER_OPERATOR", "Subject"),
    ("SELECT Id FROM Case WHERE Subject IN (SELECT Id FROM Contact)", "MALFORMED_QUERY", "Subject"),
    ("SELECT Id FROM Case WHERE Id IN (SELECT Subject FROM Case)", "MALFORMED_QUERY", "Subject"),
    ("SELECT Id FROM Case WHERE Id IN (SELECT Id, ParentId FROM EmailMessage)", "MALFORMED_QUERY", "exactly one"),
    (
        "SELECT Id FROM Case WHERE Id IN (SELECT ContactId FROM Case)",
        "MALFORMED_QUERY",
        "should point to the same object type",
    ),
    ("SELECT Id FROM Case ORDER BY cnt", "INVALID_FIELD", "No such column 'cnt'"),
    ("SELECT Id FROM Case OFFSET 2001", "NUMBER_OUTSIDE_VALID_RANGE", "Maximum SOQL offset allowed is 2000"),
    ("SELECT Id FROM Case WHERE Subject = 'a' AND", "MALFORMED_QUERY", "<EOF>"),
    ("SELECT Id FROM Case WHERE (Subject = 'a'", "MALFORMED_QUERY", "<EOF>"),
    ("SELECT Id FROM Case WHERE OwnerId = Owner.Id", "MALFORMED_QUERY", "unexpected token"),
]


@pytest.mark.parametrize(("soql", "code", "fragment"), REFUSALS)
def test_refusals(small_org: LocalOrg, soql: str, code: str, fragment: str) -> None:
    with pytest.raises(OrgError) as info:
        small_org.query(soql)
    assert info.value.code == code, info.value.message
    assert fragment in info.value.message
    assert str(info.value).startswith(f"{code}: ")


def test_message_points_at_the_offending_token(small_org: LocalOrg) -> None:
    with pytest.raises(OrgError) as info:
        small_org.query("SELECT Id, Subjekt FROM Case")
    assert info.value.message.startswith("\nSELECT Id, Subjekt FROM Case\n           ^\nERROR at Row:1:Column:12\n")
    with pytest.raises(OrgError) as info:
        small_org.query("SELECT Id\nFROM Case\nWHERE Status = 'New' AND Priority = 'Low' OR Channel = 'Web'")
    assert "ERROR at Row:3:Column:43" in info.value.message


def test_refusals_are_cached_and_raised_again(small_org: LocalOrg) -> None:
    for _ in range(2):
        with pytest.raises(OrgError, match="INVALID_TYPE"):
            small_org.query("SELECT Id FROM Nope")


def test_non_text_query_is_refused(small_org: LocalOrg) -> None:
    with pytest.raises(OrgError) as info:
        small_org.query(None)  # type: ignore[arg-type]
    assert info.value.code == "MALFORMED_QUERY"
