"""The nine CRMArena tasks: instances, loaders, windows, context and scoring.

Example:
    >>> from crmarena_gym.tasks import get_task_spec, score_answer
    >>> spec = get_task_spec("NCR")
    >>> score_answer("005Ws000001xSR9IAM", "005Ws000001xSR9IAM", metric=spec.reward_metric).reward
    1.0
"""

from __future__ import annotations

from crmarena_gym.tasks._context import (
    DOMAIN_DETAILS,
    HANDLE_TIME_POLICY,
    KNOWLEDGE_GUIDANCE,
    ROUTING_POLICY,
    TRANSFER_POLICY,
    todays_date_line,
)
from crmarena_gym.tasks._instance import TaskInstance, TaskMetadata
from crmarena_gym.tasks._loader import TaskFileError, load_tasks, save_tasks
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
from crmarena_gym.tasks._scoring import (
    NONE_ANSWER,
    Score,
    extract_answer,
    normalize_answer,
    score_answer,
    token_f1,
)
from crmarena_gym.tasks._spec import TASK_ABBREVS, TASK_NAMES, TASK_SPECS, TaskSpec, get_task_spec

__all__ = [
    "DOMAIN_DETAILS",
    "HANDLE_TIME_POLICY",
    "KNOWLEDGE_GUIDANCE",
    "MONTH_NAMES",
    "NONE_ANSWER",
    "ROUTING_POLICY",
    "SEASONS",
    "TASK_ABBREVS",
    "TASK_NAMES",
    "TASK_SPECS",
    "TRANSFER_POLICY",
    "Score",
    "TaskFileError",
    "TaskInstance",
    "TaskMetadata",
    "TaskSpec",
    "Window",
    "add_months",
    "extract_answer",
    "get_task_spec",
    "load_tasks",
    "month_window",
    "normalize_answer",
    "past_window",
    "quarter_window",
    "save_tasks",
    "score_answer",
    "season_window",
    "todays_date_line",
    "token_f1",
]
