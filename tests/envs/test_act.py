"""Act mode: the agent makes the change in its own session and the org's final state is graded."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.envs import act_env_ids
from crmarena_gym.org import LocalOrg
from crmarena_gym.policies import OraclePolicy
from crmarena_gym.tasks import TaskInstance, generate_tasks
from crmarena_gym.tasks.pro import format_pro_answer, generate_pro_tasks

_TASKS: dict[str, list[TaskInstance]] = {}
#: The 64-env test spawns 64 processes (about 5 s an id): CRMArena's id and one Pro id per org kind in the quick
#: run, the other Pro ids when slow tests run.
_QUICK_VECTOR_IDS = ("CRMArena-NCR-Act-v0", "CRMArena-Pro-B2B-QAP-Act-v0", "CRMArena-Pro-B2C-LRO-Act-v0")
_VECTOR_IDS = [i if i in _QUICK_VECTOR_IDS else pytest.param(i, marks=pytest.mark.slow) for i in act_env_ids()]


@pytest.fixture(scope="module")
def ncr_tasks(env_org: Path) -> list[TaskInstance]:
    return generate_tasks(env_org, seed=5, per_task=12, tasks=["NCR"])


def _setup(env_id: str, env_org: Path, pro_env_orgs: dict[str, Path]) -> tuple[Path, list[TaskInstance]]:
    """The org and the instances an act id is played on: CRMArena's NCR, or 8 generated instances of a Pro
    category (None golds among them where the category has some)."""
    if not env_id.startswith("CRMArena-Pro-"):
        if env_id not in _TASKS:
            _TASKS[env_id] = generate_tasks(env_org, seed=5, per_task=12, tasks=["NCR"])
        return env_org, _TASKS[env_id]
    _, _, kind, abbrev, *_ = env_id.split("-")
    path = pro_env_orgs[kind.lower()]
    if env_id not in _TASKS:
        _TASKS[env_id] = generate_pro_tasks(path, category=abbrev, seed=5, per_task=8)
    return path, _TASKS[env_id]


@pytest.fixture(params=act_env_ids())
def act_case(request: pytest.FixtureRequest, env_org: Path, pro_env_orgs: dict[str, Path]):  # type: ignore[no-untyped-def]
    """(env id, org file, instances) for every act-mode id."""
    return (request.param, *_setup(request.param, env_org, pro_env_orgs))


def _outside_case(view: LocalOrg, records: dict[str, str]) -> str:
    """A case of the org file that no task touches (every org kind has cases)."""
    rows = view.query("SELECT Id FROM Case ORDER BY Id LIMIT 2")["records"]
    return next(r["Id"] for r in rows if r["Id"] not in records.values())


def _right_submit(instance: TaskInstance, info: dict) -> str:  # type: ignore[type-arg]
    """What an agent that did the work submits: the article (or None) where the task asks for it, else done."""
    return f"submit {format_pro_answer(instance.answer) if info['act_answers'] else 'done'}"


def _final_state_holds(instance: TaskInstance, view: LocalOrg, refs: dict[str, str], org_file: Path) -> None:
    """The episode's final state, read by queries (not the diff or the grader), is the one the gold asks for."""

    def one(soql: str) -> dict:  # type: ignore[type-arg]
        rows = view.query(soql)["records"]
        assert len(rows) == 1, soql
        return rows[0]

    gold, task = instance.answer, instance.task
    file = sqlite3.connect(f"file:{org_file}?mode=ro", uri=True)
    try:
        if task == "case_routing":
            assert one(f"SELECT OwnerId FROM Case WHERE Id = '{refs['case']}'")["OwnerId"] == gold
        elif task == "lead_routing":
            lead = one(f"SELECT OwnerId, State FROM Lead WHERE Id = '{refs['lead']}'")
            assert (lead["OwnerId"], lead["State"]) == (gold, instance.params["region"])
        elif task == "wrong_stage_rectification":
            opp = instance.params["opportunity_id"]
            (recorded,) = file.execute("SELECT StageName FROM Opportunity WHERE Id = ?", (opp,)).fetchone()
            assert one(f"SELECT StageName FROM Opportunity WHERE Id = '{opp}'")["StageName"] == (gold or recorded)
        elif task == "quote_approval":
            status = one(f"SELECT Status FROM Quote WHERE Id = '{refs['quote']}'")["Status"]
            assert status == ("Approved" if gold is None else "Rejected")
        else:  # invalid_config
            quote = refs["quote"]
            lines = {
                r["Id"]: r["Quantity"]
                for r in view.query(f"SELECT Id, Quantity FROM QuoteLineItem WHERE QuoteId = '{quote}'")["records"]
            }
            before = dict(file.execute("SELECT Id, Quantity FROM QuoteLineItem WHERE QuoteId = ?", (quote,)))
            status = one(f"SELECT Status FROM Quote WHERE Id = '{quote}'")["Status"]
            rule = file.execute(
                "SELECT rule, parameters FROM crmarena_hidden_rule WHERE ArticleId = ?", (gold,)
            ).fetchone()
            if rule is not None and rule[0] == "quantity_limits":
                limits = json.loads(rule[1])
                product = dict(file.execute("SELECT Id, Product2Id FROM QuoteLineItem WHERE QuoteId = ?", (quote,)))
                for line, quantity in before.items():
                    cap = limits.get(product[line])
                    assert lines[line] == (cap if cap is not None and quantity > cap else quantity)
                assert status == "Needs Review"
            else:
                assert lines == before
                assert status == ("Needs Review" if gold is None else "Rejected")
    finally:
        file.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _play_oracle(env: gym.Env, policy: OraclePolicy, obs: str, info: dict) -> tuple[float, dict]:  # type: ignore[type-arg]
    """Play the oracle from a reset to the end: the reward and the last step's info."""
    policy.reset(obs, info)
    done, reward, step_info = False, 0.0, {}
    while not done:
        obs, reward, done, _, step_info = env.step(policy.act(obs))
        policy.observe(step_info)
    return float(reward), step_info


def _make(env_org: Path, tasks: list[TaskInstance], **kwargs):  # type: ignore[no-untyped-def]
    return gym.make("CRMArena-NCR-Act-v0", org=env_org, tasks=tasks, toolset="flex", **kwargs)


def _call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def _other_agent(env_org: Path, not_this: str) -> str:
    rows = LocalOrg(env_org).query(f"SELECT Id FROM User WHERE Id != '{not_this}' ORDER BY Id LIMIT 1")["records"]
    return rows[0]["Id"]


def test_the_oracle_makes_every_change_and_the_final_state_is_the_gold(act_case) -> None:  # type: ignore[no-untyped-def]
    env_id, org_file, tasks = act_case
    before = _digest(org_file)
    env = gym.make(env_id, org=org_file, tasks=tasks, toolset="flex", privileged=True)
    policy = OraclePolicy()
    policy.attach(env)
    rewards = []
    for instance in tasks:
        obs, info = env.reset(options={"idx": instance.idx})
        for ref, record_id in info["records"].items():
            assert record_id in obs or record_id in info["context"]["required"], ref
        reward, step_info = _play_oracle(env, policy, obs, info)
        assert reward == 1.0, (instance.idx, step_info["diff_check"], step_info.get("answer_check"))
        # Independently of the diff and the grader: the session's own query engine shows the gold's state.
        _final_state_holds(instance, env.unwrapped._view, info["records"], org_file)
        rewards.append(reward)
    env.close()
    assert sum(rewards) / len(rewards) == 1.0
    assert _digest(org_file) == before  # the org file never changed


def test_the_right_change_plus_a_stray_edit_scores_zero_and_names_the_stray(act_case) -> None:  # type: ignore[no-untyped-def]
    env_id, org_file, tasks = act_case
    instance = next((i for i in tasks if i.answer is not None), tasks[0])
    env = gym.make(env_id, org=org_file, tasks=tasks, toolset="flex", privileged=True)
    _, info = env.reset(options={"idx": instance.idx})
    answers = info["act_answers"]
    stray_case = _outside_case(env.unwrapped._view, info["records"])
    for call in info["act_calls"]:  # the right change
        env.step(_call(call["name"], **call["arguments"]))
    obs, *_ = env.step(
        _call("update_record", sobject="Case", record_id=stray_case, fields={"Subject": "Stray Edit Ltd"})
    )
    assert "success" in obs
    _, reward, done, _, info = env.step(_right_submit(instance, info))
    assert done and reward == 0.0
    assert info["diff_check"]["missing"] == []
    (stray,) = info["diff_check"]["stray"]  # exactly one, naming the record, the field and the new value
    assert stray.startswith(f"update Case {stray_case}: Subject ") and stray.endswith("-> 'Stray Edit Ltd'")
    if answers:
        assert info["reward_breakdown"]["answer_ok"] is True  # only the stray edit cost the reward
    # The write outside the task is recorded in the state diff beside the required ones.
    changed = {c["id"]: sorted(c["fields"]) for c in info["state_diff"]}
    assert changed[stray_case] == ["Subject"]
    assert len(changed) == 1 + len(info["expected_changes"])
    env.close()


def test_a_wrong_owner_is_missing_the_change_and_a_non_privileged_record_keeps_the_gold_hidden(
    env_org: Path, ncr_tasks: list[TaskInstance]
) -> None:
    instance = ncr_tasks[1]
    wrong = _other_agent(env_org, instance.answer or "")
    for privileged in (True, False):
        env = _make(env_org, ncr_tasks, privileged=privileged)
        _, info = env.reset(options={"idx": instance.idx})
        assert ("expected_changes" in info) == privileged
        case_id = info["records"]["case"]
        env.step(_call("update_record", sobject="Case", record_id=case_id, fields={"OwnerId": wrong}))
        _, reward, _, _, info = env.step("submit done")
        assert reward == 0.0
        missing = info["diff_check"]["missing"]
        if privileged:
            assert len(missing) == 1 and instance.answer in missing[0]
        else:
            assert missing == 1 and instance.answer not in json.dumps(info)


def test_a_refused_write_changes_nothing_and_answers_with_salesforce_error(
    env_org: Path, ncr_tasks: list[TaskInstance]
) -> None:
    env = _make(env_org, ncr_tasks)
    _, info = env.reset(options={"idx": ncr_tasks[0].idx})
    case_id = info["records"]["case"]
    obs, *_ = env.step(_call("update_record", sobject="Case", record_id=case_id, fields={"Status": "Pending"}))
    assert obs.startswith("Error: INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST")
    obs, *_ = env.step(_call("update_record", sobject="Case", record_id=case_id, fields={"CaseNumber": "1"}))
    assert "INVALID_FIELD_FOR_INSERT_UPDATE" in obs
    _, reward, _, _, info = env.step("submit done")
    assert reward == 0.0 and info["state_diff"] == []


def test_writes_stay_in_their_episode_and_their_environment(act_case) -> None:  # type: ignore[no-untyped-def]
    env_id, org_file, tasks = act_case
    before = _digest(org_file)
    first = gym.make(env_id, org=org_file, tasks=tasks, toolset="flex")
    second = gym.make(env_id, org=org_file, tasks=tasks, toolset="flex")
    _, info1 = first.reset(options={"idx": tasks[0].idx})
    second.reset(options={"idx": tasks[0].idx})
    stray_case = _outside_case(first.unwrapped._view, info1["records"])
    first.step(_call("update_record", sobject="Case", record_id=stray_case, fields={"Subject": "changed in env one"}))
    marked = "SELECT COUNT() FROM Case WHERE Subject = 'changed in env one'"
    assert first.unwrapped._view.query(marked)["totalSize"] == 1
    assert second.unwrapped._view.query(marked)["totalSize"] == 0
    assert LocalOrg(org_file).query(marked)["totalSize"] == 0
    # A reset drops the episode's writes; the next episode's set-up is made afresh, with the same ids (an
    # episode's ids are reproducible).
    _, again = first.reset(options={"idx": tasks[0].idx})
    assert first.unwrapped._view.query(marked)["totalSize"] == 0
    assert again["records"] == info1["records"]
    first.close()
    second.close()
    assert _digest(org_file) == before


def test_act_mode_refuses_what_it_cannot_play(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    with pytest.raises(ValueError, match="has no act mode in CRMArena's tasks; the tasks with one: case_routing"):
        gym.make("CRMArena-NCR-Act-v0", org=env_org, tasks=env_tasks[:1], task=None)
    published = {"idx": 0, "task": "NCR", "query": "Who?", "answer": "005Ws000000000AAA"}
    with pytest.raises(ValueError, match="needs a generated instance"):
        gym.make("CRMArena-NCR-Act-v0", org=env_org, tasks=[published])


def test_check_env_passes_on_act_ids(act_case) -> None:  # type: ignore[no-untyped-def]
    env_id, org_file, tasks = act_case
    env = gym.make(env_id, org=org_file, tasks=tasks)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("env_id", _VECTOR_IDS)
def test_sixty_four_async_envs_keep_their_writes_apart(
    env_id: str, env_org: Path, pro_env_orgs: dict[str, Path]
) -> None:
    org_file, tasks = _setup(env_id, env_org, pro_env_orgs)
    stray_case = _outside_case(LocalOrg(org_file), {})
    before = _digest(org_file)
    n = 64
    envs = gym.make_vec(
        env_id,
        num_envs=n,
        vectorization_mode="async",
        vector_kwargs={"shared_memory": False},
        org=org_file,
        tasks=tasks,
        toolset="flex",
    )
    try:
        envs.reset(seed=0)
        marks = [f"mark {i}" for i in range(n)]
        envs.step([_call("update_record", sobject="Case", record_id=stray_case, fields={"Subject": m}) for m in marks])
        counts = ["execute SELECT Subject FROM Case WHERE Subject LIKE 'mark %'" for _ in range(n)]
        obs, *_ = envs.step(counts)
        for i, text in enumerate(obs):
            assert f"'{marks[i]}'" in text and sum(f"'mark {j}'" in text for j in range(n)) == 1, (i, text[:300])
    finally:
        envs.close()
    assert _digest(org_file) == before


def test_act_mode_refuses_a_pro_instance_it_cannot_play_saying_why(
    pro_env_orgs: dict[str, Path], tmp_path: Path
) -> None:
    from crmarena_gym.tasks import act_plan

    not_pro = tmp_path / "other.sqlite"
    sqlite3.connect(not_pro).execute("CREATE TABLE t (a)").connection.close()
    quote = TaskInstance(idx=0, task="quote_approval", kind="b2b", query="?", answer=None, params={"quote_id": "0Q0"})
    with pytest.raises(ValueError, match=r"its act plan cannot read the org file .*no such table: Quote"):
        act_plan(quote, not_pro)

    handle = TaskInstance(idx=0, task="handle_time", kind="b2b", query="Who?", answer="005Wt000000000AAA")
    with pytest.raises(
        ValueError, match=r"no act mode in CRMArena-Pro's \(b2b\) tasks; the tasks with one: case_routing, "
    ):
        act_plan(handle, pro_env_orgs["b2b"])
    published = TaskInstance(idx=0, task="case_routing", kind="b2b", query="Who?", answer="005Wt000000000AAA")
    with pytest.raises(ValueError, match="has no case_subject, case_description in its hidden parameters"):
        act_plan(published, pro_env_orgs["b2b"])
    with pytest.raises(ValueError, match="reads its org"):
        act_plan(published)
    with pytest.raises(ValueError, match="cannot be played in act mode"):
        gym.make("CRMArena-Pro-B2B-NCR-Act-v0", org=pro_env_orgs["b2b"], tasks=[published])


def test_deleting_the_set_up_case_is_a_stray_delete_and_the_change_is_missing(
    env_org: Path, ncr_tasks: list[TaskInstance]
) -> None:
    env = _make(env_org, ncr_tasks, privileged=True)
    _, info = env.reset(options={"idx": ncr_tasks[0].idx})
    case_id = info["records"]["case"]
    obs, *_ = env.step(_call("delete_record", sobject="Case", record_id=case_id))
    assert "success" in obs
    _, reward, _, _, info = env.step("submit done")
    assert reward == 0.0
    assert info["state_diff"] == [{"sobject": "Case", "id": case_id, "op": "delete", "fields": {}}]
    assert info["diff_check"]["stray"] == [f"delete Case {case_id}"]
    assert info["diff_check"]["missing"][0].endswith("the record was deleted")


def test_with_task_functions_alone_the_new_case_is_read_with_get_record_and_routed(
    env_org: Path, ncr_tasks: list[TaskInstance]
) -> None:
    # No task function reads a case's text: without get_record a functions-only agent could not route it.
    instance = next(t for t in ncr_tasks if t.answer is not None)
    env = gym.make("CRMArena-NCR-Act-v0", org=env_org, tasks=ncr_tasks, toolset="functions")
    _, info = env.reset(options={"idx": instance.idx})
    assert "issue_soql_query" not in [t["function"]["name"] for t in info["tools"]]
    (setup,) = info["setup"]
    case_id = setup["id"]
    *_, step = env.step(_call("get_record", sobject="Case", record_id=case_id, fields=["Subject", "Description"]))
    read = step["result"].value
    assert (read["Subject"], read["Description"]) == (
        instance.params["case_subject"],
        instance.params["case_description"],
    )
    obs, *_ = env.step(_call("get_record", sobject="Case", record_id=case_id, fields=["NoSuchField"]))
    assert "INVALID_FIELD" in obs
    env.step(_call("update_record", sobject="Case", record_id=case_id, fields={"OwnerId": instance.answer}))
    _, reward, done, _, info = env.step("submit done")
    assert done and reward == 1.0, info["diff_check"]  # the reads changed nothing


@pytest.mark.parametrize("kind", ["b2b", "b2c"])
def test_a_quote_decision_with_the_wrong_article_scores_zero_and_a_plain_record_hides_the_gold(
    kind: str, env_org: Path, pro_env_orgs: dict[str, Path]
) -> None:
    env_id = f"CRMArena-Pro-{kind.upper()}-QAP-Act-v0"
    org_file, tasks = _setup(env_id, env_org, pro_env_orgs)
    instance = next(i for i in tasks if i.answer is not None)
    wrong = next(str(i.answer) for i in tasks if i.answer not in (None, instance.answer))
    for privileged, submitted, rewarded in ((True, wrong, 0.0), (False, "None", 0.0), (False, instance.answer, 1.0)):
        env = gym.make(env_id, org=org_file, tasks=tasks, privileged=privileged)
        obs, info = env.reset(options={"idx": instance.idx})
        quote = info["records"]["quote"]
        assert quote in info["context"]["required"] and "Rejected" in obs and "Approved" in obs
        # The quote starts submitted for approval, whatever the file says; rejecting it is the whole change.
        assert env.unwrapped._view.query(f"SELECT Status FROM Quote WHERE Id = '{quote}'")["records"][0]["Status"] == (
            "Needs Review"
        )
        env.step(_call("update_record", sobject="Quote", record_id=quote, fields={"Status": "Rejected"}))
        _, reward, _, _, info = env.step(f"submit {submitted}")
        assert reward == rewarded, info["answer_check"]
        assert info["diff_check"]["ok"] is True and info["reward_breakdown"]["answer_ok"] is (rewarded == 1.0)
        assert ("gold" in info["answer_check"]) == privileged
        if not privileged:
            assert "expected_changes" not in info
        env.close()


@pytest.mark.parametrize("env_id", ["CRMArena-NCR-Act-v0", "CRMArena-Pro-B2C-LRO-Act-v0"])
def test_the_oracle_changes_what_its_own_solution_says_not_the_gold(
    env_id: str, env_org: Path, pro_env_orgs: dict[str, Path]
) -> None:
    """A gold tampered with (another agent): the oracle, which solves through the tools and plans its change from
    its own answer, assigns the true agent; the diff check then finds the tampered change missing."""
    org_file, tasks = _setup(env_id, env_org, pro_env_orgs)
    instance = tasks[0]
    other = _other_agent(org_file, str(instance.answer))
    tampered = instance.model_copy(update={"answer": other})
    env = gym.make(env_id, org=org_file, tasks=[tampered], toolset="flex", privileged=True)
    policy = OraclePolicy()
    policy.attach(env)
    obs, info = env.reset(options={"idx": instance.idx})
    assert [c["arguments"]["fields"]["OwnerId"] for c in info["act_calls"]] == [other]
    reward, step_info = _play_oracle(env, policy, obs, info)
    assert reward == 0.0
    (made,) = step_info["state_diff"]
    assert made["fields"]["OwnerId"]["new"] == instance.answer  # the true agent, by the oracle's own solution
    assert step_info["diff_check"]["missing"] == [
        next(m for m in step_info["diff_check"]["missing"] if other in m and str(instance.answer) in m)
    ]
    env.close()


def test_the_reactive_oracle_makes_the_change_its_own_answer_stands_for(act_case) -> None:  # type: ignore[no-untyped-def]
    from crmarena_gym.policies import ReactiveOraclePolicy

    env_id, org_file, tasks = act_case
    env = gym.make(env_id, org=org_file, tasks=tasks, toolset="flex", privileged=True)
    policy = ReactiveOraclePolicy()
    policy.attach(env)
    for instance in tasks[:4]:
        obs, info = env.reset(options={"idx": instance.idx})
        policy.reset(obs, info)
        done, reward, actions = False, 0.0, []
        while not done:
            actions.append(policy.act(obs))
            obs, reward, done, _, step_info = env.step(actions[-1])
        assert reward == 1.0, (instance.idx, step_info["diff_check"], step_info.get("answer_check"))
        # the change was made by writes (one per turn), then the submission; the state is the gold's
        made = [json.loads(a)["name"] for a in actions if json.loads(a)["name"].endswith("_record")]
        assert len(made) == len(info["act_calls"])
        final = json.loads(actions[-1])
        assert final["name"] == "submit" and f"submit {final['arguments']['content']}" == _right_submit(instance, info)
        _final_state_holds(instance, env.unwrapped._view, info["records"], org_file)
    env.close()


# What each act id's question leaves out of a set-up record (read off the plans' docs, not their code): a new case's
# text, a new lead's region; the quote categories and the stage audit name everything they ask about.
_LEFT_OUT = {"NCR": {"case": ("Case", {"Subject", "Description"})}, "LRO": {"lead": ("Lead", {"State"})}}


def test_the_setup_info_names_the_records_to_read_never_their_values(act_case) -> None:  # type: ignore[no-untyped-def]
    """``info["setup"]`` lists every set-up record (ref, object, Id) with the fields the question leaves out, names
    only; the reactive oracle's first calls read exactly those, by that Id."""
    from crmarena_gym.policies import ReactiveOraclePolicy

    env_id, org_file, tasks = act_case
    expected = _LEFT_OUT.get(env_id.split("-")[-3], {})
    shown = gym.make(env_id, org=org_file, tasks=tasks, toolset="flex")
    privileged = gym.make(env_id, org=org_file, tasks=tasks, toolset="flex", privileged=True)
    policy = ReactiveOraclePolicy()
    policy.attach(privileged)
    instance = tasks[0]
    _, info = shown.reset(options={"idx": instance.idx})
    setup = {e["ref"]: e for e in info["setup"]}
    assert set(setup) == set(info["records"]) and all(setup[r]["id"] == i for r, i in info["records"].items())
    assert {r: (e["sobject"], set(e["fields"])) for r, e in setup.items() if e["fields"]} == expected
    assert all("params" not in e for e in info["setup"])  # the hidden parameters' names only when privileged
    values = [str(v) for k, v in instance.params.items() if k in ("case_subject", "case_description", "region")]
    assert not any(v in json.dumps(info["setup"]) for v in values)
    obs, info = privileged.reset(options={"idx": instance.idx})
    policy.reset(obs, info)
    reads = []
    for _ in expected:
        action = json.loads(policy.act(obs))
        reads.append(action)
        obs = privileged.step(json.dumps(action))[0]
    for action, (ref, (sobject, fields)) in zip(reads, expected.items(), strict=True):
        query = action["arguments"]["query"]
        assert action["name"] == "issue_soql_query" and f"FROM {sobject} WHERE Id = '{info['records'][ref]}'" in query
        assert {f.strip() for f in query.split("SELECT ", 1)[1].split(" FROM")[0].split(",")} == fields
    shown.close()
    privileged.close()


@pytest.mark.parametrize(
    "env_id", ["CRMArena-NCR-Act-v0", "CRMArena-Pro-B2B-NCR-Act-v0", "CRMArena-Pro-B2C-LRO-Act-v0"]
)
def test_the_reactive_oracle_routes_by_what_it_read_not_by_the_hidden_values(
    env_id: str, env_org: Path, pro_env_orgs: dict[str, Path]
) -> None:
    """A set-up record whose read comes back empty leaves the reactive oracle without the case's text or the lead's
    region: it makes no gold change, though the privileged info holds the hidden values."""
    from crmarena_gym.policies import ReactiveOraclePolicy

    org_file, tasks = _setup(env_id, env_org, pro_env_orgs)
    env = gym.make(env_id, org=org_file, tasks=tasks, toolset="flex", privileged=True)
    policy = ReactiveOraclePolicy()
    policy.attach(env)
    instance = next(i for i in tasks if isinstance(i.answer, str))
    obs, info = env.reset(options={"idx": instance.idx})
    policy.reset(obs, info)
    done, reward, record = False, 1.0, info["records"][next(iter(info["records"]))]
    while not done:
        action = policy.act(obs)
        obs, reward, done, _, step_info = env.step(action)
        if f"WHERE Id = '{record}'" in action:  # the set-up record's read: its result lost
            obs = "[]"
    assert reward == 0.0 and instance.answer not in json.dumps(step_info["state_diff"])
    env.close()


def test_the_reactive_oracle_that_loses_every_result_never_makes_the_gold_change(act_case) -> None:  # type: ignore[no-untyped-def]
    from crmarena_gym.policies import PolicyError, ReactiveOraclePolicy
    from crmarena_gym.wrappers import ToolResultDropout

    env_id, org_file, tasks = act_case
    instance = next(i for i in tasks if i.answer is not None)
    env = ToolResultDropout(gym.make(env_id, org=org_file, tasks=tasks, toolset="flex", privileged=True), p=1.0)
    policy = ReactiveOraclePolicy()
    policy.attach(env)
    obs, info = env.reset(options={"idx": instance.idx}, seed=0)
    policy.reset(obs, info)
    done, reward, writes = False, 1.0, []
    try:
        while not done:
            action = policy.act(obs)
            if json.loads(action)["name"].endswith("_record"):
                writes.append(json.loads(action))
            obs, reward, done, truncated, _ = env.step(action)
            done = done or truncated
    except PolicyError as err:  # a solver that cannot go on says so (the runner records a policy error)
        assert "cannot solve" in str(err)
        reward = 0.0
    # the privileged info lists the gold's change; the policy never makes it from there
    assert info["act_calls"] and reward == 0.0 and writes != info["act_calls"]
    env.close()


@pytest.fixture(scope="module")
def drifted_pro_orgs(pro_env_orgs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The Pro orgs with every renameable field renamed (strength 1.0): gold unchanged, the names all new."""
    from crmarena_gym.datagen import Perturbation, perturb_org

    out = {}
    for kind, path in pro_env_orgs.items():
        out[kind] = tmp_path_factory.mktemp(f"drift-{kind}") / "org.sqlite"
        perturb_org(path, out[kind], [Perturbation(kind="schema_drift", strength=1.0, seed=0)])
    return out


@pytest.mark.parametrize("env_id", [i for i in act_env_ids() if i.startswith("CRMArena-Pro-")])
def test_act_mode_on_a_drifted_org_writes_and_grades_the_maintained_fields(
    env_id: str, env_org: Path, pro_env_orgs: dict[str, Path], drifted_pro_orgs: dict[str, Path]
) -> None:
    """After schema drift (every standard field an admin could retire migrated to a custom one) the set-up records
    are written to the maintained fields, not the deprecated ones, the oracle (reading the names from the schema
    text) makes the change, and the grader expects it on the fields the org maintains; the reactive oracle reads
    the set-up records by the maintained fields too."""
    from crmarena_gym.datagen import read_manifest
    from crmarena_gym.policies import ReactiveOraclePolicy

    _, tasks = _setup(env_id, env_org, pro_env_orgs)
    org_file = drifted_pro_orgs[env_id.split("-")[2].lower()]
    migrated = read_manifest(org_file).perturbations[0]["drift"]["migrated"]
    env = gym.make(env_id, org=org_file, tasks=tasks, toolset="flex", privileged=True)
    policy = OraclePolicy()
    policy.attach(env)
    objects = {"case": "Case", "lead": "Lead", "quote": "Quote"}
    for instance in tasks[:4]:
        obs, info = env.reset(options={"idx": instance.idx})
        for ref, record_id in info["records"].items():  # the set-up left every deprecated field empty
            retired = sorted(migrated.get(objects[ref], {}))
            if retired:
                soql = f"SELECT {', '.join(retired)} FROM {objects[ref]} WHERE Id = '{record_id}'"
                (row,) = env.unwrapped._view.query(soql)["records"]
                assert all(row[f] is None for f in retired), (ref, row)
        reward, step_info = _play_oracle(env, policy, obs, info)
        assert reward == 1.0, (instance.idx, step_info["diff_check"], step_info.get("answer_check"))
        changed = {f for change in step_info["state_diff"] for f in change.get("fields", {})}
        for change in step_info["expected_changes"]:
            assert set(change["values"]) <= changed and not set(change["values"]) & set(
                migrated.get(change["sobject"], {})
            )
    # the reactive oracle reads the set-up records by the maintained fields info["setup"] names, and solves
    reactive = ReactiveOraclePolicy()
    reactive.attach(env)
    for instance in tasks[:4]:
        obs, info = env.reset(options={"idx": instance.idx})
        for entry in info["setup"]:
            assert not set(entry["fields"]) & set(migrated.get(objects[entry["ref"]], {})), entry
        reactive.reset(obs, info)
        done = False
        while not done:
            obs, reward, done, _, step_info = env.step(reactive.act(obs))
        assert reward == 1.0, (instance.idx, step_info["diff_check"], step_info.get("answer_check"))
    env.close()
