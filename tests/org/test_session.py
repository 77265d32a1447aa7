"""OrgSession: validated writes, isolation between sessions, SOQL and SOSL over the session's writes."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest

from crmarena_gym.org import LocalOrg, OrgError, OrgSession
from crmarena_gym.schema import get_object, is_valid_id, make_id
from tests.org.conftest import file_sha256


@pytest.fixture()
def session(small_org: LocalOrg) -> OrgSession:
    s = OrgSession(small_org)
    yield s
    s.drop()


def _first(raw_conn: sqlite3.Connection, sql: str) -> tuple:
    return raw_conn.execute(sql).fetchone()


def _code(fn, *args) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(OrgError) as info:
        fn(*args)
    return info.value.code


def test_local_org_has_no_writes(small_org: LocalOrg) -> None:
    assert not any(hasattr(small_org, name) for name in ("create", "update", "delete"))


def test_crud_round_trip_is_seen_by_soql_and_only_by_this_session(
    small_org: LocalOrg, small_org_path: Path, raw_conn: sqlite3.Connection
) -> None:
    before = file_sha256(small_org_path)
    (contact_id, account_id) = _first(raw_conn, 'SELECT "Id", "AccountId" FROM "Contact" LIMIT 1')
    (count,) = _first(raw_conn, 'SELECT COUNT(*) FROM "Case"')
    a, b = OrgSession(small_org), OrgSession(small_org)
    try:
        new = a.create("Case", {"Subject": "Zipper broke on day one", "ContactId": contact_id, "Status": "New"})
        assert is_valid_id(new) and new.startswith(get_object("Case").key_prefix)
        assert a.query("SELECT COUNT() FROM Case")["totalSize"] == count + 1
        assert b.query("SELECT COUNT() FROM Case")["totalSize"] == count
        assert small_org.query("SELECT COUNT() FROM Case")["totalSize"] == count
        row = a.query(f"SELECT Subject, Contact.AccountId, Priority FROM Case WHERE Id = '{new}'")["records"][0]
        assert (row["Subject"], row["Contact"]["AccountId"], row["Priority"]) == (
            "Zipper broke on day one",
            account_id,
            "Medium",  # the picklist's default
        )
        a.update("Case", new, {"Status": "Closed"})
        assert a.get("Case", new, ["Status"])["Status"] == "Closed"
        # Updating a record of the file hides the file's version in this session only.
        (case_id, subject) = _first(raw_conn, 'SELECT "Id", "Subject" FROM "Case" LIMIT 1')
        a.update("Case", case_id, {"Subject": "Rewritten"})
        assert a.get("Case", case_id)["Subject"] == "Rewritten"
        assert b.get("Case", case_id)["Subject"] == subject
        assert a.query(f"SELECT COUNT() FROM Case WHERE Subject = '{subject}'")["totalSize"] == 0 or subject == ""
        a.delete("Case", case_id)
        assert _code(a.get, "Case", case_id) == "ENTITY_IS_DELETED"
        assert _code(a.update, "Case", case_id, {"Subject": "x"}) == "ENTITY_IS_DELETED"
        assert b.get("Case", case_id)["Id"] == case_id
        assert a.query("SELECT COUNT() FROM Case")["totalSize"] == count  # one created, one deleted
        a.reset()
        assert a.query("SELECT COUNT() FROM Case")["totalSize"] == count
        assert a.get("Case", case_id)["Subject"] == subject
    finally:
        a.drop()
        b.drop()
    assert file_sha256(small_org_path) == before


def test_with_today_views_share_the_session(session: OrgSession) -> None:
    new = session.create("Issue__c", {"Name": "Seen by views"})
    view = session.with_today("2020-01-01")
    assert view.get("Issue__c", new)["Name"] == "Seen by views"
    view.close()
    assert session.get("Issue__c", new)["Name"] == "Seen by views"  # closing a view keeps the session


def test_sosl_over_a_sessions_own_rows_reads_operators_per_object(session: OrgSession) -> None:
    # Words side by side: OR in knowledge articles, evaluated after AND; AND elsewhere (SOSL reference).
    def article(title: str, body: str) -> str:
        return session.create("Knowledge__kav", {"Title": title, "FAQ_Answer__c": body, "UrlName": title[:3]})

    care, burrows = article("Quokka care", "Feed them leaves."), article("Wombat burrows", "Deep tunnels.")
    article("Wombat diet", "Grasses and roots.")
    issue = session.create("Issue__c", {"Name": "Quokka wombat tunnels"})
    session.create("Issue__c", {"Name": "Wombat tunnels"})
    found = session.search("FIND {quokka wombat AND tunnels} RETURNING Knowledge__kav(Id), Issue__c(Id)")
    by_type: dict[str, set[str]] = {}
    for r in found["searchRecords"]:
        by_type.setdefault(r["attributes"]["type"], set()).add(r["Id"])
    assert by_type == {"Knowledge__kav": {care, burrows}, "Issue__c": {issue}}


def test_sosl_sees_creates_updates_and_deletes(session: OrgSession, raw_conn: sqlite3.Connection) -> None:
    (issue_id, _name) = _first(raw_conn, 'SELECT "Id", "Name" FROM "Issue__c" WHERE "Name" = \'Shipping Delay\'')
    search = "FIND {{{}}} IN ALL FIELDS RETURNING Issue__c(Id, Name)"
    assert [r["Id"] for r in session.search(search.format("Shipping"))["searchRecords"]] == [issue_id]
    new = session.create("Issue__c", {"Name": "Quokkafied shipping label"})
    found = [r["Id"] for r in session.search(search.format("Shipping"))["searchRecords"]]
    assert sorted(found) == sorted([issue_id, new])
    assert [r["Id"] for r in session.search(search.format("quokka*"))["searchRecords"]] == [new]
    assert [r["Id"] for r in session.search(search.format("quok*ied"))["searchRecords"]] == [new]
    session.update("Issue__c", issue_id, {"Name": "Late parcel", "Description__c": "Parcels that come late"})
    assert [r["Id"] for r in session.search(search.format("Shipping"))["searchRecords"]] == [new]
    assert [r["Name"] for r in session.search(search.format("parcel"))["searchRecords"]] == ["Late parcel"]
    session.delete("Issue__c", new)
    assert session.search(search.format("Shipping"))["searchRecords"] == []
    other = OrgSession(session.path)
    try:
        assert [r["Id"] for r in other.search(search.format("Shipping"))["searchRecords"]] == [issue_id]
    finally:
        other.drop()


def test_validation_errors_name_the_field(session: OrgSession, raw_conn: sqlite3.Connection) -> None:
    (user_id,) = _first(raw_conn, 'SELECT "Id" FROM "User" LIMIT 1')
    (case_id,) = _first(raw_conn, 'SELECT "Id" FROM "Case" LIMIT 1')
    cases = [
        (("Nope", {"Name": "x"}), "NOT_FOUND"),
        (("Case", {"Bogus__c": 1}), "INVALID_FIELD"),
        (("Case", {"Id": case_id}), "INVALID_FIELD_FOR_INSERT_UPDATE"),
        (("Account", {"Name": "Formula"}), "INVALID_FIELD_FOR_INSERT_UPDATE"),
        (("Account", {"FirstName": "No last name"}), "REQUIRED_FIELD_MISSING"),
        (("Case", {"Status": "Dancing"}), "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"),
        (("Case", {"OwnerId": "not-an-id"}), "MALFORMED_ID"),
        (("Case", {"OwnerId": case_id}), "FIELD_INTEGRITY_EXCEPTION"),
        (("Case", {"OwnerId": user_id[:6] + "zzzzzzzzz"}), "INVALID_CROSS_REFERENCE_KEY"),
        (("Product2", {"Name": "P", "IsActive": "yes"}), "JSON_PARSER_ERROR"),
        (("OrderItem", {"Quantity": "two"}), "JSON_PARSER_ERROR"),
        (("Case", {"CreatedDate": "yesterday"}), "JSON_PARSER_ERROR"),
        (("Case", {"Subject": "x" * 256}), "STRING_TOO_LONG"),
        (("Contact", {"LastName": "L", "Email": "no-at-sign"}), "INVALID_EMAIL_ADDRESS"),
    ]
    for (sobject, values), code in cases:
        with pytest.raises(OrgError) as info:
            session.create(sobject, values)
        assert info.value.code == code, (sobject, values, info.value)
        named = [*values, sobject] if code != "REQUIRED_FIELD_MISSING" else ["LastName"]
        assert any(str(k) in info.value.message for k in named), info.value.message
    assert _code(session.update, "Case", "500xx", {}) == "MALFORMED_ID"
    assert _code(session.update, "Case", user_id, {}) == "MALFORMED_ID"
    assert _code(session.update, "Case", case_id, {"CreatedDate": "2020-01-01T00:00:00Z"}) == (
        "INVALID_FIELD_FOR_INSERT_UPDATE"
    )
    assert _code(session.delete, "Case", case_id[:6] + "zzzzzzzzz") == "NOT_FOUND"
    assert session.written_rows == 0  # nothing refused was written


def test_values_are_stored_as_the_file_stores_them(session: OrgSession, raw_conn: sqlite3.Connection) -> None:
    (account_id, pricebook_id) = _first(raw_conn, 'SELECT "AccountId", "Pricebook2Id" FROM "Order" LIMIT 1')
    new = session.create(
        "Order",
        {"AccountId": account_id[:15], "Status": "Draft", "EffectiveDate": "2023-05-01", "Pricebook2Id": pricebook_id},
    )
    got = session.query(
        f"SELECT AccountId, EffectiveDate FROM Order WHERE Id = '{new}' AND EffectiveDate = 2023-05-01"
    )["records"]
    assert [(r["AccountId"], r["EffectiveDate"]) for r in got] == [(account_id, "2023-05-01")]  # 15 -> 18 characters
    case = session.create("Case", {"CreatedDate": "2023-05-01T10:30:00+02:00"})
    stamp = session.query(f"SELECT CreatedDate FROM Case WHERE Id = '{case}' AND CreatedDate = 2023-05-01T08:30:00Z")
    assert [r["CreatedDate"] for r in stamp["records"]] == ["2023-05-01T08:30:00.000+0000"]


def test_all_or_none_batch_rolls_back(session: OrgSession) -> None:
    with pytest.raises(OrgError):
        with session.batch():
            session.create("Issue__c", {"Name": "First of a failed batch"})
            session.create("Issue__c", {"Bogus": 1})
    assert session.query("SELECT COUNT() FROM Issue__c WHERE Name LIKE 'First of%'")["totalSize"] == 0
    assert session.written_rows == 0
    session.create("Issue__c", {"Name": "After the batch"})
    assert session.query("SELECT COUNT() FROM Issue__c WHERE Name = 'After the batch'")["totalSize"] == 1


def test_a_dropped_session_refuses_use(small_org: LocalOrg) -> None:
    s = OrgSession(small_org)
    view = s.with_today("2021-01-01")
    s.drop()
    with pytest.raises(ValueError, match="dropped"):
        view.query("SELECT Id FROM Case")
    view.close()
    with pytest.raises(TypeError, match="pickled"):
        import pickle

        pickle.dumps(OrgSession(small_org))


def test_an_env_plays_oracle_episodes_on_a_session_that_wrote(env_org: Path, env_tasks: list) -> None:  # type: ignore[type-arg]
    import gymnasium as gym

    from crmarena_gym.tasks import oracle_trace

    session = OrgSession(env_org)
    try:
        session.create("Issue__c", {"Name": "Unrelated new issue"})  # a write the answers do not depend on
        bri = [t for t in env_tasks if t.task == "best_region_identification"][:2]
        env = gym.make("CRMArena-BRI-v0", org=session, tasks=bri)
        for instance in env.unwrapped.instances:
            obs, info = env.reset(options={"idx": instance.idx})
            trace = oracle_trace(instance, session.with_today(info["today"]))
            for call in trace.actions:
                obs, reward, terminated, _truncated, _ = env.step(call.to_action())
            assert (reward, terminated) == (1.0, True), obs
        assert env.unwrapped.org is session
    finally:
        session.drop()


# -- Salesforce's write semantics (REST API Developer Guide, SOQL reference, Object Reference) -------------


def _numbers(org: LocalOrg, soql: str) -> dict[str, str]:
    return {r["Id"]: r["CaseNumber"] for r in org.query(soql)["records"]}


def test_auto_numbers_keep_their_values_and_go_on_from_the_highest(small_org: LocalOrg, session: OrgSession) -> None:
    # Salesforce assigns an auto-number once, at insert, one above the highest; it never changes after.
    before = _numbers(small_org, "SELECT Id, CaseNumber FROM Case")
    highest = max(int(n) for n in before.values())
    (contact,) = [r["Id"] for r in small_org.query("SELECT Id FROM Contact LIMIT 1")["records"]]
    first = session.create("Case", {"Subject": "First new case", "ContactId": contact})
    second = session.create("Case", {"Subject": "Second new case"})
    after = _numbers(session, "SELECT Id, CaseNumber FROM Case")
    assert {k: v for k, v in after.items() if k in before} == before  # the bug: every number read 00000000
    assert (after[first], after[second]) == (f"{highest + 1:08d}", f"{highest + 2:08d}")
    some = next(iter(before))
    session.update("Case", some, {"Subject": "Renamed"})
    assert _numbers(session, f"SELECT Id, CaseNumber FROM Case WHERE Id = '{some}'") == {some: before[some]}
    orders = {r["OrderNumber"] for r in small_org.query("SELECT OrderNumber FROM Order")["records"]}
    account = small_org.query("SELECT Id FROM Account LIMIT 1")["records"][0]["Id"]
    order = session.create("Order", {"AccountId": account, "Status": "Draft", "EffectiveDate": "2023-06-15"})
    got = session.query(f"SELECT OrderNumber FROM Order WHERE Id = '{order}'")["records"][0]["OrderNumber"]
    assert got == f"{max(int(n) for n in orders) + 1:08d}"
    assert {r["OrderNumber"] for r in session.query("SELECT OrderNumber FROM Order")["records"]} == orders | {got}


def test_system_fields_come_from_the_orgs_clock_and_user(
    small_org: LocalOrg, session: OrgSession, raw_conn: sqlite3.Connection
) -> None:
    # The API user is the org's first user (the one who set it up); the clock is the session's today.
    (api_user,) = _first(raw_conn, 'SELECT MIN("Id") FROM "User"')
    assert session.user == api_user and str(session.today) == "2023-06-15"
    issue = session.create("Issue__c", {"Name": "Strap snapped"})
    fields = "CreatedDate, CreatedById, LastModifiedDate, LastModifiedById, SystemModstamp, IsDeleted"
    made = session.get("Issue__c", issue, fields.split(", "))
    assert made["CreatedDate"].startswith("2023-06-15T") and made["CreatedById"] == api_user
    assert made["LastModifiedDate"] == made["SystemModstamp"] == made["CreatedDate"]
    assert (made["LastModifiedById"], made["IsDeleted"]) == (api_user, False)
    for literal in ("TODAY", "LAST_N_DAYS:1", "THIS_MONTH"):
        found = session.query(f"SELECT Id FROM Issue__c WHERE CreatedDate = {literal}")["records"]
        assert [r["Id"] for r in found] == [issue], literal
    assert session.query("SELECT COUNT() FROM Issue__c WHERE CreatedDate = YESTERDAY")["totalSize"] == 0
    session.update("Issue__c", issue, {"Description__c": "Broke on day two"})
    changed = session.get("Issue__c", issue, fields.split(", "))
    assert changed["CreatedDate"] == made["CreatedDate"]
    assert changed["LastModifiedDate"] > made["LastModifiedDate"] and changed["SystemModstamp"] > made["SystemModstamp"]
    # A record of the file keeps its creation and moves its modification to now.
    (case_id,) = _first(raw_conn, 'SELECT "Id" FROM "Case" WHERE "ClosedDate" IS NULL LIMIT 1')
    old = small_org.query(f"SELECT CreatedDate, LastModifiedDate FROM Case WHERE Id = '{case_id}'")["records"][0]
    session.update("Case", case_id, {"Priority": "High"})
    new = session.get("Case", case_id, ["CreatedDate", "LastModifiedDate", "LastModifiedById"])
    assert new["CreatedDate"] == old["CreatedDate"] and new["LastModifiedDate"].startswith("2023-06-15T")
    assert new["LastModifiedById"] == api_user
    # Another user writes as itself; a chosen clock stamps what it says.
    (other,) = _first(raw_conn, 'SELECT MAX("Id") FROM "User"')
    moment = dt.datetime(2023, 6, 15, 9, 30, 12, 345000, tzinfo=dt.UTC)
    them = OrgSession(small_org, user=other, clock=lambda: moment)
    try:
        theirs = them.get("Issue__c", them.create("Issue__c", {"Name": "Theirs"}), ["CreatedById", "CreatedDate"])
        assert theirs == {**theirs, "CreatedById": other, "CreatedDate": "2023-06-15T09:30:12.345+0000"}
    finally:
        them.drop()
    with pytest.raises(ValueError, match="no User"):
        OrgSession(small_org, user=make_id("005", 999_999))


def test_audit_fields_may_be_set_on_create_only(session: OrgSession, raw_conn: sqlite3.Connection) -> None:
    # "Set Audit Fields upon Record Creation": CreatedDate, CreatedById, LastModifiedDate, LastModifiedById on
    # insert; never on update; SystemModstamp, IsDeleted, auto-numbers and ClosedDate never.
    (user,) = _first(raw_conn, 'SELECT MAX("Id") FROM "User"')
    old = session.create("Issue__c", {"Name": "Migrated", "CreatedDate": "2019-03-01T08:00:00Z", "CreatedById": user})
    got = session.get("Issue__c", old, ["CreatedDate", "CreatedById"])
    assert (got["CreatedDate"], got["CreatedById"]) == ("2019-03-01T08:00:00.000+0000", user)
    assert _code(session.update, "Issue__c", old, {"CreatedDate": "2019-03-02T08:00:00Z"}) == (
        "INVALID_FIELD_FOR_INSERT_UPDATE"
    )
    for field, value in (
        ("SystemModstamp", "2019-03-01T08:00:00Z"),
        ("IsDeleted", True),
        ("CaseNumber", "00000001"),
        ("ClosedDate", "2019-03-01T08:00:00Z"),
        ("IsClosed", True),
    ):
        assert _code(session.create, "Case", {field: value}) == "INVALID_FIELD_FOR_INSERT_UPDATE", field


def test_closing_a_case_stamps_closed_date_and_reopening_clears_it(session: OrgSession) -> None:
    # Case.ClosedDate: "The date and time when the case was closed"; IsClosed follows the status.
    case = session.create("Case", {"Subject": "Laces frayed"})
    fields = ["Status", "IsClosed", "ClosedDate", "LastModifiedDate"]
    assert session.get("Case", case, fields) | {"LastModifiedDate": None} == {
        **session.get("Case", case, fields),
        "Status": "New",
        "IsClosed": False,
        "ClosedDate": None,
        "LastModifiedDate": None,
    }
    session.update("Case", case, {"Status": "Closed"})
    closed = session.get("Case", case, fields)
    assert closed["IsClosed"] is True and closed["ClosedDate"] == closed["LastModifiedDate"]
    assert closed["ClosedDate"].startswith("2023-06-15T")
    assert session.query(f"SELECT COUNT() FROM Case WHERE Id = '{case}' AND ClosedDate = TODAY")["totalSize"] == 1
    session.update("Case", case, {"Subject": "Laces frayed (closed)"})
    assert session.get("Case", case, ["ClosedDate"])["ClosedDate"] == closed["ClosedDate"]  # not closed again
    session.update("Case", case, {"Status": "Working"})
    assert session.get("Case", case, ["IsClosed", "ClosedDate"]) | {"attributes": None} == {
        "attributes": None,
        "IsClosed": False,
        "ClosedDate": None,
    }
    born_closed = session.create("Case", {"Subject": "Already solved", "Status": "Closed"})
    assert session.get("Case", born_closed, ["ClosedDate"])["ClosedDate"].startswith("2023-06-15T")


def test_deletes_follow_each_relationships_rule(
    small_org: LocalOrg, session: OrgSession, rows: dict[str, list[dict]]
) -> None:
    cases = rows["Case"]
    # An account or a contact with cases cannot be deleted (Salesforce: "associated with the following cases").
    account = next(c["AccountId"] for c in cases if c["AccountId"])
    with pytest.raises(OrgError) as info:
        session.delete("Account", account)
    assert info.value.code == "DELETE_FAILED" and "associated with the following" in info.value.message
    contact = next(c["ContactId"] for c in cases if c["ContactId"])
    with pytest.raises(OrgError) as info:
        session.delete("Contact", contact)
    assert info.value.code == "DELETE_FAILED" and "cases" in info.value.message
    assert session.written_rows == 0  # a refused delete leaves nothing behind
    # A case goes with its emails and history entries (master-detail); lookups to it are cleared.
    case = next(c["Id"] for c in cases if any(e["ParentId"] == c["Id"] for e in rows["EmailMessage"]))
    emails = {e["Id"] for e in rows["EmailMessage"] if e["ParentId"] == case}
    history = {h["Id"] for h in rows["CaseHistory__c"] if h["CaseId__c"] == case}
    chats = {t["Id"] for t in rows["LiveChatTranscript"] if t["CaseId"] == case}
    session.delete("Case", case)
    assert session.query(f"SELECT COUNT() FROM EmailMessage WHERE ParentId = '{case}'")["totalSize"] == 0
    assert session.query(f"SELECT COUNT() FROM CaseHistory__c WHERE CaseId__c = '{case}'")["totalSize"] == 0
    binned = session.query(f"SELECT Id, IsDeleted FROM EmailMessage WHERE ParentId = '{case}'", include_deleted=True)
    assert {r["Id"] for r in binned["records"]} == emails and all(r["IsDeleted"] for r in binned["records"])
    deleted = session.query(
        f"SELECT Id, IsDeleted FROM CaseHistory__c WHERE CaseId__c = '{case}' AND IsDeleted = true",
        include_deleted=True,
    )
    assert {r["Id"] for r in deleted["records"]} == history
    for chat in chats:  # a transcript's case lookup is cleared, the transcript stays
        assert session.get("LiveChatTranscript", chat, ["CaseId"])["CaseId"] is None
    assert _code(session.get, "Case", case) == "ENTITY_IS_DELETED"
    assert _code(session.create, "EmailMessage", {"ParentId": case}) == "ENTITY_IS_DELETED"
    # An order goes with its items (master-detail): the items of a draft order.
    draft = next(o["Id"] for o in rows["Order"] if o["Status"] == "Draft")
    items = {i["Id"] for i in rows["OrderItem"] if i["OrderId"] == draft}
    referring = {c["Id"] for c in cases if c["OrderItemId__c"] in items}
    assert items
    session.delete("Order", draft)
    assert session.query(f"SELECT COUNT() FROM OrderItem WHERE OrderId = '{draft}'")["totalSize"] == 0
    everything = session.query(f"SELECT Id FROM OrderItem WHERE OrderId = '{draft}'", include_deleted=True)
    assert {r["Id"] for r in everything["records"]} == items
    for case_id in referring - {case}:  # the cases about those items keep going, without the lookup
        assert session.get("Case", case_id, ["OrderItemId__c"])["OrderItemId__c"] is None
    # An issue's cases lose their issue (a lookup is cleared); the user who owns records cannot be deleted.
    issue = rows["Issue__c"][0]["Id"]
    under = {c["Id"] for c in cases if c["IssueId__c"] == issue} - {case}
    session.delete("Issue__c", issue)
    assert under
    assert {session.get("Case", c, ["IssueId__c"])["IssueId__c"] for c in under} == {None}
    assert _code(session.delete, "User", rows["User"][0]["Id"]) == "INVALID_TYPE_FOR_OPERATION"
    # The file's counts are untouched and the queries of the others see nothing of it.
    assert small_org.query(f"SELECT COUNT() FROM OrderItem WHERE OrderId = '{draft}'")["totalSize"] == len(items)


def test_an_activated_orders_items_cannot_be_deleted(session: OrgSession, rows: dict[str, list[dict]]) -> None:
    # Salesforce: "After an order is activated, you can't delete its order products."
    active = next(o["Id"] for o in rows["Order"] if o["Status"] == "Activated")
    item = next(i["Id"] for i in rows["OrderItem"] if i["OrderId"] == active)
    assert _code(session.delete, "OrderItem", item) == "DELETE_FAILED"
    session.update("Order", active, {"Status": "Draft"})
    session.delete("OrderItem", item)
    assert _code(session.get, "OrderItem", item) == "ENTITY_IS_DELETED"


def test_limits_of_fields_and_storage(small_org: LocalOrg, raw_conn: sqlite3.Connection) -> None:
    # Lengths from Salesforce's field reference: LastName 80, FirstName 40, User Alias 8, a custom Name 80.
    s = OrgSession(small_org, max_storage=5 * 2048)
    try:
        assert _code(s.create, "Account", {"LastName": "x" * 81}) == "STRING_TOO_LONG"
        assert _code(s.create, "Account", {"LastName": "Ok", "FirstName": "y" * 41}) == "STRING_TOO_LONG"
        assert _code(s.create, "Issue__c", {"Name": "z" * 81}) == "STRING_TOO_LONG"
        assert _code(s.create, "Account", {"LastName": "Lone \ud800 surrogate"}) == "JSON_PARSER_ERROR"
        assert _code(s.create, "OrderItem", {"Quantity": 10**5000}) == "NUMBER_OUTSIDE_VALID_RANGE"
        assert _code(s.create, "OrderItem", {"Quantity": float("nan")}) == "JSON_PARSER_ERROR"
        s.create("Account", {"LastName": "x" * 80, "FirstName": "y" * 40})
        # Each record counts 2 KB (Salesforce's storage accounting): five fit, the sixth is refused.
        for i in range(4):
            s.create("Issue__c", {"Name": f"Issue {i}"})
        assert s.storage_used == 5 * 2048
        assert _code(s.create, "Issue__c", {"Name": "One too many"}) == "STORAGE_LIMIT_EXCEEDED"
        assert s.query("SELECT COUNT() FROM Issue__c WHERE Name = 'One too many'")["totalSize"] == 0
        s.reset()
        assert s.storage_used == 0 and s.create("Issue__c", {"Name": "Room again"})
    finally:
        s.drop()


# Salesforce's lengths of standard fields of the service org, as the Salesforce Field Reference (Summer '26, API
# 67.0: developer.salesforce.com/docs/atlas.en-us.sfFieldRef.meta/sfFieldRef/salesforce_field_reference_<Object>.htm)
# lists them, with the describe type: written here, not read from the schema.
_SERVICE_DESCRIBE = {
    ("Case", "CaseNumber"): ("string", 30),
    ("Case", "Status"): ("picklist", 255),
    ("Case", "Priority"): ("picklist", 255),
    ("Order", "Status"): ("picklist", 100),
    ("Order", "OrderNumber"): ("string", 30),
    ("OrderItem", "OrderItemNumber"): ("string", 30),
    ("User", "Name"): ("string", 121),
    ("User", "TimeZoneSidKey"): ("picklist", 40),
    ("User", "LanguageLocaleKey"): ("picklist", 40),
    ("Contact", "Name"): ("string", 121),
    ("EmailMessage", "TextBody"): ("textarea", 131072),
    ("EmailMessage", "FromAddress"): ("email", 1000),
    ("EmailMessage", "ToAddress"): ("string", 4000),
    ("LiveChatTranscript", "Body"): ("textarea", 131072),
    ("Knowledge__kav", "PublishStatus"): ("picklist", 40),
    # The standard objects the service org leaves empty describe as Salesforce's do.
    ("Task", "Priority"): ("picklist", 20),
    ("Task", "TaskSubtype"): ("picklist", 40),
    ("Contract", "Status"): ("picklist", 100),
    ("Quote", "Status"): ("picklist", 40),
    ("Opportunity", "Description"): ("textarea", 32000),
    ("Lead", "Name"): ("string", 121),
    ("Lead", "Industry"): ("picklist", 255),
    ("Task", "Subject"): ("combobox", 255),
    ("Event", "Subject"): ("combobox", 255),
}


def test_describe_and_writes_keep_salesforces_lengths(small_org: LocalOrg, session: OrgSession) -> None:
    described = {
        name: {f["name"]: f for f in small_org.describe(name)["fields"]} for name in {o for o, _ in _SERVICE_DESCRIBE}
    }
    got = {(o, n): (described[o][n]["type"], described[o][n]["length"]) for o, n in _SERVICE_DESCRIBE}
    assert got == _SERVICE_DESCRIBE
    # A picklist value longer than the field is refused as a text field's (STRING_TOO_LONG, naming the length),
    # before the value is checked against the picklist; one that fits but is no value is the picklist's refusal.
    case = session.create("Case", {"Subject": "Picklist lengths"})
    order = session.query("SELECT Id FROM Order ORDER BY Id LIMIT 1")["records"][0]["Id"]
    for sobject, record, field, length in (("Case", case, "Priority", 255), ("Order", order, "Status", 100)):
        with pytest.raises(OrgError) as info:
            session.update(sobject, record, {field: "x" * (length + 1)})
        assert info.value.code == "STRING_TOO_LONG", (sobject, field)
        assert info.value.message.endswith(f"(max length={length})") and info.value.fields == [field]  # type: ignore[attr-defined]
        assert (
            _code(session.update, sobject, record, {field: "x" * length}) == "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"
        )
    assert _code(session.create, "Case", {"Subject": "Too long", "Status": "y" * 256}) == "STRING_TOO_LONG"
    kept = session.get("Case", case, ["Priority", "Status"])
    assert (kept["Priority"], kept["Status"]) == ("Medium", "New")  # refused writes changed nothing
    assert session.query("SELECT COUNT() FROM Case WHERE Subject = 'Too long'")["totalSize"] == 0
    # ToAddress is Salesforce's string of 4,000: a list of recipients is taken, 4,001 characters are not.
    recipients = "ann@example.com; bo@example.com"
    mail = session.create("EmailMessage", {"ParentId": case, "FromAddress": "cy@example.com", "ToAddress": recipients})
    assert session.get("EmailMessage", mail, ["ToAddress"])["ToAddress"] == recipients
    too_many = {"ParentId": case, "ToAddress": "a" * 4001}
    assert _code(session.create, "EmailMessage", too_many) == "STRING_TOO_LONG"


def test_ids_of_objects_the_org_lacks_stay_text_and_their_relationships_are_refused(
    small_org: LocalOrg, raw_conn: sqlite3.Connection
) -> None:
    # On Salesforce User.ProfileId refers to Profile, ProductCategory.CatalogId to ProductCatalog and
    # LiveChatTranscript.LiveChatVisitorId to LiveChatVisitor (the Field Reference: reference, 18). This org has none
    # of those objects: the ids stay plain text, describe offers no relationship, and a query through one is refused
    # as Salesforce refuses a relationship or an object it does not know, never answered with nulls.
    for sobject, field, relationship, target in (
        ("User", "ProfileId", "Profile", "Profile"),
        ("ProductCategory", "CatalogId", "Catalog", "ProductCatalog"),
        ("LiveChatTranscript", "LiveChatVisitorId", "LiveChatVisitor", "LiveChatVisitor"),
    ):
        described = {f["name"]: f for f in small_org.describe(sobject)["fields"]}[field]
        assert (described["type"], described["relationshipName"], described["referenceTo"]) == ("string", None, [])
        with pytest.raises(OrgError) as info:
            small_org.query(f"SELECT {relationship}.Name FROM {sobject}")
        assert info.value.code == "INVALID_FIELD", (sobject, info.value)
        assert f"Didn't understand relationship '{relationship}'" in info.value.message
        assert _code(small_org.query, f"SELECT Id FROM {target}") == "INVALID_TYPE"
    (user, profile) = _first(raw_conn, 'SELECT "Id", "ProfileId" FROM "User" ORDER BY "Id" LIMIT 1')
    assert small_org.query(f"SELECT ProfileId FROM User WHERE Id = '{user}'")["records"][0]["ProfileId"] == profile


def test_upsert_by_external_id(session: OrgSession, rows: dict[str, list[dict]]) -> None:
    # Upsert: one match is updated, none creates (with the key set), several answer MULTIPLE_RECORDS_FOUND,
    # a field that is not an External ID answers NOT_FOUND.
    product = rows["Product2"][0]
    same, created = session.upsert("Product2", "External_ID__c", product["External_ID__c"], {"Name": "Renamed"})
    assert (same, created) == (product["Id"], False)
    assert session.get("Product2", same, ["Name"])["Name"] == "Renamed"
    new, created = session.upsert("Product2", "External_ID__c", "EXT_NEW", {"Name": "Brand new"})
    assert created and session.get("Product2", new, ["External_ID__c"])["External_ID__c"] == "EXT_NEW"
    session.update("Product2", new, {"External_ID__c": product["External_ID__c"]})
    with pytest.raises(OrgError) as info:
        session.upsert("Product2", "External_ID__c", product["External_ID__c"], {"Name": "Which?"})
    assert info.value.code == "MULTIPLE_RECORDS_FOUND" and set(info.value.ids) == {product["Id"], new}
    assert _code(session.upsert, "Product2", "Name", "Yoga Mat", {}) == "NOT_FOUND"


def test_a_stored_session_keeps_its_writes(small_org: LocalOrg, tmp_path: Path) -> None:
    store = tmp_path / "session.sqlite"
    first = OrgSession(small_org, store=store)
    issue = first.create("Issue__c", {"Name": "Kept on disk"})
    case = first.query("SELECT Id FROM Case WHERE IsClosed = false LIMIT 1")["records"][0]["Id"]
    first.update("Case", case, {"Status": "Closed"})
    first.delete("Issue__c", first.create("Issue__c", {"Name": "Binned on disk"}))
    first.close()
    again = OrgSession(small_org, store=store)
    try:
        assert again.get("Issue__c", issue, ["Name"])["Name"] == "Kept on disk"
        assert again.get("Case", case, ["IsClosed"])["IsClosed"] is True
        binned = again.query("SELECT Name FROM Issue__c WHERE IsDeleted = true", include_deleted=True)["records"]
        assert [r["Name"] for r in binned] == ["Binned on disk"]
        newer = again.create("Issue__c", {"Name": "After reopening"})
        assert newer != issue and again.query("SELECT COUNT() FROM Issue__c WHERE Name LIKE '%disk'")["totalSize"] == 1
    finally:
        again.close()


def test_a_user_is_updated_and_keeps_the_system_fields_the_file_gives_it(
    small_org: LocalOrg, session: OrgSession, raw_conn: sqlite3.Connection
) -> None:
    # The view of the session's users reads the file's users for their system fields, not itself.
    (user,) = _first(raw_conn, 'SELECT "Id" FROM "User" ORDER BY "Id" DESC LIMIT 1')
    fields = ["CreatedById", "CreatedDate"]
    before = small_org.query(f"SELECT {', '.join(fields)} FROM User WHERE Id = '{user}'")["records"][0]
    session.update("User", user, {"Phone": "555-0100"})
    after = session.get("User", user, ["Phone", *fields])
    assert after == {**before, "Phone": "555-0100", "attributes": after["attributes"]}
    assert _code(session.delete, "User", user) == "INVALID_TYPE_FOR_OPERATION"
