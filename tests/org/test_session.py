"""OrgSession: validated writes, isolation between sessions, SOQL and SOSL over the session's writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from crmarena_gym.org import LocalOrg, OrgError, OrgSession
from crmarena_gym.schema import get_object, is_valid_id
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
