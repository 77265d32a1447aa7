"""CRMArena for TRL: an ``environment_factory`` class, the dataset rows of a split, and a ``rollout_func`` for
the text frameworks (Act, ReAct: :class:`TRLTextRollout`).

Needs ``pip install 'crmarena-gym[trl]'`` for training (the class itself needs only the core).

Example:
    >>> from crmarena_gym.integrations.trl import trl_environment
    >>> env_cls = trl_environment(getfixture("tiny_org"))
    >>> "get_cases" in vars(env_cls) and "submit" in vars(env_cls)
    True
"""

from __future__ import annotations

from crmarena_gym.integrations.trl._env import TRLEnvironment, trl_dataset, trl_dataset_rows, trl_environment
from crmarena_gym.integrations.trl._text import TRLTextRollout
from crmarena_gym.integrations.trl._tiny import SPECIAL_TOKENS, tiny_model, tiny_tokenizer

__all__ = [
    "SPECIAL_TOKENS",
    "TRLEnvironment",
    "TRLTextRollout",
    "tiny_model",
    "tiny_tokenizer",
    "trl_dataset",
    "trl_dataset_rows",
    "trl_environment",
]
