"""Salesforce-style error messages: the query excerpt, a caret and ``ERROR at Row:r:Column:c``."""

from __future__ import annotations

import re

from crmarena_gym.org._base import OrgError

# Salesforce shows a window of the offending line around the error, not the whole query.
_WINDOW = 40
_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with lone surrogates (which no encoder accepts) shown as U+FFFD, one for one."""
    return _SURROGATE.sub("\ufffd", text)


def locate(text: str, pos: int) -> tuple[int, int]:
    """The 1-based (row, column) of character offset ``pos`` in ``text``."""
    pos = max(0, min(pos, len(text)))
    row = text.count("\n", 0, pos) + 1
    line_start = text.rfind("\n", 0, pos) + 1
    return row, pos - line_start + 1


def positioned_message(text: str, pos: int | None, message: str) -> str:
    """``message`` prefixed with the excerpt, caret and position of ``pos``, as Salesforce does.

    Example:
        >>> print(positioned_message("SELECT Foo FROM Case", 7, "No such column 'Foo'"))
        <BLANKLINE>
        SELECT Foo FROM Case
               ^
        ERROR at Row:1:Column:8
        No such column 'Foo'
    """
    if pos is None:
        return message
    row, col = locate(text, pos)
    line = text.splitlines()[row - 1] if text.strip() else ""
    start = max(0, col - 1 - _WINDOW)
    end = min(len(line), col - 1 + _WINDOW)
    excerpt = printable(line[start:end])
    caret = " " * (col - 1 - start) + "^"
    return f"\n{excerpt}\n{caret}\nERROR at Row:{row}:Column:{col}\n{message}"


class SoqlError(OrgError):
    """An :class:`OrgError` raised while reading a query, with its position in the text."""

    def __init__(self, code: str, message: str, text: str | None = None, pos: int | None = None) -> None:
        message = printable(message)
        full = positioned_message(text, pos, message) if text is not None else message
        super().__init__(code, full)
        self.pos = pos
        self.short_message = message

    def __reduce__(self):  # pickles as the plain OrgError it presents itself as
        return (OrgError, (self.code, self.message))


def invalid_field(text: str, pos: int, field: str, entity: str) -> SoqlError:
    """Salesforce's INVALID_FIELD for an unknown field on an object."""
    return SoqlError(
        "INVALID_FIELD",
        f"No such column '{field}' on entity '{entity}'. If you are attempting to use a custom field, be sure to "
        "append the '__c' after the custom field name. Please reference your WSDL or the describe call for the "
        "appropriate names.",
        text,
        pos,
    )


def invalid_relationship(text: str, pos: int, name: str) -> SoqlError:
    """Salesforce's INVALID_FIELD for an unknown relationship in a field path."""
    return SoqlError(
        "INVALID_FIELD",
        f"Didn't understand relationship '{name}' in field path. If you are attempting to use a custom "
        "relationship, be sure to append the '__r' after the custom relationship name. Please reference your "
        "WSDL or the describe call for the appropriate names.",
        text,
        pos,
    )


def invalid_type(text: str, pos: int, name: str) -> SoqlError:
    """Salesforce's INVALID_TYPE for an unknown object."""
    return SoqlError(
        "INVALID_TYPE",
        f"sObject type '{name}' is not supported. If you are attempting to use a custom object, be sure to append "
        "the '__c' after the entity name. Please reference your WSDL or the describe call for the appropriate "
        "names.",
        text,
        pos,
    )


def malformed(text: str, pos: int | None, message: str) -> SoqlError:
    """A MALFORMED_QUERY at ``pos``."""
    return SoqlError("MALFORMED_QUERY", message, text, pos)
