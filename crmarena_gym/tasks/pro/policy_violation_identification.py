"""policy_violation_identification: did the agent on a case offer a remedy its issue's article does not allow?

Pinned (PRO.md 3.4, our reading of the B2B golds): each issue has one public issue-resolution article ("Resolving:
<issue>") that lists the remedies agents may offer for it and forbids any other. The agent of a case (its owner)
offers the customer one remedy, in an email on the case or in the case's chat. The gold is that article's Id when
some remedy the agent offered is not on its list, else None. Customers sometimes ask for a remedy themselves
(in their opening email); what they ask for never decides. The generator records each case's offer in
``crmarena_hidden_case_remedy`` (violations at ``ProKnobs.remedy_violation_rate``); Pro's None rate is 0.77.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._conversation import record_held_back

if TYPE_CHECKING:
    import numpy as np

    from crmarena_gym.tasks._oracle import SolverCalls

_TEMPLATES = (
    "Review how the agent handled this case. Did they break any company policy, and if so, which knowledge article?",
    "Check the agent's communication on this case against our policies. Which knowledge article, if any, was violated?",
    "Was anything offered to the customer on this case that our policies do not allow? Name the article broken.",
    "Audit this case: identify the knowledge article whose policy the agent violated, if any.",
    "Did the support agent on this case stay within policy? If not, which article did they go against?",
    "Look at the emails and chat on this case. Which knowledge article did the agent's offer violate, if any?",
    "I need a compliance check on this case: which policy article was broken by the agent, if one was?",
)
_FORMAT = (
    " Return only the Id of the knowledge article, or None if no policy was violated.",
    " Answer with the article's Id alone, or None when the agent followed policy.",
)
_GUIDE = (
    "- Policy: each issue has an issue-resolution knowledge article listing the remedies an agent may offer for "
    "it; offering any other remedy violates that article. Read the case's emails and chat transcripts."
)


def _offers(facts: ProFacts) -> list[tuple[str, str, int]]:
    def build() -> list[tuple[str, str, int]]:
        tables = {r[0] for r in facts.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "crmarena_hidden_case_remedy" not in tables:
            return []
        return facts.conn.execute(
            "SELECT CaseId, ArticleId, allowed FROM crmarena_hidden_case_remedy ORDER BY CaseId"
        ).fetchall()

    return facts.once("policy_violation_identification.offers", build)


def draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    rows = _offers(facts)
    if not rows:
        raise LookupError(
            f"the {facts.kind} org records no remedies offered on cases (generated with latent=False?): "
            "policy_violation_identification needs them"
        )
    pool = [r for r in rows if bool(r[2]) == want_none]
    if not pool:
        return None
    case, article, allowed = pool[int(rng.integers(len(pool)))]
    query = _TEMPLATES[int(rng.integers(len(_TEMPLATES)))] + _FORMAT[int(rng.integers(len(_FORMAT)))]
    required = f"- Case Id to be considered is: {case}\n{_GUIDE}"
    return ProDraw(None if allowed else article, query, required, {"case_id": case})


def gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    """The case's issue article when an agent-written email or the case's chat names a remedy of the vocabulary
    that the article's allowed list lacks."""
    row = conn.execute(
        """WITH art AS (
             SELECT k.Id AS aid FROM "Case" c JOIN Issue__c i ON i.Id = c.IssueId__c
             JOIN Knowledge__kav k ON k.Title = 'Resolving: ' || i.Name AND k.PublishStatus = 'Online'
             WHERE c.Id = :case),
           vocabulary AS (SELECT DISTINCT remedy FROM crmarena_hidden_remedy),
           offered AS (
             SELECT v.remedy FROM vocabulary v
             WHERE EXISTS (SELECT 1 FROM EmailMessage e WHERE e.ParentId = :case
                             AND e.FromAddress IN (SELECT Email FROM User) AND instr(e.TextBody, v.remedy) > 0)
                OR EXISTS (SELECT 1 FROM LiveChatTranscript t WHERE t.CaseId = :case AND instr(t.Body, v.remedy) > 0))
         SELECT aid FROM art
         WHERE EXISTS (SELECT 1 FROM offered o WHERE o.remedy NOT IN
                         (SELECT r.remedy FROM crmarena_hidden_remedy r WHERE r.ArticleId = art.aid))""",
        {"case": params["case_id"]},
    ).fetchone()
    return row[0] if row else None


_ALLOWED = re.compile(r"Remedies agents may offer: (.*?)\. Agents may not")
_LINE = re.compile(r"^\[[^\]]*\] ([^:]+): (.*)$")


def _soql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    case_id = question.params["case_id"]
    case = calls(
        "issue_soql_query",
        query=f"SELECT IssueId__c, OwnerId, Owner.Name, Owner.Email FROM Case WHERE Id = {_soql_string(case_id)}",
    )
    if len(case) != 1:
        calls.contradicted(f"case {case_id} not found")
    issue = calls(
        "issue_soql_query", query=f"SELECT Name FROM Issue__c WHERE Id = {_soql_string(case[0]['IssueId__c'])}"
    )
    articles = calls(
        "issue_soql_query",
        # The current version of each article: a superseded (archived) one may state other remedies.
        query="SELECT Id, Title, FAQ_Answer__c FROM Knowledge__kav WHERE Title LIKE 'Resolving:%' "
        "AND PublishStatus = 'Online'",
    )
    allowed_by_title = {}
    for a in articles:
        match = _ALLOWED.search(a["FAQ_Answer__c"] or "")
        if match:
            allowed_by_title[a["Title"]] = (a["Id"], {r.strip() for r in match.group(1).split(";")})
    title = f"Resolving: {issue[0]['Name']}"
    if title not in allowed_by_title:
        calls.contradicted(f"no issue-resolution article titled {title!r}")
    article, allowed = allowed_by_title[title]
    vocabulary = set().union(*(remedies for _id, remedies in allowed_by_title.values()))
    owner = case[0]["Owner"] or {}
    said: list[str] = []
    mails = calls(
        "issue_soql_query",
        query=f"SELECT FromAddress, TextBody FROM EmailMessage WHERE ParentId = {_soql_string(case_id)}",
    )
    said += [m["TextBody"] or "" for m in mails if m["FromAddress"] == owner.get("Email")]
    chats = calls(
        "issue_soql_query", query=f"SELECT Body FROM LiveChatTranscript WHERE CaseId = {_soql_string(case_id)}"
    )
    for chat in chats:
        for line in (chat["Body"] or "").splitlines():
            match = _LINE.match(line)
            if match and match.group(1) == owner.get("Name"):
                said.append(match.group(2))
    offered = {r for r in vocabulary if any(r in text for text in said)}
    return article if offered - allowed else None


CATEGORY = Category(
    "policy_violation_identification",
    draw,
    gold_sql,
    solve,
    split=record_held_back("case"),
    split_needs=("case_id",),
)
