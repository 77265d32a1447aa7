"""JSON text for records written to disk, safe for every Python string.

Model replies and actions may hold a lone surrogate (half an emoji, ``"\\ud83d"`` in a JSON reply): a
``str`` that UTF-8 cannot encode. Writing it as is fails; escaping only such records (``\\ud83d`` in
the JSON text) keeps them lossless, since a JSON reader turns the escape back into the same string.

This module sits below the layers (it imports none of them).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["json_line", "json_text"]


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
