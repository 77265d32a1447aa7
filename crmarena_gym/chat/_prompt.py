"""The system prompt of a CRMArena episode, in the Act, ReAct and function-calling flavours.

The prompts are our own. The system prompt gives the role (the task's persona), the org's objects and
fields with their descriptions (``info["schema"]``), how to act (the environment's action format in
the text flavours, the function-calling rule otherwise) and the rules: what the answer is and to
submit only it or ``None``. The query-language rule appears only when the toolset has a query tool; the
text flavours list the task functions (with their arguments) when the toolset has any, since they get
no tool schemas.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from crmarena_gym.tasks import get_task_spec

__all__ = ["FRAMEWORKS", "QUERY_TOOLS", "Framework", "prompt_sha256", "system_prompt", "tool_names"]

Framework = Literal["act", "react", "fc"]
#: The agent frameworks of the paper: Act, ReAct and function calling.
FRAMEWORKS: tuple[str, ...] = ("act", "react", "fc")
#: The general query tools (SOQL and SOSL).
QUERY_TOOLS = frozenset({"issue_soql_query", "issue_sosl_query"})

_ANSWER_KINDS = {
    "text": "a short text taken from the knowledge articles",
    "month": "the English name of a month (for example March)",
    "issue_id": "the Id of an Issue__c record",
    "user_id": "the Id of a User (an agent)",
    "product_id": "the Id of a Product2 record",
    "article_id": "the Id of a Knowledge__kav article",
    "state": "a two-letter US state code",
}

_FRAMEWORK_RULES = {
    "act": "Reply with the action alone: no explanation before or after it.",
    "react": (
        "Write every reply as two parts: first one line starting with 'Thought:' that says what you will do "
        "and why, then the action in tags, <execute>...</execute> or <submit>...</submit>."
    ),
    "fc": (
        "Work by calling the functions you are given; each result comes back to you. When you know the answer, "
        "call submit with it; that ends the task. A reply without a function call also ends the task, with no answer."
    ),
}
# Conversations (an interactive env's reset info has "user"): the person asking may leave details out.
_CONVERSATION_RULES = (
    "# The person you are helping\n"
    "They talk with you, and their first message may leave out details you need (a time period, a product, a "
    "threshold, a record). Ask them for what you lack with respond, one question per message; they know "
    "their request, nothing else. Give your answer with respond too: only the answer itself, or None when the "
    "question has no answer. They end the conversation once they have it."
)
_TEXT_TURN_RULE = "- One action per reply; you see its result before your next reply.\n"
_CALL_TURN_RULE = (
    "- Every function call of a reply is carried out, in order, and each uses one turn; calls after submit are "
    "not run.\n"
)
_QUERY_RULE = "- Queries are Salesforce SOQL or SOSL, not SQL: no SELECT *, no joins, no date arithmetic.\n"


def tool_names(tools: Any) -> set[str] | None:
    """The function names of a list of OpenAI tool schemas (``info["tools"]``), or None without a list.

    Example:
        >>> sorted(tool_names([{"type": "function", "function": {"name": "submit"}}]))
        ['submit']
        >>> tool_names(None) is None
        True
    """
    if not isinstance(tools, list | tuple):
        return None
    names = set()
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def _has_queries(info: dict[str, Any], framework: Framework) -> bool:
    names = tool_names(info.get("tools"))
    if names is None:  # no tool list: the text flavours play the query toolset, function calling does not
        return framework != "fc"
    return bool(names & QUERY_TOOLS)


def _function_list(info: dict[str, Any]) -> str:
    """The task functions of ``info["tools"]`` as text (for the text flavours, which get no tool schemas)."""
    lines = []
    for tool in info.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or function.get("name") in QUERY_TOOLS | {"submit"}:
            continue
        properties = (function.get("parameters") or {}).get("properties") or {}
        required = set((function.get("parameters") or {}).get("required") or ())
        arguments = ", ".join(
            f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}" for name, spec in properties.items()
        )
        lines.append(f"- {function['name']}({arguments}): {function.get('description', '')}")
    return "# Functions\nArguments marked ? are optional.\n" + "\n".join(lines) if lines else ""


def system_prompt(info: dict[str, Any], framework: Framework) -> str:
    """The system prompt for an episode, built from the environment's reset ``info``.

    Args:
        info: The reset ``info`` (``persona``, ``abbrev``, ``schema``, ``action_format``, ``tools``).
        framework: ``"act"``, ``"react"`` (text replies) or ``"fc"`` (native function calls).

    Example:
        >>> info = {"persona": "service manager", "abbrev": "HTU", "schema": "Case: a customer case",
        ...         "action_format": "Reply with exactly one action per turn: ..."}
        >>> text = system_prompt(info, "react")
        >>> text.splitlines()[0]
        "You are a service manager at a sportswear retailer, and you work in the company's Salesforce org."
        >>> "Case: a customer case" in text and "Thought:" in text and "None" in text
        True
        >>> "SOQL" in system_prompt({**info, "tools": [{"function": {"name": "get_cases"}}]}, "fc")
        False
    """
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
    persona = info.get("persona") or "customer service employee"
    kind = ""
    if info.get("role"):  # a CRMArena-Pro episode: the environment states the role and the answer's form
        opening = [str(info["role"])]
        answer_line = f"- {info['answer_rule']}\n" if info.get("answer_rule") else ""
    else:
        if info.get("abbrev"):
            kind = _ANSWER_KINDS.get(get_task_spec(info["abbrev"]).answer_kind, "")
        opening = [
            f"You are a {persona} at a sportswear retailer, and you work in the company's Salesforce org.",
            "A colleague asks you a question about the org's data. Look the facts up in the org, work out the "
            "answer, and submit it.",
        ]
        answer_line = f"- The answer is {kind}.\n" if kind else ""
    parts: list[str] = [
        *opening,
        "# The org's objects\nEvery object below is listed with its fields and what each field holds.\n\n"
        + str(info.get("schema", "")).strip(),
        "# How to act\n"
        + ("" if framework == "fc" else str(info.get("action_format", "")).strip() + "\n")
        + _FRAMEWORK_RULES[framework],
        *([] if framework == "fc" else [_function_list(info)]),
        *([_CONVERSATION_RULES] if info.get("user") else []),
        "# Rules\n"
        + (_TEXT_TURN_RULE if framework != "fc" else _CALL_TURN_RULE)
        + (_QUERY_RULE if _has_queries(info, framework) else "")
        + answer_line
        + "- Submit only the answer itself, with no words around it. When the question has no answer (it "
        "rests on a false premise, or nothing in the data fits), submit None.\n"
        "- Your turns are limited: submit as soon as you know the answer.",
    ]
    return "\n\n".join(part for part in parts if part)


def prompt_sha256(text: str) -> str:
    """The SHA-256 of a prompt (hex), the key a run records it under.

    Example:
        >>> prompt_sha256("abc")[:16]
        'ba7816bf8f01cfea'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
