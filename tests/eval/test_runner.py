"""The evaluation runner: oracle and random baselines, results files, resuming, concurrency, LLM errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crmarena_gym._files import exclusive_lock
from crmarena_gym.datagen import read_manifest
from crmarena_gym.eval import LOCK_FILE, LockHeldError, RunStoppedError, evaluate, read_results
from crmarena_gym.policies import OraclePolicy, PolicyError
from crmarena_gym.tasks import TaskInstance
from tests.policies.scripted_server import ScriptedServer


def _keys(results: list[dict]) -> list[tuple[int, int]]:
    return sorted((r["idx"], r["trial"]) for r in results)


def test_the_oracle_scores_every_instance_of_every_task(env_org: Path, nine_tasks: list[TaskInstance]) -> None:
    run = evaluate("oracle", tasks=nine_tasks, org=env_org, progress=False)
    assert _keys(run.results) == sorted((i.idx, 0) for i in nine_tasks)
    assert all(r["reward"] == 1.0 and r["end_reason"] == "submitted" for r in run.results)
    assert {r["abbrev"] for r in run.results} == {"KQA", "MTA", "TII", "NCR", "NED", "HTU", "TCU", "PVI", "BRI"}
    assert run.summary["all"]["accuracy"] == 1.0 and run.summary["all"]["pass_k"] == {"1": 1.0}
    kqa = [r for r in run.results if r["abbrev"] == "KQA"]
    assert all(r["f1"] == 1.0 for r in kqa) and all(r["f1"] is None for r in run.results if r["abbrev"] != "KQA")


def test_the_random_policy_scores_only_where_the_answer_is_none(env_org: Path, nine_tasks: list[TaskInstance]) -> None:
    gold = {i.idx: i.answer for i in nine_tasks}
    run = evaluate("random", tasks=nine_tasks, org=env_org, trials=2, progress=False)
    for r in run.results:
        if gold[r["idx"]] is not None:
            assert r["reward"] == 0.0, r
        else:  # its possible submissions are "None" and "unknown"
            assert r["reward"] == float(r["submitted"] == "None")
    null_share = sum(a is None for a in gold.values()) / len(gold)
    assert run.summary["all"]["accuracy"] <= null_share
    answerable = [r for r in run.results if gold[r["idx"]] is not None]
    assert answerable and sum(r["reward"] for r in answerable) == 0.0


def test_concurrent_runs_match_the_serial_run(env_org: Path, nine_tasks: list[TaskInstance]) -> None:
    def view(results: list[dict]) -> list[tuple]:
        return [(r["idx"], r["trial"], r["reward"], [s.get("action") for s in r["trajectory"]]) for r in results]

    serial = evaluate("random", tasks=nine_tasks, org=env_org, trials=2, limit=9, seed=3, progress=False)
    threads = evaluate(
        "random", tasks=nine_tasks, org=env_org, trials=2, limit=9, seed=3, concurrency=3, progress=False
    )
    assert view(serial.results) == view(threads.results)
    assert len(serial.results) == 18


def test_results_and_metadata_files(tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]) -> None:
    out = tmp_path / "run"
    run = evaluate(
        "oracle",
        tasks=nine_tasks,
        org=env_org,
        trials=2,
        limit=3,
        out=out,
        seed=7,
        progress=False,
        command=["crmarena-gym", "eval", "--policy", "oracle"],
    )
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 6
    first = json.loads(lines[0])
    for key in ("task", "abbrev", "idx", "trial", "reward", "f1", "turns", "end_reason", "usage", "trajectory", "seed"):
        assert key in first
    assert first["turns"] == len(first["trajectory"]) - 1  # the first observation, then one entry per step
    assert first["trajectory"][-1]["action"].startswith('{"name": "submit"')
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["org"]["manifest"] == read_manifest(env_org).model_dump(mode="json")
    assert metadata["env_spec"]["max_episode_steps"] == 20 and metadata["env_spec"]["id"] == "CRMArena-v0"
    assert metadata["versions"]["crmarena-gym"] and metadata["versions"]["gymnasium"]
    assert metadata["run"]["seed"] == 7 and metadata["run"]["policy"] == "oracle"
    assert metadata["command"] == ["crmarena-gym", "eval", "--policy", "oracle"]
    assert run.metadata == metadata


def test_resume_after_a_torn_line_plays_each_episode_once(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    out = tmp_path / "run"
    evaluate("random", tasks=nine_tasks, org=env_org, trials=2, limit=4, out=out, progress=False)
    path = out / "results.jsonl"
    full = path.read_bytes().splitlines(keepends=True)
    expected = {(json.loads(line)["idx"], json.loads(line)["trial"]): json.loads(line) for line in full}
    path.write_bytes(b"".join(full[:5]) + full[5][: len(full[5]) // 2])  # killed while writing line 6
    run = evaluate("random", tasks=nine_tasks, org=env_org, trials=2, limit=4, out=out, resume=True, progress=False)
    assert run.new_episodes == 3
    again = read_results(path)
    assert len(path.read_bytes().splitlines()) == 8 and _keys(again) == sorted(expected)
    assert {(r["idx"], r["trial"]): r for r in again} == expected  # same seeds, same episodes
    # a finished run resumed plays nothing
    assert (
        evaluate(
            "random", tasks=nine_tasks, org=env_org, trials=2, limit=4, out=out, resume=True, progress=False
        ).new_episodes
        == 0
    )
    # more trials extend it
    extended = evaluate(
        "random", tasks=nine_tasks, org=env_org, trials=3, limit=4, out=out, resume=True, progress=False
    )
    assert extended.new_episodes == 4 and len(read_results(path)) == 12


def test_an_existing_run_needs_resume_and_the_same_run(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    out = tmp_path / "run"
    evaluate("oracle", tasks=nine_tasks, org=env_org, limit=1, out=out, progress=False)
    with pytest.raises(ValueError, match="already holds results"):
        evaluate("oracle", tasks=nine_tasks, org=env_org, limit=1, out=out, progress=False)
    with pytest.raises(ValueError, match="policy: was 'oracle', now 'random'"):
        evaluate("random", tasks=nine_tasks, org=env_org, limit=1, out=out, resume=True, progress=False)


def test_llm_failures_past_the_budget_are_recorded_not_lost(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    pytest.importorskip("litellm")
    with ScriptedServer() as server:  # an empty script answers 500 to everything
        run = evaluate(
            "litellm:openai/scripted",
            policy_options={
                "framework": "react",
                "api_base": server.url,
                "api_key": "secret-key",
                "max_retries": 1,
                "backoff": 0.0,
            },
            tasks=nine_tasks,
            org=env_org,
            limit=2,
            out=tmp_path / "run",
            progress=False,
        )
        assert len(server.requests) == 4  # two episodes, each one call tried twice
    assert [r["end_reason"] for r in run.results] == ["llm_error", "llm_error"]
    assert all(r["reward"] == 0.0 and "failed 2 times in a row" in r["error"] for r in run.results)
    assert run.summary["all"]["errors"] == 2
    assert len(read_results(tmp_path / "run" / "results.jsonl")) == 2
    assert "secret-key" not in (tmp_path / "run" / "metadata.json").read_text()


def test_bad_arguments_are_refused_with_the_value(env_org: Path, nine_tasks: list[TaskInstance]) -> None:
    with pytest.raises(ValueError, match="'CRMArena-XYZ-v0'"):
        evaluate("oracle", env_id="CRMArena-XYZ-v0", tasks=nine_tasks, org=env_org)
    with pytest.raises(ValueError, match="trials must be at least 1, got 0"):
        evaluate("oracle", tasks=nine_tasks, org=env_org, trials=0)
    with pytest.raises(ValueError, match="unknown policy spec 'gpt'"):
        evaluate("gpt", tasks=nine_tasks, org=env_org)
    with pytest.raises(FileNotFoundError, match=r"nowhere\.sqlite"):
        evaluate("oracle", tasks=nine_tasks, org="/nowhere.sqlite")


def test_a_task_env_runs_only_its_task(env_org: Path, nine_tasks: list[TaskInstance]) -> None:
    run = evaluate("oracle", env_id="CRMArena-PVI-v0", tasks=nine_tasks, org=env_org, progress=False)
    assert _keys(run.results) == sorted((i.idx, 0) for i in nine_tasks if i.abbrev == "PVI")
    assert list(run.summary) == ["PVI", "all"]


def test_ray_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, env_org: Path, nine_tasks) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(ImportError, match=r"--ray needs Ray: pip install 'crmarena-gym\[rl\]'"):
        evaluate("oracle", tasks=nine_tasks, org=env_org, limit=1, ray=True, progress=False)


class _FlakyOracle(OraclePolicy):
    """The oracle, giving up on odd instances while ``failing`` is true (as a policy that crashed would)."""

    failing = True

    def act(self, observation: str) -> str:
        if _FlakyOracle.failing and self.info["idx"] % 2:
            raise PolicyError(f"flaky on instance {self.info['idx']}")
        return super().act(observation)


def _flaky() -> OraclePolicy:
    return _FlakyOracle()


def test_retry_errors_replays_only_the_error_episodes_and_keeps_each_once(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    path = out / "results.jsonl"
    kwargs = {"tasks": nine_tasks, "org": env_org, "trials": 2, "limit": 6, "out": out, "progress": False}
    first = evaluate(_flaky, **kwargs)  # type: ignore[arg-type]
    lines = path.read_bytes().splitlines(keepends=True)
    odd = {(i.idx, t) for i in nine_tasks[:6] for t in range(2) if i.idx % 2}
    assert odd and len(odd) < 12  # some episodes fail, some do not
    assert {(r["idx"], r["trial"]) for r in first.results if r["end_reason"] == "policy_error"} == odd
    # --resume alone keeps the errors: they count as played
    monkeypatch.setattr(_FlakyOracle, "failing", False)
    assert evaluate(_flaky, resume=True, **kwargs).new_episodes == 0  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"retry_errors .* needs resume=True"):
        evaluate(_flaky, retry_errors=True, **kwargs)  # type: ignore[arg-type]
    again = evaluate(_flaky, resume=True, retry_errors=True, **kwargs)  # type: ignore[arg-type]
    assert again.new_episodes == len(odd)
    assert {(r["idx"], r["trial"]) for r in again.results} == {(i.idx, t) for i in nine_tasks[:6] for t in range(2)}
    assert all(r["reward"] == 1.0 and r["end_reason"] == "submitted" for r in again.results)
    after = path.read_bytes().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["end_reason"] == "submitted"]
    assert after[: len(kept)] == kept  # the good lines are untouched, the error lines gone
    keys = [(json.loads(line)["idx"], json.loads(line)["trial"]) for line in after]
    assert len(keys) == len(set(keys)) == 12
    assert again.metadata["retried_errors"] == len(odd)


def test_a_missing_key_stops_the_run_after_recording_the_first_episode(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    pytest.importorskip("litellm")
    out = tmp_path / "run"
    with ScriptedServer([{"status": 401, "message": "Incorrect API key provided"}]) as server:
        kwargs = {
            "policy_options": {"framework": "act", "api_base": server.url, "api_key": "wrong", "backoff": 0.0},
            "tasks": nine_tasks,
            "org": env_org,
            "limit": 3,
            "out": out,
            "progress": False,
        }
        with pytest.raises(RunStoppedError, match=r"--resume --retry-errors") as stopped:
            evaluate("litellm:openai/scripted", **kwargs)  # type: ignore[arg-type]
        assert len(server.requests) == 1  # not retried, and no other episode played
        (line,) = read_results(out / "results.jsonl")
        assert line["end_reason"] == "llm_error" and line["fatal"] is True and line["idx"] == nine_tasks[0].idx
        assert stopped.value.record == line and "check the API key given" in str(stopped.value)
        # fixed: the failed episode is replayed and the others played, each once
        server.add(*[{"content": "submit None"}] * 3)
        run = evaluate("litellm:openai/scripted", resume=True, retry_errors=True, **kwargs)  # type: ignore[arg-type]
    assert run.new_episodes == 3 and [r["end_reason"] for r in run.results] == ["submitted"] * 3
    assert len((out / "results.jsonl").read_bytes().splitlines()) == 3


def test_a_run_directory_in_use_is_refused_at_once(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    with exclusive_lock(out / LOCK_FILE):  # as another run writing there would hold it
        with pytest.raises(LockHeldError, match="is in use by another run"):
            evaluate("oracle", tasks=nine_tasks, org=env_org, limit=1, out=out, progress=False)
        assert not (out / "results.jsonl").exists() and not (out / "metadata.json").exists()
    run = evaluate("oracle", tasks=nine_tasks, org=env_org, limit=1, out=out, progress=False)
    assert run.new_episodes == 1
    with exclusive_lock(out / LOCK_FILE, blocking=False):  # released when the run ended
        pass


def test_out_must_be_a_directory(tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]) -> None:
    existing = tmp_path / "file.txt"
    existing.write_text("keep me")
    with pytest.raises(ValueError, match=r"'.*file\.txt' is an existing file"):
        evaluate("oracle", tasks=nine_tasks, org=env_org, limit=1, out=existing, progress=False)
    assert existing.read_text() == "keep me"
    with pytest.raises(NotADirectoryError):
        evaluate("oracle", tasks=nine_tasks, org=env_org, limit=1, out=existing / "run", progress=False)


def test_the_system_prompt_is_kept_once_per_run_and_its_hash_with_each_episode(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    pytest.importorskip("litellm")
    import hashlib

    out = tmp_path / "run"
    kwargs = {
        "policy_options": {"framework": "act", "api_base": "", "api_key": "k"},
        "env_id": "CRMArena-BRI-v0",
        "tasks": nine_tasks,
        "org": env_org,
        "out": out,
        "progress": False,
    }
    with ScriptedServer([{"content": "submit None"}] * 3) as server:
        kwargs["policy_options"]["api_base"] = server.url  # type: ignore[index]
        evaluate("litellm:openai/scripted", limit=2, **kwargs)  # type: ignore[arg-type]
        sent = {r["messages"][0]["content"] for r in server.requests}
        evaluate("litellm:openai/scripted", limit=3, resume=True, **kwargs)  # type: ignore[arg-type]
    metadata = json.loads((out / "metadata.json").read_text())
    (prompt,) = sent  # one task, one persona: one prompt
    digest = hashlib.sha256(prompt.encode()).hexdigest()
    assert metadata["system_prompts"] == {digest: prompt}
    records = read_results(out / "results.jsonl")
    assert len(records) == 3 and all(r["system_prompt_sha256"] == digest and "system_prompt" not in r for r in records)
    oracle = evaluate("oracle", tasks=nine_tasks, org=env_org, limit=1, progress=False)
    assert "system_prompts" not in oracle.metadata and "system_prompt_sha256" not in oracle.results[0]
