"""The candidate-action adapter alone: spaces, masks, candidates, determinism, and what it may read."""

from __future__ import annotations

import json
import re
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import crmarena_gym.rl as rl
from crmarena_gym.envs import CRMArenaEnv, parse_action
from crmarena_gym.rl import (
    EMPTY_SLOT_ACTION,
    QUESTION_PARAMS,
    CandidateActionWrapper,
    CandidateState,
    HashingEncoder,
    KnowledgeSlots,
    RandomCandidatePolicy,
    evaluate_policy,
    make_discrete_env,
    question_facts,
    stable_hash,
)
from crmarena_gym.tasks import TaskInstance
from crmarena_gym.tools import get_period, get_start_date, toolset

FAMILIES = ["HTU", "TCU", "TII", "MTA", "BRI"]
FUNCTIONS = set(toolset("functions").names)


@pytest.fixture(scope="module")
def env(env_org: Path, env_tasks: list[TaskInstance]) -> CandidateActionWrapper:
    return make_discrete_env(org=env_org, tasks=env_tasks)


def _random_rollout(env: CandidateActionWrapper, seed: int, episodes: int) -> list[Any]:
    """Episodes of the random-candidate policy, recording every observation, candidate list and info."""
    policy = RandomCandidatePolicy(seed)
    trace: list[Any] = []
    obs, info = env.reset(seed=seed)
    for _ in range(episodes):
        done = False
        trace.append((obs["observations"].copy(), obs["action_mask"].copy(), info["candidates"], info["idx"]))
        while not done:
            action = policy(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            trace.append((action, obs["observations"].copy(), obs["action_mask"].copy(), info["candidates"], reward))
        obs, info = env.reset()
    return trace


def test_spaces_are_discrete_actions_and_a_masked_box(env: CandidateActionWrapper) -> None:
    k = env.generator.num_slots
    assert env.action_space == gym.spaces.Discrete(k)
    assert set(env.observation_space.spaces) == {"observations", "action_mask", "action_features"}
    assert env.observation_space["action_mask"].shape == (k,)
    assert env.observation_space["action_features"].shape == (k, env.featurizer.size)
    assert env.observation_space["observations"].shape == (env.encoder.size,)


def test_masks_match_candidates_and_candidates_are_valid_calls(env: CandidateActionWrapper) -> None:
    policy = RandomCandidatePolicy(3)
    for task_id in [inst.idx for inst in env.unwrapped.instances]:
        obs, info = env.reset(options={"task_id": task_id})
        done, none_due = False, False
        while not done:
            mask, candidates = obs["action_mask"], info["candidates"]
            assert len(candidates) == env.action_space.n
            assert [bool(m) for m in mask] == [c != "" for c in candidates]
            # None is offered right after a call that found nothing or a knowledge search, or when
            # nothing else is: never an empty choice.
            none = env.generator.submit_none_slot
            others = float(mask.sum() - mask[none])
            assert mask[none] == float(none_due or others == 0), (none_due, others)
            assert mask.sum() >= 1
            for text in filter(None, candidates):
                parsed = parse_action(text, functions=True)
                assert parsed.kind in ("call", "submit"), text
                if parsed.kind == "call":
                    assert parsed.name in FUNCTIONS
            action = policy(obs)
            sent = candidates[action]
            obs, _reward, terminated, truncated, info = env.step(action)
            assert info["action_text"] == sent
            # A candidate call is well-formed and valid: the tools never answer it with an error.
            assert "error" not in info, (sent[:200], info.get("error"))
            found = env.state.history[-1].result
            none_due = sent.startswith("execute ") and (
                found in (None, [], {}, "") or sent.startswith("execute search_knowledge_articles(")
            )
            done = terminated or truncated


def _feature_rollout(
    env: CandidateActionWrapper, seed: int, steps: int, prefer: tuple[str, ...] = ()
) -> list[tuple[Any, ...]]:
    """Random candidates, except that the first available slot of ``prefer`` (names, in order) is taken
    with probability 3/4 (to walk a family's pipeline to its answer slots)."""
    policy = RandomCandidatePolicy(seed)
    rng = np.random.default_rng(seed)
    preferred = [env.generator.slot_names.index(name) for name in prefer]
    obs, info = env.reset(seed=seed)
    trace = []
    for _ in range(steps):
        trace.append((obs["action_features"].copy(), obs["action_mask"].copy(), info["candidates"]))
        action = policy(obs)
        available = [slot for slot in preferred if obs["action_mask"][slot]]
        if available and rng.random() < 0.75:
            action = available[0] if rng.random() < 0.5 else int(rng.choice(available))
        obs, _r, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            obs, info = env.reset()
    return trace


def test_candidate_features_have_a_fixed_shape_follow_the_mask_and_repeat_with_the_seed(
    env: CandidateActionWrapper,
) -> None:
    featurizer = env.featurizer
    trace = _feature_rollout(env, seed=2, steps=60)
    space = env.observation_space["action_features"]
    for features, mask, candidates in trace:
        assert features.shape == space.shape and features.dtype == np.float32 and space.contains(features)
        present = features[:, featurizer.scalar_offset]  # the "present" scalar
        np.testing.assert_array_equal(present, mask)
        assert not features[mask == 0].any()  # an empty slot has no features
        for i, text in enumerate(candidates):
            if text:  # the slot's own number, and exactly one kind
                assert features[i, i] == 1.0
                kind = features[i, featurizer.kind_offset : featurizer.source_offset]
                assert kind.sum() == 1.0
                is_submission = text.startswith("submit ")
                assert features[i, featurizer.scalar_offset + 2] == float(is_submission)
                assert features[i, featurizer.scalar_offset + 3] == float(text == "submit None")
    again = _feature_rollout(env, seed=2, steps=60)
    for (a, _m, c), (b, _n, d) in zip(trace, again, strict=True):
        assert c == d
        np.testing.assert_array_equal(a, b)


def test_encodings_have_a_fixed_shape_and_stay_in_their_space(env: CandidateActionWrapper) -> None:
    trace = _random_rollout(env, seed=1, episodes=25)
    vectors = [t[1] if len(t) == 5 else t[0] for t in trace]
    assert {v.shape for v in vectors} == {(env.encoder.size,)}
    assert {v.dtype for v in vectors} == {np.dtype(np.float32)}
    obs, _ = env.reset(seed=4)
    assert env.observation_space.contains(obs)
    for _ in range(10):
        obs, *_rest = env.step(RandomCandidatePolicy(4)(obs))
        assert env.observation_space.contains(obs)
        if _rest[1] or _rest[2]:
            obs, _ = env.reset()
    assert all(0.0 <= v.min() and v.max() <= 1.0 for v in vectors)
    assert len({v.tobytes() for v in vectors}) > 10  # the encoding does tell states apart


def test_same_seed_same_candidates(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    one = _random_rollout(make_discrete_env(org=env_org, tasks=env_tasks), seed=7, episodes=12)
    two = _random_rollout(make_discrete_env(org=env_org, tasks=env_tasks), seed=7, episodes=12)
    other = _random_rollout(make_discrete_env(org=env_org, tasks=env_tasks), seed=8, episodes=12)

    def comparable(trace: list[Any]) -> list[Any]:
        return [tuple(x.tobytes() if isinstance(x, np.ndarray) else x for x in step) for step in trace]

    assert comparable(one) == comparable(two)
    assert comparable(one) != comparable(other)


@pytest.mark.parametrize("family", ["HTU", "TCU", "TII", "MTA", "BRI", "NCR", "NED", "PVI", "KQA"])
def test_check_env_passes_on_the_wrapped_env(
    env_org: Path, env_tasks: list[TaskInstance], new_family_tasks: list[TaskInstance], family: str
) -> None:
    env = make_discrete_env(family, org=env_org, tasks=env_tasks + new_family_tasks)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # The checker notes that a wrapped env is not its unwrapped self: the wrapper is what is checked.
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
        check_env(env)


def _window_by_tools(params: dict[str, Any]) -> tuple[str, str]:
    """The window's dates as the date tools compute them from the question's phrase and today's date."""
    spec = params["window"]
    if "unit" in spec:
        end = f"{params['today']}T00:00:00Z"
        return get_start_date(end, f"{spec['unit']}s", spec["count"]), end
    name = spec.get("month") or spec.get("season") or f"Q{spec['quarter']}"
    period = get_period(name, spec["year"])
    return period["start_date"], period["end_date"]


def test_candidate_arguments_come_from_the_question(env: CandidateActionWrapper, env_tasks: list[TaskInstance]) -> None:
    names = env.generator.slot_names
    for inst in env_tasks:
        _obs, info = env.reset(options={"task_id": inst.idx})
        start, end = _window_by_tools(inst.params)
        window = f'"start_date": "{start}", "end_date": "{end}"'
        assert info["candidates"][names.index("handled_cases")] == (
            f"execute get_agent_handled_cases_by_period({{{window}}})"
        )
        quoted = re.findall(r"\b01t[A-Za-z0-9]{15}\b", inst.query)
        order_items = info["candidates"][names.index("order_items")]
        if inst.abbrev in ("TII", "MTA"):
            assert quoted and order_items == f'execute get_order_item_ids_by_product({{"product_id": "{quoted[0]}"}})'
        else:
            assert not quoted and order_items == ""
        # Chained calls need a result first: none is offered before the first call.
        for chained in ("qualified_agents", "issue_counts", "max_value_ids", "shipping_states", "purchases"):
            assert info["candidates"][names.index(chained)] == ""
        # The routing lookups are for questions that describe a new case: not these.
        assert info["candidates"][names.index("issues")] == ""
        # Nothing to submit before a lookup: no value yet, and None only once a call has answered.
        assert [c for c in info["candidates"] if c.startswith("submit")] == []


PIPELINES = {
    "HTU": [
        "handled_cases",
        "qualified_agents",
        "untransferred_cases",
        "cases_of_qualified_untransferred",
        "average_handle_time",
        "DIRECTION",
    ],
    "TCU": ["handled_cases", "qualified_agents", "transfers", "DIRECTION"],
    "TII": ["order_items", "issue_counts", "max_value_ids"],
    "MTA": ["order_items", "cases_of_order_items", "month_counts", "max_value_ids"],
    "BRI": ["cases_of_window", "shipping_states", "region_closure_times", "min_value_ids"],
    "NED": ["contact_account", "PRODUCT_SEARCH", "purchases"],
}
# The product search of NED: one slot with the product's type at oracle-args, one per reading of the
# description at parsed (the last two words find the type's products: "premium jump rope" -> "jump rope").
PRODUCT_SEARCH = {"oracle-args": "matching_products", "parsed": "matching_products_1"}


def _play_pipeline(env: CandidateActionWrapper, inst: TaskInstance) -> tuple[float, list[str], dict[str, Any]]:
    names = env.generator.slot_names
    obs, info = env.reset(options={"task_id": inst.idx})
    sent = []
    for name in PIPELINES[inst.abbrev]:
        if name == "DIRECTION":
            name = "min_value_ids" if inst.params["direction"] == "min" else "max_value_ids"
        if name == "PRODUCT_SEARCH":
            name = PRODUCT_SEARCH[env.level]
        slot = names.index(name)
        assert obs["action_mask"][slot] == 1.0, (inst.abbrev, name, info["candidates"])
        obs, reward, terminated, _truncated, info = env.step(slot)
        sent.append(info["action_text"])
        assert not terminated and "error" not in info
        if name == "qualified_agents" and not env.state.history[-1].result:
            break  # no agent qualifies: the answer is None (an empty list would be no filter, as in the original)
    found = env.state.history[-1].result
    slot = names.index("submit_value_0") if found else env.generator.submit_none_slot
    _obs, reward, terminated, _truncated, info = env.step(slot)
    assert terminated
    return float(reward), sent, info


def test_each_family_is_solved_by_a_fixed_sequence_of_slots(
    env: CandidateActionWrapper, env_tasks: list[TaskInstance]
) -> None:
    for inst in env_tasks:
        reward, _sent, info = _play_pipeline(env, inst)
        expected = "None" if inst.answer is None else inst.answer
        assert info["submitted"] == expected  # the gold comes from plain SQL, not from these tools
        assert reward == 1.0


def test_named_entity_disambiguation_is_solved_through_the_stated_contact_and_description(env_org: Path) -> None:
    from crmarena_gym.tasks import generate_tasks

    instances = generate_tasks(env_org, seed=4, per_task=6, tasks=["NED"])
    env = make_discrete_env(org=env_org, tasks=instances)
    for inst in instances:
        reward, sent, info = _play_pipeline(env, inst)
        assert info["submitted"] == ("None" if inst.answer is None else inst.answer)
        assert reward == 1.0
        assert inst.params["contact_id"] in sent[0]
        if inst.answer is not None:  # the gold id is never pasted into a call: it comes out of the last one
            assert all(inst.answer not in text for text in sent[:2])


def test_value_slots_submit_the_latest_short_result(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    env = make_discrete_env("TII", org=env_org, tasks=env_tasks, full_info=True)
    names = env.generator.slot_names
    inst = next(i for i in env_tasks if i.abbrev == "TII" and i.answer is not None)
    obs, info = env.reset(options={"task_id": inst.idx})
    obs, _, _, _, info = env.step(names.index("order_items"))
    assert len(info["result"].value) > env.generator.num_values  # a long list: no answer candidates from it
    assert [c for c in info["candidates"] if c.startswith("submit")] == []  # and items found: no None
    obs, _, _, _, info = env.step(names.index("issue_counts"))
    assert isinstance(info["result"].value, dict)  # a mapping: no answer candidates either
    assert obs["action_mask"][env.generator.first_value_slot] == 0.0
    obs, _, _, _, info = env.step(names.index("max_value_ids"))
    assert info["result"].value == [inst.answer]
    assert info["candidates"][names.index("submit_value_0")] == f"submit {inst.answer}"
    # The call just made, with the same arguments, is not offered again.
    assert info["candidates"][names.index("max_value_ids")] == ""


def test_only_answer_functions_give_value_slots(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    # The agents a threshold qualifies are a step of TCU's pipeline, not its answer: a policy that could
    # submit them would guess among two or three instead of finishing the pipeline.
    env = make_discrete_env("TCU", org=env_org, tasks=env_tasks, full_info=True)
    names = env.generator.slot_names
    checked = 0
    for inst in (i for i in env_tasks if i.abbrev == "TCU"):
        env.reset(options={"task_id": inst.idx})
        env.step(names.index("handled_cases"))
        _obs, _, _, _, info = env.step(names.index("qualified_agents"))
        qualified = info["result"].value
        if not 0 < len(qualified) <= env.generator.num_values:
            continue
        checked += 1
        assert [c for c in info["candidates"] if c.startswith("submit")] == []
        state = env.state
        assert rl.observed_values(state.history, env.generator.num_values) == [
            (agent, "get_qualified_agent_ids_by_case_count") for agent in dict.fromkeys(qualified)
        ]  # every function's results, as a generator with answer_functions=None offers them
        everything = rl.ToolPipelineCandidates(answer_functions=None)
        offered = [s for s in everything.slots(state) if s is not None and s.startswith("submit ")]
        assert offered == [f"submit {agent}" for agent in dict.fromkeys(qualified)]
    assert checked, "no TCU instance with a short list of qualified agents in the test tasks"


def test_none_is_offered_after_an_empty_result_or_a_knowledge_search_or_when_nothing_else_is() -> None:
    gen = rl.ToolPipelineCandidates()
    state = CandidateState(rl.QuestionFacts("BRI", "...", start="2023-01-01", end="2023-04-01"))
    assert "submit None" not in gen.candidates(state)  # nothing looked at yet
    assert "submit None" in rl.ToolPipelineCandidates(none_after=None).candidates(state)
    assert gen.candidates(CandidateState(rl.QuestionFacts("BRI", "Which state?"))) == ["submit None"]  # only action

    def after(function: str, result: Any, ok: bool = True) -> bool:
        state.history.append(rl.StepRecord(f"execute {function}({{}})", function, result, ok, str(result)))
        return "submit None" in gen.candidates(state)

    assert after("get_cases", [{"Id": "500A"}]) is False  # records found: the pipeline goes on
    assert after("get_cases", None, ok=False) is False  # an error shows nothing
    for empty in ([], {}, None, ""):
        assert after("get_qualified_agent_ids_by_case_count", empty) is True  # nothing found
    assert after("search_knowledge_articles", [{"Id": "ka0A", "Title": "T", "Content": "C"}]) is True
    assert after("get_cases", [{"Id": "500A"}]) is False  # only right after
    with pytest.raises(TypeError, match="'search_knowledge_articles'"):
        rl.ToolPipelineCandidates(none_after="search_knowledge_articles")
    with pytest.raises(TypeError, match="answer_functions"):
        rl.ToolPipelineCandidates(answer_functions="find_id_with_max_value")


def test_an_empty_slot_is_a_wasted_turn_and_a_bad_action_is_refused(env: CandidateActionWrapper) -> None:
    obs, info = env.reset(seed=0)
    empty = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    obs, reward, terminated, truncated, info = env.step(empty)
    assert info["action_text"] == EMPTY_SLOT_ACTION and info["error"] == "FORMAT_ERROR"
    assert (reward, terminated, truncated, info["turn"]) == (0.0, False, False, 1)
    for bad in (env.action_space.n, -1, "3", 1.5, True):
        with pytest.raises(ValueError, match="slot number"):
            env.step(bad)
    env.step(np.int64(env.generator.submit_none_slot))  # numpy integers are fine


def test_turn_limit_truncates(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    env = make_discrete_env("BRI", org=env_org, tasks=env_tasks, max_turns=3)
    obs, _ = env.reset(seed=0)
    empty = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    flags = [env.step(empty)[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]


def test_the_wrapper_needs_functions_and_a_crmarena_env(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    with pytest.raises(ValueError, match="toolset='functions'"):
        CandidateActionWrapper(CRMArenaEnv("TII", org=env_org, tasks=env_tasks, toolset="soql"))
    with pytest.raises(TypeError, match="CRMArenaEnv"):
        CandidateActionWrapper(gym.make("CartPole-v1"))  # type: ignore[arg-type]
    flex = CandidateActionWrapper(CRMArenaEnv("TII", org=env_org, tasks=env_tasks, toolset="flex"))
    assert flex.reset(seed=0)[0]["action_mask"].sum() >= 2


def _with(inst: TaskInstance, **changes: Any) -> TaskInstance:
    data = inst.model_dump()
    data.update(changes)
    return TaskInstance.model_validate(data)


def test_the_gold_answer_and_gold_only_params_change_nothing(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    """Candidates and encodings along the same actions are identical when the gold (and anything only
    the gold knows) is replaced."""
    originals = [i for i in env_tasks if i.abbrev in ("TII", "HTU")]
    altered = [
        _with(i, answer="005XXXXXXXXXXXXXXX", params={**i.params, "article_id": "ka0X", "evidence": "x", "answer": "y"})
        for i in originals
    ]
    traces = []
    for instances in (originals, altered):
        env = make_discrete_env(org=env_org, tasks=instances)
        traces.append(_random_rollout(env, seed=5, episodes=10))
    strip = [[tuple(x.tobytes() if isinstance(x, np.ndarray) else x for x in s if not isinstance(x, float)) for s in t]
             for t in traces]  # fmt: skip
    assert strip[0] == strip[1]


def test_question_facts_keep_only_what_the_question_states() -> None:
    ned = TaskInstance(
        idx=1,
        task="NED",
        query="Can you pull up the trail jacket I bought a fortnight ago? Return only the Id of the product.",
        answer="01tAAAAAAAAAAAAAAA",
        metadata={"required": "- Contact Id of the customer you are assisting: 003BBBBBBBBBBBBBBB"},
        params={
            "today": "2021-03-15",
            "contact_id": "003BBBBBBBBBBBBBBB",
            "purchase_date": "2021-03-01",
            "product_id": "01tAAAAAAAAAAAAAAA",  # the gold: the question does not quote it
            "search_term": "Jacket",
        },
    )
    text = ned.query + "\n" + ned.metadata.required
    facts = question_facts(ned, text)
    assert facts.product_id is None
    assert (facts.contact_id, facts.search_term, facts.purchase_date) == (
        "003BBBBBBBBBBBBBBB",
        "Jacket",
        "2021-03-01T00:00:00Z",
    )
    assert facts.today == "2021-03-15"
    pvi = TaskInstance(
        idx=2,
        task="PVI",
        query="Did the agent break a policy? Return only the Id of the knowledge article, or None.",
        answer="ka0CCCCCCCCCCCCCCC",
        metadata={"required": "- Id of the case to review: 500DDDDDDDDDDDDDDD"},
        params={"case_id": "500DDDDDDDDDDDDDDD", "article_id": "ka0CCCCCCCCCCCCCCC", "search_term": "Refund Rules"},
    )
    facts = question_facts(pvi, pvi.query + "\n" + pvi.metadata.required)
    assert facts.case_id == "500DDDDDDDDDDDDDDD"
    assert facts.search_term is None  # an article title the question never states
    assert "ka0CCCCCCCCCCCCCCC" not in repr(facts)


def test_published_instances_without_params_give_today_quoted_ids_and_the_described_case(shared_dir: Path) -> None:
    import json

    records = json.loads((shared_dir / "tasks_original.json").read_text())
    tii = next(r for r in records if r["task"] == "top_issue_identification")
    inst = TaskInstance.model_validate(tii)
    facts = question_facts(inst, inst.query + "\n" + inst.metadata.required)
    expected_id = re.search(r"Id is (01t\w{15})", tii["query"]).group(1)  # type: ignore[union-attr]
    expected_today = re.search(r"(\d{4}-\d{2}-\d{2})", tii["metadata"]["required"]).group(1)  # type: ignore[union-attr]
    assert (facts.product_id, facts.today, facts.start) == (expected_id, expected_today, None)
    ncr = next(r for r in records if r["task"] == "case_routing")
    facts = question_facts(TaskInstance.model_validate(ncr), ncr["query"])
    lines = dict(line[2:].split(": ", 1) for line in ncr["query"].splitlines() if line.startswith("- Case "))
    assert (facts.case_subject, facts.case_description) == (lines["Case Subject"], lines["Case Description"])
    assert facts.case_subject and facts.case_description


class _IssuesOnly:
    """A three-slot generator: list the issues, submit None, or submit the first issue listed."""

    num_slots = 3
    slot_names = ("issues", "submit_none", "submit_first_issue")

    def slots(self, state: CandidateState) -> list[str | None]:
        listed = state.latest("get_issues")
        first = f"submit {listed[0]['Id']}" if isinstance(listed, list) and listed else None
        return [None if listed is not rl.MISSING else "execute get_issues()", "submit None", first]

    def candidates(self, state: CandidateState) -> list[str]:
        return [s for s in self.slots(state) if s]


def test_generator_and_encoder_are_swappable(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    text_env = gym.make("CRMArena-TII-v0", org=env_org, tasks=env_tasks, toolset="functions")
    encoder = HashingEncoder(3, text_buckets=8, result_buckets=8, slot_buckets=2)
    env = CandidateActionWrapper(text_env, _IssuesOnly(), encoder)
    assert env.action_space.n == 3 and env.observation_space["observations"].shape == (encoder.size,)
    obs, info = env.reset(seed=0)
    assert info["candidates"] == ["execute get_issues()", "submit None", ""]
    obs, _, _, _, info = env.step(0)
    assert info["candidates"][0] == "" and info["candidates"][2].startswith("submit a1M")
    assert env.observation_space.contains(obs)
    with pytest.raises(TypeError, match="generator"):
        CandidateActionWrapper(text_env, object())  # type: ignore[arg-type]


def test_random_baseline_is_low_and_the_pipeline_is_perfect(env: CandidateActionWrapper) -> None:
    ids = [inst.idx for inst in env.unwrapped.instances]
    random = evaluate_policy(env, RandomCandidatePolicy(0), ids, repeats=3)
    assert set(random.success()) == set(FAMILIES)
    assert random.overall() < 0.4  # mostly the unanswerable instances, by submitting None
    assert sum(len(r) for r in random.rewards.values()) == 3 * len(ids)


def test_the_rllib_parts_need_ray_only_when_called(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    for name in [m for m in sys.modules if m == "ray" or m.startswith("ray.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails
    with pytest.raises(ImportError, match=r"pip install 'crmarena-gym\[rl\]'"):
        rl.register_rllib_env()
    with pytest.raises(ImportError, match=r"pip install 'crmarena-gym\[rl\]'"):
        rl.action_masking_module_class()


def test_text_can_stay_out_of_info(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    env = make_discrete_env("BRI", org=env_org, tasks=env_tasks, text_in_info=False)
    obs, info = env.reset(seed=0)
    assert "candidates" not in info
    assert [s is not None for s in env.slots] == [bool(m) for m in obs["action_mask"]]
    slot = env.generator.slot_names.index("cases_of_window")
    _obs, _r, _t, _u, info = env.step(slot)
    assert "action_text" not in info and "candidates" not in info
    assert env.state.history[-1].action.startswith("execute get_cases(")


@pytest.fixture(scope="module")
def new_family_tasks(env_org: Path) -> list[TaskInstance]:
    from crmarena_gym.tasks import generate_tasks

    return generate_tasks(env_org, seed=6, per_task=4, tasks=["NCR", "NED", "PVI", "KQA"])


def test_new_case_routing_offers_one_call_per_listed_issue_with_the_issue_name_as_context(
    env_org: Path, new_family_tasks: list[TaskInstance]
) -> None:
    """NCR: after get_issues, a candidate per issue fetches its closed cases; the chosen issue's agents with
    the most closed cases are what the routing policy's first rule names (the gold, when not tied)."""
    ncr = [i for i in new_family_tasks if i.abbrev == "NCR"]
    env = make_discrete_env(org=env_org, tasks=ncr)
    names = env.generator.slot_names
    con = sqlite3.connect(env_org)
    issue_names = dict(con.execute('SELECT "Id", "Name" FROM "Issue__c"').fetchall())
    solved = 0
    for inst in ncr:
        obs, info = env.reset(options={"task_id": inst.idx})
        assert not any(c.startswith("execute get_cases") for c in info["candidates"])  # no issue listed yet
        obs, _r, _t, _tr, info = env.step(names.index("issues"))
        offered = [c for c in info["candidates"] if '"issue_ids"' in c]
        assert len(offered) == min(len(issue_names), 10)
        for slot, text in enumerate(info["candidates"]):
            if '"issue_ids"' in text:  # the slot's context words: its issue's name and the status it passes
                issue = json.loads(text.split("(", 1)[1][:-1])["issue_ids"][0]
                words = obs["action_features"][slot, env.featurizer.context_offset :]
                expected = np.zeros_like(words)
                for word in re.findall(r"[a-z0-9]+", issue_names[issue].lower() + " closed"):
                    if word != "return":  # a stop word: every question says "Return only the Id"
                        expected[stable_hash(word) % env.featurizer.context_buckets] = 1.0
                np.testing.assert_array_equal(words, expected)
        gold_issue = next(i for i, c in enumerate(info["candidates"]) if inst.params["issue_id"] in c)
        obs, _r, _t, _tr, info = env.step(gold_issue)
        assert not any('"issue_ids"' in c for c in info["candidates"])  # one pick: the choices are gone
        obs, _r, _t, _tr, info = env.step(names.index("max_case_agents"))
        closed = dict(
            con.execute(
                'SELECT "OwnerId", COUNT(*) FROM "Case" WHERE "Status" = \'Closed\' AND "IssueId__c" = ? '
                'GROUP BY "OwnerId"',
                (inst.params["issue_id"],),
            ).fetchall()
        )
        top = max(closed.values())
        assert sorted(env.state.history[-1].result) == sorted(a for a, n in closed.items() if n == top)
        if len(env.state.history[-1].result) == 1:
            _obs, reward, terminated, _tr, info = env.step(names.index("submit_value_0"))
            assert terminated and reward == 1.0 and info["submitted"] == inst.answer
            solved += 1
    assert solved >= 1


def test_an_issue_is_compared_with_the_described_case_not_the_question_template(
    env_org: Path, new_family_tasks: list[TaskInstance]
) -> None:
    """NCR: an issue slot's overlap with the question is its name's share of words (first five letters) that
    the new case's subject and description have; the routing question's own words ("Return only the Id",
    "routing policy") count for nothing, so rewording the request leaves every feature as it was."""
    from crmarena_gym.rl._features import SCALARS

    stop = set("a an and are as at be by for from has have i in is it its me my of on or our so that the".split())
    stop |= set("this to was we were what which who with you your not no only return id ids".split())

    def words(text: str) -> set[str]:
        return {w[:5] for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in stop}

    ncr = [i for i in new_family_tasks if i.abbrev == "NCR"]
    reworded = [_with(i, query="Route it, please; reply with the agent Id.\n" + i.query.split("\n", 1)[1]) for i in ncr]
    assert all(r.query != i.query for r, i in zip(reworded, ncr, strict=True))
    share = env_features = None
    positive = 0
    for tasks in (ncr, reworded):
        env = make_discrete_env(org=env_org, tasks=tasks)
        names = env.generator.slot_names
        column = env.featurizer.scalar_offset + SCALARS.index("context_in_question")
        features = []
        for inst in tasks:
            env.reset(options={"task_id": inst.idx})
            obs, _r, _t, _tr, info = env.step(names.index("issues"))
            described = words(inst.params["case_subject"] + " " + inst.params["case_description"])
            listed = {r["Id"]: r["Name"] for r in env.state.history[-1].result}
            for slot, text in enumerate(info["candidates"]):
                if '"issue_ids"' in text:
                    context = words(listed[json.loads(text.split("(", 1)[1][:-1])["issue_ids"][0]] + " Closed")
                    share = len(context & described) / len(context)
                    assert obs["action_features"][slot, column] == pytest.approx(share), text
                    positive += share > 0
            features.append(obs["action_features"])
        if env_features is None:
            env_features = features
        else:
            for a, b in zip(env_features, features, strict=True):
                np.testing.assert_array_equal(a, b)
    assert positive > 0 and share is not None


def _without_privileged(inst: TaskInstance) -> TaskInstance:
    """``inst`` with a wrong gold, no gold-only parameter, and no id or term the question does not state."""
    stated_only = ("product_id", "contact_id", "case_id", "issue_id", "search_term", "case_subject", "case_description")
    shown = (inst.query + " " + str(inst.metadata)).lower()  # the question and its context
    params = {
        key: value
        for key, value in inst.params.items()
        if key in QUESTION_PARAMS
        and value != inst.answer
        and not (key in stated_only and str(value).lower() not in shown)
    }
    return _with(inst, answer="005XXXXXXXXXXXXXXX", params=params)


def test_no_candidate_or_feature_reads_the_gold_or_hidden_params_in_any_family(
    env_org: Path, env_tasks: list[TaskInstance], new_family_tasks: list[TaskInstance]
) -> None:
    originals = [i for i in env_tasks if i.idx % 3 == 0] + new_family_tasks
    assert {i.abbrev for i in originals} == {"HTU", "TCU", "TII", "MTA", "BRI", "NCR", "NED", "PVI", "KQA"}
    traces = []
    for instances in (originals, [_without_privileged(i) for i in originals]):
        env = make_discrete_env(org=env_org, tasks=instances)
        traces.append(_feature_rollout(env, seed=7, steps=120))
    for (a, m, c), (b, n, d) in zip(*traces, strict=True):
        assert c == d
        np.testing.assert_array_equal(m, n)
        np.testing.assert_array_equal(a, b)
    # The knowledge tasks' searches and answers (PVI: the conversation, its search, the articles found; KQA: the
    # question's search, the phrases found), walked on purpose: the same without the gold and the hidden params
    # (the violated article, the offending sentence, the article's title as a search term).
    knowledge = [i for i in new_family_tasks if i.abbrev in ("PVI", "KQA")]
    names = KnowledgeSlots().names
    prefer = ("chat_transcripts", "emails", "search_conversation", "search_question", *names[2:])
    traces = []
    for instances in (knowledge, [_without_privileged(i) for i in knowledge]):
        env = make_discrete_env(org=env_org, tasks=instances)
        traces.append(_feature_rollout(env, seed=3, steps=100, prefer=prefer))
    offered = {name for _a, _m, c in traces[0] for name, text in zip(env.generator.slot_names, c, strict=True) if text}
    assert set(names) <= offered  # every knowledge slot was filled along the way
    assert any(a[:, env.featurizer.phrase_offset :].any() for a, _m, _c in traces[0])  # phrases' traits too
    for (a, m, c), (b, n, d) in zip(*traces, strict=True):
        assert c == d
        np.testing.assert_array_equal(m, n)
        np.testing.assert_array_equal(a, b)
