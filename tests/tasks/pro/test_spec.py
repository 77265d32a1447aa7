"""The Pro spec table against Pro's own task file (read from ../shared when it is there)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from crmarena_gym.tasks.pro import PRO_CATEGORY_SPECS, get_pro_spec

B2B_FILE = Path(__file__).resolve().parents[3].parent / "shared" / "crmarena-pro" / "b2b_tasks.json"


@pytest.fixture(scope="module")
def rows_by_category() -> dict[str, list[dict]]:
    if not B2B_FILE.exists():
        pytest.skip(f"Pro's B2B task file is not at {B2B_FILE} (../shared/crmarena-pro/b2b_tasks.json)")
    by: dict[str, list[dict]] = defaultdict(list)
    for row in json.loads(B2B_FILE.read_text()):
        by[row["task"]].append(row)
    return by


def test_every_category_of_the_file_is_specified_once(rows_by_category: dict[str, list[dict]]) -> None:
    assert sorted(rows_by_category) == sorted(s.name for s in PRO_CATEGORY_SPECS)
    assert len({s.abbrev for s in PRO_CATEGORY_SPECS}) == 22


@pytest.mark.parametrize("spec", PRO_CATEGORY_SPECS, ids=lambda s: s.abbrev)
def test_spec_matches_the_file(spec, rows_by_category: dict[str, list[dict]]) -> None:
    rows = rows_by_category[spec.name]
    assert min(r["idx"] for r in rows) == spec.first_idx
    assert len(rows) == spec.count
    assert {r["reward_metric"] for r in rows} == {spec.reward_metric}
    assert sum(r["answer"] == [None] for r in rows) == round(spec.none_rate * spec.count)
    with_today = sum("Today's date" in r["metadata"]["required"] for r in rows)
    assert with_today == (spec.count if spec.has_today else 0)


def test_lookup_by_name_and_abbreviation() -> None:
    assert get_pro_spec("quote_approval") is get_pro_spec("qap")
    with pytest.raises(KeyError, match="did you mean 'lead_routing'"):
        get_pro_spec("lead_routin")
