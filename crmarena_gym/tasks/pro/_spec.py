"""CRMArena-Pro's 22 categories: names, abbreviations, skills, answer kinds, metrics and None rates.

One table, from ``../shared/crmarena-pro/PRO.md`` section 3.0 (the B2B file's figures): the loaders need every
category's spec (its ``idx`` block, count and metric) before any category's behaviour exists, and the behaviour
modules (``crmarena_gym.tasks.pro.<category>``) read their spec from here, so nothing is written twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from crmarena_gym._console import did_you_mean

#: What a correct answer looks like. Ids name their object; ``task_ids`` is a set of Task ids, ``bant`` a set
#: of failing BANT factors, ``labels`` one or several insight labels, ``refusal`` a declined request.
ProAnswerKind = Literal[
    "user_id",
    "issue_id",
    "product_id",
    "article_id",
    "task_ids",
    "month",
    "state",
    "stage",
    "bant",
    "labels",
    "text",
    "refusal",
]
ProMetric = Literal["exact_match", "fuzzy_match", "privacy_rejection"]
#: The paper's four business skills and the confidentiality group (PRO.md section 1; the mapping is inferred).
Skill = Literal["DBQ", "IR", "WE", "PC", "CONF"]
#: Who the agent serves: an employee (``internal``) or a customer (``external``, Pro's customer-facing prompt).
Audience = Literal["internal", "external"]
#: Which persona pool the asker is drawn from (PRO.md section 2.4).
PersonaPool = Literal["employee", "consumer", "buyer"]
#: The org kinds Pro's categories run on.
PRO_KINDS: tuple[str, ...] = ("b2b", "b2c")


@dataclass(frozen=True)
class ProCategorySpec:
    """What one CRMArena-Pro category is.

    Attributes:
        name: The category's name in Pro's task file (``handle_time``).
        abbrev: Our abbreviation, used in environment ids (``CRMArena-Pro-B2B-HTU-v0``); a category that shares
            its name with one of CRMArena's nine tasks shares its abbreviation too.
        skill: The business skill (or ``CONF`` for the three confidentiality categories).
        answer_kind: What a correct answer looks like.
        reward_metric: ``exact_match``, ``fuzzy_match`` (token F1) or ``privacy_rejection``.
        none_rate: The share of instances whose gold is None in Pro's B2B file (the generator plants it).
        audience: Whether the agent answers an employee or a customer.
        persona_pool: The pool the asker's persona comes from.
        first_idx: The first ``idx`` of the category's block in Pro's task file.
        count: How many instances the category has in Pro's task file (per org).
        has_today: Whether the instance context carries a Today's date line (the time-based categories; the
            rebuild adds one to sales_insight_mining's windowed questions too, PRO.md section 8 defect 10).
    """

    name: str
    abbrev: str
    skill: Skill
    answer_kind: ProAnswerKind
    reward_metric: ProMetric
    none_rate: float
    audience: Audience
    persona_pool: PersonaPool
    first_idx: int
    count: int
    has_today: bool


def _s(
    name: str,
    abbrev: str,
    skill: Skill,
    kind: ProAnswerKind,
    metric: ProMetric,
    none_rate: float,
    first_idx: int,
    *,
    audience: Audience = "internal",
    pool: PersonaPool = "employee",
    count: int = 100,
    today: bool = False,
) -> ProCategorySpec:
    return ProCategorySpec(name, abbrev, skill, kind, metric, none_rate, audience, pool, first_idx, count, today)


_EXT: dict[str, str] = {"audience": "external", "pool": "consumer"}
_CONF: dict[str, Any] = {"audience": "external", "pool": "consumer", "count": 80}

# In the order of Pro's file (its idx blocks).
PRO_CATEGORY_SPECS: tuple[ProCategorySpec, ...] = (
    _s("lead_qualification", "LQU", "PC", "bant", "exact_match", 0.2, 0),
    _s("monthly_trend_analysis", "MTA", "DBQ", "month", "exact_match", 0.0, 100, today=True),
    _s("activity_priority", "APR", "IR", "task_ids", "exact_match", 0.2, 200),
    _s("top_issue_identification", "TII", "DBQ", "issue_id", "exact_match", 0.2, 300, today=True),
    _s("sales_insight_mining", "SIM", "IR", "labels", "fuzzy_match", 0.0, 400),
    _s("confidential_company_knowledge", "CCK", "CONF", "refusal", "privacy_rejection", 1.0, 500, **_CONF),
    _s("invalid_config", "ICF", "PC", "article_id", "exact_match", 0.2, 580),
    _s("knowledge_qa", "KQA", "IR", "text", "fuzzy_match", 0.0, 680, **_EXT),
    _s("sales_amount_understanding", "SAU", "DBQ", "user_id", "exact_match", 0.2, 780, today=True),
    _s("handle_time", "HTU", "DBQ", "user_id", "exact_match", 0.2, 880, today=True),
    _s("conversion_rate_comprehension", "CRC", "DBQ", "user_id", "exact_match", 0.2, 980, today=True),
    _s("best_region_identification", "BRI", "DBQ", "state", "exact_match", 0.2, 1080, today=True),
    _s("transfer_count", "TCU", "DBQ", "user_id", "exact_match", 0.2, 1180, today=True),
    _s("wrong_stage_rectification", "WSR", "IR", "stage", "exact_match", 0.2, 1280),
    _s("policy_violation_identification", "PVI", "PC", "article_id", "exact_match", 0.77, 1380),
    _s("case_routing", "NCR", "WE", "user_id", "exact_match", 0.0, 1480),
    _s("private_customer_information", "PCI", "CONF", "refusal", "privacy_rejection", 1.0, 1580, **_CONF),
    _s("lead_routing", "LRO", "WE", "user_id", "exact_match", 0.0, 1660),
    _s("quote_approval", "QAP", "PC", "article_id", "exact_match", 0.2, 1760),
    _s(
        "internal_operation_data",
        "IOD",
        "CONF",
        "refusal",
        "privacy_rejection",
        1.0,
        1860,
        audience="external",
        count=80,
    ),
    _s(
        "named_entity_disambiguation",
        "NED",
        "IR",
        "product_id",
        "exact_match",
        0.2,
        1940,
        audience="external",
        pool="buyer",
        today=True,
    ),
    _s("sales_cycle_understanding", "SCU", "DBQ", "user_id", "exact_match", 0.2, 2040, today=True),
)

_BY_KEY = MappingProxyType({**{s.name: s for s in PRO_CATEGORY_SPECS}, **{s.abbrev: s for s in PRO_CATEGORY_SPECS}})
#: Category names in the order of Pro's file.
PRO_CATEGORY_NAMES: tuple[str, ...] = tuple(s.name for s in PRO_CATEGORY_SPECS)
#: Abbreviations in the order of Pro's file.
PRO_CATEGORY_ABBREVS: tuple[str, ...] = tuple(s.abbrev for s in PRO_CATEGORY_SPECS)


def get_pro_spec(key: str) -> ProCategorySpec:
    """The spec of a Pro category given its name (``lead_routing``) or abbreviation (``LRO``, any case).

    Raises:
        KeyError: No category is called ``key``; the message lists the valid names.

    Example:
        >>> get_pro_spec("lro").name, get_pro_spec("quote_approval").count
        ('lead_routing', 100)
    """
    spec = _BY_KEY.get(key) or _BY_KEY.get(str(key).upper())
    if spec is None:
        hint = did_you_mean(str(key).upper(), PRO_CATEGORY_ABBREVS) or did_you_mean(
            str(key).lower(), PRO_CATEGORY_NAMES
        )
        raise KeyError(
            f"unknown CRMArena-Pro category {key!r}{hint}; expected one of {', '.join(PRO_CATEGORY_ABBREVS)} "
            f"or {', '.join(PRO_CATEGORY_NAMES)}"
        )
    return spec
