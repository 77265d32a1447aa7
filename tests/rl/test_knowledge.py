"""The knowledge tasks' candidates (PVI, KQA): text pieces worked by hand, slots and features in the environment."""

from __future__ import annotations

import itertools
import json
import math
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crmarena_gym.rl import (
    PHRASE_FEATURES,
    PHRASE_TRAITS,
    QUESTION_KINDS,
    SPAN_WEIGHTS,
    CandidateActionWrapper,
    CandidateState,
    KnowledgeSlots,
    QuestionFacts,
    SlotFeatures,
    Span,
    StepRecord,
    ToolPipelineCandidates,
    agent_lines,
    answer_spans,
    best_reply,
    make_discrete_env,
    number_relation,
    phrase_traits,
    question_kind,
    question_text,
    search_terms,
    sentences,
    span_consensus,
    stable_hash,
)
from crmarena_gym.rl._features import SCALARS
from crmarena_gym.tasks import TaskInstance, generate_tasks, token_f1

# -- text pieces, worked by hand ------------------------------------------------------------------


def test_sentences_keep_abbreviations_and_drop_list_numbers() -> None:
    body = "Intro line.\n\nPolicy rules:\n1. Order by 2 p.m. Eastern, e.g. today. Ships fast!\n2. No returns."
    assert sentences(body) == [
        "Intro line.",
        "Policy rules:",
        "Order by 2 p.m. Eastern, e.g. today.",
        "Ships fast!",
        "No returns.",
    ]


def test_question_text_and_search_terms() -> None:
    text = "A customer asks: How long is a password reset link valid?\n- Answer briefly, using what the articles say."
    assert question_text(text) == "How long is a password reset link valid?"  # the lead-in "A customer asks:" cut
    assert question_text("Can you check the knowledge base? Do gift cards expire?") == "Do gift cards expire?"
    # Function words ("how", "is", "a") are left out.
    assert search_terms(question_text(text)) == "long password reset link valid"
    assert search_terms("Answer briefly, using what the knowledge articles say.") == ""  # the context's words
    assert search_terms("no question mark here") == "question mark"  # "no", "here": function words
    chat = "[2023-12-15T11:24:06] Ann (Customer): Order 801Ws000001mMbFIAU came 3 days late, late!"
    assert search_terms(chat, numbers=False) == "ann customer order came days late"
    assert search_terms(chat, 2, numbers=False) == "ann customer"


def _hand_score(
    overlap: float, whole: bool, share: float, beside: bool, words: int, bare: bool, digit: bool, unit: bool
) -> float:
    w = SPAN_WEIGHTS
    return round(
        overlap
        + w["whole"] * whole
        + w["new"] * (1 - share)
        + w["beside"] * beside
        - w["long"] * max(words - 4, 0)
        - w["bare_word"] * bare
        + w["quantity"] * digit  # the question asks "how many"
        + w["unit"] * unit,  # a number and the question word after it ("10 days")
        6,
    )


def test_answer_spans_worked_by_hand() -> None:
    """Question words (stemmed): within, day, delivery, wrong, item, report. The second sentence holds all six
    (overlap 1); the first holds wrong and item, each in both sentences (weight ln(1 + 2/3)), against four words
    in one sentence (weight ln 2): overlap 2 ln(5/3) / (2 ln(5/3) + 4 ln 2)."""
    body = "Wrong items are rare. A wrong item must be reported within 10 days of delivery."
    spans = answer_spans("Within how many days of delivery must a wrong item be reported?", [body])
    low = 2 * math.log(5 / 3) / (2 * math.log(5 / 3) + 4 * math.log(2))
    expected = [  # text, overlap, whole run, share of question words, beside one, words, bare word, digit, unit
        ("10 days", 1.0, True, 0.5, True, 2, False, True, True),
        ("within 10 days", 1.0, True, 2 / 3, True, 3, False, True, True),
        ("10", 1.0, True, 0.0, True, 1, False, True, False),
        ("within 10", 1.0, True, 0.5, True, 2, False, True, False),
        ("10 days of delivery", 1.0, False, 2 / 3, True, 4, False, True, False),
        ("items are rare", low, True, 0.5, True, 3, False, False, False),  # the question word across "are"
        ("rare", low, True, 0.0, True, 1, True, False, False),
        ("are rare", low, True, 0.0, True, 2, True, False, False),
    ]
    assert [(s.text, s.score) for s in spans] == [(e[0], _hand_score(*e[1:])) for e in expected]
    assert [s.article for s in spans] == [0] * 8
    assert spans[3].sentence == "A wrong item must be reported within 10 days of delivery."
    question = "Within how many days of delivery must a wrong item be reported?"
    assert answer_spans(question, [body], limit=2) == spans[:2]
    assert answer_spans("What?", [body]) == []  # no content word to look for


def test_answer_spans_reach_clauses_and_whole_runs() -> None:
    body = "The correct item ships as soon as the carrier scans the returned wrong item, never before."
    question = "When does the correct item ship after a wrong item is sent?"
    texts = [s.text for s in answer_spans(question, [body], limit=99)]
    assert "as soon as the carrier scans the returned wrong item" in texts  # a clause, its question words cut
    body = "Phone support is open on weekdays. We accept Visa, Mastercard, American Express and Discover cards."
    spans = answer_spans("Which card networks does the store accept?", [body], limit=30)
    assert "Visa, Mastercard, American Express and Discover" in [s.text for s in spans]  # a whole run, commas kept


def _span(text: str, sentence: str = "", score: float = 1.0, **fields: Any) -> Span:
    values: dict[str, Any] = {
        "article": 0,
        "sentence_overlap": 1.0,
        "question_share": 0.0,
        "next_to_question": False,
        "whole": False,
        "unit": False,
        "named": False,
    }
    values.update(fields)
    start = sentence.find(text)
    return Span(text, sentence, words=len(text.split()), score=score, start=max(start, 0), **values)


def test_question_kinds_and_phrase_traits_worked_by_hand() -> None:
    kinds = [
        question_kind(q)
        for q in (
            "After how long should a cycling helmet be replaced?",
            "Within how many days can items be returned?",
            "How much does express shipping cost?",
            "How should wet golf gloves be dried?",
            "Which shoes help runners who overpronate?",
            "Can gift cards be redeemed for cash?",
        )
    ]
    assert kinds == ["how_long", "how_many", "how_much", "how", "which", "yes_no"]
    assert set(kinds) <= set(QUESTION_KINDS)
    # Question words (stemmed content words): after, long, cycl, helmet, replac. "every five years": a number
    # (five), three words, first a function word that is a cue (every), last another word (years); before it
    # a question word (helmet), after it a comma, then "or" (a function word and a cue).
    sentence = "Replace a cycling helmet every five years, or after any crash."
    span = _span("every five years", sentence, next_to_question=True)
    expected = {
        "number",
        "words_3",
        "beside",
        "first_article",
        "punctuation_after",
        "first_function",
        "first=every",
        "last_other",
        "before_asked",
        "after_function",
        "after=or",
    }
    assert phrase_traits("After how long should a cycling helmet be replaced?", span) == expected
    # "$14.95": a number with its money sign that ends the sentence; "costs" is not a question word here.
    span = _span("$14.95", "Express shipping costs $14.95", article=1, whole=True)
    assert phrase_traits("How much is express?", span) == {
        "number",
        "starts_with_number",
        "money",
        "words_2",  # 14 and 95
        "whole",
        "sentence_end",
        "first_number",
        "last_number",
        "before_other",
    }
    assert set(PHRASE_FEATURES) == {f"question_{k}" for k in QUESTION_KINDS} | set(PHRASE_TRAITS)
    assert len(set(PHRASE_FEATURES)) == len(PHRASE_FEATURES)


def test_span_consensus_worked_by_hand() -> None:
    """Temperature 1, scores 1, 1, 0: weights e, e, 1. Token F1: "24 hours" and "24 hours to recover" share 2
    of 2 and 4 words (2*2/6), "24 hours to recover" and "recover" 1 of 4 and 1 (2/5), the others none."""
    spans = [_span("24 hours"), _span("24 hours to recover"), _span("recover", score=0.0)]
    e = math.e
    agreed = [e * 1 + e * 2 / 3, e * 2 / 3 + e * 1 + 2 / 5, e * 2 / 5 + 1]
    expected = [a / max(agreed) for a in agreed]
    assert span_consensus(spans, temperature=1.0) == pytest.approx(expected)
    assert span_consensus(spans, temperature=1.0)[1] == 1.0  # the common core of the well-scored phrases
    assert span_consensus([]) == []
    with pytest.raises(ValueError, match="temperature must be positive, got 0"):
        span_consensus(spans, temperature=0)


def test_agent_lines_of_chats_and_email_threads() -> None:
    chat = [
        {
            "Body": "[2023-01-01T10:00:00] Ann Lee (Customer): Can I cancel?\n"
            "[2023-01-01T10:01:00] Bo Ng (Agent): Hello Ann.\n[2023-01-01T10:02:00] Bo Ng (Agent): It's done.",
            "EndTime": "2023-01-01T10:03:00.000+0000",
        }
    ]
    assert agent_lines(chat) == ["Hello Ann.", "It's done."]
    mails = [
        {"TextBody": "Hello,\n\nWhere is it?\n\nAnn", "FromAddress": "ann@x.com"},
        {"TextBody": "Dear Ann,\n\nIt ships today.\n\nBo", "FromAddress": "bo@shop.com"},
        {"TextBody": "Thanks!", "FromAddress": "ann@x.com"},
    ]
    assert agent_lines(mails) == ["Dear Ann,", "It ships today.", "Bo"]
    assert agent_lines("not a list") == []


def test_best_reply_weighs_rare_words_and_numbers_compare() -> None:
    rules = "1. Defects reported within 90 days qualify for a refund.\n2. A claim needs a photo of the defect."
    corpus = [*sentences(rules), "Thanks for your order.", "Track your order online.", "Your order ships soon."]
    lines = ["Thanks, I found your order.", "No need to send a photo, I've approved your claim.", "Bye."]
    line, sentence, share = best_reply(lines, rules, corpus)
    assert (line, sentence) == (lines[1], "A claim needs a photo of the defect.")
    # Shared words: photo, claim, need (each in one of the five sentences: weight ln(1 + 5/2)); the line's other
    # words, send, approved and ve ("I've"), are in none (weight ln(1 + 5/1)).
    assert share == pytest.approx(3 * math.log(3.5) / (3 * math.log(3.5) + 3 * math.log(6)))
    assert best_reply([], rules, corpus) == ("", "", 0.0)
    assert number_relation("You reported it 97 days after delivery.", sentence) == (False, False)  # rule: none
    assert number_relation("You reported it 97 days after delivery.", "within 90 days") == (True, False)
    assert number_relation("It came after 30 days.", "within 90 days") == (False, True)


# -- slots and features in the environment --------------------------------------------------------


@pytest.fixture(scope="module")
def knowledge_tasks(env_org: Path) -> list[TaskInstance]:
    return generate_tasks(env_org, seed=5, per_task=6, tasks=["PVI", "KQA"])


@pytest.fixture(scope="module")
def knowledge_env(env_org: Path, knowledge_tasks: list[TaskInstance]) -> CandidateActionWrapper:
    return make_discrete_env(org=env_org, tasks=knowledge_tasks)


def _step(env: CandidateActionWrapper, name: str) -> tuple[dict[str, np.ndarray], float, bool, dict[str, Any]]:
    slot = env.generator.slot_names.index(name)
    assert env.slots[slot] is not None, (name, [s for s in env.slots if s])
    obs, reward, terminated, _truncated, info = env.step(slot)
    assert "error" not in info
    return obs, float(reward), terminated, info


def test_knowledge_slots_are_offered_only_for_knowledge_questions(
    knowledge_env: CandidateActionWrapper, env_org: Path, env_tasks: list[TaskInstance]
) -> None:
    names = knowledge_env.generator.slot_names
    first = names.index("search_question")
    assert names[first:] == KnowledgeSlots().names  # appended after every other slot
    other = make_discrete_env(org=env_org, tasks=env_tasks)
    for inst in env_tasks[:: len(env_tasks) // 5]:
        _obs, info = other.reset(options={"task_id": inst.idx})
        assert info["candidates"][first:] == [""] * len(names[first:])
    for inst in knowledge_env.unwrapped.instances:
        _obs, info = knowledge_env.reset(options={"task_id": inst.idx})
        terms = search_terms(question_text(knowledge_env.state.facts.text), 30)
        expected = f'execute search_knowledge_articles({{"search_term": "{terms}"}})'
        assert info["candidates"][first] == expected
        assert set(terms.split()) <= set(re.findall(r"[^\W_]+", knowledge_env.state.facts.text.lower()))
        assert info["candidates"][first + 1 :] == [""] * (len(names) - first - 1)  # nothing seen or found yet


def _conversation(con: sqlite3.Connection, case_id: str) -> str:
    rows = con.execute('SELECT "Body" FROM "LiveChatTranscript" WHERE "CaseId" = ?', (case_id,)).fetchall()
    rows += con.execute('SELECT "Subject", "TextBody" FROM "EmailMessage" WHERE "ParentId" = ?', (case_id,)).fetchall()
    return " ".join(text for row in rows for text in row if text)


def test_policy_violation_is_reached_through_the_conversation(
    knowledge_env: CandidateActionWrapper, knowledge_tasks: list[TaskInstance], env_org: Path
) -> None:
    """Read the chat and the emails, search with their words, submit an article found (or None): some article slot
    is the gold whenever a policy was broken, and the reply that broke it is what the gold's reply words say."""
    con = sqlite3.connect(env_org)
    names = knowledge_env.generator.slot_names
    featurizer = knowledge_env.featurizer
    assert isinstance(featurizer, SlotFeatures)
    violated = 0
    for inst in (i for i in knowledge_tasks if i.abbrev == "PVI"):
        knowledge_env.reset(options={"task_id": inst.idx})
        _step(knowledge_env, "chat_transcripts")
        obs, _r, _t, info = _step(knowledge_env, "emails")
        offered = info["candidates"][names.index("search_conversation")]
        term = json.loads(offered.split("(", 1)[1][:-1])["search_term"]
        said = set(search_terms(_conversation(con, inst.params["case_id"]), 1000, numbers=False).split())
        assert term.split() and set(term.split()) <= said  # the conversation's words, nothing else
        obs, _r, _t, info = _step(knowledge_env, "search_conversation")
        found = [r["Id"] for r in knowledge_env.state.history[-1].result]
        # Phrases answer a question: none come from the articles found for the conversation.
        assert not any(text for name, text in zip(names, info["candidates"], strict=True) if "span" in name)
        article_slots = [names.index(f"submit_article_{k}") for k in range(5)]
        assert [info["candidates"][s] for s in article_slots] == [f"submit {i}" for i in found[:5]] + [""] * max(
            0, 5 - len(found)
        )
        if inst.answer is None:
            _obs, reward, terminated, _info = _step(knowledge_env, "submit_none")
            assert terminated and reward == 1.0
            continue
        violated += 1
        assert inst.answer in found[:5]
        slot = article_slots[found.index(inst.answer)]
        evidence = inst.params["evidence"]
        grams = [w.lower() for w in re.findall(r"[^\W_]+", evidence)]
        expected = np.zeros(featurizer.reply_buckets, dtype=np.float32)
        for gram in [*grams, *(f"{a} {b}" for a, b in itertools.pairwise(grams))]:
            expected[stable_hash(gram) % featurizer.reply_buckets] = 1.0
        row = obs["action_features"][slot]
        np.testing.assert_array_equal(row[featurizer.reply_offset : featurizer.own_offset], expected)
        rule_overlap = row[featurizer.scalar_offset + SCALARS.index("reply_rule_overlap")]
        assert 0.0 < rule_overlap <= 1.0
        _obs, reward, terminated, _truncated, _info = knowledge_env.step(slot)
        assert terminated and reward == 1.0
    assert violated >= 1


def test_knowledge_answers_are_phrases_of_the_articles_found(
    knowledge_env: CandidateActionWrapper, knowledge_tasks: list[TaskInstance]
) -> None:
    names = knowledge_env.generator.slot_names
    span_slots = [i for i, n in enumerate(names) if n.startswith("submit_span_")]
    featurizer = knowledge_env.featurizer
    best = []
    for inst in (i for i in knowledge_tasks if i.abbrev == "KQA"):
        knowledge_env.reset(options={"task_id": inst.idx})
        obs, _r, _t, info = _step(knowledge_env, "search_question")
        articles = knowledge_env.state.history[-1].result
        phrases = [info["candidates"][s][len("submit ") :] for s in span_slots if info["candidates"][s]]
        assert phrases and all(any(p in a["Content"] for a in articles[:3]) for p in phrases)
        spans = answer_spans(question_text(knowledge_env.state.facts.text), [a["Content"] for a in articles[:3]])
        assert phrases == [s.text for s in spans]
        words = obs["action_features"][span_slots[0], featurizer.scalar_offset + SCALARS.index("span_words")]
        assert words == pytest.approx(min(spans[0].words, 12) / 12)
        # Each phrase's row: the question's kind, its traits, its agreement with the others.
        question = question_text(knowledge_env.state.facts.text)
        consensus = span_consensus(spans)
        for k, span in enumerate(spans):
            row = obs["action_features"][span_slots[k]]
            held = {f"question_{question_kind(question)}", *phrase_traits(question, span)}
            assert {name for name, x in zip(PHRASE_FEATURES, row[featurizer.phrase_offset :], strict=True) if x} == held
            assert row[featurizer.scalar_offset + SCALARS.index("span_consensus")] == pytest.approx(consensus[k])
        best.append(max(token_f1(p, inst.answer) for p in phrases))
    assert np.mean(best) >= 0.7  # bench_candidates.py measures it on 30 held-out instances


def test_swapping_the_knowledge_slots_out(env_org: Path, knowledge_tasks: list[TaskInstance]) -> None:
    plain = ToolPipelineCandidates(extras=())
    env = make_discrete_env(org=env_org, tasks=knowledge_tasks, generator=plain)
    assert env.action_space.n == plain.num_slots
    assert "search_question" not in plain.slot_names
    small = ToolPipelineCandidates(extras=(KnowledgeSlots(articles=2, spans=3),))
    assert small.num_slots == plain.num_slots + 2 + 2 + 3
    with pytest.raises(TypeError, match="slot group"):
        ToolPipelineCandidates(extras=(object(),))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="spans"):
        KnowledgeSlots(spans=0)


def test_number_features_of_an_article_reply() -> None:
    text = "Did the agent break a policy? Return the Id of the knowledge article."
    state = CandidateState(QuestionFacts("PVI", text))
    mails = [
        {"Subject": "Late", "TextBody": "Hi,\n\nMy parcel is 2 business days late.", "FromAddress": "c@x.com"},
        {"Subject": "Re: Late", "TextBody": "Dear C,\n\nIt is only 2 business days late, but I've refunded the "
         "shipping fee anyway.", "FromAddress": "a@shop.com"},
    ]  # fmt: skip
    article = {"Id": "ka01", "Title": "Delays", "Content": "Fees are refunded if an order is more than 3 business "
               "days late.\nTrack parcels online."}  # fmt: skip
    state.history += [
        StepRecord("e", "get_email_messages_by_case_id", mails, True, ""),
        StepRecord("s", "search_knowledge_articles", [article], True, ""),
    ]
    gen = ToolPipelineCandidates()
    slots, sources = gen.slots(state), gen.slot_sources(state)
    featurizer = SlotFeatures(gen.num_slots)
    x = featurizer.features(state, slots, sources)
    row = x[gen.slot_names.index("submit_article_0")]
    scalar = {name: row[featurizer.scalar_offset + i] for i, name in enumerate(SCALARS)}
    assert slots[gen.slot_names.index("submit_article_0")] == "submit ka01"
    # The agent's line "It is only 2 business days late, ..." meets the first rule; 2 is within 3.
    assert (scalar["reply_number_above_rule"], scalar["reply_number_within_rule"]) == (0.0, 1.0)
    assert scalar["knowledge_rank"] == 0.0 and 0.0 < scalar["reply_rule_overlap"] <= 1.0
    # The agent's own words: those of its line that the rule sentence does not use.
    own = np.zeros(featurizer.own_buckets, dtype=np.float32)
    for word in ("it", "only", "2", "but", "i", "ve", "the", "shipping", "fee", "anyway"):
        own[stable_hash(word) % featurizer.own_buckets] = 1.0
    np.testing.assert_array_equal(row[featurizer.own_offset : featurizer.phrase_offset], own)
    assert not row[featurizer.phrase_offset :].any()  # an article is not a phrase
    search = x[gen.slot_names.index("search_conversation")]
    assert search[featurizer.scalar_offset + SCALARS.index("search_of_conversation")] == 1.0
