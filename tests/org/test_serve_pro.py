"""A Pro org served as Salesforce's REST API: its kind's objects in describe, queries and searches answered;
``serve-org --kind`` picks the org. Writes to Pro orgs: tests/org/test_serve_pro_writes.py."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
simple_salesforce = pytest.importorskip("simple_salesforce")

from crmarena_gym.datagen import generate_org  # noqa: E402
from crmarena_gym.org.serve import OrgServer, SessionHub  # noqa: E402
from crmarena_gym.schema import org_schema  # noqa: E402
from tests.processes import popen  # noqa: E402


@pytest.fixture(scope="module")
def b2b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("b2b") / "b2b.sqlite"
    generate_org(path, kind="b2b", seed=4, scale=0.2)
    return path


@pytest.fixture(scope="module")
def sf(b2b: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    hub = SessionHub(b2b, token="pro-token", today="2024-01-31")
    with OrgServer(hub, cert_dir=tmp_path_factory.mktemp("cert")) as running, pytest.MonkeyPatch.context() as mp:
        mp.setenv("REQUESTS_CA_BUNDLE", str(running.cert))
        yield simple_salesforce.Salesforce(instance_url=running.url, session_id="pro-token", version="60.0")


def test_the_served_pro_org_describes_queries_and_searches_its_kind(sf: object, b2b: Path) -> None:
    schema = org_schema("b2b")
    described = {o["name"]: o for o in sf.describe()["sobjects"]}  # type: ignore[attr-defined]
    assert set(described) == {o.name for o in schema.objects + schema.standard_objects}
    # The kind's own objects are written by sessions; the standard ones every org has stay empty and read-only.
    assert {n for n, o in described.items() if o["createable"]} == {o.name for o in schema.objects}
    quote = sf.Quote.describe()  # type: ignore[attr-defined]
    assert [f["name"] for f in quote["fields"]] == [f.name for f in schema.get_object("Quote").fields]  # type: ignore[union-attr]
    raw = sqlite3.connect(b2b)
    (accepted,) = raw.execute("SELECT COUNT(*) FROM Quote WHERE Status = 'Accepted'").fetchone()
    assert sf.query("SELECT COUNT() FROM Quote WHERE Status = 'Accepted'")["totalSize"] == accepted  # type: ignore[attr-defined]
    (name,) = raw.execute("SELECT Name FROM Territory2 ORDER BY Id LIMIT 1").fetchone()
    found = sf.search(f"FIND {{{name}}} RETURNING Territory2(Name)")  # type: ignore[attr-defined]
    assert [r["Name"] for r in found["searchRecords"]] == [name]


def test_serve_org_kind_chooses_the_org_and_checks_a_given_file(b2b: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    command = [sys.executable, "-c", "from crmarena_gym.cli import main; raise SystemExit(main())", "serve-org"]
    wrong = subprocess.run([*command, "--org", str(b2b), "--kind", "b2c"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "is a b2b org, not a b2c org" in wrong.stderr
    process = popen(
        [*command, "--org", str(b2b), "--kind", "b2b", "--port", "0", "--http", "--cert-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith(f"serving the b2b org {str(b2b)!r}"), first
    finally:
        process.kill()
        process.communicate(timeout=30)


def test_the_served_org_reads_a_polymorphic_parent_through_the_name_object(sf: object, b2b: Path) -> None:
    raw = sqlite3.connect(b2b)
    account, name = raw.execute("SELECT Id, Name FROM Account ORDER BY Id LIMIT 1").fetchone()
    lead, first, last = raw.execute("SELECT Id, FirstName, LastName FROM Lead ORDER BY Id LIMIT 1").fetchone()
    raw.close()
    task = sf.Task.create({"Subject": "About the account", "WhatId": account, "WhoId": lead})["id"]  # type: ignore[attr-defined]
    (record,) = sf.query(f"SELECT What.Name, What.Type, Who.Name FROM Task WHERE Id = '{task}'")["records"]  # type: ignore[attr-defined]
    # Salesforce types the parent Name; its url names the record's own object.
    assert record["What"] == {
        "attributes": {"type": "Name", "url": f"/services/data/v60.0/sobjects/Account/{account}"},
        "Name": name,
        "Type": "Account",
    }
    assert record["Who"]["Name"] == f"{first} {last}"
    with pytest.raises(simple_salesforce.exceptions.SalesforceMalformedRequest) as info:
        sf.query("SELECT What.Amount FROM Task")  # type: ignore[attr-defined]
    assert info.value.content[0]["errorCode"] == "INVALID_FIELD"
    assert "No such column 'Amount' on entity 'Name'" in info.value.content[0]["message"]
