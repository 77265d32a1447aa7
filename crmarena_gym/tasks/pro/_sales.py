"""What the sales-side Pro categories share: the stage guide they show and read, phrasing picks, query helpers.

Used by the draws (which write the guide from the org's closed activity catalog) and the solvers (which read it
back from the instance's context, as an agent would); never by a category's ``gold_sql``, which stays plain SQL.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from crmarena_gym.schema import OPPORTUNITY_STAGES
from crmarena_gym.tasks._oracle import OracleError

if TYPE_CHECKING:
    import numpy as np

    from crmarena_gym.tasks.pro._category import ProFacts

#: The five stages, least advanced first.
STAGES: tuple[str, ...] = OPPORTUNITY_STAGES
_GUIDE_HEAD = "- Stage guide (the activities that belong to each stage of an opportunity):"
_GUIDE_LINE = re.compile(r"^\s*- (Qualification|Discovery|Quote|Negotiation|Closed) stage: (.+)$")


def pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    """One of ``options``, drawn with ``rng``."""
    return options[int(rng.integers(len(options)))]


def stage_catalog(facts: ProFacts) -> dict[str, list[str]]:
    """The org's activity catalog, stage -> its task subjects (the oracle table the generator keeps)."""

    def build() -> dict[str, list[str]]:
        rows = facts.conn.execute("SELECT subject, stage FROM crmarena_hidden_stage_catalog ORDER BY rowid").fetchall()
        catalog: dict[str, list[str]] = {stage: [] for stage in STAGES}
        for subject, stage in rows:
            catalog[stage].append(subject)
        return catalog

    return facts.once("sales.stage_catalog", build)


def stage_guide(facts: ProFacts) -> str:
    """The stage guide as context lines: one line per stage listing its activities (separated by `` | ``)."""
    catalog = stage_catalog(facts)
    lines = [_GUIDE_HEAD]
    for stage in STAGES:
        lines.append(f"  - {stage} stage: {' | '.join(catalog[stage])}")
    return "\n".join(lines)


def read_stage_guide(required: str) -> dict[str, str]:
    """The guide an instance's context shows, read back: task subject -> stage.

    Raises:
        OracleError: The context has no stage guide, or the guide names one activity under two stages.
    """
    guide: dict[str, str] = {}
    for line in required.splitlines():
        match = _GUIDE_LINE.match(line)
        if match is None:
            continue
        for subject in match.group(2).split(" | "):
            if guide.setdefault(subject.strip(), match.group(1)) != match.group(1):
                raise OracleError(f"the stage guide lists {subject!r} under two stages")
    if not guide:
        raise OracleError("the instance's context has no stage guide")
    return guide


def records(result: Any) -> list[dict[str, Any]]:
    """A SOQL tool result as a list of records (the tool answers a list; anything else is a defect)."""
    if not isinstance(result, list):
        raise OracleError(f"a query answered {str(result)[:200]!r}, not a list of records")
    return result


def hidden_rows(conn: sqlite3.Connection, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of a query over the org file (the draws' read of the planted labels)."""
    return conn.execute(sql, tuple(args)).fetchall()
