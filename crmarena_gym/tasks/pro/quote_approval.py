"""quote_approval: does a quote's pricing need approval under the company's discount rules, and by which article?

Pinned (PRO.md 3.4, with the rebuild's extra approval articles): three approval rules, each stated in one internal
knowledge article: the per-line discount cap (b2b: tiers by the line's quantity, 15% from 20 units, 10% from 10,
5% from 5, else 0; b2c: a cap per product type), raised by the article's bonus when the quote carries an approved
competing offer (``Quote.ApprovedCompetingOffer__c``); the most discount one quote may give in dollars; the
product families that never take a discount. The gold is the Id of the article whose rule the quote breaks (the
generator plants at most one broken rule per quote), None when it breaks none. Tools: SOQL only (the rule
articles are read from Knowledge__kav's internal articles).

The draw picks the broken rule first (uniformly among the approval rules some quote breaks), so the gold spreads
over the three articles; a None draw picks a quote that breaks no rule and gives some discount.
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
from crmarena_gym.tasks.pro._sales import allowed_discount, internal_articles, read_rule_articles, records
from crmarena_gym.tools._common import soql_string

_APPROVAL = ("discount_tiers", "discount_limit", "no_discount")
_GUIDE = (
    "- Guide: a quote may be sent without further approval only if it follows every discount rule in the internal "
    "knowledge articles: the most discount each line may carry (an approved competing offer on the quote raises "
    "it as the article says), the most discount one quote may give in total, and the products that are never "
    "discounted. A quote breaks at most one of them."
)
_FORMAT = "Return only the Id of the knowledge article whose rule the quote breaks, or None if it breaks none."
_TEMPLATES = (
    "Can this quote go out as it is, or does its discounting break one of our approval rules?",
    "Check the pricing on this quote against the discount policies. Which policy, if any, does it violate?",
    "A rep is asking for sign-off on this quote. Do its discounts comply with company policy?",
    "Review this quote's line discounts and total discount. Does it need approval because it breaks a rule?",
    "Is the discounting on this quote within what our knowledge articles allow?",
    "Before I approve this quote, tell me whether any of its prices breaks our discount rules, and which rule.",
    "Audit the quote below for discount compliance and name the article it falls foul of.",
)


def _planted(facts: ProFacts) -> list[tuple[str, str | None, str | None, float]]:
    """(quote, planted approval rule or None, planted category or None, the quote's largest line discount)."""
    return facts.once(
        "qap.planted",
        lambda: facts.conn.execute(
            "SELECT h.QuoteId, h.rule, h.category, (SELECT MAX(Discount) FROM QuoteLineItem l WHERE l.QuoteId = "
            "h.QuoteId) FROM crmarena_hidden_quote h ORDER BY h.QuoteId"
        ).fetchall(),
    )


def draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    """A quote that breaks one approval rule (gold: that rule's article), or one that breaks none (gold None)."""
    planted = _planted(facts)
    if want_none:
        pool = [row for row in planted if row[2] is None and (row[3] or 0) > 0]
    else:
        rules = sorted({row[1] for row in planted if row[2] == "approval"})
        if not rules:
            raise ValueError("quote_approval: the org has no quote that breaks an approval rule")
        rule = pick(rng, rules)
        pool = [row for row in planted if row[1] == rule]
    if not pool:
        raise ValueError("quote_approval: the org has no discounted quote that breaks no rule")
    quote, rule, _category, _most = pick(rng, pool)
    gold = None
    if rule is not None:
        (gold,) = facts.conn.execute("SELECT ArticleId FROM crmarena_hidden_rule WHERE rule = ?", (rule,)).fetchone()
    required = f"- Quote Id to be considered is: {quote}\n{_GUIDE}"
    return ProDraw(gold, f"{pick(rng, _TEMPLATES)} {_FORMAT}", required, {"quote_id": quote})


def gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    """The approval rules of ``crmarena_hidden_rule`` checked against the quote's lines."""
    rules = {
        rule: (article, json.loads(parameters))
        for rule, article, parameters in conn.execute(
            "SELECT rule, ArticleId, parameters FROM crmarena_hidden_rule WHERE category = 'approval'"
        )
    }
    row = conn.execute("SELECT ApprovedCompetingOffer__c FROM Quote WHERE Id = ?", (params["quote_id"],)).fetchone()
    if row is None:
        raise LookupError(f"no quote {params['quote_id']}")
    offer = bool(row[0])
    tiers = rules["discount_tiers"][1]
    bonus = tiers["offer_bonus"] if offer else 0.0
    no_discount = set(rules["no_discount"][1]["families"])
    broken = set()
    total = 0.0
    for quantity, price, discount, family in conn.execute(
        "SELECT l.Quantity, l.UnitPrice, l.Discount, p.Family FROM QuoteLineItem l "
        "JOIN Product2 p ON p.Id = l.Product2Id WHERE l.QuoteId = ?",
        (params["quote_id"],),
    ):
        discount = discount or 0.0
        total += quantity * price * discount / 100
        if family in no_discount:
            if discount > 0:
                broken.add("no_discount")
            continue
        if tiers["quantity_tiers"]:
            cap = max([pct for low, pct in tiers["quantity_tiers"] if quantity >= low], default=0.0)
        else:
            cap = tiers["family_caps"].get(family, 0.0)
        if discount > cap + bonus + 1e-9:
            broken.add("discount_tiers")
    if total > rules["discount_limit"][1]["limit"] + 1e-6:
        broken.add("discount_limit")
    if len(broken) > 1:
        raise ValueError(f"quote {params['quote_id']} breaks {sorted(broken)}: the generator plants one at most")
    return rules[broken.pop()][0] if broken else None


def solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    """Read the approval articles, then the quote's flag and lines, and check each rule."""
    rules = read_rule_articles(internal_articles(calls))
    missing = [key for key in _APPROVAL if key not in rules]
    if missing:
        raise OracleError(f"no internal article states the {', '.join(missing)} rule")
    quote = soql_string(question.params["quote_id"])
    found = records(
        calls(
            "issue_soql_query",
            query="SELECT Id, ApprovedCompetingOffer__c, (SELECT Quantity, UnitPrice, Discount, Product2.Family "
            f"FROM QuoteLineItems) FROM Quote WHERE Id = {quote}",
        )
    )
    if len(found) != 1:
        raise OracleError(f"quote {quote} answered {len(found)} records")
    offer = bool(found[0]["ApprovedCompetingOffer__c"])
    lines = (found[0].get("QuoteLineItems") or {}).get("records") or []
    broken = []
    total = 0.0
    for line in lines:
        family, discount = line["Product2"]["Family"], line["Discount"] or 0.0
        total += line["Quantity"] * line["UnitPrice"] * discount / 100
        if family in rules["no_discount"][1]["families"]:
            if discount > 0 and "no_discount" not in broken:
                broken.append("no_discount")
        elif discount > allowed_discount(rules, family, line["Quantity"], offer) + 1e-9:
            if "discount_tiers" not in broken:
                broken.append("discount_tiers")
    if total > rules["discount_limit"][1]["limit"] + 1e-6:
        broken.append("discount_limit")
    if len(broken) > 1:
        calls.contradicted(f"quote {quote} breaks {broken}; the instance asks for one article")
    return rules[broken[0]][0] if broken else None


CATEGORY = Category(
    "quote_approval",
    draw,
    gold_sql,
    solve,
    split=record_held_back("quote"),
    split_needs=("quote_id",),
)
