"""Act mode for CRMArena-Pro's five workflow categories: the change the category's answer stands for.

Each plan turns a generated instance (its gold, computed from the hidden variables and checked three ways by
the category's tests) into the changes the final state must show, reading the values a change starts from out
of the org file with plain SQL (never through the tools an agent uses):

- ``case_routing``: a new, unowned case with the instance's subject and description is set up; its OwnerId must
  become the gold agent.
- ``lead_routing``: a new, unowned lead from the instance's region (Lead.State) is set up, and the context names
  it; its OwnerId must become the gold agent.
- ``wrong_stage_rectification``: the opportunity's StageName must become the gold stage (with the Probability the
  org derives from it); a None gold (the stage is right) requires no change at all.
- ``quote_approval``: the quote is set up as submitted for approval (Status 'Needs Review'); it must end
  'Rejected' when it breaks an approval rule, 'Approved' when it breaks none.
- ``invalid_config``: the quote is set up as submitted for approval; a line above its product's quantity limit
  must be corrected to the limit (the one correction the rule fixes), a quote that combines excluded products or
  lacks a required companion must be 'Rejected' (the fix is the customer's choice), a valid one left as it is.

The two quote categories also ask which article the quote breaks: their final ``submit`` carries the article's
Id (or None), graded by the category's own rule (:func:`~crmarena_gym.tasks.pro.score_instance`), and the
episode scores 1 only when both the diff and that answer are right.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

from crmarena_gym.datagen._names import FIRST_NAMES, LAST_NAMES
from crmarena_gym.schema import STAGE_PROBABILITY
from crmarena_gym.tasks._act_plan import CASE_TEXT_READS, DONE, ActPlan, SetupRecord
from crmarena_gym.tasks._instance import TaskInstance
from crmarena_gym.tasks._oracle import ToolCall

__all__ = ["PRO_ACT_PLANS"]

_DONE_ENDING = f" Change nothing else. When the change is made, submit {DONE}."
_ANSWER_ENDING = (
    " Change nothing else. Then submit the Id of the knowledge article whose rule the quote breaks, or None if it "
    "breaks none."
)
_CASE_TEMPLATES = (
    "A new case has just been logged as {case}. Read it, apply the case routing policy, and make the agent the "
    "policy picks its owner.",
    "Case {case} came in a moment ago and has no owner. Assign it to the agent the case routing policy selects.",
    "Please route the new case {case}: find the agent the routing policy gives it to and set that agent as owner.",
)
_LEAD_TEMPLATES = (
    "A new lead, {lead}, has just come in without an owner. Route it by the lead routing policy: make the agent "
    "the policy picks its owner.",
    "Lead {lead} is new and unassigned. Following the lead routing policy, assign it to the right agent.",
    "Please route lead {lead}: read its region, apply the routing policy and set the chosen agent as owner.",
)
_STAGE_TEMPLATES = (
    "Check opportunity {opportunity}'s stage against the work logged on it and the stage guide. If it is wrong, "
    "move the opportunity to the stage its tasks show; if it is right, leave it.",
    "Audit the stage of opportunity {opportunity}: when its tasks point to another stage, correct StageName to "
    "that stage; otherwise change nothing.",
    "The forecast relies on opportunity {opportunity}'s stage. Fix it if its activities show it belongs in a "
    "different stage.",
)
_APPROVAL_TEMPLATES = (
    "Quote {quote} has been submitted for approval. Check it against the discount rules: approve it (Status "
    "Approved) if it follows every rule, reject it (Status Rejected) if it breaks one.",
    "Review quote {quote}, which awaits approval. Set its Status to Approved when its discounts comply with the "
    "policy articles, or to Rejected when they break a rule.",
    "A rep asks for sign-off on quote {quote}. Decide by the discount rules and record the decision in its Status "
    "(Approved or Rejected).",
)
_CONFIG_TEMPLATES = (
    "Quote {quote} has been submitted for approval. Check its configuration against the product rules. If a "
    "line carries more units than its product's limit, lower that line's Quantity to the limit. If the quote "
    "puts together products that may not be quoted together, or lacks a product another one requires, reject it "
    "(Status Rejected). If it breaks no rule, leave it as it is.",
    "Validate the configuration of quote {quote}, which awaits approval. Correct any line above its product's "
    "quantity limit to exactly the limit; reject the quote (Status Rejected) for a forbidden combination or a "
    "missing required product; change nothing if the configuration is valid.",
)


def _template(instance: TaskInstance, templates: tuple[str, ...]) -> str:
    return templates[instance.idx % len(templates)]


def _param(instance: TaskInstance, *names: str) -> list[Any]:
    missing = [name for name in names if name not in instance.params]
    if missing:
        raise ValueError(
            f"instance {instance.idx} ({instance.task}, {instance.kind}) has no {', '.join(missing)} in its hidden "
            "parameters: act mode needs an instance generated by this version (published instances carry none)"
        )
    return [instance.params[name] for name in names]


def _need_answer(instance: TaskInstance) -> str:
    if not isinstance(instance.answer, str):
        raise ValueError(f"instance {instance.idx} ({instance.task}) has no agent to assign: act mode needs one")
    return instance.answer


def _calls(expected: tuple[dict[str, Any], ...], only: Callable[[str], bool] = lambda _: True) -> Any:
    """The oracle's calls for ``expected``: one update per record, with the fields an agent writes."""

    def finish(refs: Mapping[str, str]) -> tuple[ToolCall, ...]:
        out = []
        for change in expected:
            record_id = str(change["id"])
            for ref, value in refs.items():
                record_id = record_id.replace("{" + ref + "}", value)
            fields = {k: v for k, v in change["values"].items() if only(k)}
            out.append(
                ToolCall("update_record", {"sobject": change["sobject"], "record_id": record_id, "fields": fields})
            )
        return tuple(out)

    return finish


def _case_plan(instance: TaskInstance, conn: sqlite3.Connection) -> ActPlan:
    subject, description = _param(instance, "case_subject", "case_description")
    gold = _need_answer(instance)
    # Unowned, as a web case waiting for routing (a session would otherwise own it: its user may be an agent).
    case = SetupRecord(
        "case",
        "Case",
        {"Subject": subject, "Description": description, "Status": "New", "Channel": "Web", "OwnerId": None},
        reads=CASE_TEXT_READS,
    )
    expected = ({"sobject": "Case", "id": "{case}", "op": "update", "values": {"OwnerId": gold}},)
    instruction = _template(instance, _CASE_TEMPLATES) + _DONE_ENDING
    return ActPlan((case,), instruction, expected, _calls(expected))


def _lead_plan(instance: TaskInstance, conn: sqlite3.Connection) -> ActPlan:
    (region,) = _param(instance, "region")
    gold = _need_answer(instance)
    first = FIRST_NAMES[(instance.idx * 7) % len(FIRST_NAMES)]
    last = LAST_NAMES[(instance.idx * 13) % len(LAST_NAMES)]
    fields: dict[str, Any] = {"FirstName": first, "LastName": last, "State": region, "LeadSource": "Web"}
    if instance.kind == "b2b":
        fields["Company"] = f"{last} Holdings"
    lead = SetupRecord("lead", "Lead", {**fields, "OwnerId": None}, reads={"State": "region"})
    # The context names the new lead in place of the instance's region or existing lead (the policy stays).
    policy = [
        line
        for line in instance.metadata.required.splitlines()
        if not line.startswith(("## Lead's region:", "- Lead Id to be routed is:"))
    ]
    context = "\n".join(["- Lead Id to be routed is: {lead}", *policy])
    expected = ({"sobject": "Lead", "id": "{lead}", "op": "update", "values": {"OwnerId": gold}},)
    instruction = _template(instance, _LEAD_TEMPLATES) + _DONE_ENDING
    return ActPlan((lead,), instruction, expected, _calls(expected), context=context)


def _stage_plan(instance: TaskInstance, conn: sqlite3.Connection) -> ActPlan:
    (opportunity,) = _param(instance, "opportunity_id")
    row = conn.execute("SELECT StageName FROM Opportunity WHERE Id = ?", (opportunity,)).fetchone()
    if row is None:
        raise ValueError(f"instance {instance.idx} ({instance.task}): no opportunity {opportunity} in the org")
    expected: tuple[dict[str, Any], ...] = ()
    if instance.answer is not None:
        if instance.answer == row[0]:
            raise ValueError(f"instance {instance.idx}: its gold stage {instance.answer!r} is the recorded one")
        # The org derives the Probability from the stage, as Salesforce's stage defaults do: part of the change.
        values = {"StageName": instance.answer, "Probability": STAGE_PROBABILITY[str(instance.answer)]}
        expected = ({"sobject": "Opportunity", "id": opportunity, "op": "update", "values": values},)
    instruction = _template(instance, _STAGE_TEMPLATES).replace("{opportunity}", opportunity) + _DONE_ENDING
    return ActPlan((), instruction, expected, _calls(expected, lambda field: field == "StageName"))


def _review(quote: str) -> SetupRecord:
    """The quote as a rep submits it for approval, whatever status the org file gives it."""
    return SetupRecord("quote", "Quote", {"Status": "Needs Review"}, id=quote)


def _quote(instance: TaskInstance, conn: sqlite3.Connection) -> str:
    (quote,) = _param(instance, "quote_id")
    if conn.execute("SELECT 1 FROM Quote WHERE Id = ?", (quote,)).fetchone() is None:
        raise ValueError(f"instance {instance.idx} ({instance.task}): no quote {quote} in the org")
    return str(quote)


def _approval_plan(instance: TaskInstance, conn: sqlite3.Connection) -> ActPlan:
    quote = _quote(instance, conn)
    status = "Approved" if instance.answer is None else "Rejected"
    expected = ({"sobject": "Quote", "id": "{quote}", "op": "update", "values": {"Status": status}},)
    instruction = _template(instance, _APPROVAL_TEMPLATES) + _ANSWER_ENDING
    return ActPlan((_review(quote),), instruction, expected, _calls(expected), answers=True)


def _config_plan(instance: TaskInstance, conn: sqlite3.Connection) -> ActPlan:
    quote = _quote(instance, conn)
    expected: tuple[dict[str, Any], ...] = ()
    if instance.answer is not None:
        found = conn.execute(
            "SELECT rule, parameters FROM crmarena_hidden_rule WHERE category = 'config' AND ArticleId = ?",
            (instance.answer,),
        ).fetchone()
        if found is None:
            raise ValueError(f"instance {instance.idx}: its gold {instance.answer} is no configuration rule's article")
        rule, parameters = found
        if rule == "quantity_limits":
            limits = json.loads(parameters)
            lines = conn.execute(
                "SELECT Id, Product2Id, Quantity FROM QuoteLineItem WHERE QuoteId = ? ORDER BY Id", (quote,)
            ).fetchall()
            expected = tuple(
                {"sobject": "QuoteLineItem", "id": line, "op": "update", "values": {"Quantity": float(limits[product])}}
                for line, product, quantity in lines
                if product in limits and quantity > limits[product]
            )
            if not expected:
                raise ValueError(f"instance {instance.idx}: quote {quote} has no line above its product's limit")
        else:
            expected = ({"sobject": "Quote", "id": "{quote}", "op": "update", "values": {"Status": "Rejected"}},)
    instruction = _template(instance, _CONFIG_TEMPLATES) + _ANSWER_ENDING
    return ActPlan((_review(quote),), instruction, expected, _calls(expected), answers=True)


#: Pro's categories with an act mode, by name, and how an instance (with its org's connection) becomes its plan.
PRO_ACT_PLANS: dict[str, Callable[[TaskInstance, sqlite3.Connection], ActPlan]] = {
    "case_routing": _case_plan,
    "lead_routing": _lead_plan,
    "wrong_stage_rectification": _stage_plan,
    "quote_approval": _approval_plan,
    "invalid_config": _config_plan,
}
