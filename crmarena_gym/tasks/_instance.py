"""Task instances in the Hugging Face ``Salesforce/CRMArena`` format, plus hidden parameters."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from crmarena_gym.tasks._spec import RewardMetric, TaskSpec, get_task_spec


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
