"""knowledge_qa: a customer asks a question one public knowledge article answers; the answer is a short span.

Pinned (PRO.md 3.2): each question is drawn from one public article's planted fact (the generator's
``crmarena_hidden_article_fact``: article, slot, subject, label, answer); the article states it as the sentence
``<label>: <answer>.``, and the gold is that answer (1-15 words, extractive). Never None. Reward: token F1.

The oracle finds the article with the ``search_knowledge_articles`` task function (the subject as a phrase),
keeps the public article about that subject that states the label, and reads the span after it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._interactive import SLOT_WORDS, Criterion, InteractiveSplit, split_of
from crmarena_gym.tasks._phrasing import pick
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion

if TYPE_CHECKING:
    import numpy as np

    from crmarena_gym.tasks._oracle import SolverCalls

_TEMPLATES = (
    "Tell me the {label} for {subject}, please.",
    "Could you tell me the {label} of {subject}?",
    "Quick question about {subject}: what do you list as the {label}?",
    "I'm looking into {subject}. Can you give me its {label}?",
    "Do you happen to know the {label} for {subject}?",
    "Regarding {subject}, what do you state as the {label}?",
    "Before I decide, I need the {label} of {subject}.",
    "Can you look up the {label} that applies to {subject}?",
)
_POLICY_TEMPLATES = (
    "Under your {subject} policy, what do you give as the {label}?",
    "What does your {subject} policy say about the {label}?",
    "I read about your {subject} policy. Can you tell me the {label}?",
)
_ISSUE_TEMPLATES = (
    "I'm dealing with a {subject} problem. Can you tell me the {label}?",
    "For a {subject} case, what do you list as the {label}?",
    "If I report a {subject}, what can you tell me about the {label}?",
)
_FORMAT = (
    " Answer in a few words.",
    " Keep the answer short.",
    " Just give me the answer, briefly.",
)
REQUIRED = "- Answer the customer's question concisely, using only what the knowledge articles say."


def _public_facts(facts: ProFacts) -> list[tuple[str, str, str, str, str]]:
    def build() -> list[tuple[str, str, str, str, str]]:
        tables = {r[0] for r in facts.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "crmarena_hidden_article_fact" not in tables:
            return []
        rows = facts.conn.execute(
            """SELECT f.ArticleId, a.kind, f.subject, f.label, f.answer
               FROM crmarena_hidden_article_fact f JOIN crmarena_hidden_article a ON a.ArticleId = f.ArticleId
               WHERE a.internal = 0 ORDER BY f.ArticleId, f.slot"""
        ).fetchall()
        # A question names a subject and a label; keep the pairs only one public fact answers.
        seen: dict[tuple[str, str], int] = {}
        for r in rows:
            seen[(r[2], r[3])] = seen.get((r[2], r[3]), 0) + 1
        return [r for r in rows if seen[(r[2], r[3])] == 1]

    return facts.once("knowledge_qa.facts", build)


def draw(facts: ProFacts, rng: np.random.Generator, want_none: bool) -> ProDraw | None:
    if want_none:  # every question has an article that answers it (Pro's None rate here is 0)
        return None
    rows = _public_facts(facts)
    if not rows:
        raise LookupError(
            f"the {facts.kind} org has no public knowledge article facts (generated with latent=False?): "
            "knowledge_qa needs the article bank"
        )
    article, kind, subject, label, answer = rows[int(rng.integers(len(rows)))]
    if kind == "policy":
        templates = _POLICY_TEMPLATES + _TEMPLATES[:3]
    elif kind == "issue":
        templates = _ISSUE_TEMPLATES + _TEMPLATES[:2]
    else:
        templates = _TEMPLATES
    query = templates[int(rng.integers(len(templates)))].format(label=label.lower(), subject=subject)
    query += _FORMAT[int(rng.integers(len(_FORMAT)))]
    params = {"article": article, "subject": subject, "label": label}
    return ProDraw(answer, query, REQUIRED, params)


def gold_sql(conn: sqlite3.Connection, params: Mapping[str, Any]) -> ProAnswer:
    """The span after ``<label>: `` up to the sentence's end in the article's visible body."""
    row = conn.execute(
        """SELECT substr(rest, 1, instr(rest || ' ', '. ') - 1)
           FROM (SELECT substr(FAQ_Answer__c, instr(FAQ_Answer__c, :label || ': ') + length(:label) + 2) AS rest
                 FROM Knowledge__kav
                 WHERE Id = :article AND IsVisibleInPkb = 1 AND instr(FAQ_Answer__c, :label || ': ') > 0)""",
        {"article": params["article"], "label": params["label"]},
    ).fetchone()
    return row[0] if row else None


def _about(title: str, subject: str) -> bool:
    """Whether an article's title is about ``subject`` (a product, a policy or an issue)."""
    return title in (subject, f"About {subject}", f"Resolving: {subject}") or title.startswith(f"{subject}: ")


def solve(calls: SolverCalls, question: ProQuestion) -> ProAnswer:
    subject, label = question.params["subject"], question.params["label"]
    hits = calls("search_knowledge_articles", search_term=f'"{subject}"')
    marker = f"{label}: "
    found = [h for h in hits if _about(h["Title"] or "", subject) and marker in (h["Content"] or "")]
    if len(found) != 1:
        calls.contradicted(f"{len(found)} articles about {subject!r} state {label!r}: {[h['Title'] for h in found]}")
    body = found[0]["Content"]
    rest = body[body.index(marker) + len(marker) :] + " "
    return rest[: rest.index(". ")]


def _split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    """Held back: the question itself. The customer opens with what it is about (the article's subject) and asks
    it when the agent asks what they want to know."""
    p = instance.params
    about = pick(rng, ("I have a question about {s}.", "Can you help me with something about {s}?", "It's about {s}."))
    question = Criterion("question", instance.query, SLOT_WORDS["question"], p["label"])
    return split_of(instance, about.format(s=p["subject"]), (question,))


CATEGORY = Category(
    "knowledge_qa",
    draw,
    gold_sql,
    solve,
    tools=("search_knowledge_articles",),
    split=_split,
    split_needs=("subject", "label"),
)
