"""A TRL environment class (``GRPOTrainer(..., environment_factory=...)``) and its dataset rows.

TRL makes one instance per rollout, calls ``reset(**row)`` with the dataset row and appends the string
it returns to the row's last user message, offers the instance's public methods to the model as tools
(their JSON schemas from the type hints and Google-style docstrings), calls them with the model's
arguments and feeds each result back as a ``tool`` message, then scores the rollout with
``get_reward()``. :func:`trl_environment` builds such a class for a toolset: one typed method per tool
of the toolset (the task functions, or the SOQL/SOSL query tools), ``submit`` among them.

The rows (:func:`trl_dataset_rows`) carry the system prompt, an empty user message that ``reset`` fills
with the question and its context, the instance's ``task_id``, ``task`` and ``split``: the model is
trained on the conversation the litellm policy is evaluated with.
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any

from crmarena_gym.chat import DEFAULT_TRAIN_SEED, ChatSession, Split, chat_tasks, make_chat_env
from crmarena_gym.org import LocalOrg, Org, default_org_path
from crmarena_gym.tools import Tool
from crmarena_gym.tools import toolset as make_toolset

__all__ = ["TRLEnvironment", "trl_dataset", "trl_dataset_rows", "trl_environment"]

_RETURNS = "What the environment answers: the function's result, or an error message that says what was wrong."


class TRLEnvironment:
    """The base of the classes :func:`trl_environment` builds (its public methods are the tools).

    Attributes:
        session: The episode being played, as a chat session.
    """

    #: The org database, the toolset, the training seed and the training size (set by :func:`trl_environment`).
    _org_path: str = ""
    _toolset: str = "functions"
    _train_seed: int = DEFAULT_TRAIN_SEED
    _per_task: int | None = None
    _match: str = "strict"

    def __init__(self) -> None:
        self._org = _open_org(self._org_path)
        self._envs: dict[tuple[str, str | None], Any] = {}
        self.session: ChatSession | None = None

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
        split = row.get("split") or "train"
        key = (split, row.get("task"))
        env = self._envs.get(key)
        if env is None:
            env = self._envs[key] = make_chat_env(
                self._org,
                task=key[1],
                split=split,
                seed=self._train_seed,
                per_task=self._per_task if split == "train" else None,
                toolset=self._toolset,
                match=self._match,
            )
        self.session = ChatSession(env, "fc")
        start = self.session.reset(seed=row.get("seed"), task_id=int(row["task_id"]))
        return start.observation

    def get_reward(self) -> float:
        """The episode's reward: 1 or 0 once submitted (the token F1 for knowledge questions), else 0."""
        return float(self.session.reward) if self.session is not None else 0.0

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self.session is None:
            raise RuntimeError("reset() the environment before calling a tool")
        if self.session.done:
            raise RuntimeError("the episode is over: no more calls")
        return self.session.step_tool_call(name, arguments).observation


@functools.lru_cache(maxsize=8)
def _open_org(path: str) -> LocalOrg:
    return LocalOrg(path or default_org_path())


def _tool_method(tool: Tool) -> Any:
    """A method that calls ``tool``, typed and documented so that TRL derives the tool's schema from it."""

    def method(self: TRLEnvironment, **arguments: Any) -> str:
        return self._call(tool.name, arguments)

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = []
    for spec in tool.params:
        default = inspect.Parameter.empty if spec.required else None
        parameters.append(
            inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=spec.hint)
        )
        annotations[spec.name] = spec.hint
        lines.append(f"    {spec.name}: {' '.join(spec.description.split())}")
    annotations["return"] = str
    method.__name__ = method.__qualname__ = tool.name
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    doc = " ".join(tool.description.split())
    if lines:
        doc += "\n\nArgs:\n" + "\n".join(lines)
    method.__doc__ = doc + "\n\nReturns:\n    " + _RETURNS
    return method


def trl_environment(
    org: Org | str | os.PathLike[str] | None = None,
    *,
    toolset: str = "functions",
    train_seed: int = DEFAULT_TRAIN_SEED,
    per_task: int | None = None,
    match: str = "strict",
) -> type[TRLEnvironment]:
    """A TRL environment class: pass it as ``GRPOTrainer(..., environment_factory=cls)``.

    Args:
        org: The org (default: the embedded org), shared read-only by every instance.
        toolset: ``"functions"`` (the task functions and submit), ``"soql"`` (the SOQL and SOSL query
            tools and submit) or ``"flex"`` (all of them).
        train_seed: The seed of the training instances (as in :func:`trl_dataset_rows`).
        per_task: Training instances per task (as in :func:`trl_dataset_rows`).
        match: ``"strict"`` or ``"lenient"`` answer matching.

    Example:
        >>> cls = trl_environment(getfixture("tiny_org"), toolset="soql")
        >>> sorted(n for n, f in vars(cls).items() if callable(f) and not n.startswith("_"))
        ['issue_soql_query', 'issue_sosl_query', 'submit']
    """
    tools = make_toolset(toolset)
    path = getattr(org, "path", org)
    attributes: dict[str, Any] = {
        "_org_path": str(path) if path is not None else "",
        "_toolset": toolset,
        "_train_seed": train_seed,
        "_per_task": per_task,
        "_match": match,
        "__doc__": f"CRMArena episodes for TRL with the {toolset!r} toolset; each public method but reset and "
        "get_reward is a tool.",
    }
    for tool in tools:
        attributes[tool.name] = _tool_method(tool)
    name = "CRMArena" + "".join(part.title() for part in toolset.split("_")) + "Env"
    return type(name, (TRLEnvironment,), attributes)


def trl_dataset_rows(
    org: Org | str | os.PathLike[str] | None = None,
    *,
    split: Split = "train",
    seed: int = DEFAULT_TRAIN_SEED,
    per_task: int | None = None,
    tasks: list[str] | None = None,
    toolset: str = "functions",
) -> list[dict[str, Any]]:
    """The dataset rows of a split: ``prompt`` (the system prompt and an empty user message that the
    environment's reset fills with the question), ``task_id``, ``task`` and ``split``.

    Args:
        org: The org (default: the embedded org).
        split: ``"train"`` (fresh training instances, never a test question) or ``"test"``.
        seed: The training seed (use the environment class's ``train_seed``).
        per_task: Instances per task.
        tasks: Task abbreviations or names (default: all nine).
        toolset: The environment class's toolset (the system prompt mentions query rules only with query tools).
    """
    org = org if isinstance(org, Org) else LocalOrg(org or default_org_path())
    instances = chat_tasks(org, split=split, seed=seed, per_task=per_task, tasks=tasks)
    session = ChatSession(make_chat_env(org, instances=instances, toolset=toolset), "fc")
    rows = []
    for instance in instances:
        start = session.reset(task_id=instance.idx)
        rows.append(
            {
                "prompt": [{"role": "system", "content": start.system_prompt}, {"role": "user", "content": ""}],
                "task_id": instance.idx,
                "task": instance.abbrev,
                "split": split,
            }
        )
    return rows


def trl_dataset(org: Org | str | os.PathLike[str] | None = None, **options: Any) -> Any:
    """:func:`trl_dataset_rows` as a ``datasets.Dataset`` (the ``train_dataset`` of ``GRPOTrainer``)."""
    from datasets import Dataset

    return Dataset.from_list(trl_dataset_rows(org, **options))
