"""The litellm policy's prompts against fixtures written from the policy before the prompts moved to the
chat core (``python -m tests.policies.prompt_episodes`` wrote them): identical except the fixes listed
in :func:`_documented_fixes`.

The Act fixtures were rewritten once since, deliberately, for one observation: a reply without an action
is now answered with the action rule restated (``FORMAT_ERROR: no action found in the reply.`` and the
action format, issue 11 item 7), as the original answers it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.policies.prompt_episodes import INSTANCES, SCRIPTS, _litellm_policy, build_org, fixture_path, play

pytest.importorskip("litellm")


@pytest.fixture(scope="module")
def prompt_org(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_org(tmp_path_factory.mktemp("prompts") / "org.sqlite")


QUERY_RULE = "- Queries are Salesforce SOQL or SOSL, not SQL: no SELECT *, no joins, no date arithmetic.\n"


def _documented_fixes(requests: list[dict[str, Any]], framework: str) -> list[dict[str, Any]]:
    """The recorded requests with the fixes made since the fixtures were written.

    1. Function calling plays the ``functions`` toolset, which has no query tool: its system prompt no
       longer says that queries are SOQL or SOSL.
    """
    if framework != "fc":
        return requests
    fixed = json.loads(json.dumps(requests))
    for request in fixed:
        system = request["messages"][0]
        assert system["role"] == "system" and QUERY_RULE in system["content"]
        system["content"] = system["content"].replace(QUERY_RULE, "")
    return fixed


@pytest.mark.parametrize("abbrev", sorted(INSTANCES))
@pytest.mark.parametrize("framework", sorted(SCRIPTS))
def test_prompts_match_the_fixtures(framework: str, abbrev: str, prompt_org: Path) -> None:
    expected = json.loads(fixture_path(framework, abbrev).read_text(encoding="utf-8"))
    assert play(_litellm_policy, prompt_org, framework, abbrev) == _documented_fixes(expected, framework)
