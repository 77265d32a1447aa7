"""The comparison report of an experiment: a table per sweep with 95% bootstrap intervals, and plots.

Each sweep gets one figure, a panel per policy: accuracy against the numeric axis (dropout p, turn budget)
with one line per value of the other axes (the dropout mode) and the intervals as error bars; or, for a
sweep without a numeric axis (removed function groups, toolset, aided, matching), accuracy per task (columns)
and setting (rows) as a heat map. Plots need matplotlib (``pip install 'crmarena-gym[plots]'``); without it
the report has the tables and says how to get the plots.
"""

from __future__ import annotations

import os
from collections import defaultdict
from html import escape
from pathlib import Path
from typing import Any

from crmarena_gym._secrets import redact_secrets
from crmarena_gym.eval._experiment import cell_results_path, read_state
from crmarena_gym.eval._metrics import bootstrap_ci
from crmarena_gym.eval._results import read_results
from crmarena_gym.eval._summary import markdown_table, summarize

__all__ = ["write_experiment_report"]

_NUMERIC_AXES = ("dropout_p", "max_turns")
_AXIS_TITLES = {"dropout_p": "dropout probability p", "max_turns": "turn budget (max_turns)"}


def _cell_figures(out: Path, entry: dict[str, Any]) -> dict[str, Any] | None:
    """Accuracy, its interval, pass^k, turns, errors and per-task accuracy of a finished cell."""
    if entry["status"] != "done":
        return None
    path = cell_results_path(out, entry)
    if not path.is_file():
        return None
    records = read_results(path)
    if not records:
        return None
    rows = summarize(records)
    low, high = bootstrap_ci([float(r.get("reward") or 0.0) for r in records])
    return {
        "accuracy": rows["all"]["accuracy"],
        "ci": (low, high),
        "pass_k": rows["all"]["pass_k"],
        "turns": rows["all"]["turns"],
        "errors": rows["all"]["errors"],
        "episodes": rows["all"]["episodes"],
        "per_task": {task: row["accuracy"] for task, row in rows.items() if task != "all"},
    }


def _plot(sweep: str, entries: list[dict[str, Any]], figures: dict[str, Any], policies: list[str], path: Path) -> bool:
    """Draw a sweep's figure into ``path``; False when there is nothing to draw."""
    from matplotlib.figure import Figure

    done = [e for e in entries if figures.get(e["path"])]
    if not done:
        return False
    shown = [p for p in policies if any(e["policy"] == p for e in done)]
    axes_used = list(dict.fromkeys(a for e in done for a in e["setting"]))
    numeric = next((a for a in _NUMERIC_AXES if a in axes_used), None)
    height = 4.0 if numeric is not None else 1.2 + 0.3 * max(sum(e["policy"] == p for e in done) for p in shown)
    figure = Figure(figsize=(5.6 * len(shown), height), layout="constrained")
    panels = figure.subplots(1, len(shown), squeeze=False)[0]
    for panel, policy in zip(panels, shown, strict=True):
        mine = [e for e in done if e["policy"] == policy]
        if numeric is not None:
            lines: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
            for e in mine:
                rest = {a: v for a, v in e["setting"].items() if a != numeric}
                name = ", ".join(f"{a.removeprefix('dropout_')}={v}" for a, v in rest.items()) or "accuracy"
                f = figures[e["path"]]
                lines[name].append((e["setting"][numeric], f["accuracy"], f["ci"][0], f["ci"][1]))
            for name, points in lines.items():
                points.sort()
                xs, ys = [p[0] for p in points], [p[1] for p in points]
                errors = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
                panel.errorbar(xs, ys, yerr=errors, marker="o", capsize=3, label=name)
            panel.set_xlabel(_AXIS_TITLES[numeric])
        else:  # accuracy per task (columns) and setting (rows), as a heat map with the values written in
            tasks = [*dict.fromkeys(t for e in mine for t in figures[e["path"]]["per_task"]), "all"]
            grid = [
                [
                    figures[e["path"]]["per_task"].get(t, float("nan"))
                    if t != "all"
                    else figures[e["path"]]["accuracy"]
                    for t in tasks
                ]
                for e in mine
            ]
            panel.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
            for row, values in enumerate(grid):
                for column, value in enumerate(values):
                    if value == value:  # not NaN
                        panel.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=7)
            panel.set_xticks(range(len(tasks)), tasks, rotation=45)
            panel.set_yticks(range(len(mine)), [e["label"] for e in mine], fontsize=7)
            panel.set_xlabel("task")
            panel.set_title(policy)
            continue
        panel.set_title(policy)
        panel.set_ylim(0, 1.05)
        panel.set_ylabel("accuracy")
        panel.grid(alpha=0.3)
        panel.legend(fontsize=7)
    figure.suptitle(f"sweep {sweep}")
    figure.savefig(path, dpi=110)
    return True


def write_experiment_report(out: str | os.PathLike[str]) -> Path:
    """Write ``OUT/report.html`` (tables, plots in ``OUT/plots/``) and ``OUT/report.md``; return the HTML's path.

    Raises:
        FileNotFoundError: ``out`` holds no experiment.
    """
    out = Path(out)
    state = read_state(out)
    spec = state["spec"]
    cells = state["cells"]
    figures = {e["path"]: _cell_figures(out, e) for e in cells}
    policies = [p["name"] for p in spec["policies"]]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        plots_available = False
    else:
        plots_available = True
    (out / "plots").mkdir(exist_ok=True)

    selection = ", ".join(
        f"{k} {spec[k]}" for k in ("env", "tasks", "org", "task", "per_task", "limit", "trials", "seed") if spec.get(k)
    )
    html = [f"<h1>{escape(spec['name'])}</h1>", f"<p>{escape(selection)}; policies: {escape(', '.join(policies))}.</p>"]
    html.append(
        "<p>Accuracy is the mean reward per episode (token F1 for KQA) with its 95% percentile bootstrap interval; "
        "pass^k as in tau-bench. Each cell is a run directory: browse every episode of every cell with "
        f"<code>crmarena-gym view {escape(str(out))}</code> (or one sweep's: <code>.../cells/SWEEP</code>).</p>"
    )
    markdown = [f"# {spec['name']}", selection]
    if not plots_available:
        note = "The plots need matplotlib: pip install 'crmarena-gym[plots]', then run the experiment again."
        html.append(f"<p><strong>{escape(note)}</strong></p>")
        markdown.append(note)
    header = ["setting", "policy", "status", "episodes", "accuracy", "95% interval", "pass^k", "turns", "errors"]
    for sweep in spec["sweeps"]:
        entries = [e for e in cells if e["sweep"] == sweep["name"]]
        rows = []
        for e in entries:
            f = figures.get(e["path"])
            if f is None:
                rows.append([e["label"], e["policy"], f"{e['status']}: {e.get('reason', '')}".rstrip(": "), *["-"] * 6])
                continue
            pass_k = ", ".join(f"^{k} {v:.3f}" for k, v in f["pass_k"].items())
            interval = f"[{f['ci'][0]:.3f}, {f['ci'][1]:.3f}]"
            figures_text = [str(f["episodes"]), f"{f['accuracy']:.3f}", interval, pass_k, f"{f['turns']:.1f}"]
            rows.append([e["label"], e["policy"], e["status"], *figures_text, str(f["errors"])])
        html.append(f"<h2>Sweep {escape(sweep['name'])}</h2>")
        markdown.append(f"## Sweep {sweep['name']}")
        image = out / "plots" / f"{sweep['name']}.png"
        if plots_available and _plot(sweep["name"], entries, figures, policies, image):
            html.append(f'<figure><img src="plots/{escape(image.name)}" alt="sweep {escape(sweep["name"])}"></figure>')
            markdown.append(f"![sweep {sweep['name']}](plots/{image.name})")
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        html.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        markdown.append(markdown_table(header, rows))
    style = (
        "body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}img{max-width:100%}"
    )
    page = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(spec["name"])}</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(html) + "\n</body></html>\n"
    )
    (out / "report.md").write_text(redact_secrets("\n\n".join(markdown) + "\n"), encoding="utf-8")
    report = out / "report.html"
    report.write_text(redact_secrets(page), encoding="utf-8")
    return report
