"""A purchase as a named-entity question (NED) states it: the product described, the day said relative to today;
written and read back.

The generator phrases each question with :data:`PURCHASE_TEMPLATES`, :func:`describe_product` and
:func:`say_purchase_day`; the oracle's solver reads it back with :func:`read_purchase_question` (what the customer
described and when), :func:`described_product` (what to search the products for) and
:func:`read_purchase_day` (the day, from today's date in the context): a perfect reader of the generator's texts, as
:func:`~crmarena_gym.datagen.read_case_text` is of a new case's. The generator keeps only questions that read back as
the purchase they were drawn for.

Example:
    >>> import datetime as dt
    >>> q = read_purchase_question("Please find the women's navy running tank for hot-weather training I bought "
    ...                            "two days ago. Return only the Id of the product.")
    >>> q
    PurchaseQuestion(description="women's navy running tank for hot-weather training", when='two days ago')
    >>> described_product(q.description), read_purchase_day(q.when, dt.date(2023, 4, 3))
    ('navy running tank', datetime.date(2023, 4, 1))
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from crmarena_gym.tasks._periods import MONTH_NAMES
from crmarena_gym.tasks._phrasing import NUMBER_WORDS, pick, say_number

__all__ = [
    "ASK_FOR_ID",
    "AUDIENCE_WORDS",
    "PURCHASE_TEMPLATES",
    "PurchaseQuestion",
    "describe_product",
    "described_product",
    "read_purchase_day",
    "read_purchase_question",
    "say_purchase_day",
]

#: How a description names who a product is cut for, by the catalog's audience.
AUDIENCE_WORDS = {"men": "men's", "women": "women's", "kids": "kids'"}

#: The questions, ``{desc}`` the description and ``{when}`` the day; :data:`ASK_FOR_ID` follows each.
PURCHASE_TEMPLATES = (
    "Can you pull up the {desc} I bought {when}?",
    "I'm looking for the {desc} I purchased {when}. Which product was that?",
    "Could you show me the {desc} I ordered {when}?",
    "Please find the {desc} I bought {when}.",
    "I need the details of the {desc} I purchased {when}.",
)
ASK_FOR_ID = " Return only the Id of the product."

# Days between the purchase and today, and how a customer says it; weighted toward the recent past.
_DAYS_AGO: dict[int, tuple[str, ...]] = {
    1: ("yesterday",),
    2: ("two days ago", "the day before yesterday", "2 days ago"),
    7: ("a week ago", "one week ago", "exactly a week ago", "seven days ago"),
    14: ("a fortnight ago", "two weeks ago", "fourteen days ago", "14 days ago"),
    21: ("three weeks ago", "21 days ago"),
    28: ("four weeks ago", "28 days ago"),
}
_SAID_DAYS = {phrase: days for days, phrases in _DAYS_AGO.items() for phrase in phrases}
# What follows the product's type in a description: its use or its material (neither ever in a type).
_TAILS = (" for ", " made of ")


def _template_pattern(template: str) -> re.Pattern[str]:
    parts = re.escape(template).replace(r"\{desc\}", "(?P<desc>.+?)").replace(r"\{when\}", "(?P<when>.+?)")
    return re.compile(parts + re.escape(ASK_FOR_ID))


@functools.cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    return tuple(_template_pattern(t) for t in PURCHASE_TEMPLATES)  # at the first read, not at start-up


_DAYS_SAID = re.compile(r"(?P<n>\d+|[a-z]+) days (?:ago|back)")
_ON_DAY = re.compile(r"on (?:(?P<iso>\d{4}-\d{2}-\d{2})|(?P<month>[A-Z][a-z]+) (?P<day>\d{1,2}), (?P<year>\d{4}))")


def say_purchase_day(rng: np.random.Generator, days: int, day: dt.date) -> str:
    """How a customer says the day ``day``, ``days`` before today: mostly relative, now and then as a date."""
    if rng.random() < 0.15:
        return pick(rng, (f"on {MONTH_NAMES[day.month - 1]} {day.day}, {day.year}", f"on {day.isoformat()}"))
    if days in _DAYS_AGO:
        return pick(rng, _DAYS_AGO[days])
    amount = say_number(rng, days)
    return pick(rng, (f"{amount} days ago", f"{amount} days back"))


def describe_product(rng: np.random.Generator, kind: str, audience: str | None, details: dict[str, Any]) -> str:
    """A vague description: the product's type (``kind``) plus at most two things its record supports (its audience,
    a colour or adjective before the type; its use or material after it)."""
    extras: list[str] = []
    if audience and rng.random() < 0.6:
        extras.append(audience)
    choices = [k for k in ("colour", "adjective") if k in details]
    if choices and rng.random() < 0.5:
        extras.append(details[pick(rng, choices)])
    text = " ".join([*extras, kind.lower()])
    if "use" in details and rng.random() < 0.3:
        text += f" for {details['use']}"
    elif "material" in details and rng.random() < 0.15:
        text += f" made of {details['material']}"
    return text


@dataclass(frozen=True)
class PurchaseQuestion:
    """What a named-entity question says: the customer's description of the product, and when it was bought.

    Attributes:
        description: The description as written (``"women's navy running tank"``).
        when: The day as the customer says it (``"two days ago"``, ``"on 2023-04-02"``).
    """

    description: str
    when: str


def read_purchase_question(text: str) -> PurchaseQuestion | None:
    """The description and the day that ``text`` (a question, possibly followed by its context) states in one of
    :data:`PURCHASE_TEMPLATES`; None for a text no template writes."""
    for pattern in _patterns():
        match = pattern.match(text.strip())
        if match is not None:
            return PurchaseQuestion(match["desc"], match["when"])
    return None


def described_product(description: str) -> str:
    """What to search the products for, read off ``description`` (:func:`describe_product`'s form): the words before
    its use or material (which the product's record may word otherwise), without the audience it begins with.

    Every word left is on the described product's record (its type and adjective in its name, its colour in its
    description), so the search finds it and fewer look-alikes than its type alone.

    Example:
        >>> described_product("kids' charcoal grey swim goggles made of silicone")
        'charcoal grey swim goggles'
        >>> described_product("men's performance tee for hard workouts")
        'performance tee'
    """
    cuts = [description.find(tail) for tail in _TAILS if tail in description]
    head = description[: min(cuts)] if cuts else description
    audience = next((f"{w} " for w in AUDIENCE_WORDS.values() if head.startswith(f"{w} ")), "")
    return head.removeprefix(audience).strip()


def read_purchase_day(when: str, today: dt.date) -> dt.date | None:
    """The day ``when`` (as :func:`say_purchase_day` says it) names, ``today`` being today; None if it names none."""
    when = when.strip()
    days = _SAID_DAYS.get(when)
    if days is None and (said := _DAYS_SAID.fullmatch(when)) is not None:
        n = said["n"]
        days = int(n) if n.isdigit() else (NUMBER_WORDS.index(n) if n in NUMBER_WORDS else None)
    if days is not None:
        return today - dt.timedelta(days=days)
    on = _ON_DAY.fullmatch(when)
    if on is None:
        return None
    try:
        if on["iso"]:
            return dt.date.fromisoformat(on["iso"])
        return dt.date(int(on["year"]), MONTH_NAMES.index(on["month"]) + 1, int(on["day"]))
    except ValueError:  # not a date, or not a month's name
        return None
