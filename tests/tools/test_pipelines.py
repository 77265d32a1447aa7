"""The tools chained as the oracle chains them, on a seeded random org, against plain Python.

Random timestamps are drawn around the window edges on purpose, so that the inclusive and exclusive
ends of each tool are exercised many times.
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.org import LocalOrg
from crmarena_gym.schema import make_id
from crmarena_gym.tools import (
    calculate_average_handle_time,
    calculate_region_average_closure_times,
    find_id_with_max_value,
    find_id_with_min_value,
    get_agent_handled_cases_by_period,
    get_agent_transferred_cases_by_period,
    get_cases,
    get_issue_counts,
    get_month_to_case_count,
    get_non_transferred_case_ids,
    get_order_item_ids_by_product,
    get_period,
    get_qualified_agent_ids_by_case_count,
    get_shipping_state,
    get_start_date,
)
from tests.org_builder import OrgBuilder

FMT = "%Y-%m-%dT%H:%M:%S"
EDGES = [dt.datetime(2021, 3, 1), dt.datetime(2021, 6, 1), dt.datetime(2021, 12, 1), dt.datetime(2022, 3, 1)]


def _stamp(moment: dt.datetime) -> str:
    return moment.strftime(FMT) + ".000+0000"


class World:
    """The random org's rows, kept in Python for the expectations."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.agents = [make_id("005", n) for n in range(1, 7)]
        self.states = {make_id("001", n): rng.choice(["CA", "NY", "TX", None]) for n in range(1, 9)}
        self.products = [make_id("01t", n) for n in range(1, 4)]
        self.items = {make_id("802", n): rng.choice(self.products) for n in range(1, 13)}
        self.issues = [make_id("a1M", n) for n in range(1, 4)]

        def when() -> dt.datetime:
            if rng.random() < 0.3:  # right on, or a second off, a window edge
                return rng.choice(EDGES) + dt.timedelta(seconds=rng.choice([-1, 0, 0, 1]))
            return dt.datetime(2021, 1, 1) + dt.timedelta(minutes=rng.randrange(60 * 24 * 500))

        self.cases: dict[str, dict[str, Any]] = {}
        self.history: list[tuple[str, str | None, str | None, dt.datetime]] = []  # (case, old, new, at)
        for n in range(1, 121):
            case = make_id("500", n)
            created = when()
            owners = [rng.choice(self.agents)]
            while rng.random() < 0.3:
                owners.append(rng.choice([a for a in self.agents if a != owners[-1]]))
            at = created
            previous = None
            for owner in owners:
                self.history.append((case, previous, owner, at))
                previous, at = owner, at + dt.timedelta(minutes=rng.randrange(1, 60 * 24 * 20))
            closed = at + dt.timedelta(seconds=rng.randrange(60, 10**6)) if rng.random() < 0.8 else None
            self.cases[case] = {
                "OwnerId": owners[-1],
                "CreatedDate": created,
                "ClosedDate": closed,
                "AccountId": rng.choice(list(self.states)),
                "OrderItemId__c": rng.choice(list(self.items)),
                "IssueId__c": rng.choice([*self.issues, None]),
                "Status": "Closed" if closed else rng.choice(["New", "Working"]),
            }

    def write(self, path: Path) -> None:
        b = OrgBuilder(path)
        for agent in self.agents:
            b.add("User", Id=agent, FirstName="A", LastName=agent[-4:])
        for account, state in self.states.items():
            b.add("Account", Id=account, FirstName="C", LastName=account[-4:], ShippingState=state)
        for product in self.products:
            b.add("Product2", Id=product, Name=f"Product {product[-4:]}")
        for item, product in self.items.items():
            b.add("OrderItem", Id=item, Product2Id=product)
        for issue in self.issues:
            b.add("Issue__c", Id=issue, Name=f"Issue {issue[-4:]}")
        for case, row in self.cases.items():
            values = {**row, "CreatedDate": _stamp(row["CreatedDate"])}
            values["ClosedDate"] = _stamp(row["ClosedDate"]) if row["ClosedDate"] else None
            b.add("Case", Id=case, **values)
        for case, old, new, at in self.history:
            b.add(
                "CaseHistory__c",
                CaseId__c=case,
                Field__c="Owner Assignment",
                OldValue__c=old,
                NewValue__c=new,
                CreatedDate=_stamp(at),
            )
            b.add("CaseHistory__c", CaseId__c=case, Field__c="Case Creation", CreatedDate=_stamp(at))
        b.close()

    def assignments(self, start: dt.datetime, end: dt.datetime) -> list[tuple[str, str | None, str | None]]:
        return [(case, old, new) for case, old, new, at in self.history if start <= at <= end]

    def cases_in(self, start: dt.datetime, end: dt.datetime) -> dict[str, dict[str, Any]]:
        return {k: c for k, c in self.cases.items() if start <= c["CreatedDate"] < end}


WINDOWS = [(EDGES[0], EDGES[1]), (EDGES[1], EDGES[2]), (EDGES[2], EDGES[3]), (EDGES[0], EDGES[3])]


@pytest.fixture(scope="module")
def world_org(tmp_path_factory: pytest.TempPathFactory) -> tuple[World, LocalOrg]:
    world = World(seed=20240601)
    path = tmp_path_factory.mktemp("pipeline_org") / "org.db"
    world.write(path)
    org = LocalOrg(path, today="2022-06-01")
    yield world, org
    org.close()


def _arg(moment: dt.datetime) -> str:
    return moment.strftime(FMT) + "Z"


def _best(values: dict[str, float], direction: str) -> list[str]:
    if not values:
        return []
    target = max(values.values()) if direction == "max" else min(values.values())
    return sorted(k for k, v in values.items() if v == target)


@pytest.mark.parametrize(("start", "end"), WINDOWS)
def test_history_tools(world_org: tuple[World, LocalOrg], start: dt.datetime, end: dt.datetime) -> None:
    world, org = world_org
    rows = world.assignments(start, end)
    handled = Counter(new for _, _, new in rows)
    assert get_agent_handled_cases_by_period(org, _arg(start), _arg(end)) == dict(handled)
    per_case = Counter(case for case, _, _ in rows)
    assert get_non_transferred_case_ids(org, _arg(start), _arg(end)) == sorted(k for k, n in per_case.items() if n == 1)
    transfers = Counter(old for _, old, _ in rows if old is not None)
    assert get_agent_transferred_cases_by_period(org, _arg(start), _arg(end), world.agents) == {
        a: transfers[a] for a in world.agents if transfers[a]
    }


@pytest.mark.parametrize(("start", "end"), WINDOWS)
@pytest.mark.parametrize("n_cases", [0, 5])
@pytest.mark.parametrize("direction", ["min", "max"])
def test_handle_time_pipeline(
    world_org: tuple[World, LocalOrg], start: dt.datetime, end: dt.datetime, n_cases: int, direction: str
) -> None:
    world, org = world_org
    s, e = _arg(start), _arg(end)
    # Plain Python, following the task's definition.
    rows = world.assignments(start, end)
    qualified = {a for a, n in Counter(new for _, _, new in rows).items() if n > n_cases}
    single = {k for k, n in Counter(case for case, _, _ in rows).items() if n == 1}
    totals: dict[str, list[float]] = defaultdict(list)
    for k, c in world.cases_in(start, end).items():
        if k in single and c["OwnerId"] in qualified and c["ClosedDate"] is not None:
            totals[c["OwnerId"]].append((c["ClosedDate"] - c["CreatedDate"]).total_seconds())
    expected = _best({a: sum(v) / len(v) for a, v in totals.items()}, direction)
    # The tools, chained.
    agents = get_qualified_agent_ids_by_case_count(get_agent_handled_cases_by_period(org, s, e), n_cases)
    cases = get_cases(org, start_date=s, end_date=e, agent_ids=agents, case_ids=get_non_transferred_case_ids(org, s, e))
    times = calculate_average_handle_time(cases)
    found = find_id_with_min_value(times) if direction == "min" else find_id_with_max_value(times)
    assert sorted(found) == expected


@pytest.mark.parametrize(("start", "end"), WINDOWS)
def test_transfer_and_region_pipelines(world_org: tuple[World, LocalOrg], start: dt.datetime, end: dt.datetime) -> None:
    world, org = world_org
    s, e = _arg(start), _arg(end)
    rows = world.assignments(start, end)
    qualified = [a for a, n in Counter(new for _, _, new in rows).items() if n > 1]
    transfers = Counter(old for _, old, _ in rows if old in qualified)
    agents = get_qualified_agent_ids_by_case_count(get_agent_handled_cases_by_period(org, s, e), 1)
    counts = get_agent_transferred_cases_by_period(org, s, e, agents)
    assert sorted(find_id_with_max_value(counts)) == _best(dict(transfers), "max")
    assert sorted(find_id_with_min_value(counts)) == _best(dict(transfers), "min")

    by_state: dict[str, list[float]] = defaultdict(list)
    for c in world.cases_in(start, end).values():
        state = world.states[c["AccountId"]]
        if state is not None and c["ClosedDate"] is not None:
            by_state[state].append((c["ClosedDate"] - c["CreatedDate"]).total_seconds())
    regions = calculate_region_average_closure_times(get_shipping_state(org, get_cases(org, start_date=s, end_date=e)))
    assert regions == pytest.approx({st: sum(v) / len(v) for st, v in by_state.items()})
    assert sorted(find_id_with_min_value(regions)) == _best({st: sum(v) / len(v) for st, v in by_state.items()}, "min")


@pytest.mark.parametrize(("start", "end"), WINDOWS)
def test_product_pipelines(world_org: tuple[World, LocalOrg], start: dt.datetime, end: dt.datetime) -> None:
    world, org = world_org
    s, e = _arg(start), _arg(end)
    for product in world.products:
        items = get_order_item_ids_by_product(org, product)
        assert items == sorted(i for i, p in world.items.items() if p == product)
        issues = Counter(
            c["IssueId__c"]
            for c in world.cases.values()
            if world.items[c["OrderItemId__c"]] == product and c["IssueId__c"] and start <= c["CreatedDate"] <= end
        )
        counts = get_issue_counts(org, s, e, items)
        assert counts == dict(issues)
        # The most reported first, ties by issue id (ORIGINAL.md section 6: sorted by count).
        assert list(counts) == [i for i, _ in sorted(issues.items(), key=lambda kv: (-kv[1], kv[0]))]
        months = Counter(
            calendar.month_name[c["CreatedDate"].month]
            for c in world.cases_in(start, end).values()
            if world.items[c["OrderItemId__c"]] == product
        )
        cases = get_cases(org, start_date=s, end_date=e, order_item_ids=items)
        by_month = get_month_to_case_count(cases)
        assert by_month == dict(months)
        # Months in the order the cases bring them (ORIGINAL.md section 6).
        first_seen = [calendar.month_name[int(c["CreatedDate"][5:7])] for c in cases]
        assert list(by_month) == list(dict.fromkeys(first_seen))


def test_relative_and_named_windows_feed_the_tools(world_org: tuple[World, LocalOrg]) -> None:
    world, org = world_org
    winter = get_period("Winter", 2021)
    assert (winter["start_date"], winter["end_date"]) == (_arg(EDGES[2]), _arg(EDGES[3]))
    start = get_start_date(winter["end_date"], "quarters", 1)
    assert start == _arg(EDGES[2])
    assert len(get_cases(org, start_date=start, end_date=winter["end_date"])) == len(world.cases_in(EDGES[2], EDGES[3]))
