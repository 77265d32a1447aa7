"""Fixtures for the doctests in the package (the tests' own fixtures live under tests/)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.org_builder import OrgBuilder, ts

# Tests need no network: litellm reads its price table from the package instead of fetching it in a
# background thread at import (which, offline, can deadlock against the import of a test module).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# The trainer adapters' doctests need their optional extras; without them the modules are not collected.
collect_ignore = [
    f"crmarena_gym/integrations/{package}"
    for package, module in (("openenv", "openenv"), ("skyrl", "skyrl_gym"), ("verifiers", "verifiers"))
    if importlib.util.find_spec(module) is None
]
if importlib.util.find_spec("verifiers") is None:
    collect_ignore.append("crmarena_verifiers")


@pytest.fixture(scope="session")
def tiny_org(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-case org: an OR case closed in an hour, a CA case closed in a day (both in February 2021)."""
    path = tmp_path_factory.mktemp("tiny") / "org.sqlite"
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


@pytest.fixture
def bri_env(tiny_org: Path):  # type: ignore[no-untyped-def]
    """A best-region environment over :func:`tiny_org` with one instance."""
    from crmarena_gym.envs import CRMArenaEnv

    record = {
        "idx": 0,
        "task": "BRI",
        "query": "Which state closed cases fastest in February 2021?",
        "answer": "OR",
        "metadata": {"required": "- Today's date: 2021-03-01"},
    }
    return CRMArenaEnv("BRI", org=tiny_org, tasks=[record])
