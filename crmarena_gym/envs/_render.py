"""Rendering query and function results as the observations an agent reads."""

from __future__ import annotations

import json
import operator
from typing import Any, Literal

from crmarena_gym.tools import clean_records

ObservationFormat = Literal["python", "json"]
QUERY_OUTPUT_PREFIX = "Salesforce instance output: "


def result_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a query or search result as the paper shows them.

    Each row loses its ``attributes`` key; a column that is null in every row is dropped;
    relationship values stay nested. ``COUNT()`` queries have no rows (the count is only in
    ``totalSize``), so they render as an empty list, as in the original.

    Example:
        >>> result_rows({"records": [{"attributes": {"type": "Case"}, "Id": "500x", "ClosedDate": None}]})
        [{'Id': '500x'}]
    """
    return clean_records(result.get("records", result.get("searchRecords", [])))


def render_value(value: Any, fmt: ObservationFormat, *, limit: int | None = None) -> str:
    """A Python value as ``str()`` shows it (the paper's format) or as JSON.

    With ``limit``, a list is rendered a few items at a time only until its text passes ``limit``
    characters: the text is then the exact start of the full rendering, longer than ``limit`` (a caller
    cuts it), and rendering a million rows costs what the rows shown cost.

    Example:
        >>> render_value([{"Id": "a"}, {"Id": "b"}], "python")
        "[{'Id': 'a'}, {'Id': 'b'}]"
        >>> text = render_value([{"Id": "a"}] * 1000, "json", limit=5)
        >>> text.startswith('[{"Id": "a"}, '), len(text) < 1000
        (True, True)
    """
    return render_head(value, fmt, limit)[0]


def render_head(value: Any, fmt: ObservationFormat, limit: int | None) -> tuple[str, bool]:
    """:func:`render_value` with ``limit``, and whether the text is the whole rendering.

    Example:
        >>> render_head(["a"] * 100, "python", 3)[1]
        False
        >>> render_head(["a", "b"], "json", 3)
        ('["a", "b"]', True)
    """
    if fmt == "json":
        whole = _json
    elif fmt == "python":
        whole = python_text
    else:
        raise ValueError(f"observation format must be 'python' or 'json', got {fmt!r}")
    if limit is None or not isinstance(value, list):
        return whole(value), True
    if len(value) <= _CHUNK:  # one chunk: the list's own rendering (as a plain list, whatever its class)
        return whole(value if type(value) is list else list(value)), True
    # Chunks of items rendered as lists (at C speed), stripped of their brackets and joined as one list's
    # items are: the same text as rendering the whole list, stopped soon after ``limit``.
    parts: list[str] = []
    size = 1
    for start in range(0, len(value), _CHUNK):
        chunk = list(value[start : start + _CHUNK])  # a plain list, whatever list subclass ``value`` is
        parts.append(whole(chunk)[1:-1])
        size += len(parts[-1]) + 2
        if size > limit and start + _CHUNK < len(value):
            return "[" + ", ".join(parts), False
    return "[" + ", ".join(parts) + "]", True


_CHUNK = 64


def python_text(value: Any) -> str:
    """``str(value)``, the paper's rendering. Rows (dicts with the same keys in the same order) are written with
    their keys rendered once, not once a row, and their long texts (knowledge articles, chat transcripts, emails)
    from a cache of their ``repr``: the same texts come back episode after episode, and ``repr`` of a long text
    (escaping it character by character) costs many times what finding it in a dict does.

    Example:
        >>> rows = [{"Id": "ka0x", "Content": "Gift cards never expire.\\n" * 20, "n": 3}] * 2
        >>> python_text(rows) == str(rows), python_text({"a": 1})
        (True, "{'a': 1}")
    """
    if type(value) is list and value and type(value[0]) is dict:
        text = _rows_text(value)
        if text is not None:
            return text
    return str(value)


#: Texts at least this long are rendered from the cache.
LONG_TEXT = 256
#: Fewer rows without a long text are rendered by ``str`` (writing the keys once saves less than it costs).
MANY_ROWS = 4
_DICT_ONLY = frozenset({dict})


def _rows_text(rows: list[Any]) -> str | None:
    """``str(rows)`` for rows (dicts with the same keys in the same order), when there are many or the first has a
    long text; None for any other list (the caller renders it with ``str``)."""
    first = rows[0]
    long = {k for k, v in first.items() if type(v) is str and len(v) >= LONG_TEXT}
    if not long and len(rows) < MANY_ROWS:
        return None
    keys = tuple(first)
    if not keys or not _DICT_ONLY.issuperset(map(type, rows)) or list(map(tuple, rows)).count(keys) != len(rows):
        return None
    # One row's pieces: "{'Id': ", value, ", 'Content': ", value, "}, "; every row's, its values filled in by
    # column (dict_repr writes repr(key) + ": " + repr(value), joined by ", ").
    pattern: list[str] = []
    for j, key in enumerate(keys):
        pattern += [("{" if j == 0 else ", ") + repr(key) + ": ", ""]
    pattern.append("}, ")
    width = len(pattern)
    pieces = pattern * len(rows)
    for j, key in enumerate(keys):
        render = _text_repr if key in long else repr
        pieces[2 * j + 1 :: width] = list(map(render, map(operator.itemgetter(key), rows)))
    pieces[0] = "[" + pieces[0]
    pieces[-1] = "}]"
    return "".join(pieces)


class _Reprs(dict[str, str]):
    """``repr`` of long texts, kept up to ``limit`` characters of text in all (then forgotten at once)."""

    limit = 8_000_000
    chars = 0

    def cache_clear(self) -> None:
        """Forget them all (as ``functools.lru_cache`` does)."""
        self.clear()
        self.chars = 0


_REPRS = _Reprs()


def _text_repr(value: Any) -> str:
    """``repr(value)``; a long text's from the cache."""
    if type(value) is not str or len(value) < LONG_TEXT:
        return repr(value)
    text = _REPRS.get(value)
    if text is None:
        if _REPRS.chars > _REPRS.limit:
            _REPRS.cache_clear()
        text = _REPRS[value] = repr(value)
        _REPRS.chars += len(value)
    return text


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def render_query_result(result: dict[str, Any], fmt: ObservationFormat = "python") -> str:
    """The observation after a query: the prefix, then the rows.

    Example:
        >>> render_query_result({"totalSize": 1, "records": [{"attributes": {}, "expr0": 5}]})
        "Salesforce instance output: [{'expr0': 5}]"
    """
    return QUERY_OUTPUT_PREFIX + render_value(result_rows(result), fmt)


def render_error(code: str, message: str) -> str:
    """The observation after a failed query, as the original's code renders it: the output prefix,
    then ``CODE: message``.

    Example:
        >>> render_error("INVALID_TYPE", "sObject type 'Foo' is not supported.")
        "Salesforce instance output: INVALID_TYPE: sObject type 'Foo' is not supported."
    """
    return f"{QUERY_OUTPUT_PREFIX}{code}: {message}"
