"""SalesforceOrg, offline: simple-salesforce's real HTTP code path against a local stand-in.

The stand-in (tests/org/_sfdc_standin.py) answers the SOAP login and the REST query and search
endpoints from a LocalOrg over a small hand-made database; expectations come from plain SQL on that
database (and from the LocalOrg itself, to show both backends answer alike).
"""

from __future__ import annotations

import datetime as dt
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from crmarena_gym.org import LocalOrg, OrgError, SalesforceOrg
from tests.org._sfdc_standin import INSTANCE, SalesforceStandin
from tests.org_builder import OrgBuilder

PRODUCTS = ["Alpine Trail Shoe", "Breeze Running Cap", "Cedar Hiking Boot", "Delta Rain Jacket", "Echo Yoga Mat"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sfdc") / "org.db"
    b = OrgBuilder(path)
    for i, name in enumerate(PRODUCTS):
        b.add("Product2", Name=name, Description=f"{name} for the outdoors", IsActive=i % 2, External_ID__c=f"SKU-{i}")
    b.add(
        "Knowledge__kav",
        Title="Return Policy",
        FAQ_Answer__c="Items may be returned within 30 days.",
        PublishStatus="Online",
        Language="en_US",
        UrlName="return-policy",
    )
    b.close()
    return path


@pytest.fixture(scope="module")
def local(db: Path) -> LocalOrg:
    return LocalOrg(db)


def sql(db: Path, text: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(text).fetchall()
    finally:
        conn.close()


class Sleeps(list):
    """Records the delays SalesforceOrg asks to sleep (instead of sleeping)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture()
def standin(local: LocalOrg) -> Any:
    stand = SalesforceStandin(local, page_size=2)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        stand.install(mock)
        yield stand


@pytest.fixture()
def sleeps() -> Sleeps:
    return Sleeps()


def login(standin: SalesforceStandin, sleeps: Sleeps, **kwargs: Any) -> SalesforceOrg:
    params: dict[str, Any] = {
        "username": standin.username,
        "password": standin.password,
        "security_token": standin.security_token,
        "sleep": sleeps,
        "seed": 7,
        "backoff": 0.5,
    }
    params.update(kwargs)
    return SalesforceOrg(**params)


# -- logins -------------------------------------------------------------------------------------------


def test_password_login_then_paginated_query_matches_sql_and_local(standin, sleeps, db, local) -> None:
    org = login(standin, sleeps)
    assert standin.logins == [("login", standin.username)]
    soql = "SELECT Id, Name FROM Product2 ORDER BY Name"
    result = org.query(soql)
    expected = sql(db, 'SELECT Id, Name FROM "Product2" ORDER BY Name')
    assert [(r["Id"], r["Name"]) for r in result["records"]] == expected
    assert result["totalSize"] == len(expected) == 5
    assert result["done"] is True
    assert result == local.query(soql)
    # Five records at two per page: the first page and two nextRecordsUrl follow-ups.
    assert standin.count("query") == 1
    assert standin.count("query_more") == 2
    assert all(type(r) is dict and type(r["attributes"]) is dict for r in result["records"])
    assert sleeps == []


def test_count_only_query_keeps_total_size(standin, sleeps, db) -> None:
    org = login(standin, sleeps)
    result = org.query("SELECT COUNT() FROM Product2 WHERE IsActive = true")
    (n,) = sql(db, 'SELECT COUNT(*) FROM "Product2" WHERE IsActive = 1')[0]
    assert result == {"totalSize": n, "done": True, "records": []}
    assert n == 2


def test_sandbox_logs_in_at_test_domain(standin, sleeps) -> None:
    org = login(standin, sleeps, domain="test")
    assert standin.logins == [("test", standin.username)]
    assert org.query("SELECT Id FROM Knowledge__kav")["totalSize"] == 1


def test_session_id_login_makes_no_login_call(standin, sleeps, local) -> None:
    session_id = standin.new_session()
    org = SalesforceOrg(session_id=session_id, instance_url=f"https://{INSTANCE}", sleep=sleeps)
    soql = "SELECT Id, Title FROM Knowledge__kav"
    assert org.query(soql) == local.query(soql)
    assert standin.logins == []


def test_refused_login_names_user_and_never_the_password(standin, sleeps) -> None:
    with pytest.raises(OrgError) as info:
        login(standin, sleeps, password="wrong-password-123")
    err = info.value
    assert err.code == "INVALID_LOGIN"
    assert standin.username in err.message
    assert "login.salesforce.com" in err.message
    assert "Invalid username, password, security token" in err.message
    assert "wrong-password-123" not in str(err)
    assert standin.security_token not in str(err)
    assert sleeps == []  # a refusal is not retried


def test_repr_hides_password(standin, sleeps) -> None:
    org = login(standin, sleeps)
    assert standin.password not in repr(org)
    assert standin.username in repr(org)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"username": "u", "password": "p"}, "missing: security_token"),
        ({"session_id": "abc"}, "missing: instance_url"),
        ({"session_id": "abc", "instance_url": "acme.my.salesforce.com"}, "'acme.my.salesforce.com'"),
        ({"session_id": "abc", "instance_url": "http://127.0.0.1:8443"}, "must be https"),
        ({}, "needs credentials"),
        ({"session_id": "abc", "instance_url": "https://x.my.salesforce.com", "version": "v60.0"}, "'v60.0'"),
        ({"session_id": "abc", "instance_url": "https://x.my.salesforce.com", "max_retries": -1}, "-1"),
        ({"session_id": "abc", "instance_url": "https://x.my.salesforce.com", "timeout": 0}, "timeout"),
        ({"session_id": "abc", "instance_url": "https://x.my.salesforce.com", "domain": "a/b"}, "'a/b'"),
    ],
)
def test_bad_settings_are_refused_clearly(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        SalesforceOrg(**kwargs)
    assert fragment in str(info.value)


# -- errors mapped from response bodies ---------------------------------------------------------------


def test_malformed_query_keeps_salesforce_code_and_message(standin, sleeps, local) -> None:
    org = login(standin, sleeps)
    soql = "SELECT Id FROM Product2 WHERE"
    with pytest.raises(OrgError) as direct:
        local.query(soql)
    with pytest.raises(OrgError) as remote:
        org.query(soql)
    assert direct.value.code == "MALFORMED_QUERY"
    assert (remote.value.code, remote.value.message) == (direct.value.code, direct.value.message)
    assert sleeps == []
    assert standin.count("query") == 1


@pytest.mark.parametrize(
    ("soql", "code"),
    [("SELECT Nmae FROM Product2", "INVALID_FIELD"), ("SELECT Id FROM Produkt", "INVALID_TYPE")],
)
def test_unknown_names_map_to_their_codes(standin, sleeps, local, soql: str, code: str) -> None:
    org = login(standin, sleeps)
    with pytest.raises(OrgError) as remote:
        org.query(soql)
    assert remote.value.code == code
    with pytest.raises(OrgError) as direct:
        local.query(soql)
    assert remote.value.message == direct.value.message


def test_wrong_api_version_is_not_found(standin, sleeps) -> None:
    org = login(standin, sleeps, version="59.0")
    with pytest.raises(OrgError) as info:
        org.query("SELECT Id FROM Product2")
    assert info.value.code == "NOT_FOUND"


# -- retries ------------------------------------------------------------------------------------------


def test_server_error_then_success_retries_once_with_jitter(standin, sleeps, db) -> None:
    org = login(standin, sleeps)
    standin.inject("query", status=500, body=[{"errorCode": "UNKNOWN_EXCEPTION", "message": "boom"}])
    result = org.query("SELECT Id FROM Product2")
    assert sorted(r["Id"] for r in result["records"]) == sorted(i for (i,) in sql(db, 'SELECT Id FROM "Product2"'))
    assert standin.calls.count(("query", 500)) == 1
    assert len(sleeps) == 1
    assert 0.25 <= sleeps[0] <= 0.5


def test_retries_back_off_exponentially_then_give_up(standin, sleeps) -> None:
    org = login(standin, sleeps, max_retries=3, backoff=1.0)
    body = [{"errorCode": "SERVER_UNAVAILABLE", "message": "the server is down for maintenance"}]
    standin.inject("query", status=503, body=body, times=10)
    with pytest.raises(OrgError) as info:
        org.query("SELECT Id FROM Product2")
    assert info.value.code == "SERVER_UNAVAILABLE"
    assert "down for maintenance" in info.value.message
    assert "gave up after 3 retries" in info.value.message
    assert standin.count("query") == 4
    assert len(sleeps) == 3
    for n, delay in enumerate(sleeps):
        assert 0.5 * 2**n <= delay <= 2**n


def test_backoff_is_capped(standin, sleeps) -> None:
    org = login(standin, sleeps, max_retries=4, backoff=10.0, max_backoff=12.0)
    standin.inject("query", status=502, body="<html>bad gateway</html>", times=4)
    assert org.query("SELECT Id FROM Knowledge__kav")["totalSize"] == 1
    assert len(sleeps) == 4
    assert all(delay <= 12.0 for delay in sleeps)
    assert 6.0 <= sleeps[-1]


def test_same_seed_gives_same_delays(standin) -> None:
    runs = []
    for _ in range(2):
        sleeps = Sleeps()
        org = login(standin, sleeps, seed=11)
        standin.inject("query", status=500, times=2)
        org.query("SELECT Id FROM Product2")
        runs.append(list(sleeps))
    assert runs[0] == runs[1]


def test_max_retries_zero_fails_at_once(standin, sleeps) -> None:
    org = login(standin, sleeps, max_retries=0)
    standin.inject("search", status=500, body=[{"errorCode": "UNKNOWN_EXCEPTION", "message": "oops"}])
    with pytest.raises(OrgError) as info:
        org.search("FIND {Return} RETURNING Knowledge__kav(Id)")
    assert info.value.code == "UNKNOWN_EXCEPTION"
    assert "gave up after 0 retries" in info.value.message
    assert sleeps == []


@pytest.mark.parametrize(
    "error",
    [
        requests.exceptions.ConnectionError("connection reset by peer"),
        requests.exceptions.ReadTimeout("read timed out"),
    ],
)
def test_connection_errors_and_timeouts_are_retried(standin, sleeps, error: Exception) -> None:
    org = login(standin, sleeps)
    standin.inject("query", error=error)
    assert org.query("SELECT Id FROM Knowledge__kav")["totalSize"] == 1
    assert len(sleeps) == 1


def test_connection_errors_give_server_unavailable(standin, sleeps) -> None:
    org = login(standin, sleeps, max_retries=1)
    standin.inject("query", error=requests.exceptions.ConnectionError("no route to host"), times=2)
    with pytest.raises(OrgError) as info:
        org.query("SELECT Id FROM Knowledge__kav")
    assert info.value.code == "SERVER_UNAVAILABLE"
    assert "no route to host" in info.value.message


def test_login_server_failure_is_retried(standin, sleeps) -> None:
    standin.inject("login", status=503, body="<html>Service Unavailable</html>")
    org = login(standin, sleeps)
    assert len(sleeps) == 1
    assert standin.logins == [("login", standin.username)]
    assert org.query("SELECT Id FROM Knowledge__kav")["totalSize"] == 1


def test_rate_limits(standin, sleeps) -> None:
    org = login(standin, sleeps)
    standin.inject("query", status=429, body=[{"errorCode": "REQUEST_LIMIT_EXCEEDED", "message": "slow down"}])
    concurrent = [{"errorCode": "REQUEST_LIMIT_EXCEEDED", "message": "ConcurrentPerOrgLongTxn Limit exceeded."}]
    standin.inject("query", status=403, body=concurrent)
    assert org.query("SELECT Id FROM Knowledge__kav")["totalSize"] == 1
    assert len(sleeps) == 2
    # The daily allowance is gone for the day: not retried.
    standin.inject(
        "query", status=403, body=[{"errorCode": "REQUEST_LIMIT_EXCEEDED", "message": "TotalRequests Limit exceeded."}]
    )
    with pytest.raises(OrgError) as info:
        org.query("SELECT Id FROM Knowledge__kav")
    assert info.value.code == "REQUEST_LIMIT_EXCEEDED"
    assert "TotalRequests" in info.value.message
    assert len(sleeps) == 2


def test_errors_in_later_pages_are_retried_without_restarting(standin, sleeps, db) -> None:
    org = login(standin, sleeps)
    standin.inject("query_more", status=500)
    result = org.query("SELECT Id, Name FROM Product2 ORDER BY Name")
    assert [(r["Id"], r["Name"]) for r in result["records"]] == sql(db, 'SELECT Id, Name FROM "Product2" ORDER BY Name')
    assert standin.count("query") == 1
    assert len(sleeps) == 1


# -- expired sessions ---------------------------------------------------------------------------------


def test_expired_session_logs_in_again_once(standin, sleeps, local) -> None:
    org = login(standin, sleeps)
    standin.expire_sessions()
    soql = "SELECT Id, Name FROM Product2 ORDER BY Name"
    assert org.query(soql) == local.query(soql)
    assert len(standin.logins) == 2
    assert standin.calls.count(("query", 401)) == 1
    assert sleeps == []


def test_session_refused_after_relogin_is_an_error(standin, sleeps) -> None:
    org = login(standin, sleeps)
    expired = [{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]
    standin.inject("search", status=401, body=expired, times=2)
    with pytest.raises(OrgError) as info:
        org.search("FIND {Return} RETURNING Knowledge__kav(Id)")
    assert info.value.code == "INVALID_SESSION_ID"
    assert len(standin.logins) == 2  # the first login, then exactly one re-login


def test_expired_session_without_password_explains(standin, sleeps) -> None:
    org = SalesforceOrg(session_id="00DStandin!expired", instance_url=f"https://{INSTANCE}", sleep=sleeps)
    with pytest.raises(OrgError) as info:
        org.query("SELECT Id FROM Product2")
    assert info.value.code == "INVALID_SESSION_ID"
    assert "security_token" in info.value.message
    assert standin.logins == []


def test_session_with_password_fallback(standin, sleeps) -> None:
    org = SalesforceOrg(
        session_id="00DStandin!stale",
        instance_url=f"https://{INSTANCE}",
        username=standin.username,
        password=standin.password,
        security_token=standin.security_token,
        sleep=sleeps,
    )
    assert standin.logins == []  # the session is tried first
    assert org.query("SELECT Id FROM Knowledge__kav")["totalSize"] == 1
    assert len(standin.logins) == 1


# -- search, dates, pickling, optional dependency ---------------------------------------------------


def test_search_goes_through_rest_search(standin, sleeps, local) -> None:
    org = login(standin, sleeps)
    sosl = "FIND {Return} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title WHERE PublishStatus = 'Online')"
    result = org.search(sosl)
    assert result == local.search(sosl)
    assert [r["Title"] for r in result["searchRecords"]] == ["Return Policy"]
    assert standin.count("search") == 1


def test_search_with_no_match_is_an_empty_list(standin, sleeps) -> None:
    org = login(standin, sleeps)
    assert org.search("FIND {zzzqqq} RETURNING Product2(Id)") == {"searchRecords": []}


def test_malformed_search_is_mapped(standin, sleeps) -> None:
    org = login(standin, sleeps)
    with pytest.raises(OrgError) as info:
        org.search("FIND {a-b}")
    assert info.value.code == "MALFORMED_SEARCH"
    with pytest.raises(OrgError) as info:
        org.search("FIND {a}")
    assert (info.value.code, info.value.message) == ("INVALID_SEARCH", "search term must be longer than one character")


def test_non_string_query_is_refused(standin, sleeps) -> None:
    org = login(standin, sleeps)
    with pytest.raises(OrgError) as info:
        org.query(None)  # type: ignore[arg-type]
    assert info.value.code == "MALFORMED_QUERY"
    assert standin.count("query") == 0


def test_today_and_with_today(standin, sleeps) -> None:
    org = login(standin, sleeps)
    assert org.today is None
    assert org.with_today(None) is org
    with pytest.raises(NotImplementedError, match="2023-04-01"):
        org.with_today(dt.date(2023, 4, 1))
    with pytest.raises(NotImplementedError, match="2023-04-01"):
        org.with_today("2023-04-01")
    with pytest.raises(ValueError, match="'April 1st'"):
        org.with_today("April 1st")


def test_pickle_round_trip_reconnects(standin, sleeps, local) -> None:
    org = login(standin, sleeps)
    org.query("SELECT Id FROM Product2")
    clone = pickle.loads(pickle.dumps(org))
    assert clone is not org
    soql = "SELECT Id, Name FROM Product2 ORDER BY Name"
    assert clone.query(soql) == local.query(soql)
    assert len(standin.logins) == 1  # the clone reuses the session
    standin.expire_sessions()
    assert clone.query(soql) == local.query(soql)
    assert len(standin.logins) == 2  # and logs in again with the pickled credentials


def test_close_then_use_reconnects(standin, sleeps) -> None:
    org = login(standin, sleeps)
    org.close()
    assert org.query("SELECT Id FROM Knowledge__kav")["totalSize"] == 1


def test_ready_client_can_be_passed(standin, sleeps, local) -> None:
    import simple_salesforce

    sf = simple_salesforce.Salesforce(session_id=standin.new_session(), instance=INSTANCE, version="60.0")
    org = SalesforceOrg(sf=sf, sleep=sleeps)
    soql = "SELECT Id, Name FROM Product2 ORDER BY Name"
    result = org.query(soql)
    assert result == local.query(soql)
    assert all(type(r) is dict for r in result["records"])  # simple-salesforce's OrderedDicts flattened


def test_importable_without_simple_salesforce() -> None:
    code = (
        "import sys; sys.modules['simple_salesforce'] = None\n"
        "from crmarena_gym.org import SalesforceOrg\n"
        "try:\n"
        "    SalesforceOrg(session_id='x', instance_url='https://x.my.salesforce.com')\n"
        "except ImportError as e:\n"
        "    print('IMPORT-ERROR', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "IMPORT-ERROR" in out.stdout
    assert "pip install 'crmarena-gym[salesforce]'" in out.stdout


def test_describe_goes_to_the_rest_describe_endpoint(standin, sleeps, local) -> None:
    org = login(standin, sleeps)
    assert org.describe("Case") == local.describe("Case")
    assert standin.count("describe") == 1
    with pytest.raises(OrgError) as info:
        org.describe("Widget__c")
    assert info.value.code == "NOT_FOUND" and "Widget__c" in info.value.message
    with pytest.raises(OrgError, match="not an object name"):
        org.describe("Case/../query")
    assert standin.count("describe") == 2


def test_nested_subquery_results_pass_through_unchanged(tmp_path: Path, sleeps: Sleeps) -> None:
    path = tmp_path / "orders.db"
    b = OrgBuilder(path)
    product = b.add("Product2", Name="Alpine Trail Shoe", IsActive=1)
    for n in (2, 0, 3):
        order = b.add("Order", Status="Activated", EffectiveDate="2023-01-02")
        for _ in range(n):
            b.add("OrderItem", OrderId=order, Product2Id=product, Quantity=1.0, UnitPrice=9.5)
    b.close()
    soql = "SELECT Id, (SELECT Id, Quantity FROM OrderItems ORDER BY Id) FROM Order ORDER BY Id"
    with LocalOrg(path) as local, responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        stand = SalesforceStandin(local, page_size=2)
        stand.install(mock)
        result = login(stand, sleeps).query(soql)
        assert result == local.query(soql)
    assert [None if r["OrderItems"] is None else r["OrderItems"]["totalSize"] for r in result["records"]] == [
        2,
        None,
        3,
    ]


def test_query_head_stops_following_batches_once_it_has_the_rows(standin, sleeps, db) -> None:
    org = login(standin, sleeps)
    expected = sql(db, 'SELECT Id, Name FROM "Product2" ORDER BY Name')
    head = org.query_head("SELECT Id, Name FROM Product2 ORDER BY Name", 3)
    assert [(r["Id"], r["Name"]) for r in head["records"]] == expected[:3]
    assert (head["totalSize"], head["done"]) == (5, False)
    # Two per page: the first page and one follow-up bring 4 rows, enough for 3; the third page is not asked.
    assert (standin.count("query"), standin.count("query_more")) == (1, 1)
    whole = org.query_head("SELECT Id, Name FROM Product2 ORDER BY Name", 5)
    assert whole["done"] is True and len(whole["records"]) == 5
    counted = org.query_head("SELECT COUNT() FROM Product2", 1)
    assert counted == {"totalSize": 5, "done": True, "records": []}
    with pytest.raises(ValueError, match="positive integer, got 0"):
        org.query_head("SELECT Id FROM Product2", 0)
