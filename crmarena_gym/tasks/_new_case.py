"""A new case as a routing question states it: its subject and description lines, written and read back.

The generated routing questions (NCR), the user's reply that gives the case in a conversation, and every reader
of those texts (the oracle's solver, the RL agents' question parser) share these lines, so that what one writes
the others read.

Example:
    >>> text = "Who should take this case?\\n" + new_case_lines("Late parcel", "It has not come.")
    >>> read_new_case(text)
    ('Late parcel', 'It has not come.')
    >>> read_new_case("Who should take this case?")
    (None, None)
"""

from __future__ import annotations

import re

__all__ = ["new_case_lines", "read_new_case"]

# A line "- Subject: ..." or "- Description: ..." (the original's "- Case Subject:" too).
_LINES = {
    label: re.compile(rf"^- (?:Case )?{label}:[ \t]*(\S.*)$", re.MULTILINE) for label in ("Subject", "Description")
}


def new_case_lines(subject: str, description: str) -> str:
    """The lines that state a new case: ``- Subject: ...`` and ``- Description: ...``."""
    return f"- Subject: {subject}\n- Description: {description}"


def read_new_case(text: str) -> tuple[str | None, str | None]:
    """The subject and description of the first new case ``text`` states in :func:`new_case_lines`' form (the
    original's ``- Case Subject:`` too), each None where the text has no such line."""
    found = (pattern.search(text) for pattern in _LINES.values())
    subject, description = (match.group(1).strip() if match else None for match in found)
    return subject, description
