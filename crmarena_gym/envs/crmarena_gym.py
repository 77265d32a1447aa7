"""The environments' public entry point, ``crmarena_gym.envs.crmarena_gym:CRMArenaEnv``.

Gymnasium's ``pprint_registry()`` heads each group of ids with the third part of their entry point's
module path; entering through this module puts the CRMArena ids under a ``crmarena_gym`` heading
rather than a private module's name.

Example:
    >>> import gymnasium as gym
    >>> "===== crmarena_gym =====" in gym.pprint_registry(disable_print=True)
    True
"""

from __future__ import annotations

from crmarena_gym.envs._act import CRMArenaActEnv
from crmarena_gym.envs._env import CRMArenaEnv
from crmarena_gym.envs._interactive import CRMArenaInteractiveEnv

__all__ = ["CRMArenaActEnv", "CRMArenaEnv", "CRMArenaInteractiveEnv"]
