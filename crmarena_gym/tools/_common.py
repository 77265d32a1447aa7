"""Helpers shared by the tools: date arguments, SOQL literals, id checks, record shaping."""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import itertools
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crmarena_gym.schema import get_object, is_valid_id, object_for_id
from crmarena_gym.tools._signature import _STR_ONLY

__all__ = [
    "DATETIME_FORMAT",
    "ToolInputError",
    "add_months",
    "are_ids_of",
    "clean_records",
    "format_datetime",
    "is_id_of",
    "parse_date_argument",
    "parse_datetime_argument",
    "parse_row_datetime",
    "require_fields",
    "require_id",
    "require_ids",
    "row_datetime",
    "soql_datetime",
    "soql_in",
    "soql_string",
]

#: The format of every datetime argument: ``2023-01-01T00:00:00Z`` (UTC).
DATETIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_ARG_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_ARG_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# Datetimes as rows carry them: the org's 2020-12-22T11:00:00.000+0000, or the argument format.
_ROW_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:?\d{2})?$")
_ROW_DATETIME_CHARS = len("2020-12-22T11:00:00.000000+00:00\n")
_REPR_LIMIT = 80


class ToolInputError(Exception):
    """Bad input found inside a tool; the tool returns ``"Error: " + message`` instead of raising."""


def _quote(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


def parse_datetime_argument(value: str, name: str) -> dt.datetime:
    """A ``YYYY-MM-DDTHH:MM:SSZ`` argument as a naive UTC datetime.

    Raises:
        ToolInputError: The text is not in that format or names no real moment (month 13).

    Example:
        >>> parse_datetime_argument("2023-01-31T00:00:00Z", "end_date")
        datetime.datetime(2023, 1, 31, 0, 0)
    """
    parsed = _argument_datetime(value) if len(value) <= len("2023-01-31T00:00:00Z\n") else None
    if parsed is None:
        raise ToolInputError(f"{name} must be a UTC datetime in the format YYYY-MM-DDTHH:MM:SSZ, got {_quote(value)}")
    return parsed


# Windows are given again and again (each instance's period, to several tools): the answers are kept.
@functools.lru_cache(maxsize=4096)
def _argument_datetime(value: str) -> dt.datetime | None:
    if _ARG_DATETIME_RE.match(value):
        try:
            return dt.datetime.strptime(value, DATETIME_FORMAT)
        except ValueError:
            pass
    return None


def parse_date_argument(value: str, name: str) -> dt.date:
    """A date argument given as ``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM:SSZ`` (the time is ignored).

    Raises:
        ToolInputError: Neither format, or no such day.
    """
    if _ARG_DATE_RE.match(value):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    elif _ARG_DATETIME_RE.match(value):
        try:
            return dt.datetime.strptime(value, DATETIME_FORMAT).date()
        except ValueError:
            pass
    raise ToolInputError(f"{name} must be a date YYYY-MM-DD or a datetime YYYY-MM-DDTHH:MM:SSZ, got {_quote(value)}")


def parse_row_datetime(value: Any, where: str) -> dt.datetime:
    """A datetime value of a record (``2020-12-22T11:00:00.000+0000``) as a naive UTC datetime.

    The argument format (``...Z``) and ISO offsets are accepted too; a value without an offset is
    taken as UTC, the org's only time zone.

    Raises:
        ToolInputError: The value is not a datetime string.
    """
    parsed = row_datetime(value)
    if parsed is None:
        raise ToolInputError(f"{where} must be a datetime like 2020-12-22T11:00:00.000+0000, got {_quote(value)}")
    return parsed


def row_datetime(value: Any) -> dt.datetime | None:
    """:func:`parse_row_datetime`, None for a value that is no datetime (for callers that write the message
    themselves, and only when one fails).

    Example:
        >>> row_datetime("2020-12-22T11:00:00.000+0000"), row_datetime(3)
        (datetime.datetime(2020, 12, 22, 11, 0), None)
    """
    # No datetime is longer (the pattern's longest, with a newline its ``$`` lets through): a longer text is
    # none, and is not kept by the cache.
    if not isinstance(value, str) or len(value) > _ROW_DATETIME_CHARS:
        return None
    return _row_datetime(value)


# Records' datetimes are parsed again each time a result is handed back to a tool: the answers are kept
# (datetimes are immutable).
@functools.lru_cache(maxsize=16384)
def _row_datetime(value: str) -> dt.datetime | None:
    if not _ROW_DATETIME_RE.match(value):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed


def format_datetime(value: dt.datetime) -> str:
    """A naive UTC datetime in the argument format.

    Example:
        >>> format_datetime(dt.datetime(2020, 2, 29, 8, 30))
        '2020-02-29T08:30:00Z'
    """
    if type(value) is dt.datetime and value.tzinfo is None and value.year >= 1000:
        return value.isoformat(timespec="seconds") + "Z"  # strftime's text, several times faster
    return value.strftime(DATETIME_FORMAT) if value.year >= 1000 else value.isoformat() + "Z"


def to_argument_datetime(value: str | dt.date) -> str:
    """A stored datetime or date, or a date/datetime object, in the tools' argument format.

    This is how callers that read the org's values or task parameters (oracles, candidate generators)
    pass them back to the tools. A date is taken at midnight UTC.

    Raises:
        ToolInputError: The text is neither a stored datetime nor a ``YYYY-MM-DD`` date.

    Example:
        >>> to_argument_datetime("2021-03-01T08:30:00.000+0000"), to_argument_datetime("2021-03-01")
        ('2021-03-01T08:30:00Z', '2021-03-01T00:00:00Z')
    """
    if isinstance(value, str) and _ARG_DATE_RE.match(value.strip()):
        value = parse_date_argument(value.strip(), "date")
    if isinstance(value, dt.datetime):
        return format_datetime(value)
    if isinstance(value, dt.date):
        return format_datetime(dt.datetime(value.year, value.month, value.day))
    return format_datetime(parse_row_datetime(value.strip(), "datetime"))


def add_months(value: dt.datetime, months: int) -> dt.datetime:
    """``value`` moved by ``months`` calendar months, the day clamped to the target month's end.

    Example:
        >>> add_months(dt.datetime(2024, 3, 31, 12), -1)
        datetime.datetime(2024, 2, 29, 12, 0)
    """
    index = value.year * 12 + (value.month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    if not dt.MINYEAR <= year <= dt.MAXYEAR:
        raise ToolInputError(f"moving {format_datetime(value)} by {months} months leaves the calendar")
    day = min(value.day, calendar.monthrange(year, month)[1])
    return value.replace(year=year, month=month, day=day)


def soql_string(value: str) -> str:
    """A SOQL string literal (quotes and backslashes escaped).

    Example:
        >>> print(soql_string("Women's"))
        'Women\\'s'
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def soql_datetime(value: dt.datetime) -> str:
    """An unquoted SOQL datetime literal."""
    return format_datetime(value)


def soql_in(values: Iterable[str]) -> str:
    """``('a', 'b')`` for a SOQL ``IN`` list (the caller makes sure it is not empty).

    Example:
        >>> print(soql_in(["005Ws000001xadBIAQ", "it's"]))
        ('005Ws000001xadBIAQ', 'it\\'s')
    """
    values = list(values)
    if all(map(str.isalnum, values)):  # ids: nothing to escape, one join
        return "('" + "', '".join(values) + "')"
    return "(" + ", ".join(soql_string(v) for v in values) + ")"


def require_id(value: str, name: str, object_name: str | None = None) -> str:
    """Check that ``value`` is a Salesforce record id (of ``object_name``, when given).

    The key prefix is checked only for objects whose prefix is fixed by Salesforce or the org's
    schema; a custom object's prefix can differ between orgs, so for it only the id's form is checked.

    Raises:
        ToolInputError: Not a well-formed id, or the id of another object.

    Example:
        >>> require_id("005Ws000001xadBIAQ", "agent_ids item 0", "User")
        '005Ws000001xadBIAQ'
    """
    problem = _id_problem(value, object_name)
    if problem is not None:
        raise ToolInputError(f"{name} {problem}")
    return value


def require_ids(values: Sequence[str], name: str, object_name: str | None = None) -> list[str]:
    """:func:`require_id` on every item of a list; duplicates are dropped, order kept."""
    if not are_ids_of(values, object_name):
        for i, v in enumerate(values):
            if not is_id_of(v, object_name):
                require_id(v, f"{name} item {i}", object_name)  # raises, naming the item
    return list(dict.fromkeys(values))


def are_ids_of(values: Iterable[Any], object_name: str | None = None) -> bool:
    """Whether :func:`require_id` accepts every value (a list of ids pasted back is checked at C speed once
    its ids have been seen).

    Example:
        >>> are_ids_of(["005Ws000001xadBIAQ", "005Ws000001xadBIAQ"], "User"), are_ids_of(["005Ws000001xadBIAQ", 3])
        (True, False)
    """
    values = values if isinstance(values, list | tuple) else list(values)
    seen = _ACCEPTED_IDS.get(object_name)
    if seen is not None and _STR_ONLY.issuperset(map(type, values)) and seen.issuperset(values):
        return True
    if not all(map(is_id_of, values, itertools.repeat(object_name))):
        return False
    if seen is None or len(seen) > _ACCEPTED_IDS_KEPT:  # bounded: forget them all and start again
        seen = _ACCEPTED_IDS[object_name] = set()
    seen.update(v for v in values if type(v) is str)
    return True


class _AcceptedIds(dict[str | None, set[str]]):
    """Per object name, ids that passed the check (the verdict depends on the text and the object alone)."""

    def cache_clear(self) -> None:
        """Forget them all (as ``functools.lru_cache`` does)."""
        self.clear()


_ACCEPTED_IDS = _AcceptedIds()
_ACCEPTED_IDS_KEPT = 65536


def is_id_of(value: Any, object_name: str | None = None) -> bool:
    """Whether :func:`require_id` accepts ``value`` (for callers that name the argument only when it fails).

    Example:
        >>> is_id_of("005Ws000001xadBIAQ", "User"), is_id_of("005Ws000001xadBIAQ", "Case"), is_id_of(None)
        (True, False, False)
    """
    return _id_problem(value, object_name) is None


def _id_problem(value: Any, object_name: str | None) -> str | None:
    """None for an id (of ``object_name``, when given); else what is wrong with it, after the argument's name."""
    if not isinstance(value, str) or len(value) > 18:  # not an id, and not worth keeping in the cache
        return _malformed_id(value)
    return _text_id_problem(value, object_name)


def _malformed_id(value: Any) -> str:
    return f"must be a 15- or 18-character Salesforce id, got {_quote(value)}"


# Tools check the same ids again and again (agents, cases pasted back): the verdicts are kept, and the
# message naming the argument is only written for an id that fails.
@functools.lru_cache(maxsize=16384)
def _text_id_problem(value: str, object_name: str | None) -> str | None:
    if not is_valid_id(value):
        return _malformed_id(value)
    if object_name is not None and not object_name.endswith("__c"):
        expected = get_object(object_name)
        actual = object_for_id(value)
        if expected is not None and actual is not expected:
            what = f"a {actual.name} id" if actual is not None else f"an id with the unknown prefix {value[:3]!r}"
            return f"must be a {object_name} id (prefix {expected.key_prefix}), got {what}: {value!r}"
    return None


def require_fields(rows: Sequence[Mapping[str, Any]], name: str, fields: Sequence[str]) -> None:
    """Check that every row of a pasted-back result carries the fields a tool reads.

    Raises:
        ToolInputError: A row lacks one of ``fields``; the message names the row and its fields.
    """
    try:  # every row has every field: decided at C speed; else the rows are gone through for the message
        if all(all(map(operator.contains, rows, itertools.repeat(f))) for f in fields):
            return
    except TypeError:  # a row that is no mapping: the loop below meets it in its turn
        pass
    for i, row in enumerate(rows):
        for f in fields:
            if f not in row:
                has = ", ".join(map(str, row)) or "none"
                raise ToolInputError(
                    f"{name} item {i} has no {f!r} field (its fields: {has}); each item needs {', '.join(fields)}"
                )


def clean_records(records: Sequence[Mapping[str, Any]], *, drop_null_columns: bool = True) -> list[dict[str, Any]]:
    """Result rows as the paper shows them: without ``attributes``, without all-null columns.

    Each row loses its own ``attributes`` key; parent records selected through a relationship stay
    nested as the org returned them. A column that is null in every row is dropped from all rows.

    Example:
        >>> clean_records([{"attributes": {"type": "Case"}, "Id": "500x", "ClosedDate": None}])
        [{'Id': '500x'}]
    """
    rows = [{k: v for k, v in r.items() if k != "attributes"} for r in records]
    if drop_null_columns and rows:
        columns = dict.fromkeys(k for r in rows for k in r)
        empty = {c for c in columns if all(r.get(c) is None for r in rows)}
        rows = [{k: v for k, v in r.items() if k not in empty} for r in rows]
    return rows
