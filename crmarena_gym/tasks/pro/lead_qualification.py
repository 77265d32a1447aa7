"""lead_qualification: is a lead qualified after its latest call, and if not, which BANT factors fail?

Pinned (PRO.md 3.4): the facts are read from the lead's latest call (an earlier call may state figures it
updates). Budget fails when the quantity at list price, less the discount the discount article allows for that
line (no competing offer), exceeds the stated budget; Authority fails when the lead says someone else decides;
Need fails when no concrete need is stated; Timeline fails when the installation (b2b) or delivery (b2c) time the
setup article gives for the product and quantity exceeds the days the lead needs it in. The gold is the sorted
tuple of failing factors, None when all pass. Tools: SOQL only (calls, products, the internal articles).

The draw follows the planted share of each failing vector (``crmarena_hidden_lead_bant``), so Authority, the
most frequent, stays near a third of the answerable golds, as upstream's 27 of 80.
"""

from __future__ import annotations

import re
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

FACTORS: tuple[str, ...] = ("Budget", "Authority", "Need", "Timeline")
_GUIDE = (
    "- Guide: judge the lead by BANT from its call transcripts; when it had several calls, the latest one is what "
    "counts (it may update figures said before). Budget: the quantity it wants at our list price, less the "
    "discount our discount article allows for such a line, must fit within the budget it states. Authority: the "
    "person on the call makes the decision. Need: the lead states a concrete need. Timeline: the time our "
    "installation or delivery article gives for that product and quantity must fit within the days the lead "
    "needs it in."
)
_FORMAT = (
    "Return only the BANT factors that fail (any of Budget, Authority, Need, Timeline), separated by commas, or "
    "None if the lead is qualified."
)
_TEMPLATES = (
    "Is this lead qualified to move forward? If not, which BANT criteria does it fall short on?",
    "Go through the calls with this lead and tell me which of budget, authority, need and timeline are not met.",
    "I need a BANT check on this lead before I hand it to an account executive. What fails?",
    "Based on what the lead said in our latest conversation, which qualification factors are missing?",
    "Should we pursue this lead? Assess it against BANT and list the factors that do not hold.",
    "Qualify this lead using our BANT guide and report the failing factors, if any.",
    "Which BANT factors, if any, disqualify this lead according to its call transcripts?",
)


def _planted(facts: ProFacts) -> list[tuple[str, str | None]]:
    return facts.once(
        "lqu.planted",
        lambda: facts.conn.execute("SELECT LeadId, failing FROM crmarena_hidden_lead_bant ORDER BY LeadId").fetchall(),
    )


def draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    """A lead some of whose BANT factors fail (gold: those factors), or a qualified lead (gold None)."""
    pool = [row for row in _planted(facts) if (row[1] is None) == want_none]
    if not pool:
        raise ValueError(f"lead_qualification: the org has no {'qualified' if want_none else 'unqualified'} lead")
    lead, failing = pick(rng, pool)
    gold = None if failing is None else tuple(sorted(failing.split(",")))
    required = f"- Lead Id to be considered is: {lead}\n{_GUIDE}"
    return ProDraw(gold, f"{pick(rng, _TEMPLATES)} {_FORMAT}", required, {"lead_id": lead})


def gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    """BANT recomputed from the latest call's planted facts: the cost from the price book and the discount rule."""
    row = conn.execute(
        """
        SELECT b.quantity, e.UnitPrice, p.Family, b.budget, b.setup_days, b.required_days, b.authority_ok, b.need_ok,
               r.parameters
        FROM crmarena_hidden_lead_bant b
        JOIN Product2 p ON p.Id = b.product
        JOIN PricebookEntry e ON e.Product2Id = p.Id
        JOIN crmarena_hidden_rule r ON r.rule = 'discount_tiers'
        WHERE b.LeadId = ?
        """,
        (params["lead_id"],),
    ).fetchone()
    if row is None:
        raise LookupError(f"no planted call facts for lead {params['lead_id']}")
    quantity, price, family, budget, setup, required_days, authority_ok, need_ok, tiers = row
    (no_discount,) = conn.execute(
        "SELECT COUNT(*) FROM crmarena_hidden_rule r, json_each(json_extract(r.parameters, '$.families')) f "
        "WHERE r.rule = 'no_discount' AND f.value = ?",
        (family,),
    ).fetchone()
    (tier,) = conn.execute(
        "SELECT COALESCE(MAX(json_extract(t.value, '$[1]')), 0) FROM json_each(json_extract(?, '$.quantity_tiers')) t "
        "WHERE json_extract(t.value, '$[0]') <= ?",
        (tiers, quantity),
    ).fetchone()
    (cap,) = conn.execute(
        "SELECT COALESCE(json_extract(?, '$.family_caps.' || json_quote(?)), 0)", (tiers, family)
    ).fetchone()
    pct = 0.0 if no_discount else float(tier or cap)
    failing = []
    if round(quantity * price * (1 - pct / 100), 2) > budget:
        failing.append("Budget")
    if not authority_ok:
        failing.append("Authority")
    if not need_ok:
        failing.append("Need")
    if setup > required_days:
        failing.append("Timeline")
    return tuple(sorted(failing)) or None


# What the lead says, by factor: phrases that state the factor holds or fails (the calls' own wording).
_AUTHORITY = {
    True: (r"\bi sign off", r"the decision is mine"),
    False: (r"makes the final call", r"decides on anything"),
}
_NEED = {
    True: (r"\bwe need \d+ ", r"the plan is \d+ ", r"settled on the ", r"we need a new car"),
    False: (r"no specific project", r"nothing concrete", r"just browsing", r"nothing urgent or definite"),
}
_LINE = re.compile(r"^\[[^\]]+\] ([^:]+): (.*)$")


def _says(lines: list[str], phrases: dict[bool, tuple[str, ...]], what: str, lead: str) -> bool:
    said = {
        holds
        for holds, options in phrases.items()
        if any(re.search(p, line.lower()) for line in lines for p in options)
    }
    if len(said) != 1:
        raise OracleError(f"lead {lead}'s latest call does not say clearly whether the {what} holds")
    return said.pop()


def solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    """Read the lead's latest call, the product's family, the discount and setup articles; check each factor."""
    lead = soql_string(question.params["lead_id"])
    transcripts = records(
        calls(
            "issue_soql_query",
            query=f"SELECT Id, Body__c, CreatedDate FROM VoiceCallTranscript__c WHERE LeadId__c = {lead} "
            "ORDER BY CreatedDate DESC",
        )
    )
    if not transcripts:
        raise OracleError(f"lead {lead} has no call")
    body = transcripts[0]["Body__c"] or ""
    spoken = [(m.group(1), m.group(2)) for m in map(_LINE.match, body.splitlines()) if m]
    priced = [re.search(r"^(.+?) lists at \$([\d,]+(?:\.\d+)?) per (\w+)", text) for _who, text in spoken]
    offers = [(who, m) for (who, _text), m in zip(spoken, priced, strict=True) if m]
    if len(offers) != 1:
        raise OracleError(f"lead {lead}'s latest call quotes {len(offers)} list prices")
    rep, price_line = offers[0]
    product, price, unit = price_line.group(1), float(price_line.group(2).replace(",", "")), price_line.group(3)
    said = [text for who, text in spoken if who != rep]
    amounts = [m for text in said for m in re.findall(r"\$([\d,]+)", text)]
    days = [m for text in said for m in re.findall(r"(\d+) days", text)]
    counts = [m for text in said for m in re.findall(r"(\d+) (?:licences|licenses|units|vehicles) of ", text)]
    if len(amounts) != 1 or len(days) != 1 or len(counts) > 1:
        raise OracleError(f"lead {lead}'s latest call states {len(amounts)} budgets and {len(days)} timelines")
    if not counts and unit != "vehicle":
        raise OracleError(f"lead {lead}'s latest call states no quantity")
    quantity = float(counts[0]) if counts else 1.0
    budget, needed = float(amounts[0].replace(",", "")), int(days[0])
    found = records(calls("issue_soql_query", query=f"SELECT Family FROM Product2 WHERE Name = {soql_string(product)}"))
    if len(found) != 1:
        raise OracleError(f"product {product!r} named in lead {lead}'s call answered {len(found)} records")
    family = found[0]["Family"]
    rules = read_rule_articles(internal_articles(calls))
    if not {"discount_tiers", "no_discount", "setup_times"} <= set(rules):
        raise OracleError("the discount, non-discountable or setup-time article is missing")
    pct = allowed_discount(rules, family, quantity, False)
    setup = rules["setup_times"][1]
    if setup["by_model"]:
        if product not in setup["days"]:
            raise OracleError(f"the delivery-time article gives no time for {product!r}")
        takes = setup["days"][product]
    else:
        if family not in setup["days"]:
            raise OracleError(f"the installation-time article gives no time for {family!r}")
        takes = setup["days"][family] + next((extra for low, extra in setup["bands"] if quantity >= low), 0)
    failing = []
    if round(quantity * price * (1 - pct / 100), 2) > budget:
        failing.append("Budget")
    if not _says(said, _AUTHORITY, "authority", lead):
        failing.append("Authority")
    if not _says(said, _NEED, "need", lead):
        failing.append("Need")
    if takes > needed:
        failing.append("Timeline")
    return tuple(sorted(failing)) or None


CATEGORY = Category(
    "lead_qualification",
    draw,
    gold_sql,
    solve,
    split=record_held_back("lead"),
    split_needs=("lead_id",),
)
