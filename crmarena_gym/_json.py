"""JSON text for records written to disk, safe for every Python string; JSON read from agents, safe for every number.

Model replies and actions may hold a lone surrogate (half an emoji, ``"\\ud83d"`` in a JSON reply): a
``str`` that UTF-8 cannot encode. Writing it as is fails; escaping only such records (``\\ud83d`` in
the JSON text) keeps them lossless, since a JSON reader turns the escape back into the same string.

An agent's JSON may hold an integer of any length; Python reads at most ``sys.get_int_max_str_digits()``
digits (4,300) and ``json.loads`` raises a ``ValueError`` that tells the reader to change the interpreter's
limit. :func:`read_json` refuses such a number with :class:`JSONNumberError`, in words for the agent.

This module sits below the layers (it imports none of them).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

__all__ = ["JSONNumberError", "json_line", "json_problem", "json_text", "read_json", "without_lone_surrogates"]


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **options)``, escaped to ASCII when the text holds a lone
    surrogate (so that it always encodes as UTF-8).

    Example:
        >>> json_text({"a": "caf\\u00e9"}), json_text({"a": "\\ud83d"})
        ('{"a": "café"}', '{"a": "\\\\ud83d"}')
        >>> json.loads(json_text({"a": "\\ud83d"}))["a"] == "\\ud83d"
        True
    """
    text = json.dumps(value, ensure_ascii=False, **options)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, **options)
    return text


def json_line(value: Any, **options: Any) -> bytes:
    """One JSON Lines line (UTF-8, newline-terminated) of ``value``; see :func:`json_text`.

    Example:
        >>> json_line({"a": 1})
        b'{"a": 1}\\n'
    """
    return json_text(value, **options).encode("utf-8") + b"\n"


class JSONNumberError(ValueError):
    """A JSON text holds an integer with more digits than Python reads (``sys.get_int_max_str_digits()``)."""


def _read_int(text: str) -> int:
    limit = sys.get_int_max_str_digits()
    digits = len(text) - (text[:1] == "-")
    if limit and digits > limit:
        raise JSONNumberError(
            f"the number {text[:12]}...{text[-4:]} has {digits:,} digits, more than can be read (at most {limit:,})"
        )
    return int(text)


_DECODER = json.JSONDecoder(parse_int=_read_int)


def read_json(text: str | bytes) -> Any:
    """``json.loads(text)``, with an integer longer than Python reads refused as :class:`JSONNumberError`.

    Raises:
        json.JSONDecodeError: The text is not JSON.
        JSONNumberError: It holds an integer of more than ``sys.get_int_max_str_digits()`` digits.
        RecursionError: It is nested too deeply.

    Example:
        >>> read_json('{"n": 12}')
        {'n': 12}
        >>> try:
        ...     read_json('{"n": ' + "9" * 5000 + "}")
        ... except JSONNumberError as err:
        ...     print(err)
        the number 999999999999...9999 has 5,000 digits, more than can be read (at most 4,300)
    """
    if isinstance(text, bytes | bytearray):
        return json.loads(text, parse_int=_read_int)  # json.loads detects the encoding of bytes
    return _DECODER.decode(text)


def json_problem(err: ValueError) -> str:
    """What :func:`read_json` (or ``json.loads``) found wrong, in words for the one who wrote the text.

    Example:
        >>> try:
        ...     read_json('{"a": }')
        ... except ValueError as err:
        ...     print(json_problem(err))
        Expecting value (line 1 column 7)
    """
    if isinstance(err, json.JSONDecodeError):
        return f"{err.msg} (line {err.lineno} column {err.colno})"
    if isinstance(err, JSONNumberError):
        return str(err)
    if "integer string conversion" in str(err):  # json.loads's own words for the same (not read_json's)
        return f"a number has more digits than can be read (at most {sys.get_int_max_str_digits():,})"
    return str(err)


_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> tuple[str, int]:
    """``text`` as UTF-8 can carry it, and how many lone surrogates were replaced by U+FFFD.

    A surrogate pair held as two code points (``"\\ud83d\\ude00"``) becomes the character it spells; a lone
    half of one becomes the replacement character. A provider's request is UTF-8 JSON: one lone surrogate in
    the conversation makes every later request of the episode fail.

    Example:
        >>> without_lone_surrogates("ok \\ud83d!"), without_lone_surrogates("\\ud83d\\ude00") == ("\\U0001f600", 0)
        (('ok \ufffd!', 1), True)
    """
    if not _SURROGATE.search(text):
        return text, 0
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return fixed, fixed.count("\ufffd") - text.count("\ufffd")
