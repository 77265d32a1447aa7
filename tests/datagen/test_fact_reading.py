"""Reading a knowledge fact's answer off its article's text: every fact a generated org stores reads back as its
stored answer from its article (read by SQL), in every wrapping the task generator gives a question, and as what
the article says instead once its words are changed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from crmarena_gym.datagen import read_fact_answers, read_latent


def test_every_stored_fact_reads_back_from_its_article(env_org: Path) -> None:
    facts = read_latent(env_org)["kqa_facts"]
    connection = sqlite3.connect(f"file:{env_org}?mode=ro", uri=True)
    try:
        texts = dict(connection.execute('SELECT "Id", "FAQ_Answer__c" FROM "Knowledge__kav"'))
    finally:
        connection.close()
    assert len(facts) > 100
    care = 0
    for fact in facts:
        article, question, answer = texts[fact["article_id"]], fact["question"], fact["answer"]
        assert read_fact_answers(f"A customer asks: {question} Please keep it short.", article) == (answer,), fact
        # Another value where the answer stands is read as that value; a question no fact asks reads nothing.
        assert read_fact_answers(question, article.replace(answer, "about 99 lemurs")) == ("about 99 lemurs",), fact
        assert read_fact_answers("What is the meaning of life?", article) == ()
        care += question.startswith("How long is the warranty on the ")
    assert care > 0  # the care sections' per-org facts are among them
