"""API perturbations: the org's API refusing requests as a real org's does, and its latency, simulated.

:class:`ApiFaults` counts the episode's API requests (queries and function calls; a submission or an
unreadable action is none) and refuses some of them through the env (``CRMArenaEnv.inject_fault``: the
request is not carried out and uses its turn):

- ``request_limit``: every request after the first ``request_limit`` is refused with
  ``REQUEST_LIMIT_EXCEEDED`` (the org's API request limit; it lasts the rest of the episode, so the agent
  must answer with what it has);
- ``unavailable_p``: each request is refused with ``SERVER_UNAVAILABLE`` (an HTTP 503) with this
  probability, from the env's seeded generator; the same request re-issued may pass;
- ``session_expires_after``: the session expires after that many requests: the next one is refused with
  ``INVALID_SESSION_ID``, and re-issuing it (the client signing in again) passes;
- ``latency_ms``: each request that reaches the org adds this much simulated latency (never slept), summed
  in ``info["api"]["latency_ms"]``.

``info["api"]`` reports, at every step, the requests so far, the refusals by code, the simulated latency,
and this step's fault (or None). The wrapper's arguments are recorded in ``env_stack`` like every wrapper's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium.utils import RecordConstructorArgs

from crmarena_gym.envs import parse_action
from crmarena_gym.wrappers._common import _crm_env

REQUEST_LIMIT_EXCEEDED = ("REQUEST_LIMIT_EXCEEDED", "TotalRequests Limit exceeded.")
SERVER_UNAVAILABLE = ("SERVER_UNAVAILABLE", "The server is temporarily unable to answer (HTTP 503). Try again.")
INVALID_SESSION_ID = ("INVALID_SESSION_ID", "Session expired or invalid. Sign in again and re-issue the request.")


def _is_request(action: Any) -> bool:
    if not isinstance(action, str):
        return False
    try:
        parsed = parse_action(action, functions=True)
    except RecursionError:
        return False
    return parsed.kind == "query" or (parsed.kind == "call" and parsed.name != "submit")


class ApiFaults(gym.Wrapper[str, str, str, str], RecordConstructorArgs):
    """Refuse API requests by a request limit, transient 503s and session expiry; count simulated latency.

    Args:
        env: A CRMArena environment (possibly wrapped).
        request_limit: Requests allowed per episode (None: no limit).
        unavailable_p: The probability that a request is refused as unavailable.
        session_expires_after: Requests after which the session expires once (None: never).
        latency_ms: Simulated latency per request that reaches the org, in milliseconds.

    Example:
        >>> env = ApiFaults(getfixture("bri_env"), request_limit=1)
        >>> _ = env.reset(seed=0)
        >>> [env.step("execute SELECT Id FROM Issue__c")[4].get("api_fault") for _ in range(2)]
        [None, 'REQUEST_LIMIT_EXCEEDED']
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        *,
        request_limit: int | None = None,
        unavailable_p: float = 0.0,
        session_expires_after: int | None = None,
        latency_ms: float = 0.0,
    ) -> None:
        for name, value in (("request_limit", request_limit), ("session_expires_after", session_expires_after)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"{name} must be a whole number of requests (0 or more) or None, got {value!r}")
        if not 0.0 <= float(unavailable_p) <= 1.0:
            raise ValueError(f"unavailable_p must be a probability in [0, 1], got {unavailable_p!r}")
        if not float(latency_ms) >= 0.0:
            raise ValueError(f"latency_ms must be 0 or more, got {latency_ms!r}")
        RecordConstructorArgs.__init__(
            self,
            request_limit=request_limit,
            unavailable_p=unavailable_p,
            session_expires_after=session_expires_after,
            latency_ms=latency_ms,
        )
        gym.Wrapper.__init__(self, env)
        self._base = _crm_env(env)
        self.request_limit = request_limit
        self.unavailable_p = float(unavailable_p)
        self.session_expires_after = session_expires_after
        self.latency_ms = float(latency_ms)
        self._reset_counts()

    def _reset_counts(self) -> None:
        self._requests = 0
        self._served = 0
        self._expired = False
        self._faults: Counter[str] = Counter()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        self._reset_counts()
        return self.env.reset(seed=seed, options=options)

    def _fault_for_next(self) -> tuple[str, str] | None:
        if self.request_limit is not None and self._requests >= self.request_limit:
            return REQUEST_LIMIT_EXCEEDED
        expiry = self.session_expires_after
        if expiry is not None and not self._expired and self._requests >= expiry:
            return INVALID_SESSION_ID
        if self.unavailable_p and bool(self.np_random.random() < self.unavailable_p):
            return SERVER_UNAVAILABLE
        return None

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        fault = self._fault_for_next() if _is_request(action) else None
        if fault is not None:
            self._base.inject_fault(*fault)
        obs, reward, terminated, truncated, info = self.env.step(action)
        delivered = info.get("api_fault")
        if "function" in info or "query" in info:  # the request reached the org's API (refused or not)
            self._requests += 1
            if delivered:
                self._faults[delivered] += 1
                self._expired = self._expired or delivered == INVALID_SESSION_ID[0]
            else:
                self._served += 1
        info["api"] = {
            "requests": self._requests,
            "faults": dict(self._faults),
            "fault": delivered,
            "latency_ms": self._served * self.latency_ms,
        }
        return obs, reward, terminated, truncated, info
