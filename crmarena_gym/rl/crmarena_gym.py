"""The public entry point of ``CRMArena-Discrete-v0``, ``crmarena_gym.rl.crmarena_gym:make_discrete_env``.

As for the text environments (:mod:`crmarena_gym.envs.crmarena_gym`), the module path's third part is the
heading ``gym.pprint_registry()`` lists the id under.
"""

from __future__ import annotations

from crmarena_gym.rl._wrapper import make_discrete_env

__all__ = ["make_discrete_env"]
