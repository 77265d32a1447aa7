"""A task set carried to a perturbed org: every instance's gold recomputed there, the undetermined dropped.

A perturbed org (``crmarena_gym.datagen.perturb_org``) keeps the base org's records, so the base org's
instances still ask meaningful questions of it. :func:`recompute_tasks` recomputes each instance's gold on
the perturbed org from its hidden parameters (the same gold functions the generator used, over the
perturbed tables) and keeps the instance only when that gold is determined and is the one the question
was drawn for:

- ``changed``: the perturbed org's gold differs from the base org's (dirty values moved a count or a
  group: whether the agent should read the dirty value as written or as meant is then ambiguous);
- ``tied``: the perturbed org gives several best answers;
- ``inputs changed``: for the families whose gold is a planted label (PVI, KQA), the records the label
  rests on (the case, its transcripts and emails, the articles) differ from the base org's.

Dropped instances are counted by reason, never silently kept.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

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


def _label_inputs(conn: sqlite3.Connection, inst: TaskInstance, base: sqlite3.Connection) -> object:
    """The records a planted-label family's gold rests on, as the base org has them: the base org's columns
    of the case, its transcripts and emails, and of the base org's articles (a column or record a
    perturbation added is no input of the label)."""

    def rows(table: str, where: str, params: Sequence[object]) -> list[tuple[object, ...]]:
        columns = [r[1] for r in base.execute(f'PRAGMA table_info("{table}")')]
        listed = ", ".join(f'"{c}"' for c in columns)
        return sorted(conn.execute(f'SELECT {listed} FROM "{table}" WHERE {where}', tuple(params)).fetchall(), key=repr)

    article_ids = [i for (i,) in base.execute('SELECT "Id" FROM "Knowledge__kav" ORDER BY "Id"')]
    marks = ", ".join("?" for _ in article_ids) or "NULL"
    articles = rows("Knowledge__kav", f'"Id" IN ({marks})', article_ids)
    if inst.task == "policy_violation_identification":
        case_id = inst.params["case_id"]
        return (
            rows("Case", '"Id" = ?', (case_id,)),
            rows("LiveChatTranscript", '"CaseId" = ?', (case_id,)),
            rows("EmailMessage", '"ParentId" = ?', (case_id,)),
            articles,
        )
    return articles


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
            recomputed.
    """
    base = sqlite3.connect(f"file:{Path(base_org)}?mode=ro", uri=True)
    pert = sqlite3.connect(f"file:{Path(perturbed_org)}?mode=ro", uri=True)
    kept: list[TaskInstance] = []
    dropped: Counter[str] = Counter()
    dropped_idx: dict[str, list[int]] = {}
    try:
        facts = read_org_facts(pert, read_org_latent(Path(perturbed_org)))
        for inst in instances:
            if not inst.params:
                raise ValueError(
                    f"instance {inst.idx} ({inst.task}) has no hidden parameters: its gold cannot be recomputed "
                    "on a perturbed org (only generated task sets can be carried over)"
                )
            measured = measure_competition(facts, inst.task, inst.params)
            reason = None
            if measured is None:  # a planted label: kept while what it rests on is unchanged
                if _label_inputs(base, inst, base) != _label_inputs(pert, inst, base):
                    reason = "inputs changed"
                gold = inst.answer
            else:
                answers = measured[0]
                if len(answers) > 1:
                    reason = "tied"
                gold = answers[0] if answers else None
                if reason is None and gold != inst.answer:
                    reason = "changed"
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
