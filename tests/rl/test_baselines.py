"""Baselines that learn nothing: the best fixed slot order, answer priors, and the policy that plays an order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crmarena_gym.rl import (
    FixedSlotOrder,
    RandomCandidatePolicy,
    answer_priors,
    evaluate_policy,
    make_discrete_env,
    search_fixed_orders,
)
from crmarena_gym.tasks import TaskInstance, generate_tasks, instance_key

# Orders written by hand from the tools' documentation (the pipelines of tests/rl/test_wrapper.py), the
# None submission offered after an empty result placed where a pipeline can find nothing.
HAND_WRITTEN = {
    "TII": ("order_items", "issue_counts", "submit_none", "max_value_ids", "submit_value_0"),
    "BRI": ("cases_of_window", "shipping_states", "region_closure_times", "min_value_ids", "submit_value_0"),
    "MTA": ("order_items", "cases_of_order_items", "month_counts", "max_value_ids", "submit_value_0"),
    "NED": ("contact_account", "matching_products_1", "purchases", "submit_none", "submit_value_0"),
}


@pytest.fixture(scope="module")
def sets(env_org: Path) -> tuple[list[TaskInstance], list[TaskInstance]]:
    """Training and held-out instances of TII, BRI, MTA and NED, disjoint by instance key."""
    families = list(HAND_WRITTEN)
    held_out = generate_tasks(env_org, seed=21, per_task=6, tasks=families)
    keys = {instance_key(i.task, i.params) for i in held_out}
    train = generate_tasks(env_org, seed=22, per_task=8, tasks=families, exclude=keys, allow_fewer=True)
    train = [i.model_copy(update={"idx": 500 + i.idx}) for i in train]
    return train, held_out


def test_the_best_fixed_order_is_no_worse_than_orders_written_by_hand(
    env_org: Path, sets: tuple[list[TaskInstance], list[TaskInstance]]
) -> None:
    train, _held_out = sets
    env = make_discrete_env(org=env_org, tasks=train, level="parsed")
    found = search_fixed_orders(env, train, beam=48, depth=8)
    assert set(found) == set(HAND_WRITTEN)
    names = env.generator.slot_names
    for family, order in found.items():
        ids = [i.idx for i in train if i.abbrev == family]
        # The score reported is the order's own, played through the environment.
        replayed = evaluate_policy(env, FixedSlotOrder({family: order.slots}), ids).overall()
        assert order.train_score == pytest.approx(replayed)
        assert order.names == tuple(names[s] for s in order.slots)
        hand = FixedSlotOrder({family: [names.index(n) for n in HAND_WRITTEN[family]]})
        assert order.train_score >= evaluate_policy(env, hand, ids).overall() - 1e-9, family
        assert order.searched > 0
    # Where a family's pipeline is a fixed walk, the blind order solves it: what a policy must beat.
    assert found["BRI"].train_score == 1.0 and found["TII"].train_score == 1.0


def test_a_fixed_order_is_played_blind(env_org: Path, sets: tuple[list[TaskInstance], list[TaskInstance]]) -> None:
    """The order ignores what it sees: the same slots whatever the observation, the last one repeated."""
    policy = FixedSlotOrder({"BRI": (3, 1, 4)})
    policy.begin_episode({"abbrev": "BRI"})
    rng = np.random.default_rng(0)
    played = [policy({"action_mask": rng.random(5)}) for _ in range(5)]
    assert played == [3, 1, 4, 4, 4]
    with pytest.raises(ValueError, match="no slot order for family 'TII'"):
        policy.begin_episode({"abbrev": "TII"})
    with pytest.raises(ValueError, match="non-empty sequence of slot numbers"):
        FixedSlotOrder({"BRI": ()})
    # Its episodes in an environment: the slots it chose are the ones sent, empty or not.
    _train, held_out = sets
    env = make_discrete_env(org=env_org, tasks=held_out, level="parsed")
    order = tuple(env.generator.slot_names.index(n) for n in HAND_WRITTEN["BRI"])
    policy = FixedSlotOrder({"BRI": order})
    inst = next(i for i in held_out if i.abbrev == "BRI")
    obs, info = env.reset(options={"task_id": inst.idx})
    policy.begin_episode(info)
    sent = []
    done = False
    while not done:
        slot = policy(obs)
        expected = env.slots[slot]
        obs, _r, done, truncated, info = env.step(slot)
        sent.append((slot, info["action_text"] == (expected or "(empty candidate slot)")))
        done = done or truncated
    assert [s for s, _ in sent][: len(order)] == list(order) and all(ok for _, ok in sent)


def test_answer_priors_score_the_most_frequent_training_answer(
    sets: tuple[list[TaskInstance], list[TaskInstance]],
) -> None:
    train, held_out = sets
    priors = answer_priors(train, held_out)
    assert set(priors) == set(HAND_WRITTEN)
    for family, prior in priors.items():
        answers = [i.answer for i in train if i.abbrev == family]
        assert answers.count(prior.answer) == max(answers.count(a) for a in answers)
        assert prior.train_share == pytest.approx(answers.count(prior.answer) / len(answers))
        tested = [i for i in held_out if i.abbrev == family]
        assert prior.held_out == len(tested)
        assert prior.score == pytest.approx(np.mean([i.answer == prior.answer for i in tested]))


def test_evaluation_records_the_help_level(env_org: Path, sets: tuple[list[TaskInstance], list[TaskInstance]]) -> None:
    _train, held_out = sets
    for level in ("tools", "oracle-args"):
        env = make_discrete_env(org=env_org, tasks=held_out[:2], level=level)
        result = evaluate_policy(env, RandomCandidatePolicy(0), [i.idx for i in held_out[:2]])
        assert result.level == level
