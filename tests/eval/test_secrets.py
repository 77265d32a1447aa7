"""Issue 36 item 3: no key in any file written or any line printed.

Reproducers: a provider's error text was cut to 500 characters before redaction, so up to 53 of a
58-character key reached ``results.jsonl`` and stderr; a key in ``--api-base ...?key=`` was written
verbatim to ``metadata.json``. Here keys of every common provider's shape are planted in provider errors
(straddling the cut, behind an Authorization header, in a URL, in a JSON field), in the arguments
(``--api-base ...?key=``, ``--api-key-env``) and in the environment; then every file the run, its report
and its exported viewer wrote, and everything printed, is searched for any 10 characters of any of them.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from crmarena_gym._secrets import REDACTED, redact_json, redact_secrets, truncate
from crmarena_gym.tasks import TaskInstance
from tests.policies.scripted_server import ScriptedServer

_RNG = random.Random(36)


def _chars(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


# Fake keys of the providers' shapes (random tails: none is anyone's key).
KEYS = {
    "openai": "sk-" + _chars(48),
    "openai_project": "sk-proj-" + _chars(64, string.ascii_letters + string.digits + "_-") + "T3BlbkFJ" + _chars(64),
    "anthropic": "sk-ant-api03-" + _chars(93, string.ascii_letters + string.digits + "_-") + "AA",
    "google": "AIza" + _chars(35, string.ascii_letters + string.digits + "_-"),
    "aws_id": "AKIA" + _chars(16, string.ascii_uppercase + string.digits),
    "aws_secret": _chars(40, string.ascii_letters + string.digits + "/+"),
    "huggingface": "hf_" + _chars(34),
    "bearer": "tok" + _chars(29, string.ascii_lowercase + string.digits),  # no shape: a bearer value only
    "url_key": _chars(39),  # no shape: a ?key= parameter only
    "env_given": _chars(20) + "9",  # --api-key-env's value, any shape
}
# What a tail of each looks like: ten characters of it anywhere would be a leak.
_FRAGMENT = 10


def _fragments(key: str) -> set[str]:
    tail = key.split("-")[-1] if key.startswith("sk-") else key[4:] if key.startswith(("AIza", "AKIA")) else key
    return {tail[i : i + _FRAGMENT] for i in range(0, len(tail) - _FRAGMENT + 1)}


def _leaks(text: str) -> list[str]:
    return [name for name, key in KEYS.items() if any(f in text for f in _fragments(key))]


def _provider_error() -> str:
    """A provider's error text with every key in it, one of them across the 500th character."""
    keys = KEYS
    return (
        "." * 380
        + " ".join(keys[k] for k in ("openai", "openai_project", "anthropic", "google", "huggingface"))
        + f" Header was Authorization: Bearer {keys['bearer']}; x-api-key: {keys['openai']}"
        + f' {{"api_key": "{keys["env_given"]}", "aws_access_key_id": "{keys["aws_id"]}",'
        + f' "aws_secret_access_key": "{keys["aws_secret"]}"}}'
        + f" GET https://gen.example/v1beta/models?alt=json&key={keys['url_key']}"
    )


@pytest.mark.parametrize("status", [401, 400], ids=["fatal", "refused"])
def test_planted_keys_reach_no_file_and_no_output(
    status: int,
    tmp_path: Path,
    env_org: Path,
    nine_tasks: list[TaskInstance],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("litellm")
    from crmarena_gym.cli._main import main
    from crmarena_gym.tasks import save_tasks

    tasks_file = tmp_path / "tasks.jsonl"
    save_tasks(nine_tasks, tasks_file)
    monkeypatch.setenv("OPENAI_API_KEY", KEYS["openai"])
    monkeypatch.setenv("SCRIPTED_CREDENTIALS", KEYS["env_given"])  # a name that does not say it is a key
    out = tmp_path / "run"
    refusal = {"status": status, "message": _provider_error()}
    with ScriptedServer([refusal] * 4) as server:
        argv = ["eval", "--env", "CRMArena-BRI-v0", "--tasks", str(tasks_file), "--org", str(env_org)]
        argv += ["--policy", "litellm:openai/scripted", "--framework", "act"]
        argv += ["--api-base", f"{server.url}?key={KEYS['url_key']}", "--api-key-env", "SCRIPTED_CREDENTIALS"]
        argv += ["--max-retries", "0", "--no-progress", "--out", str(out), "--limit", "2"]
        code = main(argv)
        assert server.requests  # the provider was asked, and answered with the keys
    assert code == 2  # the keys' words make even the 400 a configuration error: the run stops, and says so
    report = tmp_path / "report.html"
    assert main(["report", str(out), "--out", str(report)]) == 0
    printed = capsys.readouterr()

    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "tasks.jsonl"]
    names = {p.name for p in written}
    assert {"results.jsonl", "metadata.json", "report.html"} <= names and "data.js" in names  # the viewer too
    for path in written:
        assert not _leaks(path.read_text(encoding="utf-8", errors="replace")), path
    assert not _leaks(printed.out) and not _leaks(printed.err), printed.err[-2000:]
    results = (out / "results.jsonl").read_text(encoding="utf-8")
    assert REDACTED in results and "llm_error" in results  # the error is recorded, its keys are not
    assert REDACTED in (out / "metadata.json").read_text(encoding="utf-8")  # the command's --api-base


def test_redaction_comes_before_the_cut() -> None:
    key = KEYS["openai"]
    text = "x" * 486 + " " + key  # the 500-character cut falls inside the key, 13 characters in
    assert truncate(redact_secrets(text), 500).endswith(" " + REDACTED)
    assert not _leaks(truncate(redact_secrets(text), 500))
    # The other order: 13 characters of the key, no longer its shape, are written.
    assert _leaks(redact_secrets(text[:500]))


@pytest.mark.parametrize("name", sorted(KEYS))
def test_every_key_shape_is_redacted_in_its_context(name: str) -> None:
    text = _provider_error()
    assert name in _leaks(text)
    redacted = redact_secrets(text, [KEYS["env_given"]])
    assert not _leaks(redacted), redacted


def test_ordinary_text_is_left_alone() -> None:
    texts = [
        "To reset your password: go to Settings, then Security.",
        "SELECT Id, Subject FROM Case WHERE Subject LIKE '%token%' AND Status = 'New'",
        "Order SKU-2024-00017 shipped; tracking 1Z999AA10123456784.",
        "https://example.com/help?topic=returns&page=2",
        "The key to a good return: keep the receipt.",
    ]
    for text in texts:
        assert redact_secrets(text) == text


def test_redacted_json_is_the_same_json() -> None:
    import json

    record = {
        "error": f'said "Authorization: Bearer {KEYS["bearer"]}"\\ and {KEYS["google"]}',
        "url": f"https://u:{KEYS['url_key']}@h.example/v1?key={KEYS['url_key']}&x=1",
        "nested": [{"api_key": KEYS["env_given"]}, 'x"y'],
    }
    text = redact_json(json.dumps(record), [KEYS["env_given"]])
    back = json.loads(text)
    assert not _leaks(text)
    assert back["url"] == "https://u:<redacted>@h.example/v1?key=<redacted>&x=1"
    assert back["nested"] == [{"api_key": REDACTED}, 'x"y']
