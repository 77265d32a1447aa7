"""The litellm policy's prompts against fixtures written from the policy before the prompts moved to the
chat core (``python -m tests.policies.prompt_episodes`` wrote them).

Rewritten since, deliberately: the Act fixtures once, for one observation (a reply without an action is
answered with the action rule restated, issue 11 item 7); the function-calling fixtures for issue 33's one
episode semantics: every tool call of a reply runs (the second ``get_issues`` call is answered with its
result, not "Not run"), the core numbers the calls over the episode (``call_0`` .. ``call_2``), the
system prompt says so (and, playing the ``functions`` toolset, has no query rule)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.policies.prompt_episodes import INSTANCES, SCRIPTS, _litellm_policy, build_org, fixture_path, play

pytest.importorskip("litellm")


@pytest.fixture(scope="module")
def prompt_org(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_org(tmp_path_factory.mktemp("prompts") / "org.sqlite")


@pytest.mark.parametrize("abbrev", sorted(INSTANCES))
@pytest.mark.parametrize("framework", sorted(SCRIPTS))
def test_prompts_match_the_fixtures(framework: str, abbrev: str, prompt_org: Path) -> None:
    expected = json.loads(fixture_path(framework, abbrev).read_text(encoding="utf-8"))
    assert play(_litellm_policy, prompt_org, framework, abbrev) == expected
