"""What a task set asks of an agent, per family: competitors at the deciding step, answer spread, None rate.

A family's figure means what its name says only if its instances need the skill: a "top issue" question
whose window holds one issue needs no comparison. :func:`summarize_tasks` counts, for every instance with
a generated instance's hidden parameters, the candidates its deciding step compares (recomputed on the org
by :func:`~crmarena_gym.tasks.measure_competition`) and whether it meets its family's rule
(:func:`~crmarena_gym.tasks.competition_shortfall`); for any task set, the original's included, how
spread the gold answers are and how many are None.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crmarena_gym.tasks._generate import (
    competition_shortfall,
    measure_competition,
    read_org_facts,
    read_org_latent,
)
from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._spec import TASK_SPECS

__all__ = ["FamilySummary", "format_summary", "summarize_tasks"]


@dataclass(frozen=True)
class FamilySummary:
    """One family of a task set.

    Attributes:
        task: The family's abbreviation (``TII``).
        instances: Its instances in the set.
        unanswerable: Those whose gold is None.
        distinct_answers: Distinct gold answers among the answerable ones.
        top_answer: The commonest gold answer (None when no instance is answerable).
        top_answer_count: How many instances have it.
        measured: Instances whose competition was counted (0 when it could not be: see ``note``).
        competitors: The candidates at the deciding step of each measured instance, in set order (empty
            for a family that compares nothing: PVI, KQA).
        direction_matters: HTU and TCU: measured instances where the other extreme gives another answer.
        meets_rule: Measured instances that meet the family's rule.
        note: Why the competition was not counted, when it was not.
    """

    task: str
    instances: int
    unanswerable: int
    distinct_answers: int
    top_answer: str | None
    top_answer_count: int
    measured: int = 0
    competitors: tuple[int, ...] = ()
    direction_matters: int | None = None
    meets_rule: int = 0
    note: str = ""

    @property
    def none_rate(self) -> float:
        """The share of instances whose gold is None."""
        return self.unanswerable / self.instances if self.instances else 0.0

    @property
    def top_answer_share(self) -> float:
        """The share of answerable instances whose gold is the commonest answer."""
        answerable = self.instances - self.unanswerable
        return self.top_answer_count / answerable if answerable else 0.0


def summarize_tasks(
    instances: Sequence[TaskInstance], org: str | os.PathLike[str] | None = None
) -> list[FamilySummary]:
    """Per family of ``instances`` (in the original's task order): answer spread, None rate and, where the
    instances carry a generated instance's hidden parameters and ``org`` is given, the competition at
    each instance's deciding step.

    Args:
        instances: The task set.
        org: The org database the set was made for; without it the competition is not counted.

    Returns:
        One summary per family present in the set.

    Raises:
        FileNotFoundError: No database at ``org``.

    Example:
        >>> from crmarena_gym.tasks import TaskInstance
        >>> insts = [TaskInstance(idx=i, task="TII", query="?", answer=a) for i, a in enumerate(["x", "x", None])]
        >>> s = summarize_tasks(insts)[0]
        >>> s.task, s.unanswerable, s.distinct_answers, s.top_answer_share, s.note
        ('TII', 1, 1, 1.0, 'no org given')
    """
    by_task: dict[str, list[TaskInstance]] = {}
    for inst in instances:
        by_task.setdefault(inst.task, []).append(inst)
    if any(inst.is_pro for inst in instances):
        return _pro_families(instances, by_task, org)
    conn = None
    facts = None
    foreign = ""
    if org is not None:
        path = Path(org)
        if not path.is_file():
            raise FileNotFoundError(f"no org database at {str(path)!r}")
        foreign = _foreign(instances, path)
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        facts = read_org_facts(conn, read_org_latent(path))
    try:
        return [
            _family(spec.abbrev, by_task[spec.name], None if foreign else facts, foreign)
            for spec in TASK_SPECS
            if spec.name in by_task
        ]
    finally:
        if conn is not None:
            conn.close()


def _pro_families(
    instances: Sequence[TaskInstance], by_task: dict[str, list[TaskInstance]], org: str | os.PathLike[str] | None
) -> list[FamilySummary]:
    """A CRMArena-Pro set's families in Pro's order: answer spread and None rate. Each category's tests check its
    competition and its gold three ways (planted, by SQL, by the oracle); the summary does not recount them."""
    from crmarena_gym.tasks.pro import PRO_CATEGORY_SPECS

    note = "no org given"
    if org is not None:
        path = Path(org)
        if not path.is_file():
            raise FileNotFoundError(f"no org database at {str(path)!r}")
        note = _foreign(instances, path, every=True) or "a CRMArena-Pro category (its own tests count its competition)"
    return [_family(s.abbrev, by_task[s.name], None, note) for s in PRO_CATEGORY_SPECS if s.name in by_task]


def _foreign(instances: Sequence[TaskInstance], path: Path, *, every: bool = False) -> str:
    """Why the set's competition cannot be counted on this org (it names records the org lacks), or "".

    Generated orgs share record ids, so a set can pass this and still be another org's: :func:`_family`
    also compares each gold with the answer the org gives."""
    from crmarena_gym.org import LocalOrg
    from crmarena_gym.tasks._org_check import missing_gold_records

    with_params = list(instances) if every else [i for i in instances if i.params]
    if not with_params:
        return ""
    org = LocalOrg(path)
    try:
        missing = missing_gold_records(with_params, org)
    finally:
        org.close()
    if not missing:
        return ""
    idx, record = missing[0]
    return f"the set was not made for this org (instance {idx}'s record {record} is not in it; {len(missing)} such)"


def _family(abbrev: str, insts: list[TaskInstance], facts: object, note: str = "") -> FamilySummary:
    answers = Counter(i.answer for i in insts if i.answer is not None)
    top = answers.most_common(1)
    base = {
        "task": abbrev,
        "instances": len(insts),
        "unanswerable": sum(i.answer is None for i in insts),
        "distinct_answers": len(answers),
        "top_answer": top[0][0] if top else None,
        "top_answer_count": top[0][1] if top else 0,
    }
    if facts is None:
        return FamilySummary(**base, note=note or "no org given")
    if not any(i.params for i in insts):
        return FamilySummary(**base, note="no hidden parameters (counted only for generated instances)")
    competitors: list[int] = []
    direction = 0
    meets = 0
    for inst in insts:
        try:
            measured = measure_competition(facts, inst.task, inst.params)  # type: ignore[arg-type]
        except (KeyError, ValueError, TypeError) as exc:
            return FamilySummary(**base, note=f"instance {inst.idx}: hidden parameters incomplete ({exc!r})")
        if measured is None or measured[1].competitors is None:
            return FamilySummary(**base, note="the family compares no computed values (no rule)")
        answers, competition = measured
        if answers != ([] if inst.answer is None else [inst.answer]):
            # Counts from another org (generated orgs share record ids) or an edited gold would mislead.
            note = f"instance {inst.idx}'s gold is not what this org gives (made for another org, or edited)"
            return FamilySummary(**base, note=note)
        competitors.append(competition.competitors)
        direction += bool(competition.direction_matters)
        meets += competition_shortfall(inst.task, competition, inst.answer is not None) is None
    directional = abbrev in ("HTU", "TCU")
    return FamilySummary(
        **base,
        measured=len(competitors),
        competitors=tuple(competitors),
        direction_matters=direction if directional else None,
        meets_rule=meets,
    )


def format_summary(summaries: Sequence[FamilySummary]) -> str:
    """The summaries as an aligned table, with a line per family that was not measured and why."""
    from crmarena_gym._console import text_table

    rows = []
    notes: dict[str, list[str]] = {}
    for s in summaries:
        if s.measured:
            cs = s.competitors
            spread = f"{min(cs)} / {statistics.median(cs):g} / {max(cs)}"
            two = f"{sum(c >= 2 for c in cs)}/{s.measured}"
            rule = f"{s.meets_rule}/{s.measured}"
            direction = "-" if s.direction_matters is None else f"{s.direction_matters}/{s.measured}"
        else:
            spread = two = rule = direction = "-"
            if s.note:
                notes.setdefault(s.note, []).append(s.task)
        rows.append(
            (
                s.task,
                str(s.instances),
                f"{s.none_rate:.2f}",
                str(s.distinct_answers),
                f"{s.top_answer_share:.2f}",
                spread,
                two,
                direction,
                rule,
            )
        )
    header = (
        "task",
        "instances",
        "None rate",
        "answers",
        "top answer share",
        "competitors min/median/max",
        ">= 2",
        "direction matters",
        "meets rule",
    )
    lines = [f"{', '.join(tasks)}: competition not counted: {note}" for note, tasks in notes.items()]
    return "\n".join([text_table(header, rows, align="<>>>>>>>>"), *lines])
