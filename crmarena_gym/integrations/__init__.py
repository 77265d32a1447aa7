"""Adapters for LLM RL trainers, thin layers over the chat core (:mod:`crmarena_gym.chat`).

One subpackage per trainer, each needing its optional extra:

- :mod:`crmarena_gym.integrations.openenv`: an OpenEnv environment, server and clients
  (``pip install 'crmarena-gym[openenv]'``);
- :mod:`crmarena_gym.integrations.trl`: a TRL ``environment_factory`` class and dataset rows
  (``pip install 'crmarena-gym[trl]'``);
- :mod:`crmarena_gym.integrations.skyrl`: a SkyRL ``BaseTextEnv`` (``pip install 'crmarena-gym[skyrl]'``).
"""

from __future__ import annotations

__all__: list[str] = []
