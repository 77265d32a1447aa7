"""What a run records for a researcher: the gold beside the submission, the whole env stack, the model
settings in effect (the server actually called among them), and each step's wrapper effects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.envs.registration import WrapperSpec

from crmarena_gym.envs._registration import ENTRY_POINT
from crmarena_gym.eval import evaluate, read_results
from crmarena_gym.tasks import TaskInstance
from tests.policies.scripted_server import ScriptedServer

DROPOUT_ID = "CRMArena-TestDropoutBRI-v0"


@pytest.fixture(scope="module")
def dropout_env_id() -> Iterator[str]:
    """A registered id whose spec adds ToolResultDropout (every result lost to a transient error)."""
    gym.register(
        id=DROPOUT_ID,
        entry_point=ENTRY_POINT,
        kwargs={"task": "BRI"},
        max_episode_steps=7,
        additional_wrappers=(
            WrapperSpec("ToolResultDropout", "crmarena_gym.wrappers:ToolResultDropout", {"p": 1.0, "mode": "error"}),
        ),
    )
    yield DROPOUT_ID
    del gym.registry[DROPOUT_ID]


def test_each_record_carries_the_gold_and_whether_there_is_one(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    out = tmp_path / "run"
    evaluate("random", tasks=nine_tasks, org=env_org, out=out, progress=False)
    by_idx = {t.idx: t for t in nine_tasks}
    records = read_results(out / "results.jsonl")
    assert len(records) == len(nine_tasks)
    for record in records:
        assert record["gold"] == by_idx[record["idx"]].answer
        assert record["answerable"] is (by_idx[record["idx"]].answer is not None)
    assert {r["answerable"] for r in records} == {True, False}  # the set has unanswerable instances


def test_the_env_stack_and_the_wrapper_effects_of_each_step(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance], dropout_env_id: str
) -> None:
    out = tmp_path / "run"
    evaluate(
        "oracle",
        env_id=dropout_env_id,
        tasks=nine_tasks,
        org=env_org,
        env_kwargs={"match": "lenient"},
        out=out,
        progress=False,
    )
    metadata = json.loads((out / "metadata.json").read_text())
    stack = metadata["env_stack"]
    classes = [layer["class"].rpartition(":")[2] for layer in stack]
    assert classes == ["ToolResultDropout", "TimeLimit", "OrderEnforcing", "PassiveEnvChecker", "CRMArenaEnv"]
    assert stack[0]["kwargs"] == {"p": 1.0, "mode": "error"}
    assert stack[1]["kwargs"] == {"max_episode_steps": 7}
    base = stack[-1]["kwargs"]
    assert base["task"] == "BRI" and base["match"] == "lenient" and base["toolset"] == "functions"
    assert base["privileged"] is True and "org" not in base and "tasks" not in base

    records = read_results(out / "results.jsonl")
    assert len(records) == sum(t.abbrev == "BRI" for t in nine_tasks)
    for record in records:
        # Every result is lost, so the oracle's first call fails and the oracle gives up on it.
        assert record["end_reason"] == "policy_error"
        first = record["trajectory"][1]
        assert first["dropout"] == {"hit": True, "mode": "error"}
        assert "result" not in first and first["function"]


def test_the_model_settings_in_effect_and_the_server_reached_through_the_environment(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("litellm")
    out = tmp_path / "run"
    with ScriptedServer([{"content": "submit None"}] * 2) as server:
        monkeypatch.setenv("OPENAI_API_BASE", server.url)
        run = evaluate(
            "litellm:openai/gpt-4o",
            env_id="CRMArena-BRI-v0",
            tasks=nine_tasks,
            org=env_org,
            policy_options={"framework": "act", "api_key": "sk-secret", "temperature": 0.3},
            limit=2,
            out=out,
            progress=False,
        )
    settings = json.loads((out / "metadata.json").read_text())["policy_settings"]
    assert settings["api_base"] == server.url
    assert settings["temperature"] == 0.3 and settings["max_tokens"] == 2000  # given, and the default
    assert settings["model"] == "openai/gpt-4o" and settings["framework"] == "act"
    assert settings["priced_by_table"] is False
    # A local server serving a model under OpenAI's name is not charged at OpenAI's prices.
    assert all(r["usage"]["cost"] is None for r in run.results)
    assert "sk-secret" not in (out / "metadata.json").read_text()


def test_credentials_in_the_server_url_are_not_recorded(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    pytest.importorskip("litellm")
    run = evaluate(
        "litellm:openai/scripted",
        env_id="CRMArena-BRI-v0",
        tasks=nine_tasks,
        org=env_org,
        policy_options={
            "framework": "act",
            "api_key": "k",
            "api_base": "http://user:hunter2@127.0.0.1:9/v1",
            "max_retries": 0,
            "timeout": 5,
        },
        limit=1,
        progress=False,
    )
    assert run.metadata["policy_settings"]["api_base"] == "http://127.0.0.1:9/v1"
    assert "hunter2" not in json.dumps(run.metadata)


def test_a_lone_surrogate_in_a_reply_is_recorded_and_the_run_goes_on(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    pytest.importorskip("litellm")
    out = tmp_path / "run"
    kwargs: dict = {
        "env_id": "CRMArena-BRI-v0",
        "tasks": nine_tasks,
        "org": env_org,
        "out": out,
        "progress": False,
    }
    # Half an emoji, as a model may stream it: JSON "\ud83d" decodes to a str UTF-8 cannot encode.
    with ScriptedServer([{"content": "submit \ud83d"}, {"content": "submit None"}] * 2) as server:
        options = {"framework": "act", "api_base": server.url, "api_key": "k"}
        run = evaluate("litellm:openai/scripted", policy_options=options, limit=2, **kwargs)
        assert run.new_episodes == 2
        records = read_results(out / "results.jsonl")
        assert [r["submitted"] for r in records] == ["\ud83d", "None"]
        assert records[0]["trajectory"][1]["action"] == "submit \ud83d"
        # The file stays readable, so the run resumes past it.
        more = evaluate("litellm:openai/scripted", policy_options=options, limit=3, resume=True, **kwargs)
    assert more.new_episodes == 1 and len(more.results) == 3


@pytest.mark.parametrize("given", [True, False], ids=["api_key", "environment"])
def test_a_key_the_provider_repeats_is_never_recorded_or_printed(
    given: bool,
    tmp_path: Path,
    env_org: Path,
    nine_tasks: list[TaskInstance],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("litellm")
    from crmarena_gym.cli._main import main
    from crmarena_gym.tasks import save_tasks

    key = "sk-live-0123456789abcdef"
    tasks_file = tmp_path / "tasks.jsonl"
    save_tasks(nine_tasks, tasks_file)
    refusal = {"status": 401, "message": f"Incorrect API key provided: {key}. Header was Authorization: Bearer {key}"}
    out = tmp_path / "run"
    with ScriptedServer([refusal] * 3) as server:
        argv = ["eval", "--env", "CRMArena-BRI-v0", "--tasks", str(tasks_file), "--org", str(env_org)]
        argv += ["--policy", "litellm:openai/scripted", "--framework", "act", "--api-base", server.url]
        argv += ["--max-retries", "0", "--no-progress", "--out", str(out)]
        if given:
            monkeypatch.setenv("SCRIPTED_KEY", key)
            argv += ["--api-key-env", "SCRIPTED_KEY"]
        else:
            monkeypatch.setenv("OPENAI_API_KEY", key)
        code = main(argv)
    printed = capsys.readouterr()
    assert code == 2  # the refused key stops the run
    (record,) = read_results(out / "results.jsonl")
    assert record["end_reason"] == "llm_error" and "Incorrect API key provided: <redacted>" in record["error"]
    for text in (printed.out, printed.err, (out / "results.jsonl").read_text(), (out / "metadata.json").read_text()):
        assert key not in text
    assert "<redacted>" in printed.err


def test_lines_reach_the_file_at_once_and_the_disk_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from crmarena_gym.eval import ResultsWriter

    syncs: list[int] = []
    monkeypatch.setattr("crmarena_gym.eval._results.os.fsync", lambda fd: syncs.append(fd))
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path, sync_interval=3600) as writer:
        for idx in range(5):
            writer.write({"idx": idx, "trial": 0})
            # Readable by another process at once (what a killed run keeps), before any sync.
            assert [r["idx"] for r in read_results(path)] == list(range(idx + 1))
        assert syncs == []
    assert len(syncs) == 1  # on close
    with ResultsWriter(path, sync_interval=0) as writer:
        writer.write({"idx": 5, "trial": 0})
        assert len(syncs) == 2
