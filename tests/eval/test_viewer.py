"""The viewer's HTTP API, through a real client against a real server on a free port: the documents are
checked against values computed from the run files themselves."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crmarena_gym.eval import RESULTS_FORMAT, ViewerData, ViewerError, export_viewer, pass_k_curve, write_report
from crmarena_gym.policies import Policy
from crmarena_gym.tasks import TaskInstance
from crmarena_gym.wrappers import RecordTrajectory, ToolResultDropout, TurnLimit
from tests.eval.viewer_runs import (
    llm_record,
    make_runs,
    record_dropout_trajectory,
    serving,
    synthetic_experiment,
    synthetic_run,
    write_run,
)
from tests.processes import running


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, env_org: Path, nine_tasks: list[TaskInstance]) -> dict[str, Path]:
    return make_runs(tmp_path_factory.mktemp("viewer-runs"), env_org, nine_tasks)


def _records(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "results.jsonl").read_text().splitlines()]


def _script_value(path: Path, prefix: str) -> Any:
    """The JSON a static copy's script file hands to the page (``PREFIX VALUE);`` or ``PREFIX VALUE;``)."""
    text = path.read_text().rstrip().removesuffix(";").removesuffix(")")
    assert text.startswith(prefix), text[:80]
    return json.loads(text.removeprefix(prefix))


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
    data = ViewerData([runs["oracle"], runs["random"]])
    table = data.api("/api/instances")
    random_records = _records(runs["random"])
    assert [c["id"] for c in table["columns"]] == ["oracle", "random"] and table["by"] == "run"
    assert [r["idx"] for r in table["rows"]] == sorted({r["idx"] for r in random_records})
    for row in table["rows"]:
        mine = [r for r in random_records if r["idx"] == row["idx"]]
        oracle, random_cell = row["cells"]
        assert random_cell == {
            "successes": sum(r["reward"] >= 1 for r in mine),
            "trials": 2,
            "runs": 1,
            "open": ["random", 0],
        }
        assert oracle["successes"] == oracle["trials"] == 1
        assert row["solved_by"] == 1 + bool(random_cell["successes"]) and row["played_by"] == 2
    # Grouped by policy, the two runs are two columns still; by a filter, one.
    assert [c["id"] for c in data.api("/api/instances?by=policy")["columns"]] == ["oracle", "random"]
    assert [c["id"] for c in data.api("/api/instances?policy=random")["columns"]] == ["random"]
    differ = data.api("/api/instances?show=differ")["rows"]
    assert {r["idx"] for r in differ} == {
        r["idx"] for r in random_records if not any(o["reward"] >= 1 for o in random_records if o["idx"] == r["idx"])
    }
    # One instance: every run's episodes of it, its question and gold.
    idx = random_records[0]["idx"]
    one = data.api(f"/api/instances/{idx}")
    assert one["runs"]["random"]["trial_list"] == [0, 1]
    assert [e["submitted"] for e in one["runs"]["random"]["episodes"]] == [
        r["submitted"] for r in random_records if r["idx"] == idx
    ]
    assert one["question"] == random_records[0]["trajectory"][0]["observation"]
    with pytest.raises(ViewerError, match="no run of this viewer has an episode of instance 99999"):
        data.api("/api/instances/99999")


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
    copy = tmp_path / "report-viewer"
    manifest = _script_value(copy / "data.js", "window.CRM_VIEWER_DATA = ")
    episodes = {}  # every episode document of the random run, from its chunks
    for *_, chunk in manifest["runs"]["random"]["details"]:
        episodes.update(_script_value(copy / chunk, f"window.CRM_VIEWER_CHUNK({json.dumps(chunk)}, "))
    records = _records(runs["random"])
    assert sorted(episodes) == sorted(f"{r['idx']}/{r['trial']}" for r in records)
    failed = [r for r in records if r["reward"] < 1]
    for r in failed[:30]:
        href = f'href="report-viewer/index.html#/episode/random/{r["idx"]}/{r["trial"]}"'
        assert href in html
        assert episodes[f"{r['idx']}/{r['trial']}"]["submitted"] == r["submitted"]
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
    assert episode["final_reply"] == "It is OR."


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


def test_infinite_and_nan_numbers_are_said_wrong_and_shown_as_0(tmp_path: Path) -> None:
    # Python's json writes (and reads) Infinity and NaN; summing them made the viewer fail with a traceback.
    records = [
        {"idx": 0, "trial": 0, "abbrev": "BRI", "reward": float("nan"), "turns": float("inf")},
        {"idx": 1, "trial": 0, "abbrev": "BRI", "reward": 1.0, "turns": 3, "usage": {"cost": float("-inf")}},
    ]
    data = ViewerData([write_run(tmp_path / "odd", records, {"episodes": 2})])
    (run,) = data.api("/api/runs")["runs"]
    assert any("its reward nan is not a finite number; shown as 0" in p for p in run["problems"])
    assert any("its turns inf is not a finite number; shown as 0" in p for p in run["problems"])
    assert any("its usage cost -inf is not a finite number; left out" in p for p in run["problems"])
    assert run["accuracy"] == 0.5 and run["turns"] == 1.5
    json.dumps(data.api("/api/runs/odd"), allow_nan=False)


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


# -- large runs and sweeps: the server filters, sorts and pages ---------------------------------------


@pytest.fixture(scope="module")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_run(tmp_path_factory.mktemp("viewer-big") / "big", 1500, 2, dropout="corrupt", seed=3)


def _expected_order(records: list[dict], key: str, descending: bool) -> list[tuple[int, int]]:
    """Episodes by a key, written out independently of the viewer: no value last, ties by (idx, trial)."""
    value = {
        "turns": lambda r: r["turns"],
        "reward": lambda r: r["reward"],
        "task": lambda r: r["abbrev"],
        "tokens": lambda r: r["usage"]["total_tokens"],
        "seconds": lambda r: sum(
            s["timing"]["policy"] + s["timing"]["env"] for s in r["trajectory"][1:] if "timing" in s
        ),
    }[key]
    ordered = sorted(records, key=lambda r: (r["idx"], r["trial"]))
    if descending:  # a stable sort on the negated key keeps (idx, trial) order among equals
        ordered = sorted(ordered, key=lambda r: value(r), reverse=True)
    else:
        ordered = sorted(ordered, key=lambda r: value(r))
    return [(r["idx"], r["trial"]) for r in ordered]


def test_episode_lists_are_sorted_filtered_and_paged_by_the_server(big_run: Path) -> None:
    records = _records(big_run)
    assert len(records) == 3000
    with serving([big_run]) as base, httpx.Client(base_url=base) as client:

        def page(**params: Any) -> dict:
            answer = client.get("/api/runs/big/episodes", params=params)
            assert answer.status_code == 200, answer.text
            return answer.json()

        for key in ("turns", "reward", "task", "tokens"):
            for order in ("asc", "desc"):
                first = page(sort=key, order=order, limit=100)
                second = page(sort=key, order=order, limit=100, offset=100)
                assert first["matched"] == 3000 and len(first["episodes"]) == 100
                shown = [(e["idx"], e["trial"]) for e in first["episodes"] + second["episodes"]]
                assert shown == _expected_order(records, key, order == "desc")[:200], (key, order)
        timed = page(sort="seconds", order="desc", limit=5)["episodes"]
        assert [(e["idx"], e["trial"]) for e in timed] == _expected_order(records, "seconds", True)[:5]
        # Filters: the same episodes as the results file says, in idx order.
        failed_htu = [r for r in records if r["abbrev"] == "HTU" and r["reward"] < 1]
        listed = page(task="HTU", outcome="failure", limit=1000)
        assert listed["matched"] == len(failed_htu) and listed["total"] == 3000
        assert [(e["idx"], e["trial"]) for e in listed["episodes"]] == [(r["idx"], r["trial"]) for r in failed_htu]
        dropped = [r for r in records if any((s.get("dropout") or {}).get("hit") for s in r["trajectory"][1:])]
        assert page(code="dropout", limit=1)["matched"] == len(dropped)
        coded = [r for r in records if any(s.get("error") == "INVALID_FIELD" for s in r["trajectory"][1:])]
        assert page(code="INVALID_FIELD", limit=1)["matched"] == len(coded)
        assert page(min_turns=5, max_turns=6, limit=1)["matched"] == sum(5 <= r["turns"] <= 6 for r in records)
        # Search: in the actions and the answers, case-insensitive, each row with its first hit.
        term = records[7]["trajectory"][1]["action"][-30:-12].strip()  # the search trims its text
        found = page(q=term.upper(), limit=1000)
        expected = [
            r for r in records if any(term.lower() in str(s.get("action", "")).lower() for s in r["trajectory"][1:])
        ]
        assert found["matched"] == len(expected) >= 1
        for e in found["episodes"]:
            assert e["hit"]["match"].lower() == term.lower() and e["hit"]["field"].startswith("turn ")
        assert page(q=records[3]["submitted"], limit=1000)["matched"] >= 1
        assert page(limit=10)["facets"]["tasks"] == sorted({r["abbrev"] for r in records})
        # Bad requests are refused with a reason.
        for params, words in [
            ({"sort": "nope"}, "sorts by one of idx"),
            ({"order": "up"}, "order must be"),
            ({"limit": "x"}, "limit must be a whole number"),
            ({"limit": "5000"}, "between 0 and 1000"),
            ({"outcome": "maybe"}, "outcome is success"),
            ({"offset": "-1"}, "offset must be"),
        ]:
            answer = client.get("/api/runs/big/episodes", params=params)
            assert answer.status_code == 400 and words in answer.json()["error"], params


def test_an_experiment_is_grouped_by_sweep_policy_and_setting(tmp_path: Path) -> None:
    from crmarena_gym.eval._experiment import EXPERIMENT_FILE as WRITTEN
    from crmarena_gym.eval._viewer import EXPERIMENT_FILE as READ

    assert READ == WRITTEN
    state = synthetic_experiment(tmp_path / "exp", instances=12)
    data = ViewerData([tmp_path / "exp"])
    listing = data.api("/api/runs")
    runs = {r["id"]: r for r in listing["runs"]}
    done = [c for c in state["cells"] if c["status"] == "done"]
    assert len(runs) == len(done) == 100
    (experiment,) = listing["experiments"]
    assert experiment["name"] == "synthetic sweep" and len(experiment["cells"]) == 120
    skipped = [c for c in experiment["cells"] if c["status"] == "skipped"]
    assert len(skipped) == 20 and {c["policy"] for c in skipped} == {"model-c"} and not any(c["run"] for c in skipped)
    for cell, shown in zip(state["cells"], experiment["cells"], strict=True):
        assert (shown["sweep"], shown["policy"], shown["setting"]) == (cell["sweep"], cell["policy"], cell["label"])
        if cell["status"] == "done":
            run = runs[shown["run"]]
            assert run["group"] == {
                "experiment": "exp",
                "sweep": cell["sweep"],
                "policy": cell["policy"],
                "setting": cell["label"],
            }
            records = _records(tmp_path / "exp" / cell["path"])
            assert run["accuracy"] == pytest.approx(sum(r["reward"] for r in records) / len(records))
    # Grouped by policy: each column adds up the policy's 20 cells.
    table = data.api("/api/instances?by=policy&cols_limit=2")
    assert table["total_columns"] == 5 and [c["id"] for c in table["columns"]] == ["oracle", "reactive"]
    oracle_dirs = [tmp_path / "exp" / c["path"] for c in done if c["policy"] == "oracle"]
    oracle = [r for d in oracle_dirs for r in _records(d)]
    for row in table["rows"]:
        mine = [r for r in oracle if r["idx"] == row["idx"]]
        assert row["cells"][0]["trials"] == len(mine) == 20 and row["cells"][0]["runs"] == 20
        assert row["cells"][0]["successes"] == sum(r["reward"] >= 1 for r in mine)
    later = data.api("/api/instances?by=policy&cols_limit=2&cols_offset=4")
    assert [c["id"] for c in later["columns"]] == ["model-b"] and len(later["rows"][0]["cells"]) == 1
    by_setting = data.api("/api/instances?by=setting&sweep=turns")
    assert [c["id"] for c in by_setting["columns"]] == [f"turns: turns={n}" for n in (2, 4, 6, 8, 10)]
    assert all(len(c["runs"]) == 5 for c in by_setting["columns"])
    paged = data.api("/api/instances?by=run&limit=5&offset=5&sort=solved_by&order=desc")
    everything = data.api("/api/instances?by=run&sort=solved_by&order=desc")
    assert paged["rows"] == everything["rows"][5:10] and everything["total_columns"] == 100
    assert [r["solved_by"] for r in everything["rows"]] == sorted(
        (r["solved_by"] for r in everything["rows"]), reverse=True
    )


def test_gold_wrappers_and_timing_are_shown_as_recorded(
    tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    # A run's unanswerable instance: its gold is None, and that is the answer, not a missing value.
    run = synthetic_run(tmp_path / "run", 14, seed=1)
    data = ViewerData([run])
    unanswerable = data.api("/api/runs/run/episodes/13/0")
    assert unanswerable["gold"] is None and unanswerable["gold_state"] == "unanswerable"
    assert "unanswerable" in unanswerable["reward_explanation"]
    assert data.api("/api/runs/run/episodes?limit=20")["episodes"][13]["gold_state"] == "unanswerable"
    record = _records(run)[2]
    episode = data.api("/api/runs/run/episodes/2/0")
    assert episode["gold_state"] == "answer" and episode["gold"] == record["gold"]
    for shown, raw in zip(episode["steps"], record["trajectory"][1:], strict=True):
        if "timing" in raw:
            assert shown["timing"] == raw["timing"]
    assert episode["seconds"] == pytest.approx(
        sum(sum(s["timing"].values()) for s in record["trajectory"][1:] if "timing" in s)
    )
    # A real run measures nothing: no timing is shown rather than a made-up one.
    plain = write_run(tmp_path / "plain", [llm_record()], {})
    assert ViewerData([plain]).api("/api/runs/plain/episodes/4/0")["steps"][0]["timing"] is None

    # Recorded trajectories: without privileged info the gold is unknown and said to be; the wrappers kept.
    chosen = [t for t in nine_tasks if t.abbrev == "BRI"][:2]
    for privileged in (False, True):
        path = tmp_path / f"recorded-{privileged}.jsonl"
        env = gym.make("CRMArena-v0", org=env_org, tasks=chosen, toolset="soql", privileged=privileged)
        env = RecordTrajectory(ToolResultDropout(TurnLimit(env, max_turns=5), p=0.5, mode="error"), path)
        for n, inst in enumerate(chosen):
            env.reset(seed=n, options={"idx": inst.idx})
            env.step("execute SELECT Id FROM Case LIMIT 2")
            env.step(f"submit {inst.answer}")
        env.close()
        recorded = ViewerData([path])
        brief = recorded.api("/api/runs")["runs"][0]
        assert brief["wrappers"][:2] == [
            "ToolResultDropout(p=0.5, mode='error')",
            "TurnLimit(max_turns=5, warn_last_turn=False)",
        ]
        for inst in chosen:
            shown = recorded.api(f"/api/runs/{path.stem}/episodes/{inst.idx}/0")
            assert shown["wrappers"] == brief["wrappers"] and shown["reward"] == 1.0
            if privileged:
                assert shown["gold_state"] == ("answer" if inst.answerable else "unanswerable")
                assert shown["gold"] == inst.answer
            else:
                assert shown["gold_state"] == "unrecorded" and shown["gold"] is None
                assert "not recorded" in shown["reward_explanation"] and "gold None" not in shown["reward_explanation"]


def test_corrupted_values_are_located(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "bad", 30, dropout="corrupt", seed=4)
    data = ViewerData([run])
    seen = 0
    for record in _records(run):
        episode = data.api(f"/api/runs/bad/episodes/{record['idx']}/{record['trial']}")
        for shown, raw in zip(episode["steps"], record["trajectory"][1:], strict=True):
            hit = (raw.get("dropout") or {}).get("hit")
            assert (shown["dropout"] is not None) == bool(hit)
            if hit:
                seen += 1
                row, field = raw["dropout"]["path"]
                assert f"at [{row}].{field}, marked" in shown["effects"][0]
                assert shown["dropout"]["path"] == [row, field]
    assert seen


def test_a_static_copy_is_split_into_chunks(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "runs" / "many", 2340, 2, seed=5)  # 4,680 episodes, as in the issue
    other = synthetic_run(tmp_path / "runs" / "few", 30, seed=6)
    copy = tmp_path / "copy"
    export_viewer(ViewerData([run, other]), copy)
    sizes = {p.relative_to(copy).as_posix(): p.stat().st_size for p in copy.rglob("*.js")}
    assert sizes["data.js"] < 200_000, sizes["data.js"]  # the runs and their tables only
    assert max(sizes.values()) < 1_500_000 and len(sizes) > 10
    manifest = _script_value(copy / "data.js", "window.CRM_VIEWER_DATA = ")
    entry = manifest["runs"]["many"]
    briefs = [
        brief
        for name in entry["episodes"]
        for brief in _script_value(copy / name, f"window.CRM_VIEWER_CHUNK({json.dumps(name)}, ")
    ]
    assert [(b["idx"], b["trial"]) for b in briefs] == [(r["idx"], r["trial"]) for r in _records(run)]
    keys = [tuple(d[:2]) for d in entry["details"]]
    assert keys == sorted(keys) and keys[0] == (0, 0)
    last = entry["details"][-1][2]
    final = _script_value(copy / last, f"window.CRM_VIEWER_CHUNK({json.dumps(last)}, ")
    assert "2339/1" in final and final["2339/1"]["submitted"] == _records(run)[-1]["submitted"]
    export_viewer(ViewerData([other]), copy)  # written again over a smaller copy: no chunk of the old one left
    assert not any("r1" in p.as_posix() for p in (copy / "data").rglob("*"))


def test_a_growing_run_keeps_its_episode_list_right(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path / "live", 40, seed=8)
    data = ViewerData([run])
    data.warm()
    records = _records(run)
    late = {**records[5], "idx": 500, "reward": 1.0}  # after every episode: the list grows
    early = {**records[6], "idx": 3, "trial": 1}  # among them (episodes end out of order): the list is made again
    for extra in (late, early):
        with open(run / "results.jsonl", "a") as handle:
            handle.write(json.dumps(extra) + "\n")
        assert data.refresh()  # as the server does before each answer
        grown = data.api("/api/runs/live/episodes?q=late delivery&sort=turns")
        fresh = ViewerData([run]).api("/api/runs/live/episodes?q=late delivery&sort=turns")
        assert grown == fresh
        listed = data.api("/api/runs/live/episodes")["episodes"]
        assert [(e["idx"], e["trial"]) for e in listed] == sorted((r["idx"], r["trial"]) for r in _records(run))


class _OneStrayEdit(Policy):
    """An act-mode policy: makes the right change and one change nobody asked for (on the org's first case)."""

    privileged = True
    toolset = "flex"

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        super().reset(observation, info, seed=seed)
        case, owner = info["records"]["case"], info["expected_changes"][0]["values"]["OwnerId"]
        self.actions = [
            _call("update_record", sobject="Case", record_id=case, fields={"OwnerId": owner}),
            _call("update_record", sobject="Case", record_id=FIRST_CASE[0], fields={"Priority": FIRST_CASE[1]}),
            "submit done",
        ]

    def act(self, observation: str) -> str:
        return self.actions.pop(0)


FIRST_CASE: list[str] = []  # the org's first case and a priority it does not have


def _call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def test_an_act_mode_episode_shows_its_changes_beside_the_expected_ones(tmp_path: Path, env_org: Path) -> None:
    from crmarena_gym.eval import evaluate
    from crmarena_gym.org import LocalOrg
    from crmarena_gym.tasks import generate_tasks

    tasks = generate_tasks(env_org, seed=13, per_task=2, tasks=["NCR"])
    first = LocalOrg(env_org).query("SELECT Id, Priority FROM Case ORDER BY Id LIMIT 1")["records"][0]
    FIRST_CASE[:] = [first["Id"], "Low" if first["Priority"] != "Low" else "High"]  # a value it does not have
    evaluate("oracle", env_id="CRMArena-NCR-Act-v0", tasks=tasks, org=env_org, out=tmp_path / "oracle", progress=False)
    evaluate(
        _OneStrayEdit,
        env_id="CRMArena-NCR-Act-v0",
        tasks=tasks[:1],
        org=env_org,
        out=tmp_path / "stray",
        progress=False,
    )
    data = ViewerData([tmp_path / "oracle", tmp_path / "stray"])
    good = data.api(f"/api/runs/oracle/episodes/{tasks[0].idx}/0")
    assert good["success"] and good["diff_check"] == {"ok": True, "missing": [], "stray": []}
    assert [c["fields"]["OwnerId"]["new"] for c in good["state_diff"]] == [tasks[0].answer]
    assert good["expected_changes"][0]["values"] == {"OwnerId": tasks[0].answer}
    assert "no other: reward 1" in good["reward_explanation"]
    bad = data.api(f"/api/runs/stray/episodes/{tasks[0].idx}/0")
    assert not bad["success"] and len(bad["state_diff"]) == 2
    assert len(bad["diff_check"]["stray"]) == 1 and FIRST_CASE[0] in bad["diff_check"]["stray"][0]
    assert "1 change nobody asked for: reward 0" in bad["reward_explanation"]


class _RightChangeNoArticle(Policy):
    """An act-mode policy for a quote decision: makes the required changes, then names no article."""

    privileged = True
    toolset = "soql"

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        super().reset(observation, info, seed=seed)
        self.actions = [_call(c["name"], **c["arguments"]) for c in info["act_calls"]] + ["submit None"]

    def act(self, observation: str) -> str:
        return self.actions.pop(0)


def test_a_pro_quote_decision_shows_its_diff_and_the_article_it_named(
    tmp_path: Path, pro_env_orgs: dict[str, Path]
) -> None:
    from crmarena_gym.eval import evaluate
    from crmarena_gym.tasks.pro import generate_pro_tasks

    path = pro_env_orgs["b2b"]
    tasks = [i for i in generate_pro_tasks(path, category="QAP", seed=5, per_task=6) if i.answer is not None][:1]
    env_id = "CRMArena-Pro-B2B-QAP-Act-v0"
    evaluate("oracle", env_id=env_id, tasks=tasks, org=path, out=tmp_path / "oracle", progress=False)
    evaluate(_RightChangeNoArticle, env_id=env_id, tasks=tasks, org=path, out=tmp_path / "none", progress=False)
    data = ViewerData([tmp_path / "oracle", tmp_path / "none"])
    good = data.api(f"/api/runs/oracle/episodes/{tasks[0].idx}/0")
    assert good["success"] and good["diff_check"]["ok"] and good["answer_check"]["gold"] == tasks[0].answer
    assert [c["fields"]["Status"]["new"] for c in good["state_diff"]] == ["Rejected"]
    assert "names the right article: reward 1" in good["reward_explanation"]
    bad = data.api(f"/api/runs/none/episodes/{tasks[0].idx}/0")
    assert not bad["success"] and bad["diff_check"]["ok"] and bad["answer_check"]["reward"] == 0.0
    assert "the submitted answer is not the gold article: reward 0" in bad["reward_explanation"]
