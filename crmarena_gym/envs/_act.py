"""Act-mode environments: the agent makes the change in its own session; the org's final state is graded.

:class:`CRMArenaActEnv` is :class:`~crmarena_gym.envs.CRMArenaEnv` with three differences. Each episode owns
an :class:`~crmarena_gym.org.OrgSession` over the embedded org (copy-on-write: the org file never changes,
no other episode sees the writes, and reset or close drops them), into which the task first writes its
set-up records (a new case or lead, a quote put up for review). The toolset is the org kind's, as in name
mode, with the record tools (``get_record``, ``create_record``, ``update_record``,
``delete_record``). And ``submit`` ends the episode without being compared with a name: the session's
diff since the set-up is checked against the changes the task requires (every one made, nothing else
changed), and ``info`` records both. Where the task also asks for a name (which knowledge article a quote
breaks), the submission carries it and is graded by the category's own rule beside the diff: the reward is 1
only when both are right (``info["answer_check"]``).

A Pro org's act ids are ``CRMArena-Pro-{B2B,B2C}-<ABBREV>-Act-v0`` for its five workflow categories
(:data:`crmarena_gym.tasks.ACT_TASKS`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from crmarena_gym.envs._env import CRMArenaEnv, _action_format, _make_tools, _resolve_today
from crmarena_gym.envs._spaces import ActionText
from crmarena_gym.org import ExpectedChange, LocalOrg, Org, OrgSession, StateDiff
from crmarena_gym.tasks import ActPlan, TaskInstance, act_plan

__all__ = ["CRMArenaActEnv"]


class CRMArenaActEnv(CRMArenaEnv):
    """A workflow task in act mode: change the org as the task asks, graded by the final state.

    Args:
        task: A task with an act mode (``"NCR"``; on a Pro org ``"NCR"``, ``"LRO"``, ``"WSR"``, ``"QAP"``, ``"ICF"``);
            see :data:`crmarena_gym.tasks.ACT_TASKS`.
        org: The embedded org (None, a path or a :class:`~crmarena_gym.org.LocalOrg`); a live org is refused,
            since an environment must not write to it.
        toolset: ``"soql"`` (SOQL and SOSL, read-only), ``"functions"`` or ``"flex"``; the write tools are added.
        **kwargs: As :class:`~crmarena_gym.envs.CRMArenaEnv` (``tasks``, ``match`` aside, ``privileged`` ...).

    Example:
        >>> import gymnasium as gym
        >>> record = {"idx": 0, "task": "NCR", "query": "Who should take it?", "answer": "005Ws000000000AAA",
        ...           "params": {"case_subject": "Late parcel", "case_description": "It has not come."}}
        >>> env = gym.make("CRMArena-NCR-Act-v0", org=getfixture("tiny_org"), tasks=[record])
        >>> obs, info = env.reset(seed=0)
        >>> info["answer_mode"], [t["function"]["name"] for t in info["tools"]][-5:]
        ('act', ['get_record', 'create_record', 'update_record', 'delete_record', 'submit'])
        >>> obs, reward, done, _, info = env.step("submit done")
        >>> reward, done, info["diff_check"]["ok"], info["state_diff"]
        (0.0, True, False, [])
    """

    def __init__(
        self,
        task: str | None = None,
        *,
        org: Org | str | os.PathLike[str] | None = None,
        tasks: str | os.PathLike[str] | Sequence[TaskInstance | Mapping[str, Any]] | Mapping[str, Any] | None = None,
        toolset: str = "soql",
        **kwargs: Any,
    ) -> None:
        if org is not None and isinstance(org, Org) and not isinstance(org, LocalOrg):
            raise ValueError(
                f"act mode writes to an episode session over the embedded org; {type(org).__name__} is not one "
                "(an environment never writes to a live org)"
            )
        super().__init__(task, org=org, tasks=tasks, toolset=toolset, **kwargs)  # type: ignore[arg-type]
        plans: dict[int, ActPlan] = {}
        refused: list[str] = []
        for instance in self.instances:
            try:
                plans[instance.idx] = act_plan(instance, self.org)
            except ValueError as err:
                refused.append(str(err))
        if refused:
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            raise ValueError(f"these instances cannot be played in act mode: {refused[0]}{more}")
        self._plans = plans
        self.tools = _make_tools(toolset, self.kind, writes=True)  # the kind's toolset, as name mode builds it
        self._tool_schemas = self.tools.schemas()
        self._action_rules = _action_format(self.tools)
        self.action_space = ActionText(self.action_space.max_length, examples=self._examples())
        self._session: OrgSession | None = None
        self._baseline = StateDiff()
        self._refs: dict[str, str] = {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode: a fresh session, the task's set-up records written into it, the instruction."""
        self._drop_session()
        _observation, info = super().reset(seed=seed, options=options)
        instance = self.instance
        assert instance is not None
        plan = self._plans[instance.idx]
        assert isinstance(self.org, LocalOrg)
        session = OrgSession(self.org, today=_resolve_today(instance), own_ids=True)
        self._session = session
        # The set-up is the environment's own write, under the declared names: after schema drift, the org's.
        refs: dict[str, str] = {}
        for record in plan.setup:
            sobject, fields = session.schema.current_names(record.sobject, record.fields)
            if record.id is None:
                refs[record.ref] = session.create(sobject, fields)
            else:  # an existing record put in the state the task starts from (a quote submitted for approval)
                session.update(sobject, record.id, fields)
                refs[record.ref] = record.id
        self._refs = refs
        self._baseline = session.diff()
        self._view = session
        update: dict[str, Any] = {"query": plan.question(self._refs)}
        required = plan.required(self._refs)
        if required is not None:
            update["metadata"] = instance.metadata.model_copy(update={"required": required})
        asked = instance.model_copy(update=update)
        observation = self._bound(self._first_observation(asked))
        self._last_observation = observation
        info["answer_mode"] = "act"
        info["records"] = dict(self._refs)
        info["act_answers"] = plan.answers  # the final submit carries an answer graded beside the diff
        info["setup"] = self._setup_info(plan)
        if required is not None:
            info["context"] = {**info["context"], "required": asked.metadata.required}
        if self.privileged:
            info["expected_changes"] = [c.to_dict() for c in self._expected(plan)]
            info["act_calls"] = self._act_calls(plan)
        return observation, info

    def _setup_info(self, plan: ActPlan) -> list[dict[str, Any]]:
        """The set-up records as ``info["setup"]`` shows them: each one's ref, object, Id and the fields the question
        leaves out for the agent to read, in the org's names (after schema drift, the maintained ones), never their
        values; a privileged environment adds the hidden parameter each field stands for (an oracle's reading)."""
        assert self._session is not None
        schema = self._session.schema
        shown = []
        for record in plan.setup:
            sobject, reads = schema.current_names(record.sobject, record.reads)
            entry: dict[str, Any] = {"ref": record.ref, "sobject": sobject, "id": self._refs[record.ref]}
            entry["fields"] = list(reads)
            if self.privileged:
                entry["params"] = dict(reads)
            shown.append(entry)
        return shown

    # A plan names objects and fields as the org kind declares them; after schema drift the session's diff and
    # the write tools use the org's own names, so what the plan expects is compared and shown in those.
    def _expected(self, plan: ActPlan) -> list[ExpectedChange]:
        assert self._session is not None
        schema = self._session.schema
        changes = []
        for change in plan.expected_changes(self._refs):
            sobject, values = schema.current_names(change.sobject, change.values)
            changes.append(dataclasses.replace(change, sobject=sobject, values=values))
        return changes

    def _act_calls(self, plan: ActPlan) -> list[dict[str, Any]]:
        assert self._session is not None
        schema = self._session.schema
        calls = []
        for call in plan.finish(self._refs):
            arguments = dict(call.arguments)
            if "sobject" in arguments:
                arguments["sobject"], fields = schema.current_names(arguments["sobject"], arguments.get("fields") or {})
                if "fields" in arguments:
                    arguments["fields"] = fields
            calls.append({"name": call.name, "arguments": arguments})
        return calls

    def _submit(self, answer: str, info: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        assert self.instance is not None and self._session is not None
        plan = self._plans[self.instance.idx]
        diff = self._session.diff().since(self._baseline)
        expected = self._expected(plan)
        check = diff.check(expected)
        answer_ok = True
        self._done = True
        info["submitted"] = answer
        if plan.answers:  # the article named in the submit, graded by the category's own rule
            from crmarena_gym.tasks.pro import score_instance

            score = score_instance(answer, self.instance)
            answer_ok = float(score.reward) == 1.0
            info["answer_check"] = score.as_dict()
            if not self.privileged:
                info["answer_check"].pop("gold", None)
        reward = 1.0 if check.ok and answer_ok else 0.0
        info["state_diff"] = diff.to_dict()
        info["diff_check"] = check.to_dict()
        info["reward_breakdown"] = {
            "reward": reward,
            "metric": "state_diff+answer" if plan.answers else "state_diff",
            "missing": len(check.missing),
            "stray": list(check.stray),
        }
        if plan.answers:
            info["reward_breakdown"]["answer_ok"] = answer_ok
        if self.privileged:
            info["expected_changes"] = [c.to_dict() for c in expected]
        else:  # what is missing names the gold
            info["diff_check"]["missing"] = len(check.missing)
        observation = "Submitted. The episode is over."
        self._last_observation = observation
        self._last_reward = reward
        return observation, reward, True, False, info

    def close(self) -> None:
        """Drop the episode's session (its writes with it)."""
        self._drop_session()
        super().close()

    def _drop_session(self) -> None:
        if self._session is not None:
            self._session.drop()
            self._session = None
            self._view = self.org
