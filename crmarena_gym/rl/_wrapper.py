"""``CandidateActionWrapper``: a CRMArena environment with discrete actions and numeric observations.

RL libraries cannot train on text spaces. This wrapper keeps the text environment underneath unchanged
and, at each step, offers K candidate text actions (a :class:`~crmarena_gym.rl.CandidateGenerator`),
takes the number of one of them as the action, and describes the state as a fixed-size vector (an
:class:`~crmarena_gym.rl.Encoder`) with a mask of the candidates that exist:

- action space: ``Discrete(K)``;
- observation space: ``Dict({"observations": Box(0, 1, (D,)), "action_mask": Box(0, 1, (K,)),
  "action_features": Box(0, 1, (K, F))})``: the state, the mask of the slots that hold a candidate, and
  each candidate's features (a :class:`~crmarena_gym.rl.CandidateFeaturizer`), which the parametric
  RLModule scores candidates from (:func:`~crmarena_gym.rl.parametric_module_class`).

A masked (empty) slot can still be chosen (``check_env`` and ``action_space.sample()`` ignore masks);
it is sent as an unreadable reply, which the environment answers with ``FORMAT_ERROR`` and which uses
the turn, as a malformed reply does in the text environment.

Every wrapper has a help level (``level``, :data:`~crmarena_gym.rl.HELP_LEVELS`): what the candidates
take from where (see :mod:`crmarena_gym.rl._levels`). It is in every ``info`` (``help_level``), as the
step cost is (``step_cost``: subtracted from the reward of every step that reaches the text environment).
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import RecordConstructorArgs

from crmarena_gym._memory import BytesLRU
from crmarena_gym.envs import MAX_TURNS, CRMArenaEnv, StepResult
from crmarena_gym.rl._candidates import (
    PARSED_TEMPLATES,
    CandidateGenerator,
    CandidateState,
    StepRecord,
    ToolPipelineCandidates,
)
from crmarena_gym.rl._encoding import Encoder, HashingEncoder
from crmarena_gym.rl._features import CandidateFeaturizer, SlotFeatures
from crmarena_gym.rl._levels import DEFAULT_HELP_LEVEL, check_help_level, level_facts
from crmarena_gym.rl._typed import TypedCallCandidates, TypedEncoder, TypedSlotFeatures

__all__ = [
    "EMPTY_SLOT_ACTION",
    "INFO_KEYS",
    "CandidateActionWrapper",
    "TextLevelWrapper",
    "default_generator",
    "make_discrete_env",
    "make_level_env",
]

#: The text sent when an empty slot is chosen: the environment answers it with ``FORMAT_ERROR``.
EMPTY_SLOT_ACTION = "(empty candidate slot)"
#: The keys of the text environment's ``info`` kept in the wrapper's ``info`` (unless ``full_info``):
#: the small ones; tool results, schemas and tool descriptions are left out to keep rollouts light.
INFO_KEYS = (
    "task",
    "abbrev",
    "idx",
    "turn",
    "action_kind",
    "function",
    "error",
    "submitted",
    "reward_breakdown",
    "end_reason",
)
_TEXT_LEVEL = (
    "the 'text' help level has no candidates: it is the text environment itself, whose actions are text. "
    "RLlib and Stable-Baselines3 cannot train on text actions; LLM trainers can (TRL, SkyRL, OpenEnv: "
    "crmarena_gym.integrations). Use TextLevelWrapper(env) or make_level_env(task, level='text', ...) to record "
    "the level; for a discrete policy choose 'tools', 'parsed' or 'oracle-args'"
)


def default_generator(level: str = DEFAULT_HELP_LEVEL) -> CandidateGenerator:
    """The candidate generator of a help level.

    ``tools``: :class:`~crmarena_gym.rl.TypedCallCandidates`; ``parsed``:
    :class:`~crmarena_gym.rl.ToolPipelineCandidates` over :data:`~crmarena_gym.rl.PARSED_TEMPLATES`;
    ``oracle-args``: :class:`~crmarena_gym.rl.ToolPipelineCandidates` with its defaults (the generator of
    every figure made before the levels).

    Example:
        >>> default_generator("parsed").num_slots, default_generator("oracle-args").num_slots
        (62, 60)
    """
    check_help_level(level)
    if level == "text":
        raise ValueError(_TEXT_LEVEL)
    if level == "tools":
        return TypedCallCandidates()
    if level == "parsed":
        return ToolPipelineCandidates(PARSED_TEMPLATES)
    return ToolPipelineCandidates()


class CandidateActionWrapper(gym.Wrapper[dict[str, np.ndarray], np.int64, str, str], RecordConstructorArgs):
    """Discrete actions over generated candidates, with masked fixed-size observations.

    Args:
        env: A CRMArena environment (``gym.make("CRMArena-TII-v0", ..., toolset="functions")``) with the
            ``functions`` or ``flex`` toolset.
        generator: The candidate generator (default :class:`~crmarena_gym.rl.ToolPipelineCandidates`).
        encoder: The observation encoder (default :class:`~crmarena_gym.rl.HashingEncoder` for the
            generator's slots).
        featurizer: The candidate featurizer (default :class:`~crmarena_gym.rl.SlotFeatures` for the
            generator's slots).
        max_turns: The turn budget used for the turn feature (default: the environment's
            ``max_episode_steps``, else 20).
        full_info: Pass the text environment's whole ``info`` through (tool results, schema, tools);
            by default only :data:`INFO_KEYS` are kept.
        text_in_info: Put ``candidates`` (each slot's text action, ``""`` where empty) and, after a
            step, ``action_text`` (what was sent) in ``info``. Candidate calls carry earlier results
            by value and can be long; distributed trainers that ship every ``info`` between processes
            may turn this off (the texts stay readable as :attr:`slots` and ``state.history``).
        level: The help level (:data:`~crmarena_gym.rl.HELP_LEVELS`): ``parsed`` (default: arguments parsed
            from the question's text), ``tools`` (the policy types the arguments) or ``oracle-args``
            (arguments from the hidden parameters: privileged; the level of the figures made before the
            levels). It picks the question facts the generator gets (:func:`~crmarena_gym.rl.level_facts`)
            and the default generator, encoder and featurizer. ``text`` has no candidates: see
            :class:`TextLevelWrapper`.
        step_cost: Subtracted from the reward of every step that reaches the text environment (a call, an
            empty slot, a submission; not the choices that type a call's arguments at the ``tools`` level),
            so that shorter solutions earn more. 0 by default.

    The generator never reads the gold answer; at ``tools`` and ``parsed`` it reads nothing but the text
    (``tests/rl/test_levels.py`` perturbs every hidden parameter and finds the same candidates and features).

    Example:
        >>> record = {"idx": 0, "task": "NCR", "answer": "005000000000001AAA", "metadata": {"required": ""},
        ...           "query": "Who takes this case?\\n- Case Subject: Wrong size\\n- Case Description: Small."}
        >>> text_env = CRMArenaEnv("NCR", org=getfixture("tiny_org"), tasks=[record], toolset="functions")
        >>> env = CandidateActionWrapper(text_env)
        >>> obs, info = env.reset(seed=0)
        >>> sorted(obs), obs["action_features"].shape == (env.action_space.n, env.featurizer.size)
        (['action_features', 'action_mask', 'observations'], True)
        >>> [c for c in info["candidates"] if c]  # nothing to submit before a lookup
        ['execute get_issues()']
        >>> obs, reward, terminated, truncated, info = env.step(env.generator.slot_names.index("issues"))
        >>> reward, terminated, sum(c.startswith("execute get_cases(") for c in info["candidates"]) > 0
        (0.0, False, True)
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        generator: CandidateGenerator | None = None,
        encoder: Encoder | None = None,
        featurizer: CandidateFeaturizer | None = None,
        *,
        max_turns: int | None = None,
        full_info: bool = False,
        text_in_info: bool = True,
        level: str = DEFAULT_HELP_LEVEL,
        step_cost: float = 0.0,
    ) -> None:
        RecordConstructorArgs.__init__(
            self,
            generator=generator,
            encoder=encoder,
            featurizer=featurizer,
            max_turns=max_turns,
            full_info=full_info,
            text_in_info=text_in_info,
            level=level,
            step_cost=step_cost,
        )
        check_help_level(level)
        if level == "text":
            raise ValueError(_TEXT_LEVEL)
        self.level = level
        self.step_cost = _check_step_cost(step_cost)
        gym.Wrapper.__init__(self, env)
        base = env.unwrapped
        if not isinstance(base, CRMArenaEnv):
            raise TypeError(f"CandidateActionWrapper needs a CRMArenaEnv underneath, got {type(base).__name__}")
        if base.toolset_name not in ("functions", "flex"):
            raise ValueError(
                f"CandidateActionWrapper offers function calls: make the environment with toolset='functions' "
                f"or 'flex', not {base.toolset_name!r}"
            )
        self.generator: CandidateGenerator = generator if generator is not None else default_generator(level)
        if not isinstance(self.generator, CandidateGenerator):
            raise TypeError(
                f"generator must have num_slots, slot_names, slots(state) and candidates(state), got {self.generator!r}"
            )
        typed = isinstance(self.generator, TypedCallCandidates)
        if encoder is None:
            encoder = TypedEncoder(self.generator.num_slots) if typed else HashingEncoder(self.generator.num_slots)
        self.encoder: Encoder = encoder
        if not isinstance(self.encoder, Encoder):
            raise TypeError(f"encoder must have size and encode(state, slots, sources), got {self.encoder!r}")
        if featurizer is None and isinstance(self.generator, TypedCallCandidates):
            featurizer = TypedSlotFeatures(self.generator.num_slots, first_value_slot=self.generator.first_value_slot)
        self.featurizer: CandidateFeaturizer = (
            featurizer if featurizer is not None else SlotFeatures(self.generator.num_slots)
        )
        if not isinstance(self.featurizer, CandidateFeaturizer):
            raise TypeError(f"featurizer must have size and features(state, slots, sources), got {self.featurizer!r}")
        if max_turns is None:
            spec_turns = env.spec.max_episode_steps if env.spec is not None else None
            max_turns = spec_turns or MAX_TURNS
        if not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"max_turns must be a positive integer, got {max_turns!r}")
        self.max_turns = max_turns
        self.full_info = full_info
        self.text_in_info = text_in_info
        k = self.generator.num_slots
        self.action_space = spaces.Discrete(k)
        self.observation_space = spaces.Dict(
            {
                "observations": spaces.Box(0.0, 1.0, shape=(self.encoder.size,), dtype=np.float32),
                "action_mask": spaces.Box(0.0, 1.0, shape=(k,), dtype=np.float32),
                "action_features": spaces.Box(0.0, 1.0, shape=(k, self.featurizer.size), dtype=np.float32),
            }
        )
        self.state: CandidateState | None = None
        self.slots: list[str | None] = [None] * k
        # The first observation of each question is kept (see _FIRST_OBSERVATIONS) when the generator, encoder and
        # featurizer are the built-in ones: then it is a pure function of the question's facts and text.
        # The process in the key: a wrapper unpickled in another process never meets that process's own serials.
        self._first_key: tuple[int, int] | None = (
            (os.getpid(), next(_WRAPPER_SERIALS))
            if _builtin_parts(self.generator, self.encoder, self.featurizer)
            else None
        )
        self._first_parts = (self.generator, self.encoder, self.featurizer)  # the parts the key stands for

    # -- the episode ---------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        text, info = self.env.reset(seed=seed, options=options)
        base = self.env.unwrapped
        assert isinstance(base, CRMArenaEnv) and base.instance is not None
        facts = level_facts(self.level, base.instance, text)
        self.state = CandidateState(facts, max_turns=self.max_turns, observation=text)
        return self._observe(info)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], SupportsFloat, bool, bool, dict[str, Any]]:
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        slot = _slot_number(action, self.action_space.n)
        text = self.slots[slot]
        select = getattr(self.generator, "select", None)
        if text is None:
            sent: str | None = EMPTY_SLOT_ACTION
            self.state.pending = None  # a wasted turn also drops a call half typed
        elif callable(select):
            sent = select(self.state, slot)
        else:
            sent = text
        if sent is None:  # the choice typed part of a call (the tools level): the environment is not called
            obs, out_info = self._observe({"turn": self.state.turn, "action_kind": "argument"})
            if self.text_in_info:
                out_info["action_text"] = text
            return obs, 0.0, False, False, out_info
        observation, reward, terminated, truncated, info = self.env.step(sent)
        ok = "error" not in info and info.get("action_kind") == "call"
        self.state.history.append(StepRecord(sent, info.get("function"), _result_value(info), ok, observation))
        self.state.turn += 1
        self.state.observation = observation
        obs, out_info = self._observe(info)
        if self.text_in_info:
            out_info["action_text"] = sent
        return obs, float(reward) - self.step_cost, terminated, truncated, out_info

    # -- helpers -------------------------------------------------------------------------------

    def _observe(self, info: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        state = self.state
        assert state is not None
        first = None
        if (
            self._first_key is not None
            and not state.history
            and state.pending is None
            and state.turn == 0
            and self._first_parts == (self.generator, self.encoder, self.featurizer)
        ):
            first = (self._first_key, state.facts, str(state.observation), state.max_turns)
            kept = _FIRST_OBSERVATIONS.get(first)
            if kept is not None:
                self.slots = list(kept[0])
                vector, mask, features = (_dense(part) for part in kept[1])
                return self._observation(info, vector, mask, features)
        self.slots = list(self.generator.slots(state))
        if len(self.slots) != self.generator.num_slots:
            raise ValueError(
                f"the generator gave {len(self.slots)} slots, but declares num_slots={self.generator.num_slots}"
            )
        sources_of = getattr(self.generator, "slot_sources", None)
        sources = list(sources_of(state)) if callable(sources_of) else [_function_of(s) for s in self.slots]
        vector = np.asarray(self.encoder.encode(state, self.slots, sources), dtype=np.float32)
        mask = np.array([s is not None for s in self.slots], dtype=np.float32)
        features = np.asarray(self.featurizer.features(state, self.slots, sources), dtype=np.float32)
        if first is not None:
            parts = tuple(_sparse(part) for part in (vector, mask, features))
            size = sum(where.nbytes + values.nbytes + 200 for _, where, values in parts)
            size += sys.getsizeof(first[2]) + sum(sys.getsizeof(text) + 8 for text in self.slots if text is not None)
            _FIRST_OBSERVATIONS.put(first, (tuple(self.slots), parts), size)
        return self._observation(info, vector, mask, features)

    def _observation(
        self, info: dict[str, Any], vector: np.ndarray, mask: np.ndarray, features: np.ndarray
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        out = dict(info) if self.full_info else {k: info[k] for k in INFO_KEYS if k in info}
        out["help_level"] = self.level
        out["step_cost"] = self.step_cost
        if self.text_in_info:
            out["candidates"] = [s or "" for s in self.slots]
        return {"observations": vector, "action_mask": mask, "action_features": features}, out

    @property
    def action_mask(self) -> np.ndarray:
        """The mask of the current candidates (1 where a slot holds an action)."""
        return np.array([s is not None for s in self.slots], dtype=np.float32)

    def action_masks(self) -> np.ndarray:
        """The valid actions as booleans: the method sb3-contrib's ``MaskablePPO`` calls on an environment,
        so that ``MaskablePPO("MultiInputPolicy", env)`` trains with the masks as they are.

        Example:
            >>> from crmarena_gym.rl import make_discrete_env
            >>> env = make_discrete_env("BRI", org=getfixture("tiny_org"), tasks=[{"idx": 0, "task": "BRI",
            ...     "query": "Which state?", "answer": "OR", "metadata": {"required": "- Today's date: 2021-03-01"}}])
            >>> obs, _ = env.reset(seed=0)
            >>> bool((env.action_masks() == (obs["action_mask"] == 1)).all()), env.action_masks().dtype
            (True, dtype('bool'))
        """
        return np.array([s is not None for s in self.slots], dtype=bool)


def _builtin_parts(generator: Any, encoder: Any, featurizer: Any) -> bool:
    """Whether the generator, encoder and featurizer are the built-in ones, with built-in templates and slot groups:
    then a state's observation depends on the state alone (no user code is asked)."""
    from crmarena_gym.rl._candidates import (
        CallTemplate,
        ChoiceTemplate,
        Fact,
        FactItem,
        ResultOf,
        ValuesById,
    )
    from crmarena_gym.rl._knowledge import KnowledgeSlots

    if type(encoder) not in (HashingEncoder, TypedEncoder) or type(featurizer) not in (SlotFeatures, TypedSlotFeatures):
        return False
    if type(generator) is TypedCallCandidates:
        return all(type(group) is KnowledgeSlots for group in generator.extras)
    if type(generator) is not ToolPipelineCandidates:
        return False
    bindings = (Fact, FactItem, ResultOf, ValuesById)
    return (
        all(type(t) is CallTemplate and all(type(b) in bindings for _, b in t.arguments) for t in generator.templates)
        and all(type(c) is ChoiceTemplate for c in generator.choices)
        and all(type(group) is KnowledgeSlots for group in generator.extras)
    )


_Sparse = tuple[tuple[int, ...], np.ndarray, np.ndarray]

# The first observation of each question, per wrapper (its serial number: an entry of a wrapper gone is never
# asked again and ages out), sparse: a few kB where the arrays take ~100 kB. One bound for the process, however
# many wrappers it holds.
_FIRST_OBSERVATIONS: BytesLRU[tuple[Any, ...], tuple[tuple[str | None, ...], tuple[_Sparse, ...]]] = BytesLRU(
    max_entries=16384, max_bytes=32 * 1024 * 1024
)
_WRAPPER_SERIALS = itertools.count()


def _sparse(array: np.ndarray) -> _Sparse:
    """A float32 array kept as its shape, where it is not zero, and the values there (a few kB, not ~100 kB)."""
    where = np.flatnonzero(array)
    return array.shape, where.astype(np.int32), array.reshape(-1)[where]


def _dense(kept: _Sparse) -> np.ndarray:
    shape, where, values = kept
    out = np.zeros(shape, dtype=np.float32)
    out.reshape(-1)[where] = values
    return out


def _slot_number(action: Any, n: int) -> int:
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action.item()
    if isinstance(action, bool) or not isinstance(action, int | np.integer) or not 0 <= int(action) < n:
        raise ValueError(f"the action must be a slot number from 0 to {n - 1}, got {action!r}")
    return int(action)


def _function_of(text: str | None) -> str | None:
    if text is None:
        return None
    if text.startswith("execute "):
        return text[len("execute ") :].split("(", 1)[0].strip()
    return "submit"


def _check_step_cost(step_cost: object) -> float:
    if isinstance(step_cost, bool) or not isinstance(step_cost, int | float) or not 0 <= step_cost < 1:
        raise ValueError(f"step_cost must be a number from 0 up to (not including) 1, got {step_cost!r}")
    return float(step_cost)


class TextLevelWrapper(gym.Wrapper[str, str, str, str], RecordConstructorArgs):
    """The ``text`` help level: the text environment unchanged, the level (and a step cost) recorded.

    Actions and observations stay text, so the policy writes its own calls and answers: the level for LLM
    policies and LLM trainers (TRL, SkyRL, OpenEnv: :mod:`crmarena_gym.integrations`); RLlib and
    Stable-Baselines3 need the discrete levels (:class:`CandidateActionWrapper`). ``info`` gets
    ``help_level`` (``"text"``) and ``step_cost``, and every step's reward is lowered by ``step_cost``.

    Example:
        >>> record = {"idx": 0, "task": "BRI", "query": "Which state?", "answer": "OR",
        ...           "metadata": {"required": "- Today's date: 2021-03-01"}}
        >>> env = TextLevelWrapper(CRMArenaEnv("BRI", org=getfixture("tiny_org"), tasks=[record]), step_cost=0.01)
        >>> _obs, info = env.reset(seed=0)
        >>> info["help_level"], env.step("submit OR")[1]
        ('text', 0.99)
    """

    def __init__(self, env: gym.Env[str, str], *, step_cost: float = 0.0) -> None:
        RecordConstructorArgs.__init__(self, step_cost=step_cost)
        gym.Wrapper.__init__(self, env)
        if not isinstance(env.unwrapped, CRMArenaEnv):
            raise TypeError(f"TextLevelWrapper needs a CRMArenaEnv underneath, got {type(env.unwrapped).__name__}")
        self.level = "text"
        self.step_cost = _check_step_cost(step_cost)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return observation, {**info, "help_level": self.level, "step_cost": self.step_cost}

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        info = {**info, "help_level": self.level, "step_cost": self.step_cost}
        return observation, float(reward) - self.step_cost, terminated, truncated, info


def make_discrete_env(
    task: str | None = None,
    *,
    generator: CandidateGenerator | None = None,
    encoder: Encoder | None = None,
    featurizer: CandidateFeaturizer | None = None,
    max_turns: int | None = None,
    full_info: bool = False,
    text_in_info: bool = True,
    level: str = DEFAULT_HELP_LEVEL,
    step_cost: float = 0.0,
    **env_kwargs: Any,
) -> CandidateActionWrapper:
    """A CRMArena environment wrapped by :class:`CandidateActionWrapper` (toolset ``functions`` unless given).

    Registered as ``CRMArena-Discrete-v0`` (on ``import crmarena_gym.rl``), so that
    ``gym.make_vec("CRMArena-Discrete-v0", num_envs=4, task="TII", org=..., tasks=...)`` works.

    Args:
        task: A task abbreviation or name, or None for every task in the task source.
        generator: The candidate generator (default: the level's, :func:`default_generator`).
        encoder: The observation encoder.
        featurizer: The candidate featurizer.
        max_turns: The turn budget (default 20, the paper's).
        full_info: Pass the text environment's whole ``info`` through.
        text_in_info: Put the candidates' and the sent action's text in ``info``.
        level: The help level (``parsed`` by default; ``tools``, ``oracle-args``; ``text`` has no discrete
            actions: :func:`make_level_env`).
        step_cost: The reward taken off every step that reaches the text environment.
        **env_kwargs: Keyword arguments of :class:`~crmarena_gym.envs.CRMArenaEnv` (``org``, ``tasks`` ...).
    """
    check_help_level(level)
    if level == "text":
        raise ValueError(_TEXT_LEVEL)
    text_env = _text_env(task, max_turns, env_kwargs)
    return CandidateActionWrapper(
        text_env,
        generator,
        encoder,
        featurizer,
        max_turns=max_turns or MAX_TURNS,
        full_info=full_info,
        text_in_info=text_in_info,
        level=level,
        step_cost=step_cost,
    )


def make_level_env(
    task: str | None = None,
    *,
    level: str = DEFAULT_HELP_LEVEL,
    step_cost: float = 0.0,
    max_turns: int | None = None,
    **kwargs: Any,
) -> CandidateActionWrapper | TextLevelWrapper:
    """An environment at any help level: :class:`TextLevelWrapper` for ``text``, :func:`make_discrete_env` otherwise.

    Args:
        task: A task abbreviation or name, or None for every task in the task source.
        level: The help level.
        step_cost: The reward taken off every step that reaches the text environment.
        max_turns: The turn budget (default 20).
        **kwargs: Those of :func:`make_discrete_env` (the discrete levels) or of
            :class:`~crmarena_gym.envs.CRMArenaEnv` (``org``, ``tasks``, ``toolset`` ...).
    """
    check_help_level(level)
    if level != "text":
        return make_discrete_env(task, level=level, step_cost=step_cost, max_turns=max_turns, **kwargs)
    return TextLevelWrapper(_text_env(task, max_turns, kwargs), step_cost=step_cost)


def _text_env(task: str | None, max_turns: int | None, env_kwargs: dict[str, Any]) -> gym.Env[str, str]:
    env_kwargs.setdefault("toolset", "functions")
    env_id = f"CRMArena-{task}-v0" if task is not None else "CRMArena-v0"
    if task is not None and env_id not in gym.registry:
        from crmarena_gym.tasks import get_task_spec

        env_id = f"CRMArena-{get_task_spec(task).abbrev}-v0"  # a task name (handle_time) or any case
    turns = max_turns or MAX_TURNS
    return gym.make(env_id, max_episode_steps=turns, disable_env_checker=True, **env_kwargs)


def _result_value(info: dict[str, Any]) -> Any:
    """The structured result of the text environment's step, or None (a submission, an error)."""
    result = info.get("result")
    return result.value if isinstance(result, StepResult) else None
