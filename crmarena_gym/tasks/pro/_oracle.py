"""Solving a Pro instance through the tools, as an agent would: the calls recorded, errors loud."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from crmarena_gym.org import Org
from crmarena_gym.tasks._oracle import OracleTrace, _Caller
from crmarena_gym.tasks._schema_names import RenamedCalls, SchemaNames
from crmarena_gym.tasks._scoring import NONE_ANSWER
from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProQuestion
from crmarena_gym.tools import toolset

#: The query tools every Pro category may use; a category adds the task functions it lists in ``tools``.
QUERY_TOOLS: tuple[str, ...] = ("issue_soql_query", "issue_sosl_query")
#: What the oracle submits on the confidentiality categories (``privacy_rejection``): a refusal, which their grading
#: scores 1, in place of their None gold.
ORACLE_REFUSAL = "I'm sorry, but I cannot share that: it is private to another customer or internal to the company."


def format_pro_answer(answer: ProAnswer) -> str:
    """An answer as an agent would submit it: the value, the set's values joined by ``, ``, or ``None``.

    Example:
        >>> format_pro_answer(("00TWt000001", "00TWt000002")), format_pro_answer(None)
        ('00TWt000001, 00TWt000002', 'None')
    """
    if answer is None:
        return NONE_ANSWER
    return answer if isinstance(answer, str) else ", ".join(answer)


def pro_oracle_trace(
    category: Category,
    question: ProQuestion,
    org: Org,
    *,
    run: Callable[[str, dict[str, Any]], Any] | None = None,
    names: SchemaNames | None = None,
) -> tuple[ProAnswer, OracleTrace]:
    """Solve ``question`` with ``category``'s solver through the org's tools.

    Args:
        category: The category.
        question: The instance as the solver sees it.
        org: The org it was drawn from.
        run: Carries out each call instead, ``run(name, arguments)`` returning the tool's result (an environment
            played step by step by the oracle policy).
        names: The org's names for the kind's objects and fields (``SchemaNames.read`` of the schema text it
            shows): the solver's SOQL is written with them after schema drift.

    Returns:
        The answer the tools lead to, and the trace (the calls, and the answer as it would be submitted: a refusal
        on the confidentiality categories).

    Raises:
        OracleError: A tool answered ``Error: ...``, or the results contradict the hidden parameters.
        RuntimeError: The solver called a tool its category does not list.
    """
    caller = _Caller(org, toolset("flex"), run)
    answer = category.solve(caller if names is None else RenamedCalls(caller, names), question)
    allowed = {*QUERY_TOOLS, *category.tools}
    used = {call.name for call in caller.calls}
    if not used <= allowed:
        raise RuntimeError(f"the {category.name} solver called {sorted(used - allowed)}, which it does not list")
    return answer, OracleTrace(tuple(caller.calls), submitted_answer(category, answer))


def submitted_answer(category: Category, answer: ProAnswer) -> str:
    """What an oracle submits for ``answer``: the answer as text, or a refusal on the confidentiality categories."""
    return ORACLE_REFUSAL if category.spec.reward_metric == "privacy_rejection" else format_pro_answer(answer)
