"""Scoring a submitted answer against the gold: exact match, token F1, and lenient extraction."""

from __future__ import annotations

import calendar
import re
import string
from collections import Counter
from dataclasses import dataclass, fields
from typing import Any, Literal

from crmarena_gym.tasks._spec import AnswerKind

NONE_ANSWER = "None"
MatchMode = Literal["strict", "lenient"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
_MONTHS = tuple(calendar.month_name[1:])
_STATES = frozenset(
    "AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK "
    "OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC".split()
)
_ID_PREFIX: dict[str, str] = {"issue_id": "a1M", "user_id": "005", "product_id": "01t", "article_id": "ka0"}
_QUOTES = "\"'`“”‘’"


def normalize_answer(text: str) -> str:
    """Lower case, drop punctuation and the articles a/an/the, collapse whitespace.

    Example:
        >>> normalize_answer("The  Waterproof, breathable shell!")
        'waterproof breathable shell'
    """
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(prediction: str, gold: str) -> float:
    """Token-level F1 between two texts after :func:`normalize_answer`.

    Example:
        >>> round(token_f1("within 30 days", "30 days"), 3)
        0.8
    """
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall)


# Two-letter state codes that are also English words ("OK", "OR", "IN" ...): weaker evidence of an answer.
_WORDLIKE_STATES = frozenset({"OK", "OR", "IN", "ME", "HI", "OH", "AS", "DE", "LA", "MA", "PA", "AL", "ID", "CO"})


def _candidates(text: str, kind: AnswerKind) -> set[str]:
    found: set[str] = set()
    if kind in _ID_PREFIX:
        found |= set(re.findall(rf"\b{_ID_PREFIX[kind]}[A-Za-z0-9]{{12}}(?:[A-Za-z0-9]{{3}})?\b", text))
    elif kind == "month":
        # Title case or capitals only, so that the verb "may" is not read as May.
        found |= {m for m in _MONTHS if re.search(rf"\b({m}|{m.upper()})\b", text)}
    elif kind == "state":
        found |= {s for s in re.findall(r"\b[A-Z]{2}\b", text) if s in _STATES}
        if len(found) > 1:
            found = found - _WORDLIKE_STATES or found
    return found


def extract_answer(text: str, kind: AnswerKind) -> str:
    """The answer a verbose reply gives, by deterministic rules (no LLM).

    Surrounding whitespace and quotes are stripped. For answers of a known shape (ids, months,
    states), a reply that contains exactly one candidate of that shape gives that candidate (state codes
    that are also words, such as OK or IN, give way to other codes); a reply with no candidate but the
    word ``None`` gives ``None``; otherwise the stripped text is returned unchanged.

    Example:
        >>> extract_answer("The agent is 005Ws000001xSR9IAM.", "user_id")
        '005Ws000001xSR9IAM'
        >>> extract_answer(" 'MARCH' ", "month")
        'March'
        >>> extract_answer("None of them qualifies, so: None", "user_id")
        'None'
    """
    stripped = text.strip().strip(_QUOTES).strip()
    if kind == "text":
        return stripped
    candidates = _candidates(stripped, kind)
    if len(candidates) == 1:
        return candidates.pop()
    if not candidates and re.search(r"\bNone\b", stripped):
        return NONE_ANSWER
    return stripped


@dataclass(frozen=True)
class Score:
    """How a submission was scored.

    Attributes:
        reward: 1.0 or 0.0 for exact match; the F1 in [0, 1] for fuzzy match.
        metric: ``exact_match`` or ``fuzzy_match``.
        mode: ``strict`` (the paper's exact string equality) or ``lenient`` (extraction first).
        submitted: The text as submitted.
        compared: The text compared with the gold (after stripping or extraction).
        gold: The gold answer as text (``None`` for unanswerable questions).
        details: For CRMArena-Pro's grading, how the reward came about (``reason``; ``em`` beside a token F1;
            the refusal and leak checks of ``privacy_rejection``); None for CRMArena's nine tasks.
    """

    reward: float
    metric: str
    mode: str
    submitted: str
    compared: str
    gold: str
    details: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The fields by name (``dataclasses.asdict`` without its deep copy: every field is a plain value).

        Example:
            >>> Score(1.0, "exact_match", "strict", " OR", "OR", "OR").as_dict()["compared"]
            'OR'
        """
        data = {f: getattr(self, f) for f in _SCORE_FIELDS}
        if self.details is None:  # CRMArena's breakdown keeps its fields
            del data["details"]
        return data


_SCORE_FIELDS = tuple(f.name for f in fields(Score))


def score_answer(
    submitted: str,
    gold: str | None,
    *,
    metric: Literal["exact_match", "fuzzy_match"],
    kind: AnswerKind = "text",
    mode: MatchMode = "strict",
) -> Score:
    """Score a submission.

    Args:
        submitted: The agent's answer text.
        gold: The gold answer; ``None`` for unanswerable questions, which the agent answers ``None``.
        metric: ``exact_match`` (case-sensitive string equality) or ``fuzzy_match`` (token F1).
        kind: The answer's shape, used by the lenient mode.
        mode: ``strict`` compares the whitespace-stripped text; ``lenient`` first extracts the answer.

    Example:
        >>> score_answer("None", None, metric="exact_match").reward
        1.0
        >>> score_answer("Answer: None", None, metric="exact_match", kind="user_id", mode="lenient").reward
        1.0
    """
    if mode not in ("strict", "lenient"):
        raise ValueError(f"match mode must be 'strict' or 'lenient', got {mode!r}")
    gold_text = NONE_ANSWER if gold is None else gold
    compared = extract_answer(submitted, kind) if mode == "lenient" else submitted.strip()
    if metric == "fuzzy_match":
        reward = token_f1(compared, gold_text)
    elif metric == "exact_match":
        reward = float(compared == gold_text)
    else:
        raise ValueError(f"metric must be 'exact_match' or 'fuzzy_match', got {metric!r}")
    return Score(reward, metric, mode, submitted, compared, gold_text)
