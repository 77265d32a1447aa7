"""The trainer extras installed together: OpenEnv, TRL and verifiers beside the project, requirements met.

``pip check`` checks each installed package's requirements but not those its dependents pull through extras
(``fastmcp`` requires ``fastmcp-slim[client,server]``, whose ``mcp<2`` pip check never reads), so the check
here is pip check and that stricter one. Where OpenEnv, TRL and verifiers are not all installed it skips;
the resolution of the three extras together is checked against the package index (slow; skipped offline).
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
TRAINERS = {"openenv": "openenv", "trl": "trl", "verifiers": "verifiers"}


def _installed() -> dict[str, md.Distribution]:
    """The distributions imports see: the first of a name on ``sys.path`` (a later one is shadowed)."""
    found: dict[str, md.Distribution] = {}
    for dist in md.distributions():
        if dist.metadata["Name"]:
            found.setdefault(canonicalize_name(dist.metadata["Name"]), dist)
    return found


def unmet_requirements(installed: dict[str, md.Distribution]) -> list[str]:
    """Every requirement of an installed package that the installed versions do not meet, the extras its
    dependents ask for included (one message each: who requires what, and what is installed)."""
    extras: dict[str, set[str]] = {}
    for dist in installed.values():
        for line in dist.requires or ():
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                extras.setdefault(canonicalize_name(req.name), set()).update(req.extras)
    unmet = []
    for name, dist in sorted(installed.items()):
        for line in dist.requires or ():
            req = Requirement(line)
            wanted = {""} | extras.get(name, set())
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in wanted):
                continue
            have = installed.get(canonicalize_name(req.name))
            if have is None:
                unmet.append(f"{name} requires {req}, which is not installed")
            elif req.specifier and not req.specifier.contains(Version(have.version), prereleases=True):
                unmet.append(f"{name} requires {req}, but {have.version} is installed")
    return unmet


def test_the_stricter_check_finds_what_pip_check_misses() -> None:
    """verifiers 0.4.0 beside openenv: fastmcp 3 asks for fastmcp-slim's client extra, which needs mcp<2."""

    class Dist:
        def __init__(self, name: str, version: str, requires: list[str]) -> None:
            self.metadata, self.version, self.requires = {"Name": name}, version, requires

    installed = {
        "verifiers": Dist("verifiers", "0.4.0", ["mcp==2.0.0", "openenv>=0.4.1; extra == 'openenv'"]),
        "openenv": Dist("openenv", "0.10.0", ["fastmcp<4.0.0,>=3.0.0"]),
        "fastmcp": Dist("fastmcp", "3.4.11", ["fastmcp-slim[client,server]==3.4.11"]),
        "fastmcp-slim": Dist("fastmcp-slim", "3.4.11", ["mcp<2.0,>=1.24.0; extra == 'client'"]),
        "mcp": Dist("mcp", "2.0.0", []),
    }
    assert unmet_requirements(installed) == [
        'fastmcp-slim requires mcp<2.0,>=1.24.0; extra == "client", but 2.0.0 is installed'
    ]  # type: ignore[arg-type]
    installed["mcp"] = Dist("mcp", "1.30.0", [])
    assert unmet_requirements(installed) == ["verifiers requires mcp==2.0.0, but 1.30.0 is installed"]  # type: ignore[arg-type]


def test_pip_check_is_clean_beside_the_trainers() -> None:
    missing = [name for name, module in TRAINERS.items() if importlib.util.find_spec(module) is None]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed here: pip install torch==2.13.0 && pip install -e "
            "'.[openenv,trl,verifiers]' in a fresh environment"
        )
    check = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    assert unmet_requirements(_installed()) == []


@pytest.mark.slow
def test_the_trainer_extras_resolve_together(tmp_path: Path) -> None:
    """pip resolves the openenv, trl and verifiers extras together (torch pinned as the README installs it)."""
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    command += ["--report", str(report), "torch==2.13.0", f"{ROOT}[openenv,trl,verifiers]"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if result.returncode != 0 and re.search(
        r"(?i)connection|network|resolve host|no matching distribution", result.stderr
    ):
        pytest.skip(f"the package index cannot be reached: {result.stderr.strip().splitlines()[-1]}")
    assert result.returncode == 0, result.stderr
    chosen = {
        canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    assert {"openenv", "trl", "verifiers", "fastmcp", "mcp"} <= set(chosen)
    # what makes the set consistent: the verifiers that takes mcp 1 (0.4.0 pins mcp 2.0.0, fastmcp 3 needs mcp<2)
    assert Version(chosen["verifiers"]) < Version("0.4") and Version(chosen["mcp"]) < Version("2")
    assert Version(chosen["fastmcp"]) < Version("4") and "openenv-core" not in chosen
