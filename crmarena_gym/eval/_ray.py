"""Spreading evaluation episodes over a Ray cluster (a local one by default).

Ray is optional (``pip install 'crmarena-gym[rl]'``) and imported only here, when asked for. Each Ray
worker process builds its environment and policy once per run (cached by the run's token) and plays
the episodes it is handed; the driver keeps at most ``max_in_flight`` episodes in flight and yields
results as they end, so that the caller writes them to ``results.jsonl`` one by one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from crmarena_gym.policies import Policy

__all__ = ["import_ray", "run_on_ray"]

# Worker processes keep their environment and policy per run token.
_WORKERS: dict[str, Any] = {}


def import_ray() -> Any:
    """Import Ray, or fail with the command that installs it."""
    try:
        import ray
    except ImportError as err:
        raise ImportError(
            "--ray needs Ray: pip install 'crmarena-gym[rl]' (or pip install 'ray[rllib]'); "
            "without --ray, --concurrency runs episodes on threads"
        ) from err
    return ray


def _play(
    token: str,
    env_id: str,
    org_path: str,
    instances: list[dict[str, Any]],
    factory: Callable[[], Policy],
    env_kwargs: Mapping[str, Any],
    wrappers: Sequence[Mapping[str, Any]],
    seed: int,
    idx: int,
    trial: int,
) -> dict[str, Any]:
    from crmarena_gym.eval._runner import _Worker
    from crmarena_gym.org import LocalOrg
    from crmarena_gym.tasks import TaskInstance

    worker = _WORKERS.get(token)
    if worker is None:
        tasks = [TaskInstance.model_validate(r) for r in instances]
        worker = _WORKERS[token] = _Worker(env_id, LocalOrg(org_path), tasks, factory, env_kwargs, seed, wrappers)
    return worker.run(idx, trial)


def run_on_ray(
    pending: Sequence[tuple[int, int]],
    *,
    env_id: str,
    org_path: str,
    instances: list[dict[str, Any]],
    factory: Callable[[], Policy],
    env_kwargs: Mapping[str, Any],
    seed: int,
    max_in_flight: int,
    address: str | None = None,
    wrappers: Sequence[Mapping[str, Any]] = (),
) -> Iterator[dict[str, Any]]:
    """Play ``pending`` (instance, trial) episodes as Ray tasks; yield each record as it ends.

    Args:
        pending: The episodes to play.
        env_id: The registered environment id.
        org_path: The org database (every node must see it at this path).
        instances: The task set, as JSON records.
        factory: Builds a policy (must pickle: a :class:`~crmarena_gym.eval.PolicyFactory` does).
        env_kwargs: More ``gym.make`` arguments.
        seed: The run's seed.
        max_in_flight: Episodes submitted and not yet finished, at most.
        address: A cluster address; None starts (or joins) a local cluster.
        wrappers: Wrapper specs around each environment (see :func:`~crmarena_gym.eval.evaluate`).
    """
    ray = import_ray()
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    play = ray.remote(num_cpus=1)(_play)
    token = uuid.uuid4().hex
    shared = [ray.put(value) for value in (instances, factory, dict(env_kwargs), list(wrappers))]
    queue = list(pending)
    queue.reverse()
    running: list[Any] = []
    try:
        while queue or running:
            while queue and len(running) < max(1, max_in_flight):
                idx, trial = queue.pop()
                running.append(play.remote(token, env_id, org_path, *shared, seed, idx, trial))
            finished, running = ray.wait(running, num_returns=1)
            for ref in finished:
                yield ray.get(ref)
    finally:
        for ref in running:
            ray.cancel(ref, force=True)
