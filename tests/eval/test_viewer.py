"""The viewer's HTTP API, through a real client against a real server on a free port: the documents are
checked against values computed from the run files themselves."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crmarena_gym.eval import RESULTS_FORMAT, ViewerData, pass_k_curve, write_report
from crmarena_gym.tasks import TaskInstance
from tests.eval.viewer_runs import llm_record, make_runs, record_dropout_trajectory, serving, write_run
from tests.processes import running


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, env_org: Path, nine_tasks: list[TaskInstance]) -> dict[str, Path]:
    return make_runs(tmp_path_factory.mktemp("viewer-runs"), env_org, nine_tasks)


def _records(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "results.jsonl").read_text().splitlines()]


def test_runs_and_tables_match_the_results_files(runs: dict[str, Path]) -> None:
    with serving([runs["oracle"], runs["random"]]) as base, httpx.Client(base_url=base) as client:
        page = client.get("/")
        assert page.status_code == 200 and "viewer.js" in page.text
        assert "http" not in page.text  # every asset is the package's own: no CDN
        assert "'self'" in page.headers["content-security-policy"]
        listed = client.get("/api/runs").json()["runs"]
        assert [r["id"] for r in listed] == ["oracle", "random"]
        records = _records(runs["random"])
        rewards = [r["reward"] for r in records]
        random_run = listed[1]
        assert random_run["episodes"] == len(records) == random_run["expected_episodes"] and random_run["complete"]
        assert random_run["accuracy"] == pytest.approx(sum(rewards) / len(rewards))
        low, high = random_run["accuracy_ci"]
        assert 0 <= low <= random_run["accuracy"] <= high <= 1
        outcomes: dict[int, list[bool]] = {}
        for r in records:
            outcomes.setdefault(r["idx"], []).append(r["reward"] >= 1)
        assert random_run["pass_k"] == pytest.approx({str(k): v for k, v in pass_k_curve(outcomes).items()})
        detail = client.get("/api/runs/random").json()
        htu = [r for r in records if r["abbrev"] == "HTU"]
        assert detail["table"]["HTU"]["episodes"] == len(htu)
        assert detail["table"]["HTU"]["accuracy"] == pytest.approx(sum(r["reward"] for r in htu) / len(htu))
        assert listed[0]["accuracy"] == 1.0 and listed[0]["accuracy_ci"] == [1.0, 1.0]


def test_an_episode_as_a_transcript(runs: dict[str, Path]) -> None:
    record = _records(runs["scripted"])[0]
    with serving([runs["scripted"]]) as base, httpx.Client(base_url=base) as client:
        episode = client.get(f"/api/runs/scripted/episodes/{record['idx']}/{record['trial']}").json()
    steps = record["trajectory"][1:]
    # A refused query and a call with a bad argument: the env's codes, shown with their steps.
    assert [s["error"] for s in episode["steps"]] == ["INVALID_FIELD", None, "FUNCTION_ERROR", None]
    assert [s["parsed"]["kind"] for s in episode["steps"]] == ["query", "call", "call", "submit"]
    assert episode["steps"][2]["parsed"]["arguments"] == {"start_date": 5}
    assert episode["question"] == record["trajectory"][0]["observation"]
    assert [s["action"] for s in episode["steps"]] == [s["action"] for s in steps]
    assert [s["observation"] for s in episode["steps"]] == [s["observation"] for s in steps]
    assert [s["error"] for s in episode["steps"]] == [s.get("error") for s in steps]
    for shown, raw in zip(episode["steps"], steps, strict=True):
        parsed = shown["parsed"]
        if raw.get("action_kind") == "query":
            assert parsed["kind"] == "query" and parsed["query"] == raw["query"]
        if raw.get("function"):
            assert parsed["kind"] == "call" and parsed["name"] == raw["function"]
        if raw.get("action_kind") == "submit":
            assert parsed["kind"] == "submit"
    assert episode["submitted"] == record["submitted"] and episode["gold"] == record["gold"]
    assert episode["reward"] == record["reward"] and str(record["gold"]) in episode["reward_explanation"]


def test_the_solved_by_table(runs: dict[str, Path]) -> None:
    data = ViewerData([runs["oracle"], runs["random"]]).api("/api/instances")
    random_records = _records(runs["random"])
    for row in data["instances"]:
        mine = [r for r in random_records if r["idx"] == row["idx"]]
        assert row["runs"]["random"] == {
            "successes": sum(r["reward"] >= 1 for r in mine),
            "trials": 2,
            "trial_list": [0, 1],
        }
        assert row["runs"]["oracle"]["successes"] == 1
        assert row["solved_by"] == 1 + bool(row["runs"]["random"]["successes"])


def test_a_recorded_trajectory_opens_with_its_dropouts_marked(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    path = tmp_path / "dropout.jsonl"
    reported = record_dropout_trajectory(path, env_org, nine_tasks)
    hits = [r for r in reported if (r["dropout"] or {}).get("hit")]
    assert hits, "the seeds give no dropout: pick others"
    with serving([path]) as base, httpx.Client(base_url=base) as client:
        listed = client.get("/api/runs").json()["runs"]
        assert listed[0]["id"] == "dropout" and listed[0]["kind"] == "trajectory" and listed[0]["error"] is None
        episodes = client.get("/api/runs/dropout/episodes").json()["episodes"]
        assert [e["dropout_hits"] for e in episodes] == [
            sum(1 for r in hits if r["episode"] == n) for n in range(len(episodes))
        ]
        for n, brief in enumerate(episodes):
            episode = client.get(f"/api/runs/dropout/episodes/{brief['idx']}/{brief['trial']}").json()
            marked = [any("dropped" in e for e in s["effects"]) for s in episode["steps"]]
            assert marked == [bool((r["dropout"] or {}).get("hit")) for r in reported if r["episode"] == n]
            assert episode["end_reason"] == "submitted"


def test_bad_run_directories_give_clear_messages(tmp_path: Path) -> None:
    good = {"idx": 1, "trial": 0, "abbrev": "BRI", "reward": 1.0, "turns": 1, "trajectory": [{"observation": "q"}]}
    missing = tmp_path / "empty"
    missing.mkdir()
    torn = write_run(tmp_path / "torn", [good], {"run": {"policy": "oracle"}}, tail='{"idx": 2, "tri')
    damaged = write_run(tmp_path / "damaged", ["not json", good], {"run": {"policy": "oracle"}})
    future = write_run(tmp_path / "future", [good], {"results_format": RESULTS_FORMAT + 1})
    with serving([missing, torn, damaged, future, tmp_path / "nowhere"]) as base, httpx.Client(base_url=base) as client:
        runs = {r["id"]: r for r in client.get("/api/runs").json()["runs"]}
        assert "has no results.jsonl" in runs["empty"]["error"]
        assert runs["torn"]["error"] is None and runs["torn"]["episodes"] == 1
        assert any("last line of results.jsonl is incomplete (15 bytes)" in p for p in runs["torn"]["problems"])
        assert runs["damaged"]["episodes"] == 1
        assert any("line 1 of results.jsonl is not JSON" in p for p in runs["damaged"]["problems"])
        assert f"format {RESULTS_FORMAT + 1}" in runs["future"]["error"] and runs["future"]["episodes"] == 0
        assert "does not exist" in runs["nowhere"]["error"]
        for path, status, words in [
            ("/api/runs/nope", 404, "no run 'nope'"),
            ("/api/runs/torn/episodes/9/0", 404, "no episode idx 9"),
            ("/api/runs/torn/episodes/x/0", 400, "two integers"),
            ("/api/what", 404, "no such API path"),
            ("/nothing.png", 404, "no such page"),
        ]:
            answer = client.get(path)
            assert answer.status_code == status and words in answer.json()["error"], path
        assert client.post("/api/runs").status_code == 405
        assert client.get("/api/runs", headers={"Host": "evil.example:80"}).status_code == 403
        with socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1]))) as raw:
            raw.sendall(b"\x00\xffGARBAGE \r\n\r\n")
            raw.recv(1024)
        assert client.get("/api/runs").status_code == 200  # the server survived


def test_live_update_while_a_run_writes(tmp_path: Path) -> None:
    episode = {"idx": 1, "trial": 0, "abbrev": "BRI", "reward": 1.0, "turns": 1, "trajectory": [{"observation": "q"}]}
    run = write_run(tmp_path / "live", [episode], {"episodes": 2, "run": {"policy": "oracle"}}, tail='{"idx": 2, ')
    with serving([run]) as base, httpx.Client(base_url=base) as client:
        state = client.get("/api/state").json()
        first = client.get("/api/runs").json()["runs"][0]
        assert first["episodes"] == 1 and not first["complete"] and first["problems"]
        with open(run / "results.jsonl", "a") as handle:  # the run finishes its line
            rest = '"trial": 0, "abbrev": "BRI", "reward": 0.0, "turns": 2, "trajectory": [{"observation": "q"}]}\n'
            handle.write(rest)
        assert client.get("/api/state").json() != state
        now = client.get("/api/runs").json()["runs"][0]
        assert now["episodes"] == 2 and now["complete"] and now["accuracy"] == 0.5 and not now["problems"]
        # A resumed run replaying its errors rewrites the file (a new file renamed over the old one).
        replaced = run / "results.jsonl.new"
        replaced.write_text(json.dumps({**episode, "idx": 7, "reward": 0.0}) + "\n")
        os.replace(replaced, run / "results.jsonl")
        episodes = client.get("/api/runs/live/episodes").json()["episodes"]
        assert [(e["idx"], e["reward"]) for e in episodes] == [(7, 0.0)]


def test_the_html_report_links_into_episode_pages(runs: dict[str, Path], tmp_path: Path) -> None:
    html = write_report([runs["oracle"], runs["random"]], tmp_path / "report.html")
    data_js = (tmp_path / "report-viewer" / "data.js").read_text()
    documents = json.loads(data_js.removeprefix("window.CRM_VIEWER_DATA = ").rstrip().removesuffix(";"))
    failed = [r for r in _records(runs["random"]) if r["reward"] < 1]
    for r in failed[:30]:
        href = f'href="report-viewer/index.html#/episode/random/{r["idx"]}/{r["trial"]}"'
        assert href in html
        assert documents[f"/api/runs/random/episodes/{r['idx']}/{r['trial']}"]["submitted"] == r["submitted"]
    assert 'href="report-viewer/index.html#/run/oracle"' in html
    for name in ("index.html", "viewer.js", "viewer.css"):
        assert (tmp_path / "report-viewer" / name).is_file()


def test_the_view_command_serves_until_interrupted(runs: dict[str, Path], tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    main = "from crmarena_gym.cli import main; raise SystemExit(main())"
    command = [sys.executable, "-c", main, "view", str(runs["oracle"]), str(tmp_path), "--port", "0"]
    with running(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("viewer on http://127.0.0.1:"), line
        url = line.split()[2]
        assert httpx.get(url + "api/runs").json()["runs"][0]["accuracy"] == 1.0
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=10)
    assert process.returncode == 128 + signal.SIGINT
    assert "has no results.jsonl" in err  # the bad directory is named at start, the viewer still serves
    refused = subprocess.run([*command[:5], "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "loopback address only" in refused.stderr


def test_a_model_step_shows_its_reply_tokens_and_cost(tmp_path: Path) -> None:
    record = llm_record()
    step, usage = record["trajectory"][1], record["trajectory"][1]["policy"]["usage"]
    run = write_run(tmp_path / "llm", [record], {"system_prompts": {"ab" * 32: "You are a CRM analyst."}})
    episode = ViewerData([run]).api("/api/runs/llm/episodes/4/0")
    shown = episode["steps"][0]
    assert shown["reply"] == step["policy"]["reply"] and shown["usage"] == usage
    assert episode["system_prompt"] == "You are a CRM analyst."
    assert episode["reward_explanation"] == (
        "exact match of the submission (read as '005Ws000001xSR9IAM' by the lenient matching) against the gold "
        "'005Ws000001xAAAAAA': different: reward 0"
    )
    brief = ViewerData([run]).api("/api/runs/llm/episodes")["episodes"][0]
    assert (brief["tokens"], brief["cost"]) == (940, 0.0031)


def test_an_episode_ended_by_a_reply_without_a_call_says_so(tmp_path: Path) -> None:
    record = llm_record()
    record.update(end_reason="no_tool_call", reward=0.0, reward_breakdown=None, submitted=None, final_reply="It is OR.")
    run = write_run(tmp_path / "llm", [record], {})
    episode = ViewerData([run]).api("/api/runs/llm/episodes/4/0")
    assert episode["reward_explanation"] == (
        "reward 0: a function-calling reply made no call, which ends the episode without an answer"
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_STEP = st.fixed_dictionaries(
    {},
    optional={k: _JSON for k in ("turn", "action", "observation", "error", "dropout", "policy", "turns_left")},
)
_RECORD = st.fixed_dictionaries(
    {"idx": st.integers(0, 3), "trial": st.integers(0, 1)},
    optional={
        **{k: _JSON for k in ("abbrev", "reward", "turns", "end_reason", "submitted", "gold", "error")},
        "reward_breakdown": _JSON,
        "usage": st.dictionaries(st.sampled_from(["calls", "total_tokens", "cost", "unpriced_calls"]), _JSON),
        "trajectory": st.lists(_STEP, max_size=3) | _JSON,
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(_RECORD, max_size=4))
def test_any_record_is_shown_or_said_wrong_never_a_traceback(tmp_path: Path, records: list[dict]) -> None:
    run = write_run(tmp_path / "fuzz", records, {"episodes": 4})
    data = ViewerData([run])
    documents = [data.api("/api/runs"), data.api("/api/instances"), data.api("/api/runs/fuzz")]
    documents.append(data.api("/api/runs/fuzz/episodes"))
    for brief in documents[-1]["episodes"]:
        documents.append(data.api(f"/api/runs/fuzz/episodes/{brief['idx']}/{brief['trial']}"))
    json.dumps(documents)  # every document is JSON


_TRAJECTORY_LINE = st.fixed_dictionaries(
    {"episode": st.integers(0, 2), "step": st.integers(0, 3)},
    optional={k: _JSON for k in ("action", "observation", "reward", "terminated", "truncated", "seed")}
    | {"info": st.dictionaries(st.sampled_from(["task", "abbrev", "idx", "submitted", "dropout", "error"]), _JSON)},
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_TRAJECTORY_LINE | _JSON, max_size=5))
def test_any_trajectory_file_is_shown_or_said_wrong(tmp_path: Path, lines: list) -> None:
    path = tmp_path / "recorded.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    data = ViewerData([path])
    runs = data.api("/api/runs")["runs"]
    if not runs[0]["error"]:
        for brief in data.api("/api/runs/recorded/episodes")["episodes"]:
            json.dumps(data.api(f"/api/runs/recorded/episodes/{brief['idx']}/{brief['trial']}"))
    json.dumps([runs, data.api("/api/instances")])
