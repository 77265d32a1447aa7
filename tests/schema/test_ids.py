"""Salesforce ids: checksums against the original org's real ids, construction and validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crmarena_gym.datagen._ids import bulk_ids, id_base, ids_for
from crmarena_gym.schema import get_object, id_checksum, is_valid_id, make_id, object_for_id


def _sample_ids(shared_dir: Path) -> list[tuple[str, str, str]]:
    """(table, column, id) for every id-looking value in the original's sampled rows."""
    objects = json.loads((shared_dir / "org_rows_sample.json").read_text())["objects"]
    out = []
    for table, rows in objects.items():
        for row in rows:
            for key, value in row.items():
                if isinstance(value, str) and len(value) == 18 and value[3:5] == "Ws":
                    out.append((table, key, value))
    return out


def test_real_ids_of_the_original_pass_the_checksum(shared_dir: Path) -> None:
    ids = _sample_ids(shared_dir)
    assert len(ids) > 500
    for _table, _key, value in ids:
        assert is_valid_id(value), value
        assert id_checksum(value[:15]) == value[15:]


def test_real_ids_have_their_objects_prefix(shared_dir: Path) -> None:
    for table, key, value in _sample_ids(shared_dir):
        if key == "Id":
            assert object_for_id(value) is get_object(table), value
        elif key in ("OwnerId", "NewValue__c", "OldValue__c", "agent", "FirstAgent"):
            assert object_for_id(value) is get_object("User"), value


@pytest.mark.parametrize("value", ["500Ws000007qlrjIAB", "500Ws000007qlrj", "500Ws000007qlrjIA", "", "x" * 18, None, 5])
def test_malformed_ids_are_rejected_but_15_char_keys_pass(value: object) -> None:
    expected = value == "500Ws000007qlrj"
    assert is_valid_id(value) is expected  # type: ignore[arg-type]


def test_make_id_round_trips_and_sorts_by_number() -> None:
    numbers = [0, 1, 61, 62, 3843, 10**9, 62**10 - 1]
    ids = [make_id("a1N", n) for n in numbers]
    assert all(is_valid_id(i) and i.startswith("a1NWs") for i in ids)
    assert ids == sorted(ids)
    with pytest.raises(ValueError, match=str(62**10)):
        make_id("a1N", 62**10)
    with pytest.raises(ValueError, match="'50'"):
        make_id("50", 1)
    with pytest.raises(ValueError, match="-1"):
        make_id("500", -1)


def test_bulk_ids_equal_make_id() -> None:
    for prefix in ("500", "a1N", "02s", "0ZH"):
        base = id_base(prefix)
        got = bulk_ids(prefix, 3000, 500)
        assert got == [make_id(prefix, base + n) for n in range(3000, 3500)]
        assert got == sorted(got)
        assert ids_for(prefix, [7, 2]) == [make_id(prefix, base + 7), make_id(prefix, base + 2)]
