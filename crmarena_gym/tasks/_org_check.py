"""Whether a task set belongs to an org: the records its gold answers (and, for Pro, its context) name must be
in it."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Sequence

from crmarena_gym.org import Org
from crmarena_gym.schema import is_valid_id, org_schema
from crmarena_gym.tasks._instance import TaskInstance

__all__ = ["missing_gold_records"]

# Ids per query: keeps each SOQL statement far below Salesforce's 100,000-character limit.
_CHUNK = 200


def missing_gold_records(instances: Sequence[TaskInstance], org: Org) -> list[tuple[int, str]]:
    """The gold answers that name a record the org does not have, as ``(idx, id)`` pairs in task-set order.

    A gold answer that is an id (an agent, an issue, a product, an article) must be a record of the org the
    task set was made for; the original's ``tasks_original.json`` run against a generated org names none
    that exist, and would score near zero without saying why. A Pro instance's ids are read in its kind's
    schema, from every value of its gold (a set of Task ids) and from its context (``metadata.required``:
    the Opportunity, Lead, Quote, Case or Contact it is about), so that Pro's B2B file is refused on an org
    it was not made for even in its categories whose gold is a label or None.

    Args:
        instances: The task set.
        org: The org (its records are looked up with SOQL, so a live org works too).

    Raises:
        OrgError: The org refused a lookup (the org is not in CRMArena's layout).

    Example:
        >>> from crmarena_gym.org import LocalOrg
        >>> inst = TaskInstance(idx=390, task="NCR", query="Which agent?", answer="005Ws000001xadBIAQ")
        >>> missing_gold_records([inst], LocalOrg(getfixture("tiny_org")))
        [(390, '005Ws000001xadBIAQ')]
    """
    by_object: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for inst in instances:
        for name, rid in _named_ids(inst):
            by_object[name][rid].append(inst.idx)
    missing: set[str] = set()
    org = org.declared()  # the objects by the names the task sets use, whatever schema drift renamed
    for name, ids in by_object.items():
        wanted = sorted(ids)
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            listed = ", ".join(f"'{i}'" for i in chunk)
            result = org.query(f"SELECT Id FROM {name} WHERE Id IN ({listed})")
            found = {str(r["Id"])[:15] for r in result.get("records", [])}
            missing.update(i for i in chunk if i[:15] not in found)
    order = {inst.idx: n for n, inst in enumerate(instances)}
    pairs = [(idx, rid) for name in by_object for rid in missing & set(by_object[name]) for idx in by_object[name][rid]]
    return sorted(pairs, key=lambda pair: order[pair[0]])


_ID_TOKEN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?(?![A-Za-z0-9])")


def _named_ids(inst: TaskInstance) -> Iterator[tuple[str, str]]:
    """The (object, id) pairs an instance names: its gold's ids, and for a Pro instance its context's."""
    schema = org_schema(inst.kind)
    texts = list(inst.answer_values)
    if inst.is_pro:
        texts += _ID_TOKEN.findall(inst.metadata.required)
    for value in dict.fromkeys(texts):
        if is_valid_id(value) and (sobject := schema.object_for_id(value)) is not None:
            yield sobject.name, value
