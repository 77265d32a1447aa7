"""The NCR, NED, PVI and KQA drawers on a hand-made org whose answers were worked out by hand.

These tests check the drawers' logic on every draw the org allows, so they use the ``legacy``
distribution: the default one also asks for competition (two look-alike purchases for NED) and caps
how often one answer is gold, which seven cases and six products cannot give.

The org (built below) has three agents, two issues, six products, four customers and seven cases;
its latent table (written by hand, as the generator would) names two violations whose words are in
the conversations, one whose words are not (so it must never be asked about), two clean cases and
two knowledge facts. The products have no latent attributes, so NED phrases them from their names.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crmarena_gym.datagen import LATENT_TABLE
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import (
    ROUTING_POLICY,
    TaskGenerationError,
    generate_tasks,
    instance_key,
    oracle_trace,
    score_answer,
)
from crmarena_gym.tasks._generate import (
    ProductProfile,
    _draw_named_entity,
    name_words,
    read_org_facts,
)
from crmarena_gym.tasks._purchase import _DAYS_AGO, read_purchase_day, say_purchase_day
from tests.org_builder import OrgBuilder, ts

PRODUCTS = {
    "P1": "Women's Trail Running Shoes",
    "P2": "Summit Rain Jacket",
    "P3": "Alpine Rain Jacket",
    "P4": "Kids' Swim Goggles",
    "P5": "Velocity Yoga Mat",
    "P6": "Lotus Yoga Mat",
}
# (account, day, status, products)
ORDERS = [
    ("acc1", "2023-03-01", "Activated", ["P1", "P2"]),
    ("acc1", "2023-03-05", "Draft", ["P3"]),
    ("acc2", "2023-03-02", "Activated", ["P3", "P4"]),
    ("acc3", "2023-03-10", "Activated", ["P5", "P1"]),
    ("acc4", "2023-03-12", "Activated", ["P2", "P5", "P6"]),  # two yoga mats: never asked about
]
# (case, issue, product, owner, closed)
CASES = [
    ("c1", "defect", "P1", "A", True),
    ("c2", "defect", "P2", "A", True),
    ("c3", "defect", "P1", "B", True),
    ("c4", "delay", "P2", "A", True),
    ("c5", "delay", "P4", "B", True),
    ("c6", "delay", "P4", "C", False),
    ("c7", "defect", "P5", "A", False),
]
# Worked by hand from CASES. Product Defect: A closed 2, B closed 1, so A whatever the product.
# Shipping Delay: A and B closed one each (tie). Closed cases per product (any issue): P1 A1 B1,
# P2 A2, P4 B1, P5 none. Open cases: A one (c7), B none, C one.
ROUTING = {
    ("defect", "P1"): "A",
    ("defect", "P2"): "A",
    ("defect", "P4"): "A",
    ("defect", "P5"): "A",
    ("delay", "P1"): "B",  # product tie (1-1), B has fewer open cases
    ("delay", "P2"): "A",  # A closed two cases on P2
    ("delay", "P4"): "B",  # B closed one case on P4
    ("delay", "P5"): "B",  # nobody closed a P5 case, B has fewer open cases
}
EVIDENCE = {
    # Breaking replies in the generator's words (datagen's policies), which the oracle reads.
    "c1": "If you keep the shoes, I can refund 30% of the price right away.",
    "c4": "To make up for the delay, I've added a $25 store credit to your account.",
    "c3": "These words are in the latent table but not in any conversation.",
}


@pytest.fixture(scope="module")
def org(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("drawers") / "org.sqlite"
    return path, _build_org(path)


def _build_org(path: Path, *, look_alikes: bool = False) -> dict[str, str]:
    """The hand-made org at ``path``; with ``look_alikes``, a second issue named Product Defect and an ordered product
    whose name holds every word of P1's (a search for P1's name finds both)."""
    b = OrgBuilder(path)
    ids: dict[str, str] = {}
    for agent in "ABC":
        ids[agent] = b.add("User", FirstName=agent, LastName="Agent")
    for n in range(1, 5):
        ids[f"acc{n}"] = b.add("Account", FirstName=f"Cust{n}", LastName="Person", ShippingState="CA")
        ids[f"ct{n}"] = b.add("Contact", AccountId=ids[f"acc{n}"], FirstName=f"Cust{n}", LastName="Person")
    for key, name in PRODUCTS.items():
        ids[key] = b.add("Product2", Name=name)
    ids["defect"] = b.add("Issue__c", Name="Product Defect")
    ids["delay"] = b.add("Issue__c", Name="Shipping Delay")
    if look_alikes:
        ids["defect2"] = b.add("Issue__c", Name="Product Defect")
        ids["P1+"] = b.add("Product2", Name=PRODUCTS["P1"] + " Pro")
        order = b.add("Order", AccountId=ids["acc4"], Status="Activated", EffectiveDate="2023-03-20")
        b.add("OrderItem", OrderId=order, Product2Id=ids["P1+"], Quantity=1.0, UnitPrice=9.0)
    items: dict[str, str] = {}
    for account, day, status, products in ORDERS:
        order = b.add("Order", AccountId=ids[account], Status=status, EffectiveDate=day)
        for p in products:
            items.setdefault(p, b.add("OrderItem", OrderId=order, Product2Id=ids[p], Quantity=1.0, UnitPrice=9.0))
    for n, (case, issue, product, owner, closed) in enumerate(CASES):
        created = f"2023-04-{n + 1:02d} 10:00"
        ids[case] = b.add(
            "Case",
            OwnerId=ids[owner],
            Subject=f"Case {case}",
            CreatedDate=ts(created),
            ClosedDate=ts(f"2023-04-{n + 1:02d} 15:00") if closed else None,
            Status="Closed" if closed else "New",
            AccountId=ids["acc1"],
            OrderItemId__c=items[product],
            IssueId__c=ids[issue],
        )
    chat = "[2023-04-01T10:05:00] Cust1 Person (Customer): Hi\n[2023-04-01T10:06:00] A Agent (Agent): {text}"
    b.add("LiveChatTranscript", CaseId=ids["c1"], Body=chat.format(text=EVIDENCE["c1"]), EndTime=ts("2023-04-01 10:07"))
    b.add(
        "LiveChatTranscript", CaseId=ids["c2"], Body=chat.format(text="Happy to help."), EndTime=ts("2023-04-02 10:07")
    )
    b.add("LiveChatTranscript", CaseId=ids["c3"], Body=chat.format(text="All sorted."), EndTime=ts("2023-04-03 10:07"))
    b.add("EmailMessage", ParentId=ids["c4"], Subject="Re: late", TextBody=f"Dear Cust,\n\n{EVIDENCE['c4']}")
    b.add("EmailMessage", ParentId=ids["c5"], Subject="Re: late", TextBody="Dear Cust,\n\nIt ships tomorrow.")
    # The policy articles state the rules the replies break (the oracle finds the article by the rule it states).
    rule = "A customer who keeps a defective item may be offered a partial refund of at most 20% of the price."
    ids["K1"] = b.add(
        "Knowledge__kav", Title="Defective Product Claims", FAQ_Answer__c=f"Never refund more.\n\n1. {rule}"
    )
    rule = "Delay compensation never exceeds the standard shipping fee of $6.95; no extra vouchers or store credit are "
    rule += "issued for a delay."
    ids["K2"] = b.add("Knowledge__kav", Title="Shipping Delays and Compensation", FAQ_Answer__c=f"Pay.\n\n1. {rule}")
    ids["K3"] = b.add(
        "Knowledge__kav", Title="Choosing a Yoga Mat", FAQ_Answer__c="Care:\nThe Lotus Yoga Mat is made of cork."
    )
    for article in ("K1", "K2", "K3"):
        b.conn.execute(
            "UPDATE Knowledge__kav SET PublishStatus = 'Online', Language = 'en_US' WHERE Id = ?", (ids[article],)
        )
    latent: dict[str, Any] = {
        "policy_articles": {ids["defect"]: ids["K1"], ids["delay"]: ids["K2"]},
        "violations": {
            ids[c]: {"article_id": ids[k], "rule": 0, "evidence": EVIDENCE[c], "medium": m}
            for c, k, m in (("c1", "K1", "chat"), ("c4", "K2", "email"), ("c3", "K1", "chat"))
        },
        "clean_cases": [ids["c2"], ids["c5"]],
        "kqa_facts": [
            # Facts in the generator's forms (a care line, a policy's rule), which the oracle reads back.
            {"article_id": ids["K3"], "question": "What is the Lotus Yoga Mat made of?", "answer": "cork"},
            {
                "article_id": ids["K1"],
                "question": "What is the largest partial refund for keeping a defective item?",
                "answer": "20% of the price",
            },
        ],
    }
    b.conn.execute(f"CREATE TABLE {LATENT_TABLE} (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    b.conn.executemany(f"INSERT INTO {LATENT_TABLE} VALUES (?, ?)", [(k, json.dumps(v)) for k, v in latent.items()])
    b.close()
    return ids


def _key_of(ids: dict[str, str], value: str) -> str:
    return next(k for k, v in ids.items() if v == value)


def test_case_routing_follows_the_policy_on_every_issue_and_product(org: tuple[Path, dict[str, str]]) -> None:
    path, ids = org
    instances = generate_tasks(path, seed=3, per_task=8, tasks=["NCR"], distribution="legacy")
    seen = set()
    for inst in instances:
        p = inst.params
        combo = (_key_of(ids, p["issue_id"]), _key_of(ids, p["product_id"]))
        seen.add(combo)
        assert inst.answer == ids[ROUTING[combo]], combo
        assert inst.metadata.required == ROUTING_POLICY
        # The case is shown, and it names the product so that the product rule can be applied.
        assert (
            f"- Subject: {p['case_subject']}" in inst.query and f"- Description: {p['case_description']}" in inst.query
        )
        assert PRODUCTS[combo[1]] in p["case_subject"] + p["case_description"]
    assert seen == set(ROUTING)  # all eight combinations, none twice


def test_case_routing_draws_only_cases_an_agent_can_route(tmp_path: Path) -> None:
    """Two issues named Product Defect cannot be told apart by a reader: no case is drawn on either. A search for
    P1's name also finds an ordered look-alike, so a Shipping Delay case about P1 (a tie that the product decides) is
    never drawn either; the other products' Shipping Delay cases are, with the answers worked out by hand."""
    path = tmp_path / "org.sqlite"
    ids = _build_org(path, look_alikes=True)
    instances = generate_tasks(path, seed=3, per_task=8, tasks=["NCR"], distribution="legacy", allow_fewer=True)
    combos = [(_key_of(ids, i.params["issue_id"]), _key_of(ids, i.params["product_id"])) for i in instances]
    assert set(combos) == {("delay", "P2"), ("delay", "P4"), ("delay", "P5")}
    assert [i.answer for i in instances] == [ids[ROUTING[combo]] for combo in combos]
    org = LocalOrg(path)
    assert all(oracle_trace(i, org).answer == i.answer for i in instances)


def _expected_purchase(ids: dict[str, str], contact: str, day: str, words: frozenset[str]) -> list[str]:
    account = "acc" + _key_of(ids, contact)[2:]
    return sorted(
        ids[p]
        for acc, d, status, products in ORDERS
        if acc == account and d == day and status == "Activated"
        for p in products
        if words <= name_words(PRODUCTS[p])
    )


def test_named_entity_answers_are_the_unique_matching_purchase_of_that_day(org: tuple[Path, dict[str, str]]) -> None:
    path, ids = org
    instances = generate_tasks(path, seed=5, per_task=10, tasks=["NED"], distribution="legacy")
    assert sum(i.answer is None for i in instances) == 3
    for inst in instances:
        p = inst.params
        expected = _expected_purchase(ids, p["contact_id"], p["purchase_date"], name_words(p["search_term"]))
        assert len(expected) <= 1, p  # two matching purchases that day would make the question ambiguous
        assert inst.answer == (expected[0] if expected else None), p
        if inst.answer is not None:
            assert p["described_product_id"] == inst.answer
        assert inst.answer != ids["P3"] or p["contact_id"] == ids["ct2"]  # P3 of ct1 is a draft order only
        # Name-based profiles: the type is the name's last two words, in the description.
        assert p["search_term"].lower() in p["description"]
        assert p["description"] in inst.query
        assert inst.metadata.required == f"- Contact Id of the customer you are assisting: {p['contact_id']}\n" + (
            f"- Today's date: {p['today']}"
        )
        days = (dt.date.fromisoformat(p["today"]) - dt.date.fromisoformat(p["purchase_date"])).days
        assert 1 <= days <= 28


def test_every_named_entity_draw_is_unambiguous(org: tuple[Path, dict[str, str]]) -> None:
    path, ids = org
    conn = sqlite3.connect(path)
    facts = read_org_facts(conn)
    rng = np.random.default_rng(11)
    kinds = set()
    for _ in range(3000):
        d = _draw_named_entity(facts, rng)
        if d is None:
            continue
        p = d.params
        expected = _expected_purchase(ids, p["contact_id"], p["purchase_date"], name_words(p["search_term"]))
        # Every draw has at most one matching purchase (the two yoga mats of ct4 are never asked
        # about), and a matching purchase is the product the description was made from.
        assert len(expected) <= 1 and d.answers == expected, p
        assert d.answers in ([], [p["described_product_id"]]), p
        kinds.add(bool(d.answers))
    conn.close()
    assert kinds == {False, True}


_WORDS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
_WORDS |= {"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "exactly a": 1}


def _days_from_phrase(phrase: str, day: dt.date) -> int | dt.date:
    if phrase == "yesterday":
        return 1
    if phrase == "the day before yesterday":
        return 2
    if phrase == "a fortnight ago":
        return 14
    if phrase.startswith("on "):
        text = phrase[3:]
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            return dt.datetime.strptime(text, "%B %d, %Y").date()
    m = re.fullmatch(r"(.+?) (days|weeks?) (ago|back)", phrase)
    assert m, phrase
    amount = int(m.group(1)) if m.group(1).isdigit() else _WORDS[m.group(1)]
    return amount * (7 if m.group(2).startswith("week") else 1)


@pytest.mark.parametrize("days", [*range(1, 15), 21, 28])
def test_days_ago_phrases_name_the_exact_day(days: int) -> None:
    day = dt.date(2024, 2, 29)
    rng = np.random.default_rng(days)
    today = day + dt.timedelta(days=days)
    for _ in range(60):
        phrase = say_purchase_day(rng, days, day)
        assert _days_from_phrase(phrase, day) in (days, day), phrase
        assert read_purchase_day(phrase, today) == day, phrase  # the solver's reading, today from the context
    assert all(_days_from_phrase(p, day) == n for n, ps in _DAYS_AGO.items() for p in ps)


def test_purchase_day_reader_refuses_what_names_no_day() -> None:
    today = dt.date(2024, 3, 1)
    for phrase in ("some time ago", "on Smarch 3, 2024", "on 2024-02-30", "many days ago", "on February 30, 2024"):
        assert read_purchase_day(phrase, today) is None, phrase


def test_product_profile_from_attributes_and_from_the_name() -> None:
    attrs = {"type": "Trail Running Shoes", "audience": "women", "colour": "Navy", "adjective": "Lightweight"}
    profile = ProductProfile.of("01t", "Women's Lightweight Trail Running Shoes", attrs)
    assert (profile.type, profile.audience, profile.details) == (
        "Trail Running Shoes",
        "women's",
        {"colour": "navy", "adjective": "lightweight"},
    )
    # An adjective the name does not carry is not offered; a unisex product has no audience.
    profile = ProductProfile.of(
        "01t", "Summit Rain Jacket", {"type": "Rain Jacket", "audience": "unisex", "adjective": "Pro"}
    )
    assert (profile.audience, profile.details) == (None, {})
    assert ProductProfile.of("01t", "Kids' Swim Goggles", None).type == "Swim Goggles"
    assert ProductProfile.of("01t", "Kids' Goggles", None).type == "Goggles"  # the audience is not the type


def test_policy_violation_answers_come_from_the_latent_violations(org: tuple[Path, dict[str, str]]) -> None:
    path, ids = org
    instances = generate_tasks(path, seed=1, per_task=3, tasks=["PVI"])
    by_case = {_key_of(ids, i.params["case_id"]): i for i in instances}
    assert set(by_case) in ({"c1", "c4", "c2"}, {"c1", "c4", "c5"})  # never c3: its words are nowhere
    assert by_case["c1"].answer == ids["K1"] and by_case["c4"].answer == ids["K2"]
    clean = by_case.get("c2") or by_case["c5"]
    assert clean.answer is None and clean.params["evidence"] is None
    # The search term of a clean case is its issue's policy: c2 is a defect case, c5 a delay case.
    assert clean.params["search_term"] == (
        "Defective Product Claims" if "c2" in by_case else "Shipping Delays and Compensation"
    )
    for inst in instances:
        assert inst.metadata.required == f"- Id of the case to review: {inst.params['case_id']}"
        assert "None" in inst.query


def test_knowledge_questions_are_the_latent_facts(org: tuple[Path, dict[str, str]]) -> None:
    path, ids = org
    instances = generate_tasks(path, seed=2, per_task=2, tasks=["KQA"])
    got = sorted((i.answer, i.params["article_id"], i.params["search_term"]) for i in instances)
    assert got == [
        ("20% of the price", ids["K1"], "Defective Product Claims"),
        ("cork", ids["K3"], "Choosing a Yoga Mat"),
    ]
    for inst in instances:
        assert inst.params["question"] in inst.query
        assert inst.reward_metric == "fuzzy_match"


def test_oracle_solves_the_hand_made_instances(org: tuple[Path, dict[str, str]]) -> None:
    path, _ = org
    instances = generate_tasks(path, seed=7, per_task=2, tasks=["NCR", "NED", "PVI", "KQA"], distribution="legacy")
    local = LocalOrg(path)
    for inst in instances:
        assert score_answer(oracle_trace(inst, local).answer, inst.answer, metric=inst.reward_metric).reward == 1.0


def test_too_few_distinct_questions_is_an_error_unless_fewer_are_allowed(org: tuple[Path, dict[str, str]]) -> None:
    path, _ = org
    first = generate_tasks(path, seed=0, per_task=1, tasks=["KQA"])
    exclude = {instance_key("KQA", first[0].params)}
    with pytest.raises(TaskGenerationError, match="could not draw 2 answerable"):
        generate_tasks(path, seed=0, per_task=2, tasks=["KQA"], exclude=exclude, max_draws_per_instance=50)
    few = generate_tasks(path, seed=0, per_task=5, tasks=["KQA"], exclude=exclude, allow_fewer=True)
    assert len(few) == 1 and few[0].params["question"] != first[0].params["question"]  # the org states two facts


def test_tasks_needing_latent_variables_say_so(tmp_path: Path) -> None:
    b = OrgBuilder(tmp_path / "plain.sqlite")
    agent = b.add("User", FirstName="A", LastName="Agent")
    b.add("Case", OwnerId=agent, CreatedDate=ts("2023-01-01 10:00"), Status="New")
    b.close()
    for task in ("PVI", "KQA"):
        with pytest.raises(TaskGenerationError, match=f"task {task} needs the latent variable"):
            generate_tasks(tmp_path / "plain.sqlite", per_task=1, tasks=[task])
