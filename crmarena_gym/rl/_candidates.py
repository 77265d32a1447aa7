"""Candidate actions: the few well-formed text actions a discrete policy chooses among at each step.

A candidate generator sees a :class:`CandidateState` (the question's facts and the tool results seen so
far) and fills a fixed number of *slots*. Each slot has one meaning across steps and instances (the
slot ``issue_counts`` is always "count the issues of the order items just fetched, over the window"),
so that a policy can learn a task's tool pipeline as a short sequence of slot numbers. An empty slot
(None) is masked out.

Any object with ``num_slots``, ``slot_names``, ``slots(state)`` and ``candidates(state)`` is a
generator (see :class:`CandidateGenerator`); :class:`ToolPipelineCandidates` is the default.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from crmarena_gym.rl._checks import require_positive_ints
from crmarena_gym.rl._facts import QuestionFacts

__all__ = [
    "DEFAULT_ANSWER_FUNCTIONS",
    "DEFAULT_CHOICES",
    "DEFAULT_TEMPLATES",
    "MISSING",
    "NONE_AFTER",
    "PARSED_TEMPLATES",
    "Binding",
    "CallTemplate",
    "CandidateGenerator",
    "CandidateState",
    "ChoiceTemplate",
    "Fact",
    "FactItem",
    "ResultOf",
    "SlotGroup",
    "StepRecord",
    "ToolPipelineCandidates",
    "ValuesById",
    "call_text",
    "found_nothing",
    "observed_values",
]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: What a binding returns when it cannot fill its argument.
MISSING: Any = _Missing()


@dataclass(frozen=True)
class StepRecord:
    """One step of the episode, as the generator and encoder see it.

    Attributes:
        action: The text action sent to the environment.
        function: The function called (None for a submission, a query or an unreadable action).
        result: The structured result (the environment's ``info["result"].value``), or None.
        ok: Whether the step was a function call that gave a result (no error).
        observation: The observation text the environment answered with.
    """

    action: str
    function: str | None
    result: Any
    ok: bool
    observation: str


@dataclass
class CandidateState:
    """The state of an episode: what the question states and what the tools returned.

    Attributes:
        facts: The question's facts (:func:`~crmarena_gym.rl.question_facts`).
        history: The steps so far, oldest first.
        turn: The number of actions taken.
        max_turns: The turn budget of the episode.
        observation: The last observation text.
        pending: The call whose arguments the policy is typing (the ``tools`` help level: a
            :class:`~crmarena_gym.rl.PendingCall`), or None.
    """

    facts: QuestionFacts
    history: list[StepRecord] = field(default_factory=list)
    turn: int = 0
    max_turns: int = 20
    observation: str = ""
    pending: Any = None

    def latest(self, function: str) -> Any:
        """The result of the latest successful call of ``function``, or :data:`MISSING`."""
        for step in reversed(self.history):
            if step.ok and step.function == function:
                return step.result
        return MISSING

    def latest_values_by_id(self) -> Any:
        """The latest successful result that maps ids to numbers (what ``find_id_with_*`` compare)."""
        for step in reversed(self.history):
            if step.ok and _is_values_by_id(step.result):
                return step.result
        return MISSING

    @property
    def actions_taken(self) -> set[str]:
        """The text of every action sent so far."""
        return {step.action for step in self.history}


def none_offered(state: CandidateState, none_after: Collection[str] | None) -> bool:
    """Whether ``submit None`` is offered now: always without ``none_after``, else right after a call that
    found nothing or a call of one of ``none_after``'s functions."""
    if none_after is None:
        return True
    last = state.history[-1] if state.history else None
    if last is None or not last.ok or last.function is None:
        return False
    return found_nothing(last.result) or last.function in none_after


def found_nothing(result: Any) -> bool:
    """Whether a call's result is empty (None, or an empty list, mapping or string): the call found nothing.

    Example:
        >>> [found_nothing(r) for r in (None, [], {}, "", [None], 0)]
        [True, True, True, True, False, False]
    """
    return result is None or (isinstance(result, list | dict | str) and not result)


def _is_values_by_id(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    cached = _VALUES_BY_ID.get(id(value))  # a step's result is asked again by every call that may take it
    if cached is not None and cached[0] is value:
        return cached[1]
    found = all(isinstance(v, int | float) and not isinstance(v, bool) for v in value.values())
    if len(_VALUES_BY_ID) >= 256:
        _VALUES_BY_ID.clear()
    _VALUES_BY_ID[id(value)] = (value, found)
    return found


# By identity, as ``_PASTED`` (an entry holds its mapping, so that its id is not reused while it is kept).
_VALUES_BY_ID: dict[int, tuple[Any, bool]] = {}


@runtime_checkable
class CandidateGenerator(Protocol):
    """The interface of a candidate generator.

    Attributes:
        num_slots: K, the number of slots (the size of the discrete action space).
        slot_names: A short name per slot, for reading policies and logs.
    """

    num_slots: int
    slot_names: tuple[str, ...]

    def slots(self, state: CandidateState) -> list[str | None]:
        """``num_slots`` entries: a well-formed text action, or None for an empty slot."""
        ...

    def candidates(self, state: CandidateState) -> list[str]:
        """The non-empty slots' actions, in slot order."""
        ...


@runtime_checkable
class SlotGroup(Protocol):
    """A group of slots appended after the others (:class:`~crmarena_gym.rl.KnowledgeSlots` is one).

    Attributes:
        names: The slots' names, in order.
    """

    names: tuple[str, ...]

    def render(self, state: CandidateState) -> list[str | None]:
        """``len(names)`` entries: a well-formed text action, or None for an empty slot."""
        ...

    def sources(self, state: CandidateState) -> list[str | None]:
        """For each slot, the function it calls or whose result its value came from."""
        ...


class Binding(Protocol):
    """How one argument of a call is filled: from the question's facts or from an earlier result."""

    def resolve(self, state: CandidateState) -> Any:
        """The argument's value, or :data:`MISSING`."""
        ...

    def fed_by(self, step: StepRecord) -> bool:
        """Whether ``step``'s result is what this argument takes (always False for facts)."""
        ...


@dataclass(frozen=True)
class Fact:
    """An argument filled with a question fact (the :class:`~crmarena_gym.rl.QuestionFacts` field ``name``)."""

    name: str

    def resolve(self, state: CandidateState) -> Any:
        value = getattr(state.facts, self.name)
        return MISSING if value is None else value

    def fed_by(self, step: StepRecord) -> bool:
        return False


@dataclass(frozen=True)
class FactItem(Fact):
    """An argument filled with the ``index``-th item of a tuple question fact (``search_terms``), if there is one."""

    index: int = 0

    def resolve(self, state: CandidateState) -> Any:
        items = getattr(state.facts, self.name)
        return items[self.index] if isinstance(items, tuple) and self.index < len(items) else MISSING


@dataclass(frozen=True)
class ResultOf:
    """An argument filled with the latest successful result of ``function``, pasted back by value."""

    function: str

    def resolve(self, state: CandidateState) -> Any:
        return state.latest(self.function)

    def fed_by(self, step: StepRecord) -> bool:
        return step.ok and step.function == self.function


@dataclass(frozen=True)
class ValuesById:
    """An argument filled with the latest result that maps ids to numbers (what ``find_id_with_*`` compare)."""

    def resolve(self, state: CandidateState) -> Any:
        return state.latest_values_by_id()

    def fed_by(self, step: StepRecord) -> bool:
        return step.ok and _is_values_by_id(step.result)


@dataclass(frozen=True)
class CallTemplate:
    """A function call whose arguments are filled from the question's facts and earlier results.

    Attributes:
        name: The slot's name (``issue_counts``).
        function: The function to call.
        arguments: Argument name to binding; the call is offered only when every binding resolves.
        when: Question facts (:class:`~crmarena_gym.rl.QuestionFacts` fields) of which the question must
            state at least one for the call to be offered (empty: always). A lookup that only one kind
            of question needs (the issue list, for routing a described case) is then not offered to
            every question, where it would only be a way to waste turns.
    """

    name: str
    function: str
    arguments: tuple[tuple[str, Binding], ...] = ()
    when: tuple[str, ...] = ()

    def render(self, state: CandidateState, *, chain: bool = True) -> str | None:
        """The call as a text action, or None when an argument is missing or ``when`` does not hold.

        With ``chain``, a call that takes earlier results is offered only right after a step whose
        result one of its arguments takes: each result is pasted into the next call, as an agent
        chains functions, and stale results are not offered again.
        """
        if self.when and all(getattr(state.facts, name) is None for name in self.when):
            return None
        if chain and any(not isinstance(bind, Fact) for _, bind in self.arguments):
            last = state.history[-1] if state.history else None
            if last is None or not any(bind.fed_by(last) for _, bind in self.arguments):
                return None
        values: dict[str, Any] = {}
        for argument, bind in self.arguments:
            value = bind.resolve(state)
            if value is MISSING:
                return None
            values[argument] = value
        return call_text(self.function, values)


def call_text(function: str, arguments: dict[str, Any]) -> str:
    """The text action that calls ``function`` with ``arguments``.

    Example:
        >>> call_text("get_order_item_ids_by_product", {"product_id": "01tWs000001nXIWIA2"})
        'execute get_order_item_ids_by_product({"product_id": "01tWs000001nXIWIA2"})'
        >>> call_text("get_issues", {})
        'execute get_issues()'
    """
    if not arguments:
        return f"execute {function}()"
    if not all(type(key) is str for key in arguments):
        return f"execute {function}({_dumps(arguments)})"
    # The JSON of the mapping, written item by item so that a result pasted into several calls is written once.
    body = ", ".join(f"{_dumps(key)}: {pasted_json(value)}" for key, value in arguments.items())
    text = f"execute {function}({{{body}}})"
    if len(_ARGUMENTS) >= 256:
        _ARGUMENTS.clear()
    _ARGUMENTS[text] = dict(arguments)
    return text


# The arguments of the calls written lately, by their text: what a featurizer reads back from a call (see
# ``arguments_of``) without parsing the JSON of a pasted result again.
_ARGUMENTS: dict[str, dict[str, Any]] = {}


def arguments_of(text: str) -> dict[str, Any] | None:
    """The arguments :func:`call_text` wrote ``text`` from, if it wrote it lately (else None: parse the text)."""
    return _ARGUMENTS.get(text)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


# Results pasted by value, as JSON, by identity: one step's result goes into several calls at the next step (and
# into the "takes the last result" feature), each written once. An entry holds its value, so that its id is not
# reused while it is kept; results are never changed after the step that returned them.
_PASTED: dict[int, tuple[Any, str]] = {}


def pasted_json(value: Any) -> str:
    """``value`` as a call's text carries it (JSON, as :func:`call_text` writes arguments); a list or mapping
    is written once while it is kept (see ``_PASTED``), so it must not be changed afterwards.

    Example:
        >>> pasted_json(["005A", "005B"]), pasted_json({"a1M1": 3})
        ('["005A", "005B"]', '{"a1M1": 3}')
    """
    if not isinstance(value, list | dict):
        return _dumps(value)
    cached = _PASTED.get(id(value))
    if cached is not None and cached[0] is value:
        return cached[1]
    text = _dumps(value)
    if len(_PASTED) >= 256:
        _PASTED.clear()
    _PASTED[id(value)] = (value, text)
    return text


_WINDOW: tuple[tuple[str, Binding], ...] = (("start_date", Fact("start")), ("end_date", Fact("end")))

_UNFIXED: Any = object()


def _facts_only(template: CallTemplate) -> bool:
    """Whether ``template``'s call depends on the question's facts alone (the built-in template and bindings)."""
    return type(template) is CallTemplate and all(type(bind) in (Fact, FactItem) for _, bind in template.arguments)


def _fed_by(template: CallTemplate) -> tuple[frozenset[str], bool] | None:
    """For a built-in template that takes earlier results: the functions whose result it takes, and whether it
    takes a values-by-id result; None for any other (its own ``fed_by`` is asked)."""
    if type(template) is not CallTemplate or not all(
        type(bind) in (Fact, FactItem, ResultOf, ValuesById) for _, bind in template.arguments
    ):
        return None
    functions = frozenset(bind.function for _, bind in template.arguments if isinstance(bind, ResultOf))
    values = any(isinstance(bind, ValuesById) for _, bind in template.arguments)
    return (functions, values) if functions or values else None


class _Feeds:
    """Which templates the last step feeds (what ``ResultOf.fed_by`` and ``ValuesById.fed_by`` say), the
    values-by-id check made once per step, not once per template."""

    def __init__(self, last: StepRecord | None) -> None:
        self.last = last if last is not None and last.ok else None
        self._values: bool | None = None

    def feed(self, fed_by: tuple[frozenset[str], bool]) -> bool:
        last = self.last
        if last is None:
            return False
        functions, values = fed_by
        if last.function in functions:
            return True
        if values:
            if self._values is None:
                self._values = _is_values_by_id(last.result)
            return self._values
        return False


#: The default call slots: every step of the tool pipelines of HTU, TCU, TII, MTA, BRI and NED, plus the
#: lookups of a case's conversation (PVI) and of the issues (NCR). Slot order is the action numbering.
DEFAULT_TEMPLATES: tuple[CallTemplate, ...] = (
    CallTemplate("handled_cases", "get_agent_handled_cases_by_period", _WINDOW),
    CallTemplate(
        "qualified_agents",
        "get_qualified_agent_ids_by_case_count",
        (("agent_handled_cases", ResultOf("get_agent_handled_cases_by_period")), ("n_cases", Fact("n_cases"))),
    ),
    CallTemplate("untransferred_cases", "get_non_transferred_case_ids", _WINDOW),
    CallTemplate(
        "cases_of_qualified_untransferred",
        "get_cases",
        (
            *_WINDOW,
            ("agent_ids", ResultOf("get_qualified_agent_ids_by_case_count")),
            ("case_ids", ResultOf("get_non_transferred_case_ids")),
        ),
    ),
    CallTemplate(
        "cases_of_order_items",
        "get_cases",
        (*_WINDOW, ("order_item_ids", ResultOf("get_order_item_ids_by_product"))),
    ),
    CallTemplate("cases_of_window", "get_cases", _WINDOW),
    CallTemplate(
        "transfers",
        "get_agent_transferred_cases_by_period",
        (*_WINDOW, ("qualified_agent_ids", ResultOf("get_qualified_agent_ids_by_case_count"))),
    ),
    CallTemplate("average_handle_time", "calculate_average_handle_time", (("cases", ResultOf("get_cases")),)),
    CallTemplate("order_items", "get_order_item_ids_by_product", (("product_id", Fact("product_id")),)),
    CallTemplate(
        "issue_counts",
        "get_issue_counts",
        (*_WINDOW, ("order_item_ids", ResultOf("get_order_item_ids_by_product"))),
    ),
    CallTemplate("month_counts", "get_month_to_case_count", (("cases", ResultOf("get_cases")),)),
    CallTemplate("shipping_states", "get_shipping_state", (("cases", ResultOf("get_cases")),)),
    CallTemplate(
        "region_closure_times",
        "calculate_region_average_closure_times",
        (("cases", ResultOf("get_shipping_state")),),
    ),
    CallTemplate("max_value_ids", "find_id_with_max_value", (("values_by_id", ValuesById()),)),
    CallTemplate("min_value_ids", "find_id_with_min_value", (("values_by_id", ValuesById()),)),
    CallTemplate("contact_account", "get_account_id_by_contact_id", (("contact_id", Fact("contact_id")),)),
    CallTemplate("matching_products", "search_products", (("search_term", Fact("search_term")),)),
    CallTemplate(
        "purchases",
        "get_purchase_history",
        (
            ("account_id", ResultOf("get_account_id_by_contact_id")),
            ("purchase_date", Fact("purchase_date")),
            ("related_product_ids", ResultOf("search_products")),
        ),
    ),
    CallTemplate("issues", "get_issues", when=("case_subject", "case_description")),
    CallTemplate(
        "max_case_agents",
        "get_agents_with_max_cases",
        (("subset_cases", ResultOf("get_cases")),),
        when=("case_subject", "case_description"),
    ),
    CallTemplate("chat_transcripts", "get_livechat_transcript_by_case_id", (("case_id", Fact("case_id")),)),
    CallTemplate("emails", "get_email_messages_by_case_id", (("case_id", Fact("case_id")),)),
)


def _parsed_templates() -> tuple[CallTemplate, ...]:
    out: list[CallTemplate] = []
    for template in DEFAULT_TEMPLATES:
        if template.name != "matching_products":
            out.append(template)
            continue
        # A parser cannot tell a described product's type from the words around it ("premium jump rope": the
        # type is "Jump Rope"); each reading gets its own slot, and the policy learns which one finds it.
        out += [
            CallTemplate(f"matching_products_{i}", "search_products", (("search_term", FactItem("search_terms", i)),))
            for i in range(3)
        ]
    return tuple(out)


#: The call slots of the ``parsed`` help level: :data:`DEFAULT_TEMPLATES` with the product search offered once
#: per reading of the described product (:func:`~crmarena_gym.rl.parse_question`'s ``search_terms``: the
#: whole description, its last two words, its last word) where the ``oracle-args`` level has one search
#: with the product's type taken from the hidden parameters.
PARSED_TEMPLATES: tuple[CallTemplate, ...] = _parsed_templates()


@dataclass(frozen=True)
class ChoiceTemplate:
    """One call per record of an earlier result: slot ``i`` passes the ``i``-th record's ``key``.

    Where a task needs the agent to pick one of several listed records (the issue a new case is
    about), each record gets its own candidate, and the candidate's features (its record's text
    against the question's, :class:`~crmarena_gym.rl.SlotFeatures`) tell the policy which to pick.
    The calls are offered right after the step that listed the records (as chained calls are): a
    pick is made once, and ten stale choices do not linger at every later step.

    Attributes:
        name: The slots' name prefix (``closed_cases_of_issue`` gives ``closed_cases_of_issue_0`` ...).
        function: The function to call.
        source: The function whose latest result lists the records.
        argument: The argument that takes the record's ``key``.
        key: The record field passed.
        as_list: Pass the key as a one-item list (``issue_ids: ["a1M..."]``).
        fixed: Other arguments, fixed.
        count: The number of slots (records beyond it are not offered).

    Example:
        >>> from crmarena_gym.rl import QuestionFacts
        >>> choice = ChoiceTemplate("cases_of_issue", "get_cases", "get_issues", "issue_ids", count=3)
        >>> state = CandidateState(QuestionFacts("NCR", "..."))
        >>> listed = [{"Id": "a1M1", "Name": "X"}]
        >>> state.history.append(StepRecord("execute get_issues()", "get_issues", listed, True, ""))
        >>> choice.render_all(state)
        ['execute get_cases({"issue_ids": ["a1M1"]})', None, None]
    """

    name: str
    function: str
    source: str
    argument: str
    key: str = "Id"
    as_list: bool = True
    fixed: tuple[tuple[str, Any], ...] = ()
    count: int = 10

    def render_all(self, state: CandidateState) -> list[str | None]:
        """``count`` entries: the call for each record the last step listed, None beyond them (or all None)."""
        last = state.history[-1] if state.history else None
        fresh = last is not None and last.ok and last.function == self.source
        records = last.result if fresh and isinstance(last.result, list) else []
        keys = [r[self.key] for r in records if isinstance(r, dict) and isinstance(r.get(self.key), str)]
        out: list[str | None] = [
            call_text(self.function, {self.argument: [key] if self.as_list else key, **dict(self.fixed)})
            for key in keys[: self.count]
        ]
        return out + [None] * (self.count - len(out))


#: The default choice slots: NCR's "closed cases filed under this issue", one slot per issue listed.
DEFAULT_CHOICES: tuple[ChoiceTemplate, ...] = (
    ChoiceTemplate(
        "closed_cases_of_issue", "get_cases", "get_issues", "issue_ids", fixed=(("statuses", ["Closed"]),), count=10
    ),
)


#: The functions whose result is an answer: they single one value out (the agent or id with the largest or
#: smallest value, the agents with the most cases, the product bought). Other short results (two
#: qualified agents, one account) are steps on the way, not answers; offering their items as answers
#: would let a policy guess among them instead of finishing the pipeline.
DEFAULT_ANSWER_FUNCTIONS: tuple[str, ...] = (
    "find_id_with_max_value",
    "find_id_with_min_value",
    "get_agents_with_max_cases",
    "get_purchase_history",
)


#: The functions after whose (non-empty) result ``submit None`` is offered: the knowledge search, whose
#: articles an agent judges (PVI: none of them is broken).
NONE_AFTER: tuple[str, ...] = ("search_knowledge_articles",)


def observed_values(
    history: Sequence[StepRecord], limit: int, functions: Collection[str] | None = None
) -> list[tuple[str, str]]:
    """Answer candidates: the ids and values of the short results seen so far, newest result first.

    An answer is one id or value, and the functions that single one out (``find_id_with_max_value``,
    ``get_purchase_history`` ...) return a short list or a single string; so a result that is a list
    of at most ``limit`` strings gives its items, a string gives itself, and longer lists, mappings
    and records give nothing. Each value appears once, at its newest position.

    Args:
        history: The steps so far.
        limit: The most values returned (and the longest list whose items count).
        functions: Only the results of these functions give values (None: every function's).

    Returns:
        Up to ``limit`` pairs ``(value, function that returned it)``.

    Example:
        >>> steps = [StepRecord("a", "get_issue_counts", {"a1M1": 3, "a1M2": 5}, True, ""),
        ...          StepRecord("b", "find_id_with_max_value", ["a1M2"], True, "")]
        >>> observed_values(steps, 3)
        [('a1M2', 'find_id_with_max_value')]
        >>> steps.append(StepRecord("c", "get_qualified_agent_ids_by_case_count", ["005A", "005B"], True, ""))
        >>> [value for value, _function in observed_values(steps, 3)]
        ['005A', '005B', 'a1M2']
        >>> observed_values(steps, 3, DEFAULT_ANSWER_FUNCTIONS)
        [('a1M2', 'find_id_with_max_value')]
    """
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for step in reversed(history):
        if not step.ok or step.function is None or (functions is not None and step.function not in functions):
            continue
        result = step.result
        if isinstance(result, str):
            values = [result]
        elif isinstance(result, list) and len(result) <= limit and all(isinstance(v, str) for v in result):
            values = result
        else:
            continue
        for value in values:
            if not value.strip() or len(value) > 80 or "\n" in value or value in seen:
                continue
            seen.add(value)
            found.append((value, step.function))
            if len(found) >= limit:
                return found
    return found


class ToolPipelineCandidates:
    """The default candidate generator: tool calls with their arguments filled in, then submissions.

    Slots, in order:

    1. one slot per :class:`CallTemplate` (default :data:`DEFAULT_TEMPLATES`): the call with its
       arguments taken from the question's facts (window dates, threshold, quoted ids; see
       :func:`~crmarena_gym.rl.question_facts`) and from results pasted back by value. With ``chain``
       (the default), a call that takes a result is offered right after the step that produced it
       (its other result arguments take the latest result of their function), as an agent pastes
       one function's output into the next; calls that take only facts are offered at any step. A
       slot is also empty once exactly its call has been made (repeating it would tell nothing new);
    2. the :class:`ChoiceTemplate` slots (default :data:`DEFAULT_CHOICES`): one call per record the
       last result listed (NCR: the closed cases of each issue ``get_issues`` listed);
    3. ``submit None``, right after a call that found nothing (an empty result: the pipeline cannot
       go on) or a call of a ``none_after`` function (the knowledge search, whose articles an agent
       judges, None being one judgement), and whenever no other slot holds an action. None is an
       answer the data must show (no agent qualifies, no violation is found); offered at every step,
       it is a shortcut that earns a share of the reward in every family with None answers and keeps
       a policy from learning the longer pipelines (HTU, TCU);
    4. ``num_values`` slots ``submit <value>`` for the ids and values of the short results of the
       ``answer_functions`` seen so far, newest first (:func:`observed_values`): after
       ``find_id_with_max_value`` answers ``["a1M..."]``, the first value slot submits that id;
    5. the slots of each ``extras`` group (default one :class:`~crmarena_gym.rl.KnowledgeSlots`: the
       knowledge searches of PVI and KQA and their answers, the articles found and phrases of them).

    Each slot means the same thing at every step of every instance, so a task's pipeline is a fixed
    sequence of slot numbers (TII: ``order_items``, ``issue_counts``, ``max_value_ids``,
    ``submit_value_0``) that a policy can learn.

    Args:
        templates: The call slots.
        choices: The choice slots.
        num_values: How many submission slots for observed values (also the longest result whose
            items become answer candidates).
        chain: Offer a result-taking call only right after the step that produced its input.
        answer_functions: The functions whose short results become value submissions (None: every
            function's, so that also the two agents a threshold qualifies can be submitted).
        none_after: The functions after whose result ``submit None`` is offered even when it is not
            empty (default: the knowledge search). None: offer ``submit None`` at every step.
        extras: Slot groups appended at the end (None: one :class:`~crmarena_gym.rl.KnowledgeSlots`;
            ``()`` for none).

    Example:
        >>> from crmarena_gym.rl import QuestionFacts
        >>> gen = ToolPipelineCandidates()
        >>> state = CandidateState(QuestionFacts("TII", "...", product_id="01tWs000001nXIWIA2"))
        >>> gen.candidates(state)  # no call made yet: no None either
        ['execute get_order_item_ids_by_product({"product_id": "01tWs000001nXIWIA2"})']
        >>> gen.num_slots, gen.slot_names[8], gen.slot_names[36], gen.slot_names[-1]
        (60, 'order_items', 'submit_value_3', 'submit_span_15')
    """

    def __init__(
        self,
        templates: Sequence[CallTemplate] = DEFAULT_TEMPLATES,
        *,
        choices: Sequence[ChoiceTemplate] = DEFAULT_CHOICES,
        num_values: int = 4,
        chain: bool = True,
        answer_functions: Sequence[str] | None = DEFAULT_ANSWER_FUNCTIONS,
        none_after: Sequence[str] | None = NONE_AFTER,
        extras: Sequence[SlotGroup] | None = None,
    ) -> None:
        if not templates:
            raise ValueError("ToolPipelineCandidates needs at least one call template")
        if extras is None:
            from crmarena_gym.rl._knowledge import KnowledgeSlots  # it builds on this module

            extras = (KnowledgeSlots(),)
        for group in extras:
            if not isinstance(group, SlotGroup):
                raise TypeError(f"an extra slot group needs names, render(state) and sources(state), got {group!r}")
        names = [t.name for t in templates] + [f"{c.name}_{i}" for c in choices for i in range(c.count)]
        extra_names = [name for group in extras for name in group.names]
        every = [*names, "submit_none", *(f"submit_value_{i}" for i in range(num_values)), *extra_names]
        if len(set(every)) != len(every):
            raise ValueError(f"slot names must be unique, got {every}")
        require_positive_ints(num_values=num_values)
        self.templates = tuple(templates)
        self.choices = tuple(choices)
        self.num_values = num_values
        self.chain = chain
        for name, functions in (("answer_functions", answer_functions), ("none_after", none_after)):
            if isinstance(functions, str):  # a str would become a set of its letters
                raise TypeError(f"{name} takes a sequence of function names or None, got the string {functions!r}")
        self.answer_functions = None if answer_functions is None else frozenset(answer_functions)
        self.none_after = None if none_after is None else frozenset(none_after)
        self.extras = tuple(extras)
        self.slot_names: tuple[str, ...] = tuple(every)
        self.num_slots = len(self.slot_names)
        self.submit_none_slot = len(names)
        self.first_value_slot = self.submit_none_slot + 1
        # The calls of the question facts seen (by the facts' id; an entry holds its facts, so the id stays theirs).
        self._facts_seen: dict[int, tuple[QuestionFacts, tuple[Any, ...]]] = {}
        self._facts_only = tuple(_facts_only(template) for template in self.templates)
        self._fed_by = tuple(_fed_by(template) for template in self.templates)

    def slots(self, state: CandidateState) -> list[str | None]:
        """The actions of every slot (None where empty)."""
        taken = state.actions_taken
        out: list[str | None] = []
        fixed = self._fact_calls(state.facts)
        last = state.history[-1] if state.history else None
        feeds = _Feeds(last)
        for template, text, fed_by in zip(self.templates, fixed, self._fed_by, strict=True):
            if text is _UNFIXED:
                # A built-in chained call that the last step does not feed is not offered (render says None).
                offered = not self.chain or fed_by is None or feeds.feed(fed_by)
                text = template.render(state, chain=self.chain) if offered else None
            out.append(None if text is None or text in taken else text)
        for choice in self.choices:
            out += [None if text is None or text in taken else text for text in choice.render_all(state)]
        out.append("submit None")
        values = observed_values(state.history, self.num_values, self.answer_functions)
        out += [f"submit {value}" for value, _ in values]
        out += [None] * (self.num_values - len(values))
        for group in self.extras:
            out += [None if text is None or text in taken else text for text in group.render(state)]
        # None's own slot holds "submit None" here: more than one action means another is offered.
        if not self._none_offered(state) and len(out) - out.count(None) > 1:  # never an empty choice
            out[self.submit_none_slot] = None
        return out

    def _none_offered(self, state: CandidateState) -> bool:
        return none_offered(state, self.none_after)

    def _fact_calls(self, facts: QuestionFacts) -> tuple[Any, ...]:
        """Per template, its call when only the question's facts fill it (the same at every step of an episode:
        rendered once per question), else ``_UNFIXED`` (rendered at each step)."""
        kept = self._facts_seen.get(id(facts))
        if kept is not None and kept[0] is facts:
            return kept[1]
        probe = CandidateState(facts)
        calls = tuple(
            template.render(probe, chain=self.chain) if only else _UNFIXED
            for template, only in zip(self.templates, self._facts_only, strict=True)
        )
        if len(self._facts_seen) >= 4096:  # one entry per question of the training set is all that is reused
            self._facts_seen.clear()
        self._facts_seen[id(facts)] = (facts, calls)
        return calls

    def slot_sources(self, state: CandidateState) -> list[str | None]:
        """For each slot, the function it calls (call slots) or whose result its value came from."""
        values = observed_values(state.history, self.num_values, self.answer_functions)
        sources: list[str | None] = [t.function for t in self.templates]
        sources += [c.function for c in self.choices for _ in range(c.count)]
        sources.append("submit")
        sources += [function for _, function in values]
        sources += [None] * (self.num_values - len(values))
        for group in self.extras:
            sources += group.sources(state)
        return sources

    def candidates(self, state: CandidateState) -> list[str]:
        """The non-empty slots' actions, in slot order."""
        return [text for text in self.slots(state) if text is not None]

    def __repr__(self) -> str:
        slots = len(self.templates)
        extras = f", extras={list(self.extras)}" if self.extras else ""
        return (
            f"ToolPipelineCandidates({slots} call slots, num_values={self.num_values}, chain={self.chain}, "
            f"none_after={sorted(self.none_after) if self.none_after is not None else None}{extras})"
        )
