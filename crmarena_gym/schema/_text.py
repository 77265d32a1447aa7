"""The schema as text, for prompts and docs."""

from __future__ import annotations

from crmarena_gym.schema._objects import OBJECTS, child_relationships
from crmarena_gym.schema._types import FieldType


def schema_text(*, include_types: bool = True) -> str:
    """Describe every object and field, one line per field, for an agent's prompt.

    The standard fields the original dump lacks (``Field.extra``: ``CaseNumber``, ``IsDeleted`` ...) are
    left out, as in the paper's schema; an object's child relationships, the names a parent-to-child
    subquery selects from, close its entry.

    Args:
        include_types: Whether to show each field's type (and a reference's target) in brackets.

    Example:
        >>> print(schema_text().splitlines()[0])
        User: A service agent who works cases
    """
    lines: list[str] = []
    for obj in OBJECTS:
        lines.append(f"{obj.name}: {obj.description}")
        for f in obj.fields:
            if f.extra:
                continue
            kind = ""
            if include_types:
                if f.type is FieldType.REFERENCE:
                    kind = f" [reference to {f.reference_to}; parent fields via {f.relationship_name}.<field>]"
                elif f.type is FieldType.PICKLIST and len(f.picklist_values) > 1:
                    kind = f" [picklist: {', '.join(f.picklist_values)}]"
                elif f.type is FieldType.LONG_TEXT:
                    kind = " [long text: cannot be filtered, grouped or sorted]"
                else:
                    kind = f" [{f.type.value}]"
            lines.append(f"  - {f.name}{kind}: {f.description}")
        # Only children among the 16 objects: the empty standard ones (Opportunity ...) stay out, as their objects do.
        children = [c for c in child_relationships(obj) if c[1] in OBJECTS]
        if children:
            listed = ", ".join(f"{name} ({child.name}.{f.name})" for name, child, f in children)
            lines.append(f"  child relationships, for (SELECT ... FROM <name>) subqueries: {listed}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
