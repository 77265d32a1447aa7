"""The reactive oracle answers a knowledge question (KQA) with what the articles it was shown say, never with the gold:
a lost search finds no answer, an article whose sentence states another value gives that value, and a gold set to
mislead changes nothing. Expectations come from the generator's stored facts and the articles' text read by SQL
(the answer's words replaced in it), never from the solver."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.datagen import read_latent
from crmarena_gym.policies import OraclePolicy, ReactiveOraclePolicy
from crmarena_gym.tasks import TaskInstance, generate_tasks
from tests.policies.tampering import play, tampered_env

_REPLACEMENT = "exactly 11 quokkas"


@pytest.fixture(scope="module")
def asked(env_org: Path) -> list[TaskInstance]:
    """Knowledge questions of the environment tests' org, each the generator's stored fact."""
    facts = {(f["question"], f["answer"]) for f in read_latent(env_org)["kqa_facts"]}
    instances = generate_tasks(env_org, seed=2, per_task=6, tasks=["KQA"])
    assert all((i.params["question"], i.answer) in facts for i in instances)
    return instances


def test_gold_set_to_mislead_changes_nothing(env_org: Path, asked: list[TaskInstance]) -> None:
    """The gold is only scored against: the oracles' answer is what the article says (the stored fact's answer)."""
    for instance in asked[:3]:
        fact = str(instance.answer)
        misled = instance.model_copy(update={"answer": _REPLACEMENT})
        for policy in (ReactiveOraclePolicy(), OraclePolicy()):
            env = tampered_env(env_org, misled, "search_knowledge_articles", lambda rows: rows)
            assert play(policy, env) == (fact, 0.0), (type(policy).__name__, instance.idx)


def test_search_lost_gives_no_answer(env_org: Path, asked: list[TaskInstance]) -> None:
    for instance in asked[:3]:
        env = tampered_env(env_org, instance, "search_knowledge_articles", lambda rows: [])
        assert play(ReactiveOraclePolicy(), env) == ("None", 0.0)
        assert env.tampered == 2  # asked once more: a lost result looks empty


def test_article_stating_another_value_gives_that_value(
    env_org: Path, conn: sqlite3.Connection, asked: list[TaskInstance]
) -> None:
    """The fact's article shown with every occurrence of the answer's words replaced (its text read by SQL): the
    reactive oracle answers with the replacement; with the article's text cut to its title, with nothing."""
    for instance in asked[:4]:
        article = instance.params["article_id"]
        (text,) = conn.execute('SELECT "FAQ_Answer__c" FROM "Knowledge__kav" WHERE "Id" = ?', (article,)).fetchone()
        answer = str(instance.answer)
        assert answer in text
        changed = text.replace(answer, _REPLACEMENT)

        def restated(rows: Any, article: str = article, changed: str = changed) -> Any:
            return [{**row, "Content": changed} if row["Id"] == article else row for row in rows]

        env = tampered_env(env_org, instance, "search_knowledge_articles", restated)
        assert play(ReactiveOraclePolicy(), env) == (_REPLACEMENT, 0.0), instance.idx

        def cut(rows: Any) -> Any:
            return [{**row, "Content": row["Title"]} for row in rows]

        env = tampered_env(env_org, instance, "search_knowledge_articles", cut)
        assert play(ReactiveOraclePolicy(), env) == ("None", 0.0), instance.idx
