"""Standard objects every org has (Opportunity, Lead, Task, Event, Contract, Quote, Campaign ...): known and empty.

Reference: Salesforce Object Reference (standard objects and their fields); SOQL and SOSL Reference,
"COUNT() and COUNT(fieldName)" (an empty result counts 0) and "Using Relationship Queries" (a parent
without children answers null for the relationship).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from crmarena_gym.org import LocalOrg, OrgError
from crmarena_gym.schema import OBJECTS, STANDARD_OBJECTS, get_object, schema_text

NAMES = (
    "Opportunity", "Lead", "Task", "Event", "Contract", "Quote", "Campaign", "Asset", "CaseComment", "Group",
    "Calendar",
)  # fmt: skip


def test_known_empty_and_described(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    tables = {r[0].lower() for r in raw_conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {o.name for o in STANDARD_OBJECTS} == set(NAMES)
    for name in NAMES:
        assert name.lower() not in tables  # the org file keeps the dump's 16 tables
        assert small_org.query(f"SELECT COUNT() FROM {name}") == {"totalSize": 0, "done": True, "records": []}
        described = small_org.describe(name)
        fields = [f["name"] for f in described["fields"]]
        assert fields[0] == "Id" and {"CreatedDate", "CreatedById", "SystemModstamp", "IsDeleted"} <= set(fields)
        assert small_org.query(f"SELECT FIELDS(ALL) FROM {name} LIMIT 200")["records"] == []
    # The original's prompt examples query Opportunity and Lead: their fields, filters and parents work.
    queries = [
        "SELECT Id, Name, Account.Name, Amount FROM Opportunity WHERE StageName = 'Closed Won' "
        "AND CloseDate = THIS_YEAR ORDER BY Amount DESC LIMIT 5",
        "SELECT Id, Name, Company, Status FROM Lead WHERE IsConverted = false AND CreatedDate = LAST_N_DAYS:30",
        "SELECT StageName, SUM(Amount) total FROM Opportunity GROUP BY StageName",
        "SELECT Id, Subject, Who.Name, What.Name FROM Task WHERE Status != 'Completed'",
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Opportunity)",
        "SELECT Id, Quote.Opportunity.Account.Name FROM Quote",
        "SELECT Id, Opportunity.Acount.Name FROM Quote",
    ]
    for soql in queries[:-1]:
        assert small_org.query(soql) == {"totalSize": 0, "done": True, "records": []}, soql
    with pytest.raises(OrgError, match="Didn't understand relationship 'Acount'"):
        small_org.query(queries[-1])


def test_unknown_fields_and_objects_still_refused(small_org: LocalOrg) -> None:
    with pytest.raises(OrgError) as info:
        small_org.query("SELECT Revenue FROM Opportunity")
    assert (
        info.value.code == "INVALID_FIELD" and "No such column 'Revenue' on entity 'Opportunity'" in info.value.message
    )
    with pytest.raises(OrgError) as info:
        small_org.query("SELECT COUNT() FROM Solution")
    assert info.value.code == "INVALID_TYPE"
    with pytest.raises(OrgError):
        small_org.query("SELECT Id FROM Opportunity WHERE Amount = 'ten'")  # types are checked as usual


def test_child_relationships_to_standard_objects_answer_null(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    (n,) = raw_conn.execute('SELECT COUNT(*) FROM "Account"').fetchone()
    result = small_org.query("SELECT Id, (SELECT Id FROM Opportunities), (SELECT Id FROM Tasks) FROM Account")
    assert result["totalSize"] == n
    assert all(r["Opportunities"] is None and r["Tasks"] is None for r in result["records"])
    (case,) = small_org.query("SELECT Id, (SELECT Id FROM CaseComments) FROM Case LIMIT 1")["records"]
    assert case["CaseComments"] is None
    # ... and they stay out of the agent's schema text, as the objects themselves do.
    text = schema_text()
    assert "Opportunities" not in text and "Tasks" not in text
    assert all(f"\n{o.name}: " not in "\n" + text for o in STANDARD_OBJECTS)
    assert all(get_object(o.name) is None and get_object(o.name, standard=True) is o for o in STANDARD_OBJECTS)
    assert len(OBJECTS) == 16


def test_a_dump_with_the_table_answers_from_it(tmp_path: Path, small_org_path: Path) -> None:
    path = tmp_path / "with_opportunities.db"
    shutil.copy(small_org_path, path)
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE "Opportunity" (Id TEXT PRIMARY KEY, Name TEXT, Amount REAL, StageName TEXT)')
    conn.execute("INSERT INTO Opportunity VALUES ('006000000000001AAA', 'Big deal', 1000.0, 'Closed Won')")
    conn.commit()
    conn.close()
    with LocalOrg(path) as org:
        (rec,) = org.query("SELECT Name, Amount FROM Opportunity WHERE StageName = 'Closed Won'")["records"]
        assert (rec["Name"], rec["Amount"]) == ("Big deal", 1000.0)
        with pytest.raises(OrgError, match="No such column 'CloseDate'"):  # a column the table lacks
            org.query("SELECT CloseDate FROM Opportunity")
