"""Task instances in the Hugging Face ``Salesforce/CRMArena`` and ``Salesforce/CRMArenaPro`` formats, plus hidden
parameters.

An instance carries the org kind it was made for (``service``, the default, for CRMArena's nine tasks; ``b2b`` or
``b2c`` for CRMArena-Pro's 22 categories), and its task name is resolved in that suite: ``handle_time`` is a
CRMArena task and a Pro category. A Pro instance's gold is one value, a set of values (a sorted tuple: Task ids,
BANT factors, insight labels) or None; Pro's file stores it as a JSON list (``[null]`` for None), which
:meth:`TaskInstance.to_public_dict` gives back.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from crmarena_gym.tasks._spec import InstanceMetric, OrgKind, TaskSpec, get_task_spec, spec_for

if TYPE_CHECKING:
    from crmarena_gym.tasks.pro._spec import ProCategorySpec

#: A gold answer: one value, a set of values (a sorted tuple of at least two, Pro's set-valued categories), or
#: None (the question has no answer).
Answer = str | tuple[str, ...] | None
# Pro's answer kinds whose gold is a set of labels that Pro's file joins with commas into one string (PRO.md
# section 8, defects 2-3): split, de-duplicated and sorted when read.
_JOINED_KINDS = frozenset({"bant", "labels"})

# The context line that gives an instance its date (see :func:`~crmarena_gym.tasks.todays_date_line`).
_TODAY_RE = re.compile(r"Today's date:\s*(\d{4}-\d{2}-\d{2})")


class TaskMetadata(BaseModel):
    """The context shown to an agent with the query.

    Attributes:
        required: Task context the agent needs (policies, today's date, ids).
        optional: Domain details (quarter, season and period definitions), shown in the aided mode.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    required: str = ""
    optional: str = ""


class TaskInstance(BaseModel):
    """One task instance.

    The fields but ``persona``, ``params`` and ``kind`` are the public format of the original benchmark
    (CRMArena); Pro's rows add ``persona``. ``params`` holds the hidden parameters the gold answer was computed
    from (``today``, the window's ``start`` and ``end``, ``product_id`` ...; for Pro's confidentiality
    categories, ``leak_facts``) and is never shown to an agent. ``kind`` is the org kind the instance was made
    for; a record without one is a CRMArena (``service``) instance unless it is in Pro's format (a list answer,
    or a task name only Pro has), which is read as a ``b2b`` instance (Pro's published file is its B2B split).

    Example:
        >>> inst = TaskInstance(idx=7, task="HTU", query="Who ...?", answer=None,
        ...                     metadata={"required": "- Today's date: 2021-03-02"})
        >>> inst.task, inst.reward_metric, inst.persona, inst.kind
        ('handle_time', 'exact_match', 'service manager', 'service')
        >>> pro = TaskInstance(idx=3, task="lead_qualification", query="Which?", answer=["Need, Authority"])
        >>> pro.kind, pro.answer, pro.to_public_dict()["answer"]
        ('b2b', ('Authority', 'Need'), ['Authority', 'Need'])
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    idx: int = Field(ge=0)
    task: str
    query: str = Field(min_length=1)
    answer: Answer
    metadata: TaskMetadata = TaskMetadata()
    reward_metric: InstanceMetric | None = None
    persona: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    kind: OrgKind = "service"

    @model_validator(mode="before")
    @classmethod
    def _fill_from_spec(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("task"), str):
            return data
        data = dict(data)
        kind = data.get("kind")
        if kind is None:
            kind = "b2b" if is_pro_record(data) else "service"
            data["kind"] = kind
        elif kind not in ("service", "b2b", "b2c"):
            return data  # the field's own check names the valid kinds
        try:
            spec = spec_for(data["task"], kind)
        except KeyError as err:
            suite = "CRMArena" if kind == "service" else f"CRMArena-Pro ({kind} org)"
            raise ValueError(f"{suite}: {err.args[0]}") from None
        data["task"] = spec.name
        if data.get("reward_metric") is None:
            data["reward_metric"] = spec.reward_metric
        elif data["reward_metric"] != spec.reward_metric:
            raise ValueError(f"task {spec.name!r} is scored by {spec.reward_metric!r}, not {data['reward_metric']!r}")
        if "answer" in data:
            data["answer"] = _read_answer(data["answer"], kind, spec.answer_kind)
        if data.get("persona") is None and kind == "service":
            data["persona"] = spec.persona  # type: ignore[union-attr]
        return data

    @model_validator(mode="after")
    def _check_today(self) -> TaskInstance:
        # A date that cannot be read would fail every reset of the instance: refuse it when it loads.
        if "today" in self.params:
            _iso_date(self.params["today"], "params.today")
        match = _TODAY_RE.search(self.metadata.required)
        if match:
            _iso_date(match.group(1), 'metadata.required (its "Today\'s date:" line)')
        return self

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if self.kind == "service":  # CRMArena's records keep their format
            data.pop("kind", None)
        return data

    @property
    def today(self) -> dt.date | None:
        """The instance's date: ``params["today"]``, else the context's ``Today's date:`` line, else None.

        Example:
            >>> TaskInstance(idx=0, task="HTU", query="Who?", answer=None,
            ...              metadata={"required": "- Today's date: 2021-03-02"}).today
            datetime.date(2021, 3, 2)
        """
        if "today" in self.params:
            return _iso_date(self.params["today"], "params.today")
        match = _TODAY_RE.search(self.metadata.required)
        return _iso_date(match.group(1), "metadata.required") if match else None

    @property
    def is_pro(self) -> bool:
        """Whether this is a CRMArena-Pro instance (made for a ``b2b`` or ``b2c`` org)."""
        return self.kind != "service"

    @property
    def spec(self) -> TaskSpec | ProCategorySpec:
        """The spec of this instance's task in its suite: a :class:`TaskSpec`, or a Pro category's spec."""
        return spec_for(self.task, self.kind)

    @property
    def abbrev(self) -> str:
        """The task's abbreviation (``NCR``)."""
        return self.spec.abbrev

    @property
    def answerable(self) -> bool:
        """Whether the question has an answer (gold not ``None``)."""
        return self.answer is not None

    @property
    def answer_values(self) -> tuple[str, ...]:
        """The gold as a tuple of values: empty for None, one value, or the set's values.

        Example:
            >>> TaskInstance(idx=0, task="KQA", query="?", answer="30 days").answer_values
            ('30 days',)
        """
        if self.answer is None:
            return ()
        return (self.answer,) if isinstance(self.answer, str) else self.answer

    def to_public_dict(self) -> dict[str, Any]:
        """The instance in its suite's public file format, without ``params``.

        CRMArena's rows have no ``persona``; Pro's rows have one, and their ``answer`` is a JSON list (``[null]``
        for None), as in Pro's published file.
        """
        if not self.is_pro:
            return self.model_dump(include={"idx", "task", "query", "answer", "metadata", "reward_metric"})
        return {
            "idx": self.idx,
            "task": self.task,
            "query": self.query,
            "answer": list(self.answer_values) or [None],
            "persona": self.persona,
            "metadata": self.metadata.model_dump(),
            "reward_metric": self.reward_metric,
        }


def is_pro_record(data: dict[str, Any]) -> bool:
    """Whether a record without a kind is in Pro's format: a list answer, or a task name only Pro has.

    Example:
        >>> is_pro_record({"task": "handle_time", "answer": [None]}), is_pro_record({"task": "HTU", "answer": None})
        (True, False)
    """
    if isinstance(data.get("answer"), list | tuple):
        return True
    try:
        get_task_spec(data["task"])
    except KeyError:
        try:
            spec_for(data["task"], "b2b")
        except KeyError:
            return False
        return True
    return False


def _read_answer(answer: Any, kind: str, answer_kind: str) -> Any:
    """A gold as the model keeps it (see :data:`Answer`); anything it cannot be is passed on for the field's
    check, or refused with a message saying why."""
    if kind == "service":
        if isinstance(answer, list | tuple):
            raise ValueError("a CRMArena task's answer is one value or null, not a list (a Pro row needs a Pro task)")
        return answer
    if answer is None or isinstance(answer, str):
        values: list[Any] = [answer]
    elif isinstance(answer, list | tuple):
        values = list(answer)
    else:
        return answer
    if not values:
        raise ValueError("the answer list is empty; a question without an answer has [null]")
    if any(v is None for v in values):
        if len(values) > 1:
            raise ValueError(f"the answer {answer!r} mixes null with values")
        return None
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"the answer's values must be text, got {answer!r}")
    if answer_kind in _JOINED_KINDS:
        values = [part.strip() for v in values for part in v.split(",")]
    if answer_kind == "text":
        values = [v.strip() for v in values]
    distinct = sorted({v for v in values if v.strip()})
    if not distinct:
        raise ValueError(f"the answer {answer!r} holds no value")
    return distinct[0] if len(distinct) == 1 else tuple(distinct)


def first_per_task(instances: Iterable[TaskInstance], per_task: int) -> list[TaskInstance]:
    """The first ``per_task`` instances of each task, in their order.

    Example:
        >>> insts = [TaskInstance(idx=i, task=t, query="?", answer=None) for i, t in enumerate(["HTU", "HTU", "KQA"])]
        >>> [i.idx for i in first_per_task(insts, 1)]
        [0, 2]
    """
    seen: Counter[str] = Counter()
    kept = []
    for inst in instances:
        seen[inst.task] += 1
        if seen[inst.task] <= per_task:
            kept.append(inst)
    return kept


def _iso_date(value: Any, field: str) -> dt.date:
    """``value`` as a date (an ISO ``YYYY-MM-DD`` text or a date); a ValueError names ``field``."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise ValueError(f"{field} holds {value!r}, which is not a date (YYYY-MM-DD)") from None
