"""RLlib glue: the environment registered for RLlib, an action-masking RLModule, a PPO configuration.

Everything here imports Ray (and torch) when called, not when :mod:`crmarena_gym.rl` is imported, so
the wrapper works without them. Install them with ``pip install 'crmarena-gym[rl]'`` (torch first; see
the README).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from crmarena_gym.rl._wrapper import CandidateActionWrapper, make_discrete_env

__all__ = [
    "RLLIB_ENV_NAME",
    "action_masking_module_class",
    "greedy_policy",
    "masked_ppo_config",
    "parametric_module_class",
    "register_rllib_env",
    "rllib_env_creator",
]

#: The name :func:`register_rllib_env` registers the wrapped environment under.
RLLIB_ENV_NAME = "CRMArena-Discrete"
_INSTALL_HINT = "Ray RLlib and torch are needed for this: pip install 'crmarena-gym[rl]' (install torch first)"


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"{_INSTALL_HINT} (could not import {module!r}: {err})") from err


def rllib_env_creator(env_config: Mapping[str, Any]) -> CandidateActionWrapper:
    """Build the wrapped environment from an RLlib ``env_config``.

    The keys are those of :func:`~crmarena_gym.rl.make_discrete_env`: ``task`` (None: every task of
    the task source), ``org`` (a path, so that remote env runners open their own connection),
    ``tasks`` (a task file path, a list of instances, or a training-set mapping), ``level`` (the help
    level, ``parsed`` by default; ``text`` is refused: RLlib cannot train on text actions), ``step_cost``,
    ``generator``, ``encoder``, ``max_turns`` and any other :class:`~crmarena_gym.envs.CRMArenaEnv` keyword.
    ``text_in_info`` defaults to False here: RLlib ships every step's ``info`` from the env runners,
    and candidate calls carry earlier results by value. RLlib's ``worker_index`` and ``vector_index``
    (attributes of its ``EnvContext``) are not needed: each environment draws instances from the seed
    RLlib passes to ``reset``.
    """
    config = dict(env_config)
    config.setdefault("text_in_info", False)
    return make_discrete_env(**config)


def register_rllib_env(name: str = RLLIB_ENV_NAME) -> str:
    """Register :func:`rllib_env_creator` with ``ray.tune.register_env`` and return the name.

    Example (needs the ``rl`` extra)::

        name = register_rllib_env()
        config = PPOConfig().environment(name, env_config={"org": "org.sqlite", "tasks": "train.jsonl"})
    """
    tune = _require("ray.tune")
    tune.register_env(name, rllib_env_creator)
    return name


def action_masking_module_class() -> type:
    """RLlib's action-masking PPO RLModule for the new API stack (``ActionMaskingTorchRLModule``).

    It reads ``Dict({"observations": ..., "action_mask": ...})`` observations, runs the default PPO
    networks on ``observations`` and adds ``log(mask)`` (clipped) to the action logits, so that empty
    candidate slots are never sampled. RLlib ships it in ``ray.rllib.examples``.
    """
    module = _require("ray.rllib.examples.rl_modules.classes.action_masking_rlm")
    return module.ActionMaskingTorchRLModule


_PARAMETRIC_MODULE: type | None = None


def parametric_module_class() -> type:
    """The parametric-actions PPO RLModule (torch, new API stack): candidates scored from the state and their features.

    It reads ``Dict({"observations": (D,), "action_mask": (K,), "action_features": (K, F)})``
    observations (:class:`~crmarena_gym.rl.CandidateActionWrapper`'s). A state network maps the
    observation vector to an embedding ``h``; a candidate network maps each candidate's features to an
    embedding ``c_k`` of the same size, the same weights for every slot, so that a candidate is judged by
    what it is rather than by its slot number; the candidate's logit is the dot product ``h . c_k``, and
    ``log(mask)`` (clipped) is added, so that empty slots are never sampled. The value network reads
    the observation vector.

    The dot product (rather than a network over the concatenated pair) lets every state feature weigh
    every candidate feature directly: a slot's one-hot feature gives it a state-dependent preference
    (what a per-slot output layer gives, so fixed pipelines are learnt as fast), and the words of a
    question meet the words of a candidate's context (which issue a case is about). ``model_config``
    keys: ``hidden`` (state and value layers, default ``[256, 256]``; the last is the embedding size)
    and ``candidate_hidden`` (the candidate network's hidden layers, default ``[128]``).
    """
    global _PARAMETRIC_MODULE
    if _PARAMETRIC_MODULE is not None:
        return _PARAMETRIC_MODULE
    torch = _require("torch")
    columns = _require("ray.rllib.core.columns").Columns
    torch_rl_module = _require("ray.rllib.core.rl_module.torch.torch_rl_module")
    value_api = _require("ray.rllib.core.rl_module.apis.value_function_api")
    float_min = _require("ray.rllib.utils.torch_utils").FLOAT_MIN
    nn = torch.nn

    def mlp(sizes: Sequence[int], last_activation: bool) -> Any:
        layers: list[Any] = []
        for i, (a, b) in enumerate(itertools.pairwise(sizes)):
            layers.append(nn.Linear(a, b))
            if last_activation or i < len(sizes) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    class ParametricActionsTorchRLModule(torch_rl_module.TorchRLModule, value_api.ValueFunctionAPI):
        """Scores candidates from the state and their features (see :func:`parametric_module_class`)."""

        def setup(self) -> None:
            space = self.observation_space
            keys = ("observations", "action_mask", "action_features")
            if not hasattr(space, "spaces") or any(key not in space.spaces for key in keys):
                raise ValueError(f"the parametric module needs a Dict observation space with {keys}, got {space!r}")
            size = int(space["observations"].shape[0])
            slots, features = (int(n) for n in space["action_features"].shape)
            if slots != self.action_space.n:
                raise ValueError(f"action_features has {slots} rows but the action space has {self.action_space.n}")
            config = self.model_config or {}
            hidden = [int(n) for n in config.get("hidden", (256, 256))]
            candidate_hidden = [int(n) for n in config.get("candidate_hidden", (128,))]
            self.state_net = mlp([size, *hidden], last_activation=False)
            self.candidate_net = mlp([features, *candidate_hidden, hidden[-1]], last_activation=False)
            self.value_net = mlp([size, *hidden, 1], last_activation=False)
            self.scale = float(hidden[-1]) ** -0.5  # dot products of unit-variance embeddings stay O(1)

        def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            obs = batch[columns.OBS]
            state = self.state_net(obs["observations"])  # (B, E)
            candidates = self.candidate_net(obs["action_features"])  # (B, K, E)
            logits = torch.einsum("be,bke->bk", state, candidates) * self.scale
            logits = logits + torch.clamp(torch.log(obs["action_mask"]), min=float_min)
            return {columns.ACTION_DIST_INPUTS: logits}

        def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
            return self.value_net(batch[columns.OBS]["observations"]).squeeze(-1)

    _PARAMETRIC_MODULE = ParametricActionsTorchRLModule
    return ParametricActionsTorchRLModule


def masked_ppo_config(
    env_config: Mapping[str, Any],
    *,
    num_env_runners: int = 2,
    hidden: Sequence[int] = (256, 256),
    train_batch_size: int = 2000,
    minibatch_size: int = 250,
    num_epochs: int = 6,
    lr: float = 5e-4,
    entropy_coeff: float = 0.03,
    gamma: float = 0.99,
    seed: int | None = 0,
    env_name: str | None = None,
    module: str = "parametric",
    candidate_hidden: Sequence[int] = (128,),
    sample_timeout_s: float = 600.0,
) -> Any:
    """A PPO configuration (new API stack, CPU only) for the wrapped environment with action masking.

    Args:
        env_config: The ``env_config`` of :func:`rllib_env_creator`.
        num_env_runners: Remote env runners (0: sample in the driver).
        hidden: Hidden layer sizes of the policy and value networks.
        train_batch_size: Environment steps per training iteration.
        minibatch_size: SGD minibatch size.
        num_epochs: SGD passes over each batch.
        lr: Learning rate.
        entropy_coeff: Entropy bonus (keeps exploring the candidate pipelines).
        gamma: Discount (below 1: shorter pipelines are preferred).
        seed: Seed of the environments and the networks (``debugging(seed=...)``).
        env_name: A name registered with :func:`register_rllib_env` (default: registers the default name).
        module: ``parametric`` (default, :func:`parametric_module_class`: candidates scored from the
            state and their features) or ``masking`` (:func:`action_masking_module_class`: one logit
            per slot number from the state alone).
        candidate_hidden: Hidden layer sizes of the parametric module's candidate network.
        sample_timeout_s: How long an iteration waits for the env runners' samples (RLlib's default, 60 s,
            drops a batch that a busy machine samples more slowly).

    Returns:
        A ``PPOConfig``; ``config.build_algo()`` builds the algorithm.
    """
    ppo = _require("ray.rllib.algorithms.ppo")
    rl_module = _require("ray.rllib.core.rl_module.rl_module")
    if module == "parametric":
        spec = rl_module.RLModuleSpec(
            module_class=parametric_module_class(),
            model_config={"hidden": list(hidden), "candidate_hidden": list(candidate_hidden)},
        )
    elif module == "masking":
        spec = rl_module.RLModuleSpec(
            module_class=action_masking_module_class(),
            model_config={
                "fcnet_hiddens": list(hidden),
                "fcnet_activation": "relu",
                "head_fcnet_hiddens": [],
                "vf_share_layers": False,
            },
        )
    else:
        raise ValueError(f"module must be 'parametric' or 'masking', got {module!r}")
    name = env_name or register_rllib_env()
    config = (
        ppo.PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .framework("torch")
        .environment(name, env_config=dict(env_config), disable_env_checking=True)
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=1,
            num_cpus_per_env_runner=1,
            sample_timeout_s=sample_timeout_s,
        )
        .learners(num_learners=0, num_gpus_per_learner=0)
        .rl_module(rl_module_spec=spec)
        .training(
            gamma=gamma,
            lr=lr,
            entropy_coeff=entropy_coeff,
            train_batch_size_per_learner=train_batch_size,
            minibatch_size=minibatch_size,
            num_epochs=num_epochs,
        )
    )
    if seed is not None:
        config = config.debugging(seed=seed)
    return config


def greedy_policy(module: Any) -> Any:
    """A policy (observation dict to slot number) taking the masked argmax of an RLModule's logits.

    Args:
        module: The trained RLModule (``algo.get_module()``): the parametric or the action-masking module.
    """
    torch = _require("torch")
    columns = _require("ray.rllib.core.columns").Columns

    def act(obs: Mapping[str, np.ndarray]) -> int:
        batch = {
            columns.OBS: {
                key: torch.as_tensor(np.asarray(value)[None], dtype=torch.float32) for key, value in obs.items()
            }
        }
        with torch.no_grad():
            out = module.forward_inference(batch)
        logits = out[columns.ACTION_DIST_INPUTS][0].numpy().copy()
        logits[np.asarray(obs["action_mask"]) <= 0] = -np.inf
        return int(np.argmax(logits))

    return act
