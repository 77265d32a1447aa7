"""transfer_count on the B2B and B2C orgs: gold three ways, None windows, spread, competition, phrasing."""

from __future__ import annotations

import calendar
import re

from tests.tasks.pro._cats_a import assert_phrasing, assert_spread
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "transfer_count"

# Transfers out per agent in the window, among agents with more than K Owner Assignments in (written apart
# from the module: dates compared as dates, the K filter as a correlated count).
_TRANSFERS = """
SELECT h.OldValue__c, COUNT(*) FROM CaseHistory__c h
WHERE h.Field__c = 'Owner Assignment' AND h.OldValue__c IS NOT NULL
  AND date(substr(h.CreatedDate, 1, 10)) BETWEEN date(:start) AND date(:end)
  AND (SELECT COUNT(*) FROM CaseHistory__c m WHERE m.Field__c = 'Owner Assignment' AND m.NewValue__c = h.OldValue__c
       AND date(substr(m.CreatedDate, 1, 10)) BETWEEN date(:start) AND date(:end)) > :k
GROUP BY h.OldValue__c
"""


def _transfers(pro_org: ProOrg, params: dict) -> dict[str, int]:
    rows = pro_org.conn.execute(_TRANSFERS, {k: params[k] for k in ("start", "end", "k")}).fetchall()
    return dict(rows)


def _named_windows_with_an_answer(pro_org: ProOrg) -> list[tuple[str, str, int]]:
    """Every named month, quarter and season of the org's years, K and direction with a unique extreme."""
    found = []
    for year in range(2020, 2026):
        periods = [(f"{year}-{m:02d}-01", f"{year}-{m:02d}-{calendar.monthrange(year, m)[1]}") for m in range(1, 13)]
        periods += [
            (f"{year}-{m:02d}-01", f"{year}-{m + 2:02d}-{calendar.monthrange(year, m + 2)[1]}")
            for m in (1, 4, 7, 10, 3, 6, 9)  # the quarters, then spring, summer and autumn
        ]
        periods += [(f"{year}-12-01", f"{year + 1}-02-{calendar.monthrange(year + 1, 2)[1]}")]
        for start, end in periods:
            for k in range(4):
                counts = list(_transfers(pro_org, {"start": start, "end": end, "k": k}).values())
                if len(counts) >= 2 and (counts.count(min(counts)) == 1 or counts.count(max(counts)) == 1):
                    found.append((start, end, k))
    return found


def test_answerable_gold_three_ways(pro_org: ProOrg) -> None:
    check_three_ways(pro_org, NAME, draw_instances(pro_org, NAME, 20, want_none=False, seed=201))


def test_none_gold_three_ways_and_no_candidate(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 10, want_none=True, seed=202)
    assert all(draw.answer is None for draw in draws)
    check_three_ways(pro_org, NAME, draws)
    for draw in draws:
        assert _transfers(pro_org, draw.params) == {}, draw.params


def test_spread_competition_and_phrasing(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 60, want_none=False, seed=203)
    assert_spread(draws, min_distinct=6)
    for draw in draws:
        counts = _transfers(pro_org, draw.params)
        assert len(counts) >= 2, draw.params
        pick = min if draw.params["direction"] == "min" else max
        assert list(counts.values()).count(pick(counts.values())) == 1
        assert counts[draw.answer] == pick(counts.values())
    assert_phrasing(draws)
    params = [draw.params for draw in draws]
    assert {p["direction"] for p in params} == {"min", "max"}
    # In the sparse B2B org an agent with more than two cases and a transfer in one window is rare.
    assert {p["k"] for p in params} >= ({0, 1} if pro_org.kind == "b2b" else {0, 1, 2})
    if pro_org.kind == "b2c":
        assert {"unit" in p["window"] for p in params} == {True, False}
    else:  # B2B's ~40 transfers leave few named months, quarters or seasons with a unique extreme
        named = [p for p in params if "unit" not in p["window"]]
        assert bool(named) == bool(_named_windows_with_an_answer(pro_org))
    assert any(re.search(r"more than [0-3] cases?\b", d.query) for d in draws)
    assert any(re.search(r"more than (zero|one|two|three) cases?\b", d.query) for d in draws)
    for draw in draws:
        assert draw.required.startswith(f"- Today's date: {draw.params['today']}\n")
        assert draw.params["end"] <= draw.params["today"]
