"""crmarena-gym: the CRMArena benchmark as Gymnasium environments over an embedded Salesforce-like org.

Importing the package registers ``CRMArena-{KQA,MTA,TII,NCR,NED,HTU,TCU,PVI,BRI}-v0`` and ``CRMArena-v0``.
"""

from __future__ import annotations

__version__ = "0.1.0"

from crmarena_gym.envs import register_envs as _register_envs

_register_envs()

__all__ = ["__version__"]
