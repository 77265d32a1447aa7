"""The general-purpose query tools (SOQL, SOSL) and ``submit``, the tool that ends an episode.

A refused query is not an error of the tool: the general tools answer with the org's own text,
``CODE: message`` (for example ``INVALID_FIELD: No such column 'Foo' on entity 'Case'...``), which the
environment shows after the query output prefix (``Salesforce instance output: INVALID_FIELD: ...``),
whether the query came as an ``execute`` action (Act, ReAct) or as a call of these tools, so that an
agent sees the same words whichever interface it uses. Bad arguments (a missing or non-string query)
still answer ``Error: ...`` like every tool.
"""

from __future__ import annotations

from typing import Any

from crmarena_gym.org import Org
from crmarena_gym.tools._common import ToolInputError, clean_records
from crmarena_gym.tools._tool import tool_function

__all__ = ["issue_soql_query", "issue_sosl_query", "submit"]


def _text(query: str, name: str) -> str:
    text = query.strip()
    if not text:
        raise ToolInputError(f"{name} is empty; write a full statement")
    return text


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
        its error as ``CODE: message`` text.
    """
    return clean_records(org.query(_text(query, "query"))["records"])


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
