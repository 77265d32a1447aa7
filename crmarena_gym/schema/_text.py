"""The schema as text, for prompts and docs."""

from __future__ import annotations

from crmarena_gym.schema._objects import OBJECTS
from crmarena_gym.schema._types import FieldType


def schema_text(*, include_types: bool = True) -> str:
    """Describe every object and field, one line per field, for an agent's prompt.

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
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
