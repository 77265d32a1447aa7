"""``crmarena-gym query``: tables, JSON, errors and the exit code."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from crmarena_gym.cli import _query
from crmarena_gym.datagen import GENERATOR_VERSIONS


def _run(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    _query.register(parser.add_subparsers())
    args = parser.parse_args(["query", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = _query.run(args, out, err)
    return code, out.getvalue(), err.getvalue()


def test_table_with_flattened_parent_fields(small_org_path: Path, rows: dict) -> None:
    code, out, err = _run("SELECT Id, Subject, Owner.Name FROM Case ORDER BY Id LIMIT 3", "--org", str(small_org_path))
    assert code == 0 and not err
    lines = out.splitlines()
    assert lines[0].split() == ["Id", "Subject", "Owner.Name"]
    first = sorted(rows["Case"], key=lambda r: r["Id"])[0]
    assert lines[2].startswith(first["Id"])
    assert lines[-1] == "totalSize: 3"


def test_count_and_json(small_org_path: Path) -> None:
    code, out, _ = _run("SELECT COUNT() FROM Case", "--org", str(small_org_path))
    assert code == 0 and out.strip() == "totalSize: 60"
    code, out, _ = _run("SELECT Id FROM Case LIMIT 2", "--org", str(small_org_path), "--json")
    result = json.loads(out)
    assert result["totalSize"] == 2 and result["records"][0]["attributes"]["type"] == "Case"


def test_today_option_moves_relative_literals(small_org_path: Path, rows: dict) -> None:
    _, out, _ = _run(
        "SELECT COUNT() FROM Case WHERE CreatedDate = THIS_YEAR", "--org", str(small_org_path), "--today", "2022-05-01"
    )
    assert out.strip() == f"totalSize: {sum(r['CreatedDate'].startswith('2022') for r in rows['Case'])}"


@pytest.mark.parametrize(
    ("argv", "prefix"),
    [
        (["SELECT Foo FROM Case"], "crmarena-gym query: INVALID_FIELD: "),
        (["SELECT * FROM Case"], "crmarena-gym query: MALFORMED_QUERY: "),
        (["SELECT Id FROM Case", "--today", "2023-99-01"], "crmarena-gym query: today must be an ISO date"),
    ],
)
def test_errors_print_code_and_message(small_org_path: Path, argv: list[str], prefix: str) -> None:
    code, out, err = _run(*argv, "--org", str(small_org_path))
    # A refused query ran and failed (1); a date that cannot be read is refused before anything runs (2).
    assert code == (2 if "--today" in argv else 1) and not out and err.startswith(prefix)


def test_missing_org_file(tmp_path: Path) -> None:
    code, _, err = _run("SELECT Id FROM Case", "--org", str(tmp_path / "none.db"))
    assert code == 2 and "none.db" in err


def test_sosl_text_goes_to_search(small_org_path: Path) -> None:
    try:
        import crmarena_gym.org._sosl  # noqa: F401
    except ImportError:
        pytest.skip("the SOSL engine is not in this tree yet")
    code, out, err = _run("  FIND {delay} IN ALL FIELDS RETURNING Case(Id, Subject)", "--org", str(small_org_path))
    assert not err, err
    assert code == 0 and out.splitlines()[0].split()[0] == "sObject"


def test_pro_orgs_answer_and_the_kind_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from crmarena_gym.datagen import generate_org

    b2b = tmp_path / "b2b.sqlite"
    generate_org(b2b, kind="b2b", seed=1, scale=0.1)
    code, out, err = _run("SELECT COUNT() FROM Opportunity WHERE StageName = 'Closed'", "--org", str(b2b))
    (count,) = sqlite3.connect(b2b).execute("SELECT COUNT(*) FROM Opportunity WHERE StageName = 'Closed'").fetchone()
    assert code == 0 and out.strip() == f"totalSize: {count}" and not err
    code, out, err = _run("SELECT Id FROM Lead LIMIT 1", "--org", str(b2b), "--kind", "b2c")
    assert code == 2 and not out and err == f"crmarena-gym query: --org {str(b2b)!r} is a b2b org, not a b2c org\n"
    # Without --org, --kind picks the cached default org of that kind.
    monkeypatch.setenv("CRMARENA_GYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("crmarena_gym.org._cache.validate_seed_scale", lambda seed, scale: (seed, 0.05))
    code, out, err = _run("SELECT Name FROM Territory2 WHERE Name = 'Pacific'", "--kind", "b2c")
    assert code == 0 and "Pacific" in out and out.strip().endswith("totalSize: 1"), err
    version = GENERATOR_VERSIONS["b2c"]
    assert [p.name for p in (tmp_path / "cache").glob("*.sqlite")] == [f"org-b2c-v{version}-seed0-scale0.05.sqlite"]
