"""sb3-contrib's MaskablePPO trains on the discrete env as it is: no ActionMasker glue."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from crmarena_gym.rl import DISCRETE_ENV_ID
from crmarena_gym.tasks import TaskInstance

sb3_contrib = pytest.importorskip("sb3_contrib")


def test_maskable_ppo_reads_the_masks_and_trains(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    from sb3_contrib.common.maskable.utils import get_action_masks

    env = gym.make(DISCRETE_ENV_ID, task="TII", org=env_org, tasks=env_tasks)
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=16, n_epochs=1, seed=0)
    # What MaskablePPO asks the (vectorised) env for is the wrapper's own mask of the candidates.
    obs = model.env.reset()
    masks = get_action_masks(model.env)
    assert masks.dtype == bool and masks.shape == (1, env.action_space.n)
    assert np.array_equal(masks[0], obs["action_mask"][0] == 1.0)
    model.learn(total_timesteps=64)
    assert model.num_timesteps >= 64
    # Masked slots are never chosen: every action the trained policy takes is a real candidate.
    obs, _ = env.reset(seed=1)
    for _ in range(5):
        action, _ = model.predict(obs, action_masks=env.get_wrapper_attr("action_masks")(), deterministic=False)
        assert obs["action_mask"][int(action)] == 1.0
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
