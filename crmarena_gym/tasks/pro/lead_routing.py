"""lead_routing: the agent a new lead goes to under the territory-based lead routing policy.

Pinned (PRO.md 3.3): the lead's region (a state code) must appear as an exact token of exactly one territory's
Description (comma-separated states); the candidates are that territory's agents (UserTerritory2Association);
rule 1: most quotes with Status 'Accepted' (an agent's quotes are those of the opportunities they own,
Quote.OpportunityId -> Opportunity.OwnerId); rule 2, among those tied: fewest leads they own that are not
converted (IsConverted false). Counts run over all time; the winner is unique (never None). Most questions give
the region as ``## Lead's region: XX``; a share gives a Lead Id instead, whose State the agent must read.
"""

from __future__ import annotations

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
from crmarena_gym.tasks.pro._conversation import id_criterion, opening, without_lines

_POLICY = (
    "- Lead routing policy: find the territory whose description lists the lead's region (a state code). Among "
    "the agents assigned to that territory, the lead goes to the one whose opportunities have the most quotes "
    "with status Accepted; if several are tied, to the one among them who owns the fewest leads that have not "
    "been converted. Count over all time."
)
_REGION_TEMPLATES = (
    "A new lead has come in. Following the lead routing policy, which agent should it be assigned to?",
    "Which sales agent should receive this new lead under our lead routing policy?",
    "Route the new lead according to the lead routing policy: who should own it?",
    "Who is the right agent for a new lead from this region, per the routing policy?",
    "Following our routing rules, to which agent should the incoming lead go?",
    "Determine the agent a fresh lead from the given region should be routed to.",
)
_LEAD_TEMPLATES = (
    "Following the lead routing policy, which agent should lead {lead} be assigned to?",
    "Which agent should own lead {lead} according to the lead routing policy?",
    "Route lead {lead} by the routing policy: who should get it?",
    "Per our lead routing rules, determine the right agent for lead {lead}.",
)
_ANSWER = "Return only the Id of the agent."
_LEAD_SHARE = 0.3
_CAP = 0.15


class _Territories:
    """The territories' states and members, and each agent's accepted quotes and unconverted leads."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        holders: dict[str, list[str]] = {}
        for territory, description in conn.execute("SELECT Id, Description FROM Territory2 ORDER BY Id"):
            for token in (description or "").split(","):
                holders.setdefault(token.strip(), []).append(territory)
        self.states = sorted(state for state, owners in holders.items() if state and len(owners) == 1)
        self.territory_of = {state: holders[state][0] for state in self.states}
        self.members: dict[str, list[str]] = {}
        for user, territory in conn.execute("SELECT UserId, Territory2Id FROM UserTerritory2Association ORDER BY Id"):
            self.members.setdefault(territory, []).append(user)
        self.accepted = Counter(
            owner
            for (owner,) in conn.execute(
                "SELECT o.OwnerId FROM Quote q JOIN Opportunity o ON o.Id = q.OpportunityId WHERE q.Status = 'Accepted'"
            )
        )
        self.open_leads = Counter(owner for (owner,) in conn.execute("SELECT OwnerId FROM Lead WHERE IsConverted = 0"))
        self.leads = conn.execute("SELECT Id, State FROM Lead WHERE State IS NOT NULL ORDER BY Id").fetchall()

    def route(self, state: str) -> tuple[str, int] | None:
        members = sorted(set(self.members.get(self.territory_of.get(state, ""), [])))
        if len(members) < 2:
            return None
        top = max(self.accepted[m] for m in members)
        tied = [m for m in members if self.accepted[m] == top]
        if len(tied) == 1:
            return tied[0], 1
        fewest = min(self.open_leads[m] for m in tied)
        tied = [m for m in tied if self.open_leads[m] == fewest]
        return (tied[0], 2) if len(tied) == 1 else None


def _attempt(org: _Territories, rng: np.random.Generator) -> tuple[Any, ...] | None:
    lead = None
    if org.leads and rng.random() < _LEAD_SHARE:
        lead, state = org.leads[int(rng.integers(len(org.leads)))]
    elif org.states:
        state = org.states[int(rng.integers(len(org.states)))]
    else:
        return None
    routed = org.route(state)
    return None if routed is None else (routed[0], routed[1], state, lead)


def _draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    if want_none:
        return None  # Pro never asks an unanswerable routing question (None rate 0)
    org = facts.once("lead_routing", lambda: _Territories(facts.conn))
    found = _attempt(org, rng)
    if found is None:
        return None
    answer, rule, state, lead = found
    shares = gold_shares(facts, "lead_routing", lambda r: (_attempt(org, r) or (None,))[0], 1000)
    if not thin(rng, shares, answer, _CAP):
        return None  # a representative in several territories would otherwise answer a third of the questions
    params: dict[str, Any] = {"region": state, "decided_by_rule": rule}
    if lead is None:
        query = pick(rng, _REGION_TEMPLATES)
        required = f"## Lead's region: {state}\n{_POLICY}"
    else:
        query = pick(rng, _LEAD_TEMPLATES).format(lead=lead)
        required = f"- Lead Id to be routed is: {lead}\n{_POLICY}"
        params["lead_id"] = lead
    return ProDraw(answer, f"{query} {_ANSWER}", required, params)


def _gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    rows = conn.execute(
        """
        WITH territory AS (
            SELECT Id FROM Territory2
            WHERE instr(',' || replace(Description, ' ', '') || ',', ',' || :region || ',') > 0
        ),
        members AS (
            SELECT DISTINCT UserId AS agent FROM UserTerritory2Association
            WHERE Territory2Id = (SELECT Id FROM territory) AND (SELECT COUNT(*) FROM territory) = 1
        )
        SELECT m.agent,
               (SELECT COUNT(*) FROM Quote q JOIN Opportunity o ON o.Id = q.OpportunityId
                  WHERE o.OwnerId = m.agent AND q.Status = 'Accepted') AS accepted,
               (SELECT COUNT(*) FROM Lead l WHERE l.OwnerId = m.agent AND l.IsConverted = 0) AS open_leads
        FROM members m
        ORDER BY accepted DESC, open_leads ASC
        """,
        {"region": params["region"]},
    ).fetchall()
    if not rows:
        return None
    first = rows[0][1:]
    best = sorted(agent for agent, *key in rows if tuple(key) == first)
    return best[0] if len(best) == 1 else tuple(best)


def _solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    p = question.params
    if "lead_id" in p:
        lead_id = str(p["lead_id"]).replace("'", "")
        leads = calls("issue_soql_query", query=f"SELECT State FROM Lead WHERE Id = '{lead_id}'")
        region = leads[0]["State"] if leads else None
    else:
        region = p["region"]
    territories = calls("issue_soql_query", query="SELECT Id, Description FROM Territory2")
    matched = [t["Id"] for t in territories if region in [s.strip() for s in (t["Description"] or "").split(",")]]
    if len(matched) != 1:
        calls.contradicted(f"region {region!r} is in {len(matched)} territories")
        return None
    members = calls(
        "issue_soql_query", query=f"SELECT UserId FROM UserTerritory2Association WHERE Territory2Id = '{matched[0]}'"
    )
    tied = sorted({row["UserId"] for row in members})
    if not tied:
        return None
    ids = ", ".join(f"'{agent}'" for agent in tied)
    steps = (
        f"SELECT Opportunity.OwnerId owner, COUNT(Id) n FROM Quote WHERE Status = 'Accepted' AND "
        f"Opportunity.OwnerId IN ({ids}) GROUP BY Opportunity.OwnerId",
        f"SELECT OwnerId owner, COUNT(Id) n FROM Lead WHERE IsConverted = false AND OwnerId IN ({ids}) "
        "GROUP BY OwnerId",
    )
    for step, query in enumerate(steps):
        counts = {row["owner"]: int(row["n"]) for row in calls("issue_soql_query", query=query)}
        target = (max if step == 0 else min)(counts.get(agent, 0) for agent in tied)
        tied = [agent for agent in tied if counts.get(agent, 0) == target]
        if len(tied) == 1:
            return tied[0]
    return None


_GOALS = (
    "A new lead came in. Which agent should get it under the lead routing policy?",
    "Who should a new lead be routed to, by our lead routing policy?",
    "Can you route a new lead for me according to the routing policy?",
)


def _split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    """Held back: the lead's region, or the lead itself when the question names one (its line leaves the
    context)."""
    p = instance.params
    if p.get("lead_id"):
        criterion = id_criterion(rng, "lead", "lead", p["lead_id"])
        held = p["lead_id"]
    else:
        said = pick(rng, ("The lead's region is {r}.", "It's a lead from {r}.", "Region {r}."))
        criterion = Criterion("region", said.format(r=p["region"]), SLOT_WORDS["region"], p["region"])
        held = f"Lead's region: {p['region']}"
    required = without_lines(instance.metadata.required, held)
    return split_of(instance, opening(rng, _GOALS, instance.query, (_ANSWER,)), (criterion,), required=required)


CATEGORY = Category(
    "lead_routing",
    _draw,
    _gold_sql,
    _solve,
    split=_split,
    split_needs=("region",),
)
