"""Wrappers for turn limits, tool-result dropout, function removal, truncation and recording."""

from __future__ import annotations

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
    "LAST_TURN_WARNING",
    "TRANSIENT_ERROR",
    "FunctionRemoval",
    "ObservationTruncation",
    "RecordTrajectory",
    "ToolResultDropout",
    "TurnLimit",
    "env_stack",
]
