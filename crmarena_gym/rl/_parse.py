"""The ``parsed`` help level's facts: what a question states, read from its text alone.

:func:`parse_question` reads the question and its context as the agent sees them and fills the same
:class:`~crmarena_gym.rl.QuestionFacts` that :func:`~crmarena_gym.rl.question_facts` fills from an
instance's hidden parameters (the ``oracle-args`` help level). It never sees the instance: a question
whose wording it cannot read gives no fact, and the candidates that need that fact are not offered.
Field by field:

- ``today``: the context's line ``Today's date: YYYY-MM-DD``.
- ``start``, ``end``: the window the question names, resolved with the date tools' own rules
  (:func:`~crmarena_gym.tools.get_start_date`, :func:`~crmarena_gym.tools.get_period`): "in the past 3
  months", "over the last two quarters", "over the past fortnight", "in the past week", "over the past
  year" (twelve months) end at the start of today's date; "in Q3 2022", "during the third quarter of
  2022", "in March of 2023", "in the winter of 2021", "Fall 2023", "the 2022 summer" are the named period
  of that year.
- ``n_cases``: "more than N case(s)" or "over N cases" (digits or a number word); "at least one case",
  "any case(s)" and the original's bare "who managed cases" are more than 0.
- ``direction``: the question's first extreme word: shortest, lowest, quickest, fastest, fewest, least
  (``min``); longest, highest, slowest, most, largest (``max``). "most quickly" and "least often" read
  the word after the degree word.
- ``product_id``, ``contact_id``, ``case_id``, ``issue_id``: the one id of that kind (key prefix ``01t``,
  ``003``, ``500``, ``a1M``) quoted in the text; two different ones give none.
- ``purchase_date``: "yesterday", "two days ago", "a week ago", "a fortnight ago", "12 days back", "last
  week", "a month ago", "three days earlier", "on March 3, 2024", "on 2024-03-03", counted back from
  today's date by the date tools' rules (a month back from March 31 is the last day of February).
- ``search_term``: the thing a customer says they bought ("the women's red trail jacket for hiking I
  bought ..."): the words between the article and "I bought/purchased/ordered", without a trailing "for
  ..." or "made of ..." and a leading "men's", "women's" or "kids'" (words a product search would not
  find in every name); ``search_terms`` holds it, its last two words and its last word (``red trail
  jacket``, ``trail jacket``, ``jacket``): which words are the product's type, no parser of the sentence
  can tell, so each reading is offered.
- ``case_subject``, ``case_description``: the described new case's ``- Subject:`` and ``- Description:``
  lines (the original's ``- Case Subject:`` too).

Example:
    >>> text = "Which agent had the shortest handle time in Q3 2022 among agents who handled more than two cases?"
    >>> facts = parse_question("HTU", text + "\\n\\n# Context\\n- Today's date: 2023-01-05")
    >>> facts.start, facts.end, facts.n_cases, facts.direction
    ('2022-07-01T00:00:00Z', '2022-10-01T00:00:00Z', 2, 'min')
"""

from __future__ import annotations

import datetime as dt
import re

from crmarena_gym._memory import bytes_cache
from crmarena_gym.rl._facts import QuestionFacts
from crmarena_gym.tasks import read_new_case
from crmarena_gym.tools import get_period, get_start_date, to_argument_datetime

__all__ = [
    "parse_direction",
    "parse_n_cases",
    "parse_purchase_date",
    "parse_question",
    "parse_search_term",
    "parse_window",
    "question_and_context",
    "question_part",
]

_NUMBER_WORDS = {
    word: n
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER = r"(\d+|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
# English names written out: calendar.month_name follows the process locale.
_MONTH_NAMES = tuple("January February March April May June July August September October November December".split())
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_SEASONS = {"winter": "Winter", "spring": "Spring", "summer": "Summer", "autumn": "Autumn", "fall": "Autumn"}
_UNITS = {"day": "days", "week": "weeks", "month": "months", "quarter": "quarters", "year": "months"}
_PER_UNIT = {"year": 12}  # a year is twelve months to the date tools, which have no year unit
_TODAY_RE = re.compile(r"Today's date:\s*(\d{4}-\d{2}-\d{2})")
_ID_PREFIXES = {"product_id": "01t", "contact_id": "003", "case_id": "500", "issue_id": "a1M"}


def _number(word: str) -> int | None:
    word = word.lower()
    if word.isdigit():
        return int(word)
    if word in ("a", "an"):
        return 1
    return _NUMBER_WORDS.get(word)


def question_part(text: str) -> str:
    """The question of an observation text, without its context (``# Context``) and conventions.

    Example:
        >>> question_part("Who won?\\n\\n# Context\\n- Today's date: 2021-01-01")
        'Who won?'
    """
    return re.split(r"\n\s*# (?:Context|Conventions)\b", text, maxsplit=1)[0].strip()


def question_and_context(text: str) -> str:
    """An observation text without its conventions (``# Conventions``: the same for every question).

    Example:
        >>> print(question_and_context("Who?\\n# Context\\n- A\\n\\n# Conventions\\n- Q1 covers January"))
        Who?
        # Context
        - A
    """
    return re.split(r"\n\s*# Conventions\b", text, maxsplit=1)[0].strip()


def _today(text: str) -> dt.date | None:
    match = _TODAY_RE.search(text)
    if match is None:
        return None
    try:
        return dt.date.fromisoformat(match.group(1))
    except ValueError:
        return None


_RELATIVE_RE = re.compile(
    rf"\b(?:in|over|during|within|for)\s+the\s+(?:past|last|previous)\s+(?:{_NUMBER}\s+)?(day|week|month|quarter|year|fortnight)s?\b",
    re.IGNORECASE,
)
_QUARTER_RE = re.compile(
    r"\b(?:Q([1-4])|(first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter)(?:\s+of)?,?\s+(\d{4})\b", re.IGNORECASE
)
_MONTH_RE = re.compile(rf"\b({'|'.join(_MONTH_NAMES)})(?:\s+of)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_SEASON_RE = re.compile(r"\b(winter|spring|summer|autumn|fall)(?:\s+of)?,?\s+(\d{4})\b", re.IGNORECASE)
_YEAR_SEASON_RE = re.compile(r"\b(\d{4})\s+(winter|spring|summer|autumn|fall)\b", re.IGNORECASE)  # "the 2022 summer"


def parse_window(question: str, today: dt.date | None) -> tuple[str, str] | None:
    """The window a question names as ``(start, end)`` in the tools' datetime format, or None.

    A relative window ("the past 3 months") needs today's date; a named one does not.

    Example:
        >>> parse_window("Which state closed cases fastest over the past fortnight?", dt.date(2021, 3, 15))
        ('2021-03-01T00:00:00Z', '2021-03-15T00:00:00Z')
        >>> parse_window("Top issue in the third quarter of 2022?", None)
        ('2022-07-01T00:00:00Z', '2022-10-01T00:00:00Z')
        >>> parse_window("Top issue lately?", dt.date(2021, 3, 15)) is None
        True
    """
    relative = _RELATIVE_RE.search(question)
    if relative is not None and today is not None:
        amount, unit = relative.group(1), relative.group(2).lower()
        count = 1 if amount is None else _number(amount)
        if unit == "fortnight":
            unit, count = "week", 2 * (count or 1)
        if count is None or count < 1:
            return None
        end = to_argument_datetime(today)
        return get_start_date(end, _UNITS[unit], count * _PER_UNIT.get(unit, 1)), end  # type: ignore[arg-type]
    named: list[tuple[int, str, int]] = []  # (position, period name, year)
    for match in _QUARTER_RE.finditer(question):
        quarter = int(match.group(1)) if match.group(1) else _ORDINALS[match.group(2).lower()]
        named.append((match.start(), f"Q{quarter}", int(match.group(3))))
    for match in _MONTH_RE.finditer(question):
        named.append((match.start(), match.group(1).capitalize(), int(match.group(2))))
    for match in _SEASON_RE.finditer(question):
        named.append((match.start(), _SEASONS[match.group(1).lower()], int(match.group(2))))
    for match in _YEAR_SEASON_RE.finditer(question):
        named.append((match.start(), _SEASONS[match.group(2).lower()], int(match.group(1))))
    if not named:
        return None
    _position, name, year = min(named)
    period = get_period(name, year)  # type: ignore[arg-type]
    if isinstance(period, str):  # an error text (a year out of range)
        return None
    return period["start_date"], period["end_date"]


_MORE_THAN_RE = re.compile(rf"\b(?:more than|over)\s+{_NUMBER}\s+cases?\b", re.IGNORECASE)
_ANY_CASE_RE = re.compile(
    r"\b(?:at least one|any|a single)\s+cases?\b|\b(?:handled|managed|worked on|handling|managing)\s+cases\b",
    re.IGNORECASE,
)


def parse_n_cases(question: str) -> int | None:
    """The case-count threshold ("more than N cases"): N, 0 for "any case" or "at least one case", else None.

    Example:
        >>> parse_n_cases("among agents who handled more than three cases"), parse_n_cases("who managed any case")
        (3, 0)
    """
    match = _MORE_THAN_RE.search(question)
    if match is not None:
        return _number(match.group(1))
    return 0 if _ANY_CASE_RE.search(question) else None


_MIN_WORDS = ("shortest", "lowest", "quickest", "fastest", "fewest", "least", "smallest", "minimum")
_MAX_WORDS = ("longest", "highest", "slowest", "most", "largest", "greatest", "maximum")
# Adverbs after a degree word ("most quickly", "least often"): the adverb says which way the measure goes.
_QUICK_ADVERBS = ("quickly", "fast", "rapidly", "promptly", "soon")
_OFTEN_ADVERBS = ("often", "frequently", "commonly")
# "at least one case", "at most" are quantities, not the extreme asked for.
_EXTREME_RE = re.compile(r"(?<!\bat )\b(" + "|".join((*_MIN_WORDS, *_MAX_WORDS)) + r")\b(?:\s+(\w+))?", re.IGNORECASE)


def parse_direction(question: str) -> str | None:
    """``min`` or ``max``: which end of the measure the question asks for (its first extreme word), or None.

    Example:
        >>> [parse_direction(q) for q in ("the lowest number of transfers", "resolved most quickly",
        ...                               "transferred cases the least often", "clearly more cases")]
        ['min', 'min', 'min', None]
    """
    match = _EXTREME_RE.search(question)
    if match is None:
        return None
    word, after = match.group(1).lower(), (match.group(2) or "").lower()
    if word in ("most", "least") and after in _QUICK_ADVERBS:
        return "min" if word == "most" else "max"  # most quickly: the shortest time
    if word in ("most", "least") and after in _OFTEN_ADVERBS:
        return "max" if word == "most" else "min"
    return "min" if word in _MIN_WORDS else "max"


_DAYS_AGO_RE = re.compile(rf"\b{_NUMBER}\s+(day|week|month)s?\s+(?:ago|back|before|earlier|prior)\b", re.IGNORECASE)
_A_UNIT_AGO_RE = re.compile(r"\b(?:a|one|exactly a)\s+(day|week|fortnight|month)\s+(?:ago|back)\b", re.IGNORECASE)
_ON_DATE_RE = re.compile(
    rf"\bon\s+(?:({'|'.join(_MONTH_NAMES)})\s+(\d{{1,2}}),?\s+(\d{{4}})|(\d{{4}}-\d{{2}}-\d{{2}}))\b"
)


def parse_purchase_date(question: str, today: dt.date | None) -> str | None:
    """The day a customer says they bought something, in the tools' datetime format, or None.

    Example:
        >>> parse_purchase_date("the cap I purchased a fortnight ago", dt.date(2021, 3, 15))
        '2021-03-01T00:00:00Z'
        >>> parse_purchase_date("the cap I bought on March 3, 2021", None)
        '2021-03-03T00:00:00Z'
    """
    on = _ON_DATE_RE.search(question)
    if on is not None:
        try:
            if on.group(4):
                return to_argument_datetime(on.group(4))
            month = _MONTH_NAMES.index(on.group(1)) + 1
            return to_argument_datetime(dt.date(int(on.group(3)), month, int(on.group(2))))
        except ValueError:
            return None
    if today is None:
        return None
    lowered = question.lower()
    amount: tuple[int, str] | None = None  # (count, unit of get_start_date)
    if re.search(r"\bthe day before yesterday\b", lowered):
        amount = (2, "days")
    elif re.search(r"\byesterday\b", lowered):
        amount = (1, "days")
    elif (last := re.search(r"\blast (week|month)\b", lowered)) is not None:
        amount = (1, f"{last.group(1)}s")
    elif (match := _A_UNIT_AGO_RE.search(question)) is not None:
        unit = match.group(1).lower()
        amount = (2, "weeks") if unit == "fortnight" else (1, f"{unit}s")
    elif (match := _DAYS_AGO_RE.search(question)) is not None:
        count = _number(match.group(1))
        amount = None if count is None else (count, f"{match.group(2).lower()}s")
    if amount is None:
        return None
    return get_start_date(to_argument_datetime(today), amount[1], amount[0])  # type: ignore[arg-type]


_BOUGHT_RE = re.compile(r"\s+(?:that\s+)?I(?:'ve)?\s+(?:bought|purchased|ordered|got)\b", re.IGNORECASE)
_DETERMINERS = frozenset("the my a an those that these".split())
_CLAUSE_WORDS = frozenset("for with from in on at".split())  # a determiner after one is inside a trailing clause
_CLAUSE_RE = re.compile(r"\s+(?:for|made of|made from|with|in the)\s+", re.IGNORECASE)
_AUDIENCE = ("men's", "women's", "kids'", "kids", "mens", "womens", "men’s", "women’s", "kids’")


def parse_search_term(question: str) -> str | None:
    """The product words of "the <description> I bought ...": a search term for ``search_products``, or None.

    The description starts after the last determiner that is not inside a trailing clause ("for the gym")
    and ends before such a clause; an audience word at its start is dropped.

    Example:
        >>> parse_search_term("Can you pull up the women's trail jacket for hiking I bought a week ago?")
        'trail jacket'
        >>> parse_search_term("I need the details of the resistance bands set for home workouts I purchased")
        'resistance bands set'
    """
    verb = _BOUGHT_RE.search(question)
    if verb is None:
        return None
    words = question[: verb.start()].split()
    starts = [i for i, word in enumerate(words) if word.lower() in _DETERMINERS and i + 1 < len(words)]
    if not starts:
        return None
    free = [i for i in starts if i == 0 or words[i - 1].lower() not in _CLAUSE_WORDS or i == starts[0]]
    phrase = " ".join(words[free[-1] + 1 :])
    kept = _CLAUSE_RE.split(phrase, maxsplit=1)[0].split()
    while kept and kept[0].lower() in _AUDIENCE:
        kept = kept[1:]
    return " ".join(kept) or None


def _quoted_id(text: str, prefix: str) -> str | None:
    found = set(re.findall(rf"\b{prefix}[A-Za-z0-9]{{15}}\b", text))
    return found.pop() if len(found) == 1 else None


# Read again at every reset of the question's episodes; the facts are frozen, so one object serves them all.
@bytes_cache(max_entries=8192, max_bytes=32 * 1024 * 1024)
def parse_question(task: str, text: str) -> QuestionFacts:
    """The facts ``text`` (a question with its context, as the environment shows it) states.

    Args:
        task: The task's abbreviation (public: the environment says which task it poses).
        text: The first observation: the question, its context and the conventions.

    Returns:
        The facts, each None where the text does not state it in a form this parser reads (see the module
        docs).
    """
    question = question_part(text)
    today = _today(text)
    window = parse_window(question, today)
    purchase_date = parse_purchase_date(question, today)
    contact_id = _quoted_id(text, _ID_PREFIXES["contact_id"])
    term = parse_search_term(question) if purchase_date and contact_id else None
    words = term.split() if term else []
    readings = tuple(dict.fromkeys(" ".join(words[-n:]) for n in (len(words), 2, 1) if words))
    subject, description = read_new_case(question)
    return QuestionFacts(
        task=task,
        text=text,
        today=today.isoformat() if today is not None else None,
        start=window[0] if window else None,
        end=window[1] if window else None,
        n_cases=parse_n_cases(question),
        direction=parse_direction(question),
        product_id=_quoted_id(text, _ID_PREFIXES["product_id"]),
        contact_id=contact_id,
        case_id=_quoted_id(text, _ID_PREFIXES["case_id"]),
        issue_id=_quoted_id(text, _ID_PREFIXES["issue_id"]),
        purchase_date=purchase_date if contact_id else None,
        search_term=term,
        case_subject=subject,
        case_description=description,
        search_terms=readings,
    )
