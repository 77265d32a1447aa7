"""Act mode: the workflow tasks asked as work to do in the org, graded by the org's final state.

In name mode a routing task asks *who* should get the case and grades the name. In act mode the same
instance asks the agent to make the change (assign the case) through the write tools, and the episode is
graded by comparing the episode session's diff with the changes the task requires: every required change
there, and no other change to any record (:meth:`crmarena_gym.org.StateDiff.check`).

An :class:`ActPlan` says, for one instance, which records the task sets up before the agent acts (a new
case, written into the episode's session, never into the org file), the instruction, the changes required
(computed from the instance's gold, itself computed from the hidden variables), and the calls that make
them (for the oracle).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from crmarena_gym.org import ExpectedChange
from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._oracle import ToolCall

__all__ = ["ACT_TASKS", "ANSWER_MODES", "ActPlan", "AnswerMode", "SetupRecord", "act_plan"]

#: How an instance is answered: by naming the answer (``name``, the benchmark's way) or by making the change.
AnswerMode = Literal["name", "act"]
ANSWER_MODES: tuple[str, ...] = ("name", "act")
#: What an act-mode agent submits when it has made the change.
DONE = "done"


@dataclass(frozen=True)
class SetupRecord:
    """A record the task creates in the episode's session before the agent acts.

    Attributes:
        ref: The name the instruction and the expected changes use for it (``case``).
        sobject: The object's API name.
        fields: Its field values.
    """

    ref: str
    sobject: str
    fields: Mapping[str, Any]


@dataclass(frozen=True)
class ActPlan:
    """One instance in act mode.

    Attributes:
        setup: The records created before the agent acts, in order.
        instruction: The question, with ``{ref}`` placeholders for the set-up records' ids.
        expected: The required changes as JSON (``ExpectedChange.to_dict``), ids possibly ``{ref}``.
        finish: The calls that make the required changes, given the set-up records' ids (``{ref: id}``).
    """

    setup: tuple[SetupRecord, ...]
    instruction: str
    expected: tuple[dict[str, Any], ...]
    finish: Callable[[Mapping[str, str]], tuple[ToolCall, ...]]

    def question(self, refs: Mapping[str, str]) -> str:
        """The instruction with the set-up records' ids."""
        return self.instruction.format(**refs)

    def expected_changes(self, refs: Mapping[str, str]) -> tuple[ExpectedChange, ...]:
        """The required changes with the set-up records' ids."""
        return tuple(
            ExpectedChange.from_dict({**change, "id": str(change["id"]).format(**refs)}) for change in self.expected
        )


_NCR_ACT_TEMPLATES = (
    "A new case has just been logged as {case}. Route it by the case routing policy: make the agent the policy "
    "picks the case's owner.",
    "Case {case} came in a moment ago and has no owner yet. Assign it, following the case routing policy, to the "
    "agent the policy selects.",
    "Please route the new case {case}: apply the case routing policy and set the chosen agent as its owner.",
)
_ACT_ENDING = f" Change nothing else. When the change is made, submit {DONE}."


def _ncr_plan(instance: TaskInstance) -> ActPlan:
    params = instance.params
    missing = [k for k in ("case_subject", "case_description") if k not in params]
    if missing:
        raise ValueError(
            f"instance {instance.idx} ({instance.task}) has no {', '.join(missing)} in its hidden parameters: act "
            "mode needs a generated instance (the original's published instances carry none)"
        )
    text = {"Subject": params["case_subject"], "Description": params["case_description"]}
    # Unowned, as a web case waiting for routing (a session would otherwise own it: its user may be an agent).
    case = SetupRecord("case", "Case", {**text, "Status": "New", "Channel": "Web", "OwnerId": None})
    instruction = _NCR_ACT_TEMPLATES[instance.idx % len(_NCR_ACT_TEMPLATES)] + _ACT_ENDING
    gold = instance.answer

    def finish(refs: Mapping[str, str]) -> tuple[ToolCall, ...]:
        fields = {"OwnerId": gold}
        return (ToolCall("update_record", {"sobject": "Case", "record_id": refs["case"], "fields": fields}),)

    expected = ({"sobject": "Case", "id": "{case}", "op": "update", "values": {"OwnerId": gold}},)
    return ActPlan((case,), instruction, expected, finish)


#: The tasks that have an act mode, by name, and how an instance becomes its plan.
ACT_TASKS: dict[str, Callable[[TaskInstance], ActPlan]] = {"case_routing": _ncr_plan}


def act_plan(instance: TaskInstance) -> ActPlan:
    """The act-mode plan of ``instance``.

    Raises:
        ValueError: The instance's task has no act mode, or the instance lacks the hidden parameters it needs.
    """
    if instance.is_pro:
        raise ValueError(
            f"instance {instance.idx} is CRMArena-Pro's {instance.task} on a {instance.kind} org: act mode covers "
            f"CRMArena's {', '.join(sorted(ACT_TASKS))} so far (Pro's workflow categories have no act mode yet)"
        )
    build = ACT_TASKS.get(instance.task)
    if build is None:
        raise ValueError(f"task {instance.task!r} has no act mode; the tasks with one: {', '.join(sorted(ACT_TASKS))}")
    if instance.answer is None:
        raise ValueError(f"instance {instance.idx} ({instance.task}) has no answer: act mode needs a change to make")
    return build(instance)
