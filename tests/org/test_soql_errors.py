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
    # A case's owner may be a user or a queue: its parent is the Name object, which has no Foo, nor a user's
    # LanguageLocaleKey.
    ("SELECT Owner.Foo FROM Case", "INVALID_FIELD", "No such column 'Foo' on entity 'Name'"),
    (
        "SELECT Owner.LanguageLocaleKey FROM Case",
        "INVALID_FIELD",
        "No such column 'LanguageLocaleKey' on entity 'Name'",
    ),
    ("SELECT Contact.Owner.Foo FROM Case", "INVALID_FIELD", "No such column 'Foo' on entity 'User'"),
    ("SELECT Foo.Name FROM Case", "INVALID_FIELD", "Didn't understand relationship 'Foo' in field path"),
    ("SELECT IssueId__c.Name FROM Case", "INVALID_FIELD", "Didn't understand relationship 'IssueId__c'"),
    ("SELECT Owner FROM Case", "INVALID_FIELD", "No such column 'Owner' on entity 'Case'"),
    (
        "SELECT Id, (SELECT Id FROM Tickets) FROM Account",
        "INVALID_TYPE",
        "Didn't understand relationship 'Tickets' in FROM part",
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


# -- refusals that must point at one token -----------------------------------------------------------

_HISTORY = "SELECT CaseId__c FROM CaseHistory__c"
_HUGE = "9" * 5000  # int() refuses to read this many digits; the engine must still answer cleanly

POINTED_REFUSALS = [
    # (query, code, a fragment the message must contain, the text the caret must point at: its last occurrence)
    # Semi- and anti-joins only as terms of the top-level AND.
    (
        f"SELECT Id FROM Case WHERE Status = 'New' OR Id IN ({_HISTORY})",
        "MALFORMED_QUERY",
        "Semi join sub-selects are not allowed with the 'OR' operator",
        "IN (",
    ),
    (
        f"SELECT Id FROM Case WHERE (Status = 'New' OR Id NOT IN ({_HISTORY})) AND Priority = 'High'",
        "MALFORMED_QUERY",
        "'OR' operator",
        "NOT IN (",
    ),
    (f"SELECT Id FROM Case WHERE NOT Id IN ({_HISTORY})", "MALFORMED_QUERY", "'NOT' operator", "IN ("),
    (
        f"SELECT Id FROM Case WHERE Status = 'New' AND NOT (Id IN ({_HISTORY}))",
        "MALFORMED_QUERY",
        "'NOT' operator",
        "IN (",
    ),
    (
        f"SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Case WHERE Id IN ({_HISTORY}))",
        "MALFORMED_QUERY",
        "Nesting of semi join sub-selects is not supported",
        "IN (",
    ),
    (
        f"SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Case WHERE Id NOT IN ({_HISTORY}))",
        "MALFORMED_QUERY",
        "Nesting of semi join sub-selects",
        "NOT IN (",
    ),
    (
        f"SELECT Id FROM Case WHERE Id IN ({_HISTORY} ORDER BY CreatedDate)",
        "MALFORMED_QUERY",
        "ORDER BY is not allowed in a semi join sub-select",
        "ORDER BY",
    ),
    (f"SELECT Id FROM Case WHERE Id IN ({_HISTORY} LIMIT 5)", "MALFORMED_QUERY", "LIMIT is not allowed", "LIMIT"),
    (
        f"SELECT Id FROM Case WHERE Id NOT IN ({_HISTORY} OFFSET 1)",
        "MALFORMED_QUERY",
        "OFFSET is not allowed",
        "OFFSET",
    ),
    (
        f"SELECT Id FROM Case WHERE Id IN ({_HISTORY}) AND AccountId IN (SELECT Id FROM Account) "
        "AND ContactId NOT IN (SELECT Id FROM Contact)",
        "MALFORMED_QUERY",
        "Maximum 2 semi join sub-selects",
        "NOT IN (",
    ),
    (
        "SELECT Id FROM Case WHERE Account.Id IN (SELECT AccountId FROM Contact)",
        "MALFORMED_QUERY",
        "cannot use a relationship: 'Account.Id'",
        "Account.Id",
    ),
    (
        "SELECT Id FROM Case WHERE Id IN (SELECT CaseId__r.Id FROM CaseHistory__c)",
        "MALFORMED_QUERY",
        "through a relationship: 'CaseId__r.Id'",
        "CaseId__r.Id",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT Contact.AccountId FROM Case)",
        "MALFORMED_QUERY",
        "'Contact.AccountId'",
        "Contact.AccountId",
    ),
    (
        "SELECT Id FROM Case WHERE Id IN (SELECT Id FROM Case WHERE Status = 'New')",
        "MALFORMED_QUERY",
        "The inner and outer selects should not be on the same object type: 'Case'",
        "Case WHERE",
    ),
    # Grouping on a number with decimals.
    (
        "SELECT UnitPrice, COUNT(Id) FROM OrderItem GROUP BY UnitPrice",
        "INVALID_FIELD",
        "field 'UnitPrice' can not be grouped in a query call",
        "UnitPrice",
    ),
    (
        "SELECT Quantity, COUNT(Id) FROM OrderItem GROUP BY Quantity",
        "INVALID_FIELD",
        "field 'Quantity' can not be grouped in a query call",
        "Quantity",
    ),
    (
        "SELECT UnitPrice FROM PricebookEntry GROUP BY UnitPrice",
        "INVALID_FIELD",
        "field 'UnitPrice' can not be grouped",
        "UnitPrice",
    ),
    # An aggregate query without GROUP BY has one row: LIMIT is refused.
    ("SELECT MAX(CreatedDate) FROM Case LIMIT 1", "MALFORMED_QUERY", "LIMIT is not allowed", "LIMIT"),
    ("SELECT COUNT(Id) FROM Case LIMIT 1", "MALFORMED_QUERY", "without GROUP BY", "LIMIT"),
    ("SELECT COUNT(Id) n FROM Case WHERE Status = 'New' LIMIT 5", "MALFORMED_QUERY", "without GROUP BY", "LIMIT"),
    # Booleans cannot be aggregated.
    ("SELECT COUNT(IsActive) FROM Product2", "MALFORMED_QUERY", "field IsActive does not support", "IsActive"),
    ("SELECT MAX(IsActive) FROM Product2", "MALFORMED_QUERY", "aggregate operator MAX", "IsActive"),
    ("SELECT COUNT_DISTINCT(IsActive) FROM Pricebook2", "MALFORMED_QUERY", "COUNT_DISTINCT", "IsActive"),
    # Relative date literals reaching beyond every date.
    (
        "SELECT Id FROM Case WHERE CreatedDate = LAST_N_DAYS:99999999999",
        "MALFORMED_QUERY",
        "Invalid date literal: LAST_N_DAYS:99999999999",
        "LAST_N_DAYS",
    ),
    (
        "SELECT Id FROM Case WHERE CreatedDate = LAST_N_YEARS:99999999",
        "MALFORMED_QUERY",
        "Invalid date literal: LAST_N_YEARS:99999999",
        "LAST_N_YEARS",
    ),
    (
        "SELECT Id FROM Case WHERE CreatedDate > NEXT_N_MONTHS:999999999",
        "MALFORMED_QUERY",
        "Invalid date literal: NEXT_N_MONTHS:999999999",
        "NEXT_N_MONTHS",
    ),
    (
        "SELECT Id FROM Case WHERE ClosedDate != N_WEEKS_AGO:521801",
        "MALFORMED_QUERY",
        "N_WEEKS_AGO:521801",
        "N_WEEKS_AGO",
    ),
    (
        f"SELECT Id FROM Case WHERE CreatedDate = LAST_N_DAYS:{_HUGE}",
        "MALFORMED_QUERY",
        "Invalid date literal: LAST_N_DAYS:999",
        "LAST_N_DAYS",
    ),
    # Lone UTF-16 surrogates are no characters, escaped or raw.
    (
        "SELECT Id FROM Case WHERE Subject = '\\ud800'",
        "MALFORMED_QUERY",
        "Invalid string literal '\\ud800'",
        "'\\ud800'",
    ),
    ("SELECT Id FROM Case WHERE Subject LIKE 'a\\uDC00%'", "MALFORMED_QUERY", "Invalid string literal", "'a\\uDC00"),
    ("SELECT Id FROM Case WHERE Subject = 'x\ud800'", "MALFORMED_QUERY", "Invalid string literal 'x\\ud800'", "'x"),
    ("SELECT Id FROM Case WHERE Subject IN ('a', '\\ude00\\ud83d')", "MALFORMED_QUERY", "Invalid string", "'\\ude00"),
    # OFFSET past 2000, however many digits.
    (f"SELECT Id FROM Case OFFSET {_HUGE}", "NUMBER_OUTSIDE_VALID_RANGE", "Maximum SOQL offset", _HUGE),
]


def _caret_column(message: str) -> int:
    marker = "ERROR at Row:1:Column:"
    assert marker in message, message
    return int(message.split(marker, 1)[1].split("\n", 1)[0])


@pytest.mark.parametrize(("soql", "code", "fragment", "token"), POINTED_REFUSALS)
def test_refusals_point_at_the_offending_token(
    small_org: LocalOrg, soql: str, code: str, fragment: str, token: str
) -> None:
    with pytest.raises(OrgError) as info:
        small_org.query(soql)
    message = info.value.message
    assert info.value.code == code, message
    assert fragment in message
    assert _caret_column(message) == soql.rindex(token) + 1
    message.encode("utf-8")  # a raw lone surrogate never reaches the message: it must stay encodable


def _count(raw_conn, sql: str, params: tuple = ()) -> int:
    return raw_conn.execute(sql, params).fetchone()[0]


def test_what_the_refusals_leave_allowed(small_org: LocalOrg, raw_conn) -> None:
    # Two semi/anti-joins as terms of the top-level AND, next to an OR of plain comparisons.
    got = small_org.query(
        f"SELECT COUNT() FROM Case WHERE Id IN ({_HISTORY} WHERE Field__c = 'Case Closed') "
        "AND AccountId NOT IN (SELECT AccountId FROM Contact WHERE OwnerId = null) "
        "AND (Priority = 'High' OR Priority = 'Low')"
    )["totalSize"]
    expected = _count(
        raw_conn,
        'SELECT COUNT(*) FROM "Case" WHERE Id IN (SELECT CaseId__c FROM CaseHistory__c '
        "WHERE Field__c = 'Case Closed' AND CaseId__c IS NOT NULL) AND (AccountId IS NULL OR AccountId NOT IN "
        "(SELECT AccountId FROM Contact WHERE OwnerId IS NULL AND AccountId IS NOT NULL)) "
        "AND Priority IN ('High', 'Low')",
    )
    assert got == expected > 0
    # A field of the queried object named through its own name or alias is no relationship path.
    aliased = small_org.query(f"SELECT COUNT() FROM Case c WHERE c.Id IN ({_HISTORY})")["totalSize"]
    assert aliased == _count(raw_conn, 'SELECT COUNT(*) FROM "Case" WHERE Id IN (SELECT CaseId__c FROM CaseHistory__c)')
    # COUNT() with LIMIT, and aggregates with GROUP BY and LIMIT, stay allowed.
    assert small_org.query("SELECT COUNT() FROM Case LIMIT 1")["totalSize"] == 1
    grouped = small_org.query("SELECT Status, COUNT(Id) FROM Case GROUP BY Status LIMIT 2")["records"]
    assert len(grouped) == min(2, _count(raw_conn, 'SELECT COUNT(DISTINCT Status) FROM "Case"'))
    # Booleans may still be grouped; currency may still be summed.
    by_active = small_org.query("SELECT IsActive, COUNT(Id) n FROM Product2 GROUP BY IsActive")["records"]
    assert {r["IsActive"]: r["n"] for r in by_active} == dict(
        (bool(a), n) for a, n in raw_conn.execute('SELECT IsActive, COUNT(*) FROM "Product2" GROUP BY IsActive')
    )
    # An escaped surrogate pair spells one character, as in Java.
    pair = small_org.query("SELECT COUNT() FROM Case WHERE Subject != '\\ud83d\\ude00'")["totalSize"]
    assert pair == _count(raw_conn, 'SELECT COUNT(*) FROM "Case"')


def test_relative_literal_at_its_largest_reaches_the_first_date(small_org: LocalOrg, raw_conn) -> None:
    # SMALL_TODAY is 2023-06-15: LAST_N_YEARS:10000 starts before year 1, so it covers every date before 2023.
    got = small_org.query("SELECT COUNT() FROM Case WHERE CreatedDate = LAST_N_YEARS:10000")["totalSize"]
    assert got == _count(raw_conn, "SELECT COUNT(*) FROM \"Case\" WHERE CreatedDate < '2023-01-01'") > 0
    later = small_org.query("SELECT COUNT() FROM Case WHERE CreatedDate < NEXT_N_DAYS:3652500")["totalSize"]
    assert later == _count(raw_conn, "SELECT COUNT(*) FROM \"Case\" WHERE CreatedDate < '2023-06-16'")
    assert small_org.query(f"SELECT COUNT() FROM Case LIMIT {_HUGE}")["totalSize"] == _count(
        raw_conn, 'SELECT COUNT(*) FROM "Case"'
    )
