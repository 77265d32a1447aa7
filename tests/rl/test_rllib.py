"""PPO on the adapter: RLlib's new API stack builds on it, trains one iteration, checkpoints and restores.

Ray is started once per session (:func:`ray_session`), without dashboard or auth, with 2 CPUs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crmarena_gym.rl import (
    RandomCandidatePolicy,
    greedy_policy,
    make_discrete_env,
    masked_ppo_config,
    parametric_module_class,
)


@pytest.fixture(scope="module")
def algo(ray_session: Any, env_org: Path, env_tasks_file: Path) -> Any:
    config = masked_ppo_config(
        {"org": str(env_org), "tasks": str(env_tasks_file)},
        num_env_runners=1,
        hidden=(32, 32),
        train_batch_size=200,
        minibatch_size=50,
        num_epochs=2,
        seed=0,
    )
    algorithm = config.build_algo()
    yield algorithm
    algorithm.stop()


def _observations(env_org: Path, env_tasks_file: Path, n: int) -> list[dict[str, np.ndarray]]:
    env = make_discrete_env(org=str(env_org), tasks=str(env_tasks_file))
    obs, _ = env.reset(seed=0)
    policy = RandomCandidatePolicy(0)
    seen = []
    for _ in range(n):
        seen.append(obs)
        obs, _r, terminated, truncated, _ = env.step(policy(obs))
        if terminated or truncated:
            obs, _ = env.reset()
    return seen


def _weights(algo: Any) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in algo.get_module().parameters()]


def test_ppo_trains_one_iteration_with_one_env_runner(algo: Any, env_org: Path, env_tasks_file: Path) -> None:
    assert isinstance(algo.get_module(), parametric_module_class())  # candidates scored from their features
    before = _weights(algo)
    result = algo.train()
    runners = result["env_runners"]
    assert runners["num_env_steps_sampled"] >= 200
    assert runners["num_episodes"] > 0
    assert 0.0 <= runners["episode_return_mean"] <= 1.0
    after = _weights(algo)
    assert any(not np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    # The masked module never picks an empty slot.
    act = greedy_policy(algo.get_module())
    for obs in _observations(env_org, env_tasks_file, 30):
        assert obs["action_mask"][act(obs)] == 1.0


def test_checkpoint_restores_the_same_policy(algo: Any, env_org: Path, env_tasks_file: Path, tmp_path: Path) -> None:
    from ray.rllib.algorithms.algorithm import Algorithm

    algo.save_to_path(str(tmp_path / "checkpoint"))
    restored = Algorithm.from_checkpoint(str(tmp_path / "checkpoint"))
    try:
        original, copy = greedy_policy(algo.get_module()), greedy_policy(restored.get_module())
        observations = _observations(env_org, env_tasks_file, 30)
        assert [original(o) for o in observations] == [copy(o) for o in observations]
        for a, b in zip(_weights(algo), _weights(restored), strict=True):
            np.testing.assert_array_equal(a, b)
    finally:
        restored.stop()


def test_parametric_module_scores_a_candidate_by_its_features_not_its_slot(algo: Any) -> None:
    """The same features in another slot get the same logit: one candidate network serves every slot."""
    import torch
    from ray.rllib.core.columns import Columns

    module = algo.get_module()
    space = module.observation_space
    rng = np.random.default_rng(0)
    features = rng.random(space["action_features"].shape).astype(np.float32)
    mask = np.ones(space["action_mask"].shape, dtype=np.float32)
    mask[-1] = 0.0
    swapped = features.copy()
    swapped[[0, 1]] = features[[1, 0]]
    obs = rng.random(space["observations"].shape).astype(np.float32)

    def logits(f: np.ndarray) -> np.ndarray:
        batch = {
            Columns.OBS: {
                "observations": torch.as_tensor(obs[None]),
                "action_mask": torch.as_tensor(mask[None]),
                "action_features": torch.as_tensor(f[None]),
            }
        }
        with torch.no_grad():
            return module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0].numpy()

    a, b = logits(features), logits(swapped)
    assert a[0] == pytest.approx(b[1]) and a[1] == pytest.approx(b[0])
    assert a[-1] < -1e30  # the empty slot is never chosen
    with pytest.raises(ValueError, match="module must be 'parametric' or 'masking', got 'lstm'"):
        masked_ppo_config({}, module="lstm")


@pytest.mark.slow
@pytest.mark.parametrize("level", ["tools", "oracle-args"])
def test_ppo_trains_at_every_discrete_help_level(
    level: str, ray_session: Any, env_org: Path, env_tasks_file: Path
) -> None:
    """The level and the step cost go through RLlib's env_config: the runners' spaces are the level's, and
    the sampled returns carry the step cost."""
    env = make_discrete_env(org=str(env_org), tasks=str(env_tasks_file), level=level)
    config = masked_ppo_config(
        {"org": str(env_org), "tasks": str(env_tasks_file), "level": level, "step_cost": 0.02},
        num_env_runners=1,
        hidden=(16, 16),
        candidate_hidden=(16,),
        train_batch_size=100,
        minibatch_size=50,
        num_epochs=1,
        seed=0,
    )
    algorithm = config.build_algo()
    try:
        module = algorithm.get_module()
        assert module.action_space.n == env.action_space.n
        assert module.observation_space["action_features"].shape == env.observation_space["action_features"].shape
        runners = algorithm.train()["env_runners"]
        assert runners["num_env_steps_sampled"] >= 100
        if level == "oracle-args":  # short episodes: some end in 100 steps (a typed call takes several)
            assert runners["num_episodes"] > 0
            assert runners["episode_return_mean"] <= 1.0 - 0.02  # every episode pays at least one step
    finally:
        algorithm.stop()
