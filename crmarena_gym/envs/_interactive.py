"""Interactive environments: the request arrives in pieces from a simulated user, who answers the agent.

CRMArena's nine tasks (``CRMArena-<ABBREV>-Interactive-v0``) and CRMArena-Pro's 22 categories on either org
(``CRMArena-Pro-B2B-<ABBREV>-Interactive-v0``, ``CRMArena-Pro-B2C-...``) play this way.

:class:`CRMArenaInteractiveEnv` is :class:`~crmarena_gym.envs.CRMArenaEnv` with a user in the loop. The first
observation is the user's opening (the goal, without the held-back criteria; see
:func:`~crmarena_gym.tasks.interactive_split`) with the context. The action ``respond <message>`` (or the
``respond`` tool, ``{"message": ...}``; CRMArena-Pro's ``<respond>...</respond>`` tags too) sends a message
to the user; the user's reply is the next observation. The episode ends:

- at the user's end marker: the message that drew it is the answer, scored as single-turn scores it;
- at a ``submit`` (scored as single-turn);
- when the user has answered ``max_user_turns`` messages without ending (reward 0, truncated), or at the
  registered agent-turn limit (every action is an agent turn; Gymnasium's ``TimeLimit`` truncates).

``info`` records ``agent_turns`` and ``user_turns`` at every step, the user's reply and the criteria it
revealed (``user_reply``, ``revealed``); at the end, the user's summary (``user``: kind, revealed criteria,
an LLM user's tokens and cost, apart from the agent's).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from crmarena_gym.envs._actions import parse_action
from crmarena_gym.envs._env import CRMArenaEnv
from crmarena_gym.envs._spaces import ActionText
from crmarena_gym.org import Org
from crmarena_gym.tasks import ASKING, InteractiveSplit, TaskInstance, interactive_split
from crmarena_gym.users import END_MARKER, UserSimulator, make_user

__all__ = ["DEFAULT_MAX_USER_TURNS", "RESPOND_TOOL", "CRMArenaInteractiveEnv"]

#: Pro's budget of user turns.
DEFAULT_MAX_USER_TURNS = 10
#: The ``respond`` tool's schema (function calling), in the form of the toolset's own schemas.
RESPOND_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "respond",
        "description": (
            "Send a message to the user you are helping: ask for a detail you lack, or give your answer "
            "(only the answer itself, or None when there is none). The user's reply comes back."
        ),
        "parameters": {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The message to the user."}},
            "required": ["message"],
            "additionalProperties": False,
        },
    },
}
_PLAIN_RESPOND = re.compile(r"^\s*respond\b[ \t]*:?[ \t]*(.*)$", re.DOTALL | re.IGNORECASE)
_TAG_RESPOND = re.compile(r"<respond>(.*?)(?:</respond>|$)", re.DOTALL | re.IGNORECASE)
_RESPOND_RULE = (
    "- respond <message>: send a message to the user (ask for a detail you lack, or give your answer: only the "
    "answer itself, or None); the user's reply comes back. The tags <respond>...</respond> work too."
)


def _respond_message(action: str) -> str | None:
    """The message of a text ``respond`` action, else None (an execute tag wins, as in Pro)."""
    if re.search(r"<execute>", action, re.IGNORECASE):
        return None
    tagged = _TAG_RESPOND.search(action)
    if tagged is not None:
        return tagged.group(1).strip()
    plain = _PLAIN_RESPOND.match(action)
    return plain.group(1).strip() if plain is not None else None


class CRMArenaInteractiveEnv(CRMArenaEnv):
    """A task played as a conversation with a simulated user (see the module docs).

    Args:
        task: A task abbreviation or name, or None for all of the suite's (the nine, or a Pro org's 22 with
            ``kind="b2b"`` or ``"b2c"``, as the ``CRMArena-Pro-*-Interactive-v0`` ids pass it).
        user: ``"scripted"`` (deterministic), ``"litellm:MODEL"``, or a user simulator.
        user_options: Options of an LLM user (``api_base``, ``completion_kwargs`` ...).
        max_user_turns: The user answers at most this many messages.
        **kwargs: As :class:`~crmarena_gym.envs.CRMArenaEnv`. Instances need their hidden parameters (generated ones).

    Example:
        >>> import gymnasium as gym
        >>> record = {"idx": 0, "task": "BRI", "query": "Which state? Return only the code.", "answer": "OR",
        ...     "metadata": {"required": "- Today's date: 2021-06-01"},
        ...     "params": {"today": "2021-06-01", "window": {"kind": "named", "quarter": 1, "year": 2021}}}
        >>> env = gym.make("CRMArena-BRI-Interactive-v0", org=getfixture("tiny_org"), tasks=[record])
        >>> obs, info = env.reset(seed=0)
        >>> said_window = lambda text: "Q1" in text or "first quarter" in text
        >>> said_window(obs), info["user"]["kind"]
        (False, 'scripted')
        >>> obs, reward, done, _, info = env.step("respond For which period?")
        >>> said_window(obs), info["revealed"], info["user_turns"]
        (True, ['window'], 1)
        >>> obs, reward, done, _, info = env.step("respond OR")
        >>> obs, reward, done, info["end_reason"]
        ('###STOP###', 1.0, True, 'user_stop')
    """

    def __init__(
        self,
        task: str | None = None,
        *,
        org: Org | str | os.PathLike[str] | None = None,
        tasks: str | os.PathLike[str] | Sequence[TaskInstance | Mapping[str, Any]] | Mapping[str, Any] | None = None,
        user: str | UserSimulator = "scripted",
        user_options: Mapping[str, Any] | None = None,
        max_user_turns: int = DEFAULT_MAX_USER_TURNS,
        **kwargs: Any,
    ) -> None:
        if isinstance(max_user_turns, bool) or not isinstance(max_user_turns, int) or max_user_turns < 1:
            raise ValueError(f"max_user_turns must be a positive integer, got {max_user_turns!r}")
        self.user: UserSimulator = make_user(user, **dict(user_options or {}))
        super().__init__(task, org=org, tasks=tasks, **kwargs)
        refused = []
        for instance in self.instances:
            try:
                interactive_split(instance)
            except ValueError as err:
                refused.append(str(err))
        if refused:
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            raise ValueError(f"these instances cannot be played as conversations: {refused[0]}{more}")
        self.max_user_turns = max_user_turns
        self._add_respond()
        self.split: InteractiveSplit | None = None
        self._user_turns = 0

    def _add_respond(self) -> None:
        self._tool_schemas = [*self._tool_schemas, RESPOND_TOOL]
        self._action_rules = self._action_rules + "\n" + _RESPOND_RULE
        rng = self.action_space.np_random
        examples = [*self._examples(), "respond For which period?", "<respond>Which product is it?</respond>"]
        self.action_space = ActionText(self.action_space.max_length, examples=examples, seed=rng)

    def restrict_tools(self, names: Sequence[str] = (), groups: Sequence[str] = ()) -> None:
        """As :meth:`CRMArenaEnv.restrict_tools`; ``respond`` stays (it is how the user is reached)."""
        if "respond" in names:
            raise ValueError("respond cannot be removed: it is how the agent talks with the user")
        super().restrict_tools(names, groups)
        self._add_respond()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start a conversation: the user's opening (with the context) is the first observation."""
        _observation, info = super().reset(seed=seed, options=options)
        instance = self.instance
        assert instance is not None
        user_seed = int(self.np_random.integers(2**31))
        self.split = split = interactive_split(instance, seed=user_seed)
        opening = self.user.start(instance, split, seed=user_seed)
        self._user_turns = 0
        shown = instance.model_copy(
            update={
                "query": opening.text,
                "metadata": instance.metadata.model_copy(update={"required": split.required}),
            }
        )
        observation = self._bound(self._first_observation(shown))
        self._last_observation = observation
        info["context"] = {"required": split.required, "optional": instance.metadata.optional}
        info["user"] = {"kind": self.user.kind, "opening": opening.text, "usage": opening.usage}
        info["max_user_turns"] = self.max_user_turns
        info["agent_turns"], info["user_turns"] = 0, 0
        if self.privileged:
            info["withheld"] = [
                {"name": c.name, "slots": list(c.slots), "ask": ASKING.get(c.name)} for c in split.criteria
            ]
            info["full_query"] = instance.query
        return observation, info

    def _act(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        message = _respond_message(action)
        if message is None:
            parsed = parse_action(action, functions=True)
            if parsed.kind == "call" and parsed.name == "respond":
                value = parsed.arguments.get("message")
                info = {"turn": self._turn, "action_kind": "respond", **self._turn_counts()}
                if not isinstance(value, str) or set(parsed.arguments) != {"message"}:
                    return self._observe(
                        "Error: respond() takes one argument 'message' with the text", info, error="INVALID_ARGUMENT"
                    )
                message = value
        if message is None:
            result = super()._act(action)
            result[4].update(self._turn_counts())
            return result
        return self._respond(message)

    def _respond(self, message: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        info: dict[str, Any] = {"turn": self._turn, "action_kind": "respond", "message": message}
        reply = self.user.reply(message)
        self._user_turns += 1
        info.update(self._turn_counts())
        info["user_reply"] = reply.text
        info["revealed"] = list(reply.revealed)
        if reply.usage:
            info["user_usage"] = reply.usage
        if reply.ended:
            observation, reward, _, _, info = self._submit(message, info)
            shown = f"{reply.text}\n{END_MARKER}" if reply.text else END_MARKER
            self._last_observation = shown
            info["user_reply"] = shown
            info["end_reason"] = "user_stop"
            return shown, reward, True, False, info
        if self._user_turns >= self.max_user_turns:
            self._done = True
            info["end_reason"] = "user_turns"
            info["user"] = self.user.summary()
            observation = self._bound(reply.text)
            self._last_observation = observation
            self._last_reward = 0.0
            return observation, 0.0, False, True, info
        return self._observe(reply.text, info)

    def _submit(self, answer: str, info: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = super()._submit(answer, info)
        result[4].update(self._turn_counts())
        result[4].setdefault("end_reason", "submitted")
        result[4]["user"] = self.user.summary()
        return result

    def _turn_counts(self) -> dict[str, int]:
        return {"agent_turns": self._turn, "user_turns": self._user_turns}
