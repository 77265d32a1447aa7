"""CRMArena for SkyRL: a ``BaseTextEnv`` registered with skyrl_gym as ``"crmarena"`` on import.

Needs ``pip install 'crmarena-gym[skyrl]'``.
"""

from __future__ import annotations

try:
    import skyrl_gym  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ImportError("the SkyRL adapter needs skyrl-gym: pip install 'crmarena-gym[skyrl]'") from err

from crmarena_gym.integrations.skyrl._env import ENV_ID, CRMArenaTextEnv, register_skyrl, skyrl_dataset_rows

register_skyrl()

__all__ = ["ENV_ID", "CRMArenaTextEnv", "register_skyrl", "skyrl_dataset_rows"]
