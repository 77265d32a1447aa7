"""The package on platforms without POSIX modules, and progress that shows when output is piped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

# Run in a fresh interpreter where `import fcntl` fails, as on Windows (subprocess itself copes without it).
WITHOUT_FCNTL = """
import sys, warnings
sys.modules["fcntl"] = None
warnings.simplefilter("ignore")  # filelock says it falls back to a lock file of its own
import gymnasium as gym
import crmarena_gym
from crmarena_gym._files import LockHeldError, exclusive_lock
from crmarena_gym.org import default_org_path
path = default_org_path(seed=2, scale=0.05)
with exclusive_lock(str(path) + ".run.lock"):
    try:
        with exclusive_lock(str(path) + ".run.lock", blocking=False):
            print("not exclusive")
    except LockHeldError:
        print("exclusive")
env = gym.make("CRMArena-BRI-v0", org=sys.argv[1])
env.reset(seed=0)
print("played", "fcntl" in sys.modules and sys.modules["fcntl"] is not None)
"""


def test_the_package_imports_and_locks_without_fcntl(env_org: Path, tmp_path: Path) -> None:
    env = dict(os.environ, CRMARENA_GYM_CACHE=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_FCNTL, str(env_org)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["exclusive", "played", "False"]


def test_a_piped_eval_draws_progress_unless_told_not_to(env_org: Path, tmp_path: Path) -> None:
    base = [sys.executable, "-c", "from crmarena_gym.cli import main; raise SystemExit(main())", "eval"]
    base += ["--env", "CRMArena-BRI-v0", "--org", str(env_org), "--policy", "oracle", "--limit", "3"]
    env = dict(os.environ, CRMARENA_GYM_CACHE=str(tmp_path / "cache"))
    shown = subprocess.run(
        [*base, "--out", str(tmp_path / "a")], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    hidden = subprocess.run(
        [*base, "--out", str(tmp_path / "b"), "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert shown.returncode == hidden.returncode == 0, (shown.stderr, hidden.stderr)
    final = [line for line in re.split(r"[\r\n]", shown.stderr) if line.startswith("eval:")][-1]
    assert final.startswith("eval: 100%") and "3/3" in final and "reward=1.000" in final
    assert "eval:" not in hidden.stderr
