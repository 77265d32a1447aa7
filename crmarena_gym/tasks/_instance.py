"""Task instances in the Hugging Face ``Salesforce/CRMArena`` format, plus hidden parameters."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from crmarena_gym.tasks._spec import RewardMetric, TaskSpec, get_task_spec

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

    The first six fields are the public format of the original benchmark; ``persona`` and ``params``
    are ours. ``params`` holds the hidden parameters the gold answer was computed from (``today``,
    the window's ``start`` and ``end``, ``product_id`` ...) and is never shown to an agent.

    Example:
        >>> inst = TaskInstance(idx=7, task="HTU", query="Who ...?", answer=None,
        ...                     metadata={"required": "- Today's date: 2021-03-02"})
        >>> inst.task, inst.reward_metric, inst.persona
        ('handle_time', 'exact_match', 'service manager')
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    idx: int = Field(ge=0)
    task: str
    query: str = Field(min_length=1)
    answer: str | None
    metadata: TaskMetadata = TaskMetadata()
    reward_metric: RewardMetric | None = None
    persona: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        try:
            return get_task_spec(value).name
        except KeyError as err:
            raise ValueError(err.args[0]) from None

    @model_validator(mode="before")
    @classmethod
    def _fill_from_spec(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("task"), str):
            return data
        try:
            spec = get_task_spec(data["task"])
        except KeyError:
            return data  # the field validator reports the unknown task
        data = dict(data)
        if data.get("reward_metric") is None:
            data["reward_metric"] = spec.reward_metric
        elif data["reward_metric"] != spec.reward_metric:
            raise ValueError(f"task {spec.name!r} is scored by {spec.reward_metric!r}, not {data['reward_metric']!r}")
        if data.get("persona") is None:
            data["persona"] = spec.persona
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
    def spec(self) -> TaskSpec:
        """The :class:`TaskSpec` of this instance's task."""
        return get_task_spec(self.task)

    @property
    def abbrev(self) -> str:
        """The task's abbreviation (``NCR``)."""
        return self.spec.abbrev

    @property
    def answerable(self) -> bool:
        """Whether the question has an answer (gold not ``None``)."""
        return self.answer is not None

    def to_public_dict(self) -> dict[str, Any]:
        """The instance as the original's file format has it (no ``persona`` or ``params``)."""
        return self.model_dump(include={"idx", "task", "query", "answer", "metadata", "reward_metric"})


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
