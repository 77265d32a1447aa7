"""Scripted litellm episodes whose requests pin down the prompts the litellm policy sends.

Each episode plays one hand-written instance (HTU, BRI, KQA, NCR) on a tiny hand-made org with a
framework's default toolset (Act and ReAct: ``soql``; function calling: ``functions``), the model's
replies scripted on a local OpenAI-compatible server. What the server receives (every request's
messages and tool names) is the prompt. The schema text and the action format come from the
environment, not from the policy, so they are replaced by markers: a change to them is not a change to
the prompt.

Run ``python -m tests.policies.prompt_episodes`` to (re)write the fixture files in
``tests/policies/fixtures/``; the test compares the policy's requests against them.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import gymnasium as gym

from tests.org_builder import OrgBuilder, ts
from tests.policies.scripted_server import ScriptedServer

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCHEMA_MARK = "<<schema>>"
ACTION_FORMAT_MARK = "<<action_format>>"

INSTANCES: dict[str, dict[str, Any]] = {
    "HTU": {
        "idx": 0,
        "task": "HTU",
        "query": "Which agent had the shortest average handle time in February 2021?",
        "answer": None,
        "metadata": {"required": "- Today's date: 2021-03-01\n- Handle time is the time from creation to closure."},
    },
    "BRI": {
        "idx": 1,
        "task": "BRI",
        "query": "Which state closed cases fastest in February 2021?",
        "answer": "OR",
        "metadata": {
            "required": "- Today's date: 2021-03-01",
            "optional": "- Q1 runs from January 1 to March 31.",
        },
    },
    "KQA": {
        "idx": 2,
        "task": "KQA",
        "query": "How many days does a customer have to return unworn shoes?",
        "answer": "30 days",
        "metadata": {"required": ""},
    },
    "NCR": {
        "idx": 3,
        "task": "NCR",
        "query": "Which agent should this new case go to?\nSubject: Torn seam\nDescription: The seam tore.",
        "answer": None,
        "metadata": {"required": "- Today's date: 2021-03-01"},
    },
}

# The model's replies per framework: a query or call, an unreadable reply or several calls, an answer.
SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "act": [
        {"content": "execute SELECT COUNT(Id) FROM Case"},
        {"content": "I am not sure yet."},
        {"content": "submit None"},
    ],
    "react": [
        {"content": "Thought: list the states first.\n<execute>SELECT Id, ShippingState FROM Account</execute>"},
        {"content": "Thought: I have it.\nAction: submit OR"},
    ],
    "fc": [
        {"tool_calls": [{"name": "get_period", "arguments": {"period_name": "Q1", "year": 2021}}]},
        {"tool_calls": [{"name": "get_issues"}, {"name": "get_issues"}]},
        {"tool_calls": [{"name": "submit", "arguments": {"content": "None"}}]},
    ],
}
TOOLSETS = {"act": "soql", "react": "soql", "fc": "functions"}


def build_org(path: Path) -> Path:
    """Two closed cases (an OR one closed in an hour, a CA one in a day) of one agent."""
    b = OrgBuilder(path)
    agent = b.add("User", FirstName="Ada", LastName="Byrne")
    issue = b.add("Issue__c", Name="Shipping Delay")
    for state, closed in (("OR", "2021-02-01 11:00"), ("CA", "2021-02-02 10:00")):
        account = b.add("Account", FirstName="Sam", LastName=state, ShippingState=state)
        b.add(
            "Case",
            OwnerId=agent,
            AccountId=account,
            IssueId__c=issue,
            Status="Closed",
            CreatedDate=ts("2021-02-01 10:00"),
            ClosedDate=ts(closed),
        )
    b.close()
    return path


def play(policy_factory: Any, org: Path, framework: str, abbrev: str) -> list[dict[str, Any]]:
    """Play one scripted episode; returns the requests the server received, markers in place.

    Args:
        policy_factory: ``policy_factory(framework, api_base)`` builds the policy under test.
        org: The org from :func:`build_org`.
        framework: ``act``, ``react`` or ``fc``.
        abbrev: One of :data:`INSTANCES`.
    """
    env = gym.make(f"CRMArena-{abbrev}-v0", org=org, tasks=[INSTANCES[abbrev]], toolset=TOOLSETS[framework])
    with ScriptedServer(SCRIPTS[framework]) as server:
        policy = policy_factory(framework, server.url)
        observation, info = env.reset(seed=0)
        policy.attach(env)
        policy.reset(observation, info, seed=0)
        done = truncated = False
        while not (done or truncated):
            observation, _, done, truncated, _ = env.step(policy.act(observation))
        return [_marked(request, info) for request in server.requests]


def _marked(request: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for message in request["messages"]:
        message = dict(message)
        if isinstance(message.get("content"), str):
            text = message["content"].replace(info["schema"].strip(), SCHEMA_MARK)
            message["content"] = text.replace(info["action_format"].strip(), ACTION_FORMAT_MARK)
        messages.append(message)
    tools = [tool["function"]["name"] for tool in request.get("tools", [])]
    return {"messages": messages, "tools": tools}


def fixture_path(framework: str, abbrev: str) -> Path:
    """The fixture file of one framework and task."""
    return FIXTURES / f"prompts_{framework}_{abbrev}.json"


def _litellm_policy(framework: str, api_base: str) -> Any:
    from crmarena_gym.policies import LiteLLMPolicy

    return LiteLLMPolicy("openai/scripted", framework, api_base=api_base, api_key="test-key", timeout=10.0)  # type: ignore[arg-type]


def main() -> int:
    """Write every fixture file from the current litellm policy."""
    FIXTURES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        org = build_org(Path(tmp) / "org.sqlite")
        for framework in SCRIPTS:
            for abbrev in INSTANCES:
                requests = play(_litellm_policy, org, framework, abbrev)
                text = json.dumps(requests, indent=1, ensure_ascii=False) + "\n"
                fixture_path(framework, abbrev).write_text(text, encoding="utf-8")
                print(f"wrote {fixture_path(framework, abbrev)} ({len(requests)} requests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
