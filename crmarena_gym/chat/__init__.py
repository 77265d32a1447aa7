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
    >>> chat.reply({"content": "Thought: I know it.\\nAction: submit OR"})
    'submit OR'
"""

from __future__ import annotations

from crmarena_gym.chat._episode import NOT_RUN, ChatEpisode, react_action, text_action, tool_call_action
from crmarena_gym.chat._prompt import FRAMEWORKS, QUERY_TOOLS, Framework, prompt_sha256, system_prompt, tool_names
from crmarena_gym.chat._session import (
    DEFAULT_TRAIN_SEED,
    SPLITS,
    ChatReset,
    ChatSession,
    ChatStep,
    EpisodeOverError,
    Split,
    chat_tasks,
    make_chat_env,
)

__all__ = [
    "DEFAULT_TRAIN_SEED",
    "FRAMEWORKS",
    "NOT_RUN",
    "QUERY_TOOLS",
    "SPLITS",
    "ChatEpisode",
    "ChatReset",
    "ChatSession",
    "ChatStep",
    "EpisodeOverError",
    "Framework",
    "Split",
    "chat_tasks",
    "make_chat_env",
    "prompt_sha256",
    "react_action",
    "system_prompt",
    "text_action",
    "tool_call_action",
    "tool_names",
]
