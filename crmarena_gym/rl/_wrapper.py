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
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import RecordConstructorArgs

from crmarena_gym.envs import MAX_TURNS, CRMArenaEnv, StepResult
from crmarena_gym.rl._candidates import CandidateGenerator, CandidateState, StepRecord, ToolPipelineCandidates
from crmarena_gym.rl._encoding import Encoder, HashingEncoder
from crmarena_gym.rl._facts import question_facts
from crmarena_gym.rl._features import CandidateFeaturizer, SlotFeatures

__all__ = ["EMPTY_SLOT_ACTION", "INFO_KEYS", "CandidateActionWrapper", "make_discrete_env"]

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

    The generator reads only what the question states (see :func:`~crmarena_gym.rl.question_facts`),
    never the gold answer.

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
    ) -> None:
        RecordConstructorArgs.__init__(
            self,
            generator=generator,
            encoder=encoder,
            featurizer=featurizer,
            max_turns=max_turns,
            full_info=full_info,
            text_in_info=text_in_info,
        )
        gym.Wrapper.__init__(self, env)
        base = env.unwrapped
        if not isinstance(base, CRMArenaEnv):
            raise TypeError(f"CandidateActionWrapper needs a CRMArenaEnv underneath, got {type(base).__name__}")
        if base.toolset_name not in ("functions", "flex"):
            raise ValueError(
                f"CandidateActionWrapper offers function calls: make the environment with toolset='functions' "
                f"or 'flex', not {base.toolset_name!r}"
            )
        self.generator: CandidateGenerator = generator if generator is not None else ToolPipelineCandidates()
        if not isinstance(self.generator, CandidateGenerator):
            raise TypeError(
                f"generator must have num_slots, slot_names, slots(state) and candidates(state), got {self.generator!r}"
            )
        self.encoder: Encoder = encoder if encoder is not None else HashingEncoder(self.generator.num_slots)
        if not isinstance(self.encoder, Encoder):
            raise TypeError(f"encoder must have size and encode(state, slots, sources), got {self.encoder!r}")
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

    # -- the episode ---------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        text, info = self.env.reset(seed=seed, options=options)
        base = self.env.unwrapped
        assert isinstance(base, CRMArenaEnv) and base.instance is not None
        self.state = CandidateState(question_facts(base.instance, text), max_turns=self.max_turns, observation=text)
        return self._observe(info)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], SupportsFloat, bool, bool, dict[str, Any]]:
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        slot = _slot_number(action, self.action_space.n)
        text = self.slots[slot]
        sent = text if text is not None else EMPTY_SLOT_ACTION
        observation, reward, terminated, truncated, info = self.env.step(sent)
        ok = "error" not in info and info.get("action_kind") == "call"
        self.state.history.append(StepRecord(sent, info.get("function"), _result_value(info), ok, observation))
        self.state.turn += 1
        self.state.observation = observation
        obs, out_info = self._observe(info)
        if self.text_in_info:
            out_info["action_text"] = sent
        return obs, reward, terminated, truncated, out_info

    # -- helpers -------------------------------------------------------------------------------

    def _observe(self, info: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        assert self.state is not None
        self.slots = list(self.generator.slots(self.state))
        if len(self.slots) != self.generator.num_slots:
            raise ValueError(
                f"the generator gave {len(self.slots)} slots, but declares num_slots={self.generator.num_slots}"
            )
        sources_of = getattr(self.generator, "slot_sources", None)
        sources = list(sources_of(self.state)) if callable(sources_of) else [_function_of(s) for s in self.slots]
        vector = np.asarray(self.encoder.encode(self.state, self.slots, sources), dtype=np.float32)
        mask = np.array([s is not None for s in self.slots], dtype=np.float32)
        features = np.asarray(self.featurizer.features(self.state, self.slots, sources), dtype=np.float32)
        out = dict(info) if self.full_info else {k: info[k] for k in INFO_KEYS if k in info}
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


def make_discrete_env(
    task: str | None = None,
    *,
    generator: CandidateGenerator | None = None,
    encoder: Encoder | None = None,
    featurizer: CandidateFeaturizer | None = None,
    max_turns: int | None = None,
    full_info: bool = False,
    text_in_info: bool = True,
    **env_kwargs: Any,
) -> CandidateActionWrapper:
    """A CRMArena environment wrapped by :class:`CandidateActionWrapper` (toolset ``functions`` unless given).

    Registered as ``CRMArena-Discrete-v0`` (on ``import crmarena_gym.rl``), so that
    ``gym.make_vec("CRMArena-Discrete-v0", num_envs=4, task="TII", org=..., tasks=...)`` works.

    Args:
        task: A task abbreviation or name, or None for every task in the task source.
        generator: The candidate generator.
        encoder: The observation encoder.
        featurizer: The candidate featurizer.
        max_turns: The turn budget (default 20, the paper's).
        full_info: Pass the text environment's whole ``info`` through.
        text_in_info: Put the candidates' and the sent action's text in ``info``.
        **env_kwargs: Keyword arguments of :class:`~crmarena_gym.envs.CRMArenaEnv` (``org``, ``tasks`` ...).
    """
    env_kwargs.setdefault("toolset", "functions")
    env_id = f"CRMArena-{task}-v0" if task is not None else "CRMArena-v0"
    if task is not None and env_id not in gym.registry:
        from crmarena_gym.tasks import get_task_spec

        env_id = f"CRMArena-{get_task_spec(task).abbrev}-v0"  # a task name (handle_time) or any case
    turns = max_turns or MAX_TURNS
    text_env = gym.make(env_id, max_episode_steps=turns, disable_env_checker=True, **env_kwargs)
    return CandidateActionWrapper(
        text_env, generator, encoder, featurizer, max_turns=turns, full_info=full_info, text_in_info=text_in_info
    )


def _result_value(info: dict[str, Any]) -> Any:
    """The structured result of the text environment's step, or None (a submission, an error)."""
    result = info.get("result")
    return result.value if isinstance(result, StepResult) else None
