"""CRMArena-Pro's 22 categories over the B2B and B2C orgs: specs, one module per category, and the registry.

Beside them, the framework that makes them a benchmark: generation (:func:`generate_pro_tasks`: None golds at
each category's rate, no gold above 45%, personas, the Domain Details, Pro's idx blocks; :func:`default_pro_tasks`,
cached per org), grading without an LLM (:func:`score_pro_answer`, :func:`score_instance`), the agent's role per
audience (:func:`pro_role`) and the oracle (:func:`pro_oracle_trace`). Each category also declares its
conversation form (``Category.split``: what the user says first, what it holds back; see
:func:`~crmarena_gym.tasks.interactive_split` and :mod:`crmarena_gym.tasks.pro._conversation`).

Example:
    >>> from crmarena_gym.tasks.pro import get_pro_spec
    >>> get_pro_spec("LRO").name
    'lead_routing'
"""

from __future__ import annotations

from crmarena_gym.tasks.pro._category import Category, ProAnswer, ProDraw, ProFacts, ProQuestion
from crmarena_gym.tasks.pro._context import PERSONA_POOLS, PRO_DOMAIN_DETAILS
from crmarena_gym.tasks.pro._generate import (
    DEFAULT_PRO_PER_TASK,
    PRO_ANSWER_CAP,
    PRO_TASK_GENERATOR_VERSION,
    default_pro_tasks,
    generate_pro_tasks,
    pro_instance_key,
)
from crmarena_gym.tasks.pro._grading import (
    Extraction,
    extract_pro_answer,
    is_refusal,
    leaked_facts,
    score_instance,
    score_pro_answer,
)
from crmarena_gym.tasks.pro._oracle import QUERY_TOOLS, format_pro_answer, pro_oracle_trace
from crmarena_gym.tasks.pro._prompt import PRO_ANSWER_KINDS, PRO_TASK_FUNCTIONS, pro_answer_rule, pro_role
from crmarena_gym.tasks.pro._registry import implemented_categories, pro_category
from crmarena_gym.tasks.pro._spec import (
    PRO_CATEGORY_ABBREVS,
    PRO_CATEGORY_NAMES,
    PRO_CATEGORY_SPECS,
    PRO_KINDS,
    ProAnswerKind,
    ProCategorySpec,
    ProMetric,
    get_pro_spec,
)

__all__ = [
    "DEFAULT_PRO_PER_TASK",
    "PERSONA_POOLS",
    "PRO_ANSWER_CAP",
    "PRO_ANSWER_KINDS",
    "PRO_CATEGORY_ABBREVS",
    "PRO_CATEGORY_NAMES",
    "PRO_CATEGORY_SPECS",
    "PRO_DOMAIN_DETAILS",
    "PRO_KINDS",
    "PRO_TASK_FUNCTIONS",
    "PRO_TASK_GENERATOR_VERSION",
    "QUERY_TOOLS",
    "Category",
    "Extraction",
    "ProAnswer",
    "ProAnswerKind",
    "ProCategorySpec",
    "ProDraw",
    "ProFacts",
    "ProMetric",
    "ProQuestion",
    "default_pro_tasks",
    "extract_pro_answer",
    "format_pro_answer",
    "generate_pro_tasks",
    "get_pro_spec",
    "implemented_categories",
    "is_refusal",
    "leaked_facts",
    "pro_answer_rule",
    "pro_category",
    "pro_instance_key",
    "pro_oracle_trace",
    "pro_role",
    "score_instance",
    "score_pro_answer",
]
