"""Registering the environments with Gymnasium (done on ``import crmarena_gym``)."""

from __future__ import annotations

import gymnasium as gym

from crmarena_gym.tasks import ACT_TASKS, TASK_ABBREVS, get_task_spec
from crmarena_gym.tasks.pro import PRO_CATEGORY_ABBREVS, PRO_KINDS, get_pro_spec

#: The paper's turn budget (Pro's too: 20 agent actions at most, PRO.md section 5).
MAX_TURNS = 20
# The module path's third part is the heading ``gym.pprint_registry()`` lists the ids under.
ENTRY_POINT = "crmarena_gym.envs.crmarena_gym:CRMArenaEnv"
ACT_ENTRY_POINT = "crmarena_gym.envs.crmarena_gym:CRMArenaActEnv"
INTERACTIVE_ENTRY_POINT = "crmarena_gym.envs.crmarena_gym:CRMArenaInteractiveEnv"


def env_ids() -> list[str]:
    """CRMArena's ids: one per task, then ``CRMArena-v0`` for all nine.

    Example:
        >>> env_ids()[:2], env_ids()[-1]
        (['CRMArena-KQA-v0', 'CRMArena-MTA-v0'], 'CRMArena-v0')
    """
    return [f"CRMArena-{abbrev}-v0" for abbrev in TASK_ABBREVS] + ["CRMArena-v0"]


def pro_env_ids(kind: str | None = None) -> list[str]:
    """CRMArena-Pro's ids: per org kind, one per category (in Pro's file order), then the kind's mixed id.

    Args:
        kind: ``b2b`` or ``b2c``; None for both (B2B's first).

    Example:
        >>> pro_env_ids("b2b")[0], pro_env_ids("b2b")[-1], len(pro_env_ids())
        ('CRMArena-Pro-B2B-LQU-v0', 'CRMArena-Pro-B2B-v0', 46)
    """
    kinds = PRO_KINDS if kind is None else (kind,)
    ids: list[str] = []
    for k in kinds:
        if k not in PRO_KINDS:
            raise ValueError(f"kind must be one of {', '.join(PRO_KINDS)}, got {k!r}")
        ids += [f"CRMArena-Pro-{k.upper()}-{abbrev}-v0" for abbrev in PRO_CATEGORY_ABBREVS]
        ids.append(f"CRMArena-Pro-{k.upper()}-v0")
    return ids


def _act_ids() -> list[tuple[str, str, str]]:
    """(id, task abbreviation, org kind) of every act-mode id: CRMArena's, then Pro's per kind in Pro's file order."""
    out = [
        (f"CRMArena-{get_task_spec(n).abbrev}-Act-v0", get_task_spec(n).abbrev, k)
        for k, n in ACT_TASKS
        if k == "service"
    ]
    for kind in PRO_KINDS:
        abbrevs = {get_pro_spec(n).abbrev for k, n in ACT_TASKS if k == kind}
        out += [(f"CRMArena-Pro-{kind.upper()}-{a}-Act-v0", a, kind) for a in PRO_CATEGORY_ABBREVS if a in abbrevs]
    return out


def act_env_ids(kind: str | None = None) -> list[str]:
    """The act-mode ids (the agent makes the change; the final state is graded): one per task with an act mode,
    CRMArena's and then, per Pro kind, Pro's (``CRMArena-Pro-B2B-WSR-Act-v0``).

    Args:
        kind: ``service``, ``b2b`` or ``b2c`` for one org kind's ids; None for all.

    Example:
        >>> act_env_ids("service"), act_env_ids("b2b")[:2], len(act_env_ids())
        (['CRMArena-NCR-Act-v0'], ['CRMArena-Pro-B2B-ICF-Act-v0', 'CRMArena-Pro-B2B-WSR-Act-v0'], 11)
    """
    return [env_id for env_id, _, k in _act_ids() if kind is None or k == kind]


def act_counterpart(env_id: str) -> str:
    """The act-mode id of a name-mode id (``CRMArena-NCR-v0`` -> ``CRMArena-NCR-Act-v0``); an act id is its own.

    Raises:
        ValueError: The id has no act mode; the message lists the ids that have one.

    Example:
        >>> act_counterpart("CRMArena-NCR-v0"), act_counterpart("CRMArena-Pro-B2C-QAP-v0")
        ('CRMArena-NCR-Act-v0', 'CRMArena-Pro-B2C-QAP-Act-v0')
    """
    acts = act_env_ids()
    if env_id in acts:
        return env_id
    candidate = env_id.removesuffix("-v0") + "-Act-v0"
    if candidate not in acts:
        raise ValueError(f"{env_id!r} has no act mode; the act-mode ids: {', '.join(acts)}")
    return candidate


def interactive_env_ids() -> list[str]:
    """The conversation ids: one per task (a simulated user holds part of the request back), then all nine.

    Example:
        >>> interactive_env_ids()[0], interactive_env_ids()[-1]
        ('CRMArena-KQA-Interactive-v0', 'CRMArena-Interactive-v0')
    """
    return [f"CRMArena-{abbrev}-Interactive-v0" for abbrev in TASK_ABBREVS] + ["CRMArena-Interactive-v0"]


def pro_interactive_env_ids(kind: str | None = None) -> list[str]:
    """CRMArena-Pro's conversation ids: per org kind, one per category (in Pro's file order), then the kind's mixed id.

    Args:
        kind: ``b2b`` or ``b2c``; None for both (B2B's first).

    Example:
        >>> pro_interactive_env_ids("b2c")[0], pro_interactive_env_ids("b2c")[-1], len(pro_interactive_env_ids())
        ('CRMArena-Pro-B2C-LQU-Interactive-v0', 'CRMArena-Pro-B2C-Interactive-v0', 46)
    """
    return [env_id.removesuffix("-v0") + "-Interactive-v0" for env_id in pro_env_ids(kind)]


def interactive_counterpart(env_id: str) -> str:
    """The conversation id of a single-turn id (``CRMArena-HTU-v0`` -> ``CRMArena-HTU-Interactive-v0``,
    ``CRMArena-Pro-B2B-v0`` -> ``CRMArena-Pro-B2B-Interactive-v0``); a conversation id is its own.

    Raises:
        ValueError: The id has no conversation form; the message lists the ids that have one.

    Example:
        >>> interactive_counterpart("CRMArena-v0"), interactive_counterpart("CRMArena-HTU-Interactive-v0")
        ('CRMArena-Interactive-v0', 'CRMArena-HTU-Interactive-v0')
        >>> interactive_counterpart("CRMArena-Pro-B2C-LRO-v0")
        'CRMArena-Pro-B2C-LRO-Interactive-v0'
    """
    ids = interactive_env_ids() + pro_interactive_env_ids()
    if env_id in ids:
        return env_id
    candidate = env_id.removesuffix("-v0") + "-Interactive-v0"
    if candidate not in ids:
        raise ValueError(
            f"{env_id!r} has no conversation form; every CRMArena and CRMArena-Pro single-turn id has one "
            f"(e.g. {env_ids()[0]}, {pro_env_ids()[0]})"
        )
    return candidate


def register_envs() -> None:
    """Register every id (idempotent)."""
    for env_id, abbrev in zip(env_ids(), [*TASK_ABBREVS, None], strict=True):
        if env_id in gym.registry:
            continue
        gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"task": abbrev}, max_episode_steps=MAX_TURNS)
    for kind in PRO_KINDS:
        for env_id, abbrev in zip(pro_env_ids(kind), [*PRO_CATEGORY_ABBREVS, None], strict=True):
            if env_id in gym.registry:
                continue
            gym.register(
                id=env_id,
                entry_point=ENTRY_POINT,
                kwargs={"task": abbrev, "kind": kind},
                max_episode_steps=MAX_TURNS,
            )
    for env_id, abbrev, kind in _act_ids():
        if env_id not in gym.registry:
            kwargs = {"task": abbrev} if kind == "service" else {"task": abbrev, "kind": kind}
            gym.register(id=env_id, entry_point=ACT_ENTRY_POINT, kwargs=kwargs, max_episode_steps=MAX_TURNS)
    for env_id, abbrev in zip(interactive_env_ids(), [*TASK_ABBREVS, None], strict=True):
        if env_id not in gym.registry:
            gym.register(
                id=env_id, entry_point=INTERACTIVE_ENTRY_POINT, kwargs={"task": abbrev}, max_episode_steps=MAX_TURNS
            )
    for kind in PRO_KINDS:
        for env_id, abbrev in zip(pro_interactive_env_ids(kind), [*PRO_CATEGORY_ABBREVS, None], strict=True):
            if env_id not in gym.registry:
                gym.register(
                    id=env_id,
                    entry_point=INTERACTIVE_ENTRY_POINT,
                    kwargs={"task": abbrev, "kind": kind},
                    max_episode_steps=MAX_TURNS,
                )
