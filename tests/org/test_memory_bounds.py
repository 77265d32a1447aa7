"""Issue 36 item 1: caches that refused queries cannot pin, bounded by measured bytes.

The reproducer: a refused, deeply nested query was kept in the plan cache with its traceback (every frame of
the parser's recursion), about 4 MB for a 6 KB query, 117 MB for a 198 KB one; served, 255 queries took
serve-org from 77 MB to 2 GB. The cache's bounds (entries, "64 MB") did not see it.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from crmarena_gym._memory import BytesLRU, bytes_cache, measured_bytes
from crmarena_gym.org import LocalOrg, OrgError
from crmarena_gym.org._local import refusal_key
from tests.org.conftest import SMALL_TODAY


def _nested(i: int, depth: int = 3000) -> str:
    return "SELECT Id FROM Case WHERE " + "(" * (depth + i) + "Status = 'x'" + ")" * (depth + i)


def _syntax_error(i: int) -> str:
    # Refused at its end by the parser, whose error holds the parser's state: every token before it.
    return "SELECT Id FROM Case WHERE " + " OR ".join(f"Subject = 's{i}-{j}'" for j in range(500)) + " OR OR"


def _growth(run: Callable[[], None]) -> int:
    """The memory ``run`` leaves allocated (garbage cycles collected: they are not kept)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


@pytest.fixture
def own_org(small_org_path: Path, tmp_path: Path) -> LocalOrg:
    path = tmp_path / "org.db"
    path.write_bytes(small_org_path.read_bytes())  # a backend (and plan cache) of its own
    return LocalOrg(path, today=SMALL_TODAY)


@pytest.mark.parametrize(("make", "code"), [(_nested, "QUERY_TOO_COMPLICATED"), (_syntax_error, "MALFORMED_QUERY")])
def test_refused_queries_do_not_pin_memory(own_org: LocalOrg, make: Callable[[int], str], code: str) -> None:
    own_org.query("SELECT Id FROM Case LIMIT 1")
    with pytest.raises(OrgError):
        own_org.query(make(-1))  # the first refusal's one-off costs, before measuring

    def refuse() -> None:
        for i in range(20):
            with pytest.raises(OrgError) as err:
                own_org.query(make(i))
            assert err.value.code == code
            assert err.value.__traceback__ is not None  # the raised error is the caller's; the cache keeps none

    grown = _growth(refuse)
    # 20 queries of 6-12 KB: their texts and messages, not 20 tracebacks of 3,000 frames or 20 parser states
    # (about 80 MB and 40 MB before).
    assert grown < 1024 * 1024, grown
    backend = own_org._live()
    # Refusals are still kept (a repeated one is not parsed again) ... by a digest of their text, not the text
    assert make(19) not in backend.plans and refusal_key(make(19)) in backend.plans
    kept = backend.plans[refusal_key(make(19))]
    assert not isinstance(kept, BaseException)  # ... as a code and a message
    assert measured_bytes(refusal_key(make(19)), kept) < 2048
    with pytest.raises(OrgError) as again:
        own_org.query(make(19))
    assert again.value.message == kept.message


def test_refusals_through_the_served_org_do_not_pin_memory(own_org: LocalOrg) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from crmarena_gym.org.serve import SessionHub
    from crmarena_gym.org.serve._app import make_app

    hub = SessionHub(own_org, token="t0", today=SMALL_TODAY)
    client = TestClient(make_app(hub))
    headers = {"Authorization": "Bearer t0"}

    def get(q: str) -> tuple[int, object]:
        r = client.get("/services/data/v60.0/query", params={"q": q}, headers=headers)
        return r.status_code, r.json()

    assert get("SELECT Id FROM Case LIMIT 1")[0] == 200
    assert get(_syntax_error(-1))[0] == 400

    def refuse() -> None:
        for i in range(20):
            status, body = get(_nested(i) if i % 2 else _syntax_error(i))
            assert status == 400 and body[0]["errorCode"] in ("MALFORMED_QUERY", "QUERY_TOO_COMPLICATED"), body  # type: ignore[index]

    grown = _growth(refuse)
    assert grown < 2 * 1024 * 1024, grown  # about 80 MB before
    hub.close()


def test_measured_bytes_sees_what_an_exception_holds() -> None:
    def recurse(n: int) -> None:
        payload = "p" * (1000 + n)  # noqa: F841 - a local of its own in each frame
        if n:
            recurse(n - 1)
        raise ValueError("deep")

    try:
        recurse(200)
    except ValueError as exc:
        caught = exc
    # The traceback's 201 frames each hold their own 1 KB local: the measure sees them.
    assert measured_bytes(caught) > 200 * 1000
    assert measured_bytes(ValueError("deep")) < 1000


def test_bytes_lru_keeps_its_bounds() -> None:
    cache: BytesLRU[int, str] = BytesLRU(max_entries=1000, max_bytes=100_000)
    for i in range(100):
        cache.put(i, "v" * 5_000)
    assert cache.bytes <= 100_000
    assert 10 <= len(cache) < 20  # about 5 KB each
    assert 99 in cache and 0 not in cache  # least recently used dropped first
    cache.get(85)
    for i in range(100, 105):
        cache.put(i, "v" * 5_000)
    assert 85 in cache  # used again: kept
    assert not cache.put(-1, "x" * 20_000)  # over an eighth of the bound: never kept
    assert -1 not in cache
    cache.put(1000, "small")
    assert cache.bytes == sum(measured_bytes(k, cache[k]) for k in list(cache._entries))
    small: BytesLRU[int, int] = BytesLRU(max_entries=3, max_bytes=10**9)
    for i in range(10):
        small.put(i, i)
    assert len(small) == 3


def test_bytes_cache_bounds_a_function_by_what_it_keeps() -> None:
    calls: list[int] = []

    @bytes_cache(max_entries=10_000, max_bytes=200_000)
    def double(text: str) -> str:
        calls.append(len(text))
        return text * 2

    assert double("ab") == "abab" and double("ab") == "abab" and calls == [2]
    for i in range(200):
        double(str(i) * 1000)  # about 3 KB each kept, key and value
    assert double.cache.bytes <= 200_000  # type: ignore[attr-defined]
    assert len(double.cache) < 200  # type: ignore[attr-defined]
    assert double(str(199) * 1000) == str(199) * 2000 and len(calls) == 201  # the latest is kept
    assert double.__wrapped__("x") == "xx"  # type: ignore[attr-defined]


def test_the_shaper_cache_is_bounded_by_bytes() -> None:
    from crmarena_gym.org.soql import _compiler

    shapers = _compiler._generate_shaper.cache  # type: ignore[attr-defined]
    for i in range(600):
        # Distinct sources of 40 KB (a select list's constants are repr()'d into its shaper).
        shape = _compiler._generate_shaper("{'k': " + repr(f"{i}{'y' * 40_000}") + ", 'Id': r[0]}")
        assert shape([("a",)])[0]["Id"] == "a"
    assert shapers.bytes <= shapers.max_bytes
    assert len(shapers) < 600


def test_the_served_orgs_open_cursors_are_bounded_by_bytes(own_org: LocalOrg, monkeypatch: pytest.MonkeyPatch) -> None:
    # A query's records past its first batch are kept for nextRecordsUrl: 10 cursors a session, and over every
    # session at most the hub's cursor_bytes, the oldest dropped first (an expired locator, as Salesforce answers).
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from crmarena_gym.org.serve import SessionHub, _rest
    from crmarena_gym.org.serve._app import make_app

    monkeypatch.setattr(_rest, "DEFAULT_BATCH", 5)
    soql = "SELECT Id, Subject, Description FROM Case"

    def query(client: TestClient, token: str) -> str:
        page = client.get(
            "/services/data/v60.0/query", params={"q": soql}, headers={"Authorization": f"Bearer {token}"}
        )
        return page.json()["nextRecordsUrl"]

    probe = SessionHub(own_org, token="t0", today=SMALL_TODAY)
    query(TestClient(make_app(probe)), "t0")
    one = probe._cursor_total  # what one cursor of this query holds
    probe.close()
    hub = SessionHub(own_org, token="t0", today=SMALL_TODAY, password="pw", cursor_bytes=int(2.5 * one))
    client = TestClient(make_app(hub))
    login = {"grant_type": "password", "username": "u", "password": "pw"}
    tokens = ["t0", *(client.post("/services/oauth2/token", data=login).json()["access_token"] for _ in range(2))]
    urls = [(token, query(client, token)) for token in tokens]
    assert hub._cursor_total <= hub.cursor_bytes
    answers = [client.get(url, headers={"Authorization": f"Bearer {token}"}) for token, url in urls]
    assert answers[0].status_code == 400 and answers[0].json()[0]["errorCode"] == "INVALID_QUERY_LOCATOR"
    assert [a.status_code for a in answers[1:]] == [200, 200]  # the two newest, of other sessions, kept
    hub.close()
