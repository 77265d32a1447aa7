"""Baselines that learn nothing from the observations, to set beside every learning figure.

- :class:`~crmarena_gym.rl.RandomCandidatePolicy`: a random candidate at each step.
- :func:`search_fixed_orders`: per family, the fixed sequence of slot numbers that scores best on the
  training instances, played blind (:class:`FixedSlotOrder`: slot ``k`` at step ``k`` whatever the
  observation says). Where a family's pipeline is a fixed walk through the slots, this baseline solves it
  without reading anything; what a learned policy adds is what it scores above this.
- :func:`answer_priors`: per family, the most frequent training answer (None among them), submitted for
  every question: what the answer distribution alone gives.
"""

from __future__ import annotations

import copy
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from crmarena_gym.rl._candidates import CandidateState, StepRecord, call_text, found_nothing
from crmarena_gym.rl._checks import require_positive_ints
from crmarena_gym.rl._rollout import evaluate_policy
from crmarena_gym.rl._typed import PendingCall
from crmarena_gym.rl._wrapper import CandidateActionWrapper
from crmarena_gym.tasks import TaskInstance, score_answer

__all__ = ["AnswerPrior", "FixedOrder", "FixedSlotOrder", "answer_priors", "search_fixed_orders"]


class FixedSlotOrder:
    """A policy that plays, per family, a fixed sequence of slot numbers, whatever the observation.

    At the ``k``-th step of an episode it plays ``orders[family][k]``; past the sequence's end it plays its
    last slot again (an ended sequence ends on a submission; where that slot is empty the turns run out).
    :func:`~crmarena_gym.rl.evaluate_policy` tells it each episode's family (``begin_episode``).

    Args:
        orders: Family abbreviation to its slot sequence.

    Example:
        >>> policy = FixedSlotOrder({"TII": (8, 9, 20, 36)})
        >>> policy.begin_episode({"abbrev": "TII"})
        >>> [policy({}) for _ in range(5)]
        [8, 9, 20, 36, 36]
    """

    def __init__(self, orders: Mapping[str, Sequence[int]]) -> None:
        for family, slots in orders.items():
            if not slots or not all(isinstance(s, int | np.integer) and s >= 0 for s in slots):
                raise ValueError(f"the order of {family} must be a non-empty sequence of slot numbers, got {slots!r}")
        self.orders = {family: tuple(int(s) for s in slots) for family, slots in orders.items()}
        self.family: str | None = None
        self.step = 0

    def begin_episode(self, info: Mapping[str, Any]) -> None:
        """Start an episode of the family ``info["abbrev"]``."""
        family = info.get("abbrev")
        if family not in self.orders:
            raise ValueError(f"no slot order for family {family!r} (orders for {sorted(self.orders)})")
        self.family, self.step = str(family), 0

    def __call__(self, obs: Mapping[str, np.ndarray]) -> int:
        if self.family is None:
            raise RuntimeError("call begin_episode(info) at the start of each episode")
        order = self.orders[self.family]
        slot = order[min(self.step, len(order) - 1)]
        self.step += 1
        return slot


@dataclass(frozen=True)
class FixedOrder:
    """The best fixed slot sequence found for a family.

    Attributes:
        family: The family's abbreviation.
        slots: The slot numbers, in order.
        names: The slots' names.
        train_score: Its mean reward on the training instances (played through the environment).
        searched: How many sequences the search scored.
    """

    family: str
    slots: tuple[int, ...]
    names: tuple[str, ...]
    train_score: float
    searched: int


class _Memo(gym.Wrapper[str, str, str, str]):
    """The text environment with each (instance, action) answered once.

    With the ``functions`` toolset an action's answer does not depend on the steps before it (a function
    call, an error, a submission's score), so the search replays nothing: a new action is played on a fresh
    episode of its instance and its answer kept; the turn count and the turn limit are kept here.
    """

    def __init__(self, env: gym.Env[str, str], max_turns: int) -> None:
        super().__init__(env)
        self.max_turns = max_turns
        self.cache: dict[tuple[int, str], tuple[str, SupportsFloat, bool, dict[str, Any]]] = {}
        self.idx = -1
        self.turn = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self.idx, self.turn = int(info["idx"]), 0
        return observation, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        self.turn += 1
        key = (self.idx, action)
        if key not in self.cache:
            self.env.reset(options={"task_id": self.idx})
            observation, reward, terminated, _truncated, info = self.env.step(action)
            self.cache[key] = (observation, reward, terminated, info)
        observation, reward, terminated, info = self.cache[key]
        truncated = not terminated and self.turn >= self.max_turns
        return observation, reward, terminated, truncated, {**info, "turn": self.turn}


class _Nothing:
    """An encoder and featurizer of one zero: the search reads slots, not features."""

    size = 1

    def encode(self, state: CandidateState, slots: Sequence[str | None], sources: Sequence[str | None]) -> np.ndarray:
        return np.zeros(1, dtype=np.float32)

    def features(self, state: CandidateState, slots: Sequence[str | None], sources: Sequence[str | None]) -> np.ndarray:
        return np.zeros((len(slots), 1), dtype=np.float32)


@dataclass
class _Episode:
    """One instance's episode under a slot prefix: the wrapper's state to resume from, or how it ended."""

    state: CandidateState | None
    slots: list[str | None]
    turn: int
    done: bool = False
    reward: float = 0.0
    productive: int = 0  # calls that returned something new, twice those that took the step before's result
    informed: bool = False  # the last step was a new call that answered (found something or nothing), or typing

    def signature(self) -> tuple[Any, ...]:
        if self.state is None:
            return (self.done, self.reward)
        # The calls made as a set, and the last: two orders of the same calls that end alike offer the same.
        history = self.state.history
        sent = frozenset(step.action for step in history)
        last = history[-1].action if history else ""
        pending = self.state.pending
        typing = "" if not isinstance(pending, PendingCall) else call_text(pending.function, pending.filled)
        return (self.done, self.reward, sent, last, typing, getattr(pending, "index", -1))


#: The progress of a whole pipeline (HTU's six calls, four of them taking the result before theirs, make ten).
_FULL = 12


def _pasted(step: StepRecord, action: str) -> bool:
    """Whether ``action`` carries ``step``'s result (a call chained to the one before it)."""
    if not step.ok or found_nothing(step.result):
        return False
    return json.dumps(step.result, ensure_ascii=False, separators=(", ", ": ")) in action


class _Search:
    """The beam search of :func:`search_fixed_orders` for one family."""

    def __init__(self, env: CandidateActionWrapper, memo: _Memo, instances: list[TaskInstance]) -> None:
        self.env, self.memo, self.instances = env, memo, instances
        self.scored = 0

    def start(self) -> list[_Episode]:
        out = []
        for inst in self.instances:
            self.env.reset(options={"task_id": inst.idx})
            assert self.env.state is not None
            out.append(_Episode(self._copy(self.env.state), list(self.env.slots), 0))
        return out

    @staticmethod
    def _copy(state: CandidateState) -> CandidateState:
        """A copy to step on: its own history list and call being typed (the records are shared, never changed)."""
        out = copy.copy(state)
        out.history = list(state.history)
        if isinstance(state.pending, PendingCall):
            out.pending = copy.copy(state.pending)
            out.pending.filled = dict(state.pending.filled)
        return out

    def advance(self, episodes: list[_Episode], slot: int) -> list[_Episode]:
        out = []
        for inst, episode in zip(self.instances, episodes, strict=True):
            if episode.done:
                out.append(episode)
                continue
            assert episode.state is not None
            state = self._copy(episode.state)
            self.env.state, self.env.slots = state, list(episode.slots)
            self.memo.idx, self.memo.turn = inst.idx, episode.turn
            before = len(state.history)
            sent = {step.action for step in state.history}
            _obs, reward, terminated, truncated, _info = self.env.step(slot)
            productive, informed = episode.productive, len(state.history) == before  # no environment step: typing
            if len(state.history) > before:
                last = state.history[-1]
                informed = last.ok and last.action not in sent
                if informed and last.result not in (None, [], {}, ""):
                    previous = state.history[-2] if len(state.history) > 1 else None
                    productive += 1 + int(previous is not None and _pasted(previous, last.action))
            if terminated or truncated:
                out.append(_Episode(None, [], self.memo.turn, True, float(reward), productive, True))
            else:
                out.append(_Episode(state, list(self.env.slots), self.memo.turn, False, 0.0, productive, informed))
        self.scored += 1
        return out

    @staticmethod
    def ended(episodes: list[_Episode]) -> float:
        """The mean reward if the sequence stopped here (the episodes not ended count 0)."""
        return sum(e.reward for e in episodes if e.done) / len(episodes)

    @staticmethod
    def rank(episodes: list[_Episode]) -> tuple[float, float]:
        """How promising a prefix is: its best possible score (each episode not ended counted as a success
        to come), then its progress: per episode, the calls that returned something new, those chained to
        the call before counting twice (at most :data:`_FULL`), an ended episode counting its reward times
        :data:`_FULL` (a success is done)."""
        going = sum(not e.done for e in episodes)
        optimistic = (sum(e.reward for e in episodes if e.done) + going) / len(episodes)
        progress = sum(_FULL * e.reward if e.done else min(e.productive, _FULL) for e in episodes) / len(episodes)
        return optimistic, progress


def search_fixed_orders(
    env: CandidateActionWrapper,
    instances: Iterable[TaskInstance],
    *,
    beam: int = 128,
    depth: int = 12,
    keep: int = 4,
) -> dict[str, FixedOrder]:
    """Per family, the fixed slot sequence that scores best on ``instances`` (the training instances).

    A beam search over slot sequences: each sequence is played blind on every instance of the family at
    once (a slot empty in an instance is a wasted turn there, as it is for the policy). The sequences of a
    depth are extended by every slot some instance offers (not by one that only wastes a turn in every
    episode still going: an error, a repeated call, an empty slot); two sequences that make the same calls
    and end on the same one are kept once; the ``beam`` most promising are kept: the best score still
    possible (the episodes ended, plus one for each episode still going), then the most calls that returned
    something new, a call that took the result of the one before counting twice (an episode ended with a
    success counting as a whole pipeline). Every sequence
    that ends an episode with a submission is a candidate; the ``keep`` candidates with the best mean reward
    (the episodes not ended counting 0) are then played through the environment itself
    (:class:`FixedSlotOrder`, turns run out included), and the best of them is returned (ties: the shorter).

    Args:
        env: The wrapped environment holding ``instances`` (its level and generator are searched; its step
            cost, if any, counts in the scores).
        instances: The training instances.
        beam: Sequences kept per depth.
        depth: The longest sequence.
        keep: Sequences played through the environment at the end.

    Returns:
        Family abbreviation to its :class:`FixedOrder`.
    """
    require_positive_ints(beam=beam, depth=depth, keep=keep)
    by_family: dict[str, list[TaskInstance]] = defaultdict(list)
    for inst in instances:
        by_family[inst.abbrev].append(inst)
    memo = _Memo(env.env, env.max_turns)
    search_env = CandidateActionWrapper(
        memo,
        env.generator,
        _Nothing(),  # type: ignore[arg-type]
        _Nothing(),  # type: ignore[arg-type]
        max_turns=env.max_turns,
        text_in_info=False,
        level=env.level,
    )
    found: dict[str, FixedOrder] = {}
    for family, chosen in sorted(by_family.items()):
        search = _Search(search_env, memo, chosen)
        frontier: list[tuple[tuple[int, ...], list[_Episode]]] = [((), search.start())]
        complete: list[tuple[float, tuple[int, ...]]] = []
        for _ in range(depth):
            children: dict[tuple[Any, ...], tuple[tuple[int, ...], list[_Episode]]] = {}
            for prefix, episodes in frontier:
                offered = sorted(
                    {i for e in episodes if not e.done for i, text in enumerate(e.slots) if text is not None}
                )
                for slot in offered:
                    after = search.advance(episodes, slot)
                    if not any(a.informed for a, e in zip(after, episodes, strict=True) if not e.done):
                        continue  # a wasted step in every episode going on (an error, a repeat, an empty slot)
                    key = tuple(e.signature() for e in after)
                    if key not in children:  # two slots that did the same everywhere are one sequence
                        children[key] = ((*prefix, slot), after)
                        if any(e.done for e in after) and slot in _submissions(episodes):
                            complete.append((search.ended(after), (*prefix, slot)))
            ranked = sorted(children.values(), key=lambda child: (*(-x for x in search.rank(child[1])), child[0]))
            frontier = [(p, e) for p, e in ranked if not all(x.done for x in e)][:beam]
            if not frontier:
                break
        if not complete:
            raise RuntimeError(f"no slot sequence of at most {depth} steps submits an answer in family {family}")
        best_first = sorted(complete, key=lambda c: (-c[0], len(c[1]), c[1]))[:keep]
        played = []
        ids = [inst.idx for inst in chosen]
        for _approx, slots in best_first:
            score = evaluate_policy(env, FixedSlotOrder({family: slots}), ids).overall()
            played.append((score, slots))
        score, slots = sorted(played, key=lambda c: (-c[0], len(c[1]), c[1]))[0]
        names = tuple(env.generator.slot_names[s] for s in slots)
        found[family] = FixedOrder(family, slots, names, score, search.scored)
    return found


def _submissions(episodes: list[_Episode]) -> set[int]:
    return {i for e in episodes if not e.done for i, text in enumerate(e.slots) if text and text.startswith("submit ")}


@dataclass(frozen=True)
class AnswerPrior:
    """The answer-prior baseline of a family.

    Attributes:
        family: The family's abbreviation.
        answer: The most frequent training answer (None: the question has no answer).
        train_share: Its share of the training instances.
        score: Its mean reward on the held-out instances, submitted for each (the family's own metric).
        held_out: The number of held-out instances.
    """

    family: str
    answer: str | None
    train_share: float
    score: float
    held_out: int


def answer_priors(train: Iterable[TaskInstance], held_out: Iterable[TaskInstance]) -> dict[str, AnswerPrior]:
    """Per family, the most frequent training answer, scored as the answer to every held-out question.

    Ties go to the answer seen first. The score uses the family's metric (exact match; KQA's token F1).

    Example:
        >>> train = [TaskInstance(idx=i, task="BRI", query="?", answer=a) for i, a in enumerate(["OR", "OR", "CA"])]
        >>> test = [TaskInstance(idx=9, task="BRI", query="?", answer="OR"),
        ...         TaskInstance(idx=8, task="BRI", query="?", answer="NY")]
        >>> prior = answer_priors(train, test)["BRI"]
        >>> prior.answer, round(prior.train_share, 2), prior.score
        ('OR', 0.67, 0.5)
    """
    answers: dict[str, Counter[str | None]] = defaultdict(Counter)
    for inst in train:
        answers[inst.abbrev][inst.answer] += 1
    tested: dict[str, list[TaskInstance]] = defaultdict(list)
    for inst in held_out:
        tested[inst.abbrev].append(inst)
    out = {}
    for family, counts in sorted(answers.items()):
        answer, count = counts.most_common(1)[0]
        cases = tested.get(family, [])
        submitted = "None" if answer is None else answer
        rewards = [
            score_answer(submitted, inst.answer, metric=inst.spec.reward_metric, kind=inst.spec.answer_kind).reward
            for inst in cases
        ]
        score = float(np.mean(rewards)) if rewards else float("nan")
        out[family] = AnswerPrior(family, answer, count / sum(counts.values()), score, len(cases))
    return out
