"""Refusals the SOQL and SOSL Reference documents, and the valid query each one points to instead.

Sections cited: "COUNT() and COUNT(fieldName)" (COUNT() must be alone, takes no ORDER BY, and no GROUP BY
from API 19.0); "HAVING" (it filters the groups of a GROUP BY); "Considerations When Using GROUP BY"
(only groupable fields: no datetime, double, currency, long text or auto-number field).
"""

from __future__ import annotations

import sqlite3

import pytest

from crmarena_gym.org import LocalOrg, OrgError


@pytest.mark.parametrize(
    ("soql", "fragment", "caret"),
    [
        ("SELECT COUNT() FROM Case ORDER BY CreatedDate", "COUNT() cannot be used with ORDER BY", "ORDER"),
        ("SELECT COUNT() FROM Case GROUP BY Status", "COUNT() cannot be used with GROUP BY", "GROUP"),
        ("SELECT COUNT(Id) FROM Case HAVING COUNT(Id) > 1", "HAVING can only be used with GROUP BY", "HAVING"),
        ("SELECT COUNT() FROM Case HAVING COUNT(Id) > 1", "HAVING can only be used with GROUP BY", "HAVING"),
        ("SELECT CreatedDate, COUNT(Id) FROM Case GROUP BY CreatedDate", "can not be grouped", "CreatedDate,"),
        ("SELECT CaseNumber, COUNT(Id) FROM Case GROUP BY CaseNumber", "can not be grouped", "CaseNumber,"),
        ("SELECT COUNT(Id) FROM OrderItem GROUP BY TotalPrice", "can not be grouped", "TotalPrice"),
    ],
)
def test_refused_as_the_reference_says(small_org: LocalOrg, soql: str, fragment: str, caret: str) -> None:
    with pytest.raises(OrgError) as info:
        small_org.query(soql)
    assert info.value.code in ("MALFORMED_QUERY", "INVALID_FIELD") and fragment in info.value.message
    # The caret points at the offending clause (GROUP BY's field for an ungroupable one).
    column = int(info.value.message.split("Column:")[1].split("\n")[0])
    assert soql[column - 1 :].startswith(caret) or soql[column - 1 :].startswith(caret.rstrip(","))


def test_the_valid_forms_answer_as_raw_sql(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    # COUNT(fieldName) with GROUP BY and ORDER BY is the documented replacement.
    got = small_org.query("SELECT Status, COUNT(Id) n FROM Case GROUP BY Status ORDER BY COUNT(Id) DESC, Status")
    expected = raw_conn.execute(
        'SELECT Status, COUNT(*) FROM "Case" GROUP BY Status COLLATE NOCASE ORDER BY 2 DESC, Status COLLATE NOCASE'
    ).fetchall()
    assert [(r["Status"], r["n"]) for r in got["records"]] == expected
    # A datetime groups through DAY_ONLY (a date), which is groupable.
    got = small_org.query("SELECT DAY_ONLY(CreatedDate) d, COUNT(Id) n FROM Case GROUP BY DAY_ONLY(CreatedDate)")
    expected = raw_conn.execute('SELECT substr(CreatedDate, 1, 10), COUNT(*) FROM "Case" GROUP BY 1').fetchall()
    assert sorted((r["d"], r["n"]) for r in got["records"]) == sorted(expected)
    # COUNT() with LIMIT stays valid.
    (total,) = raw_conn.execute('SELECT COUNT(*) FROM "Case"').fetchone()
    assert small_org.query("SELECT COUNT() FROM Case LIMIT 3")["totalSize"] == min(3, total)
