"""The nine CRMArena tasks: names, abbreviations, personas and how answers are scored."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from crmarena_gym._console import did_you_mean

if TYPE_CHECKING:
    from crmarena_gym.tasks.pro._spec import ProCategorySpec

AnswerKind = Literal["text", "month", "issue_id", "user_id", "product_id", "article_id", "state"]
RewardMetric = Literal["exact_match", "fuzzy_match"]
#: The metrics an instance of any suite may carry: CRMArena's two and CRMArena-Pro's ``privacy_rejection``.
InstanceMetric = Literal["exact_match", "fuzzy_match", "privacy_rejection"]
#: The org kind an instance was made for: CRMArena's service org, or CRMArena-Pro's B2B or B2C org. The nine
#: CRMArena task names recur among Pro's categories (``handle_time`` is both), so the kind says which suite a
#: task name is resolved in.
OrgKind = Literal["service", "b2b", "b2c"]
#: The org kinds whose tasks are CRMArena-Pro's categories.
PRO_ORG_KINDS: tuple[str, ...] = ("b2b", "b2c")


@dataclass(frozen=True)
class TaskSpec:
    """What one task is.

    Attributes:
        abbrev: The paper's abbreviation (``NCR``), used in environment ids.
        name: The task name in instance files (``case_routing``).
        persona: Who asks: a service agent, analyst or manager.
        answer_kind: What a correct answer looks like (an id of which object, a month, a state).
        reward_metric: ``exact_match``, or ``fuzzy_match`` (token F1) for knowledge questions.
        can_be_unanswerable: Whether some instances have no answer (gold ``None``).
        first_idx: The first ``idx`` of the task in the original's numbering (130 per task).
    """

    abbrev: str
    name: str
    persona: str
    answer_kind: AnswerKind
    reward_metric: RewardMetric
    can_be_unanswerable: bool
    first_idx: int


TASK_SPECS: tuple[TaskSpec, ...] = (
    TaskSpec("KQA", "knowledge_qa", "service agent", "text", "fuzzy_match", False, 0),
    TaskSpec("MTA", "monthly_trend_analysis", "service analyst", "month", "exact_match", False, 130),
    TaskSpec("TII", "top_issue_identification", "service analyst", "issue_id", "exact_match", True, 260),
    TaskSpec("NCR", "case_routing", "service manager", "user_id", "exact_match", False, 390),
    TaskSpec("NED", "named_entity_disambiguation", "service agent", "product_id", "exact_match", True, 520),
    TaskSpec("HTU", "handle_time", "service manager", "user_id", "exact_match", True, 650),
    TaskSpec("TCU", "transfer_count", "service manager", "user_id", "exact_match", True, 780),
    TaskSpec("PVI", "policy_violation_identification", "service agent", "article_id", "exact_match", True, 910),
    TaskSpec("BRI", "best_region_identification", "service analyst", "state", "exact_match", False, 1040),
)

_BY_KEY = MappingProxyType({**{s.name: s for s in TASK_SPECS}, **{s.abbrev: s for s in TASK_SPECS}})

#: Task names in the original's order.
TASK_NAMES: tuple[str, ...] = tuple(s.name for s in TASK_SPECS)
#: Abbreviations in the original's order.
TASK_ABBREVS: tuple[str, ...] = tuple(s.abbrev for s in TASK_SPECS)


def get_task_spec(key: str) -> TaskSpec:
    """The spec of a task given its name (``handle_time``) or abbreviation (``HTU``, any case).

    Raises:
        KeyError: No task is called ``key``; the message lists the valid names.

    Example:
        >>> get_task_spec("htu").name
        'handle_time'
    """
    spec = _BY_KEY.get(key) or _BY_KEY.get(key.upper())
    if spec is None:
        hint = did_you_mean(str(key).upper(), TASK_ABBREVS) or did_you_mean(str(key).lower(), TASK_NAMES)
        raise KeyError(
            f"unknown task {key!r}{hint}; expected one of {', '.join(TASK_ABBREVS)} or {', '.join(TASK_NAMES)}"
        )
    return spec


def spec_for(task: str, kind: str = "service") -> TaskSpec | ProCategorySpec:
    """The spec of ``task`` in the suite of org ``kind``: CRMArena's nine for ``service``, Pro's 22 otherwise.

    Raises:
        KeyError: The suite has no task called ``task`` (the message lists the valid names), or ``kind`` is
            not an org kind.

    Example:
        >>> type(spec_for("handle_time")).__name__, type(spec_for("handle_time", "b2b")).__name__
        ('TaskSpec', 'ProCategorySpec')
    """
    if kind == "service":
        return get_task_spec(task)
    if kind not in PRO_ORG_KINDS:
        raise KeyError(f"unknown org kind {kind!r}; expected service, b2b or b2c")
    # Imported here: the Pro package imports the instance model, which imports this module.
    from crmarena_gym.tasks.pro._spec import get_pro_spec

    return get_pro_spec(task)
