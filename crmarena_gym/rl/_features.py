"""Candidate features: a vector per candidate slot, so that a policy scores candidates by what they mean.

A slot's number says little when its content changes from step to step (the third value seen, the
fourth issue listed); a feature vector computed from the state and the candidate itself says what
the candidate is and how it relates to the question: which function it calls or which function's
result its value came from, whether and how often the value appeared in the last result, where it
ranks, and how much the text around it (the record it was found in, the names of the ids it passes)
overlaps the question. A network that scores ``(state, features)`` pairs (the parametric-actions
pattern, :func:`~crmarena_gym.rl.parametric_module_class`) then serves every task family.

Any object with ``size`` and ``features(state, slots, sources)`` is a featurizer (see
:class:`CandidateFeaturizer`); :class:`SlotFeatures` is the default.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from crmarena_gym._memory import BytesLRU, bytes_cache
from crmarena_gym.rl._candidates import CandidateState, StepRecord, arguments_of, found_nothing, pasted_json
from crmarena_gym.rl._checks import require_positive_ints
from crmarena_gym.rl._encoding import FUNCTIONS, _texts_bytes, stable_hash, stable_hashes
from crmarena_gym.rl._knowledge import KnowledgeView, knowledge_view, search_term_of
from crmarena_gym.rl._spans import (
    PHRASE_TRAITS,
    QUESTION_KINDS,
    best_reply,
    number_relation,
    phrase_traits,
    question_kind,
    span_consensus,
    word_list,
)

__all__ = ["PHRASE_FEATURES", "SCALARS", "CandidateFeaturizer", "SlotFeatures", "candidate_context", "overlap"]

_TOKEN_RE = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by for from has have i in is it its me my of on or our so that the this to was "
    "we were what which who with you your not no only return id ids".split()
)
# A described case's words are compared by their first letters: its subject says "defective" or "available"
# where an issue is named "Product Defect" or "Product Availability" (on the 150 cases of task seed 1, the
# issue with the largest share is the case's for 92 with 4, 5 or 6 letters, 85 with whole words).
_DESCRIBED_PREFIX = 5
#: The scalar features of a slot, in order (see :class:`SlotFeatures`).
SCALARS: tuple[str, ...] = (
    "present",
    "is_call",
    "is_submission",
    "is_none",
    "value_rank",
    "in_last_result",
    "count_in_last_result",
    "takes_last_result",
    "context_in_question",
    "question_in_context",
    "context_words",
    "value_in_question",
    # The knowledge tasks (PVI, KQA; see crmarena_gym.rl._knowledge):
    "search_of_question",
    "search_of_conversation",
    "knowledge_rank",
    "article_in_conversation",
    "conversation_in_article",
    "reply_rule_overlap",
    "reply_number_above_rule",
    "reply_number_within_rule",
    "span_sentence_overlap",
    "span_question_share",
    "span_next_to_question",
    "span_whole",
    "span_words",
    "span_has_digit",
    "span_score",
    "span_unit",
    "span_named",
    "span_consensus",
)
#: The features of an answer phrase beyond :data:`SCALARS`, in order: the kind of question asked
#: (one-hot over :data:`~crmarena_gym.rl.QUESTION_KINDS`), then the phrase's traits
#: (:data:`~crmarena_gym.rl.PHRASE_TRAITS`, see :func:`~crmarena_gym.rl.phrase_traits`).
PHRASE_FEATURES: tuple[str, ...] = (*(f"question_{kind}" for kind in QUESTION_KINDS), *PHRASE_TRAITS)
_SCALAR_INDEX = {name: i for i, name in enumerate(SCALARS)}
_PRESENT, _IS_CALL, _IS_SUBMISSION, _IS_NONE = (
    _SCALAR_INDEX[k] for k in ("present", "is_call", "is_submission", "is_none")
)
_VALUE_RANK, _IN_LAST_RESULT, _COUNT_IN_LAST_RESULT = (
    _SCALAR_INDEX[k] for k in ("value_rank", "in_last_result", "count_in_last_result")
)
_TAKES_LAST_RESULT, _CONTEXT_IN_QUESTION, _QUESTION_IN_CONTEXT, _CONTEXT_WORDS, _VALUE_IN_QUESTION = (
    _SCALAR_INDEX[k]
    for k in ("takes_last_result", "context_in_question", "question_in_context", "context_words", "value_in_question")
)


def _words_bytes(args: tuple[Any, ...], words: frozenset[str]) -> int:
    """A cached set of words' bytes (the set, its words, the text it was read from), without walking it."""
    return _texts_bytes(args) + sys.getsizeof(words) + sum(sys.getsizeof(w) for w in words)


# The question and the listed records' texts recur at every step; kept by measured bytes (texts of any length).
@bytes_cache(max_entries=16384, max_bytes=16 * 1024 * 1024, size=lambda args, words: _words_bytes(args, words))
def _tokens(text: str) -> frozenset[str]:
    return frozenset(t for t in _TOKEN_RE.findall(text.lower()) if len(t) > 2 and t not in _STOP)


@bytes_cache(max_entries=16384, max_bytes=32 * 1024 * 1024, size=lambda args, words: _words_bytes(args, words))
def _prefixes(text: str, prefix: int) -> frozenset[str]:
    return frozenset(t[:prefix] for t in _tokens(text))


# A candidate's context meets the same question at every step it is offered, in every episode of the instance.
@bytes_cache(max_entries=16384, max_bytes=16 * 1024 * 1024, size=lambda args, found: _texts_bytes(args) + 300)
def _context_features(
    context: str, question: str, prefix: int | None, buckets: int
) -> tuple[float, float, float, tuple[int, ...]]:
    """``overlap(context, question)``, the context's word count (clipped at 50, over 50) and its words' hash
    buckets (sorted)."""
    share, reverse = overlap(context, question, prefix=prefix)
    words = _tokens(context)
    hashed = tuple(np.unique(stable_hashes(words) % buckets).tolist())
    return share, reverse, min(len(words), 50) / 50, hashed


def overlap(context: str, question: str, *, prefix: int | None = None) -> tuple[float, float]:
    """How much two texts share: (share of ``context``'s words in ``question``, share of ``question``'s in ``context``).

    Words are lower-case alphanumeric runs of three letters or more, common words left out; with ``prefix``,
    words are compared by their first ``prefix`` letters (``defective`` meets ``defect``, ``available``
    meets ``availability``).

    Example:
        >>> overlap("Billing/Payment Issue", "I was charged twice: a billing error")  # billing: 1 of 3, 1 of 4
        (0.3333333333333333, 0.25)
        >>> overlap("", "anything")
        (0.0, 0.0)
        >>> overlap("Product Defect", "Defective leggings", prefix=5)  # defec: 1 of 2, 1 of 2
        (0.5, 0.5)
    """
    a, b = (
        (_tokens(context), _tokens(question))
        if prefix is None
        else (_prefixes(context, prefix), _prefixes(question, prefix))
    )
    if not a or not b:
        return 0.0, 0.0
    shared = len(a & b)
    return shared / len(a), shared / len(b)


def _step_records(result: Any) -> dict[str, list[str]]:
    """For each text value in ``result``'s records (its mappings, nested ones too, in depth-first order), the text
    fields of the first record holding it."""
    groups: list[list[str]] = []
    _record_texts(result, groups)
    # Built in reverse, so that the first record holding a text is the last written: it wins.
    return dict(reversed([(text, texts) for texts in groups for text in texts]))


def _record_texts(value: Any, groups: list[list[str]]) -> None:
    """The text fields of each record in ``value``, depth first (a record before the records nested in it)."""
    if isinstance(value, dict):
        records: Any = (value,)
    elif isinstance(value, list):
        records = value
    else:
        return
    for record in records:
        if isinstance(record, dict):
            texts = [v for v in record.values() if isinstance(v, str)]
            groups.append(texts)
            if len(texts) < len(record):  # other values: a nested record or list may hold records
                for item in record.values():
                    if isinstance(item, list | dict):
                        _record_texts(item, groups)
        elif isinstance(record, list):
            _record_texts(record, groups)


def _context_of(value: str, texts: list[str]) -> str:
    return " ".join(v for v in texts if v != value)


# A step's index by its action and observation, across episodes: the same call answers the same records in every
# episode of a question. An entry holds the result it was made from, and is used only for a result equal to it.
_STEP_INDEX: BytesLRU[tuple[str, str], tuple[Any, dict[str, list[str]]]] = BytesLRU(
    max_entries=8192, max_bytes=32 * 1024 * 1024
)


def _step_index(step: StepRecord) -> dict[str, list[str]]:
    key = (step.action, str(step.observation))
    kept = _STEP_INDEX.get(key)
    if kept is not None and _same(kept[0], step.result):
        return kept[1]
    found = _step_records(step.result)
    size = sys.getsizeof(key[0]) + sys.getsizeof(key[1]) + sum(map(len, found)) + 150 * len(found) + 200
    _STEP_INDEX.put(key, (step.result, found), size)
    return found


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b)
    except (TypeError, ValueError):  # values that do not compare (arrays): not known to be the same
        return False


class _Contexts:
    """Value to context over steps (the other text fields of the first record of a step holding the value, a newer
    step's record winning), each context joined only when it is asked for: a step lists hundreds of records, and
    a step's candidates ask for a few."""

    def __init__(self) -> None:
        self.steps: list[dict[str, list[str]]] = []  # each step's index, oldest first
        self.joined: dict[str, str] = {}

    def add(self, step: StepRecord) -> None:
        found = _step_index(step)
        if found:
            self.steps.append(found)
            self.joined.clear()

    def get(self, value: str, default: str = "") -> str:
        context = self.joined.get(value)
        if context is None:
            for found in reversed(self.steps):
                texts = found.get(value)
                if texts is not None:
                    break
            else:
                return default
            context = self.joined[value] = _context_of(value, texts)
        return context


class _ContextIndex:
    """Value to context over an episode's history, extended step by step (each step's records read once)."""

    def __init__(self) -> None:
        self.state: CandidateState | None = None
        self.indexed = 0
        self.contexts = _Contexts()
        #: The last step's result as a call pastes it (see :func:`_pasted_text`), of the state last indexed.
        self.pasted: str | None = None
        self._pasted_of: StepRecord | None = None

    def get(self, state: CandidateState) -> _Contexts:
        if state is not self.state or len(state.history) < self.indexed:
            self.state, self.indexed, self.contexts = state, 0, _Contexts()
        for step in state.history[self.indexed :]:
            if step.ok:
                self.contexts.add(step)  # a newer step's record wins
        self.indexed = len(state.history)
        last = state.history[-1] if state.history else None
        if last is not self._pasted_of:
            self._pasted_of = last
            self.pasted = _pasted_text(last.result) if last is not None and last.ok else None
        return self.contexts


def candidate_context(state: CandidateState, value: str) -> str:
    """The text the results seen so far put beside ``value``: the other text fields of the newest record holding it.

    An issue id's context is the issue's name (from ``get_issues``), an article id's is its title and
    content (from ``search_knowledge_articles``); a value found in no record has no context.

    Example:
        >>> from crmarena_gym.rl import QuestionFacts, StepRecord
        >>> state = CandidateState(QuestionFacts("NCR", "..."))
        >>> state.history.append(StepRecord("execute get_issues()", "get_issues",
        ...     [{"Id": "a1M1", "Name": "Billing/Payment Issue"}, {"Id": "a1M2", "Name": "Wrong Size"}], True, ""))
        >>> candidate_context(state, "a1M2")
        'Wrong Size'
    """
    return _ContextIndex().get(state).get(value, "")


def _call_values(text: str) -> tuple[str, ...]:
    """The short string arguments of a call's text (ids, names, terms), for looking up their context."""
    # A call of facts recurs at every step of every episode of its question: kept. A call that pastes a result
    # is offered once, right after the step that returned it: read as it comes.
    if len(text) <= 2000:
        return _short_call_values(text)
    arguments = arguments_of(text)  # the call as the generator wrote it: its JSON read back would give these
    if arguments is None:
        return _read_call_values(text)
    return _short_values(arguments)


@bytes_cache(
    max_entries=16384,
    max_bytes=8 * 1024 * 1024,
    size=lambda args, found: _texts_bytes(args) + sum(sys.getsizeof(v) + 8 for v in found) + 100,
)
def _short_call_values(text: str) -> tuple[str, ...]:
    return _read_call_values(text)


def _read_call_values(text: str) -> tuple[str, ...]:
    body = text.split("(", 1)[1].rsplit(")", 1)[0] if "(" in text else ""
    if not body:
        return ()
    try:
        arguments = json.loads(body)
    except json.JSONDecodeError:
        return ()
    return _short_values(arguments) if isinstance(arguments, dict) else ()


def _short_values(arguments: dict[str, Any]) -> tuple[str, ...]:
    found: list[str] = []
    for value in arguments.values():
        # A tuple reads back from JSON as a list; no other difference matters here (only short texts are kept).
        items = value if isinstance(value, list | tuple) and len(value) <= 3 else [value]
        found += [v for v in items if isinstance(v, str) and len(v) <= 200]
    return tuple(found)


def _last_result_text(state: CandidateState) -> str:
    last = state.history[-1] if state.history else None
    if last is None or not last.ok:
        return ""
    return last.observation


@runtime_checkable
class CandidateFeaturizer(Protocol):
    """The interface of a candidate featurizer.

    Attributes:
        size: F, the number of features per slot.
    """

    size: int

    def features(self, state: CandidateState, slots: Sequence[str | None], sources: Sequence[str | None]) -> np.ndarray:
        """A float32 array ``(len(slots), size)`` of values in [0, 1] (zeros for an empty slot)."""
        ...


class SlotFeatures:
    """The default featurizer: what each candidate is, and how it relates to the question and the last result.

    Per slot, the concatenation of:

    - the slot's number, one-hot (``num_slots`` values): fixed slots keep their identity;
    - what the candidate does, one-hot: the function it calls (one value per task-specific function,
      sorted names), or ``submit None``, or the submission of a value (``len(FUNCTIONS) + 2``);
    - for a submitted value, the function whose result gave it, one-hot (``len(FUNCTIONS) + 1``;
      the last value for calls);
    - the scalars of :data:`SCALARS`: the slot holds an action; it is a call; a submission; the
      submission of None; the value's rank among the submitted values (0 first, 1 last); the value is
      in the last result; how often (clipped at 5, over 5); the call takes the last result; the share
      of the candidate's context words (:func:`candidate_context` of its value, or of the ids and
      terms a call passes) found in the question, and the reverse share (where the question describes
      a new case, NCR, its subject and description stand for the question, words compared by their first
      five letters: the issue a case is about); the context's length (words, clipped at 50, over 50);
      the value is quoted in the question;
    - ``context_buckets`` values: the context's words, hashed (1 where any word falls), so that a
      network can learn which words go with which question;
    - ``reply_buckets`` values: for an article a knowledge search returned, the words and word pairs
      of the agent's line that best matches one of its sentences (:func:`~crmarena_gym.rl.best_reply`),
      hashed: what the agent said about the article's rule ("but I've waived the fee", "a fee applies");
    - ``own_buckets`` values: the words of that line which its rule sentence does not use, hashed: the
      agent's own words around the rule ("anyway", "waived", "unable"), which recur across rules and so
      tell a broken rule from a kept one beyond the rules seen in training;
    - for an answer phrase, :data:`PHRASE_FEATURES` (``len(PHRASE_FEATURES)`` values): the kind of
      question asked (:func:`~crmarena_gym.rl.question_kind`) and the phrase's traits
      (:func:`~crmarena_gym.rl.phrase_traits`: numbers, length, the kinds of its edge words and of the
      words around it, the closed-class cues it starts with or stands between). They name no topic, so
      what a network learns of them on the training questions ("how often" goes with a phrase starting
      with "every", a phrase stops before "to") carries to questions it never saw; the question kind
      sits in the row so that a candidate network alone can pair it with the traits.

    The knowledge scalars (PVI, KQA; zero for other candidates): which knowledge search a call is (of
    the question's words, of the conversation's); an article's or phrase's rank in its slots (clipped
    at 9 or 15); the share of the article's words found in the conversation fetched so far, and the
    reverse; the weighted share of the best-matching agent line's words in the article's sentence;
    whether a number of that line exceeds the sentence's numbers, or stays within them
    (:func:`~crmarena_gym.rl.number_relation`); and for an answer phrase
    (:class:`~crmarena_gym.rl.Span`): its sentence's overlap with the question, the share of its words
    the question has, whether it stands beside the question's words, whether it is a whole run, its
    length (words, clipped at 12, over 12), whether it holds a digit, its score (over 2.5, clipped),
    whether it is a number with its unit, whether it ends on what a "which" question names, and how much
    it agrees with the other phrases (:func:`~crmarena_gym.rl.span_consensus`).

    Args:
        num_slots: K, the generator's number of slots.
        context_buckets: Hash buckets for the context's words.
        reply_buckets: Hash buckets for the words of the agent line an article's rule meets.
        own_buckets: Hash buckets for that line's words its rule sentence lacks.

    Example:
        >>> from crmarena_gym.rl import QuestionFacts, ToolPipelineCandidates
        >>> gen = ToolPipelineCandidates()
        >>> featurizer = SlotFeatures(gen.num_slots)
        >>> state = CandidateState(QuestionFacts("BRI", "Which state closed cases fastest?"))
        >>> slots = gen.slots(state)
        >>> x = featurizer.features(state, slots, gen.slot_sources(state))
        >>> x.shape == (gen.num_slots, featurizer.size), float(x.min()) >= 0.0, float(x.max()) <= 1.0
        (True, True, True)
        >>> [bool(row[featurizer.scalar_offset]) for row in x] == [s is not None for s in slots]
        True
    """

    def __init__(
        self, num_slots: int, *, context_buckets: int = 32, reply_buckets: int = 64, own_buckets: int = 32
    ) -> None:
        require_positive_ints(
            num_slots=num_slots, context_buckets=context_buckets, reply_buckets=reply_buckets, own_buckets=own_buckets
        )
        self.num_slots = num_slots
        self.context_buckets = context_buckets
        self._functions = {name: i for i, name in enumerate(FUNCTIONS)}
        n = len(FUNCTIONS)
        self.kind_offset = num_slots
        self.source_offset = self.kind_offset + n + 2
        self.scalar_offset = self.source_offset + n + 1
        self.context_offset = self.scalar_offset + len(SCALARS)
        self.reply_offset = self.context_offset + context_buckets
        self.reply_buckets = reply_buckets
        self.own_offset = self.reply_offset + reply_buckets
        self.own_buckets = own_buckets
        self.phrase_offset = self.own_offset + own_buckets
        self.size = self.phrase_offset + len(PHRASE_FEATURES)
        self._index = _ContextIndex()

    def features(self, state: CandidateState, slots: Sequence[str | None], sources: Sequence[str | None]) -> np.ndarray:
        """The ``(num_slots, size)`` features of ``slots`` in ``state`` (see the class docs)."""
        if len(slots) != self.num_slots or len(sources) != self.num_slots:
            raise ValueError(f"expected {self.num_slots} slots and sources, got {len(slots)} and {len(sources)}")
        n = len(FUNCTIONS)
        out = np.zeros((self.num_slots, self.size), dtype=np.float32)
        # A routing question's own words ("Return only the Id", "routing policy") are the template's, not the
        # case's: the issue a new case is about is told by the case's subject and description alone.
        facts = state.facts
        described = " ".join(t for t in (facts.case_subject, facts.case_description) if t)
        question = described or facts.text
        prefix = _DESCRIBED_PREFIX if described else None
        last_text = _last_result_text(state)
        contexts = self._index.get(state)
        pasted = self._index.pasted
        values = [i for i, s in enumerate(slots) if s is not None and s.startswith("submit ") and s != "submit None"]
        rank_of = {slot: rank for rank, slot in enumerate(values)}
        last_rank = max(len(values) - 1, 1)
        knowledge: Any = _UNSET  # worked out when a candidate needs it: some slot holding a knowledge action
        buckets = self.context_buckets
        width = self.size
        kind, source_at, scalar, context_at = (
            self.kind_offset,
            self.source_offset,
            self.scalar_offset,
            self.context_offset,
        )
        ones: list[int] = []  # flat indices of ``out`` set to 1
        where: list[int] = []  # flat indices of ``out`` set to the values in ``values``
        numbers: list[float] = []
        for i, (text, source) in enumerate(zip(slots, sources, strict=True)):
            if text is None:
                continue
            base = i * width
            at = base + scalar
            ones += (base + i, at + _PRESENT)
            if text.startswith("submit "):
                value = text[len("submit ") :]
                ones.append(at + _IS_SUBMISSION)
                if value == "None":
                    ones += (base + kind + n, at + _IS_NONE)
                    context = ""
                else:
                    ones += (base + kind + n + 1, base + source_at + self._functions.get(source or "", n))
                    count = last_text.count(value) if last_text else 0
                    where += (
                        at + _VALUE_RANK,
                        at + _IN_LAST_RESULT,
                        at + _COUNT_IN_LAST_RESULT,
                        at + _VALUE_IN_QUESTION,
                    )
                    numbers += (
                        rank_of.get(i, 0) / last_rank,
                        float(count > 0),
                        min(count, 5) / 5,
                        float(value in question),
                    )
                    context = contexts.get(value) or value
                    if source == "search_knowledge_articles":
                        if knowledge is _UNSET or knowledge is None:  # this slot holds one: there are
                            knowledge = _knowledge_features(state)
                        pairs, replies, owns, phrases = knowledge.answer(value, self.reply_buckets, self.own_buckets)
                        where += [at + index for index, _ in pairs]
                        numbers += [number for _, number in pairs]
                        for offset, block in ((self.reply_offset, replies), (self.own_offset, owns)):
                            ones += [base + offset + index for index in block]
                        ones += [base + self.phrase_offset + index for index in phrases]
            else:
                paren = text.find("(", len("execute "))  # not split: a call may paste a long result
                function = (text[len("execute ") : paren] if paren >= 0 else text[len("execute ") :]).strip()
                ones += (at + _IS_CALL, base + kind + self._functions.get(function, n), base + source_at + n)
                where.append(at + _TAKES_LAST_RESULT)
                numbers.append(float(pasted is not None and pasted in text))
                context = " ".join(contexts.get(v) or v for v in _call_values(text))
                if function == "search_knowledge_articles":
                    if knowledge is _UNSET:
                        knowledge = _knowledge_features(state) if _holds_knowledge(slots, sources) else None
                    for index, number in knowledge.search(text) if knowledge is not None else ():
                        where.append(at + index)
                        numbers.append(number)
            share, reverse, words, hashed = _context_features(context, question, prefix, buckets)
            where += (at + _CONTEXT_IN_QUESTION, at + _QUESTION_IN_CONTEXT, at + _CONTEXT_WORDS)
            numbers += (share, reverse, words)
            offset = base + context_at
            ones += [offset + h for h in hashed]
        flat = out.reshape(-1)
        flat[ones] = 1.0
        flat[where] = numbers
        return out

    def __repr__(self) -> str:
        return (
            f"SlotFeatures(num_slots={self.num_slots}, context_buckets={self.context_buckets}, "
            f"reply_buckets={self.reply_buckets}, own_buckets={self.own_buckets})"
        )


# Per live episode: the knowledge view (the same object while no search or conversation step comes) and its
# features, each candidate's worked out once per view.
_KNOWLEDGE_CACHE: dict[int, tuple[KnowledgeView, _KnowledgeFeatures]] = {}


# Across episodes: the features of a view with the same content (the question, the conversation read, the
# articles found and their phrases), so that each episode of a question does not work them out again.
_KNOWLEDGE_BY_CONTENT: BytesLRU[tuple[Any, ...], _KnowledgeFeatures] = BytesLRU(
    max_entries=2048, max_bytes=32 * 1024 * 1024
)


_UNSET: Any = object()


def _holds_knowledge(slots: Sequence[str | None], sources: Sequence[str | None]) -> bool:
    """Whether a slot holds an action of the knowledge search's (its call, or an answer its result gave)."""
    return any(t is not None and s == "search_knowledge_articles" for t, s in zip(slots, sources, strict=True))


def _key_text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else repr(value)


def _knowledge_features(state: CandidateState) -> _KnowledgeFeatures:
    view = knowledge_view(state)
    cached = _KNOWLEDGE_CACHE.get(id(view))
    if cached is not None and cached[0] is view:
        return cached[1]
    if len(_KNOWLEDGE_CACHE) > 64:
        _KNOWLEDGE_CACHE.clear()
    articles = tuple(tuple(_key_text(a.get(k)) for k in ("Id", "Title", "Content")) for a in view.articles)
    content = (view.question, view.conversation, view.lines, articles, view.spans)
    features = _KNOWLEDGE_BY_CONTENT.get(content)
    if features is None:
        features = _KnowledgeFeatures(view)
        texts = [view.question, *view.conversation, *view.lines, *(t for a in articles for t in a if t is not None)]
        # The texts twice (the key's and the view's own), the phrases, and the worked-out rows (a few kB).
        size = 2 * sum(sys.getsizeof(t) for t in texts) + 400 * len(view.spans) + 16_384
        _KNOWLEDGE_BY_CONTENT.put(content, features, size)
    _KNOWLEDGE_CACHE[id(view)] = (view, features)
    return features


# What a knowledge candidate adds to its row: (scalar index, value) pairs, and the reply, own and phrase
# columns set to 1 (indices within each block).
_Written = tuple[tuple[tuple[int, float], ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def _indices(found: set[int]) -> tuple[int, ...]:
    return tuple(sorted(found))


class _KnowledgeFeatures:
    """The knowledge scalars and reply words of one view's candidates (see :class:`SlotFeatures`)."""

    def __init__(self, view: KnowledgeView) -> None:
        self.view = view
        self.articles = {a["Id"]: (rank, a) for rank, a in enumerate(self.view.articles)}
        self.spans = {span.text: (rank, span) for rank, span in enumerate(self.view.spans)}
        self.conversation = " ".join(self.view.conversation)
        self.asked = set(word_list(self.view.question))
        self._phrases: tuple[list[float], int] | None = None  # consensus and question kind, once per view
        self._searches: dict[str, tuple[tuple[int, float], ...]] = {}
        self._answers: dict[tuple[str, int, int], _Written] = {}

    def search(self, text: str) -> tuple[tuple[int, float], ...]:
        """A search call: are its words the question's, or others (the conversation's)? (scalar index, value) pairs."""
        written = self._searches.get(text)
        if written is None:
            term = search_term_of(text)
            words = set(word_list(term)) if term is not None else set()
            written = ()
            if words:
                of_question = float(words <= self.asked)
                written = (
                    (_SCALAR_INDEX["search_of_question"], of_question),
                    (_SCALAR_INDEX["search_of_conversation"], 1.0 - of_question),
                )
            self._searches[text] = written
        return written

    def answer(self, value: str, reply_size: int, own_size: int) -> _Written:
        """A submitted article of the latest search, or a phrase of its articles: its (scalar index, value) pairs,
        and the reply, own and phrase columns it sets to 1."""
        key = (value, reply_size, own_size)
        written = self._answers.get(key)
        if written is None:
            written = self._answers[key] = self._work_out(value, reply_size, own_size)
        return written

    def _work_out(self, value: str, reply_size: int, own_size: int) -> _Written:
        scalars: dict[str, float] = {}
        reply: set[int] = set()
        own: set[int] = set()
        phrase: set[int] = set()
        if value in self.articles:
            rank, article = self.articles[value]
            scalars["knowledge_rank"] = min(rank, 9) / 9
            content = f"{article.get('Title') or ''} {article.get('Content') or ''}"
            scalars["article_in_conversation"], scalars["conversation_in_article"] = overlap(content, self.conversation)
            line, sentence, share = best_reply(self.view.lines, article.get("Content") or "", self.view.corpus)
            if line:
                scalars["reply_rule_overlap"] = share
                above, within = number_relation(line, sentence)
                scalars["reply_number_above_rule"], scalars["reply_number_within_rule"] = float(above), float(within)
                words = word_list(line)
                for gram in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
                    reply.add(stable_hash(gram) % reply_size)
                ruled = set(word_list(sentence))
                for word in words:
                    if word not in ruled:
                        own.add(stable_hash(word) % own_size)
        elif value in self.spans:
            rank, span = self.spans[value]
            scalars["knowledge_rank"] = min(rank, 15) / 15
            scalars["span_sentence_overlap"] = span.sentence_overlap
            scalars["span_question_share"] = span.question_share
            scalars["span_next_to_question"] = float(span.next_to_question)
            scalars["span_whole"] = float(span.whole)
            scalars["span_words"] = min(span.words, 12) / 12
            scalars["span_has_digit"] = float(any(c.isdigit() for c in span.text))
            scalars["span_score"] = min(max(span.score, 0.0), 2.5) / 2.5
            scalars["span_unit"] = float(span.unit)
            scalars["span_named"] = float(span.named)
            if self._phrases is None:
                self._phrases = (
                    span_consensus(self.view.spans),
                    QUESTION_KINDS.index(question_kind(self.view.question)),
                )
            consensus, kind = self._phrases
            scalars["span_consensus"] = consensus[rank]
            phrase.add(kind)
            for trait in phrase_traits(self.view.question, span):
                phrase.add(_TRAIT_INDEX[trait])
        pairs = tuple((_SCALAR_INDEX[name], number) for name, number in scalars.items())
        return pairs, _indices(reply), _indices(own), _indices(phrase)


_TRAIT_INDEX = {trait: len(QUESTION_KINDS) + i for i, trait in enumerate(PHRASE_TRAITS)}


def _pasted_text(result: Any) -> str | None:
    """``result`` as a call carries it when pasted by value (as the next step of a pipeline does), or None if empty."""
    if found_nothing(result):
        return None
    return pasted_json(result)
