"""``default_org_path``: the cached default org, reused, repaired and safe under concurrency."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from crmarena_gym._files import write_digest
from crmarena_gym.datagen import GENERATOR_VERSION, GENERATOR_VERSIONS, content_hash, read_latent, read_manifest
from crmarena_gym.org import default_org_path
from crmarena_gym.org._cache import cache_dir


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_generated_once_then_reused(cache: Path) -> None:
    path = default_org_path(seed=4, scale=0.05)
    assert path.parent == cache
    assert path.name == f"org-v{GENERATOR_VERSION}-seed4-scale0.05.sqlite"
    m = read_manifest(path)
    assert (m.seed, m.scale, m.latent) == (4, 0.05, True)
    inode = path.stat().st_ino
    assert default_org_path(seed=4, scale=0.05) == path
    assert path.stat().st_ino == inode  # not rewritten


def test_a_corrupt_cached_file_is_regenerated(cache: Path) -> None:
    path = default_org_path(seed=4, scale=0.05)
    good = read_manifest(path).content_hash
    path.write_bytes(path.read_bytes()[:50_000])  # a truncated copy
    again = default_org_path(seed=4, scale=0.05)
    assert read_manifest(again).content_hash == good
    path.write_text("garbage")
    assert read_manifest(default_org_path(seed=4, scale=0.05)).content_hash == good


def _damage_middle(path: Path) -> None:
    """Overwrite 64 KiB in the middle of the file (its size stays), as a bad disk or a stray write would."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 65536] = bytes((i * 7 + 3) % 256 for i in range(65536))
    with open(path, "r+b") as handle:  # in place: same inode, same size
        handle.write(data)


def test_a_file_damaged_in_the_middle_is_regenerated(cache: Path) -> None:
    path = default_org_path(seed=4, scale=0.05)
    good = read_manifest(path).content_hash
    _damage_middle(path)
    assert default_org_path(seed=4, scale=0.05) == path
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    assert content_hash(conn) == good  # the rows hash as the manifest says: regenerated, not reused
    conn.close()


def test_an_edited_row_is_found_by_the_content_hash(cache: Path) -> None:
    path = default_org_path(seed=4, scale=0.05)
    conn = sqlite3.connect(path)
    (subject,) = conn.execute('SELECT Subject FROM "Case" ORDER BY Id LIMIT 1').fetchone()
    with conn:  # a sound file whose manifest and row counts still match, with one value changed
        conn.execute('UPDATE "Case" SET Subject = ? WHERE Id = (SELECT MIN(Id) FROM "Case")', (subject + "!",))
    conn.close()
    default_org_path(seed=4, scale=0.05)
    conn = sqlite3.connect(path)
    assert conn.execute('SELECT Subject FROM "Case" ORDER BY Id LIMIT 1').fetchone() == (subject,)
    conn.close()


def test_the_whole_file_is_checked_once_per_process_and_whenever_it_changes(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crmarena_gym.org import _cache

    path = default_org_path(seed=4, scale=0.05)
    assert (path.parent / (path.name + ".sha256")).read_text().strip() == hashlib.sha256(path.read_bytes()).hexdigest()
    hashed: list[Path] = []
    real = _cache.file_sha256
    monkeypatch.setattr(_cache, "file_sha256", lambda p: hashed.append(p) or real(p))
    monkeypatch.setattr(_cache, "_RACY_NS", 0)  # the file is seconds old here, not yet old enough to be trusted
    _cache._CHECKED.clear()  # as in a new process: checked before its first use ...
    assert default_org_path(seed=4, scale=0.05) == path and len(hashed) == 1
    assert default_org_path(seed=4, scale=0.05) == path and len(hashed) == 1  # ... once
    os.utime(path)  # the file changed (here only its times): the whole file is checked again
    assert default_org_path(seed=4, scale=0.05) == path and len(hashed) == 2
    inode = path.stat().st_ino
    (path.parent / (path.name + ".sha256")).unlink()  # no digest beside it (an older version's cache)
    _cache._CHECKED.clear()
    assert default_org_path(seed=4, scale=0.05) == path
    assert path.stat().st_ino != inode  # regenerated: a file nothing outside it vouches for is not trusted


def test_an_edit_that_updates_the_manifest_too_is_not_trusted(cache: Path) -> None:
    # Issue 36: a hand edit that also updated the content hash in the org's own manifest was trusted.
    from crmarena_gym.datagen._manifest import MANIFEST_TABLE
    from crmarena_gym.org import _cache

    path = default_org_path(seed=4, scale=0.05)
    conn = sqlite3.connect(path)
    (subject,) = conn.execute('SELECT Subject FROM "Case" ORDER BY Id LIMIT 1').fetchone()
    with conn:
        conn.execute('UPDATE "Case" SET Subject = ? WHERE Id = (SELECT MIN(Id) FROM "Case")', (subject + "!",))
        manifest = read_manifest(path).model_copy(update={"content_hash": content_hash(conn)})
        conn.execute(f"UPDATE {MANIFEST_TABLE} SET manifest = ?", (manifest.model_dump_json(),))
    conn.close()
    assert read_manifest(path).content_hash == manifest.content_hash  # the file vouches for itself ...
    assert not _cache._is_valid(path, 4, 0.05)  # ... and is not believed
    default_org_path(seed=4, scale=0.05)
    conn = sqlite3.connect(path)
    assert conn.execute('SELECT Subject FROM "Case" ORDER BY Id LIMIT 1').fetchone() == (subject,)
    conn.close()


def test_no_single_byte_flip_is_trusted(cache: Path) -> None:
    # Issue 36: 19 of 39 single-byte flips in an index page of a cached org passed the check; one gave a count
    # of 1 where the intact org gives 0. Here 100 flips at random offsets (seeded), each written in place (same
    # inode, same size) with the file's modification time set back: none is trusted.
    from crmarena_gym.org import _cache

    path = default_org_path(seed=4, scale=0.05)
    pristine = path.read_bytes()
    stat = path.stat()
    rng = random.Random(36)
    trusted = []
    for offset in sorted(rng.sample(range(len(pristine)), 100)):
        flipped = pristine[offset] ^ rng.randrange(1, 256)
        with open(path, "r+b") as handle:
            handle.seek(offset)
            handle.write(bytes([flipped]))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        if _cache._is_valid(path, 4, 0.05):
            trusted.append(offset)
        with open(path, "r+b") as handle:
            handle.seek(offset)
            handle.write(pristine[offset : offset + 1])
    assert trusted == []
    assert _cache._is_valid(path, 4, 0.05)  # the intact file still is

    # A flip in the last page (an index's, as in the run) is regenerated, and answers as the intact org.
    offset = len(pristine) - 1000
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(bytes([pristine[offset] ^ 0x40]))
    assert default_org_path(seed=4, scale=0.05) == path
    assert hashlib.sha256(path.read_bytes()).hexdigest() == hashlib.sha256(pristine).hexdigest()


def test_cache_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRMARENA_GYM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "crmarena-gym"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "crmarena-gym"
    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(tmp_path / "explicit"))
    assert cache_dir() == tmp_path / "explicit"


def test_bad_arguments_are_refused(cache: Path) -> None:
    with pytest.raises(ValueError, match="-3"):
        default_org_path(seed=-3)
    with pytest.raises(ValueError, match=re.escape("0.001")):
        default_org_path(scale=0.001)


def test_two_processes_at_once_share_one_file(cache: Path) -> None:
    code = (
        "import os; from crmarena_gym.org import default_org_path; "
        "p = default_org_path(seed=8, scale=0.3); print(p, os.stat(p).st_ino)"
    )
    env = dict(os.environ, CRMARENA_GYM_CACHE=str(cache))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    reported = {out.strip() for out, _err in outputs}
    assert len(reported) == 1, reported  # same path and same inode: generated once, not replaced
    files = sorted(p.name for p in cache.iterdir())
    name = f"org-v{GENERATOR_VERSION}-seed8-scale0.3.sqlite"
    assert files == [name, name + ".lock", name + ".sha256"]
    assert all(err == "" for _out, err in outputs)  # no progress bar when stderr is not a terminal


def test_pro_orgs_are_cached_by_kind_seed_and_scale_and_checked_with_their_hidden_tables(cache: Path) -> None:
    b2b = default_org_path(seed=4, scale=0.05, kind="b2b")
    b2c = default_org_path(seed=4, scale=0.05, kind="b2c")
    service = default_org_path(seed=4, scale=0.05)
    v_b2b, v_b2c = GENERATOR_VERSIONS["b2b"], GENERATOR_VERSIONS["b2c"]
    assert (b2b.name, b2c.name) == (
        f"org-b2b-v{v_b2b}-seed4-scale0.05.sqlite",
        f"org-b2c-v{v_b2c}-seed4-scale0.05.sqlite",
    )
    assert len({b2b, b2c, service}) == 3 and {read_manifest(p).kind for p in (b2b, b2c, service)} == {
        "b2b",
        "b2c",
        "service",
    }
    assert default_org_path(seed=4, scale=0.05, kind="b2b") == b2b
    good = read_manifest(b2b).content_hash
    # A changed planted label (same size, same row count) is found by the hash, and the org regenerated.
    conn = sqlite3.connect(b2b)
    conn.execute("UPDATE crmarena_hidden_opportunity SET won = 1 - won WHERE rowid = 1")
    conn.commit()
    conn.close()
    assert default_org_path(seed=4, scale=0.05, kind="b2b") == b2b
    conn = sqlite3.connect(b2b)
    manifest = read_manifest(b2b)
    assert content_hash(conn, "b2b", tuple(manifest.hidden_row_counts)) == good == manifest.content_hash
    conn.close()
    with pytest.raises(ValueError, match="'service', 'b2b', 'b2c'"):
        default_org_path(kind="crm")


def _as_an_older_version_cached_it(path: Path, stale: Path) -> int:
    """Write to ``stale`` the org at ``path`` as generator version 4 cached it (with its digest): no
    care-and-warranty section in the category guides and none of those facts, the manifest naming version 4.
    Returns how many knowledge facts it kept."""
    stale.write_bytes(path.read_bytes())
    conn = sqlite3.connect(stale)
    for article_id, body in conn.execute("SELECT Id, FAQ_Answer__c FROM Knowledge__kav").fetchall():
        if "\n\nCare and warranty:" in body:
            head, _care, tail = body.partition("\n\nCare and warranty:")
            kept = head + "\n\n" + tail.split("\n\n", 1)[1]
            conn.execute("UPDATE Knowledge__kav SET FAQ_Answer__c = ? WHERE Id = ?", (kept, article_id))
    (raw,) = conn.execute("SELECT value FROM crmarena_latent WHERE name = 'kqa_facts'").fetchone()
    warranty = "How long is the warranty on the "
    products = {f["question"][len(warranty) : -1] for f in json.loads(raw) if f["question"].startswith(warranty)}
    care = {
        question.format(name)
        for name in products
        for question in (
            warranty + "{}?",
            "How should the {} be cleaned?",
            "How should the {} be stored?",
            "What is the {} made of?",
        )
    }
    facts = [f for f in json.loads(raw) if f["question"] not in care]
    conn.execute("UPDATE crmarena_latent SET value = ? WHERE name = 'kqa_facts'", (json.dumps(facts),))
    (manifest,) = conn.execute("SELECT manifest FROM crmarena_manifest").fetchone()
    conn.execute(
        "UPDATE crmarena_manifest SET manifest = ?",
        (manifest.replace('"generator_version":5', '"generator_version":4'),),
    )
    conn.commit()
    conn.close()
    assert read_manifest(stale).generator_version == 4
    write_digest(stale)
    return len(facts)


# The rows of the seed-1 service org at scale 0.05 as GENERATOR_VERSION 5 writes them (a sibling of the training
# split): a change to the rows of any seed comes with a version bump, which names and checks the cache, and a new pin.
_SERVICE_V5_SEED1_CONTENT = "0d97340d79c0348e6c81479cbdf92b5db2f67fbb9054ddbfe87c255b9f1f71a1"


def test_a_sibling_org_cached_by_an_older_generator_is_never_reused(cache: Path) -> None:
    """Version 5 added care-and-warranty facts to the orgs at seeds other than 0 (the training split's
    siblings draw KQA from them). An org version 4 cached, under its own name or under the current one, is
    not read: the org is generated again, with the facts."""
    assert GENERATOR_VERSION == 5
    path = default_org_path(seed=1, scale=0.05)
    assert path.name == "org-v5-seed1-scale0.05.sqlite"
    assert read_manifest(path).content_hash == _SERVICE_V5_SEED1_CONTENT
    current = len(read_latent(path)["kqa_facts"])
    care = sum(q["question"].startswith("How long is the warranty on the ") for q in read_latent(path)["kqa_facts"])
    assert care > 0
    old = cache / "org-v4-seed1-scale0.05.sqlite"
    assert _as_an_older_version_cached_it(path, old) == current - 4 * care
    # under its own name: never looked at (the current version's file is generated beside it)
    path.unlink()
    fresh = default_org_path(seed=1, scale=0.05)
    assert read_manifest(old).generator_version == 4  # left as it was
    assert fresh == path and len(read_latent(fresh)["kqa_facts"]) == current
    # under the current name, its digest sound: its manifest's version refuses it, and it is generated again
    _as_an_older_version_cached_it(fresh, cache / "stale.sqlite")
    os.replace(cache / "stale.sqlite", path)
    os.replace(cache / "stale.sqlite.sha256", path.with_name(path.name + ".sha256"))
    again = default_org_path(seed=1, scale=0.05)
    assert read_manifest(again).generator_version == 5 and len(read_latent(again)["kqa_facts"]) == current
