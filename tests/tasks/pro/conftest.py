"""Pro orgs shared by the Pro category tests (generated once per session), and the three-way gold check."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from crmarena_gym.datagen import generate_org
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks.pro import ProDraw, ProFacts, ProQuestion, pro_category, pro_oracle_trace

#: The seed of the orgs the category tests draw from (not the default seed, so tests see a fresh org).
PRO_TEST_SEED = 7


@dataclass
class ProOrg:
    """A generated Pro org: its kind, file, read-only connection and engine."""

    kind: str
    path: Path
    conn: sqlite3.Connection
    org: LocalOrg


@pytest.fixture(scope="session", params=["b2b", "b2c"])
def pro_org(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProOrg]:
    """A B2B and a B2C org (seed 7, scale 1, latent variables on)."""
    kind = request.param
    path = tmp_path_factory.mktemp(f"pro-{kind}") / "org.sqlite"
    generate_org(path, kind=kind, seed=PRO_TEST_SEED, scale=1.0)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    yield ProOrg(kind, path, conn, LocalOrg(path))
    conn.close()


def draw_instances(pro_org: ProOrg, name: str, n: int, *, want_none: bool, seed: int = 0) -> list[ProDraw]:
    """``n`` draws of category ``name`` (None golds when ``want_none``), failing if the category cannot make them."""
    category = pro_category(name)
    facts = ProFacts(pro_org.conn, pro_org.kind)
    rng = np.random.default_rng(seed)
    draws: list[ProDraw] = []
    for _ in range(n * 50):
        draw = category.draw(facts, rng, want_none)
        if draw is not None:
            draws.append(draw)
            if len(draws) == n:
                return draws
    raise AssertionError(f"{name} on {pro_org.kind}: only {len(draws)} of {n} draws (want_none={want_none})")


def check_three_ways(pro_org: ProOrg, name: str, draws: list[ProDraw]) -> None:
    """For every draw: the planted gold, the SQL gold and the oracle's answer through the tools agree."""
    category = pro_category(name)
    for draw in draws:
        by_sql = category.gold_sql(pro_org.conn, draw.params)
        question = ProQuestion(draw.query, draw.required, draw.params, pro_org.kind)
        by_tools, _trace = pro_oracle_trace(category, question, pro_org.org)
        assert by_sql == draw.answer, (name, pro_org.kind, draw.params, by_sql, draw.answer)
        assert by_tools == draw.answer, (name, pro_org.kind, draw.params, by_tools, draw.answer)


@pytest.fixture(scope="session")
def flat_b2b_conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a B2B org generated with ``latent=False`` (seed 7, scale 0.3)."""
    path = tmp_path_factory.mktemp("pro-flat") / "org.sqlite"
    generate_org(path, kind="b2b", seed=PRO_TEST_SEED, scale=0.3, latent=False)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    yield conn
    conn.close()
