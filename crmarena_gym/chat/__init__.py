"""The chat-episode core: a CRMArena episode as OpenAI-format messages and tool schemas.

Every LLM-facing part of crmarena-gym shares it: the litellm policy (evaluation) and the trainer
adapters (OpenEnv, TRL, SkyRL), so that a model is trained with the prompt it is evaluated with. It owns
the system prompt (:func:`system_prompt`: schema, context, action format; Act/ReAct text and
function-calling flavours), turns a model's tool call or text reply into an env action and the env's
observation into the next message (:class:`ChatEpisode`), and plays an environment as a conversation
(:class:`ChatSession`, over the instances of a split: :func:`chat_tasks`).

Example:
    >>> from crmarena_gym.chat import ChatEpisode
    >>> chat = ChatEpisode("react")
    >>> chat.start({"persona": "service agent", "schema": "", "action_format": ""})
    >>> chat.observe("Which state?")
    >>> chat.reply({"content": "Thought: I know it.\\nAction: submit OR"}).actions
    ('submit OR',)
"""

from __future__ import annotations

from crmarena_gym.chat._episode import (
    DELIVERED,
    NO_TOOL_CALL,
    NOT_RUN,
    ChatEpisode,
    Reply,
    react_action,
    read_text_reply,
    text_action,
    tool_call_action,
)
from crmarena_gym.chat._prompt import FRAMEWORKS, QUERY_TOOLS, Framework, prompt_sha256, system_prompt, tool_names
from crmarena_gym.chat._record import END_REASONS, RECORD_FIELDS, EpisodeRecorder, jsonable
from crmarena_gym.chat._rows import TOOL_CALLS_PER_REPLY, check_row_split, episode_rows, run_metadata
from crmarena_gym.chat._session import (
    DEFAULT_TRAIN_SEED,
    MALFORMED_ERRORS,
    SPLITS,
    ChatReset,
    ChatSession,
    ChatStep,
    EpisodeOverError,
    Shaping,
    Split,
    chat_tasks,
    make_chat_env,
)
from crmarena_gym.chat._tools import SchemaError, chat_tool_schemas, parse_text_tool_calls, tool_method_parts
from crmarena_gym.chat._training import MAX_SIBLING_ORGS, OrgRoutedEnv, instance_org, training_instances

__all__ = [
    "DEFAULT_TRAIN_SEED",
    "DELIVERED",
    "END_REASONS",
    "FRAMEWORKS",
    "MALFORMED_ERRORS",
    "MAX_SIBLING_ORGS",
    "NOT_RUN",
    "NO_TOOL_CALL",
    "QUERY_TOOLS",
    "RECORD_FIELDS",
    "SPLITS",
    "TOOL_CALLS_PER_REPLY",
    "ChatEpisode",
    "ChatReset",
    "ChatSession",
    "ChatStep",
    "EpisodeOverError",
    "EpisodeRecorder",
    "Framework",
    "OrgRoutedEnv",
    "Reply",
    "SchemaError",
    "Shaping",
    "Split",
    "chat_tasks",
    "chat_tool_schemas",
    "check_row_split",
    "episode_rows",
    "instance_org",
    "jsonable",
    "make_chat_env",
    "parse_text_tool_calls",
    "prompt_sha256",
    "react_action",
    "read_text_reply",
    "run_metadata",
    "system_prompt",
    "text_action",
    "tool_call_action",
    "tool_method_parts",
    "tool_names",
    "training_instances",
]
