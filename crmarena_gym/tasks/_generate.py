"""Generating task instances with verified gold answers against an org database.

Each task has a drawing function that picks hidden parameters (a date, a window, a product ...),
computes the gold with :mod:`crmarena_gym.tasks._gold` and phrases the query. A draw whose gold is a
tie is thrown away; so is a draw whose kind (answerable or not) has filled its quota, which keeps the
unanswerable share at ``null_share`` for the tasks that can be unanswerable.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crmarena_gym.tasks import _gold as gold
from crmarena_gym.tasks._context import (
    DOMAIN_DETAILS,
    HANDLE_TIME_POLICY,
    TRANSFER_POLICY,
    todays_date_line,
)
from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._phrasing import PhrasedWindow, capitalize_first, pick, random_window, say_number
from crmarena_gym.tasks._spec import TASK_SPECS, TaskSpec, get_task_spec


class TaskGenerationError(RuntimeError):
    """The org cannot yield the requested instances (too small, or missing what a task needs)."""


@dataclass
class Draw:
    """One drawn instance before numbering.

    Attributes:
        answers: The tied gold answers; empty for an unanswerable question.
        query: The question.
        required: The task context shown with it.
        params: The hidden parameters.
    """

    answers: list[str]
    query: str
    required: str
    params: dict[str, Any]


@dataclass
class OrgFacts:
    """What the drawing functions need to know about the org, read once."""

    conn: sqlite3.Connection
    first_day: dt.date
    last_day: dt.date
    products: list[tuple[str, str]]  # (Id, Name) of products that have cases
    latent: dict[str, Any] = field(default_factory=dict)

    def draw_today(self, rng: np.random.Generator, *, min_history_days: int = 60) -> dt.date:
        """A date for an instance: after some history has built up, up to a month past the last case."""
        low = self.first_day + dt.timedelta(days=min_history_days)
        span = (self.last_day - low).days + 30
        return low + dt.timedelta(days=int(rng.integers(max(span, 1))))


def _window_params(pw: PhrasedWindow) -> dict[str, Any]:
    return {
        "start": gold.format_timestamp(pw.window.start),
        "end": gold.format_timestamp(pw.window.end),
        "window": {"kind": pw.kind, **pw.spec},
    }


def _context(*lines: str) -> str:
    return "\n".join(line.rstrip("\n") for line in lines if line)


def _cases_phrase(rng: np.random.Generator, n: int) -> str:
    if n == 0:
        return pick(rng, ("who handled at least one case", "who handled any cases", "who managed any case"))
    verb = pick(rng, ("handled", "managed", "worked on"))
    noun = "case" if n == 1 else "cases"
    return f"who {verb} more than {say_number(rng, n)} {noun}"


_HTU_EXTREMES = {"min": ("shortest", "lowest", "quickest"), "max": ("longest", "highest", "slowest")}
_HTU_TEMPLATES = (
    "Which agent had the {extreme} average handle time {window}, among agents {cases}?",
    "{Window}, which agent {cases} had the {extreme} average handle time?",
    "Find the agent with the {extreme} handle time {window} among the agents {cases}.",
    "Among agents {cases} {window}, whose average handle time was the {extreme}?",
    "Considering only agents {cases} {window}, who shows the {extreme} average handle time?",
)


def _draw_handle_time(facts: OrgFacts, rng: np.random.Generator) -> Draw | None:
    today = facts.draw_today(rng)
    pw = random_window(rng, today, earliest=facts.first_day)
    if pw is None:
        return None
    n = int(rng.choice([0, 0, 1, 1, 2, 3, 4]))
    direction = pick(rng, ("min", "max"))
    answers = gold.gold_handle_time(facts.conn, pw.window.start, pw.window.end, n, direction)  # type: ignore[arg-type]
    query = pick(rng, _HTU_TEMPLATES).format(
        extreme=pick(rng, _HTU_EXTREMES[direction]),
        window=pw.phrase,
        Window=capitalize_first(pw.phrase),
        cases=_cases_phrase(rng, n),
    )
    query += " Return only the Id of the agent."
    params = {"today": today.isoformat(), **_window_params(pw), "n_cases": n, "direction": direction}
    return Draw(answers, query, _context(HANDLE_TIME_POLICY, todays_date_line(today.isoformat())), params)


_TCU_EXTREMES = {
    "min": ("fewest", "lowest number of", "least"),
    "max": ("most", "highest number of", "largest number of"),
}
_TCU_TEMPLATES = (
    "Which agent made the {extreme} transfers {window}, among agents {cases}?",
    "{Window}, which agent {cases} transferred cases the {extreme_adv}?",
    "Identify the agent with the {extreme} case transfers {window} among those {cases}.",
    "Among agents {cases} {window}, who had the {extreme} transfers?",
)


def _draw_transfer_count(facts: OrgFacts, rng: np.random.Generator) -> Draw | None:
    today = facts.draw_today(rng)
    pw = random_window(rng, today, earliest=facts.first_day)
    if pw is None:
        return None
    n = int(rng.choice([0, 0, 1, 1, 2, 3]))
    direction = pick(rng, ("min", "max"))
    answers = gold.gold_transfer_count(facts.conn, pw.window.start, pw.window.end, n, direction)  # type: ignore[arg-type]
    query = pick(rng, _TCU_TEMPLATES).format(
        extreme=pick(rng, _TCU_EXTREMES[direction]),
        extreme_adv="least often" if direction == "min" else "most often",
        window=pw.phrase,
        Window=capitalize_first(pw.phrase),
        cases=_cases_phrase(rng, n),
    )
    query += " Return only the Id of the agent."
    params = {"today": today.isoformat(), **_window_params(pw), "n_cases": n, "direction": direction}
    return Draw(answers, query, _context(TRANSFER_POLICY, todays_date_line(today.isoformat())), params)


_TII_TEMPLATES = (
    "What was the most frequently reported issue with the {product} {window}?",
    "Which issue came up most often for the {product} {window}?",
    "{Window}, what problem did customers report most for the {product}?",
    "What is the top issue reported about the {product} {window}?",
)


def _product(facts: OrgFacts, rng: np.random.Generator) -> tuple[str, str]:
    return facts.products[int(rng.integers(len(facts.products)))]


def _draw_top_issue(facts: OrgFacts, rng: np.random.Generator) -> Draw | None:
    today = facts.draw_today(rng)
    pw = random_window(rng, today, earliest=facts.first_day)
    if pw is None:
        return None
    product_id, name = _product(facts, rng)
    answers = gold.gold_top_issue(facts.conn, product_id, pw.window.start, pw.window.end)
    query = pick(rng, _TII_TEMPLATES).format(product=name, window=pw.phrase, Window=capitalize_first(pw.phrase))
    query += f" The product's Id is {product_id}. Return only the Id of the issue reported most."
    params = {"today": today.isoformat(), **_window_params(pw), "product_id": product_id}
    return Draw(answers, query, todays_date_line(today.isoformat()), params)


_MTA_TEMPLATES = (
    "Was there a month {window} when we got clearly more cases about the {product} than in the other months?",
    "{Window}, in which month did cases about the {product} peak above every other month?",
    "Looking at cases for the {product} {window}, which month had noticeably more than the rest?",
    "Is there one month {window} where the {product} drew significantly more cases than other months?",
)


def _draw_monthly_trend(facts: OrgFacts, rng: np.random.Generator) -> Draw | None:
    today = facts.draw_today(rng, min_history_days=180)
    pw = random_window(rng, today, earliest=facts.first_day, min_months=3, relative_share=0.75)
    if pw is None:
        return None
    product_id, name = _product(facts, rng)
    answers = gold.gold_monthly_trend(facts.conn, product_id, pw.window.start, pw.window.end)
    if not answers:
        return None  # the original has no unanswerable trend questions
    query = pick(rng, _MTA_TEMPLATES).format(product=name, window=pw.phrase, Window=capitalize_first(pw.phrase))
    query += f" The product's Id is {product_id}. Return only the name of the month."
    params = {"today": today.isoformat(), **_window_params(pw), "product_id": product_id}
    return Draw(answers, query, todays_date_line(today.isoformat()), params)


_BRI_TEMPLATES = (
    "Which state closed its cases the fastest on average {window}?",
    "{Window}, in which state were cases resolved most quickly?",
    "Which state had the shortest average time to close a case {window}?",
    "Where did cases close quickest {window}: which state?",
)


def _draw_best_region(facts: OrgFacts, rng: np.random.Generator) -> Draw | None:
    today = facts.draw_today(rng)
    pw = random_window(rng, today, earliest=facts.first_day, min_months=1)
    if pw is None:
        return None
    answers = gold.gold_best_region(facts.conn, pw.window.start, pw.window.end)
    if not answers:
        return None
    query = pick(rng, _BRI_TEMPLATES).format(window=pw.phrase, Window=capitalize_first(pw.phrase))
    query += " Return only the two-letter code of the state (for example, NY)."
    params = {"today": today.isoformat(), **_window_params(pw)}
    return Draw(answers, query, todays_date_line(today.isoformat()), params)


DrawFunction = Callable[[OrgFacts, np.random.Generator], "Draw | None"]

#: The drawing function of each task, by task name.
DRAWERS: dict[str, DrawFunction] = {
    "handle_time": _draw_handle_time,
    "transfer_count": _draw_transfer_count,
    "top_issue_identification": _draw_top_issue,
    "monthly_trend_analysis": _draw_monthly_trend,
    "best_region_identification": _draw_best_region,
}


def instance_key(task: str, params: dict[str, Any]) -> str:
    """A key that identifies an instance by its task and hidden parameters (wording aside)."""
    core = {k: v for k, v in params.items() if k != "window"}
    return task + ":" + json.dumps(core, sort_keys=True, default=str)


def _org_path(org: Any) -> Path:
    if isinstance(org, str | os.PathLike):
        path = Path(org)
    else:
        path = getattr(org, "path", None)  # a LocalOrg
        if path is None:
            raise TaskGenerationError(
                f"task generation reads the org's tables directly and needs a LocalOrg or a database path, "
                f"not a {type(org).__name__}"
            )
        path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no org database at {str(path)!r}")
    return path


def read_org_facts(conn: sqlite3.Connection, latent: dict[str, Any] | None = None) -> OrgFacts:
    """Read the date span and the products with cases from an org database."""
    first, last = conn.execute('SELECT MIN("CreatedDate"), MAX("CreatedDate") FROM "Case"').fetchone()
    if first is None:
        raise TaskGenerationError("the org has no cases, so no task can be generated from it")
    products = conn.execute(
        'SELECT DISTINCT p."Id", p."Name" FROM "Case" c JOIN "OrderItem" oi ON oi."Id" = c."OrderItemId__c" '
        'JOIN "Product2" p ON p."Id" = oi."Product2Id" ORDER BY p."Id"'
    ).fetchall()
    return OrgFacts(
        conn=conn,
        first_day=gold.parse_timestamp(first).date(),
        last_day=gold.parse_timestamp(last).date(),
        products=[(pid, name) for pid, name in products],
        latent=latent or {},
    )


def _task_quota(spec: TaskSpec, per_task: int, null_share: float) -> tuple[int, int]:
    nulls = round(per_task * null_share) if spec.can_be_unanswerable else 0
    return per_task - nulls, nulls


def generate_tasks(
    org: Any,
    *,
    seed: int = 0,
    per_task: int = 130,
    tasks: Iterable[str] | None = None,
    exclude: Collection[str] = (),
    null_share: float = 0.3,
    max_draws_per_instance: int = 300,
) -> list[TaskInstance]:
    """Generate task instances with verified gold answers.

    Args:
        org: A :class:`~crmarena_gym.org.LocalOrg` or the path of an org database.
        seed: Fixes every choice; the same org and seed give the same instances.
        per_task: Instances per task.
        tasks: Task names or abbreviations to generate (default: every task with a generator).
        exclude: Instance keys (see :func:`instance_key`) never to emit, for example those of the
            test set when drawing training instances.
        null_share: The share of unanswerable instances for the tasks that have them.
        max_draws_per_instance: Give up (with :class:`TaskGenerationError`) after this many draws
            per requested instance.

    Returns:
        The instances, task by task, numbered from 0 in blocks of ``per_task``.
    """
    if per_task < 1:
        raise ValueError(f"per_task must be at least 1, got {per_task!r}")
    if not 0.0 <= null_share < 1.0:
        raise ValueError(f"null_share must be in [0, 1), got {null_share!r}")
    wanted = [get_task_spec(t) for t in tasks] if tasks is not None else [s for s in TASK_SPECS if s.name in DRAWERS]
    missing = [s.abbrev for s in wanted if s.name not in DRAWERS]
    if missing:
        raise TaskGenerationError(f"no generator yet for task(s) {', '.join(missing)}")
    path = _org_path(org)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        latent = _read_latent(path)
        facts = read_org_facts(conn, latent)
        instances: list[TaskInstance] = []
        for spec in wanted:
            task_index = [s.name for s in TASK_SPECS].index(spec.name)
            rng = np.random.default_rng([seed, task_index])
            draws = _draw_task(spec, facts, rng, per_task, null_share, set(exclude), max_draws_per_instance)
            base = task_index * per_task
            for i, d in enumerate(draws):
                instances.append(
                    TaskInstance(
                        idx=base + i,
                        task=spec.name,
                        query=d.query,
                        answer=d.answers[0] if d.answers else None,
                        metadata={"required": d.required, "optional": DOMAIN_DETAILS},
                        params=d.params,
                    )
                )
        return instances
    finally:
        conn.close()


def _read_latent(path: Path) -> dict[str, Any]:
    from crmarena_gym.datagen import read_latent  # the generator's own reader

    try:
        return read_latent(path)
    except Exception:  # an org in the original dump's layout has no latent variables
        return {}


def _draw_task(
    spec: TaskSpec,
    facts: OrgFacts,
    rng: np.random.Generator,
    per_task: int,
    null_share: float,
    exclude: set[str],
    max_draws_per_instance: int,
) -> list[Draw]:
    want_answered, want_null = _task_quota(spec, per_task, null_share)
    answered: list[Draw] = []
    nulls: list[Draw] = []
    seen = set(exclude)
    drawer = DRAWERS[spec.name]
    for _ in range(per_task * max_draws_per_instance):
        if len(answered) >= want_answered and len(nulls) >= want_null:
            break
        d = drawer(facts, rng)
        if d is None or len(d.answers) > 1:
            continue  # no fit, or a tie: ties are never emitted
        bucket, quota = (answered, want_answered) if d.answers else (nulls, want_null)
        if len(bucket) >= quota:
            continue
        key = instance_key(spec.name, d.params)
        if key in seen:
            continue
        seen.add(key)
        bucket.append(d)
    if len(answered) < want_answered or len(nulls) < want_null:
        raise TaskGenerationError(
            f"could not draw {want_answered} answerable and {want_null} unanswerable {spec.abbrev} instances "
            f"from this org (got {len(answered)} and {len(nulls)}); the org may be too small"
        )
    # Interleave deterministically so that unanswerable instances are spread through the block.
    order = rng.permutation(len(answered) + len(nulls))
    pool = answered + nulls
    return [pool[i] for i in order]
