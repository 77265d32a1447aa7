"""Plans by shape (issue 17 item 1): a query answered from another query's plan, its literals bound,
answers exactly as the same query compiled on its own, refusals included."""

from __future__ import annotations

import itertools
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crmarena_gym.org import LocalOrg, OrgError
from crmarena_gym.org.soql import Plan, PlanTemplate, compile_query, lift, parse
from tests.org.conftest import SMALL_TODAY
from tests.org.test_engine_fuzz import CORPUS as FUZZ_CORPUS


@pytest.fixture(scope="module")
def org(small_org_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("shapes") / "org.db"
    path.write_bytes(small_org_path.read_bytes())  # a backend (and plan cache) of this module's own
    org = LocalOrg(path, today=SMALL_TODAY)
    yield org
    org.close()


@pytest.fixture(scope="module")
def ids(small_org_path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(small_org_path)
    out = {t: [r[0] for r in conn.execute(f'SELECT "Id" FROM "{t}" LIMIT 4')] for t in ("Case", "Account", "User")}
    conn.close()
    return out


def corpus(ids: dict[str, list[str]]) -> list[str]:
    case, account, user = ids["Case"][1], ids["Account"][0], ids["User"][1]
    return [
        *FUZZ_CORPUS,
        f"SELECT Id, Subject FROM Case WHERE Id = '{case}'",
        f"SELECT Id FROM Case WHERE OwnerId = '{user}' AND CreatedDate >= 2022-01-01T00:00:00Z "
        "AND CreatedDate < 2022-07-01T00:00:00Z",
        f"SELECT Id FROM Case WHERE AccountId IN ('{account}', '{ids['Account'][1]}')",
        f"SELECT Id FROM Case WHERE OwnerId != '{user}' ORDER BY CreatedDate",
        f"SELECT Id, Name, (SELECT Id, Subject FROM Cases WHERE Priority = 'High' LIMIT 2) FROM Account "
        f"WHERE Id != '{account}'",
        "SELECT Id FROM Case WHERE Subject LIKE '%delay%' OR Subject LIKE 'Wrong\\_%'",
        "SELECT Priority, COUNT(Id) FROM Case WHERE CreatedDate > 2022-03-01T00:00:00Z GROUP BY Priority "
        "HAVING COUNT(Id) >= 2",
        "SELECT Status, Priority, COUNT(Id) FROM Case WHERE Status != 'New' GROUP BY ROLLUP(Status, Priority)",
        "SELECT Id FROM Order WHERE EffectiveDate > 2022-05-01 AND EffectiveDate <= 2023-04-12",
        "SELECT Id FROM Case WHERE Status IN ('Closed', 'closed', 'Working') AND Priority NOT IN ('Low')",
        "SELECT Id FROM OrderItem WHERE Quantity > 1 AND UnitPrice < 250.5",
        f"SELECT COUNT() FROM Case WHERE OwnerId = '{user}' AND CreatedDate = LAST_N_DAYS:400",
    ]


def literal_pool(ids: dict[str, list[str]]) -> list[str]:
    """Literals of every kind, and values of each kind that change answers, refusals or statements."""
    case = ids["Case"][2]
    return [
        f"'{case}'",
        f"'{case[:15]}'",  # 15 characters: the canonical form differs, two spellings bound
        f"'{case.lower()}'",  # the case restored from the checksum
        f"'{ids['User'][0]}'",
        "'001XXXXXXXXXXXX'",
        "'abc'",  # no id at all: INVALID_QUERY_FILTER_OPERATOR where an id is wanted
        "'Closed'",
        "'closed'",
        "'%a%'",
        "'Wrong\\_%'",
        "'O\\'Brien'",
        "'\\z'",  # an illegal escape: MALFORMED_QUERY
        "'\\u00e9t\\u00e9'",
        "''",
        "0",
        "-1",
        "2.5",
        "1e3",
        "99999999999999999999",
        "2022-05-01",
        "2022-02-30",  # no such day
        "2022-01-01T00:00:00Z",
        "2022-06-30T23:59:59.999+05:30",
    ]


def compiled(org: LocalOrg, soql: str) -> Plan:
    backend = org._live()
    return compile_query(soql, parse(soql), backend.catalog)


def answer(org: LocalOrg, soql: str) -> Any:
    try:
        return org.query(soql)
    except OrgError as exc:
        return (exc.code, exc.message)


def answer_alone(org: LocalOrg, soql: str) -> Any:
    """The answer with no plan cached: the query parsed and compiled on its own."""
    backend = org._live()
    saved = backend.plans
    backend.plans = type(saved)(saved.max_entries, saved.max_bytes)
    try:
        return answer(org, soql)
    finally:
        backend.plans = saved


def variants(soql: str, pool: list[str], rng: random.Random, n: int) -> list[str]:
    lifted = lift(soql)
    if lifted is None:
        return []
    out = []
    for _ in range(n):
        chosen = list(lifted.raws)
        for i in rng.sample(range(len(chosen)), k=rng.randint(1, len(chosen))):
            same_kind = [p for p in pool if _kind(p) == _kind(chosen[i])]
            chosen[i] = rng.choice(same_kind if rng.random() < 0.8 else pool)
        out.append(_put(soql, lifted.positions, lifted.raws, chosen))
    return out


def _kind(raw: str) -> str:
    return "s" if raw.startswith("'") else ("t" if "T" in raw else ("d" if raw.count("-") == 2 else "n"))


def _put(soql: str, positions: tuple[int, ...], raws: tuple[str, ...], new: list[str]) -> str:
    out, last = [], 0
    for pos, raw, value in zip(positions, raws, new, strict=True):
        out += [soql[last:pos], value]
        last = pos + len(raw)
    return "".join(out) + soql[last:]


def _statements(plan: Any) -> list[tuple[str, list[tuple[type, Any]]]]:
    found = [(plan.sql, [(type(p), p) for p in plan.params])]
    for child in plan.children:
        found += _statements(child)
    return found


def test_lifted_answers_equal_unlifted_over_the_corpus_and_fuzzed_literals(
    org: LocalOrg, ids: dict[str, list[str]]
) -> None:
    rng = random.Random(17)
    pool = literal_pool(ids)
    backend = org._live()
    served = 0
    checked = 0
    for base in corpus(ids):
        if lift(base) is None:  # no literal to lift
            continue
        for soql in variants(base, pool, rng, 20):
            backend.plans.clear()
            org.query(base)  # the base query's plan, kept by shape
            template = backend.plans.get(("shape", lift(base).key))
            assert isinstance(template, PlanTemplate), base
            from_shape = template.instantiate(lift(soql)) if lift(soql).key == lift(base).key else None
            if from_shape is not None:
                served += 1
                assert _statements(from_shape) == _statements(compiled(org, soql)), soql
            assert answer(org, soql) == answer_alone(org, soql), soql
            checked += 1
    assert checked > 400, checked
    assert served > checked // 3, (served, checked)  # many variants really were answered from another query's plan


def test_values_that_change_the_statement_or_a_refusal_are_not_served_from_the_shape(
    org: LocalOrg, ids: dict[str, list[str]]
) -> None:
    backend = org._live()
    case = ids["Case"][0]
    backend.plans.clear()
    org.query(f"SELECT Id FROM Case WHERE Id = '{case}'")
    template = backend.plans.get(("shape", lift(f"SELECT Id FROM Case WHERE Id = '{case}'").key))
    assert template.instantiate(lift(f"SELECT Id FROM Case WHERE Id = '{ids['Case'][1]}'")) is not None
    # A 15-character id binds two spellings (IN (?, ?)): another statement, compiled on its own.
    assert template.instantiate(lift(f"SELECT Id FROM Case WHERE Id = '{case[:15]}'")) is None
    assert [r["Id"] for r in org.query(f"SELECT Id FROM Case WHERE Id = '{case[:15]}'")["records"]] == [case]
    # Not an id: the compiler's refusal, word for word.
    with pytest.raises(OrgError) as info:
        org.query("SELECT Id FROM Case WHERE Id = 'abc'")
    assert info.value.code == "INVALID_QUERY_FILTER_OPERATOR" and "invalid ID field: abc" in info.value.message
    # A date where the datetime was: another shape, refused as the compiler refuses it.
    org.query("SELECT Id FROM Case WHERE CreatedDate > 2022-01-01T00:00:00Z")
    with pytest.raises(OrgError) as info:
        org.query("SELECT Id FROM Case WHERE CreatedDate > 2022-01-01")
    assert info.value.code == "INVALID_FIELD" and "must be of type dateTime" in info.value.message
    # Repeats in an IN list of ids collapse: fewer placeholders, the statement written for them.
    two = f"SELECT Id FROM Case WHERE Id IN ('{ids['Case'][0]}', '{ids['Case'][1]}')"
    org.query(two)
    template = backend.plans.get(("shape", lift(two).key))
    same = two.replace(ids["Case"][1], ids["Case"][0])
    assert _statements(template.instantiate(lift(same))) == _statements(compiled(org, same))
    assert org.query(same)["totalSize"] == 1


@pytest.mark.parametrize(
    ("template", "field"),
    [
        ("SELECT Id FROM Case WHERE Id IN ({}) AND Status != 'x'", "Case"),
        ("SELECT Id FROM Case WHERE OwnerId NOT IN ({})", "User"),
        ("SELECT Id FROM Case WHERE Status IN ({}) OR Priority IN ('High')", "status"),
        ("SELECT Priority, COUNT(Id) FROM Case WHERE Status IN ({}) GROUP BY ROLLUP(Priority)", "status"),
        ("SELECT Id, (SELECT Id FROM Cases WHERE Status NOT IN ({})) FROM Account", "status"),
        ("SELECT Id FROM OrderItem WHERE Quantity IN ({})", "number"),
        ("SELECT Id FROM Order WHERE EffectiveDate IN ({})", "date"),
    ],
)
def test_in_lists_of_any_length_share_a_shape(
    org: LocalOrg, ids: dict[str, list[str]], template: str, field: str
) -> None:
    pool = {
        "Case": [f"'{x}'" for x in ids["Case"]] + [f"'{ids['Case'][0][:15]}'", f"'{ids['Case'][1]}'"],
        "User": [f"'{x}'" for x in ids["User"]] + [f"'{ids['User'][2].lower()}'"],
        "status": ["'Closed'", "'closed'", "'Working'", "'New'", "'Escalated'", "'O\\'Brien'"],
        "number": ["1", "2", "3.0", "-4", "5e0", "2"],
        "date": ["2022-05-01", "2023-04-12", "2022-02-28", "2021-01-01", "2022-05-01"],
    }[field]
    backend = org._live()
    backend.plans.clear()
    org.query(template.format(", ".join(pool[:2])))  # the shape's plan, from a list of two
    rng = random.Random(field)
    for length in [1, 2, 3, 5, len(pool), 1, 4]:
        soql = template.format(", ".join(rng.sample(pool, length)))
        plan = backend.plans.get(("shape", lift(soql).key)).instantiate(lift(soql))
        assert plan is not None, soql  # served by the shape, whatever the length
        assert _statements(plan) == _statements(compiled(org, soql)), soql
        assert answer(org, soql) == answer_alone(org, soql), soql
    # A null in the list keeps its own statement (IS NULL): not a list of literals, another shape.
    with_null = template.format(f"{pool[0]}, null")
    assert lift(with_null).key != lift(template.format(pool[0])).key
    assert answer(org, with_null) == answer_alone(org, with_null)


def test_counts_and_relative_literals_stay_in_the_shape(org: LocalOrg) -> None:
    assert lift("SELECT Id FROM Case LIMIT 5 OFFSET 10") is None
    a = lift("SELECT Id FROM Case WHERE Status = 'New' AND CreatedDate = LAST_N_DAYS:30 LIMIT 5 OFFSET 10")
    b = lift("SELECT Id FROM Case WHERE Status = 'Old' AND CreatedDate = LAST_N_DAYS:31 LIMIT 5 OFFSET 10")
    c = lift("SELECT Id FROM Case WHERE Status = 'Old' AND CreatedDate = LAST_N_DAYS:30 LIMIT 5 OFFSET 2001")
    assert a.raws == ("'New'",) and a.key != b.key and a.key != c.key
    org.query("SELECT Id FROM Case WHERE Status = 'New' LIMIT 5 OFFSET 10")
    with pytest.raises(OrgError) as info:  # OFFSET's bound holds whatever plan the shape has
        org.query("SELECT Id FROM Case WHERE Status = 'Old' LIMIT 5 OFFSET 2001")
    assert info.value.code == "NUMBER_OUTSIDE_VALID_RANGE"
    # Relative literals bind per view: one shape's plan serves every date.
    soql = "SELECT COUNT() FROM Case WHERE Status != '{}' AND CreatedDate = LAST_N_DAYS:200"
    for today, status in itertools.product(["2022-03-01", "2022-12-31", "2023-06-15"], ["New", "Closed"]):
        view = org.with_today(today)
        assert answer(view, soql.format(status)) == answer_alone(view, soql.format(status))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hypothesis_literals_of_any_text(org: LocalOrg, data: st.DataObject) -> None:
    # Strings of any characters (quotes and backslashes escaped or not), numbers of any form.
    text = data.draw(st.text(alphabet=st.sampled_from(list("aZ09%_'\\\" é\n")), max_size=12))
    number = data.draw(st.from_regex(r"[+-]?(\d{1,22}(\.\d{0,3})?|\.\d{1,3})([eE][+-]?\d{1,3})?", fullmatch=True))
    for template, warm, value in (
        ("SELECT Id FROM Case WHERE Subject LIKE '{0}' OR Status = '{0}'", "x", text),
        ("SELECT Id FROM OrderItem WHERE Quantity > {0}", "1", number),
        ("SELECT Id FROM Case WHERE OwnerId = '{0}'", "005Ws00000000GBIAY", text),
    ):
        org.query(template.format(warm))  # the shape's plan
        soql = template.format(value)
        assert answer(org, soql) == answer_alone(org, soql), soql
