"""The tool schemas a model is shown, generated once for every path (evaluation and the trainers).

:func:`chat_tool_schemas` turns the environment's tool schemas (``info["tools"]``) into the form every
chat path sends: OpenAI's ``{"type": "function", "function": {name, description, parameters}}`` with
exactly the keys, and in the order, that ``transformers.utils.get_json_schema`` writes for a Python
function. TRL (and any trainer that renders tools from Python callables) derives its schemas from methods
with that function; :func:`tool_method_parts` gives the signature, annotations and docstring from which
``get_json_schema`` reproduces a chat schema exactly, so that a model is trained on the tool text it is
evaluated with. The one thing dropped from the environment's schemas is the top-level
``"additionalProperties": false`` (no Python signature can express it; the environment refuses unknown
arguments all the same).
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Literal

__all__ = ["SchemaError", "chat_tool_schemas", "parse_text_tool_calls", "tool_method_parts"]

_SCALARS: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}
# Words that would end a docstring's description or argument early when transformers parses it.
_DOC_SECTIONS = re.compile(r"(^|\n)\s*(Args|Returns|Raises):", re.IGNORECASE)
# Hermes-style tool calls in a model's text (the format of Qwen's and most open models' chat templates).
_TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


class SchemaError(ValueError):
    """A tool schema that a Python signature cannot reproduce exactly."""


def _property(spec: dict[str, Any]) -> dict[str, Any]:
    """A parameter's schema in get_json_schema's key order: the type part, then the description."""
    out = {k: v for k, v in spec.items() if k != "description"}
    if "description" in spec:
        out["description"] = spec["description"]
    return out


def chat_tool_schemas(tools: Any) -> list[dict[str, Any]]:
    """The tool schemas every chat path shows the model, from the environment's ``info["tools"]``.

    Sorted by name: TRL lists an environment class's methods by name, so every path shows them so.

    Example:
        >>> env_schema = {"type": "function", "function": {"name": "get_period", "description": "A period.",
        ...     "parameters": {"type": "object", "properties": {"year": {"description": "The year.",
        ...     "type": "integer"}}, "required": ["year"], "additionalProperties": False}}}
        >>> shown = chat_tool_schemas([env_schema])[0]["function"]["parameters"]
        >>> shown["properties"], shown["required"], "additionalProperties" in shown
        ({'year': {'type': 'integer', 'description': 'The year.'}}, ['year'], False)
    """
    schemas = []
    for tool in tools or ():
        function = tool["function"]
        parameters = function.get("parameters") or {}
        properties = {name: _property(spec) for name, spec in (parameters.get("properties") or {}).items()}
        shown: dict[str, Any] = {"type": "object", "properties": properties}
        if parameters.get("required"):
            shown["required"] = list(parameters["required"])
        shown_function = {"name": function["name"], "description": function.get("description", ""), "parameters": shown}
        schemas.append({"type": "function", "function": shown_function})
    return sorted(schemas, key=lambda schema: schema["function"]["name"])


def _hint(spec: dict[str, Any], where: str) -> Any:
    """The Python type hint that get_json_schema turns into ``spec`` (its description aside)."""
    kind = spec.get("type")
    extra = set(spec) - {"type", "description", "enum", "items", "additionalProperties"}
    if extra:
        raise SchemaError(f"{where}: a Python signature cannot express the schema keys {sorted(extra)}")
    if "enum" in spec:
        values = tuple(spec["enum"])
        if not values or kind != "string" or not all(isinstance(v, str) for v in values):
            raise SchemaError(f"{where}: only an enum of strings is supported")
        return Literal[values]  # type: ignore[valid-type]
    if kind in _SCALARS:
        if set(spec) - {"type", "description"}:
            raise SchemaError(f"{where}: a {kind} takes no other keys")
        return _SCALARS[kind]
    if kind == "array":
        return list[_hint(spec["items"], where)] if "items" in spec else list  # type: ignore[misc]
    if kind == "object":
        if "additionalProperties" in spec:
            return dict[str, _hint(spec["additionalProperties"], where)]  # type: ignore[misc]
        return dict
    raise SchemaError(f"{where}: unsupported schema type {kind!r}")


def _one_line(text: str, where: str) -> str:
    if "\n" in text or text != text.strip() or _DOC_SECTIONS.search(text) or re.search(r"\(choices:", text, re.I):
        raise SchemaError(f"{where}: the description must be one line without a docstring section word: {text!r}")
    return text


def tool_method_parts(schema: dict[str, Any]) -> tuple[inspect.Signature, dict[str, Any], str]:
    """The signature (``self`` first), annotations and Google-style docstring of a method whose
    ``get_json_schema`` is exactly ``schema`` (one of :func:`chat_tool_schemas`).

    No return annotation: get_json_schema would add a ``return`` entry the chat schema does not have.

    Raises:
        SchemaError: The schema holds something a signature cannot express.

    Example:
        >>> schema = chat_tool_schemas([{"function": {"name": "get_period", "description": "A period.",
        ...     "parameters": {"properties": {"year": {"type": "integer", "description": "The year."}},
        ...     "required": ["year"]}}}])[0]
        >>> signature, annotations, doc = tool_method_parts(schema)
        >>> str(signature), doc
        ('(self, *, year: int)', 'A period.\\n\\nArgs:\\n    year: The year.')
    """
    function = schema["function"]
    name = function["name"]
    parameters = function["parameters"]
    required = set(parameters.get("required") or ())
    signature_parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = []
    for argument, spec in parameters["properties"].items():
        hint = _hint(spec, f"{name}({argument})")
        default = inspect.Parameter.empty if argument in required else None
        signature_parameters.append(
            inspect.Parameter(argument, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint)
        )
        annotations[argument] = hint
        lines.append(f"    {argument}: {_one_line(spec.get('description', ''), f'{name}({argument})')}")
    doc = _one_line(function["description"], name)
    if lines:
        doc += "\n\nArgs:\n" + "\n".join(lines)
    return inspect.Signature(signature_parameters), annotations, doc


def parse_text_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """The content and the tool calls of a reply written as text with Hermes-style ``<tool_call>`` blocks.

    Each block holds ``{"name": ..., "arguments": {...}}``; a block that is not such JSON becomes a call
    with an empty name and the block's text as its arguments, which the environment answers with a
    ``FORMAT_ERROR``. The content is the text before the first block, stripped.

    Example:
        >>> parse_text_tool_calls('Look it up.\\n<tool_call>\\n{"name": "get_issues", "arguments": {}}\\n</tool_call>')
        ('Look it up.', [{'name': 'get_issues', 'arguments': {}}])
        >>> parse_text_tool_calls("submit OR")
        ('submit OR', [])
    """
    import json

    blocks = list(_TOOL_CALL_BLOCK.finditer(text))
    if not blocks:
        return text.strip(), []
    calls: list[dict[str, Any]] = []
    for block in blocks:
        body = block.group(1)
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, RecursionError):
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("name"), str) and payload["name"]:
            calls.append({"name": payload["name"], "arguments": payload.get("arguments", {})})
        else:
            calls.append({"name": "", "arguments": body})
    return text[: blocks[0].start()].strip(), calls
