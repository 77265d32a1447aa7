"""The comparison report of an experiment: a table per sweep with 95% bootstrap intervals, and plots.

Each sweep gets one figure, a panel per policy: accuracy against the numeric axis (dropout p, turn budget,
ticked at the values swept) with one line per value of the other axes (the dropout mode) and the intervals
as error bars; or, for a sweep without a numeric axis (removed function groups, toolset, aided, matching),
accuracy per task (columns) and setting (rows) as a heat map. With two trials or more per instance, a second
figure draws pass^k against k, a curve per setting. Colours are Okabe-Ito's (the heat map: cividis), lines
also differ by marker and dash and are set a little apart, and the legend sits under the panels. Skipped
policies (an unset key) get one note each, not a row per cell. Plots need matplotlib
(``pip install 'crmarena-gym[plots]'``); without it the report has the tables and says how to get the plots.
"""

from __future__ import annotations

import os
import re
import shlex
from collections import defaultdict
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from crmarena_gym._secrets import redact_secrets
from crmarena_gym.eval._experiment import cell_results_path, read_state, setting_recipe
from crmarena_gym.eval._metrics import bootstrap_ci
from crmarena_gym.eval._results import read_results
from crmarena_gym.eval._summary import markdown_table, summarize
from crmarena_gym.eval._svg import COLOURS

__all__ = ["write_experiment_report"]

_NUMERIC_AXES = (
    "dropout_p",
    "max_turns",
    "schema_drift",
    "distractors",
    "dirty_values",
    "knowledge_drift",
    "request_limit",
    "unavailable_p",
    "session_expires_after",
    "latency_ms",
)
_AXIS_TITLES = {
    "dropout_p": "dropout probability p",
    "max_turns": "turn budget (max_turns)",
    "schema_drift": "schema drift strength (share of fields renamed or migrated)",
    "distractors": "distractor strength (share of records duplicated)",
    "dirty_values": "dirty-value rate",
    "knowledge_drift": "knowledge drift (share of articles with a superseded version)",
    "request_limit": "API requests allowed per episode",
    "unavailable_p": "transient 503 rate",
    "session_expires_after": "requests before the session expires",
    "latency_ms": "simulated latency per request (ms)",
}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_PER_ROW = 3
_LINESTYLES = ("-", "--", ":", "-.")
# Statuses that hold for every cell of a policy (an unset key, an earlier cell that stopped): one note each.
_POLICY_WIDE = ("skipped", "stopped")


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


def _style(n: int) -> dict[str, Any]:
    """The n-th line's look: an Okabe-Ito colour, a marker and a dash of its own."""
    return {
        "color": COLOURS[n % len(COLOURS)],
        "marker": _MARKERS[n % len(_MARKERS)],
        "linestyle": _LINESTYLES[n % len(_LINESTYLES)],
    }


def _legend_below(figure: Any, panels: Sequence[Any]) -> None:
    """One legend for every panel, under them (never over a panel)."""
    handles, labels = [], []
    for panel in panels:
        for handle, label in zip(*panel.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if len(labels) > 1:
        figure.legend(handles, labels, loc="outside lower center", ncols=min(4, len(labels)), fontsize=8, frameon=False)


def _panels(figure_class: Any, n: int, height: float, *, share: bool) -> tuple[Any, list[Any]]:
    """A figure of ``n`` panels, three to a row (a wide sweep stays readable); the unused ones removed."""
    columns = min(_PER_ROW, n)
    rows = -(-n // columns)
    figure = figure_class(figsize=(1.5 + 4.6 * columns, height * rows), layout="constrained")
    grid = figure.subplots(rows, columns, squeeze=False, sharey=share)
    panels = [panel for row in grid for panel in row]
    for extra in panels[n:]:
        extra.remove()
    return figure, panels[:n]


def _numeric_ticks(panel: Any, axis: str, values: list[float]) -> None:
    """Ticks at the values the sweep took (whole numbers for a turn budget: no 2.5 turns)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter

    panel.xaxis.set_major_locator(FixedLocator(values))
    if axis == "max_turns":
        panel.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0f}"))


def _sweep_figure(sweep: str, entries: list[dict[str, Any]], figures: dict[str, Any], policies: list[str]) -> Any:
    """A sweep's accuracy figure (a matplotlib ``Figure``); None when no cell has finished."""
    from matplotlib.figure import Figure

    done = [e for e in entries if figures.get(e["path"])]
    if not done:
        return None
    shown = [p for p in policies if any(e["policy"] == p for e in done)]
    axes_used = list(dict.fromkeys(a for e in done for a in e["setting"]))
    numeric = next((a for a in _NUMERIC_AXES if a in axes_used), None)
    rows = max(sum(e["policy"] == p for e in done) for p in shown)
    height = 4.2 if numeric is not None else 1.6 + 0.32 * rows
    figure, panels = _panels(Figure, len(shown), height, share=numeric is not None)
    image = None
    for panel, policy in zip(panels, shown, strict=True):
        mine = [e for e in done if e["policy"] == policy]
        panel.set_title(policy, fontsize=10)
        if numeric is not None:
            lines: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
            for e in mine:
                rest = {a: v for a, v in e["setting"].items() if a != numeric}
                name = ", ".join(f"{a.removeprefix('dropout_')}={v}" for a, v in rest.items()) or "accuracy"
                f = figures[e["path"]]
                lines[name].append((e["setting"][numeric], f["accuracy"], f["ci"][0], f["ci"][1]))
            values = sorted({e["setting"][numeric] for e in done})
            span = (values[-1] - values[0]) or 1.0
            for n, (name, points) in enumerate(lines.items()):
                points.sort()
                # Lines side by side a little, so that equal values do not hide each other's error bars.
                shift = 0.012 * span * (n - (len(lines) - 1) / 2)
                xs, ys = [p[0] + shift for p in points], [p[1] for p in points]
                errors = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
                panel.errorbar(xs, ys, yerr=errors, capsize=3, markersize=5, label=name, **_style(n))
            _numeric_ticks(panel, numeric, values)
            panel.set_xlabel(_AXIS_TITLES[numeric])
            panel.set_ylim(0, 1.05)
            panel.set_ylabel("accuracy" if panels.index(panel) % _PER_ROW == 0 else "")
            panel.grid(alpha=0.3)
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
            # cividis: read the same by colour-blind readers and in grey; dark is low, light is high.
            image = panel.imshow(grid, vmin=0, vmax=1, cmap="cividis", aspect="auto")
            for row, values_row in enumerate(grid):
                for column, value in enumerate(values_row):
                    if value == value:  # not NaN
                        colour = "white" if value < 0.55 else "black"
                        panel.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=7, color=colour)
            panel.set_xticks(range(len(tasks)), tasks, rotation=45)
            panel.set_yticks(range(len(mine)), [e["label"] for e in mine], fontsize=7)
            panel.set_xlabel("task")
    if numeric is not None:
        _legend_below(figure, panels)
    elif image is not None:
        figure.colorbar(image, ax=list(panels), shrink=0.8, label="accuracy")
    figure.suptitle(f"sweep {sweep}: accuracy (95% intervals)" if numeric else f"sweep {sweep}: accuracy per task")
    return figure


def _pass_k_figure(sweep: str, entries: list[dict[str, Any]], figures: dict[str, Any], policies: list[str]) -> Any:
    """pass^k against k, a panel per policy and a curve per setting; None when no cell has two trials."""
    from matplotlib.figure import Figure

    done = [e for e in entries if figures.get(e["path"]) and len(figures[e["path"]]["pass_k"]) > 1]
    if not done:
        return None
    shown = [p for p in policies if any(e["policy"] == p for e in done)]
    figure, panels = _panels(Figure, len(shown), 4.2, share=True)
    for panel, policy in zip(panels, shown, strict=True):
        for n, e in enumerate(e for e in done if e["policy"] == policy):
            curve = figures[e["path"]]["pass_k"]
            ks = sorted(int(k) for k in curve)
            panel.plot(ks, [curve[str(k)] for k in ks], markersize=5, label=e["label"], **_style(n))
        ks_drawn = sorted({int(k) for e in done if e["policy"] == policy for k in figures[e["path"]]["pass_k"]})
        panel.set_xticks(ks_drawn, [str(k) for k in ks_drawn])  # whole k only
        panel.set_title(policy, fontsize=10)
        panel.set_xlabel("k (trials that must all succeed)")
        panel.set_ylim(0, 1.05)
        panel.set_ylabel("pass^k" if panels.index(panel) % _PER_ROW == 0 else "")
        panel.grid(alpha=0.3)
    _legend_below(figure, panels)
    figure.suptitle(f"sweep {sweep}: pass^k")
    return figure


def _skipped_notes(cells: list[dict[str, Any]]) -> list[str]:
    """One note per policy whose cells were skipped or stopped for one reason (an unset key skips them all)."""
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for c in cells:
        if c["status"] in _POLICY_WIDE:
            reason = re.sub(r"^an earlier cell of \S+ stopped: ", "", str(c.get("reason", "")))
            counts[(c["policy"], c["status"], reason)] += 1
    return [
        f"{policy}: {n} cell{'s' if n > 1 else ''} {status}: {reason}"
        + (" (set it and run the experiment again: finished cells are kept)" if reason.endswith("is not set") else "")
        for (policy, status, reason), n in counts.items()
    ]


def _wrapper_text(setting: dict[str, Any]) -> str:
    """The environment arguments and wrappers a setting gives each cell's environments."""
    env_kwargs, wrappers = setting_recipe(setting)
    parts = [f"{k}={v!r}" for k, v in env_kwargs.items()]
    parts += [f"{w['name']}({', '.join(f'{k}={v!r}' for k, v in w['kwargs'].items())})" for w in wrappers]
    return ", ".join(parts) or "none"


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
    rerun = f"crmarena-gym experiment SPEC.toml --out {shlex.quote(str(out))}"
    html = [f"<h1>{escape(spec['name'])}</h1>", f"<p>{escape(selection)}; policies: {escape(', '.join(policies))}.</p>"]
    html.append(
        "<p>Accuracy is the mean reward per episode (token F1 for KQA) with its 95% percentile bootstrap interval; "
        "pass^k as in tau-bench. Each cell is a run directory: browse every episode of every cell with "
        f"<code>crmarena-gym view {escape(str(out))}</code> (or one sweep's: <code>.../cells/SWEEP</code>).</p>"
    )
    again = (
        "Run it again (finished cells are kept, stopped ones resumed) with the spec it was made from "
        "(experiment.json keeps a copy):"
    )
    html.append(f"<p>{escape(again)}</p><pre><code>{escape(rerun)}</code></pre>")
    html.append(f"<p>This report alone: <code>{escape(rerun)} --report-only</code></p>")
    markdown = [f"# {spec['name']}", selection, again, f"```\n{rerun}\n```"]
    notes = _skipped_notes(cells)
    if notes:
        html.append("<ul class='notes'>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
        markdown.append("\n".join(f"- {n}" for n in notes))
    if not plots_available:
        note = "The plots need matplotlib: pip install 'crmarena-gym[plots]', then run the experiment again."
        html.append(f"<p><strong>{escape(note)}</strong></p>")
        markdown.append(note)
    header = ["setting", "policy", "status", "episodes", "accuracy", "95% interval", "pass^k", "turns", "errors"]
    header.append("environment and wrappers")
    for sweep in spec["sweeps"]:
        entries = [e for e in cells if e["sweep"] == sweep["name"]]
        rows = []
        for e in entries:
            if e["status"] in _POLICY_WIDE:
                continue  # said once, in the notes above
            f = figures.get(e["path"])
            environment = _wrapper_text(e["setting"])
            perturbed = e.get("perturbed")
            if perturbed:  # the org it played and the instances its perturbation dropped
                applied = ", ".join(
                    f"{p['kind']}={p['strength']:g} (seed {p['seed']})" for p in perturbed["perturbations"]
                )
                dropped = ", ".join(f"{n} {why}" for why, n in sorted(perturbed["dropped"].items())) or "none"
                org_text = f"perturbed org: {applied}; task set kept {perturbed['kept']}, dropped {dropped}"
                environment = org_text if environment == "none" else f"{org_text}; {environment}"
            if f is None:
                status = f"{e['status']}: {e.get('reason', '')}".rstrip(": ")
                rows.append([e["label"], e["policy"], status, *["-"] * 6, environment])
                continue
            pass_k = ", ".join(f"^{k} {v:.3f}" for k, v in f["pass_k"].items())
            interval = f"[{f['ci'][0]:.3f}, {f['ci'][1]:.3f}]"
            figures_text = [str(f["episodes"]), f"{f['accuracy']:.3f}", interval, pass_k, f"{f['turns']:.1f}"]
            rows.append([e["label"], e["policy"], e["status"], *figures_text, str(f["errors"]), environment])
        html.append(f"<h2>Sweep {escape(sweep['name'])}</h2>")
        markdown.append(f"## Sweep {sweep['name']}")
        for kind, draw in (("", _sweep_figure), ("-pass_k", _pass_k_figure)):
            image = out / "plots" / f"{sweep['name']}{kind}.png"
            figure = draw(sweep["name"], entries, figures, policies) if plots_available else None
            if figure is not None:
                figure.savefig(image, dpi=110)
                alt = f"sweep {sweep['name']}{kind.replace('-', ' ')}"
                html.append(f'<figure><img src="plots/{escape(image.name)}" alt="{escape(alt)}"></figure>')
                markdown.append(f"![{alt}](plots/{image.name})")
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        html.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        markdown.append(markdown_table(header, rows))
    style = (
        "body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}img{max-width:100%}"
        "pre{background:#f6f8fa;padding:.6em}"
    )
    page = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(spec["name"])}</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(html) + "\n</body></html>\n"
    )
    (out / "report.md").write_text(redact_secrets("\n\n".join(markdown) + "\n"), encoding="utf-8")
    report = out / "report.html"
    report.write_text(redact_secrets(page), encoding="utf-8")
    return report
