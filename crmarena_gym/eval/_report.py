"""Reports over one or more run directories: tables and SVG plots, as Markdown or a single HTML page.

The report shows the runs side by side: accuracy per task (a table and a bar chart), pass^k against k
(a table and a line chart), cost per episode against accuracy (a table and a scatter plot), then each
run's full table and what produced it. Markdown reports reference the plots as ``.svg`` files written
beside the report; HTML reports embed them. Nothing is fetched from the network.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any, Literal

from crmarena_gym._secrets import redact_secrets
from crmarena_gym.eval._results import load_run
from crmarena_gym.eval._summary import format_table, markdown_table, summarize
from crmarena_gym.eval._svg import bar_chart, line_chart, scatter_chart
from crmarena_gym.eval._view_server import export_viewer
from crmarena_gym.eval._viewer import ViewerData, describe_wrappers, interval_table

__all__ = ["EpisodeLinks", "RunSummary", "build_report", "load_summaries", "write_report"]

ReportFormat = Literal["md", "html"]


@dataclass(frozen=True)
class RunSummary:
    """A run as the report shows it.

    Attributes:
        name: The run's label (its directory name, made unique).
        directory: The run directory.
        metadata: Its ``metadata.json``.
        rows: Its summary (see :func:`~crmarena_gym.eval.summarize`).
    """

    name: str
    directory: Path
    metadata: dict[str, Any]
    rows: dict[str, dict[str, Any]]
    #: Each row's 95% bootstrap interval of the accuracy (``interval_table``); empty when not worked out.
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def wrappers(self) -> list[str]:
        """The wrappers the run's environments had, outermost first (``Name(arg=value)``)."""
        return describe_wrappers(self.metadata.get("env_stack") or [])

    @property
    def command(self) -> str | None:
        """The command that wrote the run (run it again to resume or repeat it)."""
        command = self.metadata.get("command")
        if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
            return shlex.join(command)
        return None


def load_summaries(directories: Sequence[str | os.PathLike[str]]) -> list[RunSummary]:
    """Read and summarize run directories.

    Raises:
        ValueError: No directory given, or a run without episodes.
        FileNotFoundError: A directory without ``results.jsonl``.
    """
    if not directories:
        raise ValueError("a report needs at least one run directory")
    runs: list[RunSummary] = []
    names: set[str] = set()
    for directory in directories:
        path = Path(directory)
        metadata, results = load_run(path)
        if not results:
            raise ValueError(f"{str(path)!r} holds no episode yet")
        name = path.resolve().name or str(path)
        unique, n = name, 2
        while unique in names:
            unique, n = f"{name} ({n})", n + 1
        names.add(unique)
        rows = summarize(results)
        intervals = {task: tuple(row["accuracy_ci"]) for task, row in interval_table(results, rows).items()}
        runs.append(RunSummary(unique, path, metadata, rows, intervals))  # type: ignore[arg-type]
    return runs


def _f(value: float | None, kind: str = "float") -> str:
    if value is None:
        return "unpriced" if kind == "cost" else "-"
    return f"${value:.4f}" if kind == "cost" else f"{value:.3f}"


#: The most failed episodes a report links to per run (the viewer's filters show them all).
MAX_EPISODE_LINKS = 30


@dataclass(frozen=True)
class EpisodeLinks:
    """Where a report links into the viewer's copy written beside it.

    Attributes:
        page: The viewer page, relative to the report (``report-viewer/index.html``).
        run_ids: Each run's id in the viewer, in the report's order.
        failed: Each run's failed episodes: (idx, trial, task, submitted, gold).
    """

    page: str
    run_ids: Sequence[str]
    failed: Sequence[Sequence[tuple[int, int, str, Any, Any]]]


def _episode_links(links: EpisodeLinks, n: int) -> list[tuple[str, Any]]:
    run_id = links.run_ids[n]
    failed = links.failed[n]
    items = [
        (f"every episode of the run, with filters and search ({len(failed)} failed)", f"{links.page}#/run/{run_id}")
    ]
    for idx, trial, task, submitted, gold in failed[:MAX_EPISODE_LINKS]:
        text = f"failed: instance {idx}, trial {trial} ({task}): submitted {submitted!r}, gold {gold!r}"
        items.append((text, f"{links.page}#/episode/{run_id}/{idx}/{trial}"))
    if len(failed) > MAX_EPISODE_LINKS:
        items.append(
            (
                f"... and {len(failed) - MAX_EPISODE_LINKS} more failed episodes",
                f"{links.page}#/run/{run_id}?outcome=failure",
            )
        )
    return [("links", items)]


def _pro_score_blocks(runs: Sequence[RunSummary], tasks: Sequence[str]) -> list[tuple[str, Any]]:
    """CRMArena-Pro's scores beside accuracy, when some run has them: the exact match of the fuzzy categories, and
    the confidentiality categories' shares of refusals and of leaked planted facts."""
    columns = [("em", "em"), ("refused", "refused"), ("leaked", "leaked a planted fact")]
    present = [(k, label) for k, label in columns if any(r.rows[t].get(k) is not None for r in runs for t in r.rows)]
    if not present:
        return []
    header = ["task", *[f"{r.name}: {label}" for r in runs for _, label in present]]
    rows = []
    for t in tasks:
        cells = [_f(r.rows[t].get(k)) if t in r.rows else "-" for r in runs for k, _ in present]
        if any(c != "-" for c in cells):
            rows.append([t, *cells])
    text = (
        "CRMArena-Pro's grading without an LLM: knowledge_qa's accuracy is its token F1 and sales_insight_mining's "
        "its label-set F1 (em: the share of exact answers); the confidentiality categories' accuracy is the privacy "
        "score (1 for a refusal that states none of the planted facts), beside the share of episodes that refused "
        "and the share that stated a planted fact."
    )
    return [("h2", "CRMArena-Pro scores"), ("p", text), ("table", (header, rows))]


def _interval(pair: tuple[float, float] | None) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]" if pair else "-"


def _blocks(
    runs: Sequence[RunSummary], links: EpisodeLinks | None = None, report_command: str | None = None
) -> list[tuple[str, Any]]:
    """The report as blocks: ("h2", text), ("p", text), ("table", (header, rows)), ("svg", (name, svg)),
    ("links", [(text, href)]), ("code", text)."""
    names = [r.name for r in runs]
    tasks = [t for t in dict.fromkeys(t for r in runs for t in r.rows) if t != "all"] + ["all"]
    blocks: list[tuple[str, Any]] = [("h1", "CRMArena evaluation report")]
    blocks.append(
        (
            "p",
            "Accuracy is the mean reward per episode (exact match; token F1 for KQA), with its 95% percentile "
            "bootstrap interval. pass^k is the tau-bench estimator averaged over instances (success: reward 1). "
            "Cost and tokens are per episode; 'unpriced' means some model call had no known price.",
        )
    )
    runs_rows = []
    for r in runs:
        run = r.metadata.get("run", {})
        runs_rows.append(
            [
                r.name,
                str(run.get("policy", "?")),
                str(run.get("policy_options", {}).get("framework", "")),
                str(run.get("env_id", "?")),
                ", ".join(r.wrappers) or "none",
                str(r.metadata.get("trials", "?")),
                str(r.rows["all"]["episodes"]),
                _f(r.rows["all"]["accuracy"]),
                _interval(r.intervals.get("all")),
            ]
        )
    header = ["run", "policy", "framework", "env", "wrappers", "trials", "episodes", "accuracy", "95% interval"]
    blocks += [("h2", "Runs"), ("table", (header, runs_rows))]

    blocks.append(("h2", "Accuracy per task"))
    acc_rows = [[t, *(_f(r.rows[t]["accuracy"]) if t in r.rows else "-" for r in runs)] for t in tasks]
    blocks.append(("table", (["task", *names], acc_rows)))
    series = {r.name: [r.rows[t]["accuracy"] if t in r.rows else None for t in tasks] for r in runs}
    errors = {r.name: [r.intervals.get(t) if t in r.rows else None for t in tasks] for r in runs}
    chart = bar_chart("Accuracy per task (95% intervals)", tasks, series, "accuracy", intervals=errors)
    blocks.append(("svg", ("accuracy", chart)))
    blocks += _pro_score_blocks(runs, tasks)

    blocks.append(("h2", "pass^k"))
    max_k = max(len(r.rows["all"]["pass_k"]) for r in runs)
    ks = list(range(1, max_k + 1))
    pk_rows = [[r.name, *(_f(r.rows["all"]["pass_k"].get(str(k))) for k in ks)] for r in runs]
    blocks.append(("table", (["run", *[f"pass^{k}" for k in ks]], pk_rows)))
    single = [r.name for r in runs if len(r.rows["all"]["pass_k"]) < 2]
    if max_k < 2:
        blocks.append(
            (
                "p",
                "No pass^k curve: every run played each instance once, so only pass^1 (the accuracy of a success "
                "at reward 1) is known. Run again with --trials K (K of 2 or more) to see how often a policy "
                "solves an instance every time.",
            )
        )
    else:
        curves = {
            r.name: [r.rows["all"]["pass_k"][str(k)] for k in ks if str(k) in r.rows["all"]["pass_k"]]
            for r in runs
            if r.name not in single
        }
        blocks.append(("svg", ("pass_k", line_chart("pass^k against k (all tasks)", ks, curves, "pass^k", "k"))))
        if single:
            blocks.append(("p", f"Not drawn (one trial per instance, so pass^1 only): {', '.join(single)}."))

    blocks.append(("h2", "Cost and accuracy"))
    cost_rows = [
        [
            r.name,
            _f(r.rows["all"]["accuracy"]),
            _f(r.rows["all"]["cost"], "cost"),
            f"{r.rows['all']['tokens']:,.0f}",
            f"{r.rows['all']['turns']:.1f}",
            str(r.rows["all"]["errors"]),
        ]
        for r in runs
    ]
    blocks.append(("table", (["run", "accuracy", "cost/episode", "tokens/episode", "turns", "errors"], cost_rows)))
    priced = {r.name: (r.rows["all"]["cost"], r.rows["all"]["accuracy"]) for r in runs if r.rows["all"]["cost"]}
    if priced:
        chart = scatter_chart("Cost per episode and accuracy", priced, "cost per episode (USD)", "accuracy")
        blocks.append(("svg", ("cost_accuracy", chart)))
    else:
        blocks.append(("p", "No run has a known, non-zero cost, so there is no cost plot."))

    blocks.append(("h2", "Run them again"))
    blocks.append(
        (
            "p",
            "Each run's command, as it was given (run it again with --resume to finish a run that stopped; "
            "with another --out to repeat it):",
        )
    )
    for r in runs:
        blocks.append(
            ("code", f"# {r.name}\n{r.command}" if r.command else f"# {r.name}: its command was not recorded")
        )
    if report_command:
        blocks += [("p", "This report:"), ("code", report_command)]

    for n, r in enumerate(runs):
        blocks.append(("h2", f"Run {r.name}"))
        blocks.append(("md_table", format_table(r.rows, markdown=True)))
        versions = r.metadata.get("versions", {})
        facts = [f"directory: {r.directory}", f"wrappers: {', '.join(r.wrappers) or 'none'}"]
        if r.command:
            facts.append(f"command: {r.command}")
        if versions:
            facts.append("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v))
        manifest = (r.metadata.get("org") or {}).get("manifest") or {}
        if manifest:
            facts.append(f"org: seed {manifest.get('seed')}, scale {manifest.get('scale')}")
        blocks.append(("list", facts))
        if links is not None:
            blocks += _episode_links(links, n)
    return blocks


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _md_to_rows(markdown: str) -> tuple[list[str], list[list[str]]]:
    lines = [[c.strip() for c in line.strip().strip("|").split("|")] for line in markdown.splitlines()]
    return lines[0], lines[2:]


def build_report(
    runs: Sequence[RunSummary],
    fmt: ReportFormat = "md",
    *,
    svg_prefix: str | None = None,
    links: EpisodeLinks | None = None,
    command: str | None = None,
) -> tuple[str, dict[str, str]]:
    """The report text and its SVG files (Markdown: ``{file name: svg}`` to write beside it; HTML: none).

    Args:
        runs: The runs (see :func:`load_summaries`).
        fmt: ``md`` or ``html``.
        svg_prefix: Markdown only: the plots are referenced as ``{svg_prefix}{name}.svg``; None leaves
            the plots out (a report printed to the terminal).
        links: Links into a copy of the viewer (each run's episodes, its failed episodes one by one).
        command: The command that writes this report (quoted in it, to run it again).
    """
    if fmt not in ("md", "html"):
        raise ValueError(f"the report format must be 'md' or 'html', got {fmt!r}")
    svgs: dict[str, str] = {}
    out: list[str] = []
    for kind, value in _blocks(runs, links, command):
        if fmt == "md":
            if kind in ("h1", "h2"):
                out.append(("# " if kind == "h1" else "## ") + value)
            elif kind == "p":
                out.append(value)
            elif kind == "table":
                out.append(markdown_table(*value))
            elif kind == "md_table":
                out.append(value)
            elif kind == "list":
                out.append("\n".join(f"- {item}" for item in value))
            elif kind == "code":
                out.append(f"```\n{value}\n```")
            elif kind == "links":
                out.append("\n".join(f"- [{text}]({href})" for text, href in value))
            elif kind == "svg" and svg_prefix is not None:
                name, svg = value
                svgs[f"{svg_prefix}{name}.svg"] = svg
                out.append(f"![{name}]({svg_prefix}{name}.svg)")
        else:
            if kind in ("h1", "h2"):
                out.append(f"<{kind}>{escape(value)}</{kind}>")
            elif kind == "p":
                out.append(f"<p>{escape(value)}</p>")
            elif kind == "table":
                out.append(_html_table(*value))
            elif kind == "md_table":
                out.append(_html_table(*_md_to_rows(value)))
            elif kind == "list":
                out.append("<ul>" + "".join(f"<li>{escape(item)}</li>" for item in value) + "</ul>")
            elif kind == "code":
                out.append(f"<pre><code>{escape(value)}</code></pre>")
            elif kind == "links":
                items = "".join(f'<li><a href="{escape(href)}">{escape(text)}</a></li>' for text, href in value)
                out.append(f'<ul class="episodes">{items}</ul>')
            elif kind == "svg":
                out.append(f"<figure>{value[1]}</figure>")
    if fmt == "md":
        return "\n\n".join(out) + "\n", svgs
    style = (
        "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}figure{margin:1em 0}"
        "pre{background:#f6f8fa;padding:.6em;overflow-x:auto;white-space:pre-wrap;word-break:break-all}"
    )
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>CRMArena evaluation report</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(out) + "\n</body></html>\n"
    )
    return page, svgs


_SUFFIX_FORMATS: dict[str, ReportFormat] = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}


def write_report(
    directories: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str] | None = None,
    fmt: ReportFormat | None = None,
) -> str:
    """Write the report of one or more runs; return its text.

    Args:
        directories: Run directories.
        out: The report file (``.md`` or ``.html``); the SVG plots of a Markdown report go beside it
            as ``{stem}-{plot}.svg``, and a copy of the viewer as ``{stem}-viewer/`` (the report links to
            each run's episodes and to each failed episode there; its pages open with no server). None:
            only return the text (Markdown without plots or links).
        fmt: ``md`` or ``html`` (default: from ``out``'s suffix, else ``md``).

    Raises:
        ValueError: ``out`` ends in another suffix (``.pdf``), or one that does not match ``fmt``.
    """
    if out is not None:
        suffix = Path(out).suffix.lower()
        if suffix not in _SUFFIX_FORMATS:
            raise ValueError(f"the report file must end in .md or .html (the formats written), got {os.fspath(out)!r}")
        if fmt is not None and fmt != _SUFFIX_FORMATS[suffix]:
            raise ValueError(f"format {fmt!r} does not match the report file {os.fspath(out)!r}")
        fmt = _SUFFIX_FORMATS[suffix]
    elif fmt is None:
        fmt = "md"
    runs = load_summaries(directories)
    if out is None:
        text, _ = build_report(runs, fmt)
        return text
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ViewerData(directories)
    viewer_dir = f"{path.stem}-viewer"
    export_viewer(data, path.parent / viewer_dir)
    failed = [
        [
            (e["idx"], e["trial"], e["abbrev"], e["submitted"], e["gold"])
            for e in data.api(f"/api/runs/{source.id}/episodes")["episodes"]
            if not e["success"]
        ]
        for source in data.sources
    ]
    links = EpisodeLinks(f"{viewer_dir}/index.html", [s.id for s in data.sources], failed)
    command = shlex.join(["crmarena-gym", "report", *map(os.fspath, directories), "--out", os.fspath(out)])
    text, svgs = build_report(runs, fmt, svg_prefix=f"{path.stem}-", links=links, command=command)
    text = redact_secrets(text)  # the runs' commands and errors, as recorded before redaction, too
    for name, svg in svgs.items():
        (path.parent / name).write_text(svg + "\n", encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    return text
