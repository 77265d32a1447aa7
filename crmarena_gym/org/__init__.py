"""Org backends: the ``Org`` interface, the embedded ``LocalOrg`` and the live ``SalesforceOrg``."""

from __future__ import annotations

from crmarena_gym.org._base import ERROR_CODES, Org, OrgError, check_max_records
from crmarena_gym.org._cache import CacheError, default_org_path, perturbed_org_path
from crmarena_gym.org._diff import DiffCheck, ExpectedChange, RecordChange, StateDiff
from crmarena_gym.org._local import LocalOrg
from crmarena_gym.org._salesforce import SalesforceOrg
from crmarena_gym.org._session import OrgSession
from crmarena_gym.org._sosl import RESERVED_CHARACTERS as SOSL_RESERVED_CHARACTERS
from crmarena_gym.org._sosl import escape_refused as sosl_escape_refused

__all__ = [
    "ERROR_CODES",
    "SOSL_RESERVED_CHARACTERS",
    "CacheError",
    "DiffCheck",
    "ExpectedChange",
    "LocalOrg",
    "Org",
    "OrgError",
    "OrgSession",
    "RecordChange",
    "SalesforceOrg",
    "StateDiff",
    "check_max_records",
    "default_org_path",
    "perturbed_org_path",
    "sosl_escape_refused",
]
