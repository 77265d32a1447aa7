"""Generating task instances with verified gold answers against an org database.

Each task has a drawing function that picks hidden parameters (a date, a window, a product ...),
computes the gold with :mod:`crmarena_gym.tasks._gold` and phrases the query. A draw whose gold is a
tie is thrown away; so is a draw whose kind (answerable or not) has filled its quota, which keeps the
unanswerable share at ``null_share`` for the tasks that can be unanswerable.

The four tasks that are not aggregates draw as follows:

- NCR: an issue and a product; the new case's subject and description come from the generator's case
  text templates (:func:`crmarena_gym.datagen.case_text`), so that they read like the org's cases. A draw is
  kept only if an agent can route it from what it reads: the text reads as that issue and product alone
  (:func:`crmarena_gym.datagen.read_case_text`), no other issue bears the issue's name, and where the issue's
  rule leaves agents tied, a search for the product's name finds no other product that was ordered.
- NED: a purchase (contact, day, product) of an activated order; the customer describes the product
  by its type and a detail or two its record supports, and asks relative to today. About a third of
  the draws misremember the day or describe another product, which makes them unanswerable. A draw
  is kept only if at most one product bought that day fits the description in either reading (same
  type, or a name holding every word of the type), and that product is the one described; and only if an agent
  can find it from what it reads: the question reads back as the day (:mod:`crmarena_gym.tasks._purchase`), and a
  search of the products for what it describes leaves the same purchases of that day.
- PVI: a case with a chat or emails, from the generator's latent violations (gold: the violated
  article, kept only when the offending words are in the conversation) or its clean cases (gold None). A draw is
  kept only if it can be judged from what an agent reads: a violation's conversation has a reply that breaks a
  rule the violated article's text states (:func:`crmarena_gym.datagen.read_breaches`, ``states_rule``), a clean
  case's has none.
- KQA: a fact (question, short answer, article) the generator stored; its answer is in the article, and a draw is
  kept only if the article's text gives that answer alone where the fact's sentence puts it
  (:func:`crmarena_gym.datagen.read_fact_answers`).

PVI and KQA need the latent variables of an org written by :mod:`crmarena_gym.datagen`; NED uses the
products' latent attributes when present and otherwise describes products from their names.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np

from crmarena_gym.datagen import (
    ISSUES,
    CaseReading,
    case_text,
    read_breaches,
    read_case_text,
    read_fact_answers,
    states_rule,
)
from crmarena_gym.schema import get_object
from crmarena_gym.tasks import _gold as gold
from crmarena_gym.tasks._context import (
    DOMAIN_DETAILS,
    HANDLE_TIME_POLICY,
    KNOWLEDGE_GUIDANCE,
    ROUTING_POLICY,
    TRANSFER_POLICY,
    todays_date_line,
)
from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._new_case import new_case_lines
from crmarena_gym.tasks._phrasing import PhrasedWindow, capitalize_first, pick, random_window, say_number
from crmarena_gym.tasks._purchase import (
    ASK_FOR_ID,
    AUDIENCE_WORDS,
    PURCHASE_TEMPLATES,
    describe_product,
    described_product,
    read_purchase_day,
    read_purchase_question,
    say_purchase_day,
)
from crmarena_gym.tasks._spec import TASK_SPECS, TaskSpec, get_task_spec

#: Bump whenever the instances generated for some org and seed change (it keys the task-set cache). Version 4
#: keeps only NCR draws an agent can route from what it reads (see the module docs); on the orgs measured, it
#: changed instances only where the routing policy's first rule ties (small orgs, scale 0.2).
TASK_GENERATOR_VERSION = 4
T = TypeVar("T")

Distribution = Literal["discriminating", "legacy"]
#: How instances are chosen among the draws. ``"discriminating"`` (the default) keeps only draws whose
#: deciding step compares real competitors (:func:`competition_shortfall`); ``"legacy"`` is the
#: distribution of task generator version 2, whose instances often had a single candidate answer, kept
#: so that figures made with it can be reproduced.
DISTRIBUTIONS: tuple[Distribution, ...] = ("discriminating", "legacy")
DEFAULT_DISTRIBUTION: Distribution = "discriminating"


class TaskGenerationError(RuntimeError):
    """The org cannot yield the requested instances (too small, or missing what a task needs)."""


@dataclass(frozen=True)
class Competition:
    """What an instance's deciding step compares: the candidates an agent must tell apart.

    Attributes:
        competitors: The candidates compared at the deciding step: the months with cases (MTA), the
            issues reported (TII), the agents with a value to compare (HTU: an average handle time;
            TCU: transfers), the states with closed cases (BRI), the agents with closed cases on the
            issue (NCR), the contact's purchases that the day or the description points to (NED).
            None where the family compares no computed values (PVI, KQA).
        direction_matters: HTU and TCU: whether asking for the other extreme changes the answer.
        same_day: NED: the distinct products the contact bought on the day the question names.
        look_alikes: NED: the contact's purchases (day and product, any day) that the description fits.
    """

    competitors: int | None
    direction_matters: bool | None = None
    same_day: int | None = None
    look_alikes: int | None = None


@dataclass
class Draw:
    """One drawn instance before numbering.

    Attributes:
        answers: The tied gold answers; empty for an unanswerable question.
        query: The question.
        required: The task context shown with it.
        params: The hidden parameters.
        competition: What the deciding step compares (None for families that compare nothing).
    """

    answers: list[str]
    query: str
    required: str
    params: dict[str, Any]
    competition: Competition | None = None


@dataclass
class OrgFacts:
    """What the drawing functions need to know about the org, read once."""

    conn: sqlite3.Connection
    first_day: dt.date
    last_day: dt.date
    products: list[tuple[str, str]]  # (Id, Name) of products that have cases
    latent: dict[str, Any] = field(default_factory=dict)
    # Drawing for the "discriminating" distribution: TII and MTA pick a product that can compete.
    discriminating: bool = False
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def draw_today(self, rng: np.random.Generator, *, min_history_days: int = 60) -> dt.date:
        """A date for an instance: after some history has built up, up to a month past the last case."""
        low = self.first_day + dt.timedelta(days=min_history_days)
        span = (self.last_day - low).days + 30
        return low + dt.timedelta(days=int(rng.integers(max(span, 1))))

    @property
    def after_last_day(self) -> dt.date:
        """The ``today`` of tasks without a time window: the day after the last case."""
        return self.last_day + dt.timedelta(days=1)

    def _once(self, key: str, build: Callable[[], T]) -> T:
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]  # type: ignore[no-any-return]

    def issues(self) -> list[tuple[str, int]]:
        """``(Issue__c Id, index into datagen's ISSUES)`` of the issues whose name the text templates know and no
        other issue bears (a case's text names its issue by what it says: two issues of one name are one to a
        reader)."""

        def build() -> list[tuple[str, int]]:
            names = [name for name, _ in ISSUES]
            rows = self.conn.execute('SELECT "Id", "Name" FROM "Issue__c" ORDER BY "Id"').fetchall()
            borne = Counter(name for _, name in rows)
            return [(issue_id, names.index(name)) for issue_id, name in rows if name in names and borne[name] == 1]

        return self._once("issues", build)

    def product_names(self) -> dict[str, str]:
        """Every product's name by Id."""
        return self._once(
            "product_names", lambda: dict(self.conn.execute('SELECT "Id", "Name" FROM "Product2" ORDER BY "Id"'))
        )

    def product_search_words(self) -> dict[str, frozenset[str]]:
        """Every product's words over the fields a search of products looks at (all of them: Salesforce
        ignores the IN clause for products), by Id."""

        def build() -> dict[str, frozenset[str]]:
            obj = get_object("Product2")
            assert obj is not None
            columns = [f.column_name for f in obj.fields if f.searchable or f.name_field]
            select = ", ".join(f'"{c}"' for c in columns)
            rows = self.conn.execute(f'SELECT "Id", {select} FROM "Product2" ORDER BY "Id"')
            return {row[0]: name_words(" ".join(v for v in row[1:] if v)) for row in rows}

        return self._once("product_search_words", build)

    def ordered_products_found(self, term: str) -> list[str]:
        """The products with order lines that a search of products for ``term`` finds (every word of it in the
        fields :meth:`product_search_words` holds), sorted."""
        ordered = self._once(
            "ordered_products",
            lambda: {pid for (pid,) in self.conn.execute('SELECT DISTINCT "Product2Id" FROM "OrderItem"')},
        )
        words = name_words(term)
        return sorted(pid for pid, held in self.product_search_words().items() if words <= held and pid in ordered)

    def product_profiles(self) -> dict[str, ProductProfile]:
        """What a customer could say about each product (from the latent attributes, else from the name)."""

        def build() -> dict[str, ProductProfile]:
            attributes = self.latent.get("product_attributes") or {}
            return {
                pid: ProductProfile.of(pid, name, attributes.get(pid)) for pid, name in self.product_names().items()
            }

        return self._once("product_profiles", build)

    def products_by_type(self) -> dict[str, set[str]]:
        """Product ids per product type (lower case)."""

        def build() -> dict[str, set[str]]:
            out: dict[str, set[str]] = defaultdict(set)
            for profile in self.product_profiles().values():
                out[profile.type.lower()].add(profile.product_id)
            return dict(out)

        return self._once("products_by_type", build)

    def purchase_lines(self) -> list[tuple[str, str, str]]:
        """``(contact Id, EffectiveDate, Product2 Id)`` of every product bought in an activated order."""
        sql = (
            'SELECT DISTINCT ct."Id", o."EffectiveDate", oi."Product2Id" FROM "OrderItem" oi '
            'JOIN "Order" o ON o."Id" = oi."OrderId" JOIN "Contact" ct ON ct."AccountId" = o."AccountId" '
            'WHERE o."Status" = \'Activated\' AND o."EffectiveDate" IS NOT NULL AND oi."Product2Id" IS NOT NULL '
            "ORDER BY 1, 2, 3"
        )
        return self._once("purchase_lines", lambda: [tuple(r) for r in self.conn.execute(sql)])  # type: ignore[misc]

    def purchases_of(self, contact_id: str) -> list[tuple[str, str]]:
        """``(day, Product2 Id)`` of every distinct purchase of a contact (see :meth:`purchase_lines`)."""

        def build() -> dict[str, list[tuple[str, str]]]:
            out: dict[str, set[tuple[str, str]]] = defaultdict(set)
            for contact, effective, product in self.purchase_lines():
                out[contact].add((effective[:10], product))
            return {contact: sorted(lines) for contact, lines in out.items()}

        return self._once("purchases_by_contact", build).get(contact_id, [])

    def article_titles(self) -> dict[str, str]:
        """Every knowledge article's title by Id."""
        return self._once(
            "article_titles",
            lambda: dict(self.conn.execute('SELECT "Id", "Title" FROM "Knowledge__kav" ORDER BY "Id"')),
        )

    def require_latent(self, name: str, task: str) -> Any:
        """A latent variable a task cannot be generated without."""
        if name not in self.latent:
            raise TaskGenerationError(
                f"task {task} needs the latent variable {name!r} of an org made by crmarena_gym.datagen; "
                "this org has none (generate the other tasks with tasks=[...])"
            )
        return self.latent[name]


_WORD = re.compile(r"[^\W_]+")


def name_words(text: str) -> frozenset[str]:
    """The lower-case words of a text, split at every character that is not a letter or digit (as SOSL does).

    Example:
        >>> sorted(name_words("Women's High-Top Sneakers"))
        ['high', 's', 'sneakers', 'top', 'women']
    """
    return frozenset(_WORD.findall(text.lower()))


@dataclass(frozen=True)
class ProductProfile:
    """What a customer could say about a product without knowing its exact name.

    Attributes:
        product_id: The Product2 Id.
        name: The product's name.
        type: The kind of product ("Trail Running Shoes"); every word of it is in the name.
        audience: "men's", "women's", "kids'", or None when the product is for anyone.
        details: Optional descriptive words the product's record supports (colour, adjective, use ...),
            by kind.
    """

    product_id: str
    name: str
    type: str
    audience: str | None
    details: dict[str, str]

    @classmethod
    def of(cls, product_id: str, name: str, attributes: dict[str, Any] | None) -> ProductProfile:
        """The profile from the generator's product attributes, or from the name alone (the last two words
        are taken as the type) when the org has no latent variables."""
        words = name.split()
        if attributes and attributes.get("type") and name_words(attributes["type"]) <= name_words(name):
            details = {
                k: str(attributes[k]).lower()
                for k in ("colour", "material", "use")
                if isinstance(attributes.get(k), str) and attributes[k]
            }
            adjective = attributes.get("adjective")
            if isinstance(adjective, str) and adjective and name_words(adjective) <= name_words(name):
                details["adjective"] = adjective.lower()
            return cls(
                product_id, name, attributes["type"], AUDIENCE_WORDS.get(attributes.get("audience") or ""), details
            )
        audience = next((label for label in AUDIENCE_WORDS.values() if name.lower().startswith(label)), None)
        kind = " ".join(words[-2:]) if len(words) >= 2 else name
        if audience is not None and name_words(kind) & name_words(audience):
            kind = words[-1]
        return cls(product_id, name, kind, audience, {})


def _window_params(pw: PhrasedWindow) -> dict[str, Any]:
    return {
        "start": gold.format_timestamp(pw.window.start),
        "end": gold.format_timestamp(pw.window.end),
        "window": {"kind": pw.kind, **pw.spec},
    }


def _extreme(values: dict[str, Any], direction: gold.Direction) -> tuple[list[str], Competition]:
    """The tied keys at the asked extreme of ``values``, and what choosing them compares."""
    answers = gold.best_keys(values, direction)
    other = gold.best_keys(values, "max" if direction == "min" else "min")
    return answers, Competition(len(values), direction_matters=other != answers)


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
    times = gold.average_handle_times(facts.conn, pw.window.start, pw.window.end, n)
    answers, competition = _extreme(times, direction)  # type: ignore[arg-type]
    query = pick(rng, _HTU_TEMPLATES).format(
        extreme=pick(rng, _HTU_EXTREMES[direction]),
        window=pw.phrase,
        Window=capitalize_first(pw.phrase),
        cases=_cases_phrase(rng, n),
    )
    query += " Return only the Id of the agent."
    params = {"today": today.isoformat(), **_window_params(pw), "n_cases": n, "direction": direction}
    required = _context(HANDLE_TIME_POLICY, todays_date_line(today.isoformat()))
    return Draw(answers, query, required, params, competition)


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
    transfers = gold.transfer_counts(facts.conn, pw.window.start, pw.window.end, n)
    answers, competition = _extreme(transfers, direction)  # type: ignore[arg-type]
    query = pick(rng, _TCU_TEMPLATES).format(
        extreme=pick(rng, _TCU_EXTREMES[direction]),
        extreme_adv="least often" if direction == "min" else "most often",
        window=pw.phrase,
        Window=capitalize_first(pw.phrase),
        cases=_cases_phrase(rng, n),
    )
    query += " Return only the Id of the agent."
    params = {"today": today.isoformat(), **_window_params(pw), "n_cases": n, "direction": direction}
    required = _context(TRANSFER_POLICY, todays_date_line(today.isoformat()))
    return Draw(answers, query, required, params, competition)


_TII_TEMPLATES = (
    "What was the most frequently reported issue with the {product} {window}?",
    "Which issue came up most often for the {product} {window}?",
    "{Window}, what problem did customers report most for the {product}?",
    "What is the top issue reported about the {product} {window}?",
)


def _product(facts: OrgFacts, rng: np.random.Generator) -> tuple[str, str]:
    return facts.products[int(rng.integers(len(facts.products)))]


def _compared_product(
    facts: OrgFacts, rng: np.random.Generator, by_product: dict[str, Any], *, allow_none: bool
) -> tuple[str, str] | None:
    """A product for a discriminating draw, given every product's counts in the window: one whose counts
    have at least two candidates and a single largest (drawing products blindly, most windows of a
    product hold one case or none); with ``allow_none``, half the time one with no count (gold None)."""
    if allow_none and rng.random() < 0.5:
        pool = [(pid, name) for pid, name in facts.products if pid not in by_product]
    else:
        pool = [
            (pid, name)
            for pid, name in facts.products
            if len(counts := by_product.get(pid, {})) >= 2 and len(gold.best_keys(counts, "max")) == 1
        ]
    return pool[int(rng.integers(len(pool)))] if pool else None


def _draw_top_issue(facts: OrgFacts, rng: np.random.Generator) -> Draw | None:
    today = facts.draw_today(rng)
    pw = random_window(rng, today, earliest=facts.first_day)
    if pw is None:
        return None
    if facts.discriminating:
        by_product = gold.issue_counts_by_product(facts.conn, pw.window.start, pw.window.end)
        chosen = _compared_product(facts, rng, by_product, allow_none=True)
        if chosen is None:
            return None
        product_id, name = chosen
    else:
        product_id, name = _product(facts, rng)
    counts = gold.issue_counts(facts.conn, product_id, pw.window.start, pw.window.end)
    answers = gold.best_keys(counts, "max")
    query = pick(rng, _TII_TEMPLATES).format(product=name, window=pw.phrase, Window=capitalize_first(pw.phrase))
    query += f" The product's Id is {product_id}. Return only the Id of the issue reported most."
    params = {"today": today.isoformat(), **_window_params(pw), "product_id": product_id}
    return Draw(answers, query, todays_date_line(today.isoformat()), params, Competition(len(counts)))


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
    if facts.discriminating:
        by_product = gold.month_counts_by_product(facts.conn, pw.window.start, pw.window.end)
        chosen = _compared_product(facts, rng, by_product, allow_none=False)
        if chosen is None:
            return None
        product_id, name = chosen
    else:
        product_id, name = _product(facts, rng)
    months = gold.month_counts(facts.conn, product_id, pw.window.start, pw.window.end)
    answers = gold.best_keys(dict(months), "max")
    if not answers:
        return None  # the original has no unanswerable trend questions
    query = pick(rng, _MTA_TEMPLATES).format(product=name, window=pw.phrase, Window=capitalize_first(pw.phrase))
    query += f" The product's Id is {product_id}. Return only the name of the month."
    params = {"today": today.isoformat(), **_window_params(pw), "product_id": product_id}
    return Draw(answers, query, todays_date_line(today.isoformat()), params, Competition(len(months)))


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
    times = gold.region_closure_times(facts.conn, pw.window.start, pw.window.end)
    answers = gold.best_keys(times, "min")
    if not answers:
        return None
    query = pick(rng, _BRI_TEMPLATES).format(window=pw.phrase, Window=capitalize_first(pw.phrase))
    query += " Return only the two-letter code of the state (for example, NY)."
    params = {"today": today.isoformat(), **_window_params(pw)}
    return Draw(answers, query, todays_date_line(today.isoformat()), params, Competition(len(times)))


class _TextRand:
    """The draws datagen's text functions make (``choice``, ``chance``), fed by a numpy generator."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def random(self) -> float:
        return float(self._rng.random())

    def integers(self, low: int, high: int) -> int:
        return int(self._rng.integers(low, high))

    def choice(self, items: Sequence[T]) -> T:
        return items[int(self._rng.integers(len(items)))]

    def chance(self, p: float) -> bool:
        return bool(self._rng.random() < p)


_NCR_TEMPLATES = (
    "Following the case routing policy, which agent should this new case be assigned to?",
    "A new case just came in. Who is the best agent to take it, according to our routing policy?",
    "Apply the case routing policy to the case below and tell me which agent should handle it.",
    "Which agent does the routing policy pick for the following new case?",
    "Route this incoming case: using the case routing policy, find the most suitable agent.",
)


def _draw_case_routing(facts: OrgFacts, rng: np.random.Generator) -> Draw | None:
    issues = facts.issues()
    if not issues:
        raise TaskGenerationError("task NCR needs issues named like the ten CRMArena issues; this org has none")
    issue_id, issue_index = issues[int(rng.integers(len(issues)))]
    product_id, name = _product(facts, rng)
    answers = gold.gold_case_routing(facts.conn, issue_id, product_id)
    competition = Competition(len(gold.closed_on_issue(facts.conn, issue_id)))
    subject, description = case_text(_TextRand(rng), issue_index, name)  # type: ignore[arg-type]
    # Routable from what an agent reads: the text reads as this issue and product alone, and where the issue's rule
    # leaves a tie, searching the product's name finds no other product that customers ordered.
    if read_case_text(subject, description) != (CaseReading(ISSUES[issue_index][0], name),):
        return None
    if len(gold.best_keys(gold.closed_on_issue(facts.conn, issue_id), "max")) > 1:
        if facts.ordered_products_found(name) != [product_id]:
            return None
    query = (
        pick(rng, _NCR_TEMPLATES)
        + " Return only the Id of the agent."
        + f"\n## New case\n{new_case_lines(subject, description)}"
    )
    params = {
        "today": facts.after_last_day.isoformat(),
        "issue_id": issue_id,
        "product_id": product_id,
        "case_subject": subject,
        "case_description": description,
    }
    return Draw(answers, query, ROUTING_POLICY, params, competition)


# Days between the purchase and today (said by :func:`say_purchase_day`); weighted toward the recent past.
_NED_OFFSETS = (1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 10, 12, 14, 14, 21, 28)


def loose_matches(facts: OrgFacts, profile: ProductProfile) -> set[str]:
    """Every product a description of ``profile`` could be read as: the same type, or a product whose
    searched fields (name, description, code: what ``search_products`` finds) hold every word of the type
    (the search term)."""
    words = name_words(profile.type)
    found = {pid for pid, held in facts.product_search_words().items() if words <= held}
    return found | facts.products_by_type().get(profile.type.lower(), set())


def _purchases_fitting(
    facts: OrgFacts, contact_id: str, day: dt.date, profile: ProductProfile
) -> tuple[list[str], Competition]:
    """The products the contact bought on ``day`` that a description of ``profile`` fits (sorted), and the
    purchases an agent must tell apart: those of that day and those the description fits on any day."""
    candidates = loose_matches(facts, profile)
    bought_that_day = gold.purchased_products(facts.conn, contact_id, day)
    hits = sorted(bought_that_day & candidates)
    look_alikes = sum(product in candidates for _, product in facts.purchases_of(contact_id))
    # A hit is both bought that day and a look-alike: counted once among the competitors.
    competitors = len(bought_that_day) + look_alikes - len(hits)
    return hits, Competition(competitors, same_day=len(bought_that_day), look_alikes=look_alikes)


def _draw_named_entity(facts: OrgFacts, rng: np.random.Generator) -> Draw | None:
    lines = facts.purchase_lines()
    if not lines:
        raise TaskGenerationError("task NED needs purchases (activated orders); this org has none")
    contact_id, bought_on, bought = lines[int(rng.integers(len(lines)))]
    day = dt.date.fromisoformat(bought_on[:10])
    described = bought
    mode = rng.random()
    if mode < 0.2:  # the customer misremembers the day
        day += dt.timedelta(days=int(rng.choice([-1, 1])) * int(rng.integers(1, 7)))
    elif mode < 0.35:  # or describes something bought elsewhere, another day or never
        pool = list(facts.product_names())
        described = pool[int(rng.integers(len(pool)))]
    profile = facts.product_profiles()[described]
    hits, competition = _purchases_fitting(facts, contact_id, day, profile)
    if hits and hits != [described]:
        return None  # another product fits the words; the description would not single it out
    offset = int(rng.choice(_NED_OFFSETS))
    today = day + dt.timedelta(days=offset)
    description = describe_product(rng, profile.type, profile.audience, profile.details)
    query = pick(rng, PURCHASE_TEMPLATES).format(desc=description, when=say_purchase_day(rng, offset, day))
    query += ASK_FOR_ID
    # Answerable from what an agent reads: the question reads back as this day, and a search of the products for
    # what it describes leaves the same purchases of that day as the description's candidates do.
    read = read_purchase_question(query)
    if read is None or read_purchase_day(read.when, today) != day:
        return None
    words = name_words(described_product(read.description))
    found = {pid for pid, held in facts.product_search_words().items() if words and words <= held}
    if sorted(gold.purchased_products(facts.conn, contact_id, day) & found) != hits:
        return None
    required = _context(
        f"- Contact Id of the customer you are assisting: {contact_id}", todays_date_line(today.isoformat())
    )
    params = {
        "today": today.isoformat(),
        "contact_id": contact_id,
        "purchase_date": day.isoformat(),
        "product_id": hits[0] if hits else None,
        "described_product_id": described,
        "description": description,
        "search_term": profile.type,
    }
    return Draw(hits, query, required, params, competition)


_PVI_TEMPLATES = (
    "Did the agent break any of our policies in this case? If so, which knowledge article did they go against?",
    "Review the agent's chat and emails on this case. Was a policy violated, and if so, which knowledge article "
    "states it?",
    "Check whether the agent handling this case acted against company policy. Which knowledge article was "
    "violated, if any?",
    "Has the agent on this case violated a policy? If yes, name the knowledge article that was broken.",
    "Look at how the agent handled this case: did they breach a policy written in a knowledge article, and which one?",
)


def _case_texts(conn: sqlite3.Connection, case_id: str) -> list[str]:
    rows = conn.execute('SELECT "Body" FROM "LiveChatTranscript" WHERE "CaseId" = ?', (case_id,)).fetchall()
    rows += conn.execute('SELECT "TextBody" FROM "EmailMessage" WHERE "ParentId" = ?', (case_id,)).fetchall()
    return [text for (text,) in rows if text]


def _draw_policy_violation(facts: OrgFacts, rng: np.random.Generator) -> Draw | None:
    violations: dict[str, dict[str, Any]] = facts.require_latent("violations", "PVI")
    clean: list[str] = facts.require_latent("clean_cases", "PVI")
    policies: dict[str, str] = facts.require_latent("policy_articles", "PVI")
    pool = sorted(violations) if rng.random() < 0.5 else clean
    if not pool:
        return None
    case_id = pool[int(rng.integers(len(pool)))]
    row = facts.conn.execute('SELECT "IssueId__c" FROM "Case" WHERE "Id" = ?', (case_id,)).fetchone()
    texts = _case_texts(facts.conn, case_id)
    if row is None or not texts:
        return None  # the case (or its conversation) is not in the org: nothing to ask about
    violation = violations.get(case_id)
    if violation is not None:
        article_id = violation["article_id"]
        if not any(violation["evidence"] in text for text in texts):
            return None  # the offending words must be readable in the chat or emails
        answers = [article_id]
    else:
        article_id = policies.get(row[0])
        answers = []
    title = facts.article_titles().get(article_id or "")
    if title is None:
        return None
    # Judged from what an agent reads: a reply of the conversation breaks a rule of the violated article's text, and
    # none breaks a rule where no policy was violated.
    breaches = {b for text in texts for b in read_breaches(text)}
    if violation is None and breaches:
        return None
    if violation is not None:
        content = facts.conn.execute('SELECT "FAQ_Answer__c" FROM "Knowledge__kav" WHERE "Id" = ?', (article_id,))
        article = (content.fetchone() or ("",))[0] or ""
        if not any(states_rule(article, b) for b in breaches):
            return None
    query = pick(rng, _PVI_TEMPLATES) + " Return only the Id of the knowledge article, or None if no policy was broken."
    params = {
        "today": facts.after_last_day.isoformat(),
        "case_id": case_id,
        "article_id": answers[0] if answers else None,
        "evidence": violation["evidence"] if violation else None,
        "search_term": title,
    }
    return Draw(answers, query, f"- Id of the case to review: {case_id}", params)


_KQA_TEMPLATES = (
    "{question}",
    "{question}",
    "A customer asks: {question}",
    "Quick question from a shopper: {question}",
    "{question} Please keep the answer short.",
    "Can you check the knowledge base? {question}",
)


def _draw_knowledge(facts: OrgFacts, rng: np.random.Generator) -> Draw | None:
    kqa: list[dict[str, str]] = facts.require_latent("kqa_facts", "KQA")
    if not kqa:
        return None
    fact = kqa[int(rng.integers(len(kqa)))]
    title = facts.article_titles().get(fact["article_id"])
    if title is None:
        return None
    query = pick(rng, _KQA_TEMPLATES).format(question=fact["question"])
    # Answerable from what an agent reads: the article's text gives this answer, and only this one, to the question.
    content = facts.conn.execute('SELECT "FAQ_Answer__c" FROM "Knowledge__kav" WHERE "Id" = ?', (fact["article_id"],))
    if read_fact_answers(query, (content.fetchone() or ("",))[0] or "") != (fact["answer"],):
        return None
    params = {
        "today": facts.after_last_day.isoformat(),
        "article_id": fact["article_id"],
        "question": fact["question"],
        "search_term": title,
    }
    return Draw([fact["answer"]], query, KNOWLEDGE_GUIDANCE, params)


DrawFunction = Callable[[OrgFacts, np.random.Generator], "Draw | None"]

#: The drawing function of each task, by task name.
DRAWERS: dict[str, DrawFunction] = {
    "handle_time": _draw_handle_time,
    "transfer_count": _draw_transfer_count,
    "top_issue_identification": _draw_top_issue,
    "monthly_trend_analysis": _draw_monthly_trend,
    "best_region_identification": _draw_best_region,
    "case_routing": _draw_case_routing,
    "named_entity_disambiguation": _draw_named_entity,
    "policy_violation_identification": _draw_policy_violation,
    "knowledge_qa": _draw_knowledge,
}


def measure_competition(facts: OrgFacts, task: str, params: dict[str, Any]) -> tuple[list[str], Competition] | None:
    """What the deciding step of an instance compares, recomputed on the org from its hidden parameters,
    with the answers the org gives there (the tied best; empty for None), which must be the instance's
    gold if the instance was made for this org.

    The same computation as the drawers', for any instance with a generated instance's ``params`` (the
    original's task file has none).

    Args:
        facts: The org's facts (:func:`read_org_facts`).
        task: The task's name or abbreviation.
        params: The instance's hidden parameters.

    Returns:
        The answers and the competition, or None for a family that compares nothing (PVI, KQA).

    Raises:
        KeyError: ``params`` lacks a parameter the family's competition is counted from.
        ValueError: A parameter cannot be read (a date that is not one).
    """
    name = get_task_spec(task).name
    conn = facts.conn
    if name in _WINDOWED:
        start, end = gold.parse_timestamp(params["start"]), gold.parse_timestamp(params["end"])
    values: dict[str, Any]
    if name == "handle_time":
        return _extreme(gold.average_handle_times(conn, start, end, int(params["n_cases"])), params["direction"])
    if name == "transfer_count":
        return _extreme(gold.transfer_counts(conn, start, end, int(params["n_cases"])), params["direction"])
    if name == "top_issue_identification":
        values = gold.issue_counts(conn, params["product_id"], start, end)
        return gold.best_keys(values, "max"), Competition(len(values))
    if name == "monthly_trend_analysis":
        values = dict(gold.month_counts(conn, params["product_id"], start, end))
        return gold.best_keys(values, "max"), Competition(len(values))
    if name == "best_region_identification":
        values = gold.region_closure_times(conn, start, end)
        return gold.best_keys(values, "min"), Competition(len(values))
    if name == "case_routing":
        answers = gold.gold_case_routing(conn, params["issue_id"], params["product_id"])
        return answers, Competition(len(gold.closed_on_issue(conn, params["issue_id"])))
    if name == "named_entity_disambiguation":
        profile = facts.product_profiles()[params["described_product_id"]]
        day = dt.date.fromisoformat(str(params["purchase_date"]))
        return _purchases_fitting(facts, params["contact_id"], day, profile)
    return None


_WINDOWED = frozenset(
    {
        "handle_time",
        "transfer_count",
        "top_issue_identification",
        "monthly_trend_analysis",
        "best_region_identification",
    }
)


def competition_shortfall(task: str, competition: Competition | None, answerable: bool) -> str | None:
    """Why a draw lacks the competition its family needs to test the skill it names (None: it has it).

    The rules (the ``"discriminating"`` distribution keeps only draws that meet them):

    - MTA: at least two months of the window have cases (the peak is larger than every other month's
      count, as the domain details define "significantly more"; ties are never emitted).
    - TII, HTU, TCU, BRI, NCR: an answerable instance compares at least two candidates; for HTU and
      TCU that makes the asked extreme (fewest or most, shortest or longest) change the answer.
    - NED: an answerable instance needs both cues: the contact bought at least two products on the day
      named, and at least two of the contact's purchases fit the description. An unanswerable one has a
      decoy: a purchase on that day, or one that fits the description on another day.
    - PVI, KQA: no rule (nothing computed is compared).

    Args:
        task: The task's name or abbreviation.
        competition: What the deciding step compares (``Draw.competition``).
        answerable: Whether the draw has a gold answer.

    Example:
        >>> competition_shortfall("TII", Competition(1), answerable=True)
        'only 1 candidate at the deciding step (at least 2 needed)'
        >>> competition_shortfall("TII", Competition(0), answerable=False) is None
        True
    """
    name = get_task_spec(task).name
    if competition is None or competition.competitors is None:
        return None
    if name == "named_entity_disambiguation":
        same_day, look_alikes = competition.same_day or 0, competition.look_alikes or 0
        if answerable and (same_day < 2 or look_alikes < 2):
            return (
                f"the contact bought {same_day} product(s) that day and has {look_alikes} purchase(s) fitting "
                "the description (at least 2 of each needed)"
            )
        if not answerable and same_day + look_alikes == 0:
            return "no purchase that day and none fitting the description: nothing to tell apart"
        return None
    if name == "monthly_trend_analysis" or answerable:
        if competition.competitors < 2:
            return f"only {competition.competitors} candidate at the deciding step (at least 2 needed)"
    return None


# The hidden parameters that make a question what it is; wording, today's date where a window already
# pins the period, and search hints are left out, so that a reworded question is still the same one.
_KEY_FIELDS: dict[str, tuple[str, ...]] = {
    "handle_time": ("start", "end", "n_cases", "direction"),
    "transfer_count": ("start", "end", "n_cases", "direction"),
    "top_issue_identification": ("product_id", "start", "end"),
    "monthly_trend_analysis": ("product_id", "start", "end"),
    "best_region_identification": ("start", "end"),
    "case_routing": ("issue_id", "product_id"),
    "named_entity_disambiguation": ("contact_id", "purchase_date", "search_term"),
    "policy_violation_identification": ("case_id",),
    "knowledge_qa": ("article_id", "question"),
}


def instance_key(task: str, params: dict[str, Any]) -> str:
    """A key that identifies an instance by its task and the hidden parameters that define the question.

    Two instances with the same key ask the same question, however worded: a routing case on the same
    issue and product, the same case to review, the same window and threshold. Training sets exclude
    the test set's keys.

    Args:
        task: The task's name or abbreviation.
        params: The instance's hidden parameters.

    Example:
        >>> instance_key("PVI", {"case_id": "500Ws000001i9uKIAQ", "search_term": "Returns"})
        'policy_violation_identification:{"case_id": "500Ws000001i9uKIAQ"}'
    """
    name = get_task_spec(task).name
    fields = _KEY_FIELDS.get(name)
    core = {k: params.get(k) for k in fields} if fields else {k: v for k, v in params.items() if k != "window"}
    return name + ":" + json.dumps(core, sort_keys=True, default=str)


def check_distribution(distribution: str) -> Distribution:
    """``distribution`` if it names one of :data:`DISTRIBUTIONS`; a ValueError quoting it otherwise."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {', '.join(map(repr, DISTRIBUTIONS))}, got {distribution!r}")
    return distribution  # type: ignore[return-value]


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


def _org_kind(path: Path) -> str:
    """The org kind its manifest names (``service`` for a file without our manifest: the original's dump)."""
    from crmarena_gym.datagen import read_manifest

    try:
        return read_manifest(path).kind
    except ValueError:
        return "service"


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
    per_task: int | None = None,
    tasks: Iterable[str] | None = None,
    category: str | Iterable[str] | None = None,
    exclude: Collection[str] = (),
    null_share: float = 0.3,
    max_draws_per_instance: int = 300,
    allow_fewer: bool = False,
    distribution: Distribution = DEFAULT_DISTRIBUTION,
) -> list[TaskInstance]:
    """Generate task instances with verified gold answers.

    On a CRMArena-Pro org (its manifest names kind ``b2b`` or ``b2c``) the instances are Pro's categories, drawn
    by :func:`~crmarena_gym.tasks.pro.generate_pro_tasks` (``null_share`` and ``distribution`` do not apply there:
    each category plants Pro's None rate and no gold takes more than 45% of a category).

    Args:
        org: A :class:`~crmarena_gym.org.LocalOrg` or the path of an org database.
        seed: Fixes every choice; the same org and seed give the same instances.
        per_task: Instances per task (default 130 on the service org, as the original; 100 per Pro category).
        tasks: Task names or abbreviations to generate (default: every task with a generator).
        category: The same as ``tasks`` (one name or several), as Pro calls its tasks categories.
        exclude: Instance keys (see :func:`instance_key`) never to emit, for example those of the
            test set when drawing training instances.
        null_share: The share of unanswerable instances for the tasks that have them.
        max_draws_per_instance: Give up (with :class:`TaskGenerationError`) after this many draws
            per requested instance.
        allow_fewer: Instead of raising, return fewer instances for a task whose pool of distinct
            questions runs out (the 144 knowledge facts of a generated org, once a test set has
            taken most of them); such a task stops after 5,000 draws in a row yield nothing new.
        distribution: ``"discriminating"`` (default: every instance has the competition its family
            needs, see :func:`competition_shortfall`) or ``"legacy"`` (task generator version 2's
            instances, to reproduce figures made with them).

    Returns:
        The instances, task by task, numbered from 0 in blocks of ``per_task`` (with gaps at the end of
        a block when ``allow_fewer`` let a task come short).

    Raises:
        TaskGenerationError: The org cannot yield the instances (too small, or without the latent
            variables that PVI and KQA need).
    """
    if tasks is not None and category is not None:
        raise ValueError("pass tasks= or category= (the same thing), not both")
    if category is not None:
        tasks = [category] if isinstance(category, str) else list(category)
    path = _org_path(org)
    if _org_kind(path) != "service":
        from crmarena_gym.tasks.pro._generate import DEFAULT_PRO_PER_TASK, generate_pro_tasks

        return generate_pro_tasks(
            path,
            category=tasks,
            seed=seed,
            per_task=DEFAULT_PRO_PER_TASK if per_task is None else per_task,
            exclude=exclude,
            allow_fewer=allow_fewer,
        )
    per_task = 130 if per_task is None else per_task
    if per_task < 1:
        raise ValueError(f"per_task must be at least 1, got {per_task!r}")
    if not 0.0 <= null_share < 1.0:
        raise ValueError(f"null_share must be in [0, 1), got {null_share!r}")
    check_distribution(distribution)
    wanted = [get_task_spec(t) for t in tasks] if tasks is not None else [s for s in TASK_SPECS if s.name in DRAWERS]
    missing = [s.abbrev for s in wanted if s.name not in DRAWERS]
    if missing:
        raise TaskGenerationError(f"no generator yet for task(s) {', '.join(missing)}")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        latent = read_org_latent(path)
        facts = read_org_facts(conn, latent)
        facts.discriminating = distribution == "discriminating"
        instances: list[TaskInstance] = []
        for spec in wanted:
            task_index = [s.name for s in TASK_SPECS].index(spec.name)
            rng = np.random.default_rng([seed, task_index])
            draws = _draw_task(
                spec,
                facts,
                rng,
                per_task,
                null_share,
                set(exclude),
                max_draws_per_instance,
                allow_fewer,
                discriminating=distribution == "discriminating",
            )
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


def read_org_latent(path: Path) -> dict[str, Any]:
    """The latent variables the generator recorded in an org database; empty for an org without them."""
    from crmarena_gym.datagen import read_latent  # the generator's own reader

    try:
        return read_latent(path)
    except Exception:  # an org in the original dump's layout has no latent variables
        return {}


# Draws in a row without a new instance after which ``allow_fewer`` deems a task's pool exhausted.
_STALL_LIMIT = 5000
#: In the "discriminating" distribution, no gold answer is given by more than this share of a task's
#: answerable instances (rounded up), so that always giving the commonest answer scores little (in the
#: seed-0 test set without it, one agent was the gold of 39 of TCU's 91 answerable instances).
ANSWER_CAP = 0.2


def _draw_task(
    spec: TaskSpec,
    facts: OrgFacts,
    rng: np.random.Generator,
    per_task: int,
    null_share: float,
    exclude: set[str],
    max_draws_per_instance: int,
    allow_fewer: bool = False,
    *,
    discriminating: bool = True,
) -> list[Draw]:
    want_answered, want_null = _task_quota(spec, per_task, null_share)
    answered: list[Draw] = []
    nulls: list[Draw] = []
    seen = set(exclude)
    drawer = DRAWERS[spec.name]
    stalled = 0
    cap = math.ceil(ANSWER_CAP * want_answered) if discriminating else want_answered
    given: Counter[str] = Counter()
    for _ in range(per_task * max_draws_per_instance):
        if len(answered) >= want_answered and len(nulls) >= want_null:
            break
        if allow_fewer and stalled >= _STALL_LIMIT:
            break
        stalled += 1
        d = drawer(facts, rng)
        if d is None or len(d.answers) > 1:
            continue  # no fit, or a tie: ties are never emitted
        if discriminating and competition_shortfall(spec.name, d.competition, bool(d.answers)) is not None:
            continue
        if d.answers and given[d.answers[0]] >= cap:
            continue
        bucket, quota = (answered, want_answered) if d.answers else (nulls, want_null)
        if len(bucket) >= quota:
            continue
        key = instance_key(spec.name, d.params)
        if key in seen:
            continue
        seen.add(key)
        bucket.append(d)
        if d.answers:
            given[d.answers[0]] += 1
        stalled = 0
    if not allow_fewer and (len(answered) < want_answered or len(nulls) < want_null):
        hint = " or too sparse for instances with competition (distribution='legacy' has no such rule)"
        raise TaskGenerationError(
            f"could not draw {want_answered} answerable and {want_null} unanswerable {spec.abbrev} instances "
            f"from this org (got {len(answered)} and {len(nulls)}); the org may be too small"
            + (hint if discriminating else "")
        )
    # Interleave deterministically so that unanswerable instances are spread through the block.
    order = rng.permutation(len(answered) + len(nulls))
    pool = answered + nulls
    return [pool[i] for i in order]
