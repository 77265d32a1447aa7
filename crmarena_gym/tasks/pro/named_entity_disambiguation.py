"""named_entity_disambiguation: a logged-in contact asks for a product bought N days ago, described by what it is.

Pinned (PRO.md 3.2): the date is today minus the offset exactly (a week 7 days, a fortnight 14, a month 30); the
candidates are the products of the activated orders of the contact's account effective on that date (Order has no
contact field); the gold is the candidate whose description is the one given, None when no product bought on
that date matches. The generator plants look-alike purchases (``crmarena_hidden_purchase``): an account buys two or
three products of one family on one day and others of that family a few days away, so the description, not the
date alone, decides, and a product bought a few days off the asked date is not an answer.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._interactive import SLOT_WORDS, Criterion, InteractiveSplit, split_of
from crmarena_gym.tasks._phrasing import pick
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import opening

if TYPE_CHECKING:
    import numpy as np

    from crmarena_gym.tasks._oracle import SolverCalls

#: The offsets in days and how a customer says them.
_OFFSETS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (3, ("three days ago", "3 days ago")),
    (5, ("five days ago", "5 days ago")),
    (7, ("a week ago", "seven days ago")),
    (14, ("two weeks ago", "a fortnight ago")),
    (30, ("a month ago", "30 days ago")),
)
_TEMPLATES = (
    "I bought a product from you {when}, but I can't recall its name. Here is what it is: {desc} Which one is it?",
    "Could you pull up the item we purchased {when}? It's the one described as: {desc}",
    "We ordered something {when} and I need its record. What I remember about it: {desc}",
    "Which product did we buy {when}? I mean this one: {desc}",
    "I'm trying to find a purchase from {when}. The product: {desc} Can you identify it?",
    "Please show me what we got {when}; it's described like this: {desc}",
    "Looking for the product our account purchased {when}. Description: {desc}",
)
_FORMAT = (" Return only the Id of the product.", " Reply with just the product's Id.")
#: The last day a question may be asked on (the org's last day).
_LAST_DAY = dt.date(2025, 6, 30)


def _candidates(facts: ProFacts) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
    """Per (account, day): the (product, family, description) bought in activated orders that day (visible data)."""

    def build() -> dict[tuple[str, str], list[tuple[str, str, str]]]:
        out: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
        for acc, day, product, family, description in facts.conn.execute(
            """SELECT o.AccountId, o.EffectiveDate, oi.Product2Id, p.Family, p.Description
               FROM "Order" o JOIN OrderItem oi ON oi.OrderId = o.Id JOIN Product2 p ON p.Id = oi.Product2Id
               WHERE o.Status = 'Activated' ORDER BY o.AccountId, o.EffectiveDate, oi.Id"""
        ):
            out[(acc, day)].append((product, family, description))
        return dict(out)

    return facts.once("named_entity_disambiguation.candidates", build)


def _clusters(facts: ProFacts) -> dict[int, list[tuple[str, str, str]]]:
    def build() -> dict[int, list[tuple[str, str, str]]]:
        tables = {r[0] for r in facts.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "crmarena_hidden_purchase" not in tables:
            return {}
        out: dict[int, list[tuple[str, str, str]]] = defaultdict(list)
        for cluster, acc, day, product in facts.conn.execute(
            "SELECT cluster, AccountId, EffectiveDate, Product2Id FROM crmarena_hidden_purchase ORDER BY rowid"
        ):
            out[cluster].append((acc, day, product))
        return dict(out)

    return facts.once("named_entity_disambiguation.clusters", build)


def _contacts(facts: ProFacts, account: str) -> list[str]:
    return facts.once(
        f"named_entity_disambiguation.contacts.{account}",
        lambda: [
            r[0] for r in facts.conn.execute("SELECT Id FROM Contact WHERE AccountId = ? ORDER BY Id", (account,))
        ],
    )


def draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    clusters = _clusters(facts)
    if not clusters:
        raise LookupError(
            f"the {facts.kind} org has no look-alike purchases (generated with latent=False?): "
            "named_entity_disambiguation needs them"
        )
    keys = sorted(clusters)
    rows = clusters[keys[int(rng.integers(len(keys)))]]
    account = rows[0][0]
    days = sorted({day for _acc, day, _p in rows})
    if len(days) != 2:
        return None
    asked = days[int(rng.integers(2))]
    other = days[0] if asked == days[1] else days[1]
    candidates = _candidates(facts)
    on_day = candidates.get((account, asked), [])
    descriptions = [c[2] for c in on_day]
    if want_none:
        # A product of the cluster bought on the other day only: the date rules it out.
        pool = [c for c in candidates.get((account, other), []) if c[2] not in descriptions]
        if not pool or not on_day:
            return None
        product, _family, description = pool[int(rng.integers(len(pool)))]
        answer = None
    else:
        pool = [
            c
            for c in on_day
            if descriptions.count(c[2]) == 1 and sum(o[1] == c[1] for o in on_day) >= 2  # a look-alike competes
        ]
        if not pool:
            return None
        product, _family, description = pool[int(rng.integers(len(pool)))]
        answer = product
    contacts = _contacts(facts, account)
    if not contacts:
        return None
    contact = contacts[int(rng.integers(len(contacts)))]
    offset, sayings = _OFFSETS[int(rng.integers(len(_OFFSETS)))]
    today = dt.date.fromisoformat(asked) + dt.timedelta(days=offset)
    if today > _LAST_DAY:
        return None
    when = sayings[int(rng.integers(len(sayings)))]
    query = _TEMPLATES[int(rng.integers(len(_TEMPLATES)))].format(when=when, desc=description.strip())
    query += _FORMAT[int(rng.integers(len(_FORMAT)))]
    required = f"- Contact Id interacting: {contact}\n- Today's date: {today.isoformat()}"
    params = {"contact_id": contact, "today": today.isoformat(), "days": offset, "description": description.strip()}
    return ProDraw(answer, query, required, params)


def gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    rows = conn.execute(
        """SELECT DISTINCT oi.Product2Id
           FROM Contact c JOIN "Order" o ON o.AccountId = c.AccountId
           JOIN OrderItem oi ON oi.OrderId = o.Id JOIN Product2 p ON p.Id = oi.Product2Id
           WHERE c.Id = :contact AND o.Status = 'Activated'
             AND o.EffectiveDate = date(:today, '-' || :days || ' days') AND p.Description = :description""",
        {
            "contact": params["contact_id"],
            "today": params["today"],
            "days": int(params["days"]),
            "description": params["description"],
        },
    ).fetchall()
    if len(rows) > 1:
        raise ValueError(f"{len(rows)} products bought that day match the description: {rows}")
    return rows[0][0] if rows else None


def solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    params = question.params
    contact = calls("issue_soql_query", query=f"SELECT AccountId FROM Contact WHERE Id = '{params['contact_id']}'")
    if len(contact) != 1:
        calls.contradicted(f"contact {params['contact_id']} not found")
    day = dt.date.fromisoformat(params["today"]) - dt.timedelta(days=int(params["days"]))
    items = calls(
        "issue_soql_query",
        query=(
            "SELECT Product2Id, Product2.Name, Product2.Description FROM OrderItem"
            f" WHERE Order.AccountId = '{contact[0]['AccountId']}' AND Order.EffectiveDate = {day.isoformat()}"
            " AND Order.Status = 'Activated'"
        ),
    )
    wanted = " ".join(params["description"].lower().split())
    found = {
        item["Product2Id"]
        for item in items
        if " ".join(((item.get("Product2") or {}).get("Description") or "").lower().split()) == wanted
    }
    if len(found) > 1:
        calls.contradicted(f"several products bought on {day} fit the description: {sorted(found)}")
    return found.pop() if found else None


_GOALS = (
    "I'm looking for a product we bought from you.",
    "Can you find a product our company purchased?",
    "I need the record of something we bought.",
)


def _split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    """Held back: what the product is (its description) and when it was bought (the offset, said as the questions
    say it). The contact stays in the context: it is who is logged in, not a criterion."""
    p = instance.params
    sayings = dict(_OFFSETS).get(int(p["days"]))
    if sayings is None:
        raise ValueError(f"named_entity_disambiguation: no way to say an offset of {p['days']} days")
    when = sayings[int(rng.integers(len(sayings)))]
    day = (dt.date.fromisoformat(str(p["today"])) - dt.timedelta(days=int(p["days"]))).isoformat()
    described = pick(rng, ("It's described like this: {d}", "What I remember about it: {d}", "The product: {d}"))
    criteria = (
        Criterion("description", described.format(d=p["description"]), SLOT_WORDS["description"], p["description"]),
        Criterion("purchase_day", f"We bought it {when}.", SLOT_WORDS["purchase_day"], day),
    )
    return split_of(instance, opening(rng, _GOALS, instance.query, _FORMAT), criteria)


CATEGORY = Category(
    "named_entity_disambiguation",
    draw,
    gold_sql,
    solve,
    split=_split,
    split_needs=("today", "days", "description"),
)
