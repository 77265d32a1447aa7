"""What CRMArena-Pro's conversation splits share: the window, the direction, a record's Id, the trimmed context.

Each category module writes its own split (``Category(split=..., split_needs=...)``): the opening that states the
goal, and the criteria held back with the words that reveal them (see :mod:`crmarena_gym.tasks._interactive`). The
helpers here phrase the pieces several categories hold back, always from the instance's hidden parameters:

- the window, phrased afresh from its spec (``params["window"]``) and ``params["today"]``, and checked to resolve to
  the instance's own ``start`` and ``end`` (a spec that does not is refused, never phrased wrongly);
- the direction (lowest or highest), in the category's own words;
- a record's Id (the opportunity, lead, quote or case the question is about), taken out of the context the agent
  is shown: unlike upstream Pro, whose simulated user withholds only the query's criteria (PRO.md section 5), the
  rebuild holds these ids back too, as CRMArena's policy_violation_identification split does, so that every
  workflow and policy question has something the agent must ask for.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np

from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._interactive import SLOT_WORDS, Criterion, InteractiveSplit, split_of
from crmarena_gym.tasks._phrasing import capitalize_first, pick
from crmarena_gym.tasks.pro._windows import named_window, relative_window

__all__ = [
    "answer_format",
    "direction_criterion",
    "id_criterion",
    "nothing_held_back",
    "opening",
    "pro_window_phrase",
    "product_and_window_held_back",
    "record_held_back",
    "window_and_direction_held_back",
    "window_criterion",
    "without_lines",
]


def pro_window_phrase(rng: np.random.Generator, params: dict[str, Any]) -> str:
    """The words of a Pro instance's window, phrased afresh from ``params["window"]`` and ``params["today"]``.

    Raises:
        ValueError: The spec is not one of Pro's window kinds, or does not resolve to the instance's ``start`` and
            ``end`` (the words would name another period than the gold was computed over).

    Example:
        >>> pro_window_phrase(np.random.default_rng(0), {"today": "2023-05-14", "start": "2023-02-14",
        ...     "end": "2023-05-14", "window": {"unit": "month", "count": 3}}).endswith("months")
        True
    """
    spec = dict(params["window"])
    today = dt.date.fromisoformat(str(params["today"]))
    if "unit" in spec:
        count = spec.get("count", spec.get("n"))
        window = relative_window(rng, today, spec["unit"], int(count))
    else:
        year = int(spec.pop("year"))
        if len(spec) != 1 or next(iter(spec)) not in ("month", "quarter", "season"):
            raise ValueError(f"not a Pro window spec: {params['window']!r}")
        ((kind, value),) = spec.items()
        window = named_window(rng, kind, value, year)
    resolved = (window.start.isoformat(), window.end.isoformat())
    if resolved != (str(params["start"]), str(params["end"])):
        raise ValueError(
            f"window {params['window']!r} on {today} resolves to {resolved}, not the instance's "
            f"({params['start']}, {params['end']})"
        )
    return window.phrase


def window_criterion(rng: np.random.Generator, params: dict[str, Any]) -> Criterion:
    """The held-back window, revealed in words phrased afresh (not copied from the query)."""
    phrase = pro_window_phrase(rng, params)
    lead = pick(rng, ("I mean {w}.", "{W}.", "That's {w}."))
    text = lead.format(w=phrase, W=capitalize_first(phrase))
    return Criterion("window", text, SLOT_WORDS["window"], dict(params["window"]))


def direction_criterion(rng: np.random.Generator, direction: str, words: dict[str, tuple[str, ...]]) -> Criterion:
    """The held-back direction (``min`` or ``max``) said with one of the category's ``words`` for it (``{"min":
    ("shortest average handle time",), ...}``)."""
    if direction not in words:
        raise ValueError(f"direction must be one of {sorted(words)}, got {direction!r}")
    lead = pick(rng, ("I mean the {d}.", "The {d}, please.", "The one with the {d}."))
    return Criterion("direction", lead.format(d=pick(rng, words[direction])), SLOT_WORDS["direction"], direction)


def id_criterion(rng: np.random.Generator, name: str, noun: str, record_id: str) -> Criterion:
    """A held-back record Id (criterion ``name``: ``opportunity``, ``lead``, ``quote``, ``case``), the ``noun``
    naming the record."""
    text = pick(rng, ("The {n}'s Id is {i}.", "It is the {n} with Id {i}.", "{N} Id {i}."))
    return Criterion(name, text.format(n=noun, N=capitalize_first(noun), i=record_id), SLOT_WORDS[name], record_id)


def record_held_back(name: str) -> Callable[[TaskInstance, np.random.Generator], InteractiveSplit]:
    """The splitter of a category whose question is about one record (``name``: ``opportunity``, ``lead``,
    ``quote``, ``case``; its Id in the instance's ``<name>_id`` parameter): the Id is held back and its line
    leaves the context. The question already says "this opportunity", so the user opens with it as it is."""

    def split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
        """Held back: the record's Id (its line leaves the context)."""
        record = instance.params[f"{name}_id"]
        criterion = id_criterion(rng, name, name, record)
        required = without_lines(instance.metadata.required, record)
        return split_of(instance, instance.query, (criterion,), required=required)

    return split


def product_and_window_held_back(
    goals: tuple[str, ...], answer: str
) -> Callable[[TaskInstance, np.random.Generator], InteractiveSplit]:
    """The splitter of a category whose question is about one product over a window (its Id in the instance's
    ``product_id`` parameter, the window in ``window``): both are held back, and the user opens with one of the
    category's ``goals`` and its ``answer`` format sentence.

    Example:
        >>> split = product_and_window_held_back(("Which month peaked?",), "Return only the name of the month.")
        >>> split.__doc__
        'Held back: the product and the window.'
    """

    def split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
        """Held back: the product and the window."""
        p = instance.params
        product = id_criterion(rng, "product", "product", p["product_id"])  # drawn before the opening: same words
        return split_of(instance, opening(rng, goals, instance.query, (answer,)), (product, window_criterion(rng, p)))

    return split


def window_and_direction_held_back(
    goals: tuple[str, ...], said: dict[str, tuple[str, ...]], answer: str
) -> Callable[[TaskInstance, np.random.Generator], InteractiveSplit]:
    """The splitter of a category whose question asks for the extreme (``direction``: "min" or "max", said in the
    words of ``said``) over a window: both are held back, and the user opens with one of ``goals`` and the
    ``answer`` format sentence.

    Example:
        >>> said = {"min": ("fewest",), "max": ("most",)}
        >>> window_and_direction_held_back(("Who stands out?",), said, "Return only the Id.").__doc__
        'Held back: the window and the direction.'
    """

    def split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
        """Held back: the window and the direction."""
        p = instance.params
        criteria = (window_criterion(rng, p), direction_criterion(rng, p["direction"], said))
        return split_of(instance, opening(rng, goals, instance.query, (answer,)), criteria)

    return split


def without_lines(required: str, *values: str) -> str:
    """The context without its lines that hold any of ``values`` (the held-back record's Id line)."""
    return "\n".join(line for line in required.splitlines() if not any(v and v in line for v in values))


def answer_format(query: str, formats: tuple[str, ...]) -> str:
    """The answer-format sentence ``query`` ends with, among the category's ``formats`` ("" when none matches)."""
    for sentence in sorted(formats, key=len, reverse=True):
        if sentence.strip() and query.rstrip().endswith(sentence.strip()):
            return sentence.strip()
    return ""


def opening(rng: np.random.Generator, goals: tuple[str, ...], query: str, formats: tuple[str, ...]) -> str:
    """One of the category's ``goals`` (the request without its held-back criteria) and the query's answer format."""
    return f"{pick(rng, goals)} {answer_format(query, formats)}".strip()


def nothing_held_back(request: str) -> Callable[[TaskInstance, np.random.Generator], InteractiveSplit]:
    """The splitter of a confidentiality category, which holds nothing back: the request for ``request`` is the
    test itself, and the right reply declines it whatever its details, so the agent lacks nothing it must ask
    for; the user asks the whole question at once (the reason is kept in the split's ``extras``).

    Example:
        >>> split = nothing_held_back("internal operational data")
        >>> split.__doc__.split(":")[0]
        'Nothing held back'
    """
    why = (
        f"the request for {request} is the test itself: the right reply declines it whatever its details, so "
        "there is nothing the agent lacks and must ask for; the user asks the whole question at once"
    )

    def split(instance: TaskInstance, rng: np.random.Generator) -> InteractiveSplit:
        """Nothing held back: a confidentiality request is asked whole."""
        whole = split_of(instance, instance.query, ())
        whole.extras["nothing_held_back"] = why
        return whole

    return split
