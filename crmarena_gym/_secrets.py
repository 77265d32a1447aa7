"""Secrets kept out of everything written: results, metadata, reports, the terminal.

:func:`redact_secrets` replaces, in a text:

- the secrets the program was given (:func:`register_secret`: an ``api_key`` option, the value of
  ``--api-key-env``'s variable) and the values of secret-looking environment variables (``*_API_KEY``,
  ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``);
- anything shaped like a provider's key, wherever it comes from: OpenAI's ``sk-...`` and ``sk-proj-...``,
  Anthropic's ``sk-ant-...``, Google's ``AIza...``, AWS access key ids (``AKIA...``) and secret keys
  after their name, Hugging Face, GitHub, Groq, Replicate, xAI, Perplexity and Slack tokens, JWTs;
- the value of an ``Authorization`` header or a bearer token, of an ``x-api-key``-like header or a
  ``"api_key": ...`` field, of a secret parameter of a URL (``?key=``, ``&access_token=``, ``&sig=``) and
  the password of a URL (``https://user:password@host``).

Redact before cutting a text short: a cut key is no longer the key, nor shaped like one, and its first 50
characters would be written. This module sits below the layers (it imports none of them).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = [
    "REDACTED",
    "redact_json",
    "redact_secrets",
    "redact_value",
    "redacted_output",
    "register_secret",
    "truncate",
]

REDACTED = "<redacted>"

# A value: no whitespace, quote, backslash or delimiter (so that redacting JSON text keeps it valid JSON).
_VALUE = r"[^\s\"'\\&,;<>{}()\[\]]+"
_SHAPES = (
    r"\bsk-(?:proj-|ant-(?:api\d\d-|admin\d\d-)?|or-v1-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",  # OpenAI, Anthropic ...
    r"\bAIza[0-9A-Za-z_\-]{30,}",  # Google
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|AIPA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{20,}",  # GitHub
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"\b(?:gsk|r8|xai|pplx|nvapi)[_-][A-Za-z0-9_\-]{20,}",  # Groq, Replicate, xAI, Perplexity, NVIDIA
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack
    r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWTs
)
_SHAPE = re.compile("|".join(f"(?:{s})" for s in _SHAPES))
# A name that says its value is secret, then the value: headers, JSON fields, key=value, URL parameters.
# The value must look like a credential (8 or more characters, a digit among them, or 24 or more), so
# that "password: go to Settings" in an article stays as it is.
_CREDENTIAL = r"(?=[^\s\"'\\&,;<>{}()\[\]]*\d)[^\s\"'\\&,;<>{}()\[\]]{8,}|[^\s\"'\\&,;<>{}()\[\]]{24,}"
_NAMED = re.compile(
    r"(?i)("
    r"(?:\b(?:x-)?(?:goog-)?api[_-]?key|\bapikey|\baccess[_-]?token|\brefresh[_-]?token|\bauth[_-]?token|"
    r"\bid[_-]?token|\bsession[_-]?token|\bclient[_-]?secret|\bsecret[_-]?(?:access[_-]?)?key|\bpassword|\bpasswd|"
    r"\baws_secret_access_key|\bprivate[_-]?key|\bsecret|\btoken)"
    r"[\"']?\s*[:=]\s*[\"']?"
    r")(?!<redacted>)(" + _CREDENTIAL + ")"
)
# A URL's secret parameters (any value), and its password.
_URL_PARAM = re.compile(
    r"(?i)([?&;](?:key|api[_-]?key|apikey|token|access[_-]?token|auth|code|sig|signature|secret|password|"
    r"client[_-]?secret|x-amz-signature|x-amz-credential|x-amz-security-token)=)(?!<redacted>)(" + _VALUE + ")"
)
_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s/:@\"'\\]+:)(?!<redacted>)([^\s/@\"'\\]+)(@)")
# An Authorization header's value, or a bearer token.
_AUTH_VALUE = re.compile(
    r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer\s+|basic\s+|token\s+)?|\bbearer\s+)"
    r"(?!<redacted>|bearer\b|basic\b|token\b)(" + _VALUE + ")"
)
# Environment variables whose values are secrets (the providers' keys and tokens).
_SECRET_VARIABLE = re.compile(r"(?i)(api_?key|token|secret|password)")

_REGISTERED: set[str] = set()
_LOCK = threading.Lock()


def register_secret(value: str | None) -> None:
    """Redact ``value`` from every text :func:`redact_secrets` sees from now on, in this process (an API key
    given as an option, say). Values shorter than 6 characters are not secrets worth the name."""
    if isinstance(value, str) and len(value) >= 6:
        with _LOCK:
            _REGISTERED.add(value)


def _known(secrets: Iterable[str | None]) -> list[str]:
    values = {v for v in secrets if isinstance(v, str) and len(v) >= 6}
    values |= _REGISTERED
    values |= {v for k, v in os.environ.items() if _SECRET_VARIABLE.search(k) and len(v) >= 8}
    # As JSON text writes them too (a quote or a backslash escaped), so that JSON text can be redacted.
    values |= {escaped for v in values if (escaped := json.dumps(v, ensure_ascii=False)[1:-1]) != v}
    values |= {escaped for v in values if (escaped := json.dumps(v)[1:-1]) != v}
    return sorted(values, key=len, reverse=True)  # a longer secret before any it contains


def redact_secrets(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret it holds replaced by ``<redacted>`` (see the module's docs).

    Example:
        >>> redact_secrets("bad key sk-123456789 (Authorization: Bearer sk-123456789)", ["sk-123456789"])
        'bad key <redacted> (Authorization: Bearer <redacted>)'
        >>> redact_secrets("GET https://gen.example/v1?alt=json&key=AIzaSyA-0123456789abcdefghijklmnopqrstu")
        'GET https://gen.example/v1?alt=json&key=<redacted>'
        >>> redact_secrets("https://bob:hunter2@proxy.example/v1 says: password: go to Settings")
        'https://bob:<redacted>@proxy.example/v1 says: password: go to Settings'
    """
    if not isinstance(text, str):
        return text
    return _redact_patterns(_replace_known(text, _known(secrets)))


def _replace_known(text: str, known: list[str]) -> str:
    for secret in known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _redact_all(text: str) -> str:
    """Every pattern over the whole of ``text``."""
    text = _SHAPE.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    text = _URL_PARAM.sub(lambda m: m.group(1) + REDACTED, text)
    text = _AUTH_VALUE.sub(lambda m: m.group(1) + REDACTED, text)
    return _NAMED.sub(lambda m: m.group(1) + REDACTED, text)


# Where a secret pattern can match, in lower case: a name that says so, a key's prefix, a URL. Every pattern
# above starts within _BEFORE characters before one of them (a header name like "x-goog-api-key") and ends
# at a delimiter after it.
_TRIGGER = re.compile(
    r"key|token|secret|passw|bearer|authoriz|credential|://|[?&;](?:auth|code|sig)|"
    r"sk-|aiza|akia|asia|agpa|aida|aroa|anpa|aipa|gh[pousr]_|github_pat|hf_|gsk_|r8_|xai-|pplx-|nvapi-|xox|eyj"
)
_DELIMITER_CHARS = " \t\n\r\f\v\"'\\&,;<>{}()[]"
_DELIMITER = re.compile("[" + re.escape(_DELIMITER_CHARS) + "]")
_BEFORE, _AFTER = 64, 512


def _redact_patterns(text: str) -> str:
    """:func:`_redact_all`, run only on the stretches of ``text`` around a trigger (a long observation of org
    records has few): each from a delimiter at least _BEFORE characters before one to a delimiter at least
    _AFTER after it, so that no match is cut by a stretch's edge."""
    low = text.lower()
    if len(low) != len(text):  # a character whose lower case is longer: positions differ, read it all
        return _redact_all(text)
    spans: list[list[int]] = []
    for m in _TRIGGER.finditer(low):
        start = m.start()
        if spans and start <= spans[-1][1]:
            continue  # within the stretch already taken
        begin = max(0, start - _BEFORE)
        if begin:  # back to just after a delimiter
            begin = max(text.rfind(c, 0, begin) for c in _DELIMITER_CHARS) + 1
        after = _DELIMITER.search(text, min(len(text), m.end() + _AFTER))
        end = after.start() if after else len(text)
        if spans and begin <= spans[-1][1]:
            spans[-1][1] = end
        else:
            spans.append([begin, end])
    if not spans:
        return text
    pieces: list[str] = []
    last = 0
    for begin, end in spans:
        pieces += [text[last:begin], _redact_all(text[begin:end])]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def redact_json(text: str, secrets: Iterable[str | None] = ()) -> str:
    r"""JSON text with every secret in it redacted, still the same JSON otherwise: every pattern stops at a
    quote or a backslash, and known secrets are looked for as JSON writes them too.

    Example:
        >>> text = json.dumps({"error": 'said "Bearer abc.def-123" to me', "k": 'x"y0123456789'})
        >>> print(redact_json(text, ['x"y0123456789']))
        {"error": "said \"Bearer <redacted>\" to me", "k": "<redacted>"}
    """
    return redact_secrets(text, secrets)


def redact_value(value: Any, secrets: Iterable[str | None] = (), *, known_only: Iterable[str] = ()) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with :func:`redact_secrets` applied to every string in it,
    keys included; other values as they are.

    Strings under a key in ``known_only`` are searched for the known secrets only, not for keys' shapes: an
    environment's observations, tens of kilobytes of the org's records a step, which hold no provider's key
    unless one was given to them (and a given one is known).

    Example:
        >>> redact_value({"command": ["eval", "--api-base", "https://h/v1?key=AIzaSyA-0123456789abcdefghijklmnopqrstu"]})
        {'command': ['eval', '--api-base', 'https://h/v1?key=<redacted>']}
    """
    known = _known(secrets)
    plain = frozenset(known_only)

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return _redact_patterns(_replace_known(item, known))
        if isinstance(item, dict):
            return {
                walk(k): _replace_known(v, known) if k in plain and isinstance(v, str) else walk(v)
                for k, v in item.items()
            }
        if isinstance(item, list):
            return [walk(v) for v in item]
        if isinstance(item, tuple):
            return tuple(walk(v) for v in item)
        return item

    return walk(value)


class _RedactingStream:
    """A text stream that redacts what is written to it (see :func:`redacted_output`)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact_secrets(text) if isinstance(text, str) else text)
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def redacted_output() -> Iterator[None]:
    """While the block runs, whatever is printed to ``sys.stdout`` and ``sys.stderr`` is redacted (the
    command line's messages, progress, and anything a library prints): a write holds a whole message."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _RedactingStream(sys.stdout), _RedactingStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (an ellipsis marks the cut). Redact first: see the module's docs.

    Example:
        >>> truncate("abcdef", 4), truncate("abc", 4)
        ('abc…', 'abc')
    """
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"
