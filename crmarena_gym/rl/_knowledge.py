"""Candidate slots for the knowledge tasks: searches built from what was seen, answers taken from what was found.

PVI (did the agent on a case break a policy, and which article states it) and KQA (answer a question
from the knowledge articles) need a search term and an answer that no question fact gives: the term
is in the question's own words or in the case's conversation, and the answer is an article's Id or a
phrase of an article. :class:`KnowledgeSlots` offers them, from what the agent has seen so far and
nothing else (the gold article, the offending sentence and the article title the generator keeps
beside the question are never read). They are offered when the question or its context speaks of the
knowledge base (the word "knowledge": PVI and KQA questions do, in the original benchmark and in
generated instances; the other seven tasks' do not), so that the other tasks keep their candidates:

- ``search_question``: ``search_knowledge_articles`` with the question's content words
  (:func:`~crmarena_gym.rl.search_terms` of :func:`~crmarena_gym.rl.question_text`);
- ``search_conversation``: ``search_knowledge_articles`` with the content words of the chat
  transcripts and emails fetched so far (offered once one was fetched);
- ``submit_article_0`` ...: ``submit <Id>`` of each article of the latest search, in its order;
- ``submit_span_0`` ...: ``submit <phrase>`` of the phrases of the latest search's first articles that
  may answer the question (:func:`~crmarena_gym.rl.answer_spans`), best first, when that search was made
  with the question's words.

:func:`knowledge_view` gathers what these slots and their features (:class:`~crmarena_gym.rl.SlotFeatures`)
read from a state: the question, the conversation, the agent's lines, the latest articles, the phrases.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from crmarena_gym.rl._candidates import CandidateState, call_text
from crmarena_gym.rl._checks import require_positive_ints
from crmarena_gym.rl._spans import (
    Span,
    agent_lines,
    answer_spans,
    question_text,
    search_terms,
    sentences,
    word_list,
)

__all__ = [
    "CONVERSATION_FUNCTIONS",
    "SEARCH_FUNCTION",
    "KnowledgeSlots",
    "KnowledgeView",
    "knowledge_view",
    "search_term_of",
]

#: The functions whose results are a case's conversation (chat transcripts, emails).
CONVERSATION_FUNCTIONS = ("get_livechat_transcript_by_case_id", "get_email_messages_by_case_id")
#: The knowledge search.
SEARCH_FUNCTION = "search_knowledge_articles"


@dataclass(frozen=True)
class KnowledgeView:
    """What the knowledge slots and features read from a state.

    Attributes:
        question: The question's sentences (:func:`~crmarena_gym.rl.question_text`).
        conversation: The texts of the chat transcripts and emails fetched so far (bodies, subjects).
        lines: The agent's lines in them (:func:`~crmarena_gym.rl.agent_lines`).
        articles: The latest search's articles (``{"Id", "Title", "Content"}``), in its order.
        spans: The answer phrases of the latest search's first articles, best first, when that search
            was made with the question's words (phrases answer the question; the articles found for a
            conversation are answers of another kind, Ids).
        corpus: The sentences of the latest search's articles (for weighing words by their rarity).
    """

    question: str
    conversation: tuple[str, ...]
    lines: tuple[str, ...]
    articles: tuple[dict[str, Any], ...]
    spans: tuple[Span, ...]
    corpus: tuple[str, ...]


# Per live episode: the state, the steps its view was read from, and the view. A step that is neither a
# conversation nor a search leaves the view as it was: the same object (whose features are then kept, see
# crmarena_gym.rl._features), not one rebuilt at every step.
_VIEW_CACHE: dict[tuple[int, int, int], tuple[CandidateState, int, tuple[Any, ...], KnowledgeView]] = {}


def knowledge_view(state: CandidateState, *, spans: int = 16, span_articles: int = 3) -> KnowledgeView:
    """The :class:`KnowledgeView` of ``state`` (computed once per state and step: slots and features share it).

    Args:
        state: The episode's state.
        spans: The most answer phrases.
        span_articles: How many of the latest search's first articles give phrases.

    Example:
        >>> from crmarena_gym.rl import QuestionFacts, StepRecord
        >>> state = CandidateState(QuestionFacts("KQA", "How long is a reset link valid?\\n- Answer briefly."))
        >>> found = [{"Id": "ka01", "Title": "Accounts", "Content": "A password reset link is valid for 30 minutes."}]
        >>> asked = call_text("search_knowledge_articles", {"search_term": "long reset link valid"})
        >>> state.history.append(StepRecord(asked, "search_knowledge_articles", found, True, ""))
        >>> view = knowledge_view(state)
        >>> view.question, [a["Id"] for a in view.articles], view.spans[0].text
        ('How long is a reset link valid?', ['ka01'], '30 minutes')
    """
    key = (id(state), spans, span_articles)
    history = state.history
    cached = _VIEW_CACHE.get(key)
    if cached is not None and cached[0] is state and cached[1] == len(history):
        return cached[3]
    talks = [s for s in history if s.ok and s.function in CONVERSATION_FUNCTIONS and isinstance(s.result, list)]
    search = next((step for step in reversed(history) if step.ok and step.function == SEARCH_FUNCTION), None)
    read = (*talks, search, state.facts)
    if cached is not None and cached[0] is state and len(cached[2]) == len(read):
        if all(a is b for a, b in zip(cached[2], read, strict=True)):  # the same steps: the same view
            _VIEW_CACHE[key] = (state, len(history), read, cached[3])
            return cached[3]
    question = question_text(state.facts.text)
    conversation: list[str] = []
    lines: list[str] = []
    for step in talks:
        for record in (r for r in step.result if isinstance(r, dict)):
            conversation += [record[k] for k in ("Body", "Subject", "TextBody") if isinstance(record.get(k), str)]
        lines += agent_lines(step.result)
    found = search.result if search is not None and isinstance(search.result, list) else []
    articles = tuple(r for r in found if isinstance(r, dict) and isinstance(r.get("Id"), str))
    bodies = [r.get("Content") if isinstance(r.get("Content"), str) else "" for r in articles]
    term = search_term_of(search.action) if search is not None else None
    asked = term is not None and set(word_list(term)) <= set(word_list(question))
    view = KnowledgeView(
        question=question,
        conversation=tuple(conversation),
        lines=tuple(lines),
        articles=articles,
        spans=tuple(answer_spans(question, bodies[:span_articles], limit=spans)) if asked and articles else (),
        corpus=tuple(s for body in bodies for s in sentences(body)),
    )
    if len(_VIEW_CACHE) > 64 and key not in _VIEW_CACHE:  # one entry per live episode is all that is reused
        _VIEW_CACHE.clear()
    _VIEW_CACHE[key] = (state, len(history), read, view)
    return view


def search_term_of(action: str) -> str | None:
    """The ``search_term`` of a search call's text action, or None.

    Example:
        >>> search_term_of('execute search_knowledge_articles({"search_term": "gift cards"})')
        'gift cards'
        >>> search_term_of("submit None") is None
        True
    """
    try:
        arguments = json.loads(action.split("(", 1)[1].rsplit(")", 1)[0])
    except (IndexError, ValueError):
        return None
    term = arguments.get("search_term") if isinstance(arguments, dict) else None
    return term if isinstance(term, str) else None


class KnowledgeSlots:
    """The knowledge tasks' slots (see the module docs), appended after the other slots of
    :class:`~crmarena_gym.rl.ToolPipelineCandidates`.

    Args:
        articles: How many ``submit_article`` slots (the latest search's first articles).
        spans: How many ``submit_span`` slots (the best answer phrases).
        span_articles: How many of the latest search's first articles give phrases.
        question_terms: The most words of the question's search term.
        conversation_terms: The most words of the conversation's search term.
        cue: The word the question or its context must hold for the slots to be offered (any case);
            None offers them for every question.
        searches: Offer the two search slots (the ``tools`` help level leaves them out: there the policy
            types the search term itself, and only the answers found are offered here).

    Example:
        >>> from crmarena_gym.rl import QuestionFacts
        >>> slots = KnowledgeSlots(articles=2, spans=2)
        >>> slots.names
        ('search_question', 'search_conversation', 'submit_article_0', 'submit_article_1', 'submit_span_0', \
'submit_span_1')
        >>> text = "Do gift cards expire?\\n- Answer briefly, using what the knowledge articles say."
        >>> slots.render(CandidateState(QuestionFacts("KQA", text)))
        ['execute search_knowledge_articles({"search_term": "gift cards expire"})', None, None, None, None, None]
        >>> slots.render(CandidateState(QuestionFacts("BRI", "Which state closed cases fastest?")))
        [None, None, None, None, None, None]
    """

    def __init__(
        self,
        *,
        articles: int = 5,
        spans: int = 16,
        span_articles: int = 3,
        question_terms: int = 30,
        conversation_terms: int = 100,
        cue: str | None = "knowledge",
        searches: bool = True,
    ) -> None:
        require_positive_ints(
            articles=articles,
            spans=spans,
            span_articles=span_articles,
            question_terms=question_terms,
            conversation_terms=conversation_terms,
        )
        self.articles = articles
        self.spans = spans
        self.span_articles = span_articles
        self.question_terms = question_terms
        self.conversation_terms = conversation_terms
        self.cue = cue.lower() if cue is not None else None
        self.searches = searches
        self.names: tuple[str, ...] = (
            *(("search_question", "search_conversation") if searches else ()),
            *(f"submit_article_{i}" for i in range(articles)),
            *(f"submit_span_{i}" for i in range(spans)),
        )
        self._rendered: tuple[KnowledgeView, tuple[str | None, ...]] | None = None

    def view(self, state: CandidateState) -> KnowledgeView:
        """The state's :class:`KnowledgeView` with this group's phrase settings."""
        return knowledge_view(state, spans=self.spans, span_articles=self.span_articles)

    def render(self, state: CandidateState) -> list[str | None]:
        """The group's slots in ``state``: a text action, or None where empty."""
        if self.cue is not None and self.cue not in state.facts.text.lower():
            return [None] * len(self.names)
        view = self.view(state)
        rendered = self._rendered
        if rendered is not None and rendered[0] is view:  # the view of the step before: the same slots
            return list(rendered[1])
        out: list[str | None] = []
        if self.searches:
            asked = search_terms(view.question, self.question_terms)
            said = search_terms(" ".join(view.conversation), self.conversation_terms, numbers=False)
            out += [
                call_text(SEARCH_FUNCTION, {"search_term": asked}) if asked else None,
                call_text(SEARCH_FUNCTION, {"search_term": said}) if said else None,
            ]
        ids = [f"submit {r['Id']}" for r in view.articles[: self.articles]]
        out += ids + [None] * (self.articles - len(ids))
        phrases = [f"submit {span.text}" for span in view.spans[: self.spans]]
        out += phrases + [None] * (self.spans - len(phrases))
        self._rendered = (view, tuple(out))
        return out

    def sources(self, state: CandidateState) -> list[str | None]:
        """For each slot, the function it calls or whose result its answer came from."""
        return [SEARCH_FUNCTION] * len(self.names)

    def __repr__(self) -> str:
        searches = "" if self.searches else ", searches=False"
        return f"KnowledgeSlots(articles={self.articles}, spans={self.spans}{searches})"
