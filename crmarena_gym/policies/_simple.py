"""Policies without a model: the oracle (the task's solver replayed through the env) and random actions."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any

from crmarena_gym.chat import tool_names
from crmarena_gym.org import Org
from crmarena_gym.policies._base import Policy, PolicyError
from crmarena_gym.tasks import OracleError, TaskInstance, oracle_trace

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
    return TaskInstance.model_validate(
        {
            "idx": info["idx"],
            "task": info["task"],
            "query": observation,
            "answer": info.get("gold"),
            "metadata": dict(info.get("context") or {}),
            "params": info["params"],
        }
    )


class OraclePolicy(Policy):
    """Replays the task's oracle solver (:func:`crmarena_gym.tasks.oracle_trace`) as JSON tool calls.

    The solver needs the instance's hidden parameters, so the environment must be privileged
    (``gym.make(..., privileged=True)``; the runner does it because :attr:`privileged` is set) and have
    the task-specific functions (``toolset="functions"`` or ``"flex"``). The solver runs against the
    environment's org, which :meth:`attach` takes from the environment, or the ``org`` given here.
    Only generated instances can be solved: the original's published instances have no parameters.

    The oracle reads what each call answers: a failed call (an observation starting with ``Error:``,
    ``FORMAT_ERROR``, ``UNAVAILABLE`` or a Salesforce error code such as ``MALFORMED_QUERY: ``) raises
    :class:`PolicyError` naming the step, so a broken environment shows up as ``policy_error`` rather
    than as a lucky submission. A toolset without the functions the trace calls is refused before the
    first step (:meth:`attach` for a toolset with no task functions at all, :meth:`reset` for one that
    lacks some).

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
        self._actions: list[tuple[str, str]] = []
        self._last: tuple[int, str] | None = None

    def attach(self, env: Any) -> None:
        """Take the environment's org (unless one was given), and check it has task functions.

        Raises:
            ValueError: The environment's toolset has no task-specific function (``toolset="soql"``).
        """
        base = env.unwrapped
        names = getattr(getattr(base, "tools", None), "names", None)
        if names is not None and not set(names) - _GENERAL_TOOLS:
            toolset = getattr(base, "toolset_name", None)
            raise ValueError(
                f"the oracle calls the task functions, which the toolset {toolset!r} lacks (it has only "
                f"{', '.join(names)}): make the environment with toolset='functions' or 'flex'"
            )
        if self.org is None:
            self.org = base.org

    def unplayable(self, instances: Sequence[TaskInstance]) -> dict[int, str]:
        """The instances without hidden parameters: the solver cannot solve them.

        Example:
            >>> OraclePolicy().unplayable([TaskInstance(idx=7, task="HTU", query="Which agent?", answer=None)])
            {7: 'it has no hidden parameters (only generated instances can be solved; published ones have none)'}
        """
        reason = "it has no hidden parameters (only generated instances can be solved; published ones have none)"
        return {inst.idx: reason for inst in instances if not inst.params}

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        """Solve the instance now; :meth:`act` then hands out the calls one by one, ``submit`` last."""
        super().reset(observation, info, seed=seed)
        self._actions, self._last = [], None
        instance = episode_instance(observation, info)
        if self.org is None:
            raise PolicyError("the oracle has no org: pass OraclePolicy(org=...) or call attach(env) first")
        org = self.org
        if info.get("today"):
            try:
                org = org.with_today(dt.date.fromisoformat(info["today"]))
            except NotImplementedError:
                pass  # a live org resolves relative dates itself; the oracle's tools take explicit dates
        try:
            trace = oracle_trace(instance, org)
        except OracleError as err:
            raise PolicyError(f"the oracle cannot solve instance {info['idx']}: {err}") from err
        available = tool_names(info.get("tools"))
        if available is not None:
            missing = sorted({c.name for c in trace.actions} - available)
            if missing:
                raise PolicyError(
                    f"the oracle's solution of instance {info['idx']} calls {', '.join(missing)}, which the "
                    f"toolset {info.get('toolset')!r} lacks: make the environment with toolset='functions' or "
                    "'flex' and keep those functions"
                )
        self._actions = [(c.name, c.to_action()) for c in trace.actions]
        self._actions.reverse()

    def act(self, observation: str) -> str:
        """The next recorded call, once the observation shows that the previous one worked.

        Raises:
            PolicyError: The previous call failed (its observation is an error), or no call is left.
        """
        if self._last is not None:
            step, name = self._last
            if _FAILED_OBSERVATION.match(observation.lstrip()):
                excerpt = " ".join(observation.split())[:300]
                raise PolicyError(f"the oracle's call {name}() at step {step} failed: {excerpt!r}")
        if not self._actions:
            raise PolicyError("the oracle has no action left: the environment did not end the episode at submit")
        name, action = self._actions.pop()
        self._last = (1 if self._last is None else self._last[0] + 1, name)
        return action


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
