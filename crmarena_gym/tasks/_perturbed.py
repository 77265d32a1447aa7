"""A task set carried to a perturbed org: every instance's gold recomputed there, the undetermined dropped.

A perturbed org (``crmarena_gym.datagen.perturb_org``) keeps the base org's records, so the base org's
instances still ask meaningful questions of it. :func:`recompute_tasks` recomputes each instance's gold on
the perturbed org from its hidden parameters and keeps the instance only when that gold is determined and is
the one the question was drawn for. One loop serves every org kind; what differs is where the gold comes from:

- the service org (CRMArena's nine families): the gold functions the generator used
  (``measure_competition``), over the perturbed tables; the planted labels (PVI, KQA) rest on the case, its
  transcripts and emails, and the articles;
- the Pro orgs (B2B, B2C): each category's ``gold_sql`` (plain SQL over the visible and hidden tables, written
  apart from its draw and its solver) and, for the confidentiality categories, ``leak_facts_sql``; the planted
  labels rest on the free text (descriptions, bodies) of the records the instance's hidden parameters name (the
  case, lead, opportunity, quote ...).

Reasons an instance is dropped, counted, never silently kept:

- ``changed``: the perturbed org's gold (or the facts an answer must not leak) differs from the base org's
  (dirty values moved a count or a group: whether the agent should read the dirty value as written or as meant
  is then ambiguous);
- ``tied``: the perturbed org gives several best answers (a service family that wants one);
- ``inputs changed``: a record a planted label rests on differs from the base org's.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crmarena_gym.datagen import manifest_kind
from crmarena_gym.schema import FieldType, is_valid_id, org_schema, quote_identifier
from crmarena_gym.tasks._generate import measure_competition, read_org_facts, read_org_latent
from crmarena_gym.tasks._instance import TaskInstance


@dataclass(frozen=True)
class RecomputedTasks:
    """The outcome of :func:`recompute_tasks`.

    Attributes:
        kept: The instances whose gold is determined on the perturbed org (their gold recomputed there).
        dropped: Dropped instances per reason (see the module docs).
        dropped_idx: The dropped instances' ``idx``, per reason.
    """

    kept: list[TaskInstance]
    dropped: dict[str, int] = field(default_factory=dict)
    dropped_idx: dict[str, list[int]] = field(default_factory=dict)


def _rows(
    conn: sqlite3.Connection, base: sqlite3.Connection, table: str, where: str, params: Sequence[object]
) -> list[tuple[object, ...]]:
    """``table``'s rows matching ``where`` in ``conn``, by the base org's columns (a column or record a
    perturbation added is no input of a label), in a fixed order."""
    columns = [r[1] for r in base.execute(f"PRAGMA table_info({quote_identifier(table)})")]
    listed = ", ".join(quote_identifier(c) for c in columns)
    rows = conn.execute(f"SELECT {listed} FROM {quote_identifier(table)} WHERE {where}", tuple(params)).fetchall()
    return sorted(rows, key=repr)


def _label_inputs(conn: sqlite3.Connection, inst: TaskInstance, base: sqlite3.Connection) -> object:
    """The records a service planted-label family's gold rests on: the case, its transcripts and emails, and
    the base org's articles."""
    article_ids = [i for (i,) in base.execute('SELECT "Id" FROM "Knowledge__kav" ORDER BY "Id"')]
    marks = ", ".join("?" for _ in article_ids) or "NULL"
    articles = _rows(conn, base, "Knowledge__kav", f'"Id" IN ({marks})', article_ids)
    if inst.task == "policy_violation_identification":
        case_id = inst.params["case_id"]
        return (
            _rows(conn, base, "Case", '"Id" = ?', (case_id,)),
            _rows(conn, base, "LiveChatTranscript", '"CaseId" = ?', (case_id,)),
            _rows(conn, base, "EmailMessage", '"ParentId" = ?', (case_id,)),
            articles,
        )
    return articles


class _ServiceGold:
    """The service org's gold on the perturbed org: the generator's gold functions (``measure_competition``)."""

    def __init__(self, base: sqlite3.Connection, pert: sqlite3.Connection, pert_path: Path) -> None:
        self.base, self.pert = base, pert
        self.facts = read_org_facts(pert, read_org_latent(pert_path))

    def __call__(self, inst: TaskInstance) -> tuple[str | None, object]:
        measured = measure_competition(self.facts, inst.task, inst.params)
        if measured is None:  # a planted label: kept while what it rests on is unchanged
            same = _label_inputs(self.base, inst, self.base) == _label_inputs(self.pert, inst, self.base)
            return (None if same else "inputs changed"), inst.answer
        answers = measured[0]
        gold = answers[0] if answers else None
        if len(answers) > 1:
            return "tied", gold
        return (None if gold == inst.answer else "changed"), gold


def _ids_in(value: object) -> list[str]:
    """The record ids among a Pro instance's hidden parameters (at any depth)."""
    if isinstance(value, str):
        return [value] if len(value) in (15, 18) and is_valid_id(value) else []
    if isinstance(value, dict):
        return [i for v in value.values() for i in _ids_in(v)]
    if isinstance(value, list | tuple):
        return [i for v in value for i in _ids_in(v)]
    return []


_FREE_TEXT = (FieldType.TEXTAREA, FieldType.LONG_TEXT)


class _ProGold:
    """A Pro org's gold on the perturbed org: each category's ``gold_sql`` (and ``leak_facts_sql``)."""

    def __init__(self, base: sqlite3.Connection, pert: sqlite3.Connection, kind: str) -> None:
        self.base, self.pert = base, pert
        self.schema = org_schema(kind)

    def _named_texts(self, conn: sqlite3.Connection, params: dict[str, object]) -> list[object]:
        """The free text (descriptions, bodies) of the records the hidden parameters name: what a planted label's
        evidence is written in (a dirty id or name on them is no evidence of a label; the gold checks the rest)."""
        out: list[object] = []
        for record_id in sorted(set(_ids_in(params))):
            obj = self.schema.object_for_id(record_id)
            if obj is None:
                continue
            texts = [f.column_name for f in obj.fields if f.stored and f.type in _FREE_TEXT]
            if texts:
                listed = ", ".join(quote_identifier(c) for c in texts)
                where = '"Id" = ?' if len(record_id) == 18 else 'substr("Id", 1, 15) = ?'
                sql = f"SELECT {listed} FROM {quote_identifier(obj.table_name)} WHERE {where}"
                out.append(conn.execute(sql, (record_id,)).fetchall())
        return out

    def __call__(self, inst: TaskInstance) -> tuple[str | None, object]:
        from crmarena_gym.tasks.pro import pro_category

        category = pro_category(inst.task)
        gold = category.gold_sql(self.pert, inst.params)
        values = () if gold is None else (gold,) if isinstance(gold, str) else tuple(gold)
        if sorted(set(values)) != sorted(inst.answer_values):
            return "changed", gold
        if category.leak_facts_sql is not None and "leak_facts" in inst.params:
            if sorted(category.leak_facts_sql(self.pert, inst.params)) != sorted(inst.params["leak_facts"]):
                return "changed", gold
        if self._named_texts(self.base, inst.params) != self._named_texts(self.pert, inst.params):
            return "inputs changed", gold
        return None, inst.answer


def recompute_tasks(
    instances: Sequence[TaskInstance], base_org: str | Path, perturbed_org: str | Path
) -> RecomputedTasks:
    """Recompute every instance's gold on ``perturbed_org``; keep the determined, count the dropped.

    Args:
        instances: Instances generated on ``base_org`` (with their hidden ``params``).
        base_org: The org the instances were drawn from.
        perturbed_org: A perturbation of it.

    Raises:
        ValueError: An instance has no hidden parameters (the original's task file), so its gold cannot be
            recomputed; an instance is of another org kind than the org; the two orgs are of different kinds.
    """
    base = sqlite3.connect(f"file:{Path(base_org)}?mode=ro", uri=True)
    pert = sqlite3.connect(f"file:{Path(perturbed_org)}?mode=ro", uri=True)
    kept: list[TaskInstance] = []
    dropped: Counter[str] = Counter()
    dropped_idx: dict[str, list[int]] = {}
    try:
        kind = manifest_kind(base)
        if manifest_kind(pert) != kind:
            raise ValueError(
                f"{str(perturbed_org)!r} is a {manifest_kind(pert)} org, not a perturbation of a {kind} org"
            )
        gold_of = _ServiceGold(base, pert, Path(perturbed_org)) if kind == "service" else _ProGold(base, pert, kind)
        for inst in instances:
            if not inst.params:
                raise ValueError(
                    f"instance {inst.idx} ({inst.task}) has no hidden parameters: its gold cannot be recomputed "
                    "on a perturbed org (only generated task sets can be carried over)"
                )
            if inst.kind != kind:
                raise ValueError(
                    f"instance {inst.idx} ({inst.task}) is a {inst.kind} instance; the org is a {kind} org"
                )
            reason, gold = gold_of(inst)
            if reason is not None:
                dropped[reason] += 1
                dropped_idx.setdefault(reason, []).append(inst.idx)
                continue
            kept.append(inst.model_copy(update={"answer": gold}))
    finally:
        base.close()
        pert.close()
    return RecomputedTasks(kept=kept, dropped=dict(dropped), dropped_idx=dropped_idx)


__all__ = ["RecomputedTasks", "recompute_tasks"]
