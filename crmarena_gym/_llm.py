"""What every litellm caller shares (the agent's policy and the simulated user): the lazy import, which
failures are worth a retry, and the backoff between retries.

Kept below every layer: ``users`` sits below ``policies`` and both call models the same way.
"""

from __future__ import annotations

import os
import random
from typing import Any

__all__ = ["backoff_delay", "import_litellm", "transient_error"]


def import_litellm(needs: str) -> Any:
    """Import litellm with its price table read from the package (no network at import).

    Args:
        needs: Who needs it, for the message when litellm is missing (``"LiteLLMPolicy"``).

    Raises:
        ImportError: litellm is not installed; the message says how to install it.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as err:
        raise ImportError(
            f"{needs} needs litellm: pip install 'crmarena-gym[llm]' (or pip install 'litellm==1.100.5')"
        ) from err
    litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout for every failed request
    return litellm


def transient_error(litellm: Any, err: Exception) -> bool:
    """Whether a failed call may succeed if repeated: rate limits, timeouts, lost connections and server errors
    (HTTP 429 and 5xx); never a refused request, key, permission or model."""
    lm = litellm
    if isinstance(err, lm.BadRequestError | lm.AuthenticationError | lm.PermissionDeniedError | lm.NotFoundError):
        return False
    if isinstance(err, lm.RateLimitError | lm.Timeout | lm.APIConnectionError):
        return True
    if isinstance(err, lm.InternalServerError | lm.ServiceUnavailableError):
        return True
    status = getattr(err, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def backoff_delay(rng: random.Random, retry: int, backoff: float, max_backoff: float) -> float:
    """Seconds to wait before retry number ``retry`` (1-based): exponential from ``backoff``, capped at
    ``max_backoff``, with jitter from ``rng`` (half to the whole of it).

    Example:
        >>> backoff_delay(random.Random(0), 3, 1.0, 30.0) <= 4.0
        True
    """
    return min(max_backoff, backoff * 2 ** (retry - 1)) * (0.5 + 0.5 * rng.random())
