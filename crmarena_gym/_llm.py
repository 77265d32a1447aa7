"""What every litellm caller shares (the agent's policy and the simulated user): the lazy import, which
failures are worth a retry, and the backoff between retries.

Kept below every layer: ``users`` sits below ``policies`` and both call models the same way.
"""

from __future__ import annotations

import logging
import os
import random
import re
from typing import Any

__all__ = [
    "RETRY_LOG",
    "announce_retry",
    "backoff_delay",
    "configuration_error",
    "import_litellm",
    "missing_keys",
    "transient_error",
]

# Words of a provider's answer that mean the credentials are missing or wrong, whatever the status
# (litellm reports OpenAI's missing key as an InternalServerError).
_CREDENTIAL_WORDS = re.compile(r"credential|api[ _]key|unauthori[sz]ed|llm provider not provided", re.IGNORECASE)

#: The logger that says when a model call failed and is retried (a warning each), so that a run waiting out a
#: provider's backoff says so instead of looking stuck; with logging unconfigured, Python prints it on stderr.
RETRY_LOG = logging.getLogger("crmarena_gym.llm")


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


def missing_keys(litellm: Any, model: str) -> list[str]:
    """The key variables ``model``'s provider needs and the environment lacks, as litellm knows them; none for a
    provider litellm cannot tell (its first request will)."""
    try:
        return list(litellm.validate_environment(model).get("missing_keys") or [])
    except Exception:  # an unknown provider
        return []


def configuration_error(litellm: Any, err: Exception) -> bool:
    """Whether ``err`` will recur on every request, so that retrying it only delays the message: missing or
    rejected credentials, no permission, no such model."""
    kinds = tuple(
        getattr(litellm, name)
        for name in ("AuthenticationError", "PermissionDeniedError", "NotFoundError")
        if hasattr(litellm, name)
    )
    if isinstance(err, kinds) or getattr(err, "status_code", None) in (401, 403):
        return True
    return bool(_CREDENTIAL_WORDS.search(str(err)))


def backoff_delay(rng: random.Random, retry: int, backoff: float, max_backoff: float) -> float:
    """Seconds to wait before retry number ``retry`` (1-based): exponential from ``backoff``, capped at
    ``max_backoff``, with jitter from ``rng`` (half to the whole of it).

    Example:
        >>> backoff_delay(random.Random(0), 3, 1.0, 30.0) <= 4.0
        True
    """
    return min(max_backoff, backoff * 2 ** (retry - 1)) * (0.5 + 0.5 * rng.random())


def announce_retry(who: str, what: str, retry: int, max_retries: int, delay: float) -> None:
    """Say, as a warning of :data:`RETRY_LOG`, that ``who``'s call failed with ``what`` and is retried.

    Args:
        who: The model, as the caller names it (``"gpt-4o"``, ``"the user's model gpt-4o"``).
        what: The failure, already redacted and cut to one line's length.
        retry: The retry about to be made (1-based).
        max_retries: The retries allowed.
        delay: The seconds waited first.

    Example:
        >>> import io
        >>> stream = io.StringIO()
        >>> handler = logging.StreamHandler(stream)
        >>> RETRY_LOG.addHandler(handler)
        >>> announce_retry("gpt-4o", "RateLimitError: slow down", 1, 6, 2.25)
        >>> RETRY_LOG.removeHandler(handler)
        >>> stream.getvalue().strip()
        'gpt-4o: RateLimitError: slow down; retry 1 of 6 in 2.2 s'
    """
    RETRY_LOG.warning("%s: %s; retry %d of %d in %.1f s", who, " ".join(what.split()), retry, max_retries, delay)
