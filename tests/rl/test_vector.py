"""The adapter under ``gym.make_vec`` (sync), for RL libraries that step vectors of environments."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np

from crmarena_gym.rl import DISCRETE_ENV_ID, CandidateActionWrapper, RandomCandidatePolicy
from crmarena_gym.tasks import TaskInstance


def _masked_actions(obs: dict[str, np.ndarray], policies: list[RandomCandidatePolicy]) -> np.ndarray:
    return np.array([p({"action_mask": obs["action_mask"][i]}) for i, p in enumerate(policies)])


def test_make_vec_of_the_registered_discrete_env(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    envs = gym.make_vec(DISCRETE_ENV_ID, num_envs=3, vectorization_mode="sync", org=env_org, tasks=env_tasks)
    single = envs.single_observation_space
    k = envs.single_action_space.n
    obs, info = envs.reset(seed=0)
    assert obs["observations"].shape == (3, single["observations"].shape[0])
    assert obs["action_mask"].shape == (3, k)
    policies = [RandomCandidatePolicy(i) for i in range(3)]
    episodes = 0
    for _ in range(40):
        obs, reward, terminated, truncated, info = envs.step(_masked_actions(obs, policies))
        assert reward.shape == (3,) and obs["observations"].dtype == np.float32
        for i in range(3):
            assert single.contains({key: obs[key][i] for key in obs})
            # the mask of each sub-environment matches its candidates
            assert [c != "" for c in info["candidates"][i]] == [bool(m) for m in obs["action_mask"][i]]
        episodes += int(np.sum(terminated | truncated))
    assert episodes >= 5  # sub-environments finish episodes and are reset automatically
    envs.close()


def test_make_vec_with_the_wrapper_on_a_task_id(env_org: Path, env_tasks: list[TaskInstance]) -> None:
    envs = gym.make_vec(
        "CRMArena-TII-v0",
        num_envs=2,
        vectorization_mode="sync",
        wrappers=[CandidateActionWrapper],
        org=env_org,
        tasks=env_tasks,
        toolset="functions",
    )
    one, _ = envs.reset(seed=5)
    assert one["action_mask"].shape == (2, envs.single_action_space.n)
    two, _ = envs.reset(seed=5)
    np.testing.assert_array_equal(one["observations"], two["observations"])
    obs, _reward, _terminated, truncated, _ = envs.step(np.array([0, 0]))
    assert obs["observations"].shape[0] == 2 and not truncated.any()
    envs.close()
