"""The agent-facing tools of CRMArena: two general query tools and 25 task-specific functions.

Every tool runs through the :class:`~crmarena_gym.org.Org` interface (so it works on the embedded
org and on a live one), carries an OpenAI-style JSON schema generated from its signature and
docstring, and answers bad input with a string starting ``Error: `` instead of raising. Query
functions take the org as their first argument; the schemas leave it out.

Example:
    >>> from crmarena_gym.tools import get_period, toolset
    >>> get_period("Winter", 2020)
    {'start_date': '2020-12-01T00:00:00Z', 'end_date': '2021-03-01T00:00:00Z'}
    >>> get_period("Winter", "2020")
    "Error: get_period() argument 'year' must be an integer, got str '2020'"
    >>> toolset("soql").names
    ('issue_soql_query', 'issue_sosl_query', 'submit')
"""

from __future__ import annotations

from crmarena_gym.tools._calculations import (
    calculate_average_handle_time,
    calculate_region_average_closure_times,
    find_id_with_max_value,
    find_id_with_min_value,
    get_agents_with_max_cases,
    get_agents_with_min_cases,
    get_month_to_case_count,
    get_period,
    get_qualified_agent_ids_by_case_count,
    get_start_date,
)
from crmarena_gym.tools._common import DATETIME_FORMAT, clean_records, to_argument_datetime
from crmarena_gym.tools._general import (
    TruncatedRows,
    issue_soql_query,
    issue_sosl_query,
    query_result_budget,
    submit,
)
from crmarena_gym.tools._queries import (
    get_account_id_by_contact_id,
    get_agent_handled_cases_by_period,
    get_agent_transferred_cases_by_period,
    get_cases,
    get_email_messages_by_case_id,
    get_issue_counts,
    get_issues,
    get_livechat_transcript_by_case_id,
    get_non_transferred_case_ids,
    get_order_item_ids_by_product,
    get_purchase_history,
    get_shipping_state,
    search_knowledge_articles,
    search_products,
    sosl_escape,
)
from crmarena_gym.tools._signature import check_arguments, function_schema, json_type, parse_docstring
from crmarena_gym.tools._tool import Dependency, Kind, Tool, tool_function
from crmarena_gym.tools._toolset import (
    ABLATION_GROUPS,
    ALL_TOOLS,
    TOOLSET_NAMES,
    WRITE_TOOLS,
    ToolCallText,
    Toolset,
    get_tool,
    toolset,
)

__all__ = [
    "ABLATION_GROUPS",
    "ALL_TOOLS",
    "DATETIME_FORMAT",
    "TOOLSET_NAMES",
    "WRITE_TOOLS",
    "Dependency",
    "Kind",
    "Tool",
    "ToolCallText",
    "Toolset",
    "TruncatedRows",
    "calculate_average_handle_time",
    "calculate_region_average_closure_times",
    "check_arguments",
    "clean_records",
    "find_id_with_max_value",
    "find_id_with_min_value",
    "function_schema",
    "get_account_id_by_contact_id",
    "get_agent_handled_cases_by_period",
    "get_agent_transferred_cases_by_period",
    "get_agents_with_max_cases",
    "get_agents_with_min_cases",
    "get_cases",
    "get_email_messages_by_case_id",
    "get_issue_counts",
    "get_issues",
    "get_livechat_transcript_by_case_id",
    "get_month_to_case_count",
    "get_non_transferred_case_ids",
    "get_order_item_ids_by_product",
    "get_period",
    "get_purchase_history",
    "get_qualified_agent_ids_by_case_count",
    "get_shipping_state",
    "get_start_date",
    "get_tool",
    "issue_soql_query",
    "issue_sosl_query",
    "json_type",
    "parse_docstring",
    "query_result_budget",
    "search_knowledge_articles",
    "search_products",
    "sosl_escape",
    "submit",
    "to_argument_datetime",
    "tool_function",
    "toolset",
]
