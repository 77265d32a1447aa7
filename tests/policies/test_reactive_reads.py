"""The reactive oracle routes a new case (NCR) from what it reads, never from the hidden issue and product: when the
result that names the case's issue (get_issues) or finds its product (search_products) is lost or points elsewhere,
its answer follows what it was shown. Expectations come from the plain-SQL gold (tasks._gold) over the org, never
from the solver."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from crmarena_gym.datagen import generate_org
from crmarena_gym.policies import OraclePolicy, ReactiveOraclePolicy
from crmarena_gym.tasks import TaskInstance, generate_tasks
from crmarena_gym.tasks import _gold as gold
from tests.policies.tampering import play, tampered_env


def _single(answers: list[str]) -> str:
    return answers[0] if len(answers) == 1 else "None"


@pytest.fixture(scope="module")
def routed(env_org: Path) -> list[TaskInstance]:
    """Answerable routing instances of the environment tests' org."""
    return [i for i in generate_tasks(env_org, seed=2, per_task=8, tasks=["NCR"]) if i.answer]


def _issue_names(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute('SELECT "Id", "Name" FROM "Issue__c"'))


def test_issue_names_swapped_route_by_the_issue_it_was_shown(
    env_org: Path, conn: sqlite3.Connection, routed: list[TaskInstance]
) -> None:
    names = _issue_names(conn)
    checked = 0
    for instance in routed:
        issue, product = instance.params["issue_id"], instance.params["product_id"]
        assert _single(gold.gold_case_routing(conn, issue, product)) == instance.answer
        # Another issue whose closed cases alone pick one agent, not the case's: the swap's outcome is unambiguous.
        decoys = [
            other
            for other in sorted(names)
            if other != issue
            and len(winners := gold.best_keys(gold.closed_on_issue(conn, other), "max")) == 1
            and winners != [instance.answer]
        ]
        if not decoys:
            continue
        decoy = decoys[0]
        expected = gold.best_keys(gold.closed_on_issue(conn, decoy), "max")[0]
        swap = {issue: names[decoy], decoy: names[issue]}

        def swapped(rows: Any, swap: dict[str, str] = swap) -> Any:
            return [{**row, "Name": swap.get(row["Id"], row["Name"])} for row in rows]

        env = tampered_env(env_org, instance, "get_issues", swapped)
        submitted, reward = play(ReactiveOraclePolicy(), env)
        assert env.tampered >= 1
        assert (submitted, reward) == (expected, 0.0), instance.idx
        # The replaying oracle reads the environment's own results, not what it shows: still the gold.
        assert play(OraclePolicy(), tampered_env(env_org, instance, "get_issues", swapped)) == (instance.answer, 1.0)
        checked += 1
    assert checked >= 3


def test_issue_list_lost_leaves_the_case_unrouted(env_org: Path, routed: list[TaskInstance]) -> None:
    for instance in routed[:3]:
        env = tampered_env(env_org, instance, "get_issues", lambda rows: [])
        submitted, reward = play(ReactiveOraclePolicy(), env)
        assert env.tampered == 2  # asked once more: a lost result looks empty
        assert (submitted, reward) == ("None", 0.0)


@pytest.fixture(scope="module")
def small_org(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small org (seed 1, scale 0.2), where the issue rule leaves some new cases tied and the product decides."""
    path = tmp_path_factory.mktemp("ncr-small") / "org.sqlite"
    generate_org(path, seed=1, scale=0.2)
    return path


def test_product_search_lost_or_elsewhere_routes_by_what_was_found(small_org: Path) -> None:
    connection = sqlite3.connect(f"file:{small_org}?mode=ro", uri=True)
    try:
        instances = generate_tasks(small_org, seed=0, per_task=12, tasks=["NCR"])
        tied = [
            i
            for i in instances
            if i.answer and len(gold.best_keys(gold.closed_on_issue(connection, i.params["issue_id"]), "max")) > 1
        ]
        assert tied, "the small org gives no new case that the product decides"
        redirected = 0
        products = [pid for (pid,) in connection.execute('SELECT DISTINCT "Product2Id" FROM "OrderItem" ORDER BY 1')]
        for instance in tied:
            issue, product = instance.params["issue_id"], instance.params["product_id"]
            # Lost: no product to break the tie with, no routing.
            env = tampered_env(small_org, instance, "search_products", lambda ids: [])
            assert play(ReactiveOraclePolicy(), env) == ("None", 0.0)
            # Pointing at another ordered product: the tie is broken by that product's closed cases.
            others = {
                other: _single(gold.gold_case_routing(connection, issue, other))
                for other in products
                if other != product
            }
            decoy = next((o for o, answer in others.items() if answer not in (instance.answer, "None")), None)
            if decoy is None:
                continue
            env = tampered_env(small_org, instance, "search_products", lambda ids, decoy=decoy: [decoy])
            assert play(ReactiveOraclePolicy(), env) == (others[decoy], 0.0), instance.idx
            redirected += 1
            assert play(OraclePolicy(), tampered_env(small_org, instance, "search_products", lambda ids: [])) == (
                instance.answer,
                1.0,
            )
        assert redirected >= 1
    finally:
        connection.close()


def test_act_mode_without_soql_cannot_read_the_case_and_changes_nothing(
    env_org: Path, conn: sqlite3.Connection, routed: list[TaskInstance]
) -> None:
    """In act mode the new case is a record; with the task functions alone (no function reads a case's text) the
    reactive oracle cannot read it, so it routes nothing and makes no change, while with SOQL it makes the gold one."""
    instance = routed[0]
    assert ReactiveOraclePolicy.toolset == "flex"
    for toolset, expected in (("functions", 0.0), ("flex", 1.0)):
        env = gym.make("CRMArena-NCR-Act-v0", org=env_org, tasks=[instance], toolset=toolset, privileged=True)
        policy = ReactiveOraclePolicy()
        policy.attach(env)
        observation, info = env.reset(seed=0)
        policy.reset(observation, info)
        actions, reward, done = [], 0.0, False
        while not done:
            actions.append(json.loads(policy.act(observation)))
            observation, reward, terminated, truncated, step_info = env.step(json.dumps(actions[-1]))
            done = terminated or truncated
        names = [a["name"] for a in actions]
        assert reward == expected, (toolset, step_info.get("diff_check"))
        if toolset == "functions":
            assert names == ["issue_soql_query", "submit"] and step_info["state_diff"] == []
        else:
            owner = next(a for a in actions if a["name"] == "update_record")["arguments"]["fields"]["OwnerId"]
            routing = gold.gold_case_routing(conn, instance.params["issue_id"], instance.params["product_id"])
            assert owner == _single(routing)
        env.close()
