"""Oracle solvers: reach each instance's answer through the agent-facing tools, as a perfect agent would.

An oracle knows the instance's hidden ``params`` (the window, the product, the contact, the case ...)
but nothing of its gold answer: it calls the task-specific tools by name with JSON arguments, exactly
as a function-calling model does through :meth:`~crmarena_gym.tools.Toolset.call`, so every answer it
gives has gone through the tools and the SOQL/SOSL engine. The gold answers come from plain SQL
(:mod:`crmarena_gym.tasks._gold`), so an oracle that scores 1 on every instance shows that the two
paths agree.

Each solver records its calls; :attr:`OracleTrace.actions` replays them, ``submit`` last, so that
environments and scripted policies can use them as actions. The judgement tasks are decided from what the tools
return, never from the verdict in ``params``: a policy violation (PVI) from the replies of the case's chat and emails
that break a rule (:func:`~crmarena_gym.datagen.read_breaches`, a perfect reader of the generator's conversations)
and the article whose text states that rule (:func:`~crmarena_gym.datagen.states_rule`) among the hits of a search
for the title of the rule's policy (:func:`~crmarena_gym.datagen.policy_title`); a knowledge question (KQA) from what
the found articles' text says where the generator's sentence of the asked fact puts its answer
(:func:`~crmarena_gym.datagen.read_fact_answers`), searched for by the hidden ``search_term`` (the title of the
fact's article: what the question asks says nothing of which article holds it).

The routing of a new case (NCR) takes nothing from ``params``: the solver reads the case's subject and
description off the question (:func:`~crmarena_gym.tasks.read_new_case`; in act mode, off the case record), reads
them as the issue and product they state (:func:`~crmarena_gym.datagen.read_case_text`, a perfect reader of the
generator's texts), and takes their Ids from what ``get_issues`` lists and ``search_products`` finds, as an agent
must: played against damaged results, it routes by what it was shown. A described purchase (NED) is found the same
way: what to search the products for and the day come from the question and today's date in its context
(:mod:`crmarena_gym.tasks._purchase`, a perfect reader of the generator's phrasing), never from the hidden
``search_term`` and ``purchase_date``.

Example:
    >>> import tempfile, pathlib
    >>> from crmarena_gym.datagen import generate_org
    >>> from crmarena_gym.org import LocalOrg
    >>> from crmarena_gym.tasks import generate_tasks
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "org.sqlite"
    >>> _ = generate_org(path, seed=0, scale=1.0)
    >>> inst = generate_tasks(path, seed=0, per_task=2, tasks=["BRI"])[0]
    >>> trace = oracle_trace(inst, LocalOrg(path))
    >>> trace.answer == inst.answer, [c.name for c in trace.actions][-3:]
    (True, ['calculate_region_average_closure_times', 'find_id_with_min_value', 'submit'])
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from crmarena_gym.datagen import policy_title, read_breaches, read_case_text, read_fact_answers, states_rule
from crmarena_gym.org import Org
from crmarena_gym.schema import CASE_STATUSES
from crmarena_gym.tasks._context import read_todays_date
from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._new_case import read_new_case
from crmarena_gym.tasks._purchase import described_product, read_purchase_day, read_purchase_question
from crmarena_gym.tasks._schema_names import RenamedCalls, SchemaNames
from crmarena_gym.tasks._scoring import NONE_ANSWER
from crmarena_gym.tools import ToolCallText, Toolset, to_argument_datetime, toolset

__all__ = ["ORACLES", "OracleError", "OracleTrace", "SolverCalls", "ToolCall", "oracle_trace", "run_solver", "solve"]


class OracleError(RuntimeError):
    """The tools contradict the instance's hidden parameters, or a tool answered with an error."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an oracle.

    Attributes:
        name: The tool's name.
        arguments: The JSON arguments, as a model would send them.
        result: What the tool returned (not compared, not shown in ``repr``).
    """

    name: str
    arguments: dict[str, Any]
    result: Any = field(default=None, compare=False, repr=False)

    def to_action(self) -> str:
        """The call as an environment action: a JSON tool call (a :class:`~crmarena_gym.tools.ToolCallText`,
        which an environment reads without decoding the JSON).

        Example:
            >>> ToolCall("get_issues", {}).to_action()
            '{"name": "get_issues", "arguments": {}}'
        """
        return ToolCallText(self.name, self.arguments)


@dataclass(frozen=True)
class OracleTrace:
    """How an oracle solved an instance.

    Attributes:
        calls: The tool calls, in order (``submit`` not included).
        answer: The answer the tools lead to: an id, a month, a state, a short text, or ``"None"``.
    """

    calls: tuple[ToolCall, ...]
    answer: str

    @property
    def actions(self) -> tuple[ToolCall, ...]:
        """The calls followed by ``submit(content=answer)``: a full episode's actions."""
        return (*self.calls, ToolCall("submit", {"content": self.answer}, self.answer))


class SolverCalls(Protocol):
    """What a solver calls tools through: the org's tools directly (:func:`oracle_trace`), or an environment
    one action at a time (the reactive oracle policy, which answers from the observations it received)."""

    def __call__(self, name: str, **arguments: Any) -> Any:
        """Call the tool ``name`` with JSON ``arguments``; its result."""

    def contradicted(self, message: str) -> None:
        """The results contradict the instance's hidden parameters (a check of the solver failed).

        The oracle raises :class:`OracleError`; an agent that acts on what it observed carries on with it
        (the solver then goes on with what the tools said, or answers ``None`` when it cannot tell).
        """


class _Caller:
    """Calls tools by name through a toolset, records each call, and fails loudly on ``Error:``."""

    def __init__(self, org: Org, tools: Toolset, run: Callable[[str, dict[str, Any]], Any] | None = None) -> None:
        self.org = org
        self.tools = tools
        self.run = run
        self.calls: list[ToolCall] = []

    def __call__(self, name: str, **arguments: Any) -> Any:
        if self.run is not None:
            result = self.run(name, arguments)
        else:
            # The solvers build their arguments from the tools' own results: no model input to check.
            result = self.tools.call(name, arguments, self.org, trusted=True)
        self.calls.append(ToolCall(name, arguments, result))
        if isinstance(result, str) and result.startswith("Error:"):
            raise OracleError(f"{name}({_short(arguments)}) answered {result!r}")
        return result

    def contradicted(self, message: str) -> None:
        raise OracleError(message)


def _short(arguments: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return text if len(text) <= 200 else text[:197] + "..."


def _param(params: dict[str, Any], name: str) -> Any:
    if name not in params:
        raise OracleError(f"the instance's hidden params lack {name!r} (has {sorted(params)})")
    return params[name]


def _window(call: SolverCalls, params: dict[str, Any]) -> tuple[str, str]:
    """The window's start and end, worked out with the date tools the way the query states it."""
    start = to_argument_datetime(_param(params, "start"))
    end = to_argument_datetime(_param(params, "end"))
    spec = params.get("window") or {}
    if "unit" in spec:
        today = dt.date.fromisoformat(_param(params, "today"))
        computed_end = to_argument_datetime(today)
        # The unit singular, as the original's get_start_date names it ("month", "quarter").
        computed_start = call(
            "get_start_date", end_date=computed_end, period=spec["unit"], interval_count=spec["count"]
        )
    elif "year" in spec:
        name = spec.get("month") or spec.get("season") or f"Q{spec.get('quarter')}"
        period = call("get_period", period_name=name, year=spec["year"])
        computed_start, computed_end = period["start_date"], period["end_date"]
    else:
        return start, end  # no description of the window: use the stored one
    if (computed_start, computed_end) != (start, end):
        call.contradicted(
            f"the date tools give the window {computed_start} to {computed_end} for {spec}, "
            f"but the instance was computed over {start} to {end}"
        )
    return computed_start, computed_end


def _single(call: SolverCalls, found: list[str], what: str) -> str:
    if not found:
        return NONE_ANSWER
    if len(found) > 1:
        call.contradicted(f"the tools give a tie for the {what}: {found}")
    return found[0]


# A SOQL statement is at most 100,000 characters, about 4,500 quoted Ids: lists longer than that together (every
# agent and a quarter's cases, a popular product's order items, or the accounts of a year's cases of an org a hundred
# times the original's) go in parts of at most 2,000 Ids each, as an agent must send them.
_IDS_PER_CALL = 4500
_IDS_PER_PART = 2000


def _id_parts(*lists: list[Any], key: Callable[[Any], Any] | None = None) -> list[tuple[list[Any], ...]]:
    """A call's Id lists, as the calls that together send them all: one call with the lists as given when their
    distinct Ids fit in one statement; otherwise every part of the first list with every part of the second, a part
    being consecutive items with at most ``_IDS_PER_PART`` distinct Ids.

    Args:
        lists: The Id lists of one call (at most two long ones: two parts fill a statement). Split, a list loses its
            repeats, which one call ignores but two parts would count twice.
        key: The Id the tool looks up for each item, when the items are records (``get_shipping_state``'s cases and
            their AccountId): the records are split in their order, none dropped.

    Example:
        >>> ids = [f"a{i}" for i in range(3000)], [f"b{i}" for i in range(2500)]
        >>> [(len(a), len(b)) for a, b in _id_parts(*ids)]
        [(2000, 2000), (2000, 500), (1000, 2000), (1000, 500)]
        >>> cases = [{"AccountId": f"a{i % 5000}"} for i in range(9000)]
        >>> [len(part) for (part,) in _id_parts(cases, key=lambda case: case["AccountId"])]
        [2000, 2000, 2000, 2000, 1000]
    """
    keyed = key or (lambda item: item)
    if sum(len({keyed(item) for item in items}) for items in lists) <= _IDS_PER_CALL:
        return [lists]
    split = []
    for items in lists:
        parts: list[list[Any]] = [[]]
        seen: set[Any] = set()
        for item in items if key else dict.fromkeys(items):
            if keyed(item) not in seen and len(seen) == _IDS_PER_PART:
                parts.append([])
                seen = set()
            seen.add(keyed(item))
            parts[-1].append(item)
        split.append(parts)
    return list(itertools.product(*split))


def _summed(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Counts per key of the parts of one call, summed, keys in the order they first come."""
    total: dict[str, int] = {}
    for part in counts:
        for key, n in part.items():
            total[key] = total.get(key, 0) + n
    return total


def _handle_time(call: SolverCalls, params: dict[str, Any], instance: TaskInstance) -> str:
    start, end = _window(call, params)
    handled = call("get_agent_handled_cases_by_period", start_date=start, end_date=end)
    qualified = call("get_qualified_agent_ids_by_case_count", agent_handled_cases=handled, n_cases=params["n_cases"])
    if not qualified:  # an empty list would be no filter at all for get_cases, as in the original
        return NONE_ANSWER
    single = call("get_non_transferred_case_ids", start_date=start, end_date=end)
    if not single:
        return NONE_ANSWER
    cases = [
        case
        for agents, case_ids in _id_parts(qualified, single)
        for case in call("get_cases", start_date=start, end_date=end, agent_ids=agents, case_ids=case_ids)
    ]
    averages = call("calculate_average_handle_time", cases=cases)
    best = "find_id_with_min_value" if params["direction"] == "min" else "find_id_with_max_value"
    return _single(call, call(best, values_by_id=averages), "agent")


def _transfer_count(call: SolverCalls, params: dict[str, Any], instance: TaskInstance) -> str:
    start, end = _window(call, params)
    handled = call("get_agent_handled_cases_by_period", start_date=start, end_date=end)
    qualified = call("get_qualified_agent_ids_by_case_count", agent_handled_cases=handled, n_cases=params["n_cases"])
    if not qualified:  # an empty list would count every agent's transfers, as in the original
        return NONE_ANSWER
    # Each agent is in one part: its count is its count in one call, in the order given.
    transfers = _summed(
        call("get_agent_transferred_cases_by_period", start_date=start, end_date=end, qualified_agent_ids=agents)
        for (agents,) in _id_parts(qualified)
    )
    best = "find_id_with_min_value" if params["direction"] == "min" else "find_id_with_max_value"
    return _single(call, call(best, values_by_id=transfers), "agent")


def _top_issue(call: SolverCalls, params: dict[str, Any], instance: TaskInstance) -> str:
    start, end = _window(call, params)
    items = call("get_order_item_ids_by_product", product_id=_param(params, "product_id"))
    counts = _summed(
        call("get_issue_counts", start_date=start, end_date=end, order_item_ids=part) for (part,) in _id_parts(items)
    )
    # Ordered as one call orders them: the most reported first, ties by issue id.
    counts = dict(sorted(sorted(counts.items()), key=lambda item: -item[1]))
    return _single(call, call("find_id_with_max_value", values_by_id=counts), "issue")


def _monthly_trend(call: SolverCalls, params: dict[str, Any], instance: TaskInstance) -> str:
    start, end = _window(call, params)
    items = call("get_order_item_ids_by_product", product_id=_param(params, "product_id"))
    if not items:  # an empty list would be no filter for get_cases
        return NONE_ANSWER
    cases = [
        case
        for (part,) in _id_parts(items)
        for case in call("get_cases", start_date=start, end_date=end, order_item_ids=part)
    ]
    months = call("get_month_to_case_count", cases=cases)
    return _single(call, call("find_id_with_max_value", values_by_id=months), "month")


def _best_region(call: SolverCalls, params: dict[str, Any], instance: TaskInstance) -> str:
    start, end = _window(call, params)
    cases = call("get_cases", start_date=start, end_date=end)
    # The accounts of a year's cases at a hundred times the original's size: the cases in parts, in their order.
    with_states = [
        case
        for (part,) in _id_parts(cases, key=lambda case: case.get("AccountId"))
        for case in call("get_shipping_state", cases=part)
    ]
    averages = call("calculate_region_average_closure_times", cases=with_states)
    return _single(call, call("find_id_with_min_value", values_by_id=averages), "state")


_OPEN_STATUSES = [s for s in CASE_STATUSES if s != "Closed"]


def _new_case(instance: TaskInstance, params: dict[str, Any]) -> tuple[str | None, str | None]:
    """The new case's subject and description: the lines of the question that state it; where the question states
    none (act mode: the case is a record the agent reads), the ``case_subject`` and ``case_description``
    parameters, which stand for what was read off the record (the reactive oracle sets them from its read)."""
    subject, description = read_new_case(instance.query)
    if subject is None and description is None:
        subject, description = params.get("case_subject"), params.get("case_description")
    return subject, description


def _same_name(listed: Any, name: str) -> bool:
    """Whether a listed record's name is ``name``, as a reader compares names (case and spacing aside)."""
    return isinstance(listed, str) and " ".join(listed.split()).casefold() == " ".join(name.split()).casefold()


def _case_product_items(call: SolverCalls, name: str) -> list[str] | None:
    """The order items of the product a new case names: the hits of a search for its name, of which the case is
    about the one customers ordered (a look-alike never ordered is not what a customer writes about); None
    (after saying why) when not exactly one hit was ordered."""
    found = call("search_products", search_term=name)
    ordered = []
    for product_id in found:
        items = call("get_order_item_ids_by_product", product_id=product_id)
        if items:
            ordered.append(items)
    if len(ordered) != 1:
        call.contradicted(f"searching the case's product {name!r} finds {len(ordered)} ordered product(s) in {found}")
        return None
    return ordered[0]


def _case_routing(call: SolverCalls, params: dict[str, Any], instance: TaskInstance) -> str:
    # The issue and the product as the case's text states them (a perfect reading of it), then their Ids from the
    # records the tools list: a lost or damaged list leaves the case unroutable, as it would an agent.
    subject, description = _new_case(instance, params)
    readings = read_case_text(subject, description) if subject and description else ()
    if len(readings) != 1:
        call.contradicted(f"the new case's text reads as {len(readings)} issue(s) and product(s): {readings}")
        return NONE_ANSWER
    reading = readings[0]
    issues = call("get_issues")
    named = [row["Id"] for row in issues if _same_name(row.get("Name"), reading.issue)]
    if len(named) != 1:
        call.contradicted(f"get_issues lists {len(named)} issue(s) named {reading.issue!r}, the case's issue")
        return NONE_ANSWER
    closed_on_issue = call("get_cases", issue_ids=named, statuses=["Closed"])
    tied = call("get_agents_with_max_cases", subset_cases=closed_on_issue)
    if len(tied) > 1:
        items = _case_product_items(call, reading.product)
        if items is None:
            return NONE_ANSWER
        closed_on_product = [
            case
            for part, agents in _id_parts(items, tied)
            for case in call("get_cases", order_item_ids=part, statuses=["Closed"], agent_ids=agents)
        ]
        best = call("get_agents_with_max_cases", subset_cases=closed_on_product)
        tied = best or tied  # no tied agent closed a case on the product: all stay tied
    if len(tied) > 1:
        open_cases = call("get_cases", agent_ids=tied, statuses=_OPEN_STATUSES)
        # get_agents_with_min_cases only sees agents with at least one open case; a perfect agent
        # knows the tied agents missing from the list have none.
        counts = Counter({agent: 0 for agent in tied})
        counts.update(c["OwnerId"] for c in open_cases)
        fewest = min(counts.values())
        tied = [agent for agent in tied if counts[agent] == fewest]
    return _single(call, tied, "agent")


def _named_entity(call: SolverCalls, params: dict[str, Any], instance: TaskInstance) -> str:
    # What the customer described and the day, as the question states them (a perfect reading of the generator's
    # phrasing, today's date from the context), never the hidden search_term and purchase_date: a question read
    # otherwise is searched for otherwise, as by an agent.
    question = read_purchase_question(instance.query)
    term = described_product(question.description) if question else ""
    today = read_todays_date(instance.metadata.required)
    day = read_purchase_day(question.when, today) if question and today else None
    if not term or day is None:
        call.contradicted(f"the question reads as no product ({term!r}) or no day ({day}) of purchase")
        return NONE_ANSWER
    account_id = call("get_account_id_by_contact_id", contact_id=_param(params, "contact_id"))
    if account_id is None:
        return NONE_ANSWER
    candidates = call("search_products", search_term=term)
    bought = call(
        "get_purchase_history",
        account_id=account_id,
        purchase_date=to_argument_datetime(day),
        related_product_ids=candidates,
    )
    return _single(call, bought, "product")


def _policy_violation(call: SolverCalls, params: dict[str, Any], instance: TaskInstance) -> str:
    # The verdict from what the tools return, never the hidden article_id, evidence and search_term: the replies of the
    # chat and emails that break a rule (a perfect reading of the generator's conversations), a search for the title
    # of the policy each broken rule belongs to, and the article among the hits whose text states that rule. A lost
    # conversation shows no breach; a lost or altered article states no rule: no article to name.
    case_id = _param(params, "case_id")
    chats = call("get_livechat_transcript_by_case_id", case_id=case_id)
    emails = call("get_email_messages_by_case_id", case_id=case_id)
    texts = [c.get("Body") or "" for c in chats] + [e.get("TextBody") or "" for e in emails]
    if not any(texts):
        call.contradicted(f"case {case_id!r} has no chat or email to review")
    breaches = list(dict.fromkeys(b for text in texts for b in read_breaches(text)))
    if not breaches:
        return NONE_ANSWER  # no reply breaks a rule
    stating: list[str] = []
    for title in dict.fromkeys(policy_title(b) for b in breaches):
        articles = call("search_knowledge_articles", search_term=title)
        stating += [a["Id"] for a in articles if any(states_rule(a.get("Content") or "", b) for b in breaches)]
    if not stating:
        call.contradicted(f"no article found by the broken rules' policy titles states a rule broken in {case_id!r}")
        return NONE_ANSWER  # no article to name
    return _single(call, list(dict.fromkeys(stating)), "violated article")


def _knowledge(call: SolverCalls, params: dict[str, Any], instance: TaskInstance) -> str:
    # The answer as the found articles' text states it where the generator's sentence of the asked fact puts it (a
    # perfect reader of its articles), never the gold nor the hidden article_id: an article lost or reworded changes
    # what is read.
    articles = call("search_knowledge_articles", search_term=_param(params, "search_term"))
    read = (read_fact_answers(instance.query, row.get("Content") or "") for row in articles)
    answers = list(dict.fromkeys(answer for given in read for answer in given))
    if len(answers) != 1:
        call.contradicted(
            f"the articles found by {params['search_term']!r} give {len(answers)} answer(s) to the question: {answers}"
        )
        return NONE_ANSWER
    return answers[0]


Solver = Callable[[SolverCalls, dict[str, Any], TaskInstance], str]

#: The solver of each task, by task name.
ORACLES: dict[str, Solver] = {
    "handle_time": _handle_time,
    "transfer_count": _transfer_count,
    "top_issue_identification": _top_issue,
    "monthly_trend_analysis": _monthly_trend,
    "best_region_identification": _best_region,
    "case_routing": _case_routing,
    "named_entity_disambiguation": _named_entity,
    "policy_violation_identification": _policy_violation,
    "knowledge_qa": _knowledge,
}


def oracle_trace(
    instance: TaskInstance,
    org: Org,
    *,
    tools: Toolset | None = None,
    run: Callable[[str, dict[str, Any]], Any] | None = None,
    names: SchemaNames | None = None,
) -> OracleTrace:
    """Solve an instance through the tools and record the calls.

    Args:
        instance: A generated instance (its ``params`` hold the hidden parameters).
        org: The org the instance was generated from.
        tools: The toolset to call through (default: the 25 task-specific functions).
        run: Carries out each call instead, ``run(name, arguments)`` returning the tool's result (as an
            environment does when the oracle plays it step by step; see ``OraclePolicy``).
        names: The org's names for the kind's objects and fields, read off the schema text it shows
            (:meth:`SchemaNames.read`): the solver's own SOQL is written with them (after schema drift).

    Returns:
        The calls and the answer (``"None"`` when the tools show there is none).

    Raises:
        OracleError: The instance has no hidden parameters (the original's published instances), a
            tool answered ``Error: ...``, or the tools contradict the parameters.
    """
    if not instance.params:
        raise OracleError(f"instance {instance.idx} has no hidden params; only generated instances can be solved")
    if instance.is_pro:  # a CRMArena-Pro instance: its category's solver, through SOQL/SOSL and its listed tools
        from crmarena_gym.tasks.pro import ProQuestion, pro_category, pro_oracle_trace

        question = ProQuestion(instance.query, instance.metadata.required, instance.params, instance.kind)
        return pro_oracle_trace(pro_category(instance.task), question, org, run=run, names=names)[1]
    caller = _Caller(org, tools or toolset("functions"), run)
    answer = run_solver(instance, caller, names=names)
    return OracleTrace(tuple(caller.calls), answer)


def run_solver(instance: TaskInstance, calls: SolverCalls, *, names: SchemaNames | None = None) -> str:
    """Run the instance's solver with its tool calls answered by ``calls``; the answer it reaches.

    Args:
        instance: A generated instance.
        calls: What answers the solver's calls.
        names: The org's names (see :func:`oracle_trace`): the solver's SOQL is rewritten with them.

    Raises:
        OracleError: The instance has no hidden parameters, or ``calls`` raised it.
    """
    if not instance.params:
        raise OracleError(f"instance {instance.idx} has no hidden params; only generated instances can be solved")
    if names is not None:
        calls = RenamedCalls(calls, names)
    if instance.is_pro:  # a CRMArena-Pro instance: its category's solver, its answer as an agent submits it
        from crmarena_gym.tasks.pro import ProQuestion, pro_category
        from crmarena_gym.tasks.pro._oracle import submitted_answer

        category = pro_category(instance.task)
        question = ProQuestion(instance.query, instance.metadata.required, instance.params, instance.kind)
        return submitted_answer(category, category.solve(calls, question))
    return ORACLES[instance.task](calls, instance.params, instance)


def solve(instance: TaskInstance, org: Org) -> str:
    """The answer the oracle reaches through the tools (see :func:`oracle_trace`)."""
    return oracle_trace(instance, org).answer
