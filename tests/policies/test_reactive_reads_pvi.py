"""The reactive oracle judges a policy violation (PVI) from what it reads, never from the hidden article and evidence:
a lost conversation shows no breach, a lost or reworded article states no rule, and an article list that puts the
rule in another article names that one. Expectations come from plain SQL over the org (the case's chat and email
rows, the articles' text) and the generator's latent labels, never from the solver."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.datagen import read_latent
from crmarena_gym.policies import OraclePolicy, ReactiveOraclePolicy
from crmarena_gym.tasks import TaskInstance, generate_tasks
from tests.policies.tampering import play, tampered_env


@pytest.fixture(scope="module")
def violated(env_org: Path) -> list[TaskInstance]:
    """Violation cases of the environment tests' org, with the latent label they were drawn from."""
    latent = read_latent(env_org)["violations"]
    instances = [i for i in generate_tasks(env_org, seed=2, per_task=12, tasks=["PVI"]) if i.answer]
    assert all(latent[i.params["case_id"]]["article_id"] == i.answer for i in instances)
    return instances


def _medium(env_org: Path, instance: TaskInstance) -> str:
    """The function whose result holds the breaking reply: the chat's or the emails' (the generator's label)."""
    medium = read_latent(env_org)["violations"][instance.params["case_id"]]["medium"]
    return "get_livechat_transcript_by_case_id" if medium == "chat" else "get_email_messages_by_case_id"


def test_hidden_article_and_evidence_are_not_what_it_reads(env_org: Path, violated: list[TaskInstance]) -> None:
    """Hidden values that say "no violation" (and name no article to search for) leave both oracles at the gold: they
    judge from what they read."""
    for instance in violated[:3]:
        hidden = {"article_id": None, "evidence": None, "search_term": "Zzyzx"}
        misled = instance.model_copy(update={"params": {**instance.params, **hidden}})
        for policy in (ReactiveOraclePolicy(), OraclePolicy()):
            env = tampered_env(env_org, misled, "search_knowledge_articles", lambda rows: rows)
            assert play(policy, env) == (instance.answer, 1.0), (type(policy).__name__, instance.idx)


def test_conversation_lost_shows_no_violation(env_org: Path, violated: list[TaskInstance]) -> None:
    for instance in violated[:3]:
        env = tampered_env(env_org, instance, _medium(env_org, instance), lambda rows: [])
        assert play(ReactiveOraclePolicy(), env) == ("None", 0.0), instance.idx
        assert env.tampered == 2  # asked once more: a lost result looks empty
        lost = tampered_env(env_org, instance, _medium(env_org, instance), lambda rows: [])
        assert play(OraclePolicy(), lost) == (instance.answer, 1.0)  # replays the environment's own results


def test_article_text_lost_or_moved_decides_what_it_names(
    env_org: Path, conn: sqlite3.Connection, violated: list[TaskInstance]
) -> None:
    """The search's hits with their text cut to the title: no article states the rule, no article named. The violated
    article's text moved onto another hit (the texts swapped): that hit is named."""
    checked = 0
    for instance in violated[:4]:
        article = instance.answer
        (text,) = conn.execute('SELECT "FAQ_Answer__c" FROM "Knowledge__kav" WHERE "Id" = ?', (article,)).fetchone()

        def cut(rows: Any) -> Any:
            return [{**row, "Content": row["Title"]} for row in rows]

        assert play(ReactiveOraclePolicy(), tampered_env(env_org, instance, "search_knowledge_articles", cut)) == (
            "None",
            0.0,
        )
        # Another online article (SQL) shown among the hits with the violated article's text, which loses it.
        other = conn.execute(
            'SELECT "Id", "Title", "FAQ_Answer__c" FROM "Knowledge__kav" WHERE "Id" != ? AND "PublishStatus" = '
            "'Online' ORDER BY \"Id\" LIMIT 1",
            (article,),
        ).fetchone()

        def moved(rows: Any, other: tuple[str, str, str] = other, text: str = text, article: str = article) -> Any:
            kept = [{**row, "Content": other[2]} if row["Id"] == article else row for row in rows]
            return [*kept, {"Id": other[0], "Title": other[1], "Content": text}]

        env = tampered_env(env_org, instance, "search_knowledge_articles", moved)
        assert play(ReactiveOraclePolicy(), env) == (other[0], 0.0), instance.idx
        checked += 1
    assert checked >= 3
