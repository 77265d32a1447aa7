"""Interactive instances: a request split into what the user says first and what it holds back.

In a conversation the person asking does not state the whole request at once. :func:`interactive_split`
turns a generated instance into an :class:`InteractiveSplit`: an ``opening`` that names the goal ("which
agent stands out on average handle time") and the ``criteria`` held back (the time window, the
direction, the case threshold, the product, the new case's text, the purchase's day and description,
the case to review, the customer's question). Each criterion carries the words that reveal it and the
*slot words* of an agent question that asks for it: a question asks for a criterion when it holds one of
its slot words as whole words (case-insensitive; see :meth:`Criterion.asked_by`).

Everything is written from the instance's hidden parameters (``params``), never from its gold answer,
and is fixed by the instance and a seed (the seed picks among phrasings).

The slot words of each criterion (documented here, the user simulators rely on them):

======================  ==========================================================================
criterion               slot words
======================  ==========================================================================
``window``              when, period, time frame, timeframe, window, date range, dates, time range,
                        how far back, which months, timespan, time period
``direction``           shortest, longest, lowest, highest, fewest, most, least, fastest, slowest,
                        quickest, direction, minimum or maximum, min or max, best or worst
``n_cases``             threshold, how many cases, minimum number, number of cases, at least,
                        case count, cutoff, workload
``product``             product, item, which product
``new_case``            subject, description, case details, the case, new case, details
``purchase_day``        when, date, day, how long ago, which day
``description``         describe, description, what kind, which product, what product, item, what
                        did you buy
``case``                which case, case id, the case, case number
``question``            question, ask, what do you need, what would you like, help with
``opportunity``         opportunity, which opportunity, opportunity id, which deal, the deal, deal
``lead``                which lead, lead id, the lead, lead's id
``quote``               quote, which quote, quote id
``region``              region, state, where, location, territory
======================  ==========================================================================

The last four are CRMArena-Pro's (the record a workflow or policy question is about, a new lead's region).

A task's split is a function ``(instance, rng) -> InteractiveSplit`` in :data:`SPLITTERS`, registered with
:func:`register_splitter`. CRMArena's nine are registered here under their task names. A CRMArena-Pro category
declares its own in its module (``Category(..., split=..., split_needs=...)``, see
:mod:`crmarena_gym.tasks.pro`) and is registered the first time one of its instances is split, under
``pro:<category name>`` (Pro's names overlap the nine's: ``handle_time`` is both, with other parameters).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._new_case import new_case_lines
from crmarena_gym.tasks._phrasing import named_window, pick, relative_window, say_number

__all__ = [
    "ASKING",
    "PRO_SPLIT_PREFIX",
    "SLOT_WORDS",
    "SPLITTERS",
    "Criterion",
    "InteractiveSplit",
    "interactive_split",
    "register_splitter",
    "return_line",
    "split_of",
    "window_words",
]


#: The slot words of each criterion kind (see the module docs).
SLOT_WORDS: dict[str, tuple[str, ...]] = {
    "window": (
        "when",
        "period",
        "time frame",
        "timeframe",
        "window",
        "date range",
        "dates",
        "time range",
        "how far back",
        "which months",
        "timespan",
        "time period",
    ),
    "direction": (
        "shortest",
        "longest",
        "lowest",
        "highest",
        "fewest",
        "most",
        "least",
        "fastest",
        "slowest",
        "quickest",
        "direction",
        "minimum or maximum",
        "min or max",
        "best or worst",
    ),
    "n_cases": (
        "threshold",
        "how many cases",
        "minimum number",
        "number of cases",
        "at least",
        "case count",
        "cutoff",
        "workload",
    ),
    "product": ("product", "item", "which product"),
    "new_case": ("subject", "description", "case details", "the case", "new case", "details"),
    "purchase_day": ("when", "date", "day", "how long ago", "which day"),
    "description": (
        "describe",
        "description",
        "what kind",
        "which product",
        "what product",
        "item",
        "what did you buy",
    ),
    "case": ("which case", "case id", "the case", "case number"),
    "question": ("question", "ask", "what do you need", "what would you like", "help with"),
    "opportunity": ("opportunity", "which opportunity", "opportunity id", "which deal", "the deal", "deal"),
    "lead": ("which lead", "lead id", "the lead", "lead's id"),
    "quote": ("quote", "which quote", "quote id"),
    "region": ("region", "state", "where", "location", "territory"),
}


#: A question that asks for each criterion kind and for no other (it holds only that kind's slot words, in
#: every family): what an agent that knows what is missing asks (the reactive oracle asks these).
ASKING: dict[str, str] = {
    "window": "For which period?",
    "direction": "Do you want the agent at the lowest or the highest end?",
    "n_cases": "Is there a threshold on the number of cases an agent handled?",
    "product": "Which product is it?",
    "new_case": "What are the case details?",
    "purchase_day": "On which day did you buy it?",
    "description": "Could you describe the item?",
    "case": "Which case should I review?",
    "question": "What is the question?",
    "opportunity": "Which opportunity is it?",
    "lead": "Which lead is it? Its Id, please.",
    "quote": "Which quote is it?",
    "region": "Which region is it from?",
}


@dataclass(frozen=True)
class Criterion:
    """One held-back part of a request.

    Attributes:
        name: The criterion's kind (a key of :data:`SLOT_WORDS`).
        reveal: What the user says to reveal it (one sentence or a short block).
        slots: The slot words of a question that asks for it.
        value: The parameter it stands for (machine-readable, for records and tests).
    """

    name: str
    reveal: str
    slots: tuple[str, ...]
    value: Any = None

    def asked_by(self, message: str) -> bool:
        """Whether ``message`` asks for this criterion: it holds one of the slot words as whole words.

        Example:
            >>> Criterion("window", "In Q1 2022.", SLOT_WORDS["window"]).asked_by("For which PERIOD?")
            True
            >>> Criterion("window", "In Q1 2022.", SLOT_WORDS["window"]).asked_by("Whenever you like.")
            False
        """
        return any(_slot_pattern(slot).search(message) for slot in self.slots)

    def to_dict(self) -> dict[str, Any]:
        """The criterion as JSON-ready data."""
        return {"name": self.name, "reveal": self.reveal, "slots": list(self.slots), "value": self.value}


@dataclass(frozen=True)
class InteractiveSplit:
    """An instance's request as a conversation plays it.

    Attributes:
        opening: What the user says first: the goal, without the held-back criteria.
        criteria: The held-back criteria, in the order a user would give them.
        required: The context the agent is shown (the instance's, less what is held back).
        answer_kind: What the answer is (the task's ``answer_kind``): the scripted user asks for the Id when
            an Id is wanted and the agent answers otherwise.
        full_request: The instance's whole query (what an LLM user is told to get done).
    """

    opening: str
    criteria: tuple[Criterion, ...]
    required: str
    answer_kind: str
    full_request: str
    extras: dict[str, Any] = field(default_factory=dict)

    def criterion(self, name: str) -> Criterion:
        """The criterion called ``name``."""
        for criterion in self.criteria:
            if criterion.name == name:
                return criterion
        raise KeyError(f"no held-back criterion {name!r}; this split holds {[c.name for c in self.criteria]}")


_SLOT_CACHE: dict[str, re.Pattern[str]] = {}


def _slot_pattern(slot: str) -> re.Pattern[str]:
    pattern = _SLOT_CACHE.get(slot)
    if pattern is None:
        words = r"\s+".join(re.escape(w) for w in slot.split())
        pattern = _SLOT_CACHE[slot] = re.compile(rf"(?<![\w]){words}(?![\w])", re.IGNORECASE)
    return pattern


def window_words(rng: np.random.Generator, params: dict[str, Any]) -> str:
    """The words of an instance's window (``params["window"]``), phrased afresh from its spec.

    Example:
        >>> window_words(np.random.default_rng(0), {"today": "2022-05-01",
        ...     "window": {"kind": "named", "quarter": 1, "year": 2022}})[-4:]
        '2022'
    """
    spec = dict(params["window"])
    kind = spec.pop("kind")
    if kind == "relative":
        today = dt.date.fromisoformat(str(params["today"]))
        return relative_window(rng, today, spec["unit"], int(spec["count"])).phrase
    year = int(spec.pop("year"))
    (named, value), *_ = spec.items()
    return named_window(rng, named, value, year).phrase


def _window(rng: np.random.Generator, params: dict[str, Any]) -> Criterion:
    phrase = window_words(rng, params)
    lead = pick(rng, ("I mean {w}.", "{W}.", "That's {w}."))
    text = lead.format(w=phrase, W=phrase[:1].upper() + phrase[1:])
    return Criterion("window", text, SLOT_WORDS["window"], dict(params["window"]))


def _n_cases(rng: np.random.Generator, n: int) -> Criterion:
    if n == 0:
        text = pick(rng, ("Any agent who handled at least one case counts.", "Every agent with a case counts."))
    else:
        noun = "case" if n == 1 else "cases"
        text = f"Only agents who handled more than {say_number(rng, n)} {noun}."
    return Criterion("n_cases", text, SLOT_WORDS["n_cases"], n)


def _product(rng: np.random.Generator, product_id: str) -> Criterion:
    text = pick(rng, ("The product's Id is {p}.", "It is the product with Id {p}.", "Product Id {p}."))
    return Criterion("product", text.format(p=product_id), SLOT_WORDS["product"], product_id)


_RETURN = re.compile(r"\s*Return only[^.]*\.")


def return_line(query: str) -> str:
    """The query's closing instruction ("Return only the Id of the agent."), kept in the opening."""
    match = _RETURN.search(query)
    return match.group(0).strip() if match else ""


def _opening(rng: np.random.Generator, options: tuple[str, ...], query: str) -> str:
    return f"{pick(rng, options)} {return_line(query)}".strip()


def _split_htu_tcu(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    params = instance.params
    if instance.abbrev == "HTU":
        opening = _opening(
            rng,
            (
                "Which agent stands out on average handle time?",
                "I want to know which agent stands out for handle time.",
                "Can you find the agent whose average handle time stands out?",
            ),
            instance.query,
        )
        words = {"min": "shortest", "max": "longest"}
        lead = pick(rng, ("I mean the {d} average handle time.", "The {d} handle time, please."))
    else:
        opening = _opening(
            rng,
            (
                "Which agent stands out on case transfers?",
                "I'd like to know which agent stands out for transferring cases.",
                "Find me the agent that stands out on transfers.",
            ),
            instance.query,
        )
        words = {"min": "fewest", "max": "most"}
        lead = pick(rng, ("I mean the {d} transfers.", "The one with the {d} transfers."))
    direction = Criterion(
        "direction", lead.format(d=words[params["direction"]]), SLOT_WORDS["direction"], params["direction"]
    )
    return split_of(
        instance,
        opening,
        (_window(rng, params), direction, _n_cases(rng, int(params["n_cases"]))),
    )


def _split_tii_mta(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    params = instance.params
    options = (
        (
            "What issue do customers report most about one of our products?",
            "Which issue comes up most for a product of ours?",
        )
        if instance.abbrev == "TII"
        else (
            "Which month stands out for cases about one of our products?",
            "In which month did a product of ours get the most cases?",
        )
    )
    opening = _opening(rng, options, instance.query)
    return split_of(instance, opening, (_product(rng, params["product_id"]), _window(rng, params)))


def _split_bri(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    opening = _opening(
        rng,
        ("Which state closes its cases fastest?", "Where are cases closed the quickest, by state?"),
        instance.query,
    )
    return split_of(instance, opening, (_window(rng, instance.params),))


def _split_ncr(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    params = instance.params
    opening = _opening(
        rng,
        (
            "A new case came in: who should take it under our routing policy?",
            "Which agent should a new case go to, by the routing policy?",
        ),
        instance.query,
    )
    text = "Here it is.\n" + new_case_lines(params["case_subject"], params["case_description"])
    case = Criterion(
        "new_case",
        text,
        SLOT_WORDS["new_case"],
        {"subject": params["case_subject"], "description": params["case_description"]},
    )
    return split_of(instance, opening, (case,))


_DAYS = {1: "yesterday", 2: "two days ago", 7: "a week ago", 14: "two weeks ago"}


def _split_ned(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    params = instance.params
    opening = _opening(
        rng,
        ("Can you find a product I bought?", "I need the details of something I purchased."),
        instance.query,
    )
    day = dt.date.fromisoformat(str(params["purchase_date"]))
    offset = (dt.date.fromisoformat(str(params["today"])) - day).days
    when = _DAYS.get(offset) or (f"{say_number(rng, offset)} days ago" if offset > 0 else f"on {day.isoformat()}")
    # Said relative to today, as the single-turn query says it (the agent has today's date in its context).
    purchase_day = Criterion("purchase_day", f"I bought it {when}.", SLOT_WORDS["purchase_day"], day.isoformat())
    description = Criterion(
        "description",
        f"It's the {params['description']}.",
        SLOT_WORDS["description"],
        params["description"],
    )
    return split_of(instance, opening, (description, purchase_day))


def _split_pvi(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    case_id = instance.params["case_id"]
    opening = _opening(
        rng,
        ("Did an agent break one of our policies on a case?", "I'd like a case checked for a policy breach."),
        instance.query,
    )
    case = Criterion("case", f"The case's Id is {case_id}.", SLOT_WORDS["case"], case_id)
    required = "\n".join(line for line in instance.metadata.required.splitlines() if case_id not in line)
    return split_of(instance, opening, (case,), required=required)


def _split_kqa(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
    question = instance.params["question"]
    opening = pick(
        rng,
        ("I have a question a customer asked me.", "Can you help me answer a customer's question?"),
    )
    return split_of(instance, opening, (Criterion("question", question, SLOT_WORDS["question"], question),))


def split_of(
    instance: TaskInstance, opening: str, criteria: tuple[Criterion, ...], *, required: str | None = None
) -> InteractiveSplit:
    """The split of ``instance`` with this opening and these held-back criteria (the context as the instance
    has it unless ``required`` replaces it)."""
    return InteractiveSplit(
        opening=opening,
        criteria=criteria,
        required=instance.metadata.required if required is None else required,
        answer_kind=instance.spec.answer_kind,
        full_request=instance.query,
    )


Splitter = Callable[[TaskInstance, np.random.Generator], InteractiveSplit]

#: The splitting function of each task, by task name.
SPLITTERS: dict[str, Splitter] = {
    "handle_time": _split_htu_tcu,
    "transfer_count": _split_htu_tcu,
    "top_issue_identification": _split_tii_mta,
    "monthly_trend_analysis": _split_tii_mta,
    "best_region_identification": _split_bri,
    "case_routing": _split_ncr,
    "named_entity_disambiguation": _split_ned,
    "policy_violation_identification": _split_pvi,
    "knowledge_qa": _split_kqa,
}

# The hidden parameters each family's split is written from.
_NEEDS: dict[str, tuple[str, ...]] = {
    "handle_time": ("today", "window", "direction", "n_cases"),
    "transfer_count": ("today", "window", "direction", "n_cases"),
    "top_issue_identification": ("today", "window", "product_id"),
    "monthly_trend_analysis": ("today", "window", "product_id"),
    "best_region_identification": ("today", "window"),
    "case_routing": ("case_subject", "case_description"),
    "named_entity_disambiguation": ("today", "purchase_date", "description"),
    "policy_violation_identification": ("case_id",),
    "knowledge_qa": ("question",),
}


#: The prefix of a CRMArena-Pro category's key in :data:`SPLITTERS` (``pro:handle_time``).
PRO_SPLIT_PREFIX = "pro:"


def _key(task: str, pro: bool) -> str:
    return f"{PRO_SPLIT_PREFIX}{task}" if pro else task


def register_splitter(task: str, splitter: Splitter, needs: tuple[str, ...] = (), *, pro: bool = False) -> None:
    """Add (or replace) the split of a task.

    Args:
        task: The task's name, as in instances.
        splitter: ``(instance, rng) -> InteractiveSplit``, written from ``instance.params`` only.
        needs: The hidden parameters it reads (an instance without them is refused with a clear message).
        pro: The task is a CRMArena-Pro category (kept apart from the nine's tasks of the same name).
    """
    SPLITTERS[_key(task, pro)] = splitter
    _NEEDS[_key(task, pro)] = tuple(needs)


def _pro_splitter(task: str) -> Splitter:
    """The split a CRMArena-Pro category declares, registered on first use."""
    from crmarena_gym.tasks.pro import pro_category

    category = pro_category(task)
    if category.split is None:
        raise ValueError(f"CRMArena-Pro category {task!r} declares no interactive split")
    register_splitter(task, category.split, category.split_needs, pro=True)
    return category.split


def interactive_split(instance: TaskInstance, seed: int = 0) -> InteractiveSplit:
    """The conversation form of a generated instance (deterministic given the instance and ``seed``).

    Raises:
        ValueError: The task has no split, or the instance lacks the hidden parameters it is written from
            (a published instance has none: generate instances with :func:`~crmarena_gym.tasks.generate_tasks`).
    """
    key = _key(instance.task, instance.is_pro)
    splitter = SPLITTERS.get(key)
    if splitter is None and instance.is_pro:
        splitter = _pro_splitter(instance.task)
    if splitter is None:
        raise ValueError(f"task {instance.task!r} has no interactive split; these have one: {', '.join(SPLITTERS)}")
    missing = [name for name in _NEEDS.get(key, ()) if instance.params.get(name) in (None, "")]
    if missing:
        raise ValueError(
            f"instance {instance.idx} ({instance.abbrev}) lacks the hidden parameter(s) {', '.join(missing)} its "
            "interactive split is written from (published instances have none; use generated instances)"
        )
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, instance.idx, 28])
    return splitter(instance, rng)
