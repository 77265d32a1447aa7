"""The general-purpose query tools (SOQL, SOSL) and ``submit``, the tool that ends an episode.

A refused query is not an error of the tool: the general tools answer with the org's own text,
``CODE: message`` (for example ``INVALID_FIELD: No such column 'Foo' on entity 'Case'...``), which the
environment shows after the query output prefix (``Salesforce instance output: INVALID_FIELD: ...``),
whether the query came as an ``execute`` action (Act, ReAct) or as a call of these tools, so that an
agent sees the same words whichever interface it uses. Bad arguments (a missing or non-string query)
still answer ``Error: ...`` like every tool.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator
from typing import Any

from crmarena_gym.org import Org, check_max_records
from crmarena_gym.tools._common import ToolInputError, clean_records
from crmarena_gym.tools._tool import tool_function

__all__ = ["TruncatedRows", "issue_soql_query", "issue_sosl_query", "query_result_budget", "submit"]

# The characters of a SOQL result a caller can show in the current context (None: all); see
# query_result_budget.
_CHAR_BUDGET: contextvars.ContextVar[int | None] = contextvars.ContextVar("crmarena_char_budget", default=None)
# Rows asked for first under a budget: enough for rows of 49 characters or more to fill 100,000 characters.
_PROBE_ROWS = 2048


def _text(query: str, name: str) -> str:
    text = query.strip()
    if not text:
        raise ToolInputError(f"{name} is empty; write a full statement")
    return text


class TruncatedRows(list):  # type: ignore[type-arg]
    """The first rows of a query result that has more (``total`` in all): a list, with the count.

    Example:
        >>> rows = TruncatedRows([{"Id": "500a"}], total=3)
        >>> rows, rows.total, str(rows) == str(list(rows))
        ([{'Id': '500a'}], 3, True)
    """

    def __init__(self, rows: Iterable[Any], *, total: int) -> None:
        super().__init__(rows)
        self.total = total

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_truncated, (list(self), self.total))


def _rebuild_truncated(rows: list[Any], total: int) -> TruncatedRows:
    return TruncatedRows(rows, total=total)


@contextlib.contextmanager
def query_result_budget(max_chars: int | None) -> Iterator[None]:
    """While the block runs, :func:`issue_soql_query` shapes only the rows ``max_chars`` characters can show.

    The environment sets it from its observation bound, so that a query matching a million rows costs
    what the rows it can show cost. Every row renders to at least 4 characters (``{}, ``), so at most
    ``max_chars // 4 + 1`` rows are asked of the org: first 2,048, then, while the rows so far render
    shorter than ``max_chars``, as many as should fill it at their length. A longer result comes back
    as :class:`TruncatedRows` with the full count. The budget is per thread and per asyncio task (a context variable).

    Example:
        >>> from crmarena_gym.org import Org
        >>> class ThreeCases(Org):
        ...     def query(self, soql):
        ...         return {"totalSize": 3, "done": True, "records": [{"Id": "500a"}, {"Id": "500b"}, {"Id": "500c"}]}
        ...     def search(self, sosl):
        ...         return {"searchRecords": []}
        >>> with query_result_budget(4):  # 4 characters: at most 4 // 4 + 1 = 2 rows
        ...     rows = issue_soql_query(ThreeCases(), "SELECT Id FROM Case")
        >>> rows, type(rows).__name__, rows.total
        ([{'Id': '500a'}, {'Id': '500b'}], 'TruncatedRows', 3)
    """
    if max_chars is not None:
        check_max_records(max_chars)
    token = _CHAR_BUDGET.set(max_chars)
    try:
        yield
    finally:
        _CHAR_BUDGET.reset(token)


@tool_function(kind="query", dependency="independent", general=True)
def issue_soql_query(org: Org, query: str) -> list[dict[str, Any]]:
    """Run a SOQL query on the Salesforce org and return the result rows.

    Args:
        org: The org to read.
        query: A complete SOQL statement, for example
            "SELECT Id, Subject FROM Case WHERE Status = 'Closed' LIMIT 5".

    Returns:
        The rows, each without its ``attributes`` key and without the columns that are null in every
        row; parent records selected through relationships stay nested. If the org refuses the query,
        its error as ``CODE: message`` text. Under :func:`query_result_budget`, a longer result's first
        rows as :class:`TruncatedRows`.
    """
    text = _text(query, "query")
    budget = _CHAR_BUDGET.get()
    if budget is None:
        return clean_records(org.query(text)["records"])
    most = budget // 4 + 1
    head = org.query_head(text, min(most, _PROBE_ROWS))
    rows = clean_records(head["records"])  # columns null in every row of the head are dropped
    while not head["done"] and len(rows) < most and (shown := len(str(rows))) <= budget:
        # Narrow rows: ask again for as many as should fill the budget at their length so far.
        wanted = int(budget * 1.25 * len(rows) / max(shown, 1)) + 1
        head = org.query_head(text, min(most, max(wanted, 2 * len(rows))))
        rows = clean_records(head["records"])
    return rows if head["done"] else TruncatedRows(rows, total=head["totalSize"])


@tool_function(kind="query", dependency="independent", general=True)
def issue_sosl_query(org: Org, query: str) -> list[dict[str, Any]]:
    """Run a SOSL search on the Salesforce org and return the matching records.

    Args:
        org: The org to read.
        query: A complete SOSL statement, for example
            "FIND {running shoes} IN NAME FIELDS RETURNING Product2(Id, Name)".

    Returns:
        The found records, shaped as :func:`issue_soql_query` shapes rows. If the org refuses the
        search, its error as ``CODE: message`` text.
    """
    return clean_records(org.search(_text(query, "query")).get("searchRecords") or [])


@tool_function(kind="calculation", dependency="independent", needs_org=False, terminal=True)
def submit(content: str) -> str:
    """Submit the final answer and end the task; answer None if the question has no answer.

    Args:
        content: The answer only, for example a record Id, a month name or a state code, without explanation.

    Returns:
        ``content`` unchanged; the environment reads it as the episode's answer.
    """
    return content
