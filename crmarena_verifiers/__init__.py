"""The verifiers taskset id ``crmarena_verifiers``: CRMArena's verifiers adapter under a top-level name.

verifiers (0.3.1, 0.4) imports a taskset by a top-level module name (``--env.taskset.id crmarena_verifiers``); the
adapter itself is :mod:`crmarena_gym.integrations.verifiers` (needs ``pip install 'crmarena-gym[verifiers]'``).
"""

from __future__ import annotations

from crmarena_gym.integrations.verifiers import (
    TASKSET_ID,
    CRMArenaConfig,
    CRMArenaData,
    CRMArenaEnv,
    CRMArenaEnvConfig,
    CRMArenaTask,
    CRMArenaTaskset,
    load_environment,
)

__all__ = [
    "TASKSET_ID",
    "CRMArenaConfig",
    "CRMArenaData",
    "CRMArenaEnv",
    "CRMArenaEnvConfig",
    "CRMArenaTask",
    "CRMArenaTaskset",
    "load_environment",
]
