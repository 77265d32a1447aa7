"""The shape of an act-mode instance: the records a task sets up, the instruction, the required changes, the
calls that make them (see :mod:`crmarena_gym.tasks._act`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from crmarena_gym.org import ExpectedChange
from crmarena_gym.tasks._oracle import ToolCall

__all__ = ["ANSWER_MODES", "CASE_TEXT_READS", "DONE", "ActPlan", "AnswerMode", "SetupRecord"]

#: How an instance is answered: by naming the answer (``name``, the benchmark's way) or by making the change.
AnswerMode = Literal["name", "act"]
ANSWER_MODES: tuple[str, ...] = ("name", "act")
#: What an act-mode agent submits when it has made the change.
DONE = "done"
#: What a new case's question leaves out (CRMArena's and Pro's routing): its text, the case_subject and
#: case_description parameters.
CASE_TEXT_READS: Mapping[str, str | None] = MappingProxyType(
    {"Subject": "case_subject", "Description": "case_description"}
)


@dataclass(frozen=True)
class SetupRecord:
    """A record the task creates (or, given ``id``, changes) in the episode's session before the agent acts.

    Attributes:
        ref: The name the instruction and the expected changes use for it (``case``).
        sobject: The object's API name.
        fields: Its field values.
        id: An existing record to update with ``fields`` (a quote put up for review) instead of a new one.
        reads: The fields the question leaves out, which an agent reads off the record by its Id (the new case's
            subject and description), each with the hidden parameter its value stands for (None: none). The
            environment names them, never their values, in ``info["setup"]``.
    """

    ref: str
    sobject: str
    fields: Mapping[str, Any]
    id: str | None = None
    reads: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class ActPlan:
    """One instance in act mode.

    Attributes:
        setup: The records created (or changed) before the agent acts, in order.
        instruction: The question, with ``{ref}`` placeholders for the set-up records' ids.
        expected: The required changes as JSON (``ExpectedChange.to_dict``), ids possibly ``{ref}``.
        finish: The calls that make the required changes, given the set-up records' ids (``{ref: id}``).
        context: The context shown with the question in place of the instance's (``{ref}`` placeholders
            allowed), or None to keep the instance's.
        answers: Whether the final ``submit`` carries an answer graded beside the diff (the knowledge article a
            quote breaks, or None), rather than ``done``.
    """

    setup: tuple[SetupRecord, ...]
    instruction: str
    expected: tuple[dict[str, Any], ...]
    finish: Callable[[Mapping[str, str]], tuple[ToolCall, ...]]
    context: str | None = None
    answers: bool = False

    def question(self, refs: Mapping[str, str]) -> str:
        """The instruction with the set-up records' ids."""
        return _fill(self.instruction, refs)

    def required(self, refs: Mapping[str, str]) -> str | None:
        """The context with the set-up records' ids (None: the instance's own)."""
        return None if self.context is None else _fill(self.context, refs)

    def expected_changes(self, refs: Mapping[str, str]) -> tuple[ExpectedChange, ...]:
        """The required changes with the set-up records' ids."""
        return tuple(
            ExpectedChange.from_dict({**change, "id": _fill(str(change["id"]), refs)}) for change in self.expected
        )


def _fill(text: str, refs: Mapping[str, str]) -> str:
    """``text`` with each ``{ref}`` replaced (other braces, as a policy's text may hold, left alone)."""
    for ref, value in refs.items():
        text = text.replace("{" + ref + "}", value)
    return text
