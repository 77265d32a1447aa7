"""The scripted user: the same conversation every time, for tests, ablations and cheap training.

Its rules, in order, for each agent message:

1. A *question* (it holds a ``?``, or starts with an asking word: what, which, when, could, please ...)
   that asks for held-back criteria (it holds one of their slot words, see
   :mod:`crmarena_gym.tasks._interactive`) is answered with exactly those criteria, in the split's order.
2. Any other question is answered with "I don't know" (in one of a few wordings, chosen by the seed).
3. A message that is not a question is the agent's answer. ``None`` ends the conversation; so does an
   answer holding an Id when an Id is wanted, or any answer when a month, state or text is wanted. An
   answer without an Id where one is wanted is met with a request for the Id.

It never says anything but its opening, the reveals of criteria it was asked for, and fixed phrases:
the gold answer is never in what it says (it is never given it).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from crmarena_gym.tasks import NONE_ANSWER, InteractiveSplit, TaskInstance
from crmarena_gym.users._base import UserReply

__all__ = ["ScriptedUser", "is_question", "looks_like_id"]

# Not "may": it is a month, and an answer (a question starting "May I" has its "?").
_ASKING = re.compile(
    r"^\W*(what|which|when|where|who|whom|whose|how|could|can|would|will|do|does|did|is|are|was|were|"
    r"should|please|tell)\b",
    re.IGNORECASE,
)
_ID = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?(?![A-Za-z0-9])")
_ID_KINDS = frozenset({"issue_id", "user_id", "product_id", "article_id", "task_ids"})
_DONT_KNOW = (
    "I don't know.",
    "Sorry, I don't know that.",
    "I'm not sure; I don't know.",
)
_ASK_ID = (
    "Could you give me the Id, please?",
    "I need the Id, not the name. What is its Id?",
)


def is_question(message: str) -> bool:
    """Whether an agent message asks something (a ``?``, or an asking word first).

    Example:
        >>> is_question("For which period?"), is_question("Please tell me the product"), is_question("005Ws0000")
        (True, True, False)
    """
    return "?" in message or bool(_ASKING.match(message))


def looks_like_id(message: str) -> bool:
    """Whether ``message`` holds a Salesforce-shaped Id (15 or 18 letters and digits, a digit among them).

    Example:
        >>> looks_like_id("It is 005Ws000001xSR9IAM."), looks_like_id("Alice Smith")
        (True, False)
    """
    return _ID.search(message) is not None


class ScriptedUser:
    """A deterministic user simulator (see the module docs for its rules).

    Example:
        >>> from crmarena_gym.tasks import InteractiveSplit, Criterion, SLOT_WORDS
        >>> split = InteractiveSplit("Which state closes cases fastest?",
        ...     (Criterion("window", "In Q1 2022.", SLOT_WORDS["window"]),), "", "state", "...")
        >>> user = ScriptedUser()
        >>> user.start(None, split, seed=0).text
        'Which state closes cases fastest?'
        >>> user.reply("For which period?").text, user.reply("OR").ended
        ('In Q1 2022.', True)
    """

    kind = "scripted"

    def __init__(self) -> None:
        self._split: InteractiveSplit | None = None
        self._rng = np.random.default_rng(0)
        self._revealed: list[str] = []
        self._turns = 0

    def start(self, instance: TaskInstance | None, split: InteractiveSplit, *, seed: int) -> UserReply:
        """The opening (the goal without the held-back criteria)."""
        self._split = split
        self._rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 2828])
        self._revealed = []
        self._turns = 0
        return UserReply(split.opening)

    def reply(self, message: str) -> UserReply:
        """Answer one agent message by the rules of the module docs."""
        if self._split is None:
            raise RuntimeError("the scripted user has no conversation: call start() first")
        self._turns += 1
        text = message.strip() if isinstance(message, str) else ""
        if is_question(text):
            asked = [c for c in self._split.criteria if c.asked_by(text)]
            if asked:
                for criterion in asked:
                    if criterion.name not in self._revealed:
                        self._revealed.append(criterion.name)
                return UserReply(" ".join(c.reveal for c in asked), revealed=tuple(c.name for c in asked))
            return UserReply(self._pick(_DONT_KNOW))
        if text.lower().rstrip(".") == NONE_ANSWER.lower():
            return UserReply("", ended=True)
        if not text:
            return UserReply(self._pick(_DONT_KNOW))
        if self._split.answer_kind in _ID_KINDS and not looks_like_id(text):
            return UserReply(self._pick(_ASK_ID))
        return UserReply("", ended=True)

    def summary(self) -> dict[str, Any]:
        """The kind, the criteria revealed so far (in order) and the turns taken."""
        return {"kind": self.kind, "revealed": list(self._revealed), "turns": self._turns}

    def _pick(self, options: tuple[str, ...]) -> str:
        return options[int(self._rng.integers(len(options)))]
