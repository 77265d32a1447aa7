"""The reactive oracle finds a described purchase (NED) from what it reads, never from the hidden search term and day:
the question gives what to search for and when (today's date in the context), and when the product search's result or
the account it looks purchases up in is lost or points elsewhere, its answer follows what it was shown. Expectations
come from plain SQL over the org (tasks._gold.purchased_products), never from the solver."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.policies import OraclePolicy, ReactiveOraclePolicy
from crmarena_gym.tasks import TaskInstance, generate_tasks
from crmarena_gym.tasks import _gold as gold
from tests.policies.tampering import play, tampered_env


@pytest.fixture(scope="module")
def found(env_org: Path) -> list[TaskInstance]:
    """Answerable purchase questions of the environment tests' org."""
    return [i for i in generate_tasks(env_org, seed=2, per_task=10, tasks=["NED"]) if i.answer]


def _day(instance: TaskInstance) -> dt.date:
    return dt.date.fromisoformat(instance.params["purchase_date"])


def _bought(conn: sqlite3.Connection, instance: TaskInstance, day: dt.date | None = None) -> set[str]:
    return gold.purchased_products(conn, instance.params["contact_id"], day or _day(instance))


def test_hidden_search_term_and_day_are_not_what_it_reads(
    env_org: Path, conn: sqlite3.Connection, found: list[TaskInstance]
) -> None:
    """Hidden parameters that point at a day with no purchase and at no product leave both oracles at the gold: they
    read the question (a solver taking the hidden values would answer None)."""
    checked = 0
    for instance in found[:4]:
        day = _day(instance)
        empty = next(d for n in range(1, 60) if not _bought(conn, instance, d := day + dt.timedelta(days=n)))
        assert _bought(conn, instance) & {instance.answer}  # the gold is a purchase of the question's day (SQL)
        misled = instance.model_copy(
            update={"params": {**instance.params, "purchase_date": empty.isoformat(), "search_term": "Zzyzx"}}
        )
        for policy in (ReactiveOraclePolicy(), OraclePolicy()):
            assert play(policy, tampered_env(env_org, misled, "search_products", lambda ids: ids)) == (
                instance.answer,
                1.0,
            ), (type(policy).__name__, instance.idx)
        checked += 1
    assert checked >= 3


def test_product_search_lost_finds_nothing(env_org: Path, found: list[TaskInstance]) -> None:
    for instance in found[:3]:
        env = tampered_env(env_org, instance, "search_products", lambda ids: [])
        assert play(ReactiveOraclePolicy(), env) == ("None", 0.0)
        assert env.tampered == 2  # asked once more: a lost result looks empty
        # The replaying oracle reads the environment's own results, not what it shows: still the gold.
        assert play(OraclePolicy(), tampered_env(env_org, instance, "search_products", lambda ids: [])) == (
            instance.answer,
            1.0,
        )


def test_product_search_pointing_at_another_purchase_of_the_day_names_it(
    env_org: Path, conn: sqlite3.Connection, found: list[TaskInstance]
) -> None:
    checked = 0
    for instance in found:
        others = sorted(_bought(conn, instance) - {instance.answer})
        if not others:
            continue
        decoy = others[0]

        def elsewhere(ids: Any, decoy: str = decoy) -> Any:
            return [decoy]

        env = tampered_env(env_org, instance, "search_products", elsewhere)
        assert play(ReactiveOraclePolicy(), env) == (decoy, 0.0), instance.idx
        checked += 1
    assert checked >= 2


def test_account_pointing_elsewhere_looks_up_that_account(
    env_org: Path, conn: sqlite3.Connection, found: list[TaskInstance]
) -> None:
    """The account the contact lookup returns is the one whose purchases are checked: another account that bought
    nothing that day leaves no answer."""
    checked = 0
    for instance in found[:4]:
        (own,) = conn.execute('SELECT "AccountId" FROM "Contact" WHERE "Id" = ?', (instance.params["contact_id"],))
        day = _day(instance).isoformat()
        idle = conn.execute(
            'SELECT "Id" FROM "Account" WHERE "Id" != ? AND "Id" NOT IN (SELECT "AccountId" FROM "Order" '
            'WHERE "EffectiveDate" = ? AND "AccountId" IS NOT NULL) ORDER BY "Id" LIMIT 1',
            (own[0], day),
        ).fetchone()[0]
        env = tampered_env(env_org, instance, "get_account_id_by_contact_id", lambda account, idle=idle: idle)
        assert play(ReactiveOraclePolicy(), env) == ("None", 0.0), instance.idx
        checked += 1
    assert checked >= 3
