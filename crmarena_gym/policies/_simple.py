"""Policies without a model: the oracle (the task's solver replayed through the env) and random actions."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any

from crmarena_gym.chat import tool_names
from crmarena_gym.org import Org
from crmarena_gym.policies._base import Policy, PolicyError
from crmarena_gym.tasks import (
    NONE_ANSWER,
    OracleError,
    SchemaNames,
    TaskInstance,
    ToolCall,
    act_plan,
    get_task_spec,
    oracle_trace,
)
from crmarena_gym.tools import toolset as make_toolset

__all__ = ["OraclePolicy", "RandomPolicy"]

# What a failed action looks like: a tool's or the env's "Error: ...", an unreadable action, a toolset
# without direct queries, or a Salesforce error code ("MALFORMED_QUERY: ...", after the query output
# prefix when a query failed).
_FAILED_OBSERVATION = re.compile(
    r"^(?:Error:|FORMAT_ERROR|UNAVAILABLE|(?:Salesforce instance output: )?[A-Z][A-Z_]*: )"
)
# The tools every toolset has; the oracle's solvers call task-specific functions besides them.
_GENERAL_TOOLS = frozenset({"issue_soql_query", "issue_sosl_query", "submit"})


def episode_instance(observation: str, info: dict[str, Any]) -> TaskInstance:
    """The instance an oracle solves, from the first observation and a privileged environment's reset ``info``.

    Raises:
        PolicyError: ``info`` has no hidden parameters (the environment is not privileged).
    """
    if "params" not in info:
        raise PolicyError("the oracle needs the hidden parameters: make the environment with privileged=True")
    record: dict[str, Any] = {
        "idx": info["idx"],
        "task": info["task"],
        "query": observation,
        "answer": info.get("gold"),
        "metadata": dict(info.get("context") or {}),
        "params": info["params"],
    }
    if info.get("kind", "service") != "service":  # a CRMArena-Pro episode: the question is the observation's start
        record.update(kind=info["kind"], persona=info.get("persona"), query=observation.split("\n\n# Context")[0])
    return TaskInstance.model_validate(record)


class OraclePolicy(Policy):
    """Replays the task's oracle solver (:func:`crmarena_gym.tasks.oracle_trace`) as JSON tool calls.

    The solver needs the instance's hidden parameters, so the environment must be privileged
    (``gym.make(..., privileged=True)``; the runner does it because :attr:`privileged` is set) and have
    the task-specific functions (``toolset="functions"`` or ``"flex"``). The solver runs against the
    environment's org, which :meth:`attach` takes from the environment, or the ``org`` given here.
    Only generated instances can be solved: the original's published instances have no parameters.

    The solver plays step by step: it runs until it needs a tool, :meth:`act` hands that call to the
    environment, and the environment's result (``info["result"]``, which the runner passes to
    :meth:`observe`) is what the solver reads, so every call runs once. Played
    without :meth:`observe` (a loop of ``env.step(policy.act(obs))``), the policy runs each call itself
    as well to read its result.

    The oracle reads what each call answers: a failed call (an observation starting with ``Error:``,
    ``FORMAT_ERROR``, ``UNAVAILABLE`` or a Salesforce error code such as ``MALFORMED_QUERY: ``) raises
    :class:`PolicyError` naming the step, so a broken environment shows up as ``policy_error`` rather
    than as a lucky submission. A toolset without the functions the solver calls is refused before the
    call is made (:meth:`attach` for a toolset with no task functions at all, :meth:`reset` when the
    first call's function is missing, :meth:`act` for a later one).

    In act mode (a privileged act-mode environment) the solver's answer is turned into the change it stands
    for by the instance's act plan (:func:`~crmarena_gym.tasks.act_plan`), made with the write tools, and
    then submitted: ``done``, or the answer itself where the task asks for one (the article a quote breaks).

    Args:
        org: The org to solve against (default: the attached environment's org).

    Example:
        >>> import pathlib, tempfile
        >>> import gymnasium as gym
        >>> from crmarena_gym.datagen import generate_org
        >>> from crmarena_gym.tasks import generate_tasks
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "org.sqlite"
        >>> _ = generate_org(path, seed=0, scale=0.2)
        >>> tasks = generate_tasks(path, seed=0, per_task=1, tasks=["HTU"])
        >>> env = gym.make("CRMArena-HTU-v0", org=path, tasks=tasks, toolset="functions", privileged=True)
        >>> policy = OraclePolicy()
        >>> policy.attach(env)
        >>> obs, info = env.reset(seed=0)
        >>> policy.reset(obs, info)
        >>> done = False
        >>> while not done:
        ...     obs, reward, done, truncated, _ = env.step(policy.act(obs))
        >>> reward
        1.0
    """

    toolset = "functions"
    privileged = True

    def __init__(self, org: Org | None = None) -> None:
        super().__init__()
        self.org = org
        self._solver: _StepSolver | None = None
        self._available: frozenset[str] | None = None
        self._tools: Any = None  # the info["tools"] list _available was read from
        self._env: Any = None  # the attached environment (unwrapped)
        self._last: tuple[int, str] | None = None
        self._submitted = False
        self._act_calls: list[ToolCall] | None = None
        self._act_answers = False
        self._act_setup: tuple[TaskInstance, dict[str, str]] | None = None
        self._names: SchemaNames | None = None

    def attach(self, env: Any) -> None:
        """Take the environment's org (unless one was given), and check it has task functions.

        Raises:
            ValueError: The environment's toolset has no task-specific function (``toolset="soql"``).
        """
        base = env.unwrapped
        names = getattr(getattr(base, "tools", None), "names", None)
        pro = getattr(base, "kind", "service") != "service"  # Pro's solvers work by SOQL/SOSL
        if names is not None and not pro and not set(names) - _GENERAL_TOOLS:
            toolset = getattr(base, "toolset_name", None)
            raise ValueError(
                f"the oracle calls the task functions, which the toolset {toolset!r} lacks (it has only "
                f"{', '.join(names)}): make the environment with toolset='functions' or 'flex'"
            )
        if self.org is None:
            self.org = base.org
        self._env = base

    def _episode_instance(self, observation: str, info: dict[str, Any]) -> TaskInstance:
        """The instance to solve: the attached environment's own (validated when its task set loaded) when
        it is the one ``info`` describes, as :func:`episode_instance` would make it; else that."""
        base = getattr(self._env, "instance", None)
        if (
            isinstance(base, TaskInstance)
            and observation
            and "params" in info
            and base.idx == info.get("idx")
            and base.task == info.get("task")
            and (base.answer if isinstance(base.answer, str | None) else list(base.answer)) == info.get("gold")
            and base.params == info["params"]
            and info.get("context") == {"required": base.metadata.required, "optional": base.metadata.optional}
        ):
            if base.is_pro:  # Pro's solvers read the question itself, not the observation around it
                return base.model_copy(update={"params": info["params"]})
            persona = get_task_spec(base.task).persona  # episode_instance's: info carries no persona to it
            return base.model_copy(update={"query": observation, "persona": persona, "params": info["params"]})
        return episode_instance(observation, info)

    def unplayable(self, instances: Sequence[TaskInstance]) -> dict[int, str]:
        """The instances without hidden parameters: the solver cannot solve them.

        Example:
            >>> OraclePolicy().unplayable([TaskInstance(idx=7, task="HTU", query="Which agent?", answer=None)])
            {7: 'it has no hidden parameters (only generated instances can be solved; published ones have none)'}
        """
        reason = "it has no hidden parameters (only generated instances can be solved; published ones have none)"
        return {inst.idx: reason for inst in instances if not inst.params}

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        """Start the solver: it runs up to its first call, which :meth:`act` hands out first (``submit`` last)."""
        super().reset(observation, info, seed=seed)
        self._last = None
        instance = self._episode_instance(observation, info)
        if self.org is None:
            raise PolicyError("the oracle has no org: pass OraclePolicy(org=...) or call attach(env) first")
        org = self.org
        if info.get("today"):
            try:
                org = org.with_today(dt.date.fromisoformat(info["today"]))
            except NotImplementedError:
                pass  # a live org resolves relative dates itself; the oracle's tools take explicit dates
        self.close()
        tools = info.get("tools")
        if tools is not self._tools or self._tools is None:  # an environment shares one list across episodes
            available = tool_names(tools)
            self._tools, self._available = tools, None if available is None else frozenset(available)
        self._submitted = False
        # Act mode: once the solver has its answer, the calls that make the change it leads to (planned from the
        # solver's answer, not the gold: the diff then checks the oracle), then ``submit done``.
        self._act_calls: list[ToolCall] | None = None
        self._act_setup = None
        if info.get("answer_mode") == "act":
            if "act_calls" not in info:
                raise PolicyError("the oracle needs a privileged act-mode environment (its info names the change)")
            self._act_calls = []
            self._act_setup = (instance, dict(info.get("records") or {}))
        # Whether the final submit carries the solver's own answer (the article a quote breaks) rather than "done".
        self._act_answers = bool(info.get("act_answers"))
        # After schema drift its own SOQL and writes use the names the schema text shows (as a careful agent reads
        # them).
        names = SchemaNames.read(info.get("schema"), instance.kind)
        self._names = names
        self._solver = _StepSolver(instance, org, names)
        self._check(self._solver.next_call)

    def observe(self, info: dict[str, Any]) -> None:
        """Take the result of the call just played from the step's ``info`` (the runner passes it)."""
        if self._solver is not None and self._last is not None and "result" in info:
            if self._solver.next_call.name == "submit":  # an act-mode change's result: the solver is done
                return
            self._solver.deliver(getattr(info["result"], "value", info["result"]))

    def act(self, observation: str) -> str:
        """The solver's next call, once the observation shows that the previous one worked.

        Raises:
            PolicyError: The previous call failed (its observation is an error), the solver could not
                go on, or no call is left.
        """
        solver = self._solver
        if self._last is not None:
            step, name = self._last
            if _FAILED_OBSERVATION.match(observation.lstrip()):
                self.close()
                excerpt = " ".join(observation.split())[:300]
                raise PolicyError(f"the oracle's call {name}() at step {step} failed: {excerpt!r}")
        if solver is None or self._submitted:
            raise PolicyError("the oracle has no action left: the environment did not end the episode at submit")
        acting = self._act_calls is not None and self._last is not None and solver.next_call.name == "submit"
        if self._last is not None and not acting:
            self._check(solver.resume())
        call = solver.next_call
        if call.name == "submit" and self._act_setup is not None:  # act mode: plan the change from the answer
            self._act_calls = self._changes_for(str(call.arguments.get("content", "")))
            self._act_setup = None
        if call.name == "submit" and self._act_calls is not None:  # act mode: make the change, then say so
            if self._act_calls:
                call = self._act_calls.pop(0)
            elif not self._act_answers:
                call = ToolCall("submit", {"content": "done"})
        self._last = (1 if self._last is None else self._last[0] + 1, call.name)
        if call.name == "submit":
            self._submitted = True
            self.close()
        return call.to_action()

    def _changes_for(self, answer: str) -> list[ToolCall]:
        """The calls that make the change the solver's ``answer`` stands for, by the instance's act plan."""
        assert self._act_setup is not None
        instance, refs = self._act_setup
        solved: Any = None if answer == NONE_ANSWER else answer  # no answer: no change to make
        try:
            plan = act_plan(instance.model_copy(update={"answer": solved}), self.org)
        except ValueError as err:
            self.close()
            raise PolicyError(
                f"the oracle's answer {answer!r} of instance {instance.idx} makes no change: {err}"
            ) from err
        calls = list(plan.finish(refs))
        if self._names is not None:
            calls = [ToolCall(c.name, self._names.write_arguments(c.arguments)) for c in calls]
        return calls

    def _check(self, call: ToolCall | OracleError) -> None:
        """Refuse what the solver cannot go on with: its failure, or a function the toolset lacks."""
        if isinstance(call, OracleError):
            self.close()
            raise PolicyError(f"the oracle cannot solve instance {self.info['idx']}: {call}") from call
        if self._available is not None and call.name not in self._available:
            self.close()
            raise PolicyError(
                f"the oracle's solution of instance {self.info['idx']} calls {call.name}, which the "
                f"toolset {self.info.get('toolset')!r} lacks: make the environment with toolset='functions' or "
                "'flex' and keep those functions"
            )

    def close(self) -> None:
        """Drop the solver of the episode under way, if any."""
        self._solver = None


class _Pending(BaseException):
    """Stops a solver at its first call whose result is not known yet."""

    def __init__(self, call: ToolCall) -> None:
        super().__init__(call.name)
        self.call = call


class _StepSolver:
    """An oracle solver played one tool call at a time.

    Each step runs the solver from the start with the results known so far (the solvers are
    deterministic and only read results), up to its first call without one: that call is
    :attr:`next_call`. :meth:`deliver` hands it the environment's result, or :meth:`resume` runs the call
    itself when nothing was delivered. Re-running the solver's own logic costs little next to its calls.
    """

    def __init__(self, instance: TaskInstance, org: Org, names: SchemaNames | None = None) -> None:
        self.instance = instance
        self.org = org
        self.names = names
        self.tools = make_toolset("functions")
        self._known: list[tuple[ToolCall, Any]] = []
        self._delivered: tuple[Any] | None = None
        self.next_call: ToolCall | OracleError = self._advance()

    def _advance(self) -> ToolCall | OracleError:
        known = iter(self._known)

        def run(name: str, arguments: dict[str, Any]) -> Any:
            found = next(known, None)
            if found is None:
                raise _Pending(ToolCall(name, arguments))
            call, result = found
            if (call.name, call.arguments) != (name, arguments):
                raise OracleError(f"the solver called {name}() where it called {call.name}() before: not deterministic")
            return result

        try:
            trace = oracle_trace(self.instance, self.org, run=run, names=self.names)
        except _Pending as pending:
            return pending.call
        except OracleError as err:
            return err
        except Exception as err:  # a solver's bug reaches the episode's record as the oracle's failure
            return OracleError(f"{type(err).__name__}: {err}")
        return trace.actions[-1]  # submit(content=answer)

    def deliver(self, result: Any) -> None:
        """The environment's result of :attr:`next_call`."""
        self._delivered = (result,)

    def resume(self) -> ToolCall | OracleError:
        """Hand the solver the result of its call; its next call (or its failure) becomes :attr:`next_call`."""
        call = self.next_call
        if not isinstance(call, ToolCall) or call.name == "submit":
            return call
        if self._delivered is None:  # played without observe(): run the call to read its result
            result = self.tools.call(call.name, call.arguments, self.org, trusted=True)
        else:
            (result,) = self._delivered
        self._delivered = None
        self._known.append((call, result))
        self.next_call = self._advance()
        return self.next_call


class RandomPolicy(Policy):
    """Samples the environment's action space (well-formed queries, calls and submissions).

    Args:
        seed: The base seed; each episode reseeds from the runner's episode seed when given.

    Example:
        >>> import gymnasium as gym
        >>> env = gym.make("CRMArena-BRI-v0", org=getfixture("tiny_org"), tasks=[{"idx": 0, "task": "BRI",
        ...     "query": "Which state?", "answer": "OR", "metadata": {"required": "- Today's date: 2021-03-01"}}])
        >>> policy = RandomPolicy(seed=0)
        >>> policy.attach(env)
        >>> obs, info = env.reset(seed=0)
        >>> policy.reset(obs, info, seed=1)
        >>> policy.act(obs) in env.action_space.examples
        True
    """

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.seed = seed
        self._space: Any = None

    def attach(self, env: Any) -> None:
        """Remember the environment's action space."""
        self._space = env.action_space

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        """Reseed the sampler for the episode."""
        super().reset(observation, info, seed=seed)
        if self._space is None:
            raise PolicyError("RandomPolicy samples the environment's action space: call attach(env) first")
        self._space.seed(self.seed if seed is None else seed)

    def act(self, observation: str) -> str:
        """A sample of the action space."""
        return self._space.sample()
