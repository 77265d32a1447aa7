"""A TRL environment class (``GRPOTrainer(..., environment_factory=...)``) and its dataset rows.

TRL makes one instance per rollout, calls ``reset(**row)`` with the dataset row and appends the string
it returns to the row's last user message, offers the instance's public methods to the model as tools
(their JSON schemas from the signatures and Google-style docstrings, through transformers'
``get_json_schema``), calls them with the model's arguments and feeds each result back as a ``tool``
message, then scores the rollout with ``get_reward()``.

:func:`trl_environment` builds such a class for a toolset: one method per tool, generated from the chat
core's schemas (:func:`~crmarena_gym.chat.chat_tool_schemas`) so that ``get_json_schema`` gives back
exactly the schemas evaluation sends (the test compares them). The episode semantics are the core's
(:mod:`crmarena_gym.chat`): TRL runs every call of a reply in order, each one turn of the environment's
budget; calls after the episode ended are answered ``"Not run: the episode is over."`` (TRL keeps
generating while the model calls tools, up to ``max_tool_calling_iterations``: set it to at least
:data:`~crmarena_gym.envs.MAX_TURNS`); a reply without a tool call ends TRL's rollout, unanswered, as it
ends an evaluated episode. TRL's ``environment_factory`` is function calling: the text frameworks (Act,
ReAct) have no tool loop in TRL; play them through SkyRL, verifiers or OpenEnv.

The class and its instances pickle (TRL's asynchronous trainer ships them to other processes): a class
is rebuilt from its arguments, an instance as a fresh one (its episode is not carried over).

The rows (:func:`trl_dataset_rows`) carry the system prompt, an empty user message that ``reset`` fills
with the question and its context, the instance's ``task_id``, ``task`` and ``split``.
"""

from __future__ import annotations

import copyreg
import functools
import os
from typing import Any

from crmarena_gym.chat import (
    DEFAULT_TRAIN_SEED,
    NOT_RUN,
    ChatSession,
    Shaping,
    Split,
    chat_tool_schemas,
    check_row_split,
    episode_rows,
    make_chat_env,
    run_metadata,
    tool_method_parts,
)
from crmarena_gym.envs import RESPOND_TOOL
from crmarena_gym.org import LocalOrg, Org, default_org_path
from crmarena_gym.tools import toolset as make_toolset
from crmarena_gym.users import make_user

__all__ = ["TRLEnvironment", "trl_dataset", "trl_dataset_rows", "trl_environment"]


class _EnvironmentClass(type):
    """The metaclass of the built classes: a class pickles as the arguments that build it."""


class TRLEnvironment(metaclass=_EnvironmentClass):
    """The base of the classes :func:`trl_environment` builds (its public methods are the tools).

    Attributes:
        session: The episode being played, as a chat session.
        metadata: What the class trains on (framework, toolset, split seed, turn budget, shaping ...), to
            keep with the run.
    """

    _config: tuple[tuple[str, Any], ...] = ()
    metadata: dict[str, Any] = {}  # noqa: RUF012 - set per built class, read-only

    def __init__(self) -> None:
        config = dict(self._config)
        self._org = _open_org(config.get("org", ""))
        self._envs: dict[tuple[str, str | None], Any] = {}
        self.session: ChatSession | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {}  # the org and the episode are not carried: the copy starts fresh

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def reset(self, **row: Any) -> str:
        """Start the episode of a dataset row; returns the question and its context (the first user message).

        Args:
            **row: The row: ``task_id`` (the instance's idx), ``split`` (``train`` or ``test``), ``task``
                (its abbreviation), optionally ``seed``; other columns (``prompt`` ...) are ignored.

        Raises:
            ValueError: The row names no ``task_id``, or an unknown split, task or instance.
        """
        if row.get("task_id") is None:
            raise ValueError(
                f"a CRMArena row needs a task_id (build rows with trl_dataset_rows); got keys {sorted(row)}"
            )
        config = dict(self._config)
        check_row_split(row, train_seed=config["train_seed"], per_task=config["per_task"])
        split = row.get("split") or "train"
        key = (split, row.get("task"))
        env = self._envs.get(key)
        if env is None:
            env = self._envs[key] = make_chat_env(
                self._org,
                task=key[1],
                split=split,
                seed=config["train_seed"],
                per_task=config["per_task"] if split == "train" else None,
                toolset=config["toolset"],
                match=config["match"],
                user=config.get("user"),
            )
        self.session = ChatSession(env, "fc", shaping=config["shaping"])
        start = self.session.reset(seed=row.get("seed"), task_id=int(row["task_id"]))
        return start.observation

    def get_reward(self) -> float:
        """The episode's reward: the score once submitted (1 or 0, the token F1 for knowledge questions) less
        any shaping penalties, else 0 (less penalties).

        TRL asks once its rollout is over, so an episode still open is ended here (end reason ``stopped``:
        a reply without a call, or TRL's own limits, ended the rollout).
        """
        if self.session is None:
            return 0.0
        self.session.stop()
        return float(self.session.reward)

    @property
    def record(self) -> dict[str, Any] | None:
        """Once the episode is over, its record: the fields of an evaluation record (gold answer, score
        breakdown, end reason, trajectory ...); None while it runs."""
        return self.session.record if self.session is not None else None

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self.session is None:
            raise RuntimeError("reset() the environment before calling a tool")
        if self.session.done:
            return NOT_RUN
        return self.session.step_tool_call(name, arguments).observation


def _rebuild(config: tuple[tuple[str, Any], ...]) -> type[TRLEnvironment]:
    return _build(config)


copyreg.pickle(_EnvironmentClass, lambda cls: (_rebuild, (cls._config,)) if cls._config else cls.__qualname__)


@functools.lru_cache(maxsize=8)
def _open_org(path: str) -> LocalOrg:
    return LocalOrg(path or default_org_path())


def _tool_method(schema: dict[str, Any]) -> Any:
    """A method that calls the tool of ``schema``, whose signature and docstring give back ``schema``."""
    name = schema["function"]["name"]
    signature, annotations, doc = tool_method_parts(schema)

    def method(self: TRLEnvironment, **arguments: Any) -> str:
        # Exactly the arguments the model sent (the None defaults only mark optional ones in the signature).
        return self._call(name, arguments)

    method.__name__ = method.__qualname__ = name
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    method.__doc__ = doc
    return method


@functools.lru_cache(maxsize=32)
def _build(config: tuple[tuple[str, Any], ...]) -> type[TRLEnvironment]:
    options = dict(config)
    tools = make_toolset(options["toolset"])
    attributes: dict[str, Any] = {
        "_config": config,
        "metadata": run_metadata(
            "fc",
            toolset=options["toolset"],
            train_seed=options["train_seed"],
            per_task=options["per_task"],
            match=options["match"],
            shaping=options["shaping"],
            adapter="trl",
        )
        | ({"user": options["user"]} if options.get("user") else {}),
        "__doc__": f"CRMArena episodes for TRL with the {options['toolset']!r} toolset; each public method but "
        "reset and get_reward is a tool.",
        "__module__": __name__,
    }
    schemas = tools.schemas() + ([RESPOND_TOOL] if options.get("user") else [])
    for schema in chat_tool_schemas(schemas):
        attributes[schema["function"]["name"]] = _tool_method(schema)
    name = "CRMArena" + "".join(part.title() for part in options["toolset"].split("_")) + "Env"
    return _EnvironmentClass(name, (TRLEnvironment,), attributes)


def trl_environment(
    org: Org | str | os.PathLike[str] | None = None,
    *,
    toolset: str = "functions",
    train_seed: int = DEFAULT_TRAIN_SEED,
    per_task: int | None = None,
    match: str = "strict",
    shaping: Shaping | None = None,
    framework: str = "fc",
    user: str | None = None,
) -> type[TRLEnvironment]:
    """A TRL environment class: pass it as ``GRPOTrainer(..., environment_factory=cls)``.

    The same arguments give the same class (so it pickles by its arguments).

    Args:
        org: The org (default: the embedded org), shared read-only by every instance.
        toolset: ``"functions"`` (the task functions and submit), ``"soql"`` (the SOQL and SOSL query
            tools and submit) or ``"flex"`` (all of them).
        train_seed: The seed of the training instances (as in :func:`trl_dataset_rows`).
        per_task: Training instances per task (as in :func:`trl_dataset_rows`).
        match: ``"strict"`` or ``"lenient"`` answer matching.
        shaping: Optional penalties (:class:`~crmarena_gym.chat.Shaping`), kept in the class's ``metadata``.
        framework: Must be ``"fc"``: TRL's environment class is function calling.
        user: None for single-turn episodes; ``"scripted"`` (or ``"litellm:MODEL"``) for conversations: the
            class gets a ``respond`` tool whose result is the simulated user's reply.

    Raises:
        ValueError: Another framework, or an unknown toolset.

    Example:
        >>> cls = trl_environment(getfixture("tiny_org"), toolset="soql")
        >>> sorted(n for n, f in vars(cls).items() if callable(f) and not n.startswith("_"))
        ['issue_soql_query', 'issue_sosl_query', 'submit']
        >>> cls.metadata["framework"], cls.metadata["tool_calls_per_reply"]
        ('fc', 'all, in order, one turn each')
    """
    if framework != "fc":
        raise ValueError(
            f"TRL's environment_factory drives function calling only (a text reply ends its rollout), got "
            f"framework {framework!r}; train the Act or ReAct framework through SkyRL, verifiers or OpenEnv"
        )
    if toolset not in ("soql", "functions", "flex"):
        raise ValueError(f"toolset must be 'soql', 'functions' or 'flex', got {toolset!r}")
    path = getattr(org, "path", org)
    config = (
        ("org", str(path) if path is not None else ""),
        ("toolset", toolset),
        ("train_seed", int(train_seed)),
        ("per_task", per_task),
        ("match", match),
        ("shaping", shaping or Shaping()),
    )
    if user is not None:
        make_user(user)  # an unknown user is refused here, not at the first episode
        config += (("user", user),)
    return _build(config)


def trl_dataset_rows(
    org: Org | str | os.PathLike[str] | None = None,
    *,
    split: Split = "train",
    seed: int = DEFAULT_TRAIN_SEED,
    per_task: int | None = None,
    tasks: list[str] | None = None,
    toolset: str = "functions",
    user: str | None = None,
) -> list[dict[str, Any]]:
    """The dataset rows of a split: ``prompt`` (the system prompt and an empty user message that the
    environment's reset fills with the question), ``task_id``, ``task``, ``split``, and the ``train_seed``
    and ``per_task`` they were drawn with (the environment refuses a row drawn otherwise).

    Built by :func:`~crmarena_gym.chat.episode_rows`, as SkyRL's and verifiers' rows are.

    Args:
        org: The org (default: the embedded org).
        split: ``"train"`` (fresh training instances, never a test question) or ``"test"``.
        seed: The training seed (use the environment class's ``train_seed``).
        per_task: Instances per task.
        tasks: Task abbreviations or names (default: all nine).
        toolset: The environment class's toolset (the system prompt mentions query rules only with query tools).
        user: The environment class's user (conversations: the system prompt tells the model to ask), or None.
    """
    rows = episode_rows(
        org, split=split, seed=seed, per_task=per_task, tasks=tasks, toolset=toolset, framework="fc", user=user
    )
    return [
        {
            "prompt": [{"role": "system", "content": row["system_prompt"]}, {"role": "user", "content": ""}],
            "task_id": row["task_id"],
            "task": row["task"],
            "split": row["split"],
            "train_seed": row["train_seed"],
            "per_task": row["per_task"],
        }
        for row in rows
    ]


def trl_dataset(org: Org | str | os.PathLike[str] | None = None, **options: Any) -> Any:
    """:func:`trl_dataset_rows` as a ``datasets.Dataset`` (the ``train_dataset`` of ``GRPOTrainer``)."""
    from datasets import Dataset

    return Dataset.from_list(trl_dataset_rows(org, **options))
