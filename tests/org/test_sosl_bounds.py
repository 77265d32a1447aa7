"""SOSL under bounds: the QUERY_TIMEOUT deadline, bounded wildcards, searches side by side, sqlite errors.

The reproducer of issue 16 (200 mid-word wildcard terms over emails, chats and cases) ran 143 s on the
default org with no deadline and held the one index lock meanwhile. Expectations here are computed
from the org file with plain SQL and regular expressions over its words, never through the engine.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import string
import threading
from pathlib import Path

import pytest

from crmarena_gym.org import LocalOrg, OrgError, _sosl
from crmarena_gym.org._sosl import SearchIndex, parse_search

# The fields SOSL searches IN ALL FIELDS, per object, as the schema text describes them.
SEARCHED = {
    "EmailMessage": ("Subject", "TextBody", "FromAddress", "ToAddress"),
    "LiveChatTranscript": ("Body",),
    "Case": ("Subject", "Description"),
}
RETURNING = " RETURNING EmailMessage(Id), LiveChatTranscript(Id), Case(Id)"
# Issue 16's reproducer: 200 mid-word wildcard terms, ab*qz OR ac*qz OR ...
PREFIXES = [a + b for a in string.ascii_lowercase for b in string.ascii_lowercase if a != b][:200]
REPRODUCER = "FIND {" + " OR ".join(f"{p}*qz" for p in PREFIXES) + "}" + RETURNING


def records_words(path: Path) -> dict[str, dict[str, list[str]]]:
    """{object: {Id: every lower-cased word of its searched fields}} read with plain SQL."""
    conn = sqlite3.connect(path)
    out: dict[str, dict[str, list[str]]] = {}
    for obj, fields in SEARCHED.items():
        cols = ", ".join(f'"{f}"' for f in fields)
        out[obj] = {
            row[0]: re.findall(r"[a-z0-9]+", " ".join(v for v in row[1:] if v).lower())
            for row in conn.execute(f'SELECT "Id", {cols} FROM "{obj}"')
        }
    conn.close()
    return out


def expected_ids(path: Path, regexes: list[str]) -> set[str]:
    compiled = [re.compile(r) for r in regexes]
    return {
        rid
        for by_id in records_words(path).values()
        for rid, ws in by_id.items()
        if any(r.fullmatch(w) for r in compiled for w in ws)
    }


def found_ids(result: dict) -> set[str]:
    return {r["Id"] for r in result["searchRecords"]}


def test_issue_reproducer_answers_within_the_deadline(env_org: Path) -> None:
    org = LocalOrg(env_org, timeout=5.0)  # before: no deadline, minutes of row-by-row filtering
    assert found_ids(org.search(REPRODUCER)) == expected_ids(env_org, [f"{p}.*qz" for p in PREFIXES])


def test_mid_word_wildcards_that_match_are_exact(env_org: Path) -> None:
    # 200 mid-word patterns built from real words of the org: first two letters, *, last two letters.
    vocabulary = sorted({w for by_id in records_words(env_org).values() for ws in by_id.values() for w in ws})
    patterns = sorted({w[:2] + "*" + w[-2:] for w in vocabulary if len(w) >= 6 and w.isalpha()})[:200]
    assert len(patterns) == 200
    sosl = "FIND {" + " OR ".join(patterns) + "}" + RETURNING
    regexes = [re.compile(p.replace("*", "[a-z0-9]*")) for p in patterns]
    records = LocalOrg(env_org, timeout=5.0).search(sosl)["searchRecords"]
    budget = 2000  # at most 2,000 records in all, taken by the objects in RETURNING order
    for obj, by_id in records_words(env_org).items():
        want = {rid for rid, ws in by_id.items() if any(r.fullmatch(w) for r in regexes for w in ws)}
        got = {r["Id"] for r in records if r["attributes"]["type"] == obj}
        assert got <= want and len(got) == min(len(want), budget), obj
        budget -= len(got)
    assert len(records) == 2000  # the patterns match more than the limit: the bound is exercised
    question = "FIND {" + " OR ".join(p[:2] + "?" + p[-2:] for p in patterns[:50]) + "}" + RETURNING
    assert found_ids(LocalOrg(env_org).search(question)) == expected_ids(
        env_org, [p[:2] + "[a-z0-9]" + p[-2:] for p in patterns[:50]]
    )


def test_search_past_its_deadline_is_a_query_timeout(env_org: Path) -> None:
    org = LocalOrg(env_org)
    org.search("FIND {order*}" + RETURNING)  # builds the indexes (not under the deadline)
    spec = parse_search("FIND {order* OR th*}")
    index = org.backend_cache["crmarena_gym.org._sosl.index"]
    assert isinstance(index, SearchIndex)
    obj = next(r.obj for r in spec.returning if r.obj.name == "EmailMessage")
    with pytest.raises(OrgError) as info:
        index.search(obj, spec.terms, "ALL", deadline=0.0)  # long past
    assert info.value.code == "QUERY_TIMEOUT"
    # Through the org: the same code and words as a SOQL query that runs too long.
    fast = LocalOrg(env_org, timeout=1e-9)
    with pytest.raises(OrgError) as info:
        fast.search("FIND {order* AND NOT order*} RETURNING EmailMessage(Id), LiveChatTranscript(Id)")
    assert (info.value.code, info.value.message) == ("QUERY_TIMEOUT", "Your query request was running for too long.")


def test_a_search_running_inside_sqlite_is_stopped_at_the_deadline(
    env_org: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = LocalOrg(env_org)
    org.search("FIND {order}" + RETURNING)  # built, and connections pooled
    calls = []

    class Clock:  # the deadline passes once the search is under way, inside SQLite
        @staticmethod
        def monotonic() -> float:
            calls.append(1)
            return 0.0 if len(calls) <= 2 else 1e12

    monkeypatch.setattr(_sosl, "time", Clock)
    with pytest.raises(OrgError) as info:
        org.search("FIND {th* OR order* OR re*} RETURNING EmailMessage(Id)")
    assert info.value.code == "QUERY_TIMEOUT"
    assert len(calls) >= 3  # SQLite's progress handler asked for the time


def test_too_broad_wildcards_are_refused(env_org: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    org = LocalOrg(env_org)
    sosl = "FIND {" + " OR ".join(f"{p}?*" for p in PREFIXES[:60]) + "}" + RETURNING
    want = expected_ids(env_org, [f"{p}[a-z0-9]+" for p in PREFIXES[:60]])
    assert found_ids(org.search(sosl)) <= want and want
    monkeypatch.setattr(_sosl, "MAX_EXPANSIONS", 5)
    with pytest.raises(OrgError) as info:
        org.search(sosl)
    assert info.value.code == "INVALID_SEARCH"
    assert "more than 5 different words" in info.value.message
    # A trailing * is a prefix query of the index itself: never expanded, never refused.
    assert org.search("FIND {" + " OR ".join(f"{p}*" for p in PREFIXES) + "}" + RETURNING)["searchRecords"]


def test_one_search_does_not_wait_for_another(env_org: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    org = LocalOrg(env_org)
    other = org.with_today("2022-01-01")  # another env's view of the same org
    org.search("FIND {order}" + RETURNING)
    index = org.backend_cache["crmarena_gym.org._sosl.index"]
    for built in index._objects.values():
        built.idle.clear()  # new connections take the patched progress handler below
    inside, release = threading.Event(), threading.Event()
    original = _sosl._Reader._progress

    def stalls_in_the_first_thread(self: _sosl._Reader) -> int:
        if threading.current_thread().name == "heavy" and not release.is_set():
            inside.set()
            release.wait(30)  # a search running inside SQLite for as long as the test likes
        return original(self)

    monkeypatch.setattr(_sosl._Reader, "_progress", stalls_in_the_first_thread)
    heavy = threading.Thread(target=org.search, args=("FIND {th* OR order* OR re*}" + RETURNING,), name="heavy")
    heavy.start()
    try:
        assert inside.wait(30), "the heavy search never reached SQLite"
        result = {}
        tiny = threading.Thread(target=lambda: result.update(other.search("FIND {order} RETURNING Case(Id) LIMIT 3")))
        tiny.start()
        tiny.join(20)
        assert not tiny.is_alive(), "the tiny search waited for the heavy one"
        assert len(result["searchRecords"]) <= 3
        assert heavy.is_alive()  # still running inside SQLite when the tiny one was answered
    finally:
        release.set()
        heavy.join(30)


def _damage(path: Path, size: int = 64 * 1024) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + size] = bytes((i * 37 + 11) % 256 for i in range(size))
    path.write_bytes(bytes(data))


def test_damaged_org_file_answers_unknown_exception(env_org: Path, tmp_path: Path) -> None:
    copy = tmp_path / "damaged.sqlite"
    shutil.copy(env_org, copy)
    _damage(copy)
    org = LocalOrg(copy)
    codes = set()
    for obj in ("EmailMessage", "LiveChatTranscript", "Case", "Account", "Contact", "User", "Product2"):
        try:
            org.search(f"FIND {{order}} RETURNING {obj}(Id)")
        except OrgError as exc:
            codes.add(exc.code)
    assert codes == {"UNKNOWN_EXCEPTION"}


def test_damaged_index_file_answers_unknown_exception(env_org: Path, tmp_path: Path) -> None:
    copy = tmp_path / "org.sqlite"
    shutil.copy(env_org, copy)
    org = LocalOrg(copy)
    org.search("FIND {order} RETURNING EmailMessage(Id)")
    index = org.backend_cache["crmarena_gym.org._sosl.index"]
    built = index._objects["EmailMessage"]
    for reader in built.idle:
        reader.conn.close()
    built.idle.clear()
    built.path.write_bytes(b"\x00" * 4096 + built.path.read_bytes()[4096:])
    with pytest.raises(OrgError) as info:  # another term: the hits of {order} are kept in memory
        org.search("FIND {refund} RETURNING EmailMessage(Id)")
    assert info.value.code == "UNKNOWN_EXCEPTION" and "search" in info.value.message


def test_unwritable_temporary_directory_is_a_clear_error(
    env_org: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing" / "dir"))
    with pytest.raises(OrgError) as info:
        SearchIndex(env_org).search(parse_search("FIND {order} RETURNING Case").returning[0].obj, _terms(), "ALL")
    assert info.value.code == "UNKNOWN_EXCEPTION" and "TMPDIR" in info.value.message


def _terms() -> _sosl.Node:
    return parse_search("FIND {order}").terms


def _search_in_child_then_release(org: LocalOrg, queue: object) -> None:
    import gc

    found = len(org.search("FIND {order} RETURNING Case(Id)")["searchRecords"])
    org.backend_cache.clear()  # the child lets go of the index it inherited
    gc.collect()
    queue.put(found)  # type: ignore[attr-defined]


def test_a_forked_child_neither_shares_connections_nor_removes_the_index(env_org: Path, tmp_path: Path) -> None:
    import multiprocessing

    copy = tmp_path / "org.sqlite"
    shutil.copy(env_org, copy)
    org = LocalOrg(copy)
    before = org.search("FIND {order} RETURNING Case(Id)")
    index = org.backend_cache["crmarena_gym.org._sosl.index"]
    for built in index._objects.values():  # the parent will need new connections after the child is gone
        built.idle.clear()
    del index, built  # in the child, only the org's cache holds the index
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_search_in_child_then_release, args=(org, queue))
    child.start()
    found = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0 and found == len(before["searchRecords"]) > 0
    assert org.search("FIND {order} RETURNING Case(Id)") == before  # the index files are still there


def test_index_directories_of_vanished_processes_are_swept(
    env_org: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"crmarena_gym_search_{int(gone.stdout)}_abc"  # a process killed before it cleaned up
    live = tmp_path / f"crmarena_gym_search_{os.getppid()}_def"  # a process still running
    other = tmp_path / "crmarena_gym_search_notapid"
    for d in (stale, live, other):
        d.mkdir()
        (d / "Case.sqlite").write_bytes(b"x")
    index = SearchIndex(env_org)
    index.search(parse_search("FIND {order} RETURNING Case").returning[0].obj, _terms(), "ALL")
    left = sorted(p.name for p in tmp_path.iterdir())
    mine = f"crmarena_gym_search_{os.getpid()}_"
    assert not stale.exists() and live.exists() and other.exists()
    assert sum(name.startswith(mine) for name in left) == 1
