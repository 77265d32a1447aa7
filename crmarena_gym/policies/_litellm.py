"""LLM agents through litellm: Act, ReAct and native function calling.

The conversation is the chat core's (:class:`crmarena_gym.chat.ChatEpisode`), shared with the trainer
adapters so that a model is evaluated with the prompt, the tool schemas and the episode semantics it is
trained with (every tool call of a reply runs, in order, one turn each: the calls after the first are
returned by the next :meth:`~LiteLLMPolicy.act` calls without asking the model again; in function calling a
reply without a tool call ends the episode with no answer, :class:`~crmarena_gym.policies.EpisodeEnded`):
the system prompt (:func:`crmarena_gym.chat.system_prompt`), then the environment's first observation (the question and
its context) as the first user message. Act and ReAct reply in text (``<execute>``/``<submit>``);
function calling passes the environment's tool schemas through litellm's ``tools=`` and feeds each
result back as a ``tool`` message.

litellm is imported lazily (``pip install crmarena-gym[llm]``), with ``LITELLM_LOCAL_MODEL_COST_MAP``
set first so that importing it never reaches for the network. Retries are ours: litellm gets
``max_retries=0`` and a timeout, and :class:`LiteLLMPolicy` backs off exponentially (seeded jitter) on
rate limits, timeouts, connection failures and 5xx answers, up to ``max_retries`` retries; past that
(or on any other error) :meth:`~LiteLLMPolicy.act` raises :class:`LLMError` and the runner records the
episode with the end reason ``llm_error``. Configuration errors (a missing or rejected API key, a denied
permission, an unknown model) are never retried: they raise :class:`LLMConfigurationError`, whose
message says which environment variable to set, and the runner stops the run after recording it.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from crmarena_gym._json import without_lone_surrogates
from crmarena_gym._llm import announce_retry, backoff_delay, configuration_error, missing_keys, transient_error
from crmarena_gym._llm import import_litellm as _import_litellm
from crmarena_gym._secrets import redact_secrets, register_secret, truncate
from crmarena_gym.chat import FRAMEWORKS, NO_TOOL_CALL, ChatEpisode, Framework, system_prompt
from crmarena_gym.policies._base import CallUsage, EpisodeEnded, Policy, PolicyError

__all__ = ["FRAMEWORKS", "LLMConfigurationError", "LLMError", "LiteLLMPolicy", "import_litellm", "system_prompt"]

# The providers' own API hosts (a leading dot: any subdomain): litellm's prices hold only there.
_PROVIDER_HOSTS: dict[str, tuple[str, ...]] = {
    "openai": ("api.openai.com",),
    "text-completion-openai": ("api.openai.com",),
    "anthropic": ("api.anthropic.com",),
    "azure": (".openai.azure.com", ".cognitiveservices.azure.com"),
    "mistral": ("api.mistral.ai",),
    "gemini": ("generativelanguage.googleapis.com",),
    "openrouter": ("openrouter.ai",),
    "deepseek": ("api.deepseek.com",),
    "together_ai": ("api.together.xyz",),
}


class LLMError(PolicyError):
    """The model could not be reached (past the retry budget) or refused the request."""

    end_reason = "llm_error"


class LLMUnreachableError(LLMError):
    """The model could not be reached: connection errors or timeouts past the retry budget."""

    unreachable = True


class LLMConfigurationError(LLMError):
    """The request was refused for a reason that every episode will meet (credentials, permission, model).

    It is never retried, and the runner stops the run once it has recorded the episode.
    """

    fatal = True


def import_litellm() -> Any:
    """Import litellm with its price table read from the package (no network at import).

    Raises:
        ImportError: litellm is not installed; the message says how to install it.
    """
    return _import_litellm("LiteLLMPolicy")


class LiteLLMPolicy(Policy):
    """An LLM agent through litellm, in the Act, ReAct or function-calling framework.

    Args:
        model: A litellm model name (``"gpt-4o"``, ``"anthropic/claude-haiku-4-5"``, ``"openai/NAME"``
            for any OpenAI-compatible server with ``api_base``).
        framework: ``"act"``, ``"react"`` or ``"fc"`` (native tool calls; play it with
            ``toolset="functions"`` or ``"flex"``).
        temperature: Sampling temperature.
        max_tokens: The longest reply.
        timeout: Seconds before a request counts as timed out (and is retried).
        max_retries: Retries per call after a rate limit, a timeout, a connection failure or a 5xx answer.
        backoff: The first retry's delay in seconds; each retry doubles it (up to ``max_backoff``), times
            a jitter factor in [0.5, 1) drawn from a generator seeded per episode.
        max_backoff: The longest delay between two attempts.
        api_base: Passed to litellm (an OpenAI-compatible server's URL, say).
        api_key: Passed to litellm (default: litellm reads the provider's environment variable).
        seed: Seed of the retry jitter when :meth:`reset` gets no episode seed.
        send_seed: Send the episode's seed (the one given to :meth:`reset`, else ``seed``) to the
            provider (some honour it for reproducible sampling).
        sleep: The function that waits between attempts (tests pass a recorder).
        completion_kwargs: More keyword arguments for ``litellm.completion`` (``mock_response`` ...).

    Example:
        >>> policy = LiteLLMPolicy("gpt-4o", framework="act", completion_kwargs={"mock_response": "submit None"})
        >>> policy.reset("Which agent ...?", {"persona": "service manager", "abbrev": "HTU", "schema": "",
        ...     "action_format": "", "tools": []})
        >>> policy.act("Which agent ...?")
        'submit None'
        >>> usage = policy.usage()
        >>> usage.calls, usage.total_tokens > 0, usage.cost > 0
        (1, True, True)
    """

    def __init__(
        self,
        model: str,
        framework: Framework = "react",
        *,
        temperature: float = 0.0,
        max_tokens: int = 2000,
        timeout: float = 120.0,
        max_retries: int = 6,
        backoff: float = 2.0,
        max_backoff: float = 60.0,
        api_base: str | None = None,
        api_key: str | None = None,
        seed: int = 0,
        send_seed: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        completion_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a litellm model name, got {model!r}")
        if framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        self.model = model
        self.framework = framework
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.api_base = api_base
        self.api_key = api_key
        register_secret(api_key)  # never written or printed by anything in this process
        self.seed = seed
        self.send_seed = send_seed
        self.sleep = sleep
        self.completion_kwargs = dict(completion_kwargs or {})
        self.chat = ChatEpisode(framework)
        self._rng = random.Random(seed)
        self._episode_seed = seed
        self._last: dict[str, Any] = {}
        self._queued: list[str] = []  # the actions of the last reply's tool calls not carried out yet
        self._last_reply_actions: tuple[str, ...] = ()
        self._litellm = import_litellm()

    @property
    def toolset(self) -> str:  # type: ignore[override]
        """``functions`` for function calling, else ``soql``."""
        return "functions" if self.framework == "fc" else "soql"

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        """Start a conversation with the system prompt for this episode."""
        super().reset(observation, info, seed=seed)
        self._episode_seed = self.seed if seed is None else seed
        self._rng = random.Random(self._episode_seed)
        self.chat.start(info)
        self._last = {}
        self._queued = []

    def act(self, observation: str) -> str:
        """Show the model the observation and turn its reply into an action.

        When the model's last reply made several tool calls, the next one is returned without a model call
        (the observation answers the call just carried out).

        Raises:
            LLMError: The model failed past the retry budget, or refused the request.
            EpisodeEnded: In function calling, the model replied without a tool call.
        """
        if not self.chat.messages:
            raise PolicyError("call reset() before act()")
        # What is sent to the provider is UTF-8 JSON: a lone surrogate (half an emoji, in the model's reply
        # or in an observation echoing it) would make this request and every later one fail.
        observation, in_observation = without_lone_surrogates(observation)
        self.chat.observe(observation)
        if self._queued:
            # The step's details say which call of the model's last reply this is (no model call was made).
            self._last = {"call_of_reply": len(self._last_reply_actions) - len(self._queued) + 1}
            return self._queued.pop(0)
        tools = self.chat.tools
        if self.framework == "fc" and not tools:
            raise PolicyError("function calling needs tools: make the environment with toolset='functions'")
        message, call = self._complete(tools)
        self.usage().add(call)
        self._last = {"reply": message.get("content") or "", "usage": call.__dict__.copy()}
        if message.get("tool_calls"):
            self._last["tool_calls"] = [c["function"] for c in message["tool_calls"]]
        reply = self.chat.reply(message)  # the environment gets the reply as the model wrote it ...
        in_reply = _clean_reply(self.chat.messages[-1])  # ... the conversation, as a provider can read it
        if in_observation or in_reply:
            self._last["cleaned"] = {
                "lone_surrogates_in_observation": in_observation,
                "lone_surrogates_in_reply": in_reply,
            }
        if reply.ends_unanswered:
            raise EpisodeEnded(NO_TOOL_CALL, final_reply=message.get("content") or "")
        self._last_reply_actions = reply.actions
        self._queued = list(reply.actions[1:])
        return reply.actions[0]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The episode's conversation so far (OpenAI format)."""
        return self.chat.messages

    def system_prompt(self) -> str | None:
        """The episode's system prompt."""
        return self.chat.system_prompt

    def settings(self) -> dict[str, Any]:
        """The model and framework, the sampling and retry settings in effect, the server the requests go to
        (``api_base``, else the provider's base-URL variable; None for the provider's own) and whether
        litellm's price table prices the calls."""
        return {
            "model": self.model,
            "framework": self.framework,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "send_seed": self.send_seed,
            "api_base": self.effective_api_base(),
            "priced_by_table": self.priced_by_table(),
        }

    def step_details(self) -> dict[str, Any]:
        """The model's last reply, its tool calls and the call's usage."""
        return dict(self._last)

    # -- helpers -------------------------------------------------------------------------------

    def _request(self, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": self.chat.messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "max_retries": 0,
            "num_retries": 0,
        }
        if tools:
            kwargs["tools"] = tools
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        if self.send_seed:
            kwargs["seed"] = self._episode_seed
        kwargs.update(self.completion_kwargs)
        return kwargs

    def _configuration_error(self, err: Exception) -> bool:
        """Whether ``err`` will recur on every request: missing or rejected credentials, no permission,
        no such model."""
        return configuration_error(self._litellm, err)

    def check_ready(self) -> None:
        """Refuse, before any episode, a provider model whose key is not set (a model behind ``api_base``
        or ``OPENAI_API_BASE`` may need none, and is left to its first request).

        Raises:
            LLMConfigurationError: litellm says the model's key variables are unset; the message names them.
        """
        if self.api_key is not None or self.effective_api_base() is not None:
            return
        missing = missing_keys(self._litellm, self.model)
        if missing:
            raise LLMConfigurationError(f"{self.model} needs {', '.join(missing)}: {self._configuration_hint()}")

    def _configuration_hint(self) -> str:
        """What to set: the provider's key variables (as litellm knows them), or the key given."""
        if self.api_key is not None:
            return "check the API key given (api_key=..., --api-key-env VAR): the provider did not accept it"
        try:
            missing = self._litellm.validate_environment(self.model, api_base=self.api_base).get("missing_keys")
        except Exception:  # an unknown provider: litellm cannot say which variables it reads
            missing = None
        where = f"set {', '.join(missing)}" if missing else "set the provider's API key variable"
        # litellm's OpenAI client wants a key even for a server of one's own that checks none.
        local = " (any value, for a server of one's own that checks none)" if self.effective_api_base() else ""
        return f"{where} in the environment{local}, or pass the key's variable with --api-key-env VAR (api_key=...)"

    def _retryable(self, err: Exception) -> bool:
        return not self._configuration_error(err) and transient_error(self._litellm, err)

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1-based): exponential, capped, with jitter."""
        return backoff_delay(self._rng, retry, self.backoff, self.max_backoff)

    def _complete(self, tools: list[dict[str, Any]] | None) -> tuple[dict[str, Any], CallUsage]:
        kwargs = self._request(tools)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._litellm.completion(**kwargs)
            except Exception as err:  # litellm maps every provider failure to an exception
                # A provider may echo the key it refused: nothing recorded or printed carries it.
                # Redacted whole, then cut: a key cut first is no longer the key (nor shaped like one).
                what = truncate(redact_secrets(f"{type(err).__name__}: {err}", [self.api_key]), 500)
                if self._configuration_error(err):
                    raise LLMConfigurationError(
                        f"{self.model} refused the request for its configuration ({what}); {self._configuration_hint()}"
                    ) from err
                if not self._retryable(err):
                    raise LLMError(f"{self.model} refused the request ({what})") from err
                if attempt > self.max_retries:
                    kind = LLMUnreachableError if _no_connection(err, self._litellm) else LLMError
                    raise kind(f"{self.model} failed {attempt} times in a row; last error {what}") from err
                delay = self.delay(attempt)
                announce_retry(self.model, what, attempt, self.max_retries, delay)
                self.sleep(delay)
                continue
            try:
                message = response.choices[0].message
            except (AttributeError, IndexError) as err:
                shown = truncate(redact_secrets(str(response), [self.api_key]), 300)
                raise LLMError(f"{self.model} sent a reply without a message: {shown}") from err
            return _message_dict(message), self._usage_of(response, attempt)

    def _usage_of(self, response: Any, attempts: int) -> CallUsage:
        usage = getattr(response, "usage", None)
        tokens = [_int_or_none(getattr(usage, key, None)) for key in ("prompt_tokens", "completion_tokens")]
        total = _int_or_none(getattr(usage, "total_tokens", None))
        if total is None and None not in tokens:
            total = tokens[0] + tokens[1]  # type: ignore[operator]
        cost, source = self._cost(response, usage)
        return CallUsage(tokens[0], tokens[1], total, cost, source, attempts)

    def effective_api_base(self) -> str | None:
        """The server the requests go to when it is not the provider's default: ``api_base``, else the
        provider's base-URL variable (``OPENAI_API_BASE``, ``OPENAI_BASE_URL`` ...); None for the default."""
        if self.api_base:
            return self.api_base
        provider = self._provider()
        if provider:
            for suffix in ("_API_BASE", "_BASE_URL"):
                value = os.environ.get(provider.upper() + suffix)
                if value:
                    return value
        return None

    def _provider(self) -> str | None:
        try:
            return str(self._litellm.get_llm_provider(self.model)[1])
        except Exception:  # a model name litellm cannot place
            return None

    def priced_by_table(self) -> bool:
        """Whether litellm's price table applies: the requests go to the provider itself.

        A local or third-party OpenAI-compatible server (``api_base``, ``OPENAI_API_BASE``) serving a model
        under a known name is not OpenAI, so its calls are unpriced unless it reports their cost itself.
        """
        base = self.effective_api_base()
        if base is None:
            return True
        host = (urlsplit(base).hostname or "").lower()
        try:
            default = self._litellm.get_llm_provider(self.model)[3]
        except Exception:
            default = None
        if default and (urlsplit(default).hostname or "").lower() == host:
            return True
        own = _PROVIDER_HOSTS.get(self._provider() or "", ())
        return any(host == h or (h.startswith(".") and host.endswith(h)) for h in own)

    def _cost(self, response: Any, usage: Any) -> tuple[float | None, str | None]:
        provider = getattr(usage, "cost", None)  # OpenRouter and some proxies report the charge
        if isinstance(provider, int | float) and not isinstance(provider, bool) and provider >= 0:
            return float(provider), "provider"
        if not self.priced_by_table():
            return None, None
        hidden = getattr(response, "_hidden_params", None) or {}
        computed = hidden.get("response_cost")
        if isinstance(computed, int | float) and computed > 0:
            return float(computed), "litellm"
        try:
            computed = self._litellm.completion_cost(completion_response=response, model=self.model)
        except Exception:  # the model is not in litellm's price table
            return None, None
        if isinstance(computed, int | float) and computed > 0:
            return float(computed), "litellm"
        return None, None  # a zero from an unknown model is not a price


def _no_connection(err: BaseException, litellm: Any) -> bool:
    """Whether ``err`` (or what caused it) is a failure to connect or a timeout: litellm reports a refused
    connection as an InternalServerError whose cause is openai's APIConnectionError."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [err]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, litellm.APIConnectionError | litellm.Timeout | ConnectionError | TimeoutError):
            return True
        if type(current).__name__ in ("APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout"):
            return True
        stack += [current.__cause__, current.__context__]
    return False


def _clean_reply(entry: dict[str, Any]) -> int:
    """Replace the lone surrogates of a reply kept in the conversation (its text and its calls' arguments) by
    U+FFFD, in place; how many there were."""
    count = 0
    if isinstance(entry.get("content"), str):
        entry["content"], count = without_lone_surrogates(entry["content"])
    for call in entry.get("tool_calls") or []:
        function = call["function"]
        for key in ("name", "arguments"):
            if isinstance(function.get(key), str):
                cleaned, n = without_lone_surrogates(function[key])
                if n:
                    call["function"] = function = {**function, key: cleaned}  # the step's record keeps the original
                    count += n
    return count


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _message_dict(message: Any) -> dict[str, Any]:
    """The reply as a plain chat message: content and tool calls (each with an id)."""
    calls = []
    for n, call in enumerate(getattr(message, "tool_calls", None) or []):
        function = call.function if hasattr(call, "function") else call["function"]
        name = function.name if hasattr(function, "name") else function["name"]
        arguments = function.arguments if hasattr(function, "arguments") else function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments or {})
        call_id = (getattr(call, "id", None) if not isinstance(call, dict) else call.get("id")) or f"call_{n}"
        calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
    content = getattr(message, "content", None)
    return {"content": content if isinstance(content, str) else None, "tool_calls": calls}
