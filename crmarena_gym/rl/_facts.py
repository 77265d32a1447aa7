"""What a question states: the facts a candidate generator may fill tool arguments with.

A generated instance keeps hidden ``params`` beside its question. Some of them are simply what the
question says, in machine-readable form (the window "in the past 3 months" with today's date, the
threshold "more than 2 cases", "shortest"); others are known only to the gold (the violated article,
the product a vague description stands for). :func:`question_facts` keeps the first kind and drops the
second, and it never reads ``answer``. Field by field:

- ``today``: the context's line "Today's date: YYYY-MM-DD" (read from the text when ``params`` lacks it).
- ``start``, ``end`` (when ``window`` is there too): the window the question names ("in the past 3
  months", "during Q3 2022"), resolved against today's date; both the phrase and the date are shown.
- ``n_cases``: "more than N cases" in the question.
- ``direction``: "shortest"/"longest", "most"/"fewest" in the question.
- ``product_id``, ``contact_id``, ``case_id``, ``issue_id``: only when the id appears verbatim in the
  question or its context (TII and MTA quote the product's Id, NED the contact's, PVI the case's). In
  NCR the product is hidden, and in NED ``product_id`` *is* the gold answer: the verbatim check leaves
  both out.
- ``purchase_date`` (NED, with the stated contact): "bought a fortnight ago" with today's date.
- ``search_term``: only when the term appears (in any case) in the question: NED describes the product
  by its type; in PVI and KQA the term is an article title the question does not state, so it is left out.
- ``case_subject``, ``case_description``: the new case a routing question describes (NCR), when the
  question quotes them.

Instances without ``params`` (the original's published file) still give ``today``, the ids quoted in
their text and the described case's subject and description (by pattern), so the generator offers
what it can.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from crmarena_gym.tasks import TaskInstance
from crmarena_gym.tools import to_argument_datetime

__all__ = ["QUESTION_PARAMS", "QuestionFacts", "question_facts"]

#: The hidden parameters a generator may read, when the question states them (see the module docs).
QUESTION_PARAMS: tuple[str, ...] = (
    "today",
    "start",
    "end",
    "window",
    "n_cases",
    "direction",
    "product_id",
    "contact_id",
    "case_id",
    "issue_id",
    "purchase_date",
    "search_term",
    "case_subject",
    "case_description",
)
_ID_FIELDS = {"product_id": "01t", "contact_id": "003", "case_id": "500", "issue_id": "a1M"}
_TODAY_RE = re.compile(r"Today's date:\s*(\d{4}-\d{2}-\d{2})")
#: A described case's lines: ours ("- Subject: ...") and the original's ("- Case Subject: ...").
_CASE_LINE_RE = {
    key: re.compile(rf"^- (?:Case )?{label}:[ \t]*(\S.*)$", re.MULTILINE)
    for key, label in (("case_subject", "Subject"), ("case_description", "Description"))
}


@dataclass(frozen=True)
class QuestionFacts:
    """The facts one question states, in the form the tools take.

    Attributes:
        task: The task's abbreviation (``TII``).
        text: The question with its context, as the agent first sees it.
        today: Today's date (``YYYY-MM-DD``) or None.
        start: The window's first moment in the tools' format (``2021-03-01T00:00:00Z``) or None.
        end: The window's end (exclusive) in the same format, or None.
        n_cases: The case-count threshold ("more than N"), or None.
        direction: ``min`` or ``max`` (shortest/fewest or longest/most), or None.
        product_id: The product's id when the question quotes it.
        contact_id: The customer's contact id when the context quotes it.
        case_id: The case's id when the context quotes it.
        issue_id: The issue's id when the question quotes it.
        purchase_date: The purchase day in the tools' datetime format, or None.
        search_term: A search term the question contains, or None.
        case_subject: The subject of the new case the question describes, or None.
        case_description: The description of that case, or None.
        search_terms: Other readings of the search term, narrowest first (the ``parsed`` help level: the
            described product's whole description, its last two words, its last word); empty here.
    """

    task: str
    text: str
    today: str | None = None
    start: str | None = None
    end: str | None = None
    n_cases: int | None = None
    direction: str | None = None
    product_id: str | None = None
    contact_id: str | None = None
    case_id: str | None = None
    issue_id: str | None = None
    purchase_date: str | None = None
    search_term: str | None = None
    case_subject: str | None = None
    case_description: str | None = None
    search_terms: tuple[str, ...] = ()


def _stated_text(params: dict[str, Any], key: str, text: str) -> str | None:
    value = params.get(key)
    if isinstance(value, str) and value and value in text:
        return value
    if not params:  # a published instance: the line that states it
        match = _CASE_LINE_RE[key].search(text)
        return match.group(1).strip() if match else None
    return None


def _stated_id(params: dict[str, Any], key: str, text: str) -> str | None:
    value = params.get(key)
    if isinstance(value, str) and value and value in text:
        return value
    if not params:  # no hidden params (a published instance): an id of the right kind quoted in the text
        found = sorted(set(re.findall(rf"\b{_ID_FIELDS[key]}[A-Za-z0-9]{{15}}\b", text)))
        return found[0] if len(found) == 1 else None
    return None


def question_facts(instance: TaskInstance, text: str) -> QuestionFacts:
    """The facts ``instance``'s question states (see the module docs for which and why).

    Args:
        instance: The task instance (its ``answer`` is never read).
        text: The question with its context, as the environment showed it.

    Example:
        >>> inst = TaskInstance(idx=0, task="TII", answer="a1MWs000001obQ0MAI",
        ...     query="Top issue for the Tent in Q1 2021? The product's Id is 01tWs000001nXIWIA2.",
        ...     params={"today": "2021-05-01", "start": "2021-01-01T00:00:00.000+0000",
        ...             "end": "2021-04-01T00:00:00.000+0000", "window": {"quarter": 1, "year": 2021},
        ...             "product_id": "01tWs000001nXIWIA2"})
        >>> facts = question_facts(inst, inst.query)
        >>> facts.start, facts.product_id, facts.n_cases
        ('2021-01-01T00:00:00Z', '01tWs000001nXIWIA2', None)
    """
    params = {k: v for k, v in instance.params.items() if k in QUESTION_PARAMS}
    today = params.get("today")
    if not isinstance(today, str):
        match = _TODAY_RE.search(text)
        today = match.group(1) if match else None
    has_window = isinstance(params.get("window"), dict) and isinstance(params.get("start"), str)
    start = to_argument_datetime(params["start"]) if has_window else None
    end = to_argument_datetime(params["end"]) if has_window and isinstance(params.get("end"), str) else None
    n_cases = params.get("n_cases")
    direction = params.get("direction")
    contact_id = _stated_id(params, "contact_id", text)
    purchase = params.get("purchase_date")
    term = params.get("search_term")
    return QuestionFacts(
        task=instance.abbrev,
        text=text,
        today=today,
        start=start,
        end=end,
        n_cases=int(n_cases) if isinstance(n_cases, int) and not isinstance(n_cases, bool) else None,
        direction=direction if direction in ("min", "max") else None,
        product_id=_stated_id(params, "product_id", text),
        contact_id=contact_id,
        case_id=_stated_id(params, "case_id", text),
        issue_id=_stated_id(params, "issue_id", text),
        purchase_date=to_argument_datetime(purchase) if isinstance(purchase, str) and contact_id else None,
        search_term=term if isinstance(term, str) and term and term.lower() in text.lower() else None,
        case_subject=_stated_text(params, "case_subject", text),
        case_description=_stated_text(params, "case_description", text),
    )
