"""What a session changed in its org: a record-by-record diff, and its comparison with an expected one.

Write tasks are graded by the org's final state (as tau2-bench grades by its database): the episode's
session is compared with the org file it was opened on, and the changes an agent made are set against the
changes the task requires. Only fields a user can write enter a diff: what the org derives on its own
(audit fields, auto-numbers, closure stamps, formulas) follows from a written field, which is compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["DiffCheck", "ExpectedChange", "RecordChange", "StateDiff"]

ChangeOp = Literal["create", "update", "delete"]


@dataclass(frozen=True)
class RecordChange:
    """One record a session created, changed or deleted.

    Attributes:
        sobject: The object's API name (``Case``).
        id: The record's 18-character id.
        op: ``create``, ``update`` or ``delete``.
        fields: For an update, each changed field's ``(old, new)`` value; for a create, each field set, as
            ``(None, value)``; empty for a delete.
    """

    sobject: str
    id: str
    op: ChangeOp
    fields: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The change as JSON: ``{"sobject", "id", "op", "fields": {name: {"old", "new"}}}``."""
        return {
            "sobject": self.sobject,
            "id": self.id,
            "op": self.op,
            "fields": {name: {"old": old, "new": new} for name, (old, new) in self.fields.items()},
        }

    def describe(self) -> str:
        """One line for a person: ``update Case 500...: OwnerId 005A -> 005B``."""
        if self.op == "delete":
            return f"delete {self.sobject} {self.id}"
        parts = ", ".join(
            f"{name} {old!r} -> {new!r}" if self.op == "update" else f"{name}={new!r}"
            for name, (old, new) in self.fields.items()
        )
        return f"{self.op} {self.sobject} {self.id}: {parts}"


@dataclass(frozen=True)
class ExpectedChange:
    """A change a task requires: a record (by id) to be updated to values, or deleted.

    Attributes:
        sobject: The object's API name.
        id: The record's id (15 or 18 characters).
        op: ``update`` or ``delete``.
        values: For an update, the value each named field must end with (compared after stripping
            surrounding whitespace; picklist and id values exactly).
    """

    sobject: str
    id: str
    op: Literal["update", "delete"] = "update"
    values: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The expected change as JSON."""
        return {"sobject": self.sobject, "id": self.id, "op": self.op, "values": dict(self.values)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExpectedChange:
        """The inverse of :meth:`to_dict` (a task's hidden parameters keep expected changes as JSON)."""
        op = data.get("op", "update")
        if op not in ("update", "delete"):
            raise ValueError(f"an expected change's op must be 'update' or 'delete', got {op!r}")
        return cls(str(data["sobject"]), str(data["id"]), op, dict(data.get("values") or {}))


@dataclass(frozen=True)
class DiffCheck:
    """A session's diff set against the expected changes.

    Attributes:
        ok: Every expected change is there and nothing else changed.
        missing: The expected changes the final state lacks, each described in one line.
        stray: The changes nobody asked for, each described in one line.
    """

    ok: bool
    missing: tuple[str, ...]
    stray: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON."""
        return {"ok": self.ok, "missing": list(self.missing), "stray": list(self.stray)}


def _same(actual: Any, wanted: Any) -> bool:
    if isinstance(actual, str) and isinstance(wanted, str):
        return actual.strip() == wanted.strip()
    if isinstance(wanted, bool) or isinstance(actual, bool):
        return bool(actual) == bool(wanted) and actual is not None
    return actual == wanted


def _id15(record_id: str) -> str:
    return record_id[:15]


@dataclass(frozen=True)
class StateDiff:
    """Every record a session created, changed or deleted, in the order it first wrote them.

    Attributes:
        changes: The record changes.
    """

    changes: tuple[RecordChange, ...] = ()

    def __len__(self) -> int:
        return len(self.changes)

    def __iter__(self) -> Iterator[RecordChange]:
        return iter(self.changes)

    def to_dict(self) -> list[dict[str, Any]]:
        """The diff as JSON, one object per record."""
        return [c.to_dict() for c in self.changes]

    def since(self, baseline: StateDiff) -> StateDiff:
        """The changes made after ``baseline`` (an earlier diff of the same session), as changes to the state
        ``baseline`` left: a task's set-up writes are then not the agent's.

        Example:
            >>> setup = StateDiff((RecordChange("Case", "500000000000009AAA", "create", {"OwnerId": (None, "005A")}),))
            >>> now = StateDiff((RecordChange("Case", "500000000000009AAA", "create", {"OwnerId": (None, "005B")}),))
            >>> [c.describe() for c in now.since(setup)]
            ["update Case 500000000000009AAA: OwnerId '005A' -> '005B'"]
        """
        before = {_id15(c.id): c for c in baseline.changes}
        out: list[RecordChange] = []
        for change in self.changes:
            was = before.get(_id15(change.id))
            if was is None:
                out.append(change)
            elif change.op == "delete":
                if was.op != "delete":
                    out.append(RecordChange(change.sobject, change.id, "delete"))
            else:
                fields = {}
                for name, (old, new) in change.fields.items():
                    start = was.fields[name][1] if name in was.fields else old
                    if start != new:
                        fields[name] = (start, new)
                for name, (file_value, set_value) in was.fields.items():
                    if name not in change.fields:  # set up, then set back by the agent (to the file's value)
                        fields[name] = (set_value, file_value if was.op == "update" else None)
                if fields:
                    out.append(RecordChange(change.sobject, change.id, "update", fields))
        now = {_id15(c.id) for c in self.changes}
        for key, was in before.items():  # gone from the session's diff since the set-up
            if key in now or was.op == "delete":
                continue
            if was.op == "create":  # created by the task, then deleted
                out.append(RecordChange(was.sobject, was.id, "delete"))
            else:  # changed by the task, then set back to the file's values (an update, not a delete)
                fields = {name: (set_value, file_value) for name, (file_value, set_value) in was.fields.items()}
                out.append(RecordChange(was.sobject, was.id, "update", fields))
        return StateDiff(tuple(out))

    def check(self, expected: Iterable[ExpectedChange]) -> DiffCheck:
        """Whether this diff makes exactly the ``expected`` changes.

        A record an expected update names must end with every value it lists (a field it does not list
        must not change); an expected delete must have happened. Any other created, changed or deleted
        record is stray.

        Args:
            expected: The changes the task requires.

        Example:
            >>> diff = StateDiff((RecordChange("Case", "500000000000001AAA", "update", {"OwnerId": ("005A", "005B")}),))
            >>> diff.check([ExpectedChange("Case", "500000000000001AAA", values={"OwnerId": "005B"})]).ok
            True
            >>> diff.check([ExpectedChange("Case", "500000000000001AAA", values={"OwnerId": "005C"})]).missing
            ("Case 500000000000001AAA: OwnerId should be '005C', is '005B'",)
        """
        by_id = {_id15(c.id): c for c in self.changes}
        missing: list[str] = []
        explained: dict[str, set[str]] = {}
        for want in expected:
            key = _id15(want.id)
            got = by_id.get(key)
            if want.op == "delete":
                if got is None or got.op != "delete":
                    missing.append(f"{want.sobject} {want.id}: should be deleted")
                explained[key] = {"*"}
                continue
            if got is None or got.op == "delete":
                state = "was deleted" if got is not None else "was not changed"
                wanted = ", ".join(f"{name} should be {value!r}" for name, value in want.values.items())
                missing.append(f"{want.sobject} {want.id}: {wanted}; the record {state}")
                continue
            for name, value in want.values.items():
                old_new = got.fields.get(name)
                if old_new is None or not _same(old_new[1], value):
                    now = old_new[1] if old_new is not None else "unchanged"
                    missing.append(f"{want.sobject} {want.id}: {name} should be {value!r}, is {now!r}")
            explained[key] = set(want.values)
        stray: list[str] = []
        for change in self.changes:
            key = _id15(change.id)
            allowed = explained.get(key)
            if allowed is None:
                stray.append(change.describe())
            elif "*" not in allowed:
                extra = {k: v for k, v in change.fields.items() if k not in allowed}
                if extra:
                    stray.append(RecordChange(change.sobject, change.id, change.op, extra).describe())
        return DiffCheck(not missing and not stray, tuple(missing), tuple(stray))
