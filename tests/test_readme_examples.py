"""The README's conversation examples show what their calls return.

Each example's comments quote the simulated user's words for a fixed seed; these tests play the same calls on
the embedded org and read each call's comment in the README (on its line, or the comment lines right after it).
The TRL example's comments once quoted wordings the scripted user no longer draws.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.caches import private_default_cache

REPO_ROOT = Path(__file__).resolve().parents[1]
README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


default_cache = pytest.fixture(scope="module", autouse=True, name="default_cache")(private_default_cache)


def _python_block(holding: str) -> list[str]:
    """The lines of the README's one ``python`` block that holds ``holding``."""
    blocks = [b for b in re.findall(r"^```python\n(.*?)^```", README, flags=re.S | re.M) if holding in b]
    assert len(blocks) == 1, f"{len(blocks)} python blocks of the README hold {holding!r}"
    return blocks[0].splitlines()


def _comment(block: list[str], code: str) -> str:
    """The comment of the line holding ``code``: after its ``#``, else the comment lines that follow it."""
    (i,) = [n for n, line in enumerate(block) if code in line]
    if "  # " in block[i]:
        return block[i].split("  # ", 1)[1]
    following = []
    for line in block[i + 1 :]:
        if not line.startswith("#"):
            break
        following.append(line.lstrip("# "))
    return " ".join(following)


def test_the_chat_session_example_quotes_the_user() -> None:
    from crmarena_gym.chat import ChatSession, make_chat_env

    block = _python_block("ChatSession(make_chat_env(")
    session = ChatSession(make_chat_env(task="HTU", split="test", user="scripted"), "fc")
    start = session.reset(task_id=650, seed=0)
    (at,) = [n for n, line in enumerate(block) if "session.reset(task_id=650, seed=0)" in line]
    assert block[at + 1] == f"# {start.observation.splitlines()[0]}"  # the opening, under the call

    period = session.step_tool_call("respond", {"message": "For which period?"})
    roles = [m["role"] for m in session.messages[-3:]]
    comment = _comment(block, '"For which period?"')
    assert comment == f'messages end {roles!r}: "{period.observation}"'

    threshold = session.step_tool_call("respond", {"message": "Is there a threshold on the number of cases?"})
    assert _comment(block, '"Is there a threshold') == f'"{threshold.observation}"'

    step = session.step_tool_call("respond", {"message": "None"})
    comment = _comment(block, '{"message": "None"}')
    assert f"step.done {step.done}, step.reward {step.reward}, last message {session.messages[-1]!r}" in comment
    assert f'session.record["conversation"]["revealed"] == {session.record["conversation"]["revealed"]!r}' in comment


def test_the_trl_conversation_example_quotes_the_user() -> None:
    from crmarena_gym.integrations.trl import trl_dataset_rows, trl_environment

    block = _python_block("trl_environment(user=")
    cls = trl_environment(user="scripted")
    row = next(r for r in trl_dataset_rows() if r["task"] == "TII")
    env = cls()
    opening = env.reset(**{**row, "seed": 0})
    shown = _comment(block, "env.reset(")
    assert shown.endswith(" ...") and opening.startswith(shown.removesuffix(" ..."))
    for message in ("Which product is it?", "For which period?"):
        reply = env.respond(message=message)
        assert _comment(block, f'env.respond(message="{message}")') == repr(reply)
    reply = env.respond(message="None")
    assert _comment(block, 'env.respond(message="None")').startswith(f"{reply!r}; get_reward() {env.get_reward()}")


@pytest.mark.parametrize("script", sorted(p.name for p in (REPO_ROOT / "examples").glob("*.py")))
def test_every_example_answers_help_without_running(script: str) -> None:
    # play_oracle.py took --help (and any other argument) as a go: it played its nine episodes.
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    for argv, code in ((["--help"], 0), (["--no-such-flag"], 2)):
        done = subprocess.run(
            [sys.executable, str(REPO_ROOT / "examples" / script), *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == code, done.stderr[-2000:]
        shown = done.stdout if code == 0 else done.stderr
        assert shown.startswith(f"usage: {script}"), shown[-2000:]
        assert "===" not in done.stdout  # nothing was played
