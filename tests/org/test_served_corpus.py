"""The engine's query test corpus again, through ``SalesforceOrg`` against the served org over HTTPS.

The test functions of the engine's query modules are imported here unchanged and collected a second
time; only the ``small_org`` fixture differs: here it is the project's live-org backend
(:class:`SalesforceOrg`, simple-salesforce inside) pointed at ``crmarena-gym serve-org``'s app serving
the same org file on 127.0.0.1. Each test thus runs once over ``LocalOrg`` (in its own module) and
once over the served org (here), with the same independently computed expectations.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("simple_salesforce")

from crmarena_gym.org import OrgError, SalesforceOrg
from crmarena_gym.org.serve import OrgServer, SessionHub
from tests.org.conftest import SMALL_TODAY
from tests.org.test_soql_child_subqueries import *  # noqa: F403
from tests.org.test_soql_clauses import *  # noqa: F403
from tests.org.test_soql_errors import *  # noqa: F403
from tests.org.test_soql_queries import *  # noqa: F403


@pytest.fixture(scope="module")
def small_org(small_org_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SalesforceOrg]:
    """The small org served as Salesforce, reached through SalesforceOrg (overrides the LocalOrg fixture)."""
    hub = SessionHub(small_org_path, token="corpus-token", today=SMALL_TODAY.isoformat())
    with OrgServer(hub, cert_dir=tmp_path_factory.mktemp("cert")) as server, pytest.MonkeyPatch.context() as mp:
        mp.setenv("REQUESTS_CA_BUNDLE", str(server.cert))
        yield SalesforceOrg(session_id=hub.token, instance_url=server.url, max_retries=0)


# What only the embedded engine has (plans, a movable date) is not the REST API's: those tests stay LocalOrg's.
del test_depth_limit, test_subquery_count_limit, test_with_today_moves_relative_literals  # noqa: F821


@pytest.fixture(autouse=True)
def _sendable(request: pytest.FixtureRequest) -> None:
    """A text no URL can carry (a lone surrogate) never reaches a server: SalesforceOrg refuses it (tested below)."""
    params = getattr(request.node, "callspec", None)
    for value in params.params.values() if params else ():
        if isinstance(value, str) and any("\ud800" <= ch <= "\udfff" for ch in value):
            pytest.skip(f"{value!r} holds a lone surrogate, which no request can carry")


def test_an_unsendable_text_is_refused_before_sending(small_org: SalesforceOrg) -> None:
    with pytest.raises(OrgError) as info:
        small_org.query("SELECT Id FROM Case WHERE Subject = 'x\ud800'")
    assert info.value.code == "MALFORMED_QUERY" and "'\\ud800' at character 38" in info.value.message
    with pytest.raises(OrgError) as info:
        small_org.search("FIND {\udfff}")
    assert info.value.code == "MALFORMED_SEARCH"
