"""Wrappers for turn limits, tool-result dropout, API faults, function removal, truncation and recording."""

from __future__ import annotations

from crmarena_gym.wrappers._api import INVALID_SESSION_ID, REQUEST_LIMIT_EXCEEDED, SERVER_UNAVAILABLE, ApiFaults
from crmarena_gym.wrappers._common import (
    LAST_TURN_WARNING,
    TRANSIENT_ERROR,
    FunctionRemoval,
    ObservationTruncation,
    RecordTrajectory,
    ToolResultDropout,
    TurnLimit,
    env_stack,
)

__all__ = [
    "INVALID_SESSION_ID",
    "LAST_TURN_WARNING",
    "REQUEST_LIMIT_EXCEEDED",
    "SERVER_UNAVAILABLE",
    "TRANSIENT_ERROR",
    "ApiFaults",
    "FunctionRemoval",
    "ObservationTruncation",
    "RecordTrajectory",
    "ToolResultDropout",
    "TurnLimit",
    "env_stack",
]
