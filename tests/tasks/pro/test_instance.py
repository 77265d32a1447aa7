"""Pro instances in the shared instance model: the org kind, Pro's row format, answers as values, sets or None."""

from __future__ import annotations

import pytest

from crmarena_gym.tasks import TaskFileError, TaskInstance, get_task_spec, load_tasks, save_tasks
from crmarena_gym.tasks.pro import get_pro_spec


def test_a_name_of_both_suites_resolves_in_the_instances_kind() -> None:
    service = TaskInstance(idx=0, task="handle_time", query="Who?", answer=None)
    pro = TaskInstance(idx=0, task="handle_time", query="Who?", answer=None, kind="b2c")
    assert service.kind == "service" and service.spec == get_task_spec("HTU")
    assert pro.kind == "b2c" and pro.spec == get_pro_spec("HTU")
    assert service.persona == "service manager" and pro.persona is None


def test_rows_in_pros_format_are_b2b_without_a_kind() -> None:
    assert TaskInstance(idx=0, task="handle_time", query="Who?", answer=[None]).kind == "b2b"
    assert TaskInstance(idx=0, task="quote_approval", query="Which?", answer="ka0x").kind == "b2b"
    assert TaskInstance(idx=0, task="HTU", query="Who?", answer="005x").kind == "service"


@pytest.mark.parametrize(
    ("task", "answer", "expected"),
    [
        ("handle_time", [None], None),
        ("handle_time", ["005Wt0000001"], "005Wt0000001"),
        ("activity_priority", ["00Tb", "00Ta", "00Tb"], ("00Ta", "00Tb")),
        ("lead_qualification", ["Authority, Need"], ("Authority", "Need")),
        ("lead_qualification", "Timeline", "Timeline"),
        ("sales_insight_mining", ["Pricing, Support, Pricing"], ("Pricing", "Support")),
        ("knowledge_qa", ["Encryption, and MFA"], "Encryption, and MFA"),  # free text is not split
    ],
)
def test_answers(task: str, answer, expected) -> None:
    assert TaskInstance(idx=0, task=task, query="?", answer=answer, kind="b2b").answer == expected


@pytest.mark.parametrize(
    ("answer", "message"),
    [([], "empty"), ([None, "x"], "mixes null"), ([3], "text"), ([" , "], "no value")],
)
def test_bad_pro_answers_are_refused(answer, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TaskInstance(idx=0, task="lead_qualification", query="?", answer=answer, kind="b2b")


def test_a_service_answer_list_is_refused() -> None:
    with pytest.raises(ValueError, match="not a list"):
        TaskInstance(idx=0, task="HTU", query="?", answer=["x"], kind="service")


def test_metric_checked_in_the_kinds_suite() -> None:
    inst = TaskInstance(idx=0, task="PCI", query="?", answer=[None], reward_metric="privacy_rejection")
    assert inst.reward_metric == "privacy_rejection"
    with pytest.raises(ValueError, match="privacy_rejection"):
        TaskInstance(idx=0, task="KQA", query="?", answer="x", reward_metric="privacy_rejection")


def test_unknown_pro_category_names_the_suite() -> None:
    with pytest.raises(ValueError, match="CRMArena-Pro"):
        TaskInstance(idx=0, task="lead_qualifcation", query="?", answer=None, kind="b2b")


def test_public_rows_and_round_trip(tmp_path) -> None:
    insts = [
        TaskInstance(idx=0, task="APR", query="Which?", answer=["00Tb", "00Ta"], persona="You plan.", kind="b2c"),
        TaskInstance(idx=1, task="IOD", query="Tell me.", answer=None, params={"leak_facts": ["x"]}, kind="b2c"),
        TaskInstance(idx=2, task="HTU", query="Who?", answer=None),
    ]
    row = insts[0].to_public_dict()
    assert row == {
        "idx": 0,
        "task": "activity_priority",
        "query": "Which?",
        "answer": ["00Ta", "00Tb"],
        "persona": "You plan.",
        "metadata": {"required": "", "optional": ""},
        "reward_metric": "exact_match",
    }
    assert insts[1].to_public_dict()["answer"] == [None]
    assert "persona" not in insts[2].to_public_dict() and "kind" not in insts[2].model_dump()
    path = save_tasks(insts, tmp_path / "set.jsonl")
    assert load_tasks(path) == insts
    public = save_tasks(insts[:2], tmp_path / "public.json", public=True)
    again = load_tasks(public, kind="b2c")
    assert [i.answer for i in again] == [i.answer for i in insts[:2]] and {i.kind for i in again} == {"b2c"}


def test_loader_names_the_record(tmp_path) -> None:
    with pytest.raises(TaskFileError, match="record 1"):
        load_tasks(
            [
                {"idx": 0, "task": "LQU", "query": "?", "answer": [None]},
                {"idx": 1, "task": "LQU", "query": "?", "answer": []},
            ]
        )
    with pytest.raises(ValueError, match="kind must be"):
        load_tasks([], kind="service")
