"""The scripted user: its rules, its determinism, and a fuzz showing it leaks neither gold nor unasked criteria."""

from __future__ import annotations

import re

import numpy as np
import pytest

from crmarena_gym.tasks import ASKING, SLOT_WORDS, TaskInstance, interactive_split
from crmarena_gym.users import ScriptedUser, make_user, parse_end_marker

# Questions an agent may write, with a slot word put in.
_FRAMES = (
    "Which {s} do you mean?",
    "Could you tell me the {s}?",
    "what {s}?",
    "Please give me the {s}.",
    "I need the {s} to go on. What is it?",
    "{s}?",
    "Tell me about the {s}",
    "{s}",
    "Is it about the {s} or something else?",
)
_ANSWER_LIKE = ("None", "none.", "005Ws000001xSR9IAM", "The answer is 005Ws000001xSR9IAM", "OR", "March", "Alice Smith")
_FILLER = "the a of agent case cases data record please thanks hello report month year value Id name".split()


def _random_text(rng: np.random.Generator) -> str:
    alphabet = list("abcdefghijklmnopqrstuvwxyz ?.!0123456789ABCDEFXYZ")
    return "".join(rng.choice(alphabet, size=int(rng.integers(0, 60))))


def _message(rng: np.random.Generator, slots: list[str]) -> str:
    kind = int(rng.integers(5))
    if kind == 0:  # a slot word in a question frame
        return str(rng.choice(_FRAMES)).format(s=str(rng.choice(slots)))
    if kind == 1:  # several slot words, maybe upper case
        text = " and ".join(str(rng.choice(slots)) for _ in range(int(rng.integers(1, 4)))) + "?"
        return text.upper() if rng.random() < 0.3 else text
    if kind == 2:
        return _random_text(rng)
    if kind == 3:
        return str(rng.choice(_ANSWER_LIKE))
    return " ".join(str(rng.choice(_FILLER)) for _ in range(int(rng.integers(1, 9)))) + str(rng.choice(["?", ".", ""]))


def _holds(message: str, slot: str) -> bool:
    # Independent of the user's matcher: whole words, any spacing, any case.
    words = r"\s+".join(re.escape(w) for w in slot.split())
    return re.search(rf"(?<!\w){words}(?!\w)", message, re.IGNORECASE) is not None


def _fuzzed_conversation(
    rng: np.random.Generator, slots: list[str], instance: TaskInstance, seed: int
) -> tuple[list[str], int, int]:
    """Up to 10 fuzzed agent messages to a scripted user over a seeded split of ``instance``, each reply checked to
    reveal only criteria the message asked for (by :func:`_holds`): what the user said, the messages sent and the
    criteria revealed."""
    split = interactive_split(instance, seed=int(rng.integers(1000)))
    user = ScriptedUser()
    said = [user.start(instance, split, seed=seed).text]
    sent = revealed = 0
    for _ in range(10):
        message = _message(rng, slots)
        reply = user.reply(message)
        sent += 1
        said.append(reply.text)
        asked_for = {c.name for c in split.criteria if any(_holds(message, s) for s in c.slots)}
        for criterion in split.criteria:
            if criterion.reveal in reply.text:
                assert criterion.name in asked_for, (message, reply.text)
                revealed += 1
        assert set(reply.revealed) <= asked_for
        if reply.ended:
            break
    return said, sent, revealed


def test_fuzz_never_reveals_gold_or_unasked_criteria(all_tasks: list[TaskInstance]) -> None:
    rng = np.random.default_rng(2828)
    slots = sorted({s for words in SLOT_WORDS.values() for s in words})
    messages = 0
    revealed_any = 0
    instances = [i for i in all_tasks]
    while messages < 10_000:
        instance = instances[messages % len(instances)]
        said, sent, revealed = _fuzzed_conversation(rng, slots, instance, messages)
        messages, revealed_any = messages + sent, revealed_any + revealed
        for answer in [instance.answer] if instance.answer else []:
            for text in said:
                # The answer format the single-turn query states ("for example, NY") is no disclosure.
                residue = re.sub(r"Return only[^.]*\.", "", text)
                assert not re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", residue), (instance.abbrev, answer, text)
    assert revealed_any > 500  # the fuzz did ask for criteria, often


def test_each_asking_question_asks_for_its_criterion_only(all_tasks: list[TaskInstance]) -> None:
    for instance in all_tasks:
        split = interactive_split(instance)
        for criterion in split.criteria:
            user = ScriptedUser()
            user.start(instance, split, seed=0)
            reply = user.reply(ASKING[criterion.name])
            assert reply.revealed == (criterion.name,)
            assert reply.text == criterion.reveal


def test_same_seed_same_conversation(all_tasks: list[TaskInstance]) -> None:
    script = ["Hello?", "Which period?", "Alice", "What is the question?", "None"]
    for instance in all_tasks[::5]:
        runs = []
        for _ in range(2):
            split = interactive_split(instance, seed=7)
            user = ScriptedUser()
            runs.append([user.start(instance, split, seed=7).text] + [user.reply(m).text for m in script])
        assert runs[0] == runs[1]


def test_split_holds_no_gold_and_opening_no_criterion(all_tasks: list[TaskInstance]) -> None:
    for instance in all_tasks:
        split = interactive_split(instance, seed=1)
        assert split.criteria
        for criterion in split.criteria:
            assert criterion.reveal not in split.opening
            if isinstance(criterion.value, str):
                assert criterion.value not in split.opening
        assert "Return only" in split.opening or instance.abbrev == "KQA"


def test_rules() -> None:
    from crmarena_gym.tasks import SLOT_WORDS as W
    from crmarena_gym.tasks import Criterion, InteractiveSplit

    split = InteractiveSplit(
        "Which agent stands out?",
        (Criterion("window", "In Q1 2022.", W["window"]), Criterion("direction", "The lowest.", W["direction"])),
        "",
        "user_id",
        "full",
    )
    user = ScriptedUser()
    assert user.start(None, split, seed=0).text == "Which agent stands out?"  # type: ignore[arg-type]
    assert "know" in user.reply("What is your favourite colour?").text
    assert user.reply("Alice Smith").text.endswith("?") and "Id" in user.reply("Alice Smith").text
    both = user.reply("Which period, and the lowest or highest?")
    assert both.revealed == ("window", "direction") and both.text == "In Q1 2022. The lowest."
    assert user.reply("005Ws000001xSR9IAM").ended
    assert user.reply("None").ended
    month = InteractiveSplit("Which month?", (), "", "month", "full")
    user.start(None, month, seed=0)  # type: ignore[arg-type]
    assert user.reply("May").ended  # a month, not an asking word
    user.start(None, split, seed=0)  # type: ignore[arg-type]
    user.reply("Which period?")
    user.reply("Which direction?")
    assert user.summary()["revealed"] == ["window", "direction"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("###STOP###", ("", True)),
        ("  ###STOP###  \n", ("", True)),
        ("Great, thanks.\n###STOP###", ("Great, thanks.", True)),
        ("Great ###STOP###", ("Great ###STOP###", False)),
        ("###STOP### no wait", ("###STOP### no wait", False)),
        ("###STOP ###", ("###STOP ###", False)),
    ],
)
def test_end_marker_is_parsed_strictly(text: str, expected: tuple[str, bool]) -> None:
    assert parse_end_marker(text) == expected


def test_make_user_refuses_unknown_specs() -> None:
    with pytest.raises(ValueError, match="scripted"):
        make_user("gpt-4o")
    with pytest.raises(ValueError, match="scripted"):
        make_user("litellm:")
