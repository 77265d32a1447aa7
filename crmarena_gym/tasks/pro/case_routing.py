"""case_routing: route a new case, given by its subject and description, to an agent by the routing policy.

Pinned (PRO.md 3.3): the case text is written from an (issue, product) pair that exists among the org's cases:
the description states the issue's description and the product's name, as the org's own cases do, so both are
recoverable from Issue__c.Description__c and Product2.Name. The candidates are the users owning at least one
case; counts run over all time. Rule 1: most cases of the issue with Status 'Closed'; rule 2, among those tied:
most closed cases of the product (Case.OrderItemId__c -> OrderItem.Product2Id); rule 3, among those still tied:
fewest cases not closed. Draws keep a unique winner after rule 3 (never None) and record which rule decided;
fewer draws that rule 1 decides are kept, so that rules 2 and 3 decide about a quarter of them.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._interactive import SLOT_WORDS, Criterion, InteractiveSplit, split_of
from crmarena_gym.tasks._oracle import SolverCalls
from crmarena_gym.tasks._phrasing import pick
from crmarena_gym.tasks.pro._balance import gold_shares, thin
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import opening

_POLICY = (
    "- Case routing policy: a new case goes to the agent who has closed the most cases of the issue most "
    "similar to it. If several agents are tied, it goes to the one among them who has closed the most cases "
    "about the product the case concerns; if they are still tied, to the one among them with the fewest cases "
    "that are not closed. Count cases over all time."
)
_SUBJECTS = (
    "Trouble with {product}",
    "{product}: need assistance",
    "Help needed with our {product}",
    "Question about {product}",
    "Problem report: {product}",
    "Urgent: {product} issue",
)
_DESCRIPTIONS = (
    "Hello, we have {product}. {issue} Could someone look into this?",
    "Our team is stuck with {product}. {issue} We would appreciate a quick reply.",
    "{issue} This is about {product}, bought from you last year.",
    "Hi support, writing about {product}: {issue} Thanks in advance.",
    "We need help with {product}. {issue}",
)
_TEMPLATES = (
    'A new case just came in. Subject: "{subject}". Description: "{description}" Following the case routing '
    "policy, which agent should it be assigned to?",
    "Which agent should handle this new case under our routing policy? Subject: {subject}. Description: {description}",
    'Route the following case by the case routing policy. Subject: "{subject}" Description: "{description}" '
    "Who should own it?",
    "Subject: {subject}\nDescription: {description}\nWho is the right agent for this case according to the "
    "routing policy?",
    'I need to assign a new case (subject "{subject}"; description "{description}"). Per the routing '
    "policy, which agent gets it?",
    "Find the agent this incoming case should be routed to, following the policy. Subject: {subject}. "
    "Description: {description}",
)
_ANSWER = "Return only the Id of the agent."
_CAP = 0.1
_RULE1_SKIP = 0.6


class _Org:
    """The cases (owner, issue, product, closed), the issues' descriptions and the products' names."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.cases = conn.execute(
            "SELECT c.OwnerId, c.IssueId__c, oi.Product2Id, c.Status = 'Closed' FROM \"Case\" c "
            "LEFT JOIN OrderItem oi ON oi.Id = c.OrderItemId__c ORDER BY c.Id"
        ).fetchall()
        self.pairs = sorted({(issue, product) for _, issue, product, _ in self.cases if issue and product})
        self.issues = dict(conn.execute("SELECT Id, Description__c FROM Issue__c").fetchall())
        self.products = dict(conn.execute("SELECT Id, Name FROM Product2").fetchall())

    def route(self, issue: str, product: str) -> tuple[str, int] | None:
        """The winner and the rule that decided, or None when no rule decides."""
        issue_closed = Counter(o for o, i, _, closed in self.cases if closed and i == issue)
        product_closed = Counter(o for o, _, p, closed in self.cases if closed and p == product)
        open_cases = Counter(o for o, _, _, closed in self.cases if not closed)
        tied = sorted({o for o, _, _, _ in self.cases})
        for rule, key in enumerate((issue_closed.__getitem__, product_closed.__getitem__), start=1):
            top = max(key(o) for o in tied)
            tied = [o for o in tied if key(o) == top]
            if rule == 1 and top == 0:
                return None  # nobody has closed a case of this issue: the question would not need the data
            if len(tied) == 1:
                return tied[0], rule
        fewest = min(open_cases[o] for o in tied)
        tied = [o for o in tied if open_cases[o] == fewest]
        return (tied[0], 3) if len(tied) == 1 else None


def _attempt(org: _Org, rng: np.random.Generator) -> tuple[Any, ...] | None:
    if not org.pairs:
        return None
    issue, product = org.pairs[int(rng.integers(len(org.pairs)))]
    routed = org.route(issue, product)
    return None if routed is None else (routed[0], routed[1], issue, product)


def _draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    if want_none:
        return None  # Pro never asks an unanswerable routing question (None rate 0)
    org = facts.once("case_routing", lambda: _Org(facts.conn))
    found = _attempt(org, rng)
    if found is None:
        return None
    answer, rule, issue, product = found
    if rule == 1 and rng.random() < _RULE1_SKIP:
        return None  # rule 1 decides most pairs: keep fewer of those, so the tie rules decide a fair share
    shares = gold_shares(facts, "case_routing", lambda r: (_attempt(org, r) or (None,))[0], 1000)
    if not thin(rng, shares, answer, _CAP):
        return None
    name = org.products[product]
    subject = pick(rng, _SUBJECTS).format(product=name)
    description = pick(rng, _DESCRIPTIONS).format(product=name, issue=org.issues[issue])
    text = f"{subject} {description}"
    others = [n for pid, n in org.products.items() if pid != product and n in text]
    if others or [i for i, d in org.issues.items() if i != issue and d in text]:
        return None  # the text must name one product and one issue
    query = pick(rng, _TEMPLATES).format(subject=subject, description=description)
    # The case's text too, so that act mode can write the case itself into the episode's session.
    params = {
        "issue_id": issue,
        "product_id": product,
        "decided_by_rule": rule,
        "case_subject": subject,
        "case_description": description,
    }
    return ProDraw(answer, f"{query} {_ANSWER}", _POLICY, params)


def _gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    rows = conn.execute(
        """
        WITH owners AS (SELECT DISTINCT OwnerId AS agent FROM "Case")
        SELECT o.agent,
               (SELECT COUNT(*) FROM "Case" c WHERE c.OwnerId = o.agent AND c.Status = 'Closed'
                  AND c.IssueId__c = :issue),
               (SELECT COUNT(*) FROM "Case" c JOIN OrderItem oi ON oi.Id = c.OrderItemId__c
                  WHERE c.OwnerId = o.agent AND c.Status = 'Closed' AND oi.Product2Id = :product),
               (SELECT COUNT(*) FROM "Case" c WHERE c.OwnerId = o.agent AND c.Status != 'Closed')
        FROM owners o
        ORDER BY 2 DESC, 3 DESC, 4 ASC
        """,
        {"issue": params["issue_id"], "product": params["product_id"]},
    ).fetchall()
    if not rows:
        return None
    first = rows[0][1:]
    best = sorted(agent for agent, *key in rows if tuple(key) == first)
    return best[0] if len(best) == 1 else tuple(best)


def _solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    text = question.query
    issues = calls("issue_soql_query", query="SELECT Id, Name, Description__c FROM Issue__c")
    matched = [row["Id"] for row in issues if row["Description__c"] and row["Description__c"] in text]
    products = calls("issue_soql_query", query="SELECT Id, Name FROM Product2")
    named = sorted((row for row in products if row["Name"] in text), key=lambda row: -len(row["Name"]))
    if len(matched) != 1 or not named:
        calls.contradicted(f"the case text names issues {matched} and products {[r['Name'] for r in named]}")
        return None
    issue, product = matched[0], named[0]["Id"]
    owners = calls("issue_soql_query", query="SELECT OwnerId, COUNT(Id) n FROM Case GROUP BY OwnerId")
    tied = [row["OwnerId"] for row in owners]
    steps = (
        (f"Status = 'Closed' AND IssueId__c = '{issue}'", max),
        (f"Status = 'Closed' AND OrderItemId__c IN (SELECT Id FROM OrderItem WHERE Product2Id = '{product}')", max),
        ("Status != 'Closed'", min),
    )
    for where, best in steps:
        rows = calls("issue_soql_query", query=f"SELECT OwnerId, COUNT(Id) n FROM Case WHERE {where} GROUP BY OwnerId")
        counts = {row["OwnerId"]: int(row["n"]) for row in rows}
        target = best(counts.get(agent, 0) for agent in tied)
        tied = [agent for agent in tied if counts.get(agent, 0) == target]
        if len(tied) == 1:
            return tied[0]
    return None


_GOALS = (
    "A new case came in: who should take it under our case routing policy?",
    "Which agent should a new case go to, by the routing policy?",
    "I need to assign an incoming case by the routing policy.",
)


def _template_pattern(template: str) -> re.Pattern[str]:
    escaped = re.escape(f"{template} {_ANSWER}")
    for slot in ("subject", "description"):
        escaped = escaped.replace(re.escape("{" + slot + "}"), f"(?P<{slot}>.+?)", 1)
    return re.compile(f"^{escaped}$", re.DOTALL)


_PATTERNS = tuple(_template_pattern(t) for t in _TEMPLATES)


def _case_text(query: str) -> tuple[str, str]:
    """The new case's subject and description, read back from the query this module wrote (the instance's hidden
    parameters name its issue and product, not the text the customer wrote).

    Raises:
        ValueError: The query is not one of this module's templates (a foreign instance).
    """
    for pattern in _PATTERNS:
        match = pattern.match(query)
        if match is not None:
            return match.group("subject"), match.group("description")
    raise ValueError("case_routing: the query is not one of the generator's templates; its case text cannot be found")


def _split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    """Held back: the new case's subject and description."""
    subject, description = _case_text(instance.query)
    text = f"Here it is.\n- Subject: {subject}\n- Description: {description}"
    case = Criterion("new_case", text, SLOT_WORDS["new_case"], {"subject": subject, "description": description})
    return split_of(instance, opening(rng, _GOALS, instance.query, (_ANSWER,)), (case,))


CATEGORY = Category(
    "case_routing",
    _draw,
    _gold_sql,
    _solve,
    split=_split,
    split_needs=("issue_id", "product_id"),
)
