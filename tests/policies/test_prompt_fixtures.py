"""The litellm policy's prompts against fixtures written from the policy before the prompts moved to the
chat core (``python -m tests.policies.prompt_episodes`` wrote them): identical except the fixes listed
in :func:`_documented_fixes`."""

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


def _documented_fixes(requests: list[dict[str, Any]], framework: str) -> list[dict[str, Any]]:
    """The recorded requests with the fixes made since the fixtures were written (none yet)."""
    return requests


@pytest.mark.parametrize("abbrev", sorted(INSTANCES))
@pytest.mark.parametrize("framework", sorted(SCRIPTS))
def test_prompts_match_the_fixtures(framework: str, abbrev: str, prompt_org: Path) -> None:
    expected = json.loads(fixture_path(framework, abbrev).read_text(encoding="utf-8"))
    assert play(_litellm_policy, prompt_org, framework, abbrev) == _documented_fixes(expected, framework)
