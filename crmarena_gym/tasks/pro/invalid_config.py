"""invalid_config: do a quote's products, quantities and combinations break a configuration rule, and which?

Pinned (PRO.md 3.4): three rules, each stated in one internal knowledge article: a line's quantity above its
product's limit; the two products of an excluded pair on one quote; a primary product without every companion it
requires. The gold is the Id of the article whose rule the quote breaks (the generator plants at most one), None
when it breaks none. Tools: SOQL only (the rule articles are read from Knowledge__kav's internal articles).

The draw picks the broken rule first (uniformly), so the gold spreads over the three articles; a None draw picks a
quote that breaks no rule and carries at least one product some configuration rule names (the check is real).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any

import numpy as np

from crmarena_gym.tasks._oracle import OracleError, SolverCalls
from crmarena_gym.tasks._phrasing import pick
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import record_held_back
from crmarena_gym.tasks.pro._sales import internal_articles, read_rule_articles, records
from crmarena_gym.tools._common import soql_string

_CONFIG = ("quantity_limits", "exclusions", "bundles")
_GUIDE = (
    "- Guide: a quote's configuration must follow the product rules in the internal knowledge articles: the most "
    "units of a product one line may carry, the products that may not be on the same quote, and the products "
    "that must be quoted together with others. A quote breaks at most one of them."
)
_FORMAT = "Return only the Id of the knowledge article whose rule the quote breaks, or None if it breaks none."
_TEMPLATES = (
    "Is this quote configured correctly, or does its mix of products and quantities break one of our rules?",
    "Check the products and quantities on this quote against the configuration rules. Which rule, if any, does it "
    "break?",
    "Validate the setup of this quote: any product over its quantity limit, any forbidden combination, any "
    "missing required product?",
    "Before this quote goes to the customer, confirm that its product configuration is valid.",
    "Does the product configuration of this quote comply with company rules?",
    "Review this quote's line items for configuration problems and tell me which policy article applies.",
    "Someone built this quote by hand. Does the combination of products on it violate a configuration rule?",
)


def _planted(facts: ProFacts) -> list[tuple[str, str | None, str | None]]:
    return facts.once(
        "icf.planted",
        lambda: facts.conn.execute(
            "SELECT QuoteId, rule, category FROM crmarena_hidden_quote ORDER BY QuoteId"
        ).fetchall(),
    )


def _rule_products(facts: ProFacts) -> set[str]:
    """The products some configuration rule names (from the hidden rule table)."""

    def build() -> set[str]:
        named: set[str] = set()
        for rule, parameters in facts.conn.execute(
            "SELECT rule, parameters FROM crmarena_hidden_rule WHERE category = 'config'"
        ):
            value = json.loads(parameters)
            if rule == "quantity_limits":
                named |= set(value)
            elif rule == "exclusions":
                named |= {p for pair in value for p in pair}
            else:
                named |= set(value)
        return named

    return facts.once("icf.rule_products", build)


def _quote_products(facts: ProFacts) -> dict[str, set[str]]:
    def build() -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for quote, product in facts.conn.execute("SELECT QuoteId, Product2Id FROM QuoteLineItem"):
            out.setdefault(quote, set()).add(product)
        return out

    return facts.once("icf.quote_products", build)


def draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    """A quote that breaks one configuration rule (gold: that rule's article), or one that breaks none."""
    planted = _planted(facts)
    if want_none:
        named, products = _rule_products(facts), _quote_products(facts)
        pool = [row for row in planted if row[2] is None and products.get(row[0], set()) & named]
        if not pool:
            raise ValueError("invalid_config: the org has no compliant quote with a product a rule names")
    else:
        rules = sorted({row[1] for row in planted if row[2] == "config"})
        if not rules:
            raise ValueError("invalid_config: the org has no quote that breaks a configuration rule")
        rule = pick(rng, rules)
        pool = [row for row in planted if row[1] == rule]
    quote, rule, _category = pick(rng, pool)
    gold = None
    if rule is not None:
        (gold,) = facts.conn.execute("SELECT ArticleId FROM crmarena_hidden_rule WHERE rule = ?", (rule,)).fetchone()
    required = f"- Quote Id to be considered is: {quote}\n{_GUIDE}"
    return ProDraw(gold, f"{pick(rng, _TEMPLATES)} {_FORMAT}", required, {"quote_id": quote})


def gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    """The configuration rules of ``crmarena_hidden_rule`` checked against the quote's lines, in SQL."""
    quote = params["quote_id"]
    if conn.execute("SELECT 1 FROM Quote WHERE Id = ?", (quote,)).fetchone() is None:
        raise LookupError(f"no quote {quote}")
    rules = dict(conn.execute("SELECT rule, ArticleId FROM crmarena_hidden_rule WHERE category = 'config'"))
    broken = []
    over = conn.execute(
        """
        SELECT COUNT(*) FROM QuoteLineItem l, crmarena_hidden_rule r, json_each(r.parameters) j
        WHERE r.rule = 'quantity_limits' AND l.QuoteId = ? AND j.key = l.Product2Id AND l.Quantity > j.value
        """,
        (quote,),
    ).fetchone()[0]
    if over:
        broken.append("quantity_limits")
    pairs = conn.execute(
        """
        SELECT COUNT(*) FROM crmarena_hidden_rule r, json_each(r.parameters) pair
        WHERE r.rule = 'exclusions'
          AND EXISTS (SELECT 1 FROM QuoteLineItem a
                      WHERE a.QuoteId = ? AND a.Product2Id = json_extract(pair.value, '$[0]'))
          AND EXISTS (SELECT 1 FROM QuoteLineItem b
                      WHERE b.QuoteId = ? AND b.Product2Id = json_extract(pair.value, '$[1]'))
        """,
        (quote, quote),
    ).fetchone()[0]
    if pairs:
        broken.append("exclusions")
    incomplete = conn.execute(
        """
        SELECT COUNT(*) FROM crmarena_hidden_rule r, json_each(r.parameters) b, json_each(b.value) c
        WHERE r.rule = 'bundles'
          AND EXISTS (SELECT 1 FROM QuoteLineItem p WHERE p.QuoteId = ? AND p.Product2Id = b.key)
          AND NOT EXISTS (SELECT 1 FROM QuoteLineItem m WHERE m.QuoteId = ? AND m.Product2Id = c.value)
        """,
        (quote, quote),
    ).fetchone()[0]
    if incomplete:
        broken.append("bundles")
    if len(broken) > 1:
        raise ValueError(f"quote {quote} breaks {broken}: the generator plants one at most")
    return rules[broken[0]] if broken else None


def solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    """Read the configuration articles, then the quote's lines (product names, quantities), and check each rule."""
    rules = read_rule_articles(internal_articles(calls))
    missing = [key for key in _CONFIG if key not in rules]
    if missing:
        raise OracleError(f"no internal article states the {', '.join(missing)} rule")
    quote = soql_string(question.params["quote_id"])
    lines = records(
        calls("issue_soql_query", query=f"SELECT Product2.Name, Quantity FROM QuoteLineItem WHERE QuoteId = {quote}")
    )
    if not lines:
        raise OracleError(f"quote {quote} has no line")
    quantity: dict[str, float] = {}
    for line in lines:
        name = line["Product2"]["Name"]
        quantity[name] = max(quantity.get(name, 0.0), line["Quantity"])
    broken = []
    limits = rules["quantity_limits"][1]["limits"]
    if any(name in limits and q > limits[name] for name, q in quantity.items()):
        broken.append("quantity_limits")
    if any(a in quantity and b in quantity for a, b in rules["exclusions"][1]["pairs"]):
        broken.append("exclusions")
    bundles = rules["bundles"][1]["bundles"]
    if any(p in quantity and any(c not in quantity for c in companions) for p, companions in bundles.items()):
        broken.append("bundles")
    if len(broken) > 1:
        calls.contradicted(f"quote {quote} breaks {broken}; the instance asks for one article")
    return rules[broken[0]][0] if broken else None


CATEGORY = Category(
    "invalid_config",
    draw,
    gold_sql,
    solve,
    split=record_held_back("quote"),
    split_needs=("quote_id",),
)
