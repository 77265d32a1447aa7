"""Wrappers for the paper's ablations and fault-injection experiments.

Each wrapper records its constructor arguments (``gymnasium.utils.RecordConstructorArgs``), so that
``env.spec`` describes the whole stack and a wrapped environment can be re-created.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, SupportsFloat

import gymnasium as gym
from gymnasium.utils import RecordConstructorArgs

from crmarena_gym._json import json_text
from crmarena_gym.envs import CRMArenaEnv, StepResult, render_error

DropoutMode = Literal["drop", "error", "truncate", "corrupt"]
TRANSIENT_ERROR = "SERVER_UNAVAILABLE: The server is temporarily unable to answer. Try the request again."
LAST_TURN_WARNING = "\n\n[This is your last turn: submit your answer now.]"


def _crm_env(env: gym.Env[Any, Any]) -> CRMArenaEnv:
    base = env.unwrapped
    if not isinstance(base, CRMArenaEnv):
        raise TypeError(f"this wrapper needs a CRMArenaEnv underneath, got {type(base).__name__}")
    return base


def _time_limit(env: gym.Env[Any, Any]) -> int | None:
    """The tightest ``TimeLimit`` already in the wrapper stack, if any."""
    limits = []
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            limits.append(env._max_episode_steps)
        env = env.env
    return min(limits) if limits else None


class TurnLimit(gym.Wrapper[str, str, str, str], RecordConstructorArgs):
    """End an episode after ``max_turns`` actions with ``truncated=True`` and reward 0.

    An action on the last turn still counts: a ``submit`` there ends the episode with its reward.

    Args:
        env: The environment.
        max_turns: The number of actions allowed (the paper allows 20).
        warn_last_turn: Append a note to the observation before the last turn.

    Example:
        >>> env = TurnLimit(getfixture("bri_env"), max_turns=2)
        >>> _ = env.reset(seed=0)
        >>> env.step("execute SELECT Id FROM Issue__c")[3], env.step("execute SELECT Id FROM Issue__c")[3]
        (False, True)
    """

    def __init__(self, env: gym.Env[str, str], max_turns: int, *, warn_last_turn: bool = False) -> None:
        if not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"max_turns must be a positive integer, got {max_turns!r}")
        inner_limit = _time_limit(env)
        if inner_limit is not None and inner_limit < max_turns:
            raise ValueError(
                f"max_turns={max_turns} exceeds the {inner_limit}-step limit already on this environment (gym.make "
                f"adds the registered one); create it with gym.make(..., max_episode_steps={max_turns}) instead"
            )
        RecordConstructorArgs.__init__(self, max_turns=max_turns, warn_last_turn=warn_last_turn)
        gym.Wrapper.__init__(self, env)
        self.max_turns = max_turns
        self.warn_last_turn = warn_last_turn
        self._turns = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        self._turns = 0
        obs, info = self.env.reset(seed=seed, options=options)
        info["turns_left"] = self.max_turns
        if self.warn_last_turn and self.max_turns == 1:
            obs += LAST_TURN_WARNING
        return obs, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._turns += 1
        left = self.max_turns - self._turns
        info["turns_left"] = left
        if not terminated and left <= 0:
            truncated = True
            reward = 0.0
            info["end_reason"] = "turn_limit"
        elif self.warn_last_turn and left == 1 and not (terminated or truncated):
            obs += LAST_TURN_WARNING
        return obs, reward, terminated, truncated, info


class ToolResultDropout(gym.Wrapper[str, str, str, str], RecordConstructorArgs):
    """Lose query and function results with probability ``p``.

    Modes: ``drop`` (an empty result), ``error`` (a transient-error message), ``truncate`` (only part of
    the rows), ``corrupt`` (one value changed). Draws come from the environment's seeded generator, so
    a seed fixes the schedule; ``info["dropout"]`` says what happened at each step. Submissions, format
    errors and failing queries are never touched.

    Args:
        env: A CRMArena environment (possibly wrapped).
        p: The probability that a result is hit.
        mode: What a hit does.
    """

    def __init__(self, env: gym.Env[str, str], p: float, mode: DropoutMode = "drop") -> None:
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
        if mode not in ("drop", "error", "truncate", "corrupt"):
            raise ValueError(f"mode must be 'drop', 'error', 'truncate' or 'corrupt', got {mode!r}")
        RecordConstructorArgs.__init__(self, p=p, mode=mode)
        gym.Wrapper.__init__(self, env)
        self._base = _crm_env(env)
        self.p = float(p)
        self.mode = mode

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if "result" not in info:  # a submission, a format error or a refused query
            return obs, reward, terminated, truncated, info
        rng = self.np_random
        hit = bool(rng.random() < self.p)
        record: dict[str, Any] = {"hit": hit, "mode": self.mode}
        if hit:
            is_query = info["action_kind"] == "query"
            result = info["result"].value
            if self.mode == "error":  # a query's error reads as the env renders refused queries
                obs = render_error(*TRANSIENT_ERROR.split(": ", 1)) if is_query else TRANSIENT_ERROR
            elif self.mode == "drop":
                obs = self._base.render_result([] if isinstance(result, list) else {}, query=is_query)
            elif self.mode == "truncate":
                kept = _truncate(result, rng)
                record["kept"] = len(kept)
                obs = self._base.render_result(kept, query=is_query)
            else:
                changed, path = _corrupt(result, rng)
                record["changed"] = str(path[-1]) if path else None
                record["path"] = path  # keys and indices from the result down to the changed value
                obs = self._base.render_result(changed, query=is_query)
            obs = self._base._bound(obs)
        info["dropout"] = record
        return obs, reward, terminated, truncated, info


def _truncate(result: Any, rng: Any) -> Any:
    if isinstance(result, list):
        return result[: int(rng.integers(0, len(result))) if result else 0]
    if isinstance(result, dict):
        keys = list(result)
        return {k: result[k] for k in keys[: int(rng.integers(0, len(keys))) if keys else 0]}
    return result


def _change(value: Any, rng: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + int(rng.integers(1, 10))
    if isinstance(value, str) and value:
        chars = list(value)
        i = int(rng.integers(len(chars)))
        alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
        chars[i] = alphabet[(alphabet.find(chars[i]) + 1 + int(rng.integers(60))) % len(alphabet)]
        return "".join(chars)
    return value


def _corrupt(result: Any, rng: Any) -> tuple[Any, list[str | int] | None]:
    """A copy of ``result`` with one scalar value inside it changed, and the path to that value (None:
    the result holds no value to change, such as a single date)."""
    changed = copy.deepcopy(result)
    slots: list[tuple[Any, Any, tuple[str | int, ...]]] = []

    def collect(node: Any, path: tuple[str | int, ...]) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(value, dict | list):
                collect(value, (*path, key))
            elif value is not None and not (isinstance(value, str) and not value):
                slots.append((node, key, (*path, key)))

    collect(changed, ())
    if not slots:
        return changed, None
    node, key, path = slots[int(rng.integers(len(slots)))]
    node[key] = _change(node[key], rng)
    return changed, list(path)


class FunctionRemoval(gym.Wrapper[str, str, str, str], RecordConstructorArgs):
    """Take functions out of the toolset, by name or by the paper's ablation groups.

    Removed functions vanish from ``info["tools"]`` and a call to one answers as an unknown function.

    Args:
        env: A CRMArena environment (possibly wrapped). Its toolset is changed in place.
        functions: Names of tools to remove.
        groups: Ablation groups to remove (``query``, ``calculation``, ``independent``, ``dependent``
            and their combinations such as ``dependent_calculation``).
    """

    def __init__(self, env: gym.Env[str, str], functions: Sequence[str] = (), groups: Sequence[str] = ()) -> None:
        if isinstance(functions, str) or isinstance(groups, str):
            raise TypeError("functions and groups are lists of names, not a single string")
        RecordConstructorArgs.__init__(self, functions=tuple(functions), groups=tuple(groups))
        gym.Wrapper.__init__(self, env)
        base = _crm_env(env)
        base.restrict_tools(tuple(functions), tuple(groups))
        self.action_space = base.action_space
        self.removed = (tuple(functions), tuple(groups))


class ObservationTruncation(gym.ObservationWrapper[str, str, str], RecordConstructorArgs):
    """Cut observations longer than ``max_chars``, saying how many characters were cut."""

    def __init__(self, env: gym.Env[str, str], max_chars: int) -> None:
        if not isinstance(max_chars, int) or max_chars < 1:
            raise ValueError(f"max_chars must be a positive integer, got {max_chars!r}")
        RecordConstructorArgs.__init__(self, max_chars=max_chars)
        gym.ObservationWrapper.__init__(self, env)
        self.max_chars = max_chars

    def observation(self, observation: str) -> str:
        if len(observation) <= self.max_chars:
            return observation
        return (
            observation[: self.max_chars]
            + f"\n[observation truncated: {len(observation) - self.max_chars} more characters]"
        )


class RecordTrajectory(gym.Wrapper[str, str, str, str], RecordConstructorArgs):
    """Append every reset and step to a JSON Lines file, one line each, flushed as it happens.

    Each line has ``episode``, ``step`` (0 for the reset), ``action``, ``observation``, ``reward``,
    ``terminated``, ``truncated`` and the JSON-able part of ``info``; a reset line also has ``env_stack``,
    the environment it records (:func:`env_stack`: the wrappers inside this one, then the base env).
    """

    def __init__(self, env: gym.Env[str, str], path: str | os.PathLike[str]) -> None:
        RecordConstructorArgs.__init__(self, path=str(path))
        gym.Wrapper.__init__(self, env)
        self.path = Path(path)
        if self.path.is_dir():
            raise IsADirectoryError(f"RecordTrajectory needs a file path, got the directory {str(self.path)!r}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._episode = -1
        self._step = 0
        self._stack = env_stack(env)

    def _write(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json_text(record, default=_jsonable) + "\n")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._episode += 1
        self._step = 0
        brief = {k: v for k, v in info.items() if k not in ("tools", "schema")}  # large and constant
        line = {"episode": self._episode, "step": 0, "seed": seed, "observation": obs, "info": brief}
        line["env_stack"] = self._stack  # what shaped the episode: a file may collect several setups
        self._write(line)
        return obs, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._step += 1
        self._write(
            {
                "episode": self._episode,
                "step": self._step,
                "action": action,
                "observation": obs,
                "reward": float(reward),
                "terminated": terminated,
                "truncated": truncated,
                "info": info,
            }
        )
        return obs, reward, terminated, truncated, info


def env_stack(env: gym.Env[Any, Any]) -> list[dict[str, Any]]:
    """An environment as built, outermost wrapper first: each layer's ``class`` (``module:Name``) and
    ``kwargs`` (its constructor arguments where the wrapper records them, as Gymnasium's and ours do, else
    None; the base env's ``gym.make`` arguments without the org and the task set, which are data).

    Example:
        >>> stack = env_stack(TurnLimit(getfixture("bri_env"), max_turns=2))
        >>> stack[0]
        {'class': 'crmarena_gym.wrappers._common:TurnLimit', 'kwargs': {'max_turns': 2, 'warn_last_turn': False}}
    """
    stack: list[dict[str, Any]] = []
    layer: Any = env
    while isinstance(layer, gym.Wrapper):
        saved = getattr(layer, "_saved_kwargs", None)
        kwargs = {k: v for k, v in saved.items() if k != "env"} if saved is not None else None
        stack.append({"class": f"{type(layer).__module__}:{type(layer).__qualname__}", "kwargs": kwargs})
        layer = layer.env
    spec_kwargs = getattr(getattr(env, "spec", None), "kwargs", None) or {}
    kwargs = {k: v for k, v in spec_kwargs.items() if k not in ("org", "tasks")}
    stack.append({"class": f"{type(layer).__module__}:{type(layer).__qualname__}", "kwargs": kwargs})
    return json.loads(json_text(stack, default=_recorded))


def _recorded(value: Any) -> Any:
    """A value JSON cannot hold, as a record keeps it: a path as its text, anything else as its ``repr``."""
    return os.fspath(value) if isinstance(value, os.PathLike) else repr(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, StepResult):
        return value.value
    return repr(value)
