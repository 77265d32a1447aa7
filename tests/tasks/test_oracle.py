"""Oracle solvers on a small hand-made org: the calls they make, their answers, and how they fail loudly."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import (
    ORACLES,
    TASK_NAMES,
    OracleError,
    TaskInstance,
    ToolCall,
    oracle_trace,
    solve,
)
from tests.org_builder import OrgBuilder, ts


@pytest.fixture(scope="module")
def org(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalOrg, dict[str, str]]:
    path = tmp_path_factory.mktemp("oracle") / "org.sqlite"
    b = OrgBuilder(path)
    ids: dict[str, str] = {}
    ids["A"] = b.add("User", FirstName="Ada", LastName="Agent")
    ids["acc"] = b.add("Account", FirstName="Cy", LastName="Customer", ShippingState="NY")
    ids["ct"] = b.add("Contact", AccountId=ids["acc"], FirstName="Cy", LastName="Customer")
    ids["orphan"] = b.add("Contact", FirstName="No", LastName="Account")
    ids["P"] = b.add("Product2", Name="Summit Rain Jacket")
    ids["Q"] = b.add("Product2", Name="Lotus Yoga Mat")
    order = b.add("Order", AccountId=ids["acc"], Status="Activated", EffectiveDate="2022-03-04")
    item = b.add("OrderItem", OrderId=order, Product2Id=ids["P"], Quantity=1.0, UnitPrice=50.0)
    ids["defect"] = b.add("Issue__c", Name="Product Defect")
    ids["delay"] = b.add("Issue__c", Name="Shipping Delay")
    # Q2 2022: two defect cases and one delay case about the jacket; a defect case on July 1 is outside.
    cases = [("2022-04-02", "defect"), ("2022-05-09", "defect"), ("2022-06-30", "delay"), ("2022-07-01", "delay")]
    for day, issue in cases:
        case = b.add(
            "Case",
            OwnerId=ids["A"],
            CreatedDate=ts(f"{day} 09:00"),
            Status="New",
            AccountId=ids["acc"],
            OrderItemId__c=item,
            IssueId__c=ids[issue],
        )
        ids[f"case-{issue}"] = case  # the last case of each issue
    ids["K"] = b.add(
        "Knowledge__kav",
        Title="Rain Jackets Explained",
        # A care line as the generator writes it (datagen's CARE_FORMS), which the oracle reads its answers off.
        FAQ_Answer__c="Care and warranty:\nThe Summit Rain Jacket is covered by a warranty of 3 years from the date of "
        "purchase.\nThe Summit Rain Jacket is made of recycled nylon.",
        PublishStatus="Online",
        Language="en_US",
    )
    ids["KP"] = b.add(
        "Knowledge__kav",
        Title="Shipping Delays and Compensation",
        FAQ_Answer__c="Policy rules:\n1. " + DELAY_RULE,
        PublishStatus="Online",
        Language="en_US",
    )
    b.add("EmailMessage", ParentId=ids["case-delay"], Subject="Late", TextBody=f"Dear Cy,\n\n{BREAKING}\n\nAda")
    b.close()
    return LocalOrg(path), ids


# A rule of the generator's delay policy, as its article states it, and a reply that breaks it (datagen's policies).
DELAY_RULE = (
    "Delay compensation never exceeds the standard shipping fee of $7.95; no extra vouchers or store credit are issued "
    "for a delay."
)
BREAKING = "To make up for the delay, I've added a $40 store credit to your account."


def _instance(task: str, params: dict[str, Any], answer: str | None = None) -> TaskInstance:
    return TaskInstance(idx=0, task=task, query="A question?", answer=answer, params=params)


Q2 = {"start": "2022-04-01T00:00:00.000+0000", "end": "2022-07-01T00:00:00.000+0000"}


def test_every_task_has_an_oracle() -> None:
    assert set(ORACLES) == set(TASK_NAMES)


def test_top_issue_trace_names_each_call_and_its_arguments(org: tuple[LocalOrg, dict[str, str]]) -> None:
    local, ids = org
    params = {
        "today": "2022-09-01",
        **Q2,
        "window": {"kind": "named", "quarter": 2, "year": 2022},
        "product_id": ids["P"],
    }
    trace = oracle_trace(_instance("TII", params), local)
    assert [c.name for c in trace.calls] == [
        "get_period",
        "get_order_item_ids_by_product",
        "get_issue_counts",
        "find_id_with_max_value",
    ]
    assert trace.calls[0].arguments == {"period_name": "Q2", "year": 2022}
    # Issue counts include the window's end (July 1, 00:00), so the 09:00 cases of July 1 stay out.
    assert trace.calls[2].arguments["start_date"] == "2022-04-01T00:00:00Z"
    assert trace.calls[2].result == {ids["defect"]: 2, ids["delay"]: 1}
    assert trace.answer == ids["defect"]
    assert [c.name for c in trace.actions][-1] == "submit"


def test_a_relative_window_is_worked_out_with_get_start_date(org: tuple[LocalOrg, dict[str, str]]) -> None:
    local, ids = org
    window = {"kind": "relative", "unit": "quarter", "count": 1}
    params = {"today": "2022-07-01", **Q2, "window": window, "product_id": ids["P"]}
    trace = oracle_trace(_instance("TII", params), local)
    assert trace.calls[0].name == "get_start_date"
    assert trace.calls[0].arguments == {"end_date": "2022-07-01T00:00:00Z", "period": "quarter", "interval_count": 1}
    assert trace.answer == ids["defect"]


def test_a_tie_is_an_error_not_an_answer(org: tuple[LocalOrg, dict[str, str]]) -> None:
    local, ids = org
    params = {"today": "2022-09-01", **Q2, "product_id": ids["P"]}
    # One case in each of April, May and June (the July 1 case is past the exclusive end).
    with pytest.raises(OracleError, match=r"a tie for the month: \['April', 'May', 'June'\]"):
        solve(_instance("MTA", params), local)


def test_a_window_that_does_not_match_the_stored_one_is_an_error(org: tuple[LocalOrg, dict[str, str]]) -> None:
    local, _ = org
    params = {"today": "2022-07-02", **Q2, "window": {"kind": "relative", "unit": "quarter", "count": 1}}
    with pytest.raises(OracleError, match="the date tools give the window 2022-04-02T00:00:00Z"):
        solve(_instance("BRI", params), local)


def test_a_tool_error_is_raised_with_the_tool_and_its_message(org: tuple[LocalOrg, dict[str, str]]) -> None:
    local, _ = org
    params = {"today": "2022-09-01", **Q2, "product_id": "not-an-id"}
    expected = "get_order_item_ids_by_product(product_id='not-an-id') answered \"Error: product_id must be"
    with pytest.raises(OracleError, match=re.escape(expected)):
        solve(_instance("TII", params), local)


def test_instances_without_params_cannot_be_solved(org: tuple[LocalOrg, dict[str, str]]) -> None:
    with pytest.raises(OracleError, match="has no hidden params"):
        solve(_instance("HTU", {}), org[0])
    with pytest.raises(OracleError, match="lack 'product_id'"):
        solve(_instance("TII", {"today": "2022-09-01", **Q2}), org[0])


def _ned(contact_id: str, described: str, when: str, today: str = "2022-03-06") -> TaskInstance:
    """A purchase question as the generator phrases it; its hidden search term and day point elsewhere, so that only
    a solver reading the question (and today's date in the context) reaches the purchase it describes."""
    return TaskInstance(
        idx=0,
        task="NED",
        query=f"Please find the {described} I bought {when}. Return only the Id of the product.",
        answer=None,
        metadata={"required": f"- Contact Id of the customer you are assisting: {contact_id}\n- Today's date: {today}"},
        params={"today": "2021-01-01", "contact_id": contact_id, "search_term": "Mat", "purchase_date": "2021-01-01"},
    )


def test_named_entity_reads_the_question_then_searches_and_checks_the_purchases(
    org: tuple[LocalOrg, dict[str, str]],
) -> None:
    local, ids = org
    trace = oracle_trace(_ned(ids["ct"], "rain jacket for wet-weather hikes", "two days ago"), local)
    assert [c.name for c in trace.calls] == ["get_account_id_by_contact_id", "search_products", "get_purchase_history"]
    assert trace.calls[1].arguments == {"search_term": "rain jacket"}  # the use after "for" is not searched
    assert trace.calls[2].arguments["purchase_date"] == "2022-03-04T00:00:00Z"  # today (03-06) less two days
    assert trace.answer == ids["P"]
    for when in ("on March 4, 2022", "on 2022-03-04", "2 days back", "the day before yesterday"):
        assert solve(_ned(ids["ct"], "summit rain jacket", when), local) == ids["P"], when
    assert solve(_ned(ids["ct"], "rain jacket", "yesterday"), local) == "None"  # nothing bought on 03-05
    assert solve(_ned(ids["ct"], "rain jacket", "a week ago", today="2022-03-11"), local) == ids["P"]
    assert solve(_ned(ids["ct"], "yoga mat", "two days ago"), local) == "None"  # not bought that day
    assert solve(_ned(ids["orphan"], "rain jacket", "two days ago"), local) == "None"


def test_named_entity_question_it_cannot_read_is_a_contradiction(org: tuple[LocalOrg, dict[str, str]]) -> None:
    local, ids = org
    unread = _ned(ids["ct"], "rain jacket", "two days ago").model_copy(update={"query": "Which jacket did I buy?"})
    with pytest.raises(OracleError, match="reads as no product"):
        solve(unread, local)
    undated = _ned(ids["ct"], "rain jacket", "two days ago")
    undated = undated.model_copy(update={"metadata": undated.metadata.model_copy(update={"required": ""})})
    with pytest.raises(OracleError, match="no day"):
        solve(undated, local)


def test_knowledge_answer_is_read_off_the_article_found(org: tuple[LocalOrg, dict[str, str]]) -> None:
    """The answer is what the found article's text says where the asked fact's sentence puts it, never the gold (here
    set to mislead) nor the hidden article."""
    local, _ = org
    params = {"today": "2023-01-01", "article_id": "ka0000000000000AAA", "search_term": "Rain Jackets Explained"}
    warranty = TaskInstance(
        idx=0, task="KQA", query="How long is the warranty on the Summit Rain Jacket?", answer="9 years", params=params
    )
    trace = oracle_trace(warranty, local)
    assert (trace.answer, [c.name for c in trace.calls]) == ("3 years", ["search_knowledge_articles"])
    material = warranty.model_copy(update={"query": "A customer asks: What is the Summit Rain Jacket made of?"})
    assert solve(material, local) == "recycled nylon"
    with pytest.raises(OracleError, match="give 0 answer"):  # no article states a line about this product
        solve(warranty.model_copy(update={"query": "How long is the warranty on the Lotus Yoga Mat?"}), local)
    with pytest.raises(OracleError, match="give 0 answer"):  # the search finds no article with the line
        solve(warranty.model_copy(update={"params": {**params, "search_term": "yoga"}}), local)


def test_policy_violation_judged_from_the_conversation_and_the_article(org: tuple[LocalOrg, dict[str, str]]) -> None:
    """The verdict comes from the replies read and the article text found by a search for the broken rule's policy,
    never from the hidden article_id, evidence and search_term (here set to mislead)."""
    local, ids = org
    misleading = {"today": "2023-01-01", "article_id": ids["K"], "evidence": "Something else."}
    params = {**misleading, "case_id": ids["case-delay"], "search_term": "Rain Jackets Explained"}
    trace = oracle_trace(_instance("PVI", params), local)
    assert [c.name for c in trace.calls] == [
        "get_livechat_transcript_by_case_id",
        "get_email_messages_by_case_id",
        "search_knowledge_articles",
    ]
    # The delay policy's title as the generator's policies name it (the hand-made article's title shares its words).
    assert trace.calls[2].arguments == {"search_term": "Shipping Delays and Compensation at Northpeak Athletics"}
    assert trace.answer == ids["KP"]  # the email breaks the rule the delay article states
    # A case with no conversation at all is refused.
    with pytest.raises(OracleError, match="has no chat or email"):
        solve(_instance("PVI", {**params, "case_id": ids["case-defect"]}), local)


def test_id_lists_too_long_for_one_statement_go_in_parts_and_the_answer_holds(
    env_org: Path, env_tasks: list[TaskInstance], monkeypatch: pytest.MonkeyPatch
) -> None:
    # At 100x the original's size every agent and a quarter's cases exceed SOQL's 100,000 characters in one
    # get_cases; parts of 2 Ids here stand for that (the golds are the generator's own SQL).
    from crmarena_gym.tasks import _oracle

    monkeypatch.setattr(_oracle, "_IDS_PER_CALL", 3)
    monkeypatch.setattr(_oracle, "_IDS_PER_PART", 2)
    org = LocalOrg(env_org)
    played = 0
    for instance in (i for i in env_tasks if i.abbrev == "HTU" and i.answer is not None):
        trace = oracle_trace(instance, org.with_today(instance.params["today"]))
        parts = [c for c in trace.calls if c.name == "get_cases"]
        assert trace.answer == instance.answer and len(parts) > 1, parts
        played += 1
    assert played


def _combined(calls: tuple[ToolCall, ...], split: str, ordered: bool) -> list[tuple[str, str]]:
    """The calls other than ``split``'s, the results of its parts as the next calls receive them; case lists
    sorted unless ``ordered`` (parts concatenate a call's cases by part, one call lists them in the org's order)."""

    def shown(value: Any) -> str:
        if not ordered and isinstance(value, list) and all(isinstance(v, dict) for v in value):
            return repr(sorted(map(repr, value)))
        return repr(sorted(value.items()) if not ordered and isinstance(value, dict) else value)

    return [(c.name, repr({k: shown(v) for k, v in c.arguments.items()})) for c in calls if c.name != split]


@pytest.mark.parametrize(
    ("abbrev", "split", "ordered"),
    [
        ("HTU", "get_cases", False),  # the agents' and cases' Ids
        ("TCU", "get_agent_transferred_cases_by_period", True),  # the qualified agents: counts in the order given
        ("TII", "get_issue_counts", True),  # a product's order items: counts summed, the most first, ties by id
        ("MTA", "get_cases", False),  # a product's order items: the cases concatenated
        ("BRI", "get_shipping_state", True),  # the cases' accounts: the cases in their order
    ],
)
def test_every_id_list_too_long_for_one_statement_goes_in_parts_and_the_parts_combine_as_one_call(
    env_org: Path,
    env_tasks: list[TaskInstance],
    abbrev: str,
    split: str,
    ordered: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # At 100x the original's size a popular product's order items, a year's cases' accounts (and, larger still,
    # every agent) exceed SOQL's 100,000 characters in one call; parts of 2 Ids here stand for that. Each instance is
    # solved with whole lists (every list fits) and in parts: the same answer, and the calls after the parts receive
    # what one call returned.
    from crmarena_gym.tasks import _oracle

    org = LocalOrg(env_org)
    whole = {i.idx: oracle_trace(i, org.with_today(i.params["today"])) for i in env_tasks if i.abbrev == abbrev}
    monkeypatch.setattr(_oracle, "_IDS_PER_CALL", 3)
    monkeypatch.setattr(_oracle, "_IDS_PER_PART", 2)
    split_in = 0
    for instance in (i for i in env_tasks if i.idx in whole):
        one, parts = whole[instance.idx], oracle_trace(instance, org.with_today(instance.params["today"]))
        assert parts.answer == one.answer and instance.answer in (one.answer, None)
        assert _combined(parts.calls, split, ordered) == _combined(one.calls, split, ordered)
        split_in += sum(c.name == split for c in parts.calls) > sum(c.name == split for c in one.calls)
    assert split_in, f"no {abbrev} instance had a list to split"


def test_case_routing_sends_a_products_order_items_in_parts_on_a_tie(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tie on the issue goes to the product step, which asks get_cases for the closed cases on every order item of
    # the product by the tied agents: a popular product's items at 100x the original's size exceed one statement
    # (the generated orgs never tie on the issue: a hand-made org, parts of 2 Ids here).
    from crmarena_gym.datagen import ISSUES, case_text
    from crmarena_gym.datagen._rand import Rand
    from crmarena_gym.tasks import _oracle, new_case_lines

    b = OrgBuilder(tmp_path / "org.sqlite")
    ada, bo = (b.add("User", FirstName=name, LastName="Agent") for name in ("Ada", "Bo"))
    account = b.add("Account", FirstName="Cy", LastName="Customer", ShippingState="NY")
    jacket = b.add("Product2", Name="Summit Rain Jacket")
    order = b.add("Order", AccountId=account, Status="Activated", EffectiveDate="2022-03-04")
    items = [b.add("OrderItem", OrderId=order, Product2Id=jacket, Quantity=1.0, UnitPrice=50.0) for _ in range(4)]
    defect, delay = (b.add("Issue__c", Name=name) for name in ("Product Defect", "Shipping Delay"))
    # One closed defect case each (a tie); on the jacket Ada closed two cases (one a delay) and Bo one: Ada.
    for agent, issue, item in ((ada, defect, items[0]), (bo, defect, items[1]), (ada, delay, items[3])):
        b.add(
            "Case",
            OwnerId=agent,
            CreatedDate=ts("2022-04-02 09:00"),
            ClosedDate=ts("2022-04-03 09:00"),
            Status="Closed",
            AccountId=account,
            OrderItemId__c=item,
            IssueId__c=issue,
        )
    b.close()
    local = LocalOrg(tmp_path / "org.sqlite")
    text = case_text(Rand(1), [name for name, _ in ISSUES].index("Product Defect"), "Summit Rain Jacket")
    instance = TaskInstance(
        idx=0, task="case_routing", query="Who takes this case?\n" + new_case_lines(*text), answer=ada, params={"x": 1}
    )
    whole = oracle_trace(instance, local)
    monkeypatch.setattr(_oracle, "_IDS_PER_CALL", 3)
    monkeypatch.setattr(_oracle, "_IDS_PER_PART", 2)
    parts = oracle_trace(instance, local)
    assert whole.answer == parts.answer == ada
    on_product = [c.arguments for c in parts.calls if c.name == "get_cases" and "order_item_ids" in c.arguments]
    assert [(a["order_item_ids"], a["agent_ids"]) for a in on_product] == [
        (items[:2], [ada, bo]),
        (items[2:], [ada, bo]),
    ]
    assert [c for c in whole.calls if c.name == "get_cases"][1].arguments["order_item_ids"] == items
