"""Evaluation: metrics over episodes (and, next, the runner and reports)."""

from __future__ import annotations

from crmarena_gym.eval._metrics import bootstrap_ci, pass_hat_k, pass_k_curve

__all__ = ["bootstrap_ci", "pass_hat_k", "pass_k_curve"]
