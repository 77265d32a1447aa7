"""The sales categories of pro-cats-b on orgs generated without latent variables (``latent=False``): the
record-level labels they draw from stay planted, so every one still draws and its three golds agree."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import numpy as np
import pytest

from crmarena_gym.datagen import generate_org
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks.pro import ProFacts, ProQuestion, pro_category, pro_oracle_trace
from tests.tasks.pro.conftest import PRO_TEST_SEED, ProOrg

CATEGORIES = (
    "wrong_stage_rectification",
    "activity_priority",
    "quote_approval",
    "invalid_config",
    "lead_qualification",
    "sales_insight_mining",
    "internal_operation_data",
)


@pytest.fixture(scope="module", params=["b2b", "b2c"])
def flat_org(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProOrg]:
    path = tmp_path_factory.mktemp(f"pro-flat-{request.param}") / "org.sqlite"
    generate_org(path, kind=request.param, seed=PRO_TEST_SEED, scale=0.5, latent=False)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    yield ProOrg(request.param, path, conn, LocalOrg(path))
    conn.close()


@pytest.mark.parametrize("name", CATEGORIES)
def test_flat_org_draws_agree_three_ways(flat_org: ProOrg, name: str) -> None:
    category = pro_category(name)
    facts = ProFacts(flat_org.conn, flat_org.kind, latent=False)
    rng = np.random.default_rng(5)
    modes = {"sales_insight_mining": (False,), "internal_operation_data": (True,)}.get(name, (False, True))
    for want_none in modes:
        drawn = 0
        for _ in range(200):
            draw = category.draw(facts, rng, want_none)
            if draw is None:
                continue
            drawn += 1
            question = ProQuestion(draw.query, draw.required, draw.params, flat_org.kind)
            assert category.gold_sql(flat_org.conn, draw.params) == draw.answer, draw.params
            assert pro_oracle_trace(category, question, flat_org.org)[0] == draw.answer, draw.params
            assert (draw.answer is None) == want_none
            if drawn == 8:
                break
        assert drawn == 8, (name, want_none, drawn)
