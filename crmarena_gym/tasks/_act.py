"""Act mode: the workflow tasks asked as work to do in the org, graded by the org's final state.

In name mode a routing task asks *who* should get the case and grades the name. In act mode the same
instance asks the agent to make the change (assign the case) through the write tools, and the episode is
graded by comparing the episode session's diff with the changes the task requires: every required change
there, and no other change to any record (:meth:`crmarena_gym.org.StateDiff.check`).

An :class:`ActPlan` says, for one instance, which records the task sets up before the agent acts (a new
case, written into the episode's session, never into the org file), the instruction, the changes required
(computed from the instance's gold, itself computed from the hidden variables), and the calls that make
them (for the oracle, which plans them from its own solved answer).

:data:`ACT_TASKS` is keyed by org kind and task name: CRMArena's case_routing (NCR, on the service org) and
CRMArena-Pro's five workflow categories on the B2B and B2C orgs (:mod:`crmarena_gym.tasks.pro._act`), whose
names overlap (Pro has a case_routing too).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from crmarena_gym.tasks._act_plan import ANSWER_MODES, CASE_TEXT_READS, DONE, ActPlan, AnswerMode, SetupRecord
from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._oracle import ToolCall
from crmarena_gym.tasks._spec import PRO_ORG_KINDS
from crmarena_gym.tasks.pro._act import PRO_ACT_PLANS

__all__ = [
    "ACT_TASKS",
    "ANSWER_MODES",
    "CASE_TEXT_READS",
    "ActPlan",
    "AnswerMode",
    "SetupRecord",
    "act_plan",
    "act_task_names",
]

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
    case = SetupRecord(
        "case", "Case", {**text, "Status": "New", "Channel": "Web", "OwnerId": None}, reads=CASE_TEXT_READS
    )
    instruction = _NCR_ACT_TEMPLATES[instance.idx % len(_NCR_ACT_TEMPLATES)] + _ACT_ENDING
    gold = instance.answer

    def finish(refs: Mapping[str, str]) -> tuple[ToolCall, ...]:
        fields = {"OwnerId": gold}
        return (ToolCall("update_record", {"sobject": "Case", "record_id": refs["case"], "fields": fields}),)

    expected = ({"sobject": "Case", "id": "{case}", "op": "update", "values": {"OwnerId": gold}},)
    return ActPlan((case,), instruction, expected, finish)


#: The tasks that have an act mode, by org kind (``service`` for CRMArena, ``b2b``/``b2c`` for Pro) and task name
#: (Pro's case_routing and CRMArena's share a name), and how an instance (with a read-only connection to its
#: org, from which a plan computes the values its changes start from) becomes its plan.
ACT_TASKS: dict[tuple[str, str], Callable[[TaskInstance, sqlite3.Connection], ActPlan]] = {
    ("service", "case_routing"): lambda instance, _conn: _ncr_plan(instance),
    **{(kind, name): build for kind in PRO_ORG_KINDS for name, build in PRO_ACT_PLANS.items()},
}


def act_task_names(kind: str | None = None) -> list[str]:
    """The names of the tasks with an act mode on orgs of ``kind`` (every kind's when None), sorted."""
    return sorted({name for k, name in ACT_TASKS if kind is None or k == kind})


def act_plan(instance: TaskInstance, org: Any = None) -> ActPlan:
    """The act-mode plan of ``instance``.

    Args:
        instance: A generated instance of a task with an act mode (:data:`ACT_TASKS`).
        org: Its org (a :class:`~crmarena_gym.org.LocalOrg` or a database path): a Pro plan reads the values its
            changes start from (a quote's lines, the configuration rules); CRMArena's needs none.

    Raises:
        ValueError: The instance's task has no act mode, the instance lacks the hidden parameters it needs, or
            a Pro plan has no org file to read.
    """
    build = ACT_TASKS.get((instance.kind, instance.task))
    if build is None:
        suite = "CRMArena's" if instance.kind == "service" else f"CRMArena-Pro's ({instance.kind})"
        raise ValueError(
            f"task {instance.task!r} has no act mode in {suite} tasks; the tasks with one: "
            f"{', '.join(act_task_names(instance.kind)) or 'none'}"
        )
    if not instance.is_pro:
        if instance.answer is None:
            raise ValueError(
                f"instance {instance.idx} ({instance.task}) has no answer: act mode needs a change to make"
            )
        return build(instance, None)  # type: ignore[arg-type]
    path = getattr(org, "path", org)
    if path is None:
        raise ValueError(f"act mode on a Pro instance ({instance.task}) reads its org: pass the org (its file)")
    conn = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
    try:
        return build(instance, conn)
    except sqlite3.Error as err:  # not a Pro org file as generated (a perturbed schema renames what plans read)
        raise ValueError(
            f"instance {instance.idx} ({instance.task}): its act plan cannot read the org file {path}: {err}"
        ) from err
    finally:
        conn.close()
