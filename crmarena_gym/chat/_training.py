"""The training split: instances of the default org and, for families it cannot fill, of sibling orgs.

One org cannot give every family ``per_task`` training instances: a knowledge question (KQA) is a fact of
the org, and the service org's test set holds 130 of its 144 facts, leaving 14. :func:`training_instances` draws
from the org first, then from sibling orgs (the same generator at the same scale, with the seeds after the
org's own: ``seed + 1``, ``seed + 2`` ...) for the families still short, never taking a test question (an
instance key of the test set) or a test fact (a knowledge question asking a test instance's question,
whatever the answer), nor the same question twice. Instances drawn from a sibling carry its seed and scale in their
``params`` (``org_seed``, ``org_scale``); :class:`OrgRoutedEnv` plays each instance on its own org.

Most knowledge facts are the same text in every org (the articles are fixed; the policy facts with a
parameter, such as a return window, ask the same question with another answer), so a sibling's question
that is a test question is never drawn, whatever its answer. What makes siblings worth drawing from for
KQA: in every org but the service org at seed 0 (fixed byte for byte) each category's first guide also
holds care-and-warranty facts of a few of its products (:func:`~crmarena_gym.datagen.care_section`), 192
facts whose questions name the product, so the first sibling already fills KQA's 130. Should a family
still be short, a warning says how many it got and why. Ids are contiguous: ``0 .. N-1``, family by
family in the original's task order.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import gymnasium as gym

from crmarena_gym.tasks import (
    DEFAULT_PER_TASK,
    TASK_SPECS,
    TaskInstance,
    default_tasks,
    generate_tasks,
    get_task_spec,
    instance_key,
    training_tasks,
)

__all__ = ["MAX_SIBLING_ORGS", "OrgRoutedEnv", "instance_org", "training_instances"]

#: The most sibling orgs drawn from for the families the org cannot fill.
MAX_SIBLING_ORGS = 6


def instance_org(instance: TaskInstance, base: Path) -> Path:
    """The org an instance is played on: its sibling org when it was drawn from one, else ``base``."""
    seed = instance.params.get("org_seed")
    if seed is None:
        return base
    from crmarena_gym.org import default_org_path

    return default_org_path(seed=int(seed), scale=float(instance.params["org_scale"]))


def _facts(path: Path) -> list[dict[str, str]]:
    from crmarena_gym.datagen import read_latent

    try:
        return list(read_latent(path).get("kqa_facts") or ())
    except Exception:  # an org without the generator's latent variables has no knowledge facts to draw
        return []


def training_instances(
    path: Path, *, seed: int, per_task: int | None = None, tasks: Iterable[str] | None = None
) -> list[TaskInstance]:
    """``per_task`` fresh instances of each family (fewer only where no org has more), numbered ``0 .. N-1``.

    Args:
        path: The org database (its test set is :func:`~crmarena_gym.tasks.default_tasks`).
        seed: The training seed (not the test seed, 0).
        per_task: Instances per family (default 130).
        tasks: Task abbreviations or names (default: all nine).
    """
    per_task = DEFAULT_PER_TASK if per_task is None else per_task
    wanted = [s.abbrev for s in TASK_SPECS] if tasks is None else [get_task_spec(t).abbrev for t in tasks]
    order = [s.abbrev for s in TASK_SPECS if s.abbrev in wanted]
    drawn: dict[str, list[TaskInstance]] = {a: [] for a in order}
    for instance in training_tasks(path, seed=seed, per_task=per_task, tasks=order):
        drawn[instance.abbrev].append(instance)
    short = {a: per_task - len(drawn[a]) for a in order if len(drawn[a]) < per_task}
    if short:
        _fill_from_siblings(path, drawn, short, seed=seed, per_task=per_task)
    instances = []
    for abbrev in order:
        for instance in drawn[abbrev]:
            instances.append(instance.model_copy(update={"idx": len(instances)}))
    still = {a: len(drawn[a]) for a in order if len(drawn[a]) < per_task}
    if still:
        warnings.warn(
            f"training instances short of per_task={per_task}: {still} (after {MAX_SIBLING_ORGS} sibling orgs; a "
            "knowledge question is a fact of an org, most facts are the same text in every org, and the test set "
            "holds 130 of them)",
            UserWarning,
            stacklevel=3,
        )
    return instances


def _fill_from_siblings(
    path: Path, drawn: dict[str, list[TaskInstance]], short: dict[str, int], *, seed: int, per_task: int
) -> None:
    from crmarena_gym.datagen import read_manifest
    from crmarena_gym.org import default_org_path

    try:
        manifest = read_manifest(path)
    except (OSError, ValueError):
        return  # not a generated org: there are no siblings to draw from (the warning says what is short)
    test = default_tasks(path)
    keys = {instance_key(i.task, i.params) for i in test}
    keys |= {instance_key(i.task, i.params) for family in drawn.values() for i in family}
    # A sibling's question that is a test question is keyed out whatever its answer: a policy fact with a
    # parameter asks the same question of every org and only its answer varies.
    questions = {i.params.get("question") for i in test if i.abbrev == "KQA"}
    questions |= {i.params.get("question") for i in drawn.get("KQA", ())}
    for k in range(1, MAX_SIBLING_ORGS + 1):
        if not short:
            return
        sibling_seed = manifest.seed + k
        sibling = default_org_path(seed=sibling_seed, scale=manifest.scale)
        # The sibling's knowledge questions that are test questions (or drawn already) are keyed out.
        taken = {
            instance_key("KQA", {"article_id": f["article_id"], "question": f["question"]})
            for f in _facts(sibling)
            if f["question"] in questions
        }
        for abbrev, need in list(short.items()):
            new = generate_tasks(
                sibling, seed=seed, per_task=need, tasks=[abbrev], exclude=keys | taken, allow_fewer=True
            )
            for instance in new[:need]:
                params = {**instance.params, "org_seed": sibling_seed, "org_scale": manifest.scale}
                drawn[abbrev].append(instance.model_copy(update={"params": params}))
                keys.add(instance_key(instance.task, instance.params))
                if abbrev == "KQA":
                    questions.add(instance.params.get("question"))
            short[abbrev] = per_task - len(drawn[abbrev])
            if short[abbrev] <= 0:
                del short[abbrev]


class OrgRoutedEnv(gym.Env[str, str]):
    """Instances of several orgs played as one environment: each on its own org.

    ``reset`` draws an instance (or takes ``options["task_id"]``) over all of them, as one environment's
    reset does, and plays it in the environment of its org; ``step`` goes to that environment.

    Args:
        envs: One environment per org (from ``gym.make``, so the turn limit applies), each over its instances.
    """

    def __init__(self, envs: list[gym.Env]) -> None:
        self.envs = envs
        self._env_of: dict[int, gym.Env] = {}
        self.instances: list[TaskInstance] = []
        for env in envs:
            for instance in env.unwrapped.instances:  # type: ignore[attr-defined]
                self._env_of[instance.idx] = env
                self.instances.append(instance)
        self.instances.sort(key=lambda i: i.idx)
        self.observation_space = envs[0].observation_space
        self.action_space = envs[0].action_space
        self._active: gym.Env | None = None

    @property
    def instance(self) -> TaskInstance | None:
        """The instance being played."""
        return self._active.unwrapped.instance if self._active is not None else None  # type: ignore[attr-defined]

    @property
    def tools(self) -> Any:
        """The toolset (the same in every org's environment)."""
        return self.envs[0].unwrapped.tools  # type: ignore[attr-defined]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        task_id = options.pop("task_id", options.pop("idx", None))
        if options:
            raise ValueError(f"unknown reset option(s) {sorted(options)}; the options are 'idx' and 'task_id'")
        if task_id is None:
            task_id = self.instances[int(self.np_random.integers(len(self.instances)))].idx
        if task_id not in self._env_of:
            shown = ", ".join(str(i.idx) for i in self.instances[:10])
            raise ValueError(f"no instance with task_id {task_id!r} in this task set (idx such as {shown}, ...)")
        self._active = self._env_of[task_id]
        return self._active.reset(seed=seed, options={"task_id": task_id})

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._active is None:
            raise RuntimeError("the episode has not started: call reset() before step()")
        return self._active.step(action)

    def close(self) -> None:
        for env in self.envs:
            env.close()
