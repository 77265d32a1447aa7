"""The ``tools`` help level: the candidates name tools, and the policy types every argument itself.

A call is made in several choices. With no call under way, the slots offer each task function (``call_*``:
one slot per function, offered when every argument it requires has at least one value of its type to
choose from), the submissions of values seen, and the knowledge answers. Choosing a function starts a
:class:`PendingCall`; then, one argument at a time in the function's order, the slots offer the values of
that argument's type seen so far (``value_*``, newest first, the question being the oldest) and, for an
optional argument, ``omit``. When the last argument is chosen the call goes to the environment. The
choices in between do not call the environment and use no turn of its budget; they earn no reward.

The values of each type (:func:`argument_options`), from the schema of the function's argument:

- a datetime (``start_date``, ``end_date``, ``purchase_date``): the datetimes the date tools returned
  (``get_start_date``'s, ``get_period``'s ``start_date`` and ``end_date``) and the ``YYYY-MM-DD`` dates the
  question and its context show, written in the tools' format (``2021-03-01T00:00:00Z``);
- a name from the schema's list (``period_name``: ``January`` ... ``Q1`` ... ``Fall``; ``period``): every
  name of the list, in its order;
- a record id (``product_id``, ``contact_id``, ``case_id``, ``account_id``): the ids of that object (its
  key prefix: ``01t``, ``003``, ``500``, ``001``) in short results and quoted in the question;
- a number (``n_cases``, ``year``, ``interval_count``): the numbers the question writes (digits or a
  number word), then 0, 1 and 2;
- a search term: the content words of the conversation fetched (as one term), of the question (as one
  term), then each content word of the question alone;
- a list of ids or words (``order_item_ids``, ``agent_ids``, ``issue_ids``, ``statuses`` ...): each
  result that is a list of texts, whole; the ``Id`` of each record a result listed, as a one-item list;
  each phrase the question or its context quotes (``'Closed'``; not the conventions every question
  shares), as a one-item list;
- a mapping of ids to numbers (``values_by_id``, ``agent_handled_cases``): each such result;
- a list of records (``cases``, ``subset_cases``): each such result.

Nothing here reads the question for meaning: no window, threshold, direction or product is worked out,
and no hidden parameter is read. Which period name, which number, which date goes where, the policy
chooses; the features (:class:`TypedSlotFeatures`) say where each value came from and whether the
question writes it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crmarena_gym._memory import bytes_cache
from crmarena_gym.rl._candidates import (
    NONE_AFTER,
    CandidateState,
    SlotGroup,
    StepRecord,
    call_text,
    none_offered,
    observed_values,
)
from crmarena_gym.rl._checks import require_positive_ints
from crmarena_gym.rl._encoding import FUNCTIONS, HashingEncoder, _texts_bytes, stable_hash, stable_hashes
from crmarena_gym.rl._features import SCALARS, SlotFeatures, overlap
from crmarena_gym.rl._knowledge import CONVERSATION_FUNCTIONS
from crmarena_gym.rl._parse import question_and_context, question_part
from crmarena_gym.rl._spans import question_text, search_terms, word_list
from crmarena_gym.tools import toolset

__all__ = [
    "ARGUMENT_KINDS",
    "ArgumentSpec",
    "PendingCall",
    "TypedCallCandidates",
    "TypedEncoder",
    "TypedSlotFeatures",
    "TypedValue",
    "argument_options",
    "argument_specs",
]

#: The kinds of argument, by what the policy may type into them (see the module docs).
ARGUMENT_KINDS: tuple[str, ...] = ("datetime", "enum", "id", "integer", "term", "list", "mapping", "records")
#: The key prefix of the object each id argument names (Salesforce's documented prefixes).
_ID_PREFIXES = {"product_id": "01t", "contact_id": "003", "case_id": "500", "account_id": "001"}
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_DATE_IN_TEXT_RE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_NUMBER_WORDS = {
    word: n
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_QUOTED_RE = re.compile(r"'([^'\n]{1,40})'|\"([^\"\n]{1,40})\"")
_CONSTANTS = (0, 1, 2)
_SCALAR_INDEX = {name: i for i, name in enumerate(SCALARS)}
_TYPED_INDEX: dict[str, int] = {}  # filled below TYPED_SCALARS


@dataclass(frozen=True)
class ArgumentSpec:
    """One argument of a task function, as the ``tools`` level types it.

    Attributes:
        name: The argument's name.
        kind: One of :data:`ARGUMENT_KINDS`.
        required: Whether the call needs it (an optional one can be left out).
        choices: The schema's list of allowed names (kind ``enum``).
        prefix: The key prefix of the ids it takes (kind ``id``).
    """

    name: str
    kind: str
    required: bool
    choices: tuple[str, ...] = ()
    prefix: str | None = None


def _kind(name: str, schema: dict[str, Any]) -> tuple[str, tuple[str, ...], str | None]:
    kind = schema.get("type")
    if kind == "string":
        if "enum" in schema:
            return "enum", tuple(schema["enum"]), None
        if name.endswith("_date"):
            return "datetime", (), None
        if name in _ID_PREFIXES:
            return "id", (), _ID_PREFIXES[name]
        return "term", (), None
    if kind == "integer":
        return "integer", (), None
    if kind == "object":
        return "mapping", (), None
    if kind == "array":
        items = schema.get("items", {}).get("type")
        return ("records" if items == "object" else "list"), (), None
    raise ValueError(f"argument {name!r} has a schema the tools level cannot type: {schema}")


@functools.cache
def argument_specs(function: str) -> tuple[ArgumentSpec, ...]:
    """The arguments of a task function, in its schema's order.

    Example:
        >>> [(a.name, a.kind, a.required) for a in argument_specs("get_period")]
        [('period_name', 'enum', True), ('year', 'integer', True)]
    """
    parameters = toolset("functions")[function].schema["function"]["parameters"]
    required = set(parameters.get("required", ()))
    out = []
    for name, schema in parameters["properties"].items():
        kind, choices, prefix = _kind(name, schema)
        out.append(ArgumentSpec(name, kind, name in required, choices, prefix))
    return tuple(out)


@dataclass(frozen=True)
class TypedValue:
    """A value the policy may type into an argument, and where it was seen.

    Attributes:
        value: The value, as the call will carry it.
        source: ``question`` (the question or its context), ``schema`` (the argument's list of names),
            ``constant`` (0, 1, 2) or the function whose result held it.
        key: The field of the result that held it (``start_date``), ``Id`` for a listed record's id, or ``""``.
        age: How many steps ago the result came (0: the last step); -1 for the question, schema and constants.
        label: A short text for ``info["candidates"]`` and for the features' words.
    """

    value: Any
    source: str
    key: str = ""
    age: int = -1
    label: str = ""


@dataclass
class PendingCall:
    """A call whose arguments the policy is typing.

    Attributes:
        function: The function called.
        specs: Its arguments, in order.
        filled: The arguments typed so far (left-out ones are absent).
        index: The argument being typed now.
        options: The values offered for it (set by the generator when it renders the slots).
    """

    function: str
    specs: tuple[ArgumentSpec, ...]
    filled: dict[str, Any] = field(default_factory=dict)
    index: int = 0
    options: list[TypedValue] = field(default_factory=list)

    @property
    def current(self) -> ArgumentSpec:
        """The argument being typed."""
        return self.specs[self.index]


def _label(value: Any) -> str:
    # A list of more than 20 items or a mapping of more than 12 cannot be written in 60 characters (an item takes
    # a character and its separator two; an entry its quoted key, the colon and a value): not written at all.
    if (isinstance(value, list) and len(value) > 20) or (isinstance(value, dict) and len(value) > 12):
        return f"<{type(value).__name__} of {len(value)}>"
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= 60:
        return text
    size = len(value) if isinstance(value, list | dict) else len(text)
    return f"<{type(value).__name__} of {size}>"


@dataclass(frozen=True)
class _TextValues:
    """The values a question and its context show, by kind (read once per question)."""

    dates: tuple[str, ...]
    ids: tuple[str, ...]
    numbers: tuple[int, ...]
    words: tuple[str, ...]
    quoted: tuple[str, ...]


@functools.lru_cache(maxsize=1024)
def _text_values(text: str) -> _TextValues:
    question = question_part(text)
    numbers: list[int] = []
    for token in re.findall(r"(?<![\w-])(\d{1,6}|[A-Za-z]+)(?![\w-])", question):
        value = int(token) if token.isdigit() else _NUMBER_WORDS.get(token.lower())
        if value is not None and value not in numbers:
            numbers.append(value)
    quoted = [a or b for a, b in _QUOTED_RE.findall(question_and_context(text))]
    return _TextValues(
        dates=tuple(f"{day}T00:00:00Z" for day in _DATE_IN_TEXT_RE.findall(text)),
        ids=tuple(re.findall(r"\b[0-9a-zA-Z]{3}[A-Za-z0-9]{12}(?:[A-Za-z0-9]{3})?\b", text)),
        numbers=tuple(numbers),
        # the question's content words, in order (no numbers: they are typed as numbers)
        words=tuple(search_terms(question_text(question), 60, numbers=False).split()),
        quoted=tuple(quoted),
    )


_OPTIONS_CACHE: dict[tuple[Any, ...], tuple[CandidateState, list[TypedValue]]] = {}


def argument_options(state: CandidateState, spec: ArgumentSpec, limit: int) -> list[TypedValue]:
    """The values of ``spec``'s kind seen so far, newest first, the question's last (see the module docs).

    Computed once per state, step and argument (slots, sources, features and the choice all read them).

    Args:
        state: The episode's state.
        spec: The argument.
        limit: The most values returned.
    """
    key = (id(state), len(state.history), spec.kind, spec.choices, spec.prefix, limit)  # not the name: the same values
    cached = _OPTIONS_CACHE.get(key)
    if cached is not None and cached[0] is state:
        return cached[1]
    if len(_OPTIONS_CACHE) > 512:
        _OPTIONS_CACHE.clear()
    out = _argument_options(state, spec, limit)
    _OPTIONS_CACHE[key] = (state, out)
    return out


def _argument_options(state: CandidateState, spec: ArgumentSpec, limit: int) -> list[TypedValue]:
    out: list[TypedValue] = []
    seen: set[Any] = set()
    for offer in _offered(state, spec):
        if len(out) >= limit:
            break
        value, source, key, age, label = offer + _OFFER_DEFAULTS[len(offer) - 2 :]
        # A value is offered once; a long result is told apart by identity (each step's result is its own).
        if isinstance(value, str | int):
            token: Any = (type(value).__name__, value)
        elif len(value) <= 8:
            token = json.dumps(value, sort_keys=True, ensure_ascii=False)
        else:
            token = id(value)
        if token not in seen:
            seen.add(token)
            out.append(TypedValue(value, source, key, age, label if label is not None else _label(value)))
    return out


# What an offer leaves out, by its length: the key, the age (-1: not a result's), the label (None: written).
_OFFER_DEFAULTS: tuple[Any, ...] = ("", -1, None)
_HAS_CACHE: dict[tuple[Any, ...], tuple[CandidateState, int, bool]] = {}


def _has_argument_options(state: CandidateState, spec: ArgumentSpec) -> bool:
    """Whether :func:`argument_options` offers any value for ``spec`` (with any ``limit``): the first offer is
    kept whatever follows, so it is enough to find one (no value is labelled). Offers only grow as steps come
    (each step's result offers its own values, the question its own), so each step is read once per episode."""
    kind = spec.kind
    if kind == "enum":
        return bool(spec.choices)
    if kind == "integer":
        return next(_offered(state, spec), None) is not None
    history = state.history
    key = (id(state), kind, spec.choices, spec.prefix)
    cached = _HAS_CACHE.get(key)
    if cached is not None and cached[0] is state and cached[1] <= len(history):
        read, found = cached[1], cached[2]
    else:
        read, found = 0, False
    if not found:
        found = (
            any(
                next(_step_offered(step, 0, spec), None) is not None
                for step in history[read:]
                if step.ok and step.function is not None
            )
            or next(_question_offered(state, spec, _text_values(state.facts.text)), None) is not None
        )
    if len(_HAS_CACHE) > 512 and key not in _HAS_CACHE:
        _HAS_CACHE.clear()
    _HAS_CACHE[key] = (state, len(history), found)
    return found


def _offered(state: CandidateState, spec: ArgumentSpec) -> Iterator[tuple[Any, ...]]:
    """Every value offered for ``spec`` in order, repeats included, as ``(value, source[, key[, age[, label]]])``
    (see ``_OFFER_DEFAULTS``); :func:`_argument_options` keeps the first ``limit`` distinct ones."""
    kind = spec.kind
    text = state.facts.text
    if kind == "enum":
        for name in spec.choices:
            yield (name, "schema", name)
        return
    shown = _text_values(text)
    if kind == "integer":
        for number in shown.numbers:
            yield (number, "question", "number")
        for number in _CONSTANTS:
            yield (number, "constant", "number")
        return
    steps = [s for s in reversed(state.history) if s.ok and s.function is not None]
    for age, step in enumerate(steps):
        yield from _step_offered(step, age, spec)
    yield from _question_offered(state, spec, shown)


def _step_offered(step: StepRecord, age: int, spec: ArgumentSpec) -> Iterator[tuple[Any, ...]]:
    """What one step's result offers for ``spec`` (``age``: the steps since it), as :func:`_offered` has it."""
    kind = spec.kind
    result, source = step.result, step.function or ""
    if kind == "datetime":
        if isinstance(result, str) and _DATETIME_RE.match(result):
            yield (result, source, "", age)
        elif isinstance(result, dict):
            for key, value in result.items():
                if isinstance(value, str) and _DATETIME_RE.match(value):
                    yield (value, source, key, age)
    elif kind == "id" and spec.prefix is not None:
        items = [result] if isinstance(result, str) else result if isinstance(result, list) else []
        if len(items) <= 4:
            for item in items:
                if isinstance(item, str) and re.fullmatch(rf"{spec.prefix}[A-Za-z0-9]{{12,15}}", item):
                    yield (item, source, "", age)
    elif kind == "term" and source in CONVERSATION_FUNCTIONS:
        pass  # the conversation's term is one, gathered below from every conversation step
    elif kind == "list" and isinstance(result, list) and result:
        if all(isinstance(v, str) for v in result):
            yield (result, source, "", age)
        else:
            for record in result:
                if isinstance(record, dict) and isinstance(record.get("Id"), str):
                    name = record.get("Name") or record.get("Title") or record["Id"]
                    yield ([record["Id"]], source, "Id", age, f"[{record['Id']}] {name}")
    elif kind == "mapping" and isinstance(result, dict) and result:
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in result.values()):
            yield (result, source, "", age)
    elif kind == "records" and isinstance(result, list) and result:
        if all(isinstance(v, dict) for v in result):
            yield (result, source, "", age)


def _question_offered(state: CandidateState, spec: ArgumentSpec, shown: _TextValues) -> Iterator[tuple[Any, ...]]:
    """The values the question (and, for a term, the conversation read) offers for ``spec``, after the results'."""
    kind = spec.kind
    if kind == "datetime":
        for day in shown.dates:
            yield (day, "question", "date")
    elif kind == "id" and spec.prefix is not None:
        for found in shown.ids:
            if found.startswith(spec.prefix) and len(found) in (15, 18) and any(c.isdigit() for c in found):
                yield (found, "question", "id")
    elif kind == "term":
        said = [
            record[k]
            for s in state.history
            if s.ok and s.function in CONVERSATION_FUNCTIONS and isinstance(s.result, list)
            for record in s.result
            if isinstance(record, dict)
            for k in ("Body", "Subject", "TextBody")
            if isinstance(record.get(k), str)
        ]
        if said:
            yield (
                search_terms(" ".join(said), 100, numbers=False),
                "conversation",
                "words",
                0,
                "the conversation's words",
            )
        words = shown.words
        if words:
            yield (" ".join(words[:30]), "question", "words", -1, "the question's words")
        for word in words:
            yield (word, "question", "word")
    elif kind == "list":
        for phrase in shown.quoted:
            yield ([phrase], "question", "quoted")


class TypedCallCandidates:
    """The ``tools`` help level's candidate generator (see the module docs).

    Slots, in order: ``call_<function>`` for each task function (sorted names); ``value_0`` ...
    ``value_<num_values - 1>``; ``omit``; ``submit_none``; ``submit_value_0`` ...; then the slots of each
    ``extras`` group (default: the knowledge answers, :class:`~crmarena_gym.rl.KnowledgeSlots` without
    its searches: here the policy types the search term).

    ``submit None`` follows the rule of :class:`~crmarena_gym.rl.ToolPipelineCandidates`: offered right
    after a call that found nothing or a knowledge search, and when nothing else is; the value submissions
    are the short results of every function (``answer_functions=None``), not only of those that single an
    answer out.

    Args:
        num_values: The value slots (the most values offered for one argument; the 21 period names fit).
        num_answers: The value-submission slots.
        answer_functions: The functions whose short results become submissions (None: every function's).
        none_after: As for :class:`~crmarena_gym.rl.ToolPipelineCandidates`.
        extras: Slot groups appended at the end (None: the knowledge answers).

    Example:
        >>> from crmarena_gym.rl import QuestionFacts
        >>> gen = TypedCallCandidates()
        >>> state = CandidateState(QuestionFacts("TII", "Top issue? The product's Id is 01tWs000001nXIWIA2."))
        >>> [c for c in gen.candidates(state) if "product" in c]
        ['call get_order_item_ids_by_product', 'call search_products']
        >>> gen.select(state, gen.slot_names.index("call_get_order_item_ids_by_product")) is None
        True
        >>> gen.candidates(state)
        ['product_id = "01tWs000001nXIWIA2"']
        >>> gen.select(state, gen.slot_names.index("value_0"))
        'execute get_order_item_ids_by_product({"product_id": "01tWs000001nXIWIA2"})'
    """

    def __init__(
        self,
        *,
        num_values: int = 24,
        num_answers: int = 4,
        answer_functions: Sequence[str] | None = None,
        none_after: Sequence[str] | None = NONE_AFTER,
        extras: Sequence[SlotGroup] | None = None,
    ) -> None:
        require_positive_ints(num_values=num_values, num_answers=num_answers)
        if extras is None:
            from crmarena_gym.rl._knowledge import KnowledgeSlots

            extras = (KnowledgeSlots(searches=False),)
        for name, functions in (("answer_functions", answer_functions), ("none_after", none_after)):
            if isinstance(functions, str):
                raise TypeError(f"{name} takes a sequence of function names or None, got the string {functions!r}")
        self.functions: tuple[str, ...] = FUNCTIONS
        self.specs = {function: argument_specs(function) for function in self.functions}
        self.num_values = num_values
        self.num_answers = num_answers
        self.answer_functions = None if answer_functions is None else frozenset(answer_functions)
        self.none_after = None if none_after is None else frozenset(none_after)
        self.extras = tuple(extras)
        names = [
            *(f"call_{f}" for f in self.functions),
            *(f"value_{i}" for i in range(num_values)),
            "omit",
            "submit_none",
            *(f"submit_value_{i}" for i in range(num_answers)),
            *(name for group in self.extras for name in group.names),
        ]
        if len(set(names)) != len(names):
            raise ValueError(f"slot names must be unique, got {names}")
        self.slot_names: tuple[str, ...] = tuple(names)
        self.num_slots = len(names)
        self.first_value_slot = len(self.functions)
        self.omit_slot = self.first_value_slot + num_values
        self.submit_none_slot = self.omit_slot + 1
        self.first_answer_slot = self.submit_none_slot + 1

    # -- typing ----------------------------------------------------------------------------------

    def options(self, state: CandidateState) -> list[TypedValue]:
        """The values offered for the argument being typed (none when no call is under way)."""
        pending = state.pending
        if not isinstance(pending, PendingCall):
            return []
        return argument_options(state, pending.current, self.num_values)

    def _typable(self, state: CandidateState, function: str) -> bool:
        specs = self.specs[function]
        if not specs:
            return call_text(function, {}) not in state.actions_taken  # the same call tells nothing new
        has = [_has_argument_options(state, spec) for spec in specs]
        required = [h for h, spec in zip(has, specs, strict=True) if spec.required]
        return all(required) if required else any(has)

    def select(self, state: CandidateState, slot: int) -> str | None:
        """Take slot ``slot`` in ``state``: the text action to send, or None when the choice types part of a call.

        Choosing a function starts its :class:`PendingCall` in ``state`` (a function without arguments is
        sent at once); choosing a value or ``omit`` fills the argument being typed, and the last one sends
        the call. Any other slot's text is sent as it is.
        """
        if slot < self.first_value_slot and not isinstance(state.pending, PendingCall):
            function = self.functions[slot]
            if not self.specs[function]:
                return call_text(function, {})
            state.pending = PendingCall(function, self.specs[function])
            return None
        if isinstance(state.pending, PendingCall) and self.first_value_slot <= slot <= self.omit_slot:
            pending = state.pending
            spec = pending.current
            if slot < self.omit_slot:
                options = self.options(state)
                if slot - self.first_value_slot >= len(options):
                    raise ValueError(f"slot {slot} holds no value for argument {spec.name!r}")
                pending.filled[spec.name] = options[slot - self.first_value_slot].value
            elif spec.required:
                raise ValueError(f"argument {spec.name!r} of {pending.function} is required: it cannot be left out")
            pending.index += 1
            if pending.index < len(pending.specs):
                return None
            state.pending = None
            return call_text(pending.function, pending.filled)
        text = self.slots(state)[slot]
        if text is None:
            raise ValueError(f"slot {slot} ({self.slot_names[slot]}) is empty")
        return text

    # -- slots -----------------------------------------------------------------------------------

    def slots(self, state: CandidateState) -> list[str | None]:
        """The text of every slot (None where empty): calls by name, or the values of the argument being typed."""
        pending = state.pending
        if isinstance(pending, PendingCall):
            spec = pending.current
            options = self.options(state)
            pending.options = options
            out: list[str | None] = [None] * self.first_value_slot
            out += [f"{spec.name} = {option.label}" for option in options]
            out += [None] * (self.num_values - len(options))
            out.append(None if spec.required else f"{spec.name} left out")
            return out + [None] * (self.num_slots - len(out))
        out = [f"call {f}" if self._typable(state, f) else None for f in self.functions]
        out += [None] * (self.num_values + 1)
        out.append("submit None")
        values = observed_values(state.history, self.num_answers, self.answer_functions)
        out += [f"submit {value}" for value, _ in values]
        out += [None] * (self.num_answers - len(values))
        taken = state.actions_taken
        for group in self.extras:
            out += [None if text is None or text in taken else text for text in group.render(state)]
        if not self._none_offered(state) and sum(text is not None for text in out) > 1:
            out[self.submit_none_slot] = None
        return out

    def _none_offered(self, state: CandidateState) -> bool:
        return none_offered(state, self.none_after)

    def slot_sources(self, state: CandidateState) -> list[str | None]:
        """For each slot, the function it calls, or where its value came from."""
        sources: list[str | None] = list(self.functions)
        options = self.options(state)
        sources += [option.source for option in options] + [None] * (self.num_values - len(options))
        sources += [None, "submit"]
        values = observed_values(state.history, self.num_answers, self.answer_functions)
        sources += [function for _, function in values] + [None] * (self.num_answers - len(values))
        for group in self.extras:
            sources += group.sources(state)
        return sources

    def candidates(self, state: CandidateState) -> list[str]:
        """The non-empty slots' texts, in slot order."""
        return [text for text in self.slots(state) if text is not None]

    def __repr__(self) -> str:
        return f"TypedCallCandidates({len(self.functions)} functions, num_values={self.num_values})"


#: The features :class:`TypedSlotFeatures` adds to a row, in order.
TYPED_SCALARS: tuple[str, ...] = (
    "is_value",
    "is_omit",
    "from_question",
    "from_schema",
    "from_constant",
    "from_result",
    "latest_result",
    "age",
    "option_rank",
    "key_start",
    "key_end",
    "written_in_question",
    "argument_required",
    "call_takes_last_result",
)
_TYPED_INDEX.update((name, i) for i, name in enumerate(TYPED_SCALARS))


def _written_in(question: str, value: Any) -> bool:
    """Whether the question writes ``value`` (a name or word, whole-word and any case; a number as digits or word)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return False
    return _written(question, value)


# The same values are offered for the same question at every argument of every episode.
@bytes_cache(max_entries=16384, max_bytes=16 * 1024 * 1024, size=lambda args, found: _texts_bytes(args) + 100)
def _written(question: str, value: int | str) -> bool:
    words = _question_words(question)
    if isinstance(value, int):
        return str(value) in words or any(_NUMBER_WORDS.get(w) == value for w in words)
    if isinstance(value, str) and value and len(value) <= 80:
        wanted = word_list(value)
        n = len(wanted)
        return n > 0 and any(words[i : i + n] == wanted for i in range(len(words) - n + 1))
    return False


@bytes_cache(max_entries=4096, max_bytes=8 * 1024 * 1024)
def _question_words(question: str) -> list[str]:
    return word_list(question)


# A slot's context (a function's name words, a value's label) meets the same question at every step.
@bytes_cache(max_entries=16384, max_bytes=16 * 1024 * 1024, size=lambda args, found: _texts_bytes(args) + 300)
def _typed_context(context: str, question: str, buckets: int) -> tuple[float, float, np.ndarray]:
    """``overlap(context, question)`` and the hash buckets (read-only indices) of the context's words of three
    letters or more."""
    share, reverse = overlap(context, question)
    hashed = np.unique(stable_hashes([w for w in word_list(context) if len(w) > 2]) % buckets).astype(np.intp)
    hashed.setflags(write=False)
    return share, reverse, hashed


@functools.cache
def _name_buckets(name: str, buckets: int) -> np.ndarray:
    """The hash buckets of an argument name's words (``start_date``: start, date)."""
    hashed = np.unique(stable_hashes(name.split("_")) % buckets).astype(np.intp)
    hashed.setflags(write=False)
    return hashed


_FUNCTION_INDEX = {name: i for i, name in enumerate(FUNCTIONS)}


def _fits(spec: ArgumentSpec, result: Any) -> bool:
    """Whether a result could be typed whole into ``spec`` (a call chaining the last result)."""
    if spec.kind == "records":
        return isinstance(result, list) and bool(result) and all(isinstance(v, dict) for v in result)
    if spec.kind == "mapping":
        return isinstance(result, dict) and bool(result)
    if spec.kind == "list":
        return isinstance(result, list) and bool(result)
    if spec.kind == "datetime":
        return isinstance(result, dict | str)
    if spec.kind == "id":
        return isinstance(result, str)
    return False


class TypedSlotFeatures(SlotFeatures):
    """The ``tools`` level's featurizer: :class:`~crmarena_gym.rl.SlotFeatures` for submissions, and features
    for the function and value slots.

    A function slot (``call_<f>``): its function one-hot, the call scalar, whether the last result fits one of
    its arguments (``call_takes_last_result``), and the overlap of the function name's words with the question
    (``get_issue_counts`` meets "top issue"). A value slot: where the value came from (the question, the
    schema's names, a constant, a result: one-hot of the function), how many steps ago, its rank, whether it
    is a ``start_date`` or ``end_date`` field, whether the question writes it (``Q3``, ``March``, ``3``,
    ``three``), whether the argument is required; the kind of the argument (:data:`ARGUMENT_KINDS`) and its
    name's words, hashed into ``argument_buckets``; the value's label and field hashed as context words.

    Args:
        num_slots: K, the generator's number of slots.
        first_value_slot: The first value slot (:class:`TypedCallCandidates`' ``first_value_slot``).
        argument_buckets: Hash buckets for the typed argument's name words.
        **kwargs: Those of :class:`~crmarena_gym.rl.SlotFeatures`.
    """

    def __init__(
        self, num_slots: int, *, first_value_slot: int = len(FUNCTIONS), argument_buckets: int = 16, **kwargs: Any
    ) -> None:
        super().__init__(num_slots, **kwargs)
        require_positive_ints(argument_buckets=argument_buckets)
        if not 0 <= first_value_slot < num_slots:
            raise ValueError(f"first_value_slot must be a slot number below {num_slots}, got {first_value_slot!r}")
        self.first_value_slot = first_value_slot
        self.typed_offset = self.size
        self.kind_of_argument_offset = self.typed_offset + len(TYPED_SCALARS)
        self.argument_offset = self.kind_of_argument_offset + len(ARGUMENT_KINDS)
        self.argument_buckets = argument_buckets
        self.size = self.argument_offset + argument_buckets

    def features(self, state: CandidateState, slots: Sequence[str | None], sources: Sequence[str | None]) -> np.ndarray:
        """The ``(num_slots, size)`` features (see the class docs)."""
        if len(slots) != self.num_slots or len(sources) != self.num_slots:
            raise ValueError(f"expected {self.num_slots} slots and sources, got {len(slots)} and {len(sources)}")
        submissions = [text if text is not None and text.startswith("submit ") else None for text in slots]
        out = super().features(state, submissions, sources)  # the submissions' rows, the others zero
        question = question_part(state.facts.text)
        n = len(FUNCTIONS)
        functions = _FUNCTION_INDEX
        pending = state.pending if isinstance(state.pending, PendingCall) else None
        last = state.history[-1] if state.history and state.history[-1].ok else None
        fits: dict[str, bool] = {}  # by argument kind: whether the last result fits it (the same for every call)
        scalar, typed_at, width = self.scalar_offset, self.typed_offset, self.size
        present, is_call = _SCALAR_INDEX["present"], _SCALAR_INDEX["is_call"]
        in_question, question_in = _SCALAR_INDEX["context_in_question"], _SCALAR_INDEX["question_in_context"]
        # What each row holds, gathered as flat indices of ``out`` and written at once at the end.
        ones: list[int] = []
        where: list[int] = []
        numbers: list[float] = []
        blocks: list[np.ndarray] = []
        for i, text in enumerate(slots):
            if text is None or submissions[i] is not None:
                continue
            base = i * width
            ones.append(base + i)
            typed: dict[str, float] = {}
            if text.startswith("call "):
                function = text[len("call ") :]
                ones += (base + self.kind_offset + functions.get(function, n), base + self.source_offset + n)
                ones.append(base + scalar + is_call)
                takes = False
                if last is not None:
                    for spec in argument_specs(function):
                        if spec.kind not in fits:
                            fits[spec.kind] = _fits(spec, last.result)
                        if fits[spec.kind]:
                            takes = True
                            break
                typed["call_takes_last_result"] = float(takes)
                context = " ".join(function.split("_"))
            elif pending is not None:
                spec = pending.current
                ones.append(base + self.kind_of_argument_offset + ARGUMENT_KINDS.index(spec.kind))
                blocks.append(base + self.argument_offset + _name_buckets(spec.name, self.argument_buckets))
                typed["argument_required"] = float(spec.required)
                index = i - self.first_value_slot
                if 0 <= index < len(pending.options):
                    option = pending.options[index]
                    typed["is_value"] = 1.0
                    typed["from_question"] = float(option.source in ("question", "conversation"))
                    typed["from_schema"] = float(option.source == "schema")
                    typed["from_constant"] = float(option.source == "constant")
                    typed["from_result"] = float(option.age >= 0 and option.source in functions)
                    typed["latest_result"] = float(option.age == 0)
                    typed["age"] = min(max(option.age, 0), 10) / 10
                    typed["option_rank"] = index / max(len(pending.options) - 1, 1)
                    typed["key_start"] = float(option.key == "start_date")
                    typed["key_end"] = float(option.key == "end_date")
                    typed["written_in_question"] = float(_written_in(question, option.value))
                    ones.append(base + self.source_offset + functions.get(option.source, n))
                    context = f"{option.key} {option.label}" if option.source != "question" else option.label
                else:  # omit
                    typed["is_omit"] = 1.0
                    context = ""
            else:
                continue
            ones.append(base + scalar + present)
            share, reverse, hashed = _typed_context(context, question, self.context_buckets)
            where += (base + scalar + in_question, base + scalar + question_in)
            numbers += (share, reverse)
            blocks.append(base + self.context_offset + hashed)
            where += (base + typed_at + _TYPED_INDEX[name] for name in typed)
            numbers += typed.values()
        flat = out.reshape(-1)
        flat[ones] = 1.0
        if blocks:
            flat[np.concatenate(blocks)] = 1.0
        flat[where] = numbers
        return out

    def __repr__(self) -> str:
        return f"TypedSlotFeatures(num_slots={self.num_slots}, argument_buckets={self.argument_buckets})"


class TypedEncoder(HashingEncoder):
    """The ``tools`` level's encoder: :class:`~crmarena_gym.rl.HashingEncoder`, then the call being typed.

    Appended: the pending function, one-hot (one value per task function and one for none); the kind of the
    argument being typed, one-hot (:data:`ARGUMENT_KINDS`); the share of its arguments typed so far; and the
    argument's name words, hashed into ``argument_buckets``.
    """

    def __init__(self, num_slots: int, *, argument_buckets: int = 16, **kwargs: Any) -> None:
        super().__init__(num_slots, **kwargs)
        require_positive_ints(argument_buckets=argument_buckets)
        self.argument_buckets = argument_buckets
        self.base_size = self.size
        self.size = self.base_size + len(FUNCTIONS) + 1 + len(ARGUMENT_KINDS) + 1 + argument_buckets

    def parts(
        self, state: CandidateState, slots: Sequence[str | None], sources: Sequence[str | None]
    ) -> list[np.ndarray]:
        """:class:`~crmarena_gym.rl.HashingEncoder`'s pieces, then the call being typed."""
        extra = np.zeros(self.size - self.base_size, dtype=np.float32)
        pending = state.pending if isinstance(state.pending, PendingCall) else None
        n = len(FUNCTIONS)
        if pending is None:
            extra[n] = 1.0
        else:
            extra[FUNCTIONS.index(pending.function)] = 1.0
            extra[n + 1 + ARGUMENT_KINDS.index(pending.current.kind)] = 1.0
            extra[n + 1 + len(ARGUMENT_KINDS)] = pending.index / len(pending.specs)
            for word in pending.current.name.split("_"):
                extra[n + 2 + len(ARGUMENT_KINDS) + stable_hash(word) % self.argument_buckets] = 1.0
        return [*super().parts(state, slots, sources), extra]

    def __repr__(self) -> str:
        return f"TypedEncoder(num_slots={self.num_slots}, argument_buckets={self.argument_buckets})"
