"""Rendering query and function results as the observations an agent reads."""

from __future__ import annotations

import json
from typing import Any, Literal

from crmarena_gym.tools import clean_records

ObservationFormat = Literal["python", "json"]
QUERY_OUTPUT_PREFIX = "Salesforce instance output: "


def result_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a query or search result as the paper shows them.

    Each row loses its ``attributes`` key; a column that is null in every row is dropped;
    relationship values stay nested. ``COUNT()`` queries have no rows (the count is only in
    ``totalSize``), so they render as an empty list, as in the original.

    Example:
        >>> result_rows({"records": [{"attributes": {"type": "Case"}, "Id": "500x", "ClosedDate": None}]})
        [{'Id': '500x'}]
    """
    return clean_records(result.get("records", result.get("searchRecords", [])))


def render_value(value: Any, fmt: ObservationFormat) -> str:
    """A Python value as ``str()`` shows it (the paper's format) or as JSON."""
    if fmt == "json":
        return json.dumps(value, ensure_ascii=False, default=str)
    if fmt == "python":
        return str(value)
    raise ValueError(f"observation format must be 'python' or 'json', got {fmt!r}")


def render_query_result(result: dict[str, Any], fmt: ObservationFormat = "python") -> str:
    """The observation after a query: the prefix, then the rows.

    Example:
        >>> render_query_result({"totalSize": 1, "records": [{"attributes": {}, "expr0": 5}]})
        "Salesforce instance output: [{'expr0': 5}]"
    """
    return QUERY_OUTPUT_PREFIX + render_value(result_rows(result), fmt)


def render_error(code: str, message: str) -> str:
    """The observation after a failed query, as the original's code renders it: the output prefix,
    then ``CODE: message``.

    Example:
        >>> render_error("INVALID_TYPE", "sObject type 'Foo' is not supported.")
        "Salesforce instance output: INVALID_TYPE: sObject type 'Foo' is not supported."
    """
    return f"{QUERY_OUTPUT_PREFIX}{code}: {message}"
