"""The LLM user: a model plays the person asking, under rules of our own wording (after CRMArena-Pro's).

It is told who it is (its persona; a CRMArena-Pro persona after the role its category's pool gives), the
instance's whole request and the details the request holds back (the criteria of
:func:`~crmarena_gym.tasks.interactive_split`, among them a record's Id the context alone carried), and the rules:
give one piece of the request at a time, starting with the goal; never invent facts the request does not hold;
say it does not know anything else; ask for the Id when given a name; end with the end marker alone on its last
line once it has its answer (or the agent says there is none). It never sees the gold. Its conversation starts with
the agent's canned greeting, so its first reply is the agent's first message.

Its calls are retried as the agent's are (rate limits, timeouts, connection failures and 5xx answers;
not a refused request), with an exponential, capped backoff whose jitter comes from the episode's seed,
and their tokens and cost are kept apart from the agent's (:meth:`LLMUser.summary`). litellm is
imported only when the first call is made.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from crmarena_gym._llm import (
    announce_retry,
    backoff_delay,
    configuration_error,
    import_litellm,
    missing_keys,
    transient_error,
)
from crmarena_gym._secrets import redact_secrets, register_secret, truncate
from crmarena_gym.tasks import InteractiveSplit, TaskInstance
from crmarena_gym.users._base import END_MARKER, UserReply, parse_end_marker

__all__ = ["GREETING", "LLMUser", "LLMUserError", "user_system_prompt"]

#: The agent's canned first line, in the simulator's own conversation.
GREETING = "Hi! How can I help you today?"

_RULES = """You are a person talking with a CRM assistant. Play this part:
- {identity} What you want done is below, under "Your request".
- Start with the goal only, in your own words, and hold back the details (time period, product,
  thresholds, the case, the day ...). Give one detail per message, only when the assistant asks for it.
- Say only what your request holds. If asked anything else, say you don't know. Never make up a fact.
- Do not copy the request word for word; paraphrase it. Keep each message to one or two short lines.
- If you asked for an Id and the assistant gives a name, ask for the Id.
- When the assistant gives its answer, or says there is none (None), reply with {marker} alone on the
  last line of your message. Do not check whether the answer is right.

Your request:
{request}{details}"""


#: What to do about the user's model's key (the user has no key option of its own on the command line).
_KEY_HINT = "set the provider's key variable in the environment (any value for a local server that checks none)"


class LLMUserError(RuntimeError):
    """The user's model could not be reached past the retry budget, or refused the request."""


# Who a CRMArena-Pro user is, by the persona pool of its category (its persona sentence says how they behave),
# and whom they talk to, by the category's audience (internal_operation_data: an employee at the customer-facing
# assistant).
_PRO_ROLES = {
    "employee": "You are an employee of the company",
    "consumer": "You are a customer of the company",
    "buyer": "You work at a client of the company",
}
_PRO_ASSISTANTS = {
    "internal": "asking its internal CRM assistant for help.",
    "external": "talking with its customer-facing assistant.",
}


def _identity(instance: TaskInstance) -> str:
    """Who the user is: CRMArena's persona is a role ("service manager"); a CRMArena-Pro persona is a sentence
    about the person ("You plan your week on Sunday evening ..."), said after the role its category's pool gives."""
    if not instance.is_pro:
        return f"You are a {instance.persona or 'customer'}."
    spec = instance.spec
    role = f"{_PRO_ROLES[spec.persona_pool]}, {_PRO_ASSISTANTS[spec.audience]}"  # type: ignore[union-attr]
    persona = (instance.persona or "").strip()
    return f"{role} {persona}".strip()


def user_system_prompt(instance: TaskInstance, split: InteractiveSplit) -> str:
    """The LLM user's instructions for one instance (who they are, their persona and the whole request; never the
    gold).

    Example:
        >>> from crmarena_gym.tasks import TaskInstance, interactive_split
        >>> pro = TaskInstance(idx=0, task="lead_qualification", query="Is this lead qualified?", answer=None,
        ...     kind="b2b", persona="You prefer short bullet points.", params={"lead_id": "00Q000000000001AAA"},
        ...     metadata={"required": "- Lead Id to be considered is: 00Q000000000001AAA"})
        >>> prompt = user_system_prompt(pro, interactive_split(pro))
        >>> prompt.splitlines()[1][:60], "You prefer short bullet points." in prompt, prompt.splitlines()[-1][-25:]
        ('- You are an employee of the company, asking its internal CR', True, 'Id is 00Q000000000001AAA.')
    """
    details = ""
    if split.criteria:
        # What the request holds back, with what the context alone gave (a record's Id): the user can say it.
        lines = "\n".join(f"- {c.reveal}" for c in split.criteria)
        details = f"\n\nThe details of your request (give each only when the assistant asks for it):\n{lines}"
    return _RULES.format(identity=_identity(instance), marker=END_MARKER, request=split.full_request, details=details)


class LLMUser:
    """A user played by a model through litellm (``user="litellm:MODEL"``).

    Args:
        model: A litellm model name (``"gpt-4o"``, ``"openai/NAME"`` with ``api_base``).
        temperature: Sampling temperature.
        max_tokens: The longest reply.
        timeout: Seconds before a request counts as timed out (and is retried).
        max_retries: Retries per call after a rate limit, timeout, connection failure or 5xx answer.
        backoff: The first retry's delay; each retry doubles it, up to ``max_backoff``, times a jitter in [0.5, 1).
        max_backoff: The longest delay.
        api_base: An OpenAI-compatible server's URL.
        api_key: The key (else the provider's variable).
        completion_kwargs: More arguments for ``litellm.completion`` (``mock_response`` in tests).
        sleep: How to wait between attempts (tests pass a recorder).
    """

    kind = "litellm"

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.0,
        max_tokens: int = 300,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        api_base: str | None = None,
        api_key: str | None = None,
        completion_kwargs: dict[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"the LLM user needs a model name, got {model!r}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.api_base = api_base
        self.api_key = api_key
        register_secret(api_key)  # never written or printed by anything in this process
        self.completion_kwargs = dict(completion_kwargs or {})
        self.sleep = sleep
        self.messages: list[dict[str, Any]] = []
        self._rng = random.Random(0)
        self._usage = _empty_usage()
        self._litellm: Any = None

    def check_ready(self) -> None:
        """Refuse, before any conversation, a provider model whose key is not set (a model behind ``api_base``
        may need none, and is left to its first request).

        Raises:
            LLMUserError: litellm says the model's key variables are unset; the message names them.
        """
        if self.api_key is not None or self.api_base is not None:
            return
        if self._litellm is None:
            self._litellm = import_litellm("The LLM user")
        missing = missing_keys(self._litellm, self.model)
        if missing:
            raise LLMUserError(f"the user's model {self.model} needs {', '.join(missing)}: set it in the environment")

    def start(self, instance: TaskInstance, split: InteractiveSplit, *, seed: int) -> UserReply:
        """Give the model its instructions and the greeting; its reply opens the conversation."""
        self._rng = random.Random(seed)
        self._usage = _empty_usage()
        self.messages = [
            {"role": "system", "content": user_system_prompt(instance, split)},
            {"role": "user", "content": GREETING},
        ]
        return self._turn()

    def reply(self, message: str) -> UserReply:
        """The model's answer to the agent's ``message``."""
        if not self.messages:
            raise RuntimeError("the LLM user has no conversation: call start() first")
        self.messages.append({"role": "user", "content": message})
        return self._turn()

    def summary(self) -> dict[str, Any]:
        """The kind, model and this episode's usage (calls, attempts, tokens, cost), apart from the agent's."""
        return {"kind": self.kind, "model": self.model, "usage": dict(self._usage)}

    def _turn(self) -> UserReply:
        text, usage = self._complete()
        self.messages.append({"role": "assistant", "content": text})
        said, ended = parse_end_marker(text)
        return UserReply(said, ended=ended, usage=usage)

    def _complete(self) -> tuple[str, dict[str, Any]]:
        if self._litellm is None:
            self._litellm = import_litellm("The LLM user")
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": self.messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "max_retries": 0,
            "num_retries": 0,
        }
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        kwargs.update(self.completion_kwargs)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._litellm.completion(**kwargs)
            except Exception as err:  # litellm maps every provider failure to an exception
                # A provider may echo the key it refused: redacted whole, then cut.
                what = truncate(redact_secrets(f"{type(err).__name__}: {err}", [self.api_key]), 300)
                if configuration_error(self._litellm, err):  # every retry would meet it too
                    raise LLMUserError(
                        f"the user's model {self.model} refused the request for its configuration ({what}); {_KEY_HINT}"
                    ) from err
                if not transient_error(self._litellm, err):
                    raise LLMUserError(f"the user's model {self.model} refused the request ({what})") from err
                if attempt > self.max_retries:
                    raise LLMUserError(
                        f"the user's model {self.model} failed {attempt} times; last error {what}"
                    ) from err
                delay = backoff_delay(self._rng, attempt, self.backoff, self.max_backoff)
                announce_retry(f"the user's model {self.model}", what, attempt, self.max_retries, delay)
                self.sleep(delay)
                continue
            try:
                content = response.choices[0].message.content or ""
            except (AttributeError, IndexError) as err:
                raise LLMUserError(f"the user's model {self.model} sent a reply without a message") from err
            return content, self._account(response, attempt)

    def _account(self, response: Any, attempts: int) -> dict[str, Any]:
        usage = getattr(response, "usage", None)
        prompt = _int(getattr(usage, "prompt_tokens", None))
        completion = _int(getattr(usage, "completion_tokens", None))
        cost: float | None = None
        reported = getattr(usage, "cost", None)
        if isinstance(reported, int | float) and not isinstance(reported, bool):
            cost, source = float(reported), "provider"
        elif self.api_base is None:  # litellm's prices hold only at the provider itself, not at a local server
            try:
                cost, source = float(self._litellm.completion_cost(completion_response=response)), "litellm"
            except Exception:  # a model litellm's price table does not know: unpriced, not zero
                cost = None
        if cost is None:
            source = None
        call = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cost": cost,
            "cost_source": source,
            "attempts": attempts,
        }
        total = self._usage
        total["calls"] += 1
        total["attempts"] += attempts
        total["prompt_tokens"] += prompt or 0
        total["completion_tokens"] += completion or 0
        if cost is None:
            total["unpriced_calls"] += 1
        else:
            total["cost"] += cost
        return call


def _empty_usage() -> dict[str, Any]:
    return {"calls": 0, "attempts": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0, "unpriced_calls": 0}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
