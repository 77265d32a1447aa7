"""The ranking and routing categories on a B2B org generated without its hidden structure (``latent=False``).

Flat, the golds follow the data's noise rather than planted agents and states; the categories still draw
answerable instances, and their three golds still agree.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from crmarena_gym.datagen import generate_org
from crmarena_gym.org import LocalOrg
from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

CATEGORIES = (
    "handle_time",
    "transfer_count",
    "top_issue_identification",
    "best_region_identification",
    "sales_cycle_understanding",
    "sales_amount_understanding",
    "conversion_rate_comprehension",
    "monthly_trend_analysis",
    "case_routing",
    "lead_routing",
)


@pytest.fixture(scope="module")
def flat_org(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProOrg]:
    import sqlite3

    path = tmp_path_factory.mktemp("flat-b2b") / "org.sqlite"
    generate_org(path, kind="b2b", seed=7, scale=1.0, latent=False)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    yield ProOrg("b2b", path, conn, LocalOrg(path))
    conn.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", CATEGORIES)
def test_flat_org_still_draws_and_agrees(flat_org: ProOrg, name: str) -> None:
    check_three_ways(flat_org, name, draw_instances(flat_org, name, 8, want_none=False, seed=1101))
