"""Every shell command of the README that needs no key, no network and no long-running server runs as written.

The README's ``bash`` blocks are read in order and each command is run in one scratch directory (so that
``runs/oracle`` made by one command is there for the next), with the installed ``crmarena-gym`` and this
interpreter for ``python``. Commands that install, run the test suite, start a server, train for minutes or
call a paid model are left out, each for a stated reason; the rest must exit 0.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# Why a command is not run here, by a pattern it matches.
_LEFT_OUT = (
    (r"^(python -m venv|\. \.venv|pip install)", "installs (the README's install is what CI runs)"),
    (r"pytest", "runs the test suite"),
    (r"litellm:|gpt4o", "needs a provider's key (or the run made with one)"),
    (r"^crmarena-gym (view|serve-env|serve-org)\b", "starts a server (tested in tests/eval and tests/org)"),
    (
        r"train_rllib_ppo|train_sb3_maskable|train_trl_grpo|bench_rl",
        "trains for minutes (tested in tests/rl and tests/integrations)",
    ),
)


def readme_commands(text: str) -> list[tuple[str, str | None]]:
    """The commands of the README's ``bash`` blocks in order, each with the reason it is left out (or None).

    A line joined by ``&&`` is split into its commands; comments are dropped.
    """
    commands: list[tuple[str, str | None]] = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.splitlines():
            for piece in line.split("&&"):
                words = shlex.split(piece, comments=True)
                if not words:
                    break  # the rest of the line is a comment
                part = shlex.join(words)
                reason = next((why for pattern, why in _LEFT_OUT if re.search(pattern, part)), None)
                commands.append((part, reason))
    return commands


def test_the_readme_is_read_as_commands() -> None:
    commands = readme_commands((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    runnable = [c for c, why in commands if why is None]
    assert "crmarena-gym eval --env CRMArena-v0 --policy oracle --out runs/oracle" in runnable
    assert any(c.startswith("crmarena-gym tasks summary") for c in runnable)
    assert all(why for c, why in commands if c.startswith("pip install"))


@pytest.mark.slow
def test_every_readme_command_that_needs_nothing_outside_runs(tmp_path: Path) -> None:
    commands = readme_commands((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    for name in ("examples", "benchmarks", "docs"):
        (tmp_path / name).symlink_to(REPO_ROOT / name)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(REPO_ROOT)}
    env.setdefault("CRMARENA_GYM_CACHE", str(tmp_path / "cache"))
    env.pop("OPENAI_API_KEY", None)
    ran = 0
    for command, reason in commands:
        if reason is not None:
            continue
        if command.startswith("python "):
            command = shlex.quote(sys.executable) + command[len("python") :]
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{command!r} exited {done.returncode}:\n{done.stderr[-2000:]}"
        ran += 1
    assert ran >= 12
