"""crmarena-gym: the CRMArena benchmark as Gymnasium environments over an embedded Salesforce-like org."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
