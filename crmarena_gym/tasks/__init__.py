"""The nine CRMArena tasks (and, in :mod:`crmarena_gym.tasks.pro`, CRMArena-Pro's 22 categories): instances,
loaders, windows, context and scoring.

Example:
    >>> from crmarena_gym.tasks import get_task_spec, score_answer
    >>> spec = get_task_spec("NCR")
    >>> score_answer("005Ws000001xSR9IAM", "005Ws000001xSR9IAM", metric=spec.reward_metric).reward
    1.0
"""

from __future__ import annotations

from crmarena_gym.tasks._act import (
    ACT_TASKS,
    ANSWER_MODES,
    CASE_TEXT_READS,
    ActPlan,
    AnswerMode,
    SetupRecord,
    act_plan,
    act_task_names,
)
from crmarena_gym.tasks._context import (
    DOMAIN_DETAILS,
    HANDLE_TIME_POLICY,
    KNOWLEDGE_GUIDANCE,
    ROUTING_POLICY,
    TRANSFER_POLICY,
    todays_date_line,
)
from crmarena_gym.tasks._default import (
    DEFAULT_PER_TASK,
    DEFAULT_TASK_SEED,
    default_tasks,
    task_cache_path,
    training_tasks,
)
from crmarena_gym.tasks._generate import (
    ANSWER_CAP,
    DEFAULT_DISTRIBUTION,
    DISTRIBUTIONS,
    DRAWERS,
    TASK_GENERATOR_VERSION,
    Competition,
    Distribution,
    TaskGenerationError,
    competition_shortfall,
    generate_tasks,
    instance_key,
    measure_competition,
)
from crmarena_gym.tasks._instance import TaskInstance, TaskMetadata, first_per_task
from crmarena_gym.tasks._interactive import (
    ASKING,
    SLOT_WORDS,
    SPLITTERS,
    Criterion,
    InteractiveSplit,
    interactive_split,
    register_splitter,
)
from crmarena_gym.tasks._loader import TaskFileError, load_tasks, save_tasks
from crmarena_gym.tasks._new_case import new_case_lines, read_new_case
from crmarena_gym.tasks._oracle import (
    ORACLES,
    OracleError,
    OracleTrace,
    SolverCalls,
    ToolCall,
    oracle_trace,
    run_solver,
    solve,
)
from crmarena_gym.tasks._org_check import missing_gold_records
from crmarena_gym.tasks._original import (
    ORIGINAL_DATASET,
    OriginalDataError,
    fetch_original,
    schema_from_rows,
    tasks_from_rows,
)
from crmarena_gym.tasks._periods import (
    MONTH_NAMES,
    SEASONS,
    Window,
    add_months,
    month_window,
    past_window,
    quarter_window,
    season_window,
)
from crmarena_gym.tasks._perturbed import RecomputedTasks, recompute_tasks
from crmarena_gym.tasks._schema_names import RenamedCalls, SchemaNames
from crmarena_gym.tasks._scoring import (
    NONE_ANSWER,
    Score,
    extract_answer,
    normalize_answer,
    score_answer,
    token_f1,
)
from crmarena_gym.tasks._spec import (
    PRO_ORG_KINDS,
    TASK_ABBREVS,
    TASK_NAMES,
    TASK_SPECS,
    OrgKind,
    TaskSpec,
    get_task_spec,
    spec_for,
)
from crmarena_gym.tasks._summary import FamilySummary, format_summary, summarize_tasks

__all__ = [
    "ACT_TASKS",
    "ANSWER_CAP",
    "ANSWER_MODES",
    "ASKING",
    "CASE_TEXT_READS",
    "DEFAULT_DISTRIBUTION",
    "DEFAULT_PER_TASK",
    "DEFAULT_TASK_SEED",
    "DISTRIBUTIONS",
    "DOMAIN_DETAILS",
    "DRAWERS",
    "HANDLE_TIME_POLICY",
    "KNOWLEDGE_GUIDANCE",
    "MONTH_NAMES",
    "NONE_ANSWER",
    "ORACLES",
    "ORIGINAL_DATASET",
    "PRO_ORG_KINDS",
    "ROUTING_POLICY",
    "SEASONS",
    "SLOT_WORDS",
    "SPLITTERS",
    "TASK_ABBREVS",
    "TASK_GENERATOR_VERSION",
    "TASK_NAMES",
    "TASK_SPECS",
    "TRANSFER_POLICY",
    "ActPlan",
    "AnswerMode",
    "Competition",
    "Criterion",
    "Distribution",
    "FamilySummary",
    "InteractiveSplit",
    "OracleError",
    "OracleTrace",
    "OrgKind",
    "OriginalDataError",
    "RecomputedTasks",
    "RenamedCalls",
    "SchemaNames",
    "Score",
    "SetupRecord",
    "SolverCalls",
    "TaskFileError",
    "TaskGenerationError",
    "TaskInstance",
    "TaskMetadata",
    "TaskSpec",
    "ToolCall",
    "Window",
    "act_plan",
    "act_task_names",
    "add_months",
    "competition_shortfall",
    "default_tasks",
    "extract_answer",
    "fetch_original",
    "first_per_task",
    "format_summary",
    "generate_tasks",
    "get_task_spec",
    "instance_key",
    "interactive_split",
    "load_tasks",
    "measure_competition",
    "missing_gold_records",
    "month_window",
    "new_case_lines",
    "normalize_answer",
    "oracle_trace",
    "past_window",
    "quarter_window",
    "read_new_case",
    "recompute_tasks",
    "register_splitter",
    "run_solver",
    "save_tasks",
    "schema_from_rows",
    "score_answer",
    "season_window",
    "solve",
    "spec_for",
    "summarize_tasks",
    "task_cache_path",
    "tasks_from_rows",
    "todays_date_line",
    "token_f1",
    "training_tasks",
]
