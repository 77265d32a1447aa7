"""``CRMArenaEnv``: one CRMArena (or CRMArena-Pro) task instance per episode, as a text POMDP.

The agent sees the question and its context, acts by text (``execute <query>``, a function call, or
``submit <answer>``), sees query and function results, and gets a terminal reward when it submits:
1 or 0 by exact match, the token F1 for knowledge questions.

On a CRMArena-Pro org (``kind="b2b"`` or ``"b2c"``, the ``CRMArena-Pro-*`` ids) the instances are Pro's
categories, the schema is the Pro kind's, ``info["role"]`` says whether the agent serves an employee or a customer
(the category's audience), and a submission is graded by Pro's LLM-free rules
(:func:`~crmarena_gym.tasks.pro.score_pro_answer`): extraction per answer kind, token or label F1, refusal and
planted-leak checks. Pro's agents work by SOQL and SOSL; the ``flex`` and ``functions`` toolsets add only the task
functions a Pro category needs (:data:`~crmarena_gym.tasks.pro.PRO_TASK_FUNCTIONS`: the knowledge search),
``functions`` offering the query tools as functions too. CRMArena's other task functions (``get_cases``,
``find_id_with_max_value`` ...) are built around the service org's questions and are not offered on a Pro org.
"""

from __future__ import annotations

import datetime as dt
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import gymnasium as gym

from crmarena_gym.datagen import PERTURBATION_VERSION, parse_perturbations
from crmarena_gym.envs._actions import NO_ACTION, Action, parse_action, unwrap_code
from crmarena_gym.envs._render import QUERY_OUTPUT_PREFIX, ObservationFormat, render_error, render_head
from crmarena_gym.envs._result import StepResult
from crmarena_gym.envs._spaces import ActionText, UnicodeText
from crmarena_gym.org import LocalOrg, Org
from crmarena_gym.schema import OrgSchema, schema_text
from crmarena_gym.tasks import TaskInstance, load_tasks, score_answer
from crmarena_gym.tasks._spec import PRO_ORG_KINDS, spec_for
from crmarena_gym.tools import WRITE_TOOLS, Toolset, TruncatedRows, query_result_budget
from crmarena_gym.tools import toolset as make_toolset  # the constructor's ``toolset`` argument shadows the name

ToolsetName = Literal["soql", "functions", "flex"]
MatchMode = Literal["strict", "lenient"]

#: The date relative date literals resolve against when an instance names none (deterministic).
FALLBACK_TODAY = dt.date(2024, 12, 31)
_QUERY_TOOL_BY_LANGUAGE = {"soql": "issue_soql_query", "sosl": "issue_sosl_query"}
_LANGUAGE_BY_QUERY_TOOL: dict[str, Literal["soql", "sosl"]] = {"issue_soql_query": "soql", "issue_sosl_query": "sosl"}
# Calls the env reads as other actions: the query tools (a query) and submit (the answer).
_NOT_FUNCTIONS = frozenset({*_LANGUAGE_BY_QUERY_TOOL, "submit"})
_TRUNCATED = "\n[observation truncated: {n} more characters]"
# A result whose rendering stopped at the bound (or that the org cut to the rows that could be shown).
_TRUNCATED_ROWS = "\n[observation truncated: the result has {total} rows, more than fit; narrow the query]"


class _Rendered(str):
    """A result's text that lacks rows (the org or the rendering stopped at the bound), with the note that
    says so (the full text's length is unknown)."""

    note: str


_QUERY_EXAMPLES = (
    "execute SELECT Id, Subject, Status FROM Case LIMIT 5",
    "execute SELECT COUNT(Id) FROM Case WHERE Status = 'Closed'",
    "execute SELECT Owner.Name, COUNT(Id) n FROM Case GROUP BY Owner.Name ORDER BY COUNT(Id) DESC LIMIT 3",
    "<execute>SELECT Id, Name FROM Issue__c</execute>",
    "execute FIND {warranty} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title)",
)
# (function, a well-formed call of it)
_CALL_EXAMPLES = (
    ("get_issues", "execute get_issues()"),
    ("get_period", 'execute get_period({"period_name": "Q1", "year": 2022})'),
    (
        "get_start_date",
        '{"name": "get_start_date", "arguments": {"end_date": "2023-01-01T00:00:00Z", "period": "month", '
        '"interval_count": 3}}',
    ),
    ("find_id_with_max_value", 'execute find_id_with_max_value({"values_by_id": {"a": 2, "b": 1}})'),
)
# A random policy submits "None" only a third of the time, so it scores near zero, not the null share.
_SUBMIT_EXAMPLES = ("submit None", "submit unknown", "<submit>unknown</submit>")


def _action_format(tools: Toolset) -> str:
    lines = ["Reply with exactly one action per turn:"]
    if "issue_soql_query" in tools or "issue_sosl_query" in tools:
        lines.append(
            "- execute <SOQL or SOSL query>: run a query on the org and see its rows "
            "(a query starting with FIND is SOSL). The tags <execute>...</execute> work too."
        )
    functions = [t.name for t in tools if not t.general and not t.terminal]
    if functions:
        lines.append(
            '- execute <function>({"argument": value, ...}): call one of the functions (arguments as one JSON '
            'object), or send a JSON tool call {"name": ..., "arguments": {...}}.'
        )
    lines.append(
        "- submit <answer>: give your final answer and end the episode; submit only the answer itself, "
        "or None when the question has no answer. The tags <submit>...</submit> work too."
    )
    return "\n".join(lines)


def _resolve_today(instance: TaskInstance) -> dt.date:
    return instance.today or FALLBACK_TODAY


class CRMArenaEnv(gym.Env[str, str]):
    """A CRMArena task as a Gymnasium environment.

    Args:
        task: A task abbreviation or name (``"NCR"``, ``"case_routing"``) or None for all nine.
        org: The org: None for the embedded default, a database path, or an :class:`~crmarena_gym.org.Org`
            (a live :class:`~crmarena_gym.org.SalesforceOrg` works).
        tasks: The task source: None for the default test set, a task file (the original's
            ``tasks_original.json`` among them), a sequence of instances or records, or a mapping
            ``{"split": "train", "seed": S, "per_task": N}`` for freshly drawn training instances
            (``{"split": "test", ...}`` for a generated test set); either takes ``"distribution":
            "legacy"`` for the instances of task generator version 2 (see
            :func:`~crmarena_gym.tasks.generate_tasks`).
        toolset: ``"soql"`` (SOQL and SOSL, as in Act/ReAct), ``"functions"`` (the task-specific
            functions, as in function calling) or ``"flex"`` (both).
        match: ``"strict"`` (the paper's exact string equality) or ``"lenient"`` (a deterministic
            extraction of the answer from a verbose reply first). Pro instances are always graded by Pro's
            rules (the upstream fast path, then extraction), whatever ``match`` says.
        observation_format: ``"python"`` (the paper's ``str()`` of the rows) or ``"json"``.
        aided: Show the domain details (quarters, seasons, periods) with the question, as the paper's
            published runs do.
        privileged: Put the gold answer and the hidden parameters in ``info`` (for oracles and debugging).
        max_observation_chars: Longer observations are cut there, with a note saying how much was cut.
        max_action_chars: The longest action accepted; a longer one is answered with a FORMAT_ERROR
            observation before it is read. The default leaves room to paste back twice the longest
            observation (function calling passes data by value); raise it for an oracle on orgs past
            about 5x the original's size, whose calls carry longer lists.
        render_mode: None or ``"ansi"`` (the last turn as text: action, reward, observation).
        kind: The org kind the environment is for: None or ``"service"`` for CRMArena's nine tasks, ``"b2b"`` or
            ``"b2c"`` for CRMArena-Pro's categories (the ``CRMArena-Pro-B2B-*`` and ``-B2C-*`` ids set it). The org
            must be of that kind (a live org is taken as it is); the default org is the embedded org of the kind.
        privacy_aware: On a Pro org, add the confidentiality rules to the customer-facing role (Pro's
            privacy-aware prompt; off by default, as upstream runs).
        perturbations: Play a perturbed copy of the org (``crmarena_gym.datagen.perturb_org``, cached by the base
            org's hash and the perturbations) with the task set carried to it (``recompute_tasks``: every gold
            recomputed there, the instances made ambiguous dropped). The forms the CLI and the experiment take:
            ``"schema_drift=0.3 distractors=0.2"``, ``{"dirty_values": 0.1, "perturbation_seed": 2}`` or a list of
            ``{"kind", "strength", "seed"}``. What was applied, kept and dropped is in ``env.perturbation``, the
            env's ``metadata["perturbations"]`` and every ``reset`` info's ``"perturbations"``. Needs an org file
            (not a live org) and generated instances (with hidden parameters).

    Example:
        >>> import gymnasium as gym
        >>> env = gym.make("CRMArena-BRI-v0", tasks=[{"idx": 0, "task": "BRI", "query": "Which state?",
        ...     "answer": "OR", "metadata": {"required": "- Today's date: 2021-03-01"}}], org=getfixture("tiny_org"))
        >>> obs, info = env.reset(seed=0)
        >>> obs.splitlines()[0], info["task"]
        ('Which state?', 'best_region_identification')
        >>> env.step("submit OR")[1:3]
        (1.0, True)
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012 - gymnasium's convention

    def __init__(
        self,
        task: str | None = None,
        *,
        org: Org | str | os.PathLike[str] | None = None,
        tasks: str | os.PathLike[str] | Sequence[TaskInstance | Mapping[str, Any]] | Mapping[str, Any] | None = None,
        toolset: ToolsetName = "soql",
        match: MatchMode = "strict",
        observation_format: ObservationFormat = "python",
        aided: bool = True,
        privileged: bool = False,
        max_observation_chars: int = 100_000,
        max_action_chars: int = 200_000,
        render_mode: str | None = None,
        kind: str | None = None,
        privacy_aware: bool = False,
        perturbations: str | Sequence[Any] | Mapping[str, Any] | None = None,
    ) -> None:
        kind = kind or "service"
        if kind not in ("service", *PRO_ORG_KINDS):
            raise ValueError(f"kind must be 'service', 'b2b' or 'b2c', got {kind!r}")
        if toolset not in ("soql", "functions", "flex"):
            raise ValueError(f"toolset must be 'soql', 'functions' or 'flex', got {toolset!r}")
        if match not in ("strict", "lenient"):
            raise ValueError(f"match must be 'strict' or 'lenient', got {match!r}")
        if observation_format not in ("python", "json"):
            raise ValueError(f"observation_format must be 'python' or 'json', got {observation_format!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if not isinstance(max_action_chars, int) or max_action_chars < 1000:
            raise ValueError(f"max_action_chars must be an integer of at least 1000, got {max_action_chars!r}")
        if max_observation_chars < 1000:
            raise ValueError(f"max_observation_chars must be at least 1000, got {max_observation_chars!r}")
        self.kind = kind
        self.privacy_aware = privacy_aware
        self.task_spec = spec_for(task, kind) if task is not None else None
        specs = parse_perturbations(perturbations)  # refused before any org is opened or perturbed
        self.org = _open_org(org, kind)
        _check_org_kind(self.org, kind)
        self.instances = _load_instances(tasks, self.org, self.task_spec.name if self.task_spec else None, kind)
        #: The perturbations played (None: the org as given): applied, org file, kept and dropped instances.
        self.perturbation: dict[str, Any] | None = None
        if specs:
            self._perturb(specs, opened_here=not isinstance(org, Org))
        self._by_idx = {inst.idx: inst for inst in self.instances}
        self.toolset_name = toolset
        self.tools = _make_tools(toolset, kind)
        self._tool_schemas = self.tools.schemas()
        self._action_rules = _action_format(self.tools)
        self.match = match
        self.observation_format = observation_format
        self.aided = aided
        self.privileged = privileged
        self.max_observation_chars = max_observation_chars
        self.render_mode = render_mode
        self.observation_space = UnicodeText(max_observation_chars + 200)
        self.action_space = ActionText(max_action_chars, examples=self._examples())
        # The org's own schema where it has one (a drifted org's names), else its kind's.
        own = getattr(self.org, "schema", None)
        self._schema_text = own.text() if isinstance(own, OrgSchema) else schema_text(kind=kind)
        self.instance: TaskInstance | None = None
        self._view: Org = self.org
        self._turn = 0
        self._done = True
        self._last_observation = ""
        self._last_action: str | None = None
        self._last_reward: float | None = None
        self._fault: tuple[str, str] | None = None

    def _perturb(self, specs: list[Any], *, opened_here: bool) -> None:
        """Swap the org for its perturbed copy and the instances for those carried to it."""
        from crmarena_gym.org import perturbed_org_path
        from crmarena_gym.tasks import recompute_tasks

        base = self.org
        path = getattr(base, "path", None)
        if not isinstance(base, LocalOrg) or path is None:
            raise ValueError(
                f"perturbations= perturbs an org file (the embedded org, or a generated one); {base!r} is a live org"
            )
        perturbed = perturbed_org_path(path, specs)
        carried = recompute_tasks(self.instances, path, perturbed)
        if not carried.kept:
            raise ValueError(
                f"the perturbations {', '.join(p.key() for p in specs)} left no instance of this task set "
                f"(dropped: {carried.dropped})"
            )
        self.org = LocalOrg(perturbed, timeout=base.timeout)
        if opened_here:
            base.close()
        self.instances = carried.kept
        self.perturbation = {
            "perturbations": [p.model_dump() for p in specs],
            "version": PERTURBATION_VERSION,
            "org": str(perturbed),
            "base_org": str(path),
            "kept": len(carried.kept),
            "dropped": dict(carried.dropped),
        }
        self.metadata = {**type(self).metadata, "perturbations": self.perturbation}

    # -- the episode ---------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on one instance.

        Args:
            seed: Seeds the environment's generator (which instance is drawn, and any wrapper's noise).
            options: ``{"idx": idx}`` (or ``{"task_id": idx}``, the same) picks the instance with that ``idx``.

        Returns:
            The question with its context, and the ``info`` a policy needs to build its prompt.
        """
        super().reset(seed=seed)
        options = dict(options or {})
        task_id = options.pop("task_id", None)
        idx = options.pop("idx", None)
        if options:
            raise ValueError(
                f"unknown reset option(s) {sorted(options)}; the options are 'idx' and its synonym 'task_id'"
            )
        if idx is not None and task_id is not None and idx != task_id:
            raise ValueError(f"reset options idx={idx!r} and task_id={task_id!r} name different instances")
        task_id = task_id if task_id is not None else idx
        if task_id is None:
            self.instance = self.instances[int(self.np_random.integers(len(self.instances)))]
        else:
            if task_id not in self._by_idx:
                shown = ", ".join(str(i) for i in sorted(self._by_idx)[:10])
                raise ValueError(f"no instance with task_id {task_id!r} in this task set (idx such as {shown}, ...)")
            self.instance = self._by_idx[task_id]
        today = _resolve_today(self.instance)
        self._view = _view_for(self.org, today)
        self._turn = 0
        self._done = False
        observation = self._bound(self._first_observation(self.instance))
        self._last_observation = observation
        self._last_action, self._last_reward = None, None
        return observation, self._reset_info(self.instance, today)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Carry out one action.

        An unreadable action (too long, nested too deeply, malformed) or a failing query gives an
        observation saying what went wrong (and uses the turn); only ``submit`` ends the episode.
        """
        if self.instance is None or self._done:
            raise RuntimeError("the episode is over (or has not started): call reset() before step()")
        self._turn += 1
        self._last_action, self._last_reward = action, 0.0
        limit = self.action_space.max_length
        if isinstance(action, str) and len(action) > limit:
            message = (
                f"FORMAT_ERROR: the action is {len(action):,} characters long; the longest accepted is {limit:,}. "
                "Send a shorter query or call."
            )
            return self._observe(message, {"turn": self._turn, "action_kind": "invalid"}, error="FORMAT_ERROR")
        try:
            return self._act(action)
        except RecursionError:  # a structure nested too deeply for Python: still the agent's turn, answered
            message = "FORMAT_ERROR: the action is nested too deeply to be read"
            return self._observe(message, {"turn": self._turn, "action_kind": "invalid"}, error="FORMAT_ERROR")
        finally:
            self._fault = None  # a fault is for this step's request only

    def inject_fault(self, code: str, message: str) -> None:
        """Refuse the next step's API request (a query or a function call; never a submission or an
        unreadable action) with ``code`` and ``message``, without carrying it out, as the org's API refuses a
        request (``REQUEST_LIMIT_EXCEEDED``, ``SERVER_UNAVAILABLE``, ``INVALID_SESSION_ID``). The request
        uses its turn; ``info["api_fault"]`` names the code. Cleared after that step whatever it was.

        The API-fault wrappers (``crmarena_gym.wrappers.ApiFaults``) call it before passing a step on, so
        every wrapper and turn limit underneath still counts the refused request.
        """
        self._fault = (code, message)

    def _refused(self, info: dict[str, Any], *, query: bool) -> tuple[str, float, bool, bool, dict[str, Any]] | None:
        if self._fault is None:
            return None
        code, message = self._fault
        self._fault = None
        info["api_fault"] = code
        return self._observe(render_error(code, message) if query else f"{code}: {message}", info, error=code)

    def _act(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        parsed = parse_action(action, functions=True)
        info: dict[str, Any] = {"turn": self._turn, "action_kind": parsed.kind}
        if parsed.kind == "call" and parsed.name not in _NOT_FUNCTIONS:  # the common case, straight to the call
            return self._call(parsed.name or "", parsed.arguments, info)
        if parsed.kind == "call" and parsed.name in _LANGUAGE_BY_QUERY_TOOL:
            # A general query tool called as a function is the same action as ``execute <query>``.
            query = parsed.arguments.get("query")
            if not isinstance(query, str) or set(parsed.arguments) != {"query"}:
                message = f"Error: {parsed.name}() takes one argument 'query' with the query text"
                return self._observe(message, info, error="FUNCTION_ERROR")
            parsed = Action("query", text=unwrap_code(query), language=_LANGUAGE_BY_QUERY_TOOL[parsed.name])
            info["action_kind"] = "query"
        if parsed.kind == "call" and parsed.name == "submit":
            content = parsed.arguments.get("content")
            if not isinstance(content, str):
                return self._observe(
                    "Error: submit() needs the argument 'content' as text", info, error="INVALID_ARGUMENT"
                )
            parsed = Action("submit", text=content)
        if parsed.kind == "submit":
            return self._submit(parsed.text, info)
        if parsed.kind == "invalid":
            if parsed.error == NO_ACTION:  # as the original: the rule restated
                message = f"FORMAT_ERROR: {NO_ACTION} in the reply. {self._action_rules}"
                return self._observe(message, info, error="FORMAT_ERROR")
            return self._observe(f"FORMAT_ERROR: {parsed.error}", info, error="FORMAT_ERROR")
        if parsed.kind == "query":
            tool = _QUERY_TOOL_BY_LANGUAGE[parsed.language or "soql"]
            if tool not in self.tools:
                message = (
                    f"UNAVAILABLE: this toolset ({self.toolset_name}) has no direct {parsed.language.upper()} "  # type: ignore[union-attr]
                    "access; call one of the functions instead"
                )
                return self._observe(message, info, error="UNAVAILABLE")
            info["query"] = parsed.text
            refused = self._refused(info, query=True)
            if refused is not None:
                return refused
            # Rows past what the observation can show are neither shaped by the org nor rendered.
            with query_result_budget(self.max_observation_chars):
                result = self.tools.call(tool, {"query": parsed.text}, self._view)
            if isinstance(result, str):  # "CODE: message" from the org, shown as the original shows it
                code, _, message = result.partition(": ")
                return self._observe(render_error(code, message), info, error=code)
            info["result"] = StepResult(result)
            return self._observe(self.render_result(result, query=True), info)
        return self._call(parsed.name or "", parsed.arguments, info)

    def _call(
        self, name: str, arguments: dict[str, Any], info: dict[str, Any]
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        info["function"] = name
        refused = self._refused(info, query=False)
        if refused is not None:
            return refused
        if self.kind != "service" and name not in self.tools and name in _SERVICE_FUNCTIONS:
            message = (
                f"Error: {name}() is one of CRMArena's task functions for the service org, not offered on a "
                f"CRMArena-Pro ({self.kind}) org; query the org with SOQL or SOSL (the available functions are: "
                f"{', '.join(self.tools.names)})"
            )
            return self._observe(message, info, error="FUNCTION_ERROR")
        result = self.tools.call(name, arguments, self._view)
        if isinstance(result, str) and result.startswith("Error:"):
            return self._observe(result, info, error="FUNCTION_ERROR")
        info["result"] = StepResult(result)
        return self._observe(self.render_result(result, query=False), info)

    def render_result(self, result: Any, *, query: bool) -> str:
        """The observation text of a query's rows (``query=True``) or a function's result.

        A list is rendered only as far as the observation bound (``max_observation_chars``) reaches.
        """
        prefix = QUERY_OUTPUT_PREFIX if query else ""
        body, whole = render_head(result, self.observation_format, self.max_observation_chars)
        text = prefix + body
        if isinstance(result, list) and (isinstance(result, TruncatedRows) or not whole):
            rendered = _Rendered(text)
            rendered.note = _TRUNCATED_ROWS.format(total=getattr(result, "total", len(result)))
            return rendered
        return text

    def restrict_tools(self, names: Sequence[str] = (), groups: Sequence[str] = ()) -> None:
        """Take tools out of this environment's toolset (by name or by ablation group).

        Removed tools vanish from ``info["tools"]`` at the next reset and answer as unknown functions.
        """
        if "submit" in names:
            raise ValueError("submit cannot be removed: it is the only way to end an episode with an answer")
        self.tools = self.tools.without(names=names, groups=groups)
        self._tool_schemas = self.tools.schemas()
        self._action_rules = _action_format(self.tools)
        # The new space keeps drawing from the old one's generator, so a seed already set still holds.
        rng = self.action_space.np_random
        self.action_space = ActionText(self.action_space.max_length, examples=self._examples(), seed=rng)

    def render(self) -> str | None:
        """In ``ansi`` mode, the last turn as text: its number, action, reward and observation.

        Example:
            >>> import gymnasium as gym
            >>> env = gym.make("CRMArena-BRI-v0", tasks=[{"idx": 0, "task": "BRI", "query": "Which state?",
            ...     "answer": "OR", "metadata": {"required": "- Today's date: 2021-03-01"}}],
            ...     org=getfixture("tiny_org"), render_mode="ansi")
            >>> _ = env.reset(seed=0)
            >>> _ = env.step("submit OR")
            >>> print(env.render())
            Turn 1 (instance 0, BRI, ended)
            Action: submit OR
            Reward: 1.0
            Observation:
            Answer submitted. The episode is over.
        """
        if self.render_mode != "ansi":
            return None
        if self.instance is None:
            return "No episode yet: call reset()."
        state = "ended" if self._done else "running"
        lines = [f"Turn {self._turn} (instance {self.instance.idx}, {self.instance.abbrev}, {state})"]
        if self._last_action is not None:
            lines.append(f"Action: {self._last_action}")
            lines.append(f"Reward: {self._last_reward}")
        lines.append("Observation:")
        lines.append(self._last_observation)
        return "\n".join(lines)

    # -- helpers -------------------------------------------------------------------------------

    def _examples(self) -> list[str]:
        examples = [*(_QUERY_EXAMPLES if "issue_soql_query" in self.tools else ()), *_SUBMIT_EXAMPLES]
        examples += [text for name, text in _CALL_EXAMPLES if name in self.tools]
        return examples

    def _observe(
        self, text: str, info: dict[str, Any], *, error: str | None = None
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if error is not None:
            info["error"] = error
        observation = self._bound(text)
        self._last_observation = observation
        return observation, 0.0, False, False, info

    def _submit(self, answer: str, info: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        assert self.instance is not None
        if self.instance.is_pro:
            from crmarena_gym.tasks.pro import score_instance

            score = score_instance(answer, self.instance)
        else:
            spec = self.instance.spec
            score = score_answer(
                answer,
                self.instance.answer,  # type: ignore[arg-type]  # a CRMArena gold is one value or None
                metric=spec.reward_metric,  # type: ignore[arg-type]
                kind=spec.answer_kind,  # type: ignore[arg-type]
                mode=self.match,
            )
        self._done = True
        info["submitted"] = answer
        info["reward_breakdown"] = score.as_dict()
        if not self.privileged:
            info["reward_breakdown"].pop("gold")
        observation = "Answer submitted. The episode is over."
        self._last_observation = observation
        self._last_reward = float(score.reward)
        return observation, float(score.reward), True, False, info

    def _bound(self, text: str) -> str:
        limit = self.max_observation_chars
        if isinstance(text, _Rendered):  # rows are missing: say so even if what is left fits
            return text[:limit] + text.note
        if len(text) <= limit:
            return text
        return text[:limit] + _TRUNCATED.format(n=len(text) - limit)

    def _first_observation(self, instance: TaskInstance) -> str:
        parts = [instance.query.strip()]
        if instance.metadata.required.strip():
            parts.append("# Context\n" + instance.metadata.required.strip())
        if self.aided and instance.metadata.optional.strip():
            parts.append(instance.metadata.optional.strip())
        return "\n\n".join(parts)

    def _reset_info(self, instance: TaskInstance, today: dt.date) -> dict[str, Any]:
        info: dict[str, Any] = {
            "task": instance.task,
            "abbrev": instance.abbrev,
            "persona": instance.persona,
            "idx": instance.idx,
            "toolset": self.toolset_name,
            # One list per toolset, shared by every episode's info (computed once: treat it as read-only).
            "tools": self._tool_schemas,
            "schema": self._schema_text,
            "action_format": self._action_rules,
            "context": {"required": instance.metadata.required, "optional": instance.metadata.optional},
            "reward_metric": instance.reward_metric,
            "today": today.isoformat(),
        }
        if instance.is_pro:
            from crmarena_gym.tasks.pro import pro_answer_rule, pro_role

            info["kind"] = instance.kind
            info["audience"] = instance.spec.audience  # type: ignore[union-attr]
            info["role"] = pro_role(instance.kind, instance.task, privacy_aware=self.privacy_aware)
            info["answer_rule"] = pro_answer_rule(instance.task)
        if self.perturbation is not None:
            info["perturbations"] = self.perturbation
        if self.privileged:
            info["gold"] = instance.answer if isinstance(instance.answer, str | None) else list(instance.answer)
            info["params"] = dict(instance.params)
        return info


def _open_org(org: Org | str | os.PathLike[str] | None, kind: str = "service") -> Org:
    if isinstance(org, Org):
        return org
    if org is None:
        from crmarena_gym.org import default_org_path

        return LocalOrg(default_org_path(kind=kind))
    if isinstance(org, str | os.PathLike):
        return LocalOrg(org)
    raise TypeError(f"org must be an Org, a database path or None, got {type(org).__name__}")


def _check_org_kind(org: Org, kind: str) -> None:
    """Refuse an org of another kind than the environment's (a live org, whose kind is not recorded, passes)."""
    if getattr(org, "path", None) is None:
        return
    org_kind = getattr(org, "kind", "service")
    if org_kind == kind:
        return
    if kind == "service":
        hint = f"use the CRMArena-Pro-{org_kind.upper()}-* ids (kind={org_kind!r}) for its categories"
    else:
        hint = "generate one with generate_org(path, kind=...), or pass org=None for the embedded one"
    raise ValueError(
        f"this environment is for a {kind} org, but the org at {str(org.path)!r} is a {org_kind} org; {hint}"
    )  # type: ignore[attr-defined]


def _service_functions() -> frozenset[str]:
    """CRMArena's task functions that a Pro org does not offer (every flex tool but the query tools, submit and
    :data:`~crmarena_gym.tasks.pro.PRO_TASK_FUNCTIONS`)."""
    from crmarena_gym.tasks.pro import PRO_TASK_FUNCTIONS

    return frozenset(make_toolset("flex").names) - {
        "issue_soql_query",
        "issue_sosl_query",
        "submit",
        *PRO_TASK_FUNCTIONS,
    }


_SERVICE_FUNCTIONS = _service_functions()


def _make_tools(name: str, kind: str, *, writes: bool = False) -> Toolset:
    """The toolset ``name`` of an org kind: CRMArena's as they are; on a Pro org, SOQL/SOSL plus (``flex``,
    ``functions``) the task functions Pro's categories need. ``writes`` adds the write tools (act mode)."""
    tools = make_toolset(name, writes=writes)
    if kind == "service" or name == "soql":
        return tools
    from crmarena_gym.tasks.pro import PRO_TASK_FUNCTIONS

    keep = {
        "issue_soql_query",
        "issue_sosl_query",
        "submit",
        *PRO_TASK_FUNCTIONS,
        *(t.name for t in WRITE_TOOLS if writes),
    }
    flex = make_toolset("flex", writes=writes)
    return flex.without(names=[n for n in flex.names if n not in keep])


def _load_instances(source: Any, org: Org, task_name: str | None, kind: str = "service") -> list[TaskInstance]:
    pro = kind != "service"
    if source is None:
        from crmarena_gym.tasks import default_tasks

        path = getattr(org, "path", None)
        if path is None:
            raise ValueError(
                "the default task set is generated from the embedded org; with a live org, pass tasks= "
                "(a task file such as the original's tasks_original.json, or Pro's b2b_tasks.json)"
            )
        if pro and task_name is not None:  # only the category asked for (its module's error if it has none)
            from crmarena_gym.tasks.pro import default_pro_tasks

            instances = default_pro_tasks(path, category=[task_name])
        else:
            instances = default_tasks(path)
        where = "the default task set"
    elif isinstance(source, Mapping):
        from crmarena_gym.tasks import default_tasks, training_tasks

        options = dict(source)
        split = options.pop("split", "train")
        if split == "train":
            tasks = [task_name] if task_name else None
            instances = training_tasks(org, tasks=tasks, **options)
            where = f"training instances {options}"
        elif split == "test":
            path = getattr(org, "path", None)
            if path is None:
                raise ValueError("the test set is generated from the embedded org; a live org needs a task file")
            if pro and task_name is not None:
                from crmarena_gym.tasks.pro import default_pro_tasks

                instances = default_pro_tasks(path, category=[task_name], **options)
            else:
                instances = default_tasks(path, **options)
            where = f"the test set {options}"
        else:
            raise ValueError(f"a task mapping's split must be 'train' or 'test', got {split!r}")
    elif isinstance(source, str | os.PathLike):
        instances = load_tasks(source, kind=kind if pro else None)
        where = str(source)
    else:
        instances = [
            i if isinstance(i, TaskInstance) else TaskInstance.model_validate(_with_kind(i, kind)) for i in source
        ]
        where = "the given instances"
    foreign = next((i for i in instances if i.kind != kind), None)
    if foreign is not None:
        suite = "a CRMArena (service org) instance" if foreign.kind == "service" else f"made for a {foreign.kind} org"
        raise ValueError(
            f"{where}: instance {foreign.idx} ({foreign.task}) is {suite}, but this environment is for a {kind} org"
            + ("" if pro else "; use the CRMArena-Pro-* ids for Pro's task files")
        )
    if task_name is not None:
        instances = [i for i in instances if i.task == task_name]
    if not instances:
        raise ValueError(f"{where} holds no instance" + (f" of task {task_name!r}" if task_name else ""))
    return instances


def _with_kind(record: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """A record given to a Pro environment without a kind: in Pro's format, it is for the environment's kind."""
    if kind == "service" or "kind" in record:
        return record
    return {**record, "kind": kind} if _pro_only(record) else record


def _pro_only(record: Mapping[str, Any]) -> bool:
    try:
        spec_for(str(record.get("task")), "b2b")
    except KeyError:
        return False
    return True


def _view_for(org: Org, today: dt.date) -> Org:
    try:
        return org.with_today(today)
    except NotImplementedError:
        warnings.warn(
            f"{type(org).__name__} resolves relative dates against its own clock, not the task's date {today}; "
            "answers that depend on TODAY or LAST_N_DAYS may differ from the gold",
            RuntimeWarning,
            stacklevel=3,
        )
        return org
