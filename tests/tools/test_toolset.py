"""Toolsets: presets, schemas, checked calls by name, ablation groups, pickling."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

from crmarena_gym.org import LocalOrg, Org
from crmarena_gym.tasks import generate_tasks, oracle_trace
from crmarena_gym.tools import ABLATION_GROUPS, ALL_TOOLS, TOOLSET_NAMES, Tool, Toolset, get_tool, toolset

# ORIGINAL.md section 3, in its order; submit is the 25th task-specific function.
TASK_FUNCTIONS = [
    "get_agents_with_max_cases",
    "get_agents_with_min_cases",
    "calculate_average_handle_time",
    "get_start_date",
    "get_period",
    "get_agent_handled_cases_by_period",
    "get_qualified_agent_ids_by_case_count",
    "get_cases",
    "get_non_transferred_case_ids",
    "get_agent_transferred_cases_by_period",
    "get_shipping_state",
    "calculate_region_average_closure_times",
    "get_order_item_ids_by_product",
    "get_issue_counts",
    "find_id_with_max_value",
    "find_id_with_min_value",
    "get_account_id_by_contact_id",
    "get_purchase_history",
    "get_month_to_case_count",
    "search_knowledge_articles",
    "search_products",
    "get_issues",
    "get_livechat_transcript_by_case_id",
    "get_email_messages_by_case_id",
    "submit",
]
# Which functions read the org ("data it reads" is not "none" in section 3).
READS_ORG = {
    "get_agent_handled_cases_by_period",
    "get_cases",
    "get_non_transferred_case_ids",
    "get_agent_transferred_cases_by_period",
    "get_shipping_state",
    "get_order_item_ids_by_product",
    "get_issue_counts",
    "get_account_id_by_contact_id",
    "get_purchase_history",
    "search_knowledge_articles",
    "search_products",
    "get_issues",
    "get_livechat_transcript_by_case_id",
    "get_email_messages_by_case_id",
}
# Functions whose arguments normally come from an earlier function's output.
DEPENDENT = {
    "get_agents_with_max_cases",
    "get_agents_with_min_cases",
    "calculate_average_handle_time",
    "get_qualified_agent_ids_by_case_count",
    "get_cases",
    "get_agent_transferred_cases_by_period",
    "get_shipping_state",
    "calculate_region_average_closure_times",
    "get_issue_counts",
    "find_id_with_max_value",
    "find_id_with_min_value",
    "get_purchase_history",
    "get_month_to_case_count",
}


def test_presets() -> None:
    assert TOOLSET_NAMES == ("soql", "functions", "flex")
    assert toolset("soql").names == ("issue_soql_query", "issue_sosl_query", "submit")
    assert list(toolset("functions").names) == TASK_FUNCTIONS
    assert list(toolset("flex").names) == ["issue_soql_query", "issue_sosl_query", *TASK_FUNCTIONS]
    assert len(toolset("flex")) == 27 == len(ALL_TOOLS)
    assert toolset() == toolset("flex")
    with pytest.raises(ValueError, match="'react'"):
        toolset("react")


def test_metadata_follows_the_paper_grouping() -> None:
    for tool in ALL_TOOLS:
        assert tool.needs_org == (tool.name in READS_ORG or tool.general)
        if tool.general:
            assert (tool.kind, tool.dependency, tool.groups) == ("query", "independent", frozenset())
        elif tool.terminal:
            assert tool.name == "submit" and tool.groups == frozenset()
        else:
            kind = "query" if tool.name in READS_ORG else "calculation"
            dependency = "dependent" if tool.name in DEPENDENT else "independent"
            assert (tool.kind, tool.dependency) == (kind, dependency), tool.name
            assert tool.groups == {kind, dependency, f"{dependency}_{kind}"}
    assert [t.name for t in ALL_TOOLS if t.terminal] == ["submit"]
    assert [t.name for t in ALL_TOOLS if t.general] == ["issue_soql_query", "issue_sosl_query"]


def test_schemas_are_well_formed() -> None:
    for schema, tool in zip(toolset("flex").schemas(), ALL_TOOLS, strict=True):
        assert schema["type"] == "function"
        fn = schema["function"]
        assert fn["name"] == tool.name and fn["description"] == tool.description
        assert len(fn["description"]) > 20
        params = fn["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert "org" not in params["properties"]
        assert set(params["required"]) <= set(params["properties"])
        for name, prop in params["properties"].items():
            assert prop["description"], (tool.name, name)
            assert prop.get("type") in {"string", "integer", "number", "boolean", "array", "object"}
        json.dumps(schema)  # JSON-able
    get_cases = get_tool("get_cases").schema["function"]["parameters"]
    assert get_cases["required"] == []
    assert get_cases["properties"]["agent_ids"]["type"] == "array"
    assert get_tool("get_period").schema["function"]["parameters"]["required"] == ["period_name", "year"]


def test_schemas_hands_out_copies() -> None:
    ts = toolset("soql")
    ts.schemas()[0]["function"]["name"] = "changed"
    assert ts.schemas()[0]["function"]["name"] == "issue_soql_query"


def test_lookup() -> None:
    ts = toolset("functions")
    assert "get_cases" in ts and "issue_soql_query" not in ts and 5 not in ts
    assert ts["get_cases"] is get_tool("get_cases") and ts.get("nope") is None
    assert isinstance(ts["submit"], Tool) and [t.name for t in ts] == list(ts.names)
    with pytest.raises(KeyError, match="'issue_soql_query'"):
        ts["issue_soql_query"]
    with pytest.raises(KeyError, match="'nope'"):
        get_tool("nope")
    with pytest.raises(ValueError, match="unique"):
        Toolset([get_tool("submit"), get_tool("submit")])
    assert "submit" in repr(ts)


def test_call_by_name() -> None:
    ts = toolset("functions")
    assert ts.call("get_period", {"period_name": "Q3", "year": 2022}) == {
        "start_date": "2022-07-01T00:00:00Z",
        "end_date": "2022-10-01T00:00:00Z",
    }
    assert ts.call("get_period", '{"period_name": "Q1", "year": 2020}')["end_date"] == "2020-04-01T00:00:00Z"
    assert ts.call("get_period", b'{"period_name": "Q1", "year": 2020}')["start_date"] == "2020-01-01T00:00:00Z"
    assert ts.call("submit", {"content": "March"}) == "March"


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("issue_soql_query", {"query": "SELECT Id FROM Case"}, "Error: unknown function 'issue_soql_query'; the "),
        ("nope", {}, "Error: unknown function 'nope'; the available functions are: get_agents_with_max_cases, "),
        (None, {}, "Error: unknown function None"),
        ("get_period", "{not json", "Error: the arguments of get_period() are not valid JSON ("),
        ("get_period", "", "Error: get_period() is missing the required argument 'period_name'"),
        ("get_period", None, "Error: get_period() is missing the required argument 'period_name'"),
        ("get_period", "[1, 2]", "Error: the arguments of get_period() must be a JSON object, got list [1, 2]"),
        (
            "get_period",
            {"period_name": "Q1", "year": 2020, "org": 1},
            "Error: get_period() got an unknown argument 'org'",
        ),
        ("get_cases", {"org": None}, "Error: get_cases() got an unknown argument 'org'; it takes start_date, end_date"),
        ("get_period", {"period_name": "Q1"}, "Error: get_period() is missing the required argument 'year'"),
        ("get_period", {"period_name": "Q1", "year": "x"}, "Error: get_period() argument 'year' must be an integer"),
        ("get_issues", {"x": 1}, "Error: get_issues() got an unknown argument 'x'; it takes no arguments"),
    ],
)
def test_call_errors_never_raise(name: Any, arguments: Any, expected: str) -> None:
    result = toolset("functions").call(name, arguments, org=None)
    assert isinstance(result, str) and result.startswith(expected), result


def test_a_query_tool_without_an_org_is_a_wiring_error() -> None:
    with pytest.raises(ValueError, match="'get_issues' reads the org"):
        toolset("functions").call("get_issues", {})
    with pytest.raises(TypeError, match="org as its first argument"):
        get_tool("get_issues").function()


def test_without_names_and_groups() -> None:
    full = toolset("functions")
    assert full.without(names=["get_cases"]).names == tuple(n for n in TASK_FUNCTIONS if n != "get_cases")
    assert "get_cases" in full  # the original is unchanged
    assert full.without(names="submit").names == tuple(TASK_FUNCTIONS[:-1])
    expected_sizes = {
        "query": 25 - len(READS_ORG),
        "calculation": len(READS_ORG) + 1,
        "dependent": 25 - len(DEPENDENT),
        "independent": len(DEPENDENT) + 1,
        "dependent_calculation": 25 - len(DEPENDENT - READS_ORG),
        "independent_calculation": 25 - (24 - len(READS_ORG) - len(DEPENDENT - READS_ORG)),
        "dependent_query": 25 - len(DEPENDENT & READS_ORG),
        "independent_query": 25 - len(READS_ORG - DEPENDENT),
    }
    assert set(expected_sizes) == set(ABLATION_GROUPS)
    for group, size in expected_sizes.items():
        reduced = full.without(groups=[group])
        assert len(reduced) == size, group
        assert "submit" in reduced
        assert all(group not in t.groups for t in reduced)
    assert full.without(groups="dependent_calculation").names == tuple(
        n for n in TASK_FUNCTIONS if not (n in DEPENDENT and n not in READS_ORG and n != "submit")
    )
    # Groups never take the general tools; names do.
    flex = toolset("flex")
    assert flex.without(groups=["query", "calculation"]).names == ("issue_soql_query", "issue_sosl_query", "submit")
    assert flex.without(names=["issue_sosl_query"], groups=["query"]).names[:2] == (
        "issue_soql_query",
        "get_agents_with_max_cases",
    )
    removed = full.without(groups=["dependent_calculation"])
    assert removed.call("find_id_with_max_value", {"values_by_id": {"a": 1}}).startswith(
        "Error: unknown function 'find_id_with_max_value'"
    )
    assert "find_id_with_max_value" not in {s["function"]["name"] for s in removed.schemas()}


def test_without_rejects_unknown_names_and_groups() -> None:
    with pytest.raises(ValueError, match="'issue_soql_query'"):
        toolset("functions").without(names=["issue_soql_query"])
    with pytest.raises(ValueError, match="'dependent_queries'"):
        toolset("functions").without(groups=["dependent_queries"])


def test_pickling_keeps_tools_and_toolsets() -> None:
    ts = toolset("flex").without(groups=["dependent"])
    clone = pickle.loads(pickle.dumps(ts))
    assert clone == ts and clone.names == ts.names
    assert pickle.loads(pickle.dumps(get_tool("get_cases"))) is get_tool("get_cases")
    assert clone.call(
        "get_start_date", {"end_date": "2021-01-31T00:00:00Z", "period": "months", "interval_count": 1}
    ) == ("2020-12-31T00:00:00Z")


def test_org_errors_become_text() -> None:
    from crmarena_gym.org import OrgError

    class Refusing(Org):
        def query(self, soql: str) -> dict[str, Any]:
            raise OrgError("INVALID_FIELD", "No such column 'Foo' on entity 'Case'.")

        def search(self, sosl: str) -> dict[str, Any]:
            raise OrgError("MALFORMED_SEARCH", "search term must be longer than one character")

    org = Refusing()
    flex = toolset("flex")
    # The general tools answer as an execute observation does; task functions prefix Error:.
    assert flex.call("issue_soql_query", {"query": "SELECT Foo FROM Case"}, org) == (
        "INVALID_FIELD: No such column 'Foo' on entity 'Case'."
    )
    assert flex.call("issue_sosl_query", {"query": "FIND {a}"}, org) == (
        "MALFORMED_SEARCH: search term must be longer than one character"
    )
    assert flex.call("get_issues", {}, org) == "Error: INVALID_FIELD: No such column 'Foo' on entity 'Case'."
    assert flex.call("search_products", {"search_term": "x"}, org).startswith("Error: MALFORMED_SEARCH: ")


def test_no_tool_changes_its_arguments(env_org: Any) -> None:
    """The checks pass a model's lists and dicts on as they are (no copies): no tool may change them."""
    org, tools = LocalOrg(env_org), toolset("functions")
    called = set()
    for inst in generate_tasks(env_org, seed=7, per_task=2, null_share=0.0):
        view = org.with_today(inst.params["today"])
        for call in oracle_trace(inst, view).calls:
            arguments = copy.deepcopy(call.arguments)
            tools.call(call.name, arguments, view)
            assert arguments == call.arguments, call.name
            called.add(call.name)
    assert {"get_shipping_state", "calculate_average_handle_time", "get_agents_with_max_cases"} <= called
