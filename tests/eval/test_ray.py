"""Episodes spread over a local Ray cluster give the same results as the serial run (light: one small run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crmarena_gym.eval import evaluate, read_results
from crmarena_gym.tasks import TaskInstance

ray = pytest.importorskip("ray")


def test_ray_matches_the_serial_run(
    ray_session: object, tmp_path: Path, env_org: Path, nine_tasks: list[TaskInstance]
) -> None:
    def view(results: list[dict]) -> list[tuple]:
        return [
            (r["idx"], r["trial"], r["reward"], r["seed"], [s.get("action") for s in r["trajectory"]]) for r in results
        ]

    serial = evaluate("random", tasks=nine_tasks, org=env_org, limit=4, trials=2, seed=1, progress=False)
    on_ray = evaluate(
        "random",
        tasks=nine_tasks,
        org=env_org,
        limit=4,
        trials=2,
        seed=1,
        progress=False,
        ray=True,
        concurrency=2,
        out=tmp_path / "run",
    )
    assert view(on_ray.results) == view(serial.results)
    assert len(read_results(tmp_path / "run" / "results.jsonl")) == 8
