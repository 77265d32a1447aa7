"""Clients nobody on the project wrote, against the served org: jsforce (Node) and the Salesforce CLI.

Both are installed by ``.ci/run`` in its work directory (``$CRMARENA_NODE_MODULES``; else the checkout's
``node_modules`` is looked in), never globally; where they are
missing (no Node, no network when CI ran, or a CLI that needs a newer Node than the machine has) the tests
skip and say why. What they get is checked against the org file read with plain SQLite and Salesforce's
documented behaviour.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from crmarena_gym.org import LocalOrg
from crmarena_gym.org.serve import OrgServer, SessionHub

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = Path(os.environ.get("CRMARENA_NODE_MODULES", ROOT / "node_modules"))
TODAY = "2025-07-29"
PASSWORD = "clients"
SESSION_ID = re.compile(r"^00D\w{12,15}![.\w]*$")


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (apt-get install nodejs): the jsforce and Salesforce CLI tests need it")
    return node


def _node_major(node: str) -> int:
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    m = re.match(r"v(\d+)", out)
    return int(m.group(1)) if m else 0


@pytest.fixture(scope="module")
def server(org_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OrgServer]:
    hub = SessionHub(org_path, password=PASSWORD, today=TODAY)
    with OrgServer(hub, cert_dir=tmp_path_factory.mktemp("cert")) as running:
        yield running


def test_jsforce(server: OrgServer, org_path: Path) -> None:
    node = _node()
    jsforce = NODE_MODULES / "jsforce"
    if not (jsforce / "package.json").is_file():
        pytest.skip(f"jsforce is not installed in {NODE_MODULES} (npm install --prefix {ROOT} jsforce@3; .ci/run does)")
    assert server.cert is not None
    env = {**os.environ, "NODE_EXTRA_CA_CERTS": str(server.cert)}  # how Node trusts the self-signed certificate
    done = subprocess.run(
        [
            node,
            str(Path(__file__).with_name("jsforce_client.js")),
            str(jsforce),
            server.url,
            "jsforce@example.com",
            PASSWORD,
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    report: dict[str, Any] = json.loads(done.stdout or "{}")
    assert done.returncode == 0 and "error" not in report, (report, done.stderr[-2000:])
    raw = sqlite3.connect(org_path.as_uri() + "?mode=ro", uri=True)
    try:
        (history,) = raw.execute('SELECT COUNT(*) FROM "CaseHistory__c"').fetchone()
        (api_user,) = raw.execute('SELECT MIN("Id") FROM "User"').fetchone()
    finally:
        raw.close()
    assert SESSION_ID.match(report["login"]["accessToken"]) and report["login"]["userId"] == api_user
    assert report["identity"]["user_id"] == api_user
    assert report["autoFetch"] == {"totalSize": history, "fetched": history}
    assert report["queryMore"] == {"first": 2000, "done": False, "more": history - 2000}
    assert report["limitInfo"]["apiUsage"]["used"] > 0
    local = LocalOrg(org_path, today=TODAY)
    try:
        expected = local.search("FIND {running} IN ALL FIELDS RETURNING Product2(Id, Name)")["searchRecords"]
    finally:
        local.close()
    assert [r["Id"] for r in report["search"]["searchRecords"]] == [r["Id"] for r in expected]
    assert (report["describe"]["name"], report["describe"]["keyPrefix"]) == ("Case", "500")
    crud = report["crud"]
    assert crud["made"]["success"] and all(r["success"] for r in crud["many"])
    assert all(r["success"] for r in crud["updated"])  # composite/sobjects PATCH with lowercase "id"
    assert all(r["success"] for r in crud["destroyed"])
    assert crud["read"]["Name"] == "Made by jsforce"
    binned = {r["Name"]: r["IsDeleted"] for r in crud["afterScanAll"]}  # scanAll: queryAll, deleted included
    assert binned == {"Made by jsforce": False, "jsforce renamed 0": True, "jsforce renamed 1": True}
    assert report["cascade"] == 0  # an account's contacts go with it
    assert report["upsert"]["first"]["created"] is True and report["upsert"]["second"]["created"] is False
    many_ids = sorted(r["id"] for r in crud["many"])
    assert sorted(r["id"] for r in report["deleted"]["deletedRecords"]) == many_ids
    assert crud["made"]["id"] in report["updated"]["ids"]
    assert report["bulkLoad"] == {"successful": 2, "failed": 0}
    assert report["bulkQuery"] == ["jsforce bulk 1", "jsforce bulk 2"]
    assert report["afterLogout"] == "INVALID_SESSION_ID"  # logout revoked the token


def test_salesforce_cli(server: OrgServer, tmp_path: Path) -> None:
    node = _node()
    sf = NODE_MODULES / ".sf-cli" / "node_modules" / ".bin" / "sf"
    if not sf.exists():
        pytest.skip(f"the Salesforce CLI is not installed in {sf.parent} (.ci/run installs it where Node is 22+)")
    if _node_major(node) < 22:
        pytest.skip("the Salesforce CLI 2.x needs Node.js 22 or later (its HTTP client, undici 8); this Node is older")
    assert server.cert is not None
    token = server.hub.token
    env = {
        **os.environ,
        "HOME": str(tmp_path),  # the CLI's own files stay in the test's directory
        "NODE_EXTRA_CA_CERTS": str(server.cert),
        "SF_DISABLE_TELEMETRY": "true",
        "SF_AUTOUPDATE_DISABLE": "true",
        "SF_ACCESS_TOKEN": token,
    }

    def run(*args: str) -> dict[str, Any]:
        done = subprocess.run([str(sf), *args, "--json"], capture_output=True, text=True, timeout=180, env=env)
        return json.loads(done.stdout or "{}")

    login = run("org", "login", "access-token", "--instance-url", server.url, "--no-prompt", "--alias", "served")
    assert login.get("status") == 0, login
    queried = run("data", "query", "--target-org", "served", "--query", "SELECT Id, Subject FROM Case LIMIT 3")
    assert queried.get("status") == 0 and len(queried["result"]["records"]) == 3, queried
    made = run(
        "data", "create", "record", "--target-org", "served", "--sobject", "Issue__c", "--values", "Name='Made by sf'"
    )
    assert made.get("status") == 0, made
    new_id = made["result"]["id"]
    got = run("data", "get", "record", "--target-org", "served", "--sobject", "Issue__c", "--record-id", new_id)
    assert got["result"]["Name"] == "Made by sf"
    gone = run("data", "delete", "record", "--target-org", "served", "--sobject", "Issue__c", "--record-id", new_id)
    assert gone.get("status") == 0, gone
