"""The reactive oracle: a perfect but honest agent, the reference policy for fault injection.

The replaying oracle (:class:`~crmarena_gym.policies.OraclePolicy`) solves the instance against the org
before the first step and hands out the recorded calls, so it scores 1.0 whatever the environment shows it.
The reactive oracle runs the same task solvers (:func:`~crmarena_gym.tasks.run_solver`), but each tool call
is an action whose result it reads back from the observation it actually received: a dropped, truncated or
corrupted result flows into its next calls and its answer, as it would for any agent. It retries a call
whose result came back as a transient error, or empty (a lost result looks empty: it asks once more), as
long as the turn budget allows, and always keeps its last turn to submit. A request refused because the
session expired (``INVALID_SESSION_ID``) is re-issued (the client signs in again; not counted as a retry);
one refused by the request limit (``REQUEST_LIMIT_EXCEEDED``) is not repeated: it submits what it has.

In a conversation (an interactive environment, whose privileged ``info["withheld"]`` names the criteria
the user holds back) it first asks for each missing criterion, one question per turn (the question of
:data:`~crmarena_gym.tasks.ASKING`), reads the user's reply, and only then solves; it gives its answer with
``respond`` (the user ends the conversation on it) instead of ``submit``.

In act mode (``info["answer_mode"] == "act"``) the answer it worked out is made, not submitted: the instance's
act plan for that answer (as the replaying oracle plans it, never from the gold) gives the write calls, one per
turn, then ``submit done`` (or the answer itself where the task grades one beside the change: the article a
quote breaks). A wrong answer makes a wrong change; an answer no change stands for, or a refused write, ends
the work at once with the submission, and the last turn is always kept for it. Where the question's matter is
in a set-up record rather than in the question (a new case's subject and description, a new lead's region), it
first reads each such record by the Id and fields the environment names (``info["setup"]``, as the act plan
declares them), as an agent would, and solves with what it read, never with the hidden values those fields hold.
"""

from __future__ import annotations

import ast
import json
from typing import Any

import gymnasium as gym

from crmarena_gym.envs import QUERY_OUTPUT_PREFIX
from crmarena_gym.policies._base import PolicyError
from crmarena_gym.policies._simple import OraclePolicy, episode_instance
from crmarena_gym.tasks import (
    CASE_TEXT_READS,
    NONE_ANSWER,
    OracleError,
    SchemaNames,
    TaskInstance,
    ToolCall,
    run_solver,
)
from crmarena_gym.wrappers import INVALID_SESSION_ID, REQUEST_LIMIT_EXCEEDED, TRANSIENT_ERROR, TurnLimit

__all__ = ["ReactiveOraclePolicy"]

_TRANSIENT_CODE = TRANSIENT_ERROR.split(":", 1)[0]  # SERVER_UNAVAILABLE, as ApiFaults' 503s
_EXPIRED_CODE = INVALID_SESSION_ID[0]
_LIMIT_CODE = REQUEST_LIMIT_EXCEEDED[0]
# Shapes a corrupted or lost result can give the solvers: they then cannot work the answer out.
_SOLVER_FAILURES = (TypeError, KeyError, AttributeError, ValueError, IndexError)


class _NeedCall(Exception):
    """The solver needs the result of a call it has not seen yet."""

    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        super().__init__(name)
        self.call = ToolCall(name, arguments)


class _Replay:
    """Answers a solver's calls with the results received so far; stops it at the first new call."""

    def __init__(self, results: list[tuple[ToolCall, Any]]) -> None:
        self.results = results
        self.position = 0
        self.notes: list[str] = []

    def __call__(self, name: str, **arguments: Any) -> Any:
        if self.position == len(self.results):
            raise _NeedCall(name, arguments)
        call, result = self.results[self.position]
        if (call.name, call.arguments) != (name, arguments):  # the solvers are deterministic
            raise PolicyError(f"the reactive oracle's solver asked for {name}() where it had called {call.name}()")
        self.position += 1
        return result

    def contradicted(self, message: str) -> None:
        self.notes.append(message)


def _turn_budget(env: Any) -> int | None:
    """The fewest turns any limit in the wrapper stack allows (Gymnasium's TimeLimit, our TurnLimit)."""
    limits = []
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            limits.append(env._max_episode_steps)
        if isinstance(env, TurnLimit):
            limits.append(env.max_turns)
        env = env.env
    return min(limits) if limits else None


class ReactiveOraclePolicy(OraclePolicy):
    """Solves each instance from the observations it receives, one tool call per turn.

    It knows what the question asks (the instance's hidden parameters, as a perfect reader of the question would; a
    new case's issue and product it reads off the case's text and the results naming them, a described purchase's
    search words and day off the question and today's date in its context, a policy violation off the replies and
    the articles' text it received, a knowledge answer off the found articles' text), never the gold answer
    or the org's data: every value it uses comes from an observation. A call whose result comes back as a transient
    error is retried; one whose result is empty is asked once more (a result lost by the environment looks empty).
    When a result cannot be read as the tool's answer (a damaged one), a function answers with an error, or a single
    turn is left, it submits what it has, ``None`` if nothing. What it did at each step is in :meth:`step_details`.

    Like :class:`OraclePolicy` it needs a privileged environment with the task functions, and only generated
    instances (the published ones have no hidden parameters). It asks for the ``flex`` toolset (the functions and
    SOQL): in act mode the matter of the question is in a set-up record (a new case's text), which no task function
    reads; an environment without SOQL leaves it without that matter (it then routes nothing, as any agent).

    Args:
        max_retries: How many times one call is repeated after a transient error (within the turn budget).

    Example:
        Every result lost to a transient error: the call is retried, then the answer is None.

        >>> import pathlib, tempfile
        >>> import gymnasium as gym
        >>> from crmarena_gym.datagen import generate_org
        >>> from crmarena_gym.tasks import generate_tasks
        >>> from crmarena_gym.wrappers import ToolResultDropout
        >>> org = pathlib.Path(tempfile.mkdtemp()) / "org.sqlite"
        >>> _ = generate_org(org, seed=0, scale=0.2)
        >>> made = gym.make("CRMArena-v0", org=org, tasks=generate_tasks(org, seed=0, per_task=1, tasks=["TII"]),
        ...                 toolset="functions", privileged=True)
        >>> env = ToolResultDropout(made, p=1.0, mode="error")
        >>> policy = ReactiveOraclePolicy(max_retries=1)
        >>> policy.attach(env)
        >>> observation, info = env.reset(seed=0)
        >>> policy.reset(observation, info)
        >>> actions, notes = [], []
        >>> while not actions or '"submit"' not in actions[-1]:
        ...     actions.append(policy.act(observation))
        ...     notes.append(policy.step_details().get("note"))
        ...     observation = env.step(actions[-1])[0]
        >>> actions[0] == actions[1], notes[1]
        (True, 'get_start_date() answered a transient error: retry 1')
        >>> actions[-1]
        '{"name": "submit", "arguments": {"content": "None"}}'
    """

    toolset = "flex"  # the task functions, and SOQL for the set-up records act mode leaves to be read

    def __init__(self, max_retries: int = 3) -> None:
        super().__init__()
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        self.max_retries = max_retries
        self._budget: int | None = None
        self._format = "python"
        self._instance: TaskInstance | None = None
        self._results: list[tuple[ToolCall, Any]] = []
        self._pending: ToolCall | None = None
        self._attempts = 0
        self._asked_again = False
        self._turn = 0
        self._note = ""
        self._to_ask: list[dict[str, Any]] = []
        self._conversation = False
        self._names: SchemaNames | None = None
        self._writes: list[ToolCall] | None = None  # act mode: the change still to make, once planned
        self._final = "done"  # act mode: what the submission carries after the change

    def attach(self, env: Any) -> None:
        """Check the toolset, and read the turn budget and the observation format off the environment."""
        super().attach(env)
        self._budget = _turn_budget(env)
        self._format = getattr(env.unwrapped, "observation_format", "python")

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        """Start an episode: nothing is solved ahead; the first call comes from :meth:`act`."""
        super(OraclePolicy, self).reset(observation, info, seed=seed)
        self._instance = episode_instance(observation, info)
        self._conversation = "withheld" in info
        self._to_ask = [dict(c) for c in info.get("withheld") or ()]
        if self._conversation and isinstance(info.get("full_query"), str):
            self._instance = self._instance.model_copy(update={"query": info["full_query"]})
        if isinstance(info.get("turns_left"), int):
            self._budget = info["turns_left"] if self._budget is None else min(self._budget, info["turns_left"])
        self._results, self._pending, self._attempts, self._asked_again, self._turn = [], None, 0, False, 0
        # The org's names, read off the schema text it shows: after schema drift its own SOQL uses them.
        self._names = SchemaNames.read(info.get("schema"), self._instance.kind)
        self._writes = None
        acting = info.get("answer_mode") == "act"
        if not acting:  # the question states the new case: its text is read there, never from the hidden values
            params = {k: v for k, v in self._instance.params.items() if k not in CASE_TEXT_READS.values()}
            self._instance = self._instance.model_copy(update={"params": params})
        self._act_setup = (self._instance, dict(info.get("records") or {})) if acting else None
        self._act_answers = bool(info.get("act_answers"))
        # Act mode: the set-up records whose fields the question leaves out, read first by the Id the environment
        # gives, in the org's names (info["setup"]); each read with the hidden parameters its fields stand for.
        self._reading = [
            (
                ToolCall(
                    "issue_soql_query",
                    {"query": f"SELECT {', '.join(r['fields'])} FROM {r['sobject']} WHERE Id = '{r['id']}'"},
                ),
                dict(r.get("params") or {}),
            )
            for r in (info.get("setup") or ())
            if acting and r.get("fields")
        ]

    def step_details(self) -> dict[str, Any]:
        """What the policy made of the last observation (a retry, a damaged result ...), if anything."""
        return {"note": self._note} if self._note else {}

    def act(self, observation: str) -> str:
        """The next call, worked out from every result received so far; ``submit`` once the answer is known."""
        if self._instance is None:
            raise PolicyError("the reactive oracle has no episode: call reset() first")
        self._turn += 1
        self._note = ""
        if self._writes is not None:
            return self._next_write(observation)
        if self._reading:
            read = self._read_record(observation)
            if read is not None:
                return read
        if self._to_ask and not (self._budget is not None and self._turn >= self._budget):
            criterion = self._to_ask.pop(0)
            self._note = f"asking the user for the {criterion['name']}"
            return ToolCall("respond", {"message": criterion["ask"]}).to_action()
        if self._pending is not None:
            retry = self._read(observation)
            if retry is not None:
                return retry
        if self._budget is not None and self._turn >= self._budget:
            self._note = self._note or "the last turn: submitting what is known"
            return self._submit(self._answer_so_far())
        if self._pending is None and self._note.startswith("gave up"):
            return self._submit(NONE_ANSWER)
        replay = _Replay(self._results)
        try:
            answer = run_solver(self._instance, replay, names=self._names)
        except _NeedCall as need:
            self._pending, self._attempts, self._asked_again = need.call, 0, False
            return need.call.to_action()
        except OracleError as err:
            raise PolicyError(f"the reactive oracle cannot solve instance {self._instance.idx}: {err}") from err
        except _SOLVER_FAILURES as err:
            self._note = f"the results received do not fit the task ({type(err).__name__}: {err}): submitting None"
            return self._submit(NONE_ANSWER)
        if replay.notes:
            self._note = "the results contradict the question: " + "; ".join(replay.notes)
        return self._submit(answer)

    def _read(self, observation: str) -> str | None:
        """Take the pending call's result from ``observation``; the same call again when it must be retried."""
        assert self._pending is not None
        call = self._pending
        text = observation.strip()
        last_turn = self._budget is not None and self._turn >= self._budget
        if text.startswith(_EXPIRED_CODE) and not last_turn:
            self._note = f"{call.name}() was refused: the session expired; signed in again and re-issued"
            return call.to_action()
        if text.startswith(_LIMIT_CODE):
            self._note = f"gave up: {call.name}() refused by the API request limit"
            self._pending = None
            return None
        if text.startswith(_TRANSIENT_CODE):
            if self._attempts < self.max_retries and not last_turn:
                self._attempts += 1
                self._note = f"{call.name}() answered a transient error: retry {self._attempts}"
                return call.to_action()
            self._note = f"gave up on {call.name}() after {self._attempts} retries"
            self._pending = None
            return None
        if text.startswith("Error:") or text.startswith("FORMAT_ERROR"):
            self._note = f"gave up: {call.name}() failed ({text[:200]})"
            self._pending = None
            return None
        if call.name in ("issue_soql_query", "issue_sosl_query"):  # a query's rows follow the output prefix
            text = text.removeprefix(QUERY_OUTPUT_PREFIX)
        try:
            value = json.loads(text) if self._format == "json" else ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            value = text  # a text result (a date) reads as itself
        if value in ([], {}, None, "") and not self._asked_again and not last_turn:
            self._asked_again = True
            self._note = f"{call.name}() answered nothing: asking once more (a lost result looks empty)"
            return call.to_action()
        self._results.append((call, value))
        self._pending = None
        return None

    def _answer_so_far(self) -> str:
        """The answer if the solver can finish with the results received, else ``None``."""
        try:
            return run_solver(self._instance, _Replay(self._results), names=self._names)  # type: ignore[arg-type]
        except (_NeedCall, OracleError, *_SOLVER_FAILURES):
            return NONE_ANSWER

    def _submit(self, answer: str) -> str:
        self._pending = None
        if self._act_setup is not None:
            return self._make(answer)
        if self._conversation:  # the answer goes to the user, who ends the conversation on it
            return ToolCall("respond", {"message": answer}).to_action()
        return ToolCall("submit", {"content": answer}).to_action()

    def _make(self, answer: str) -> str:
        """Act mode: the first write of the change ``answer`` stands for, else the submission at once."""
        self._final = answer if self._act_answers else "done"
        try:
            calls = self._changes_for(answer)  # clears the set-up: the change is planned once
        except PolicyError as err:  # an answer no change stands for (no agent found, say)
            self._note = f"no change to make: {err}"
            calls = []
        self._act_setup = None
        if not calls or (self._budget is not None and self._turn >= self._budget):
            if calls:
                self._note = "the last turn: no turn left to make the change; submitting"
            return ToolCall("submit", {"content": self._final}).to_action()
        self._writes = calls
        self._note = self._note or f"making the change for the answer {answer!r}"
        return self._writes.pop(0).to_action()

    def _next_write(self, observation: str) -> str:
        """Act mode: the next write of the change, or the submission once it is made or a write was refused."""
        assert self._writes is not None
        text = observation.strip()
        if text.startswith(("Error", "FORMAT_ERROR", _TRANSIENT_CODE, _EXPIRED_CODE, _LIMIT_CODE)):
            self._note = f"the write was refused ({text[:200]}): submitting"
            self._writes = []
        if self._writes and not (self._budget is not None and self._turn >= self._budget):
            return self._writes.pop(0).to_action()
        self._writes = None
        return ToolCall("submit", {"content": self._final}).to_action()

    def _read_record(self, observation: str) -> str | None:
        """Act mode: the read of the next set-up record, then what it answered taken into the instance the solver
        reads (None once every record is read, or a read failed: the solver then works without what is missing).

        The values read join the question (the text a solver matches, as the new case's) and stand for the hidden
        parameters the plan says the fields carry (the new lead's State is the region); a parameter whose field
        could not be read is dropped, never taken from the hidden ones.
        """
        assert self._reading and self._instance is not None
        call, params = self._reading[0]
        if self._pending is None:  # not yet asked: issue the read
            self._pending, self._attempts, self._asked_again = call, 0, False
            return call.to_action()
        retry = self._read(observation)
        if retry is not None:
            return retry
        self._reading.pop(0)
        rows: Any = self._results.pop()[1] if self._results and self._results[-1][0] == call else None
        row = rows[0] if isinstance(rows, list) and rows and isinstance(rows[0], dict) else {}
        if not row:
            self._note = self._note or "a set-up record could not be read: solving without its fields"
        texts = [str(v) for v in row.values() if v]
        known = {param: row[f] for f, param in params.items() if param is not None and row.get(f) not in (None, "")}
        kept = {k: v for k, v in self._instance.params.items() if k not in set(params.values()) - set(known)}
        self._instance = self._instance.model_copy(
            update={"query": " ".join([self._instance.query, *texts]), "params": {**kept, **known}}
        )
        if self._reading:  # the next record's read, on this turn
            return self._read_record(observation)
        return None
