"""Function calling for verifiers: a multi-turn environment whose tools run in process, through the chat core.

verifiers' v1 API (0.3 and 0.4) gives a model tools only inside its harness program (MCP servers, a PEP 723
script resolved with uv at launch), never in the environment; verifiers 0.3.x also ships the v0 API
(``verifiers.legacy``: ``MultiTurnEnv``, whose ``env_response`` answers each model turn in process, with the
tool schemas passed to the model as ``tool_defs``). :class:`CRMArenaToolEnv` is that environment: the tool
schemas are the chat core's, each model reply is carried out by :meth:`ChatSession.reply
<crmarena_gym.chat.ChatSession.reply>` (every call in order, a text reply ending the episode unanswered, the
calls after ``submit`` answered "Not run"), its tool messages are the environment's answer, and the episode
ends when the core says it is over. verifiers 0.4 removed ``verifiers.legacy``, so there this path is refused
with a message saying why.
"""

from __future__ import annotations

from typing import Any

from crmarena_gym.chat import ChatSession

try:
    import verifiers.legacy as vfl
    from verifiers.legacy.utils.message_utils import normalize_messages
except ImportError:  # pragma: no cover - verifiers 0.4 has no v0 API
    vfl = None

#: Why function calling needs verifiers 0.3.x (the message of the refusal under verifiers 0.4).
NEEDS_LEGACY = (
    "function calling through verifiers needs verifiers 0.3.x (pip install 'verifiers>=0.3.1,<0.4'): verifiers "
    "0.4 runs a model's tool calls only inside its harness program (MCP servers; the harness is a PEP 723 script "
    "uv resolves at launch) and removed verifiers.legacy, whose MultiTurnEnv answers tool calls in process"
)


def legacy_available() -> bool:
    """Whether the installed verifiers has the v0 API this environment is built on (verifiers 0.3.x)."""
    return vfl is not None


def _assistant_message(message: Any) -> dict[str, Any]:
    """A verifiers assistant message as the chat core reads a reply (OpenAI's shape)."""
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in getattr(message, "tool_calls", None) or ()
    ]
    content = message.content
    if isinstance(content, list):  # content parts: the model's text is its text parts
        texts = [p.get("text") if isinstance(p, dict) else getattr(p, "text", None) for p in content]
        content = "".join(t for t in texts if isinstance(t, str))
    reply: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        reply["tool_calls"] = calls
    return reply


def _as_the_core_keeps_it(message: Any, kept: dict[str, Any]) -> None:
    """Rewrite verifiers' copy of a reply (in its history, sent back to the model) as the conversation keeps
    it: the core's tool-call ids (``call_0`` ... over the episode) and its JSON arguments, as evaluation
    shows the model."""
    calls = kept.get("tool_calls") or []
    for call, core in zip(getattr(message, "tool_calls", None) or (), calls, strict=True):
        call.id, call.arguments = core["id"], core["function"]["arguments"]


if vfl is not None:

    class CRMArenaToolEnv(vfl.MultiTurnEnv):
        """CRMArena with function calling, played in process: the chat core answers each model reply.

        Each row's ``info`` holds what :func:`~crmarena_gym.integrations.verifiers.session_for` needs (the
        org, split, toolset, framework ``fc`` ...), its ``task_id`` and ``max_turns``. The session lives in
        the rollout's state (``state["crmarena_session"]``); once the episode is over its record is
        ``state["crmarena_record"]`` and the reward (the shaped return) ``crmarena_reward``.
        """

        def __init__(self, *, tool_defs: list[dict[str, Any]], session_for: Any, **kwargs: Any) -> None:
            self._session_for = session_for
            rubric = vfl.Rubric(funcs=[self.crmarena_reward])
            # The core keeps the turn budget (max_turns per row); verifiers' own limit stays off.
            super().__init__(tool_defs=tool_defs, rubric=rubric, max_turns=-1, **kwargs)

        async def setup_state(self, state: Any) -> Any:
            info = state["info"]
            session: ChatSession = self._session_for(info)
            # A conversation's opening is the one the rows were built with (the scripted user's, seed 0).
            seed = 0 if info.get("user") else None
            session.reset(task_id=info["task_id"], max_turns=info["max_turns"], seed=seed)
            state["crmarena_session"] = session
            state["crmarena_record"] = None
            return state

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            session: ChatSession = state["crmarena_session"]
            before = len(session.messages)
            session.reply(_assistant_message(messages[-1]))
            _as_the_core_keeps_it(messages[-1], session.messages[before])
            answer = normalize_messages([dict(m) for m in session.messages[before + 1 :]], field_name="env_response")
            if session.done:
                state["crmarena_record"] = session.record
                state["final_env_response"] = answer
            return answer

        @vfl.cleanup
        async def end_episode(self, state: Any) -> None:
            """A rollout ended by verifiers first (an error, a timeout) stops the episode, so it has a record."""
            session: ChatSession | None = state.get("crmarena_session")
            if session is not None and not session.done:
                session.stop()
            if session is not None:
                state["crmarena_record"] = session.record

        async def crmarena_reward(self, state: Any, **kwargs: Any) -> float:
            """The episode's return (the score at the submission, less any shaping penalties)."""
            session: ChatSession | None = state.get("crmarena_session")
            return float(session.reward) if session is not None else 0.0
