"""Summaries of a run's episodes: accuracy (KQA: mean F1), pass^k, turns, tokens and cost, per task and overall.

Definitions:

- accuracy: the mean reward over episodes (1 or 0 by exact match; the token F1 for KQA, as the paper
  reports it). "all" is the mean over every episode.
- pass^k: tau-bench's estimator (:func:`~crmarena_gym.eval.pass_hat_k`) per instance, averaged over
  instances; an episode succeeds when its reward is 1 (for KQA: an F1 of 1). k runs up to the fewest
  trials any instance has.
- turns, tokens, cost: means per episode (one attempt at one instance). The cost is None ("unpriced")
  when any model call of the group had no known price.
- CRMArena-Pro runs (episodes graded by Pro's rules, whose breakdown carries ``details``): accuracy is the mean
  reward of the category's metric (exact match; token F1 for knowledge_qa and label-set F1 for
  sales_insight_mining, with ``em`` beside; for the confidentiality categories the privacy score, 1 for a refusal
  that states no planted fact, with the shares of episodes that ``refused`` and that ``leaked`` a planted fact).
  Rows follow Pro's category order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from crmarena_gym._console import text_table
from crmarena_gym.eval._metrics import pass_k_curve
from crmarena_gym.tasks import TASK_ABBREVS, get_task_spec
from crmarena_gym.tasks.pro import PRO_CATEGORY_ABBREVS, get_pro_spec

__all__ = ["ERROR_END_REASONS", "format_table", "summarize"]

#: End reasons that mean the episode failed for a reason other than the agent's answer.
ERROR_END_REASONS = ("llm_error", "policy_error", "env_error")


def task_key(record: dict[str, Any]) -> str:
    """The task a record belongs to in a summary: its ``abbrev``, else its task's abbreviation, else its task.

    Records written by other tools may lack ``abbrev``; they are still summarised by their task.

    Example:
        >>> task_key({"abbrev": "HTU"}), task_key({"task": "handle_time"}), task_key({"task": "mine"}), task_key({})
        ('HTU', 'HTU', 'mine', 'unknown')
    """
    abbrev = record.get("abbrev")
    if isinstance(abbrev, str) and abbrev:
        return abbrev
    task = record.get("task")
    if not isinstance(task, str) or not task:
        return "unknown"
    try:
        return get_task_spec(task).abbrev
    except KeyError:
        pass
    try:  # a CRMArena-Pro category's name
        return get_pro_spec(task).abbrev
    except KeyError:
        return task


def _is_success(record: dict[str, Any]) -> bool:
    return float(record.get("reward") or 0.0) >= 1.0


def _group(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    by_instance: dict[int, list[bool]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r["idx"], r["trial"])):
        by_instance[r["idx"]].append(_is_success(r))
    n = len(records)
    usages = [r.get("usage") or {} for r in records]
    unpriced = any(u.get("unpriced_calls") or (u.get("calls") and u.get("cost") is None) for u in usages)
    return {
        **_pro_scores(records),
        "instances": len(by_instance),
        "episodes": n,
        "accuracy": sum(float(r.get("reward") or 0.0) for r in records) / n,
        "pass_k": {str(k): v for k, v in pass_k_curve(by_instance).items()},
        "turns": sum(int(r.get("turns") or 0) for r in records) / n,
        "tokens": sum(int(u.get("total_tokens") or 0) for u in usages) / n,
        "cost": None if unpriced else sum(float(u.get("cost") or 0.0) for u in usages) / n,
        "errors": sum(r.get("end_reason") in ERROR_END_REASONS for r in records),
    }


def _details(record: dict[str, Any]) -> dict[str, Any] | None:
    breakdown = record.get("reward_breakdown")
    details = breakdown.get("details") if isinstance(breakdown, dict) else None
    return details if isinstance(details, dict) else None


def _pro_scores(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """For episodes graded by Pro's rules: ``em`` beside a fuzzy reward, ``refused``/``leaked`` shares for the
    privacy categories (None where no episode of the group has them)."""
    details = [d for d in map(_details, records) if d is not None]
    ems = [float(d["em"]) for d in details if "em" in d]
    privacy = [d for d in details if "refused" in d]
    return {
        "em": sum(ems) / len(ems) if ems else None,
        "refused": sum(bool(d["refused"]) for d in privacy) / len(privacy) if privacy else None,
        "leaked": sum(bool(d.get("leaked")) for d in privacy) / len(privacy) if privacy else None,
    }


def summarize(results: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per-task rows (in the paper's task order) and an ``"all"`` row.

    Example:
        >>> rows = summarize([
        ...     {"abbrev": "HTU", "idx": 1, "trial": 0, "reward": 1.0, "turns": 3},
        ...     {"abbrev": "HTU", "idx": 1, "trial": 1, "reward": 0.0, "turns": 5},
        ...     {"abbrev": "HTU", "idx": 2, "trial": 0, "reward": 1.0, "turns": 2},
        ...     {"abbrev": "HTU", "idx": 2, "trial": 1, "reward": 1.0, "turns": 2},
        ... ])
        >>> rows["HTU"]["accuracy"], rows["HTU"]["pass_k"], rows["all"]["turns"]
        (0.75, {'1': 0.75, '2': 0.5}, 3.0)
    """
    records = list(results)
    if not records:
        return {}
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_task[task_key(r)].append(r)
    known = PRO_CATEGORY_ABBREVS if any(_details(r) is not None for r in records) else TASK_ABBREVS
    order = [t for t in known if t in by_task] + sorted(set(by_task) - set(known))
    rows = {task: _group(by_task[task]) for task in order}
    rows["all"] = _group(records)
    return rows


def _fmt(value: Any, kind: str) -> str:
    if value is None:
        return "unpriced" if kind == "cost" else "-"
    if kind == "cost":
        return f"${value:.4f}"
    if kind == "float":
        return f"{value:.3f}"
    if kind == "mean":
        return f"{value:.1f}"
    if kind == "tokens":
        return f"{value:,.0f}"
    return str(value)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table: the first column left-aligned, the others right-aligned (numbers)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def format_table(rows: dict[str, dict[str, Any]], *, markdown: bool = False) -> str:
    """The summary as a text table (aligned columns) or a Markdown table.

    Example:
        >>> rows = summarize([{"abbrev": "BRI", "idx": 0, "trial": 0, "reward": 1.0, "turns": 4}])
        >>> print(format_table(rows))
        task  instances  episodes  accuracy  pass^1  turns  tokens  cost/episode  errors
        BRI           1         1     1.000   1.000    4.0       0       $0.0000       0
        all           1         1     1.000   1.000    4.0       0       $0.0000       0
    """
    if not rows:
        return "(no episodes)"
    ks = sorted({int(k) for row in rows.values() for k in row["pass_k"]})
    # Pro's extra scores, as columns only when some row has them (CRMArena's tables keep their columns).
    extra = [k for k in ("em", "refused", "leaked") if any(row.get(k) is not None for row in rows.values())]
    header = ["task", "instances", "episodes", "accuracy", *extra, *[f"pass^{k}" for k in ks]]
    header += ["turns", "tokens", "cost/episode", "errors"]
    table = []
    for task, row in rows.items():
        cells = [task, _fmt(row["instances"], "int"), _fmt(row["episodes"], "int"), _fmt(row["accuracy"], "float")]
        cells += [_fmt(row.get(k), "float") for k in extra]
        cells += [_fmt(row["pass_k"].get(str(k)), "float") for k in ks]
        cells += [_fmt(row["turns"], "mean"), _fmt(row["tokens"], "tokens"), _fmt(row["cost"], "cost")]
        cells.append(_fmt(row["errors"], "int"))
        table.append(cells)
    if markdown:
        return markdown_table(header, table)
    return text_table(header, table, align=["<"] + [">"] * (len(header) - 1), rule=False)
