"""LocalOrg: opening, read-only guarantees, sharing, pickling, bounds and the original dump layout."""

from __future__ import annotations

import datetime as dt
import pickle
import sqlite3
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.org import LocalOrg, Org, OrgError
from crmarena_gym.schema import create_tables, get_object, table_ddl
from tests.org.conftest import SMALL_TODAY, file_sha256
from tests.org_builder import OrgBuilder, build_original_layout, ts

# -- opening ---------------------------------------------------------------------------------------


def test_missing_file_is_a_clear_error_and_nothing_is_created(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    with pytest.raises(FileNotFoundError, match=r"nope\.db"):
        LocalOrg(missing)
    assert not missing.exists()


@pytest.mark.parametrize("bad", ["2023-13-01", "yesterday", "", "2023/01/01"])
def test_bad_today_quotes_the_value(small_org_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match=repr(bad).replace("/", "/")):
        LocalOrg(small_org_path, today=bad)


def test_today_forms(small_org_path: Path) -> None:
    assert LocalOrg(small_org_path, today="2023-06-15").today == dt.date(2023, 6, 15)
    assert LocalOrg(small_org_path, today=dt.datetime(2023, 6, 15, 9)).today == dt.date(2023, 6, 15)
    assert LocalOrg(small_org_path).today is None
    with pytest.raises(TypeError, match="20230615"):
        LocalOrg(small_org_path, today=20230615)  # type: ignore[arg-type]


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ValueError, match=r"junk\.db"):
        LocalOrg(junk)


def test_interface_and_properties(small_org: LocalOrg, small_org_path: Path) -> None:
    assert isinstance(small_org, Org)
    assert small_org.path == small_org_path.resolve() and small_org.today == SMALL_TODAY
    assert isinstance(small_org.backend_cache, dict)
    sql, params = small_org.explain("SELECT Id FROM Case WHERE CreatedDate = TODAY")
    assert sql.startswith("SELECT") and params == ("2023-06-15T00:00:00.000+0000", "2023-06-16T00:00:00.000+0000")


# -- read only -------------------------------------------------------------------------------------


@pytest.fixture()
def guarded_org(tmp_path: Path) -> tuple[LocalOrg, Path]:
    """A fresh org file that also holds tables an agent must never read."""
    path = tmp_path / "guarded.db"
    b = OrgBuilder(path)
    b.add("User", FirstName="Ada", LastName="Byrne")
    b.add("Case", Subject="hello", Status="New", CreatedDate=ts("2023-01-02 10:00"))
    b.conn.execute("CREATE TABLE crmarena_manifest (key TEXT, value TEXT)")
    b.conn.execute("CREATE TABLE crmarena_latent (agent TEXT, skill REAL)")
    b.conn.execute("INSERT INTO crmarena_latent VALUES ('x', 1.0)")
    b.close()
    return LocalOrg(path, today="2023-01-05"), path


CRAFTED_SQL = [
    "ATTACH DATABASE ':memory:' AS other",
    'PRAGMA table_info("Case")',
    "PRAGMA writable_schema = 1",
    'INSERT INTO "Case" ("Id") VALUES (\'500000000000000AAA\')',
    'UPDATE "Case" SET "Subject" = \'x\'',
    'DELETE FROM "Case"',
    'DROP TABLE "Case"',
    "CREATE TABLE t (x)",
    "SELECT * FROM crmarena_manifest",
    "SELECT * FROM crmarena_latent",
    "SELECT name FROM sqlite_master",
    "SELECT load_extension('x')",
    "SELECT random()",
    'SELECT "Id" FROM "Case" UNION SELECT agent FROM crmarena_latent',
]


@pytest.mark.parametrize("sql", CRAFTED_SQL)
def test_authorizer_refuses_everything_but_reading_objects(guarded_org: tuple[LocalOrg, Path], sql: str) -> None:
    org, path = guarded_org
    before = file_sha256(path)
    with pytest.raises(OrgError):
        org._live().execute(sql, (), 5.0)
    assert file_sha256(path) == before
    assert org.query("SELECT Subject FROM Case")["records"][0]["Subject"] == "hello"


CRAFTED_SOQL = [
    "SELECT Id FROM crmarena_latent",
    'SELECT Id FROM Case; DROP TABLE "Case"',
    "SELECT Id FROM Case WHERE Subject = 'x'; ATTACH DATABASE 'y' AS z",
    "SELECT Id FROM Case WHERE Subject = 'x'' OR 1=1 --'",
    'SELECT "Id" FROM "Case"',
    "PRAGMA table_info(Case)",
    "SELECT Id FROM sqlite_master",
    "SELECT Id FROM Case WHERE Id IN (SELECT agent FROM crmarena_latent)",
]


@pytest.mark.parametrize("soql", CRAFTED_SOQL)
def test_crafted_soql_is_refused_and_file_unchanged(guarded_org: tuple[LocalOrg, Path], soql: str) -> None:
    org, path = guarded_org
    before = file_sha256(path)
    with pytest.raises(OrgError):
        org.query(soql)
    assert file_sha256(path) == before


def test_literals_are_bound_never_pasted(guarded_org: tuple[LocalOrg, Path]) -> None:
    org, _ = guarded_org
    sql, params = org.explain("SELECT Id FROM Case WHERE Subject = 'x\\' OR 1=1 --' LIMIT 5")
    assert "1=1" not in sql and params == ("x' OR 1=1 --", 5)
    assert org.query("SELECT Id FROM Case WHERE Subject = 'x\\' OR 1=1 --'")["totalSize"] == 0


def test_hash_unchanged_after_many_queries(small_org: LocalOrg, small_org_path: Path) -> None:
    before = file_sha256(small_org_path)
    for soql in [
        "SELECT Id, Owner.Name FROM Case",
        "SELECT COUNT() FROM CaseHistory__c",
        "SELECT OwnerId, COUNT(Id) FROM Case GROUP BY OwnerId",
        "SELECT Id FROM Case WHERE CreatedDate = LAST_N_MONTHS:6",
    ]:
        small_org.query(soql)
    assert file_sha256(small_org_path) == before


# -- sharing, views, pickling, threads -------------------------------------------------------------


def test_orgs_on_one_file_share_one_backend(small_org_path: Path, small_org: LocalOrg) -> None:
    a = LocalOrg(small_org_path, today="2022-01-01")
    b = LocalOrg(str(small_org_path))
    view = a.with_today("2022-05-05")
    assert a._backend is b._backend is view._backend is small_org._backend
    assert view.backend_cache is small_org.backend_cache
    assert view.today == dt.date(2022, 5, 5) and a.today == dt.date(2022, 1, 1)
    for org in (a, b, view):
        org.close()
    assert small_org.query("SELECT COUNT() FROM Case")["totalSize"] == 60
    with pytest.raises(ValueError, match="closed"):
        a.query("SELECT Id FROM Case")


def test_closing_the_last_holder_closes_the_connection(tmp_path: Path) -> None:
    path = tmp_path / "solo.db"
    OrgBuilder(path).close()
    org = LocalOrg(path)
    view = org.with_today("2020-01-01")
    backend = org._backend
    org.close()
    assert view.query("SELECT COUNT() FROM Case")["totalSize"] == 0
    view.close()
    assert backend is not None and backend.conn is None


def test_pickle_reopens_from_path(small_org: LocalOrg) -> None:
    copy = pickle.loads(pickle.dumps(small_org.with_today("2022-02-02")))
    assert copy.today == dt.date(2022, 2, 2) and copy.path == small_org.path
    assert copy.query("SELECT COUNT() FROM Case")["totalSize"] == 60
    err = pickle.loads(pickle.dumps(OrgError("INVALID_TYPE", "x")))
    assert (err.code, err.message) == ("INVALID_TYPE", "x")


def test_threads_share_one_org(small_org: LocalOrg, rows: dict[str, list[dict[str, Any]]]) -> None:
    months = ["2022-03-15", "2022-09-01", "2023-01-31", "2023-06-15"]
    expected = {}
    for day in months:
        start = dt.date.fromisoformat(day).replace(day=1)
        expected[day] = sum(r["CreatedDate"][:7] == start.isoformat()[:7] for r in rows["Case"])
    results: dict[str, list[int]] = defaultdict(list)
    errors: list[BaseException] = []

    def work(day: str) -> None:
        view = small_org.with_today(day)
        try:
            for _ in range(25):
                results[day].append(view.query("SELECT COUNT() FROM Case WHERE CreatedDate = THIS_MONTH")["totalSize"])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(d,)) for d in months for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert {d: set(v) for d, v in results.items()} == {d: {n} for d, n in expected.items()}


def test_plan_cache_is_bounded_and_keyed_by_text(small_org: LocalOrg) -> None:
    from crmarena_gym.org._local import PLAN_CACHE_SIZE

    backend = small_org._live()
    small_org.query("SELECT Id FROM Case LIMIT 1")
    plan = backend.plans["SELECT Id FROM Case LIMIT 1"]
    small_org.with_today("2020-01-01").query("SELECT Id FROM Case LIMIT 1")
    assert backend.plans["SELECT Id FROM Case LIMIT 1"] is plan
    for i in range(PLAN_CACHE_SIZE + 5):
        small_org.query(f"SELECT Id FROM Case LIMIT {i + 1}")
    assert len(backend.plans) == PLAN_CACHE_SIZE


def test_timeout_ends_a_long_query(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    conn = sqlite3.connect(path)
    create_tables(conn)
    conn.executemany(
        'INSERT INTO "CaseHistory__c" ("Id", "Field__c", "CreatedDate") VALUES (?, ?, ?)',
        ((f"a1N{i:015d}", "Owner Assignment", "2023-01-01T00:00:00.000+0000") for i in range(60000)),
    )
    conn.commit()
    conn.close()
    org = LocalOrg(path, timeout=1e-4)
    with pytest.raises(OrgError) as info:
        org.query("SELECT Field__c, COUNT(Id) FROM CaseHistory__c WHERE Field__c LIKE '%Owner%' GROUP BY Field__c")
    assert (info.value.code, info.value.message) == ("QUERY_TIMEOUT", "Your query request was running for too long.")
    relaxed = LocalOrg(path, timeout=30)
    assert relaxed.query("SELECT COUNT() FROM CaseHistory__c")["totalSize"] == 60000
    with pytest.raises(ValueError, match="-1"):
        LocalOrg(path, timeout=-1)


def test_unset_today_uses_the_current_utc_date(small_org_path: Path) -> None:
    org = LocalOrg(small_org_path)
    _, params = org.explain("SELECT Id FROM Case WHERE CreatedDate = TODAY")
    assert params[0][:10] == dt.datetime.now(dt.UTC).date().isoformat()


def test_search_delegates_to_the_sosl_module(small_org: LocalOrg) -> None:
    try:
        import crmarena_gym.org._sosl  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):
            small_org.search("FIND {x} IN ALL FIELDS RETURNING Case(Id)")
    else:
        assert "searchRecords" in small_org.search("FIND {delay} IN ALL FIELDS RETURNING Case(Id)")


# -- the original dump layout ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def original_layout(tmp_path_factory: pytest.TempPathFactory, shared_dir: Path) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("original") / "crmarena_data.db"
    rows = build_original_layout(shared_dir, path)
    return path, rows


def test_original_layout_answers_queries(original_layout: tuple[Path, dict[str, Any]]) -> None:
    path, rows = original_layout
    before = file_sha256(path)
    org = LocalOrg(path, today="2023-11-01")
    for name, by_id in rows.items():
        assert org.query(f"SELECT COUNT() FROM {name}")["totalSize"] == len(by_id)
    issues = org.query("SELECT Id, Name FROM Issue__c ORDER BY Name")["records"]
    assert [(r["Id"], r["Name"]) for r in issues] == sorted(
        ((i, r["Name"]) for i, r in rows["Issue__c"].items()), key=lambda x: x[1].lower()
    )
    assert "Shipping Delay" in {r["Name"] for r in issues}
    history = rows["CaseHistory__c"].values()
    result = org.query(
        "SELECT Field__c, COUNT(Id) n FROM CaseHistory__c WHERE CreatedDate >= 2020-01-01T00:00:00Z GROUP BY Field__c"
    )
    expected: dict[str, int] = defaultdict(int)
    for h in history:
        if h["CreatedDate"] >= "2020-01-01T00:00:00.000+0000":
            expected[h["Field__c"]] += 1
    assert {r["Field__c"]: r["n"] for r in result["records"]} == expected
    products = rows["Product2"]
    result = org.query("SELECT Id, Name FROM Product2 WHERE Name LIKE '%running%'")
    assert {r["Id"] for r in result["records"]} == {
        i for i, p in products.items() if "running" in (p.get("Name") or "").lower()
    }
    cases = rows["Case"]
    result = org.query("SELECT Id, OrderItemId__r.Product2Id FROM Case WHERE CreatedDate = LAST_N_YEARS:2")
    items = rows["OrderItem"]
    for rec in result["records"]:
        item = items.get(cases[rec["Id"]].get("OrderItemId__c"))
        if item is None:
            assert rec["OrderItemId__r"] is None
        else:
            assert rec["OrderItemId__r"]["Product2Id"] == item.get("Product2Id")
    assert {r["Id"] for r in result["records"]} == {
        i for i, c in cases.items() if "2021-01-01" <= (c.get("CreatedDate") or "")[:10] < "2023-01-01"
    }
    assert file_sha256(path) == before


def test_a_dump_missing_columns_and_tables(tmp_path: Path) -> None:
    path = tmp_path / "partial.db"
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE "Knowledge__kav" ("Id" TEXT PRIMARY KEY, "Title" TEXT, "Summary" TEXT, "UrlName" TEXT)')
    conn.execute("INSERT INTO \"Knowledge__kav\" VALUES ('ka0Ws000000Qsj7IAC', 'Return Policy', 's', 'u')")
    # Ids that break the checksum, or have 15 characters, are still found as typed.
    conn.execute("INSERT INTO \"Knowledge__kav\" VALUES ('ka0abcdefghijklAAA', 'Odd id', 's', 'u')")
    conn.execute("INSERT INTO \"Knowledge__kav\" VALUES ('ka0Ws000000Qsj8', 'Short id', 's', 'u')")
    conn.execute(table_ddl(get_object("User")).replace('"LastName" TEXT, ', '"LastName" TEXT, "Name" TEXT, '))
    conn.execute(
        'INSERT INTO "User" ("Id", "FirstName", "LastName", "Name") VALUES (?, ?, ?, ?)',
        ("005Ws000001xaq5IAA", "A", "B", "Dr A B"),
    )
    conn.commit()
    conn.close()
    org = LocalOrg(path)
    assert org.query("SELECT Title FROM Knowledge__kav")["records"][0]["Title"] == "Return Policy"
    found = org.query("SELECT Title FROM Knowledge__kav WHERE Id IN ('ka0abcdefghijklAAA', 'ka0Ws000000Qsj8')")
    assert {r["Title"] for r in found["records"]} == {"Odd id", "Short id"}
    with pytest.raises(OrgError) as info:
        org.query("SELECT FAQ_Answer__c FROM Knowledge__kav")
    assert (
        info.value.code == "INVALID_FIELD"
        and "No such column 'FAQ_Answer__c' on entity 'Knowledge__kav'" in info.value.message
    )
    with pytest.raises(OrgError) as info:
        org.query("SELECT Id FROM Case")
    assert info.value.code == "INVALID_TYPE"
    # A real Name column wins over the formula.
    assert org.query("SELECT Name FROM User")["records"][0]["Name"] == "Dr A B"


def test_plan_cache_is_bounded_by_bytes(small_org_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 16 item 5: the plan cache, keyed by the full query text, grew by the size of every distinct
    # long query it saw. Distinct 40 KB queries against a cache bounded to 512 KB stay within the bound,
    # and one bigger than an eighth of it is answered but never kept.
    import gc
    import tracemalloc

    from crmarena_gym.org import _local

    bound = 512 * 1024
    monkeypatch.setattr(_local, "PLAN_CACHE_BYTES", bound, raising=False)
    path = tmp_path / "org.db"
    path.write_bytes(small_org_path.read_bytes())  # a backend of its own, made under the bound
    org = LocalOrg(path, today=SMALL_TODAY)
    backend = org._live()

    def long_query(i: int, n: int) -> str:
        # Distinct shapes (the padding is part of a shape; a literal is not), so that none shares a plan.
        return f"SELECT Id FROM Case WHERE Subject = '{i}'{' ' * (n + i)}"

    org.query(long_query(-1, 10))  # the fixed costs of a first query, before measuring
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20):
            assert org.query(long_query(i, 40_000))["totalSize"] == 0
        gc.collect()  # a compiled shape leaves a reference cycle (its builder's closure) until a collection
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert backend.plans.bytes <= bound
    assert 0 < len(backend.plans) < 20
    assert long_query(19, 40_000) in backend.plans and long_query(0, 40_000) not in backend.plans
    assert grown < 1.5 * bound, grown  # 20 queries of 40 KB kept would be about 800 KB

    kept = len(backend.plans)
    big = long_query(99, 80_000)  # over an eighth of the bound
    assert org.query(big)["totalSize"] == 0
    assert big not in backend.plans and len(backend.plans) == kept
    # Long literals in one shape: each query is answered from the shape's plan and then kept by its text too
    # (the same text again skips the lifting), sized with its literals: the cache stays within its bound.
    for i in range(5):
        assert org.query(f"SELECT Id FROM Case WHERE Subject IN ('{i}', '{'x' * 3_000}')")["totalSize"] == 0
    assert len(backend.plans) <= kept + 2 + 5 and backend.plans.bytes <= bound


def test_the_plan_cache_counts_what_it_holds(small_org_path: Path, tmp_path: Path) -> None:
    # The bytes the cache says it holds cover what a query's entries (its plan, the shape's template) add.
    import gc
    import tracemalloc

    path = tmp_path / "org.db"
    path.write_bytes(small_org_path.read_bytes())
    org = LocalOrg(path, today=SMALL_TODAY)
    backend = org._live()
    org.query("SELECT Id FROM Case LIMIT 1")
    strings = ", ".join(f"'{i}{'y' * 3_990}'" for i in range(20))
    for soql in [f"SELECT Id, Subject FROM Case WHERE Subject IN ({strings})", "SELECT Id FROM Case LIMIT 2"]:
        counted = backend.plans.bytes
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            org.query(soql)
            gc.collect()  # a compiled shape's garbage cycle, not kept
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert soql in backend.plans
        # Within 2 KB: whatever else a first query of a shape may allocate (another cache's slot, an interned name).
        assert grown <= backend.plans.bytes - counted + 2048, (len(soql), grown, backend.plans.bytes - counted)
