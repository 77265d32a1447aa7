"""Summaries and reports over results files written by hand, against values computed by hand."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.eval import format_table, load_run, summarize, write_report


def _episode(abbrev: str, idx: int, trial: int, reward: float, **extra: Any) -> dict[str, Any]:
    return {"abbrev": abbrev, "task": abbrev, "idx": idx, "trial": trial, "reward": reward, "turns": 4, **extra}


def _write_run(directory: Path, episodes: list[dict[str, Any]], policy: str = "litellm:gpt-4o") -> Path:
    directory.mkdir(parents=True)
    text = "".join(json.dumps(e) + "\n" for e in episodes)
    (directory / "results.jsonl").write_text(text)
    metadata = {
        "run": {"policy": policy, "env_id": "CRMArena-v0", "policy_options": {"framework": "react"}},
        "trials": 3,
    }
    (directory / "metadata.json").write_text(json.dumps(metadata))
    return directory


# HTU: instance 1 succeeds 3/3, instance 2 succeeds 1/3, instance 3 0/3.
# pass^1 = (3/3 + 1/3 + 0/3) / 3 = 4/9; pass^2 = (C(3,2)/C(3,2) + 0 + 0) / 3 = 1/3; pass^3 = 1/3.
# KQA: one instance, F1 0.5, 1.0, 1.0: accuracy = 2.5/3; successes 2 of 3: pass^1 = 2/3, pass^2 = C(2,2)/C(3,2) = 1/3,
# pass^3 = 0.
HAND = [
    *[_episode("HTU", 1, t, 1.0) for t in range(3)],
    _episode("HTU", 2, 0, 0.0),
    _episode("HTU", 2, 1, 1.0),
    _episode("HTU", 2, 2, 0.0, end_reason="llm_error"),
    *[_episode("HTU", 3, t, 0.0) for t in range(3)],
    _episode("KQA", 7, 0, 0.5),
    _episode("KQA", 7, 1, 1.0),
    _episode("KQA", 7, 2, 1.0),
]


def test_pass_k_and_accuracy_match_hand_computed_values(tmp_path: Path) -> None:
    _, results = load_run(_write_run(tmp_path / "run", HAND))
    rows = summarize(results)
    assert list(rows) == ["KQA", "HTU", "all"]  # the paper's task order, then all
    assert rows["HTU"]["pass_k"] == pytest.approx({"1": 4 / 9, "2": 1 / 3, "3": 1 / 3})
    assert rows["KQA"]["accuracy"] == pytest.approx(2.5 / 3)
    assert rows["KQA"]["pass_k"] == pytest.approx({"1": 2 / 3, "2": 1 / 3, "3": 0.0})
    # all: four instances; pass^1 = (1 + 1/3 + 0 + 2/3) / 4 = 0.5, pass^2 = (1 + 0 + 0 + 1/3) / 4 = 1/3
    assert rows["all"]["pass_k"] == pytest.approx({"1": 0.5, "2": 1 / 3, "3": 0.25})
    assert rows["all"]["accuracy"] == pytest.approx((3 + 1 + 2.5) / 12)
    assert rows["HTU"]["errors"] == 1 and rows["all"]["instances"] == 4 and rows["all"]["episodes"] == 12


def test_tokens_and_cost_per_episode_and_unpriced(tmp_path: Path) -> None:
    priced = [
        _episode("BRI", 1, 0, 1.0, usage={"calls": 2, "total_tokens": 100, "cost": 0.02, "unpriced_calls": 0}),
        _episode("BRI", 2, 0, 0.0, usage={"calls": 3, "total_tokens": 300, "cost": 0.04, "unpriced_calls": 0}),
    ]
    rows = summarize(priced)
    assert rows["BRI"]["tokens"] == 200 and rows["BRI"]["cost"] == pytest.approx(0.03)
    unpriced = [
        *priced,
        _episode("BRI", 3, 0, 0.0, usage={"calls": 1, "total_tokens": 9, "cost": None, "unpriced_calls": 1}),
    ]
    assert summarize(unpriced)["BRI"]["cost"] is None
    assert "unpriced" in format_table(summarize(unpriced))


def test_a_torn_last_line_is_ignored_and_a_damaged_line_is_an_error(tmp_path: Path) -> None:
    directory = _write_run(tmp_path / "run", HAND[:2])
    with open(directory / "results.jsonl", "a") as handle:
        handle.write('{"abbrev": "HTU", "idx": 9, "tri')
    assert len(load_run(directory)[1]) == 2
    (directory / "results.jsonl").write_text("not json\n" + json.dumps(HAND[0]) + "\n")
    with pytest.raises(ValueError, match="line 1 is not JSON"):
        load_run(directory)


def test_reports_side_by_side_in_markdown_and_html(tmp_path: Path) -> None:
    a = _write_run(
        tmp_path / "model-a",
        [
            _episode(
                "HTU", 1, t, float(t < 2), usage={"calls": 1, "total_tokens": 10, "cost": 0.01, "unpriced_calls": 0}
            )
            for t in range(3)
        ],
    )
    b = _write_run(
        tmp_path / "model-b",
        [_episode("HTU", 1, t, 1.0) for t in range(3)] + [_episode("BRI", 4, t, 0.0) for t in range(3)],
        policy="oracle",
    )
    md_path = tmp_path / "out" / "report.md"
    text = write_report([a, b], md_path)
    assert "| HTU | 0.667 | 1.000 |" in text  # accuracy per task, runs side by side
    assert "| BRI | - | 0.000 |" in text
    assert "| model-a | 0.667 | 0.333 | 0.000 |" in text  # pass^1..3 of run a: 2/3, C(2,2)/C(3,2), 0
    assert "| model-a | 0.667 | $0.0100 |" in text
    for name in ("report-accuracy.svg", "report-pass_k.svg", "report-cost_accuracy.svg"):
        assert f"]({name})" in text
        ET.parse(md_path.parent / name)  # well-formed SVG
    html = write_report([a, b], tmp_path / "out" / "report.html")
    assert html.startswith("<!DOCTYPE html>") and html.count("<svg") == 3 and "<td>0.667</td>" in html
    assert "http" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched


def test_a_report_needs_runs(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no results\.jsonl"):
        write_report([tmp_path])


def test_records_without_an_abbreviation_are_summarised_by_their_task(tmp_path: Path) -> None:
    from crmarena_gym.cli import main

    lines = [
        {"task": "handle_time", "idx": 1, "trial": 0, "reward": 1.0, "turns": 2},
        {"task": "handle_time", "idx": 2, "trial": 0, "reward": 0.0, "turns": 4},
        {"task": "someone_elses_task", "idx": 3, "trial": 0, "reward": 1.0, "turns": 1},
        {"idx": 4, "trial": 0, "reward": 0.0, "turns": 1},
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows = summarize(lines)
    assert rows["HTU"]["episodes"] == 2 and rows["HTU"]["accuracy"] == 0.5
    assert rows["someone_elses_task"]["episodes"] == 1 and rows["unknown"]["episodes"] == 1
    assert main(["report", str(run), "--out", str(tmp_path / "report.md")]) == 0
    assert "| HTU | 2 | 2 | 0.500 |" in (tmp_path / "report.md").read_text()
