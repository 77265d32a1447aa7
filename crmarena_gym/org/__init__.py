"""Org backends: the ``Org`` interface, the embedded ``LocalOrg`` and the live ``SalesforceOrg``."""

from __future__ import annotations

from crmarena_gym.org._base import ERROR_CODES, Org, OrgError

__all__ = ["ERROR_CODES", "Org", "OrgError"]
