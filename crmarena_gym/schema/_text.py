"""The schema as text, for prompts and docs."""

from __future__ import annotations

from crmarena_gym.schema._kinds import DEFAULT_KIND, org_schema


def schema_text(*, include_types: bool = True, kind: str = DEFAULT_KIND) -> str:
    """Describe every object and field of an org kind, one line per field, for an agent's prompt.

    The standard fields the original dump lacks (``Field.extra``: ``CaseNumber``, ``IsDeleted`` ...) are
    left out, as in the paper's schema; an object's child relationships, the names a parent-to-child
    subquery selects from, close its entry.

    Args:
        include_types: Whether to show each field's type (and a reference's target) in brackets.
        kind: The org kind (``service``, the default: CRMArena's 16 objects; ``b2b`` or ``b2c``: Pro's 27).

    Raises:
        ValueError: ``kind`` is not an org kind.

    Example:
        >>> print(schema_text().splitlines()[0])
        User: A service agent who works cases
        >>> print(schema_text(kind="b2b").splitlines()[0])
        User: An employee: a sales representative who works leads and opportunities, or a service agent
    """
    return org_schema(kind).text(include_types=include_types)
