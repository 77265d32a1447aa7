"""RLlib glue: the environment registered for RLlib, an action-masking RLModule, a PPO configuration.

Everything here imports Ray (and torch) when called, not when :mod:`crmarena_gym.rl` is imported, so
the wrapper works without them. Install them with ``pip install 'crmarena-gym[rl]'`` (torch first; see
the README).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from crmarena_gym.rl._wrapper import CandidateActionWrapper, make_discrete_env

__all__ = [
    "RLLIB_ENV_NAME",
    "action_masking_module_class",
    "greedy_policy",
    "masked_ppo_config",
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
    ``tasks`` (a task file path, a list of instances, or a training-set mapping), ``generator``,
    ``encoder``, ``max_turns`` and any other :class:`~crmarena_gym.envs.CRMArenaEnv` keyword.
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

    Returns:
        A ``PPOConfig``; ``config.build_algo()`` builds the algorithm.
    """
    ppo = _require("ray.rllib.algorithms.ppo")
    rl_module = _require("ray.rllib.core.rl_module.rl_module")
    name = env_name or register_rllib_env()
    spec = rl_module.RLModuleSpec(
        module_class=action_masking_module_class(),
        model_config={
            "fcnet_hiddens": list(hidden),
            "fcnet_activation": "relu",
            "head_fcnet_hiddens": [],
            "vf_share_layers": False,
        },
    )
    config = (
        ppo.PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .framework("torch")
        .environment(name, env_config=dict(env_config), disable_env_checking=True)
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=1, num_cpus_per_env_runner=1)
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
        module: The trained RLModule (``algo.get_module()``), an action-masking module.
    """
    torch = _require("torch")
    columns = _require("ray.rllib.core.columns").Columns

    def act(obs: Mapping[str, np.ndarray]) -> int:
        batch = {
            columns.OBS: {
                "observations": torch.as_tensor(np.asarray(obs["observations"])[None], dtype=torch.float32),
                "action_mask": torch.as_tensor(np.asarray(obs["action_mask"])[None], dtype=torch.float32),
            }
        }
        with torch.no_grad():
            out = module.forward_inference(batch)
        logits = out[columns.ACTION_DIST_INPUTS][0].numpy().copy()
        logits[np.asarray(obs["action_mask"]) <= 0] = -np.inf
        return int(np.argmax(logits))

    return act
