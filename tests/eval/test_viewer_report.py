"""The reports over runs and experiments: wrappers, intervals, pass^k curves, commands to run again, and
figures that colour-blind readers can read, with nothing drawn over anything else."""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from crmarena_gym.eval import bootstrap_ci, write_experiment_report, write_report
from tests.eval.viewer_runs import synthetic_experiment, synthetic_run

OKABE_ITO = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"}
NEUTRAL = {"white", "none", "#333", "#ddd"}
SVG = "{http://www.w3.org/2000/svg}"


def _records(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "results.jsonl").read_text().splitlines()]


def test_the_run_report_has_wrappers_intervals_curves_and_commands(tmp_path: Path) -> None:
    dropout = [{"name": "ToolResultDropout", "kwargs": {"p": 0.2, "mode": "drop"}}]
    a = synthetic_run(tmp_path / "a", 30, 3, seed=1, quality=0.7, wrappers=dropout)
    b = synthetic_run(tmp_path / "b", 30, 3, seed=2, quality=0.3)
    c = synthetic_run(tmp_path / "c", 30, 1, seed=3)
    out = tmp_path / "out" / "report.md"
    text = write_report([a, b, c], out)
    rewards = [r["reward"] for r in _records(a)]
    low, high = bootstrap_ci(rewards)
    accuracy = sum(rewards) / len(rewards)
    assert low <= accuracy <= high
    assert f"| ToolResultDropout(p=0.2, mode='drop') | 3 | 90 | {accuracy:.3f} | [{low:.3f}, {high:.3f}] |" in text
    assert "| b | litellm:synthetic-model | react | CRMArena-v0 | none | 3 |" in text
    # pass^k: a curve per run with several trials; the single-trial run is named, not drawn as a dot.
    curve = ET.parse(out.parent / "report-pass_k.svg").getroot()
    assert len(curve.findall(f"{SVG}polyline")) == 2
    assert "Not drawn (one trial per instance, so pass^1 only): c." in text
    # The commands: each run's, and this report's.
    for run in (a, b, c):
        command = shlex.join(json.loads((run / "metadata.json").read_text())["command"])
        assert f"# {run.name}\n{command}\n" in text
    assert shlex.join(["crmarena-gym", "report", str(a), str(b), str(c), "--out", str(out)]) in text
    # One trial only everywhere: no curve at all, and why.
    only = write_report([c], tmp_path / "one" / "report.md")
    assert "No pass^k curve" in only and not (tmp_path / "one" / "report-pass_k.svg").exists()


def test_svg_figures_are_colour_blind_safe_and_never_overlap(tmp_path: Path) -> None:
    runs = [synthetic_run(tmp_path / f"a-rather-long-run-name-{n:02d}", 9, 2, seed=n) for n in range(25)]
    write_report(runs, tmp_path / "report.md")
    for name in ("accuracy", "pass_k", "cost_accuracy"):
        root = ET.parse(tmp_path / f"report-{name}.svg").getroot()
        width, height = float(root.get("width")), float(root.get("height"))
        colours = {e.get(k) for e in root.iter() for k in ("fill", "stroke") if e.get(k)}
        assert colours <= OKABE_ITO | NEUTRAL, colours - OKABE_ITO - NEUTRAL
        # The plot's right edge: where the x axis ends. Every legend entry is right of it, inside the image.
        axis = [e for e in root.iter(f"{SVG}line") if e.get("stroke") == "#333" and e.get("y1") == e.get("y2")]
        right = max(float(e.get("x2")) for e in axis)
        entries = [e for e in root.iter(f"{SVG}text") if e.find(f"{SVG}title") is not None]
        assert len(entries) == 25
        for entry in entries:
            x, y = float(entry.get("x")), float(entry.get("y"))
            assert right < x < width and 0 < y < height
            assert x + 7 * len(entry.text or "") <= width + 1
        # Plotted points stay in the plot.
        for point in root.iter(f"{SVG}circle"):
            assert float(point.get("cx")) <= width and float(point.get("cy")) <= height


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report-experiment") / "exp"
    synthetic_experiment(out, instances=10, trials=2)
    write_experiment_report(out)
    return out


def test_the_experiment_report_says_each_skipped_policy_once(experiment: Path) -> None:
    html = (experiment / "report.html").read_text()
    markdown = (experiment / "report.md").read_text()
    for text in (html, markdown):
        assert text.count("SYNTHETIC_NO_SUCH_KEY is not set") == 1
        assert "model-c: 20 cells skipped: SYNTHETIC_NO_SUCH_KEY is not set" in text
        assert "| model-c |" not in text and "<td>model-c</td>" not in text
        assert "crmarena-gym experiment SPEC.toml --out " in text
    # The environment of each cell, and its interval, beside its figures.
    state = json.loads((experiment / "experiment.json").read_text())
    cell = next(c for c in state["cells"] if c["label"] == "turns=4" and c["policy"] == "random")
    rewards = [r["reward"] for r in _records(experiment / cell["path"])]
    low, high = bootstrap_ci(rewards)
    row = f"| turns=4 | random | done | 20 | {sum(rewards) / 20:.3f} | [{low:.3f}, {high:.3f}] |"
    assert row in markdown
    assert re.search(re.escape(row) + r".* TurnLimit\(max_turns=4\) \|", markdown)
    for sweep in ("dropout", "turns", "removal", "functions"):
        assert (experiment / "plots" / f"{sweep}.png").is_file()
        assert (experiment / "plots" / f"{sweep}-pass_k.png").is_file()
        assert f'src="plots/{sweep}-pass_k.png"' in html


def test_experiment_figures_tick_whole_turns_and_keep_legends_off_the_panels(experiment: Path) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_hex

    from crmarena_gym.eval._experiment_report import _cell_figures, _pass_k_figure, _sweep_figure

    state = json.loads((experiment / "experiment.json").read_text())
    figures = {c["path"]: _cell_figures(experiment, c) for c in state["cells"]}
    policies = [p["name"] for p in state["spec"]["policies"]]

    def draw(kind, sweep):  # type: ignore[no-untyped-def]
        entries = [c for c in state["cells"] if c["sweep"] == sweep]
        figure = kind(sweep, entries, figures, policies)
        figure.canvas.draw()
        return figure

    turns = draw(_sweep_figure, "turns")
    for panel in turns.axes:
        labels = [t.get_text() for t in panel.get_xticklabels()]
        assert labels == ["2", "4", "6", "8", "10"]  # the budgets swept, whole numbers
        assert panel.get_legend() is None
    pass_k = draw(_pass_k_figure, "turns")
    (legend,) = pass_k.legends  # one legend, the figure's, below the panels
    box = legend.get_window_extent()
    for panel in pass_k.axes:
        assert panel.get_legend() is None
        assert not box.overlaps(panel.get_window_extent())
        assert [t.get_text() for t in panel.get_xticklabels() if t.get_text()] == ["1", "2"]
        colours = {to_hex(line.get_color()).upper() for line in panel.get_lines()}
        assert colours <= OKABE_ITO and len(colours) == len(panel.get_lines())
        styles = {(line.get_marker(), line.get_linestyle()) for line in panel.get_lines()}
        assert len(styles) == len(panel.get_lines())  # told apart without colour too
    removal = draw(_sweep_figure, "removal")
    assert {image.get_cmap().name for panel in removal.axes for image in panel.get_images()} == {"cividis"}
