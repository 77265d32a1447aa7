"""Evaluation: the runner (resumable runs of a policy over a task set), metrics and reports.

Example:
    >>> from crmarena_gym.eval import pass_k_curve
    >>> pass_k_curve({"a": [True, True], "b": [True, False]})
    {1: 0.75, 2: 0.5}
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from crmarena_gym._files import LockHeldError
from crmarena_gym.eval._metrics import bootstrap_ci, pass_hat_k, pass_k_curve
from crmarena_gym.eval._progress import ProgressBar
from crmarena_gym.eval._results import (
    LOCK_FILE,
    METADATA_FILE,
    RESULTS_FILE,
    ResultsWriter,
    load_run,
    read_results,
    rewrite_results,
    write_metadata,
)
from crmarena_gym.eval._runner import (
    EpisodeCancelled,
    EvalRun,
    PolicyFactory,
    RunStoppedError,
    apply_wrappers,
    check_wrappers,
    episode_seed,
    evaluate,
    run_episode,
    select_instances,
)
from crmarena_gym.eval._summary import ERROR_END_REASONS, format_table, summarize
from crmarena_gym.eval._viewer import RESULTS_FORMAT, ViewerData, ViewerError

# Experiments, reports and the viewer's server are imported on first use: an evaluation needs none of
# them, and their imports (pydantic models, tomllib, http.server) cost every ``crmarena-gym eval`` ~10 ms.
_LAZY = {
    "crmarena_gym.eval._experiment": (
        "AXES",
        "Cell",
        "ExperimentSpec",
        "PolicyEntry",
        "Sweep",
        "experiment_cells",
        "load_experiment",
        "run_experiment",
    ),
    "crmarena_gym.eval._experiment_report": ("write_experiment_report",),
    "crmarena_gym.eval._report": ("RunSummary", "build_report", "load_summaries", "write_report"),
    "crmarena_gym.eval._view_server": ("VIEWER_ASSETS", "export_viewer", "make_viewer_server"),
}
_LAZY_MODULE = {name: module for module, names in _LAZY.items() for name in names}

if TYPE_CHECKING:
    from crmarena_gym.eval._experiment import (
        AXES,
        Cell,
        ExperimentSpec,
        PolicyEntry,
        Sweep,
        experiment_cells,
        load_experiment,
        run_experiment,
    )
    from crmarena_gym.eval._experiment_report import write_experiment_report
    from crmarena_gym.eval._report import RunSummary, build_report, load_summaries, write_report
    from crmarena_gym.eval._view_server import VIEWER_ASSETS, export_viewer, make_viewer_server


def __getattr__(name: str) -> Any:
    module = _LAZY_MODULE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_MODULE))


__all__ = [
    "AXES",
    "ERROR_END_REASONS",
    "LOCK_FILE",
    "METADATA_FILE",
    "RESULTS_FILE",
    "RESULTS_FORMAT",
    "VIEWER_ASSETS",
    "Cell",
    "EpisodeCancelled",
    "EvalRun",
    "ExperimentSpec",
    "LockHeldError",
    "PolicyEntry",
    "PolicyFactory",
    "ProgressBar",
    "ResultsWriter",
    "RunStoppedError",
    "RunSummary",
    "Sweep",
    "ViewerData",
    "ViewerError",
    "apply_wrappers",
    "bootstrap_ci",
    "build_report",
    "check_wrappers",
    "episode_seed",
    "evaluate",
    "experiment_cells",
    "export_viewer",
    "format_table",
    "load_experiment",
    "load_run",
    "load_summaries",
    "make_viewer_server",
    "pass_hat_k",
    "pass_k_curve",
    "read_results",
    "rewrite_results",
    "run_episode",
    "run_experiment",
    "select_instances",
    "summarize",
    "write_experiment_report",
    "write_metadata",
    "write_report",
]
