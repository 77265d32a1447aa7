"""A two-node Ray cluster on this machine: PPO env runners and evaluation episodes placed on both nodes.

Run by ``test_cluster.py`` in its own process (a test session's Ray is already initialised), as
``python tests/rl/two_node_cluster.py ORG TASKS OUT``: it starts a head node and a second node
(``ray.cluster_utils.Cluster``, one CPU each), connects to the running cluster by its address (as
``--address`` does on a real cluster), builds PPO with two env runners (one CPU each, so that the
scheduler must use both nodes), trains one small iteration, then plays evaluation episodes with
``evaluate(..., ray=True, ray_address=...)`` and writes, as JSON, the node of each env runner and of
each episode.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from crmarena_gym.policies import RandomPolicy


class NodeRecordingPolicy(RandomPolicy):
    """The random policy, noting in a file the Ray node each episode runs on."""

    def __init__(self, log: str) -> None:
        super().__init__(seed=0)
        self.log = log

    def reset(self, observation: str, info: dict[str, Any], *, seed: int | None = None) -> None:
        import ray

        super().reset(observation, info, seed=seed)
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(ray.get_runtime_context().get_node_id() + "\n")


def main(org: str, tasks: str, out: str) -> None:
    os.environ["RAY_AUTH_MODE"] = "disabled"
    import ray
    from ray.cluster_utils import Cluster

    from crmarena_gym.eval import evaluate
    from crmarena_gym.rl import masked_ppo_config

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
        config = masked_ppo_config(
            {"org": org, "tasks": tasks},
            num_env_runners=2,
            hidden=(16,),
            candidate_hidden=(16,),
            train_batch_size=64,
            minibatch_size=32,
            num_epochs=1,
        )
        algo = config.build_algo()
        runner_nodes = algo.env_runner_group.foreach_env_runner(
            lambda runner: __import__("ray").get_runtime_context().get_node_id(), local_env_runner=False
        )
        result = algo.train()
        steps = int(result["env_runners"]["num_env_steps_sampled"])
        algo.stop()  # frees the env runners' CPUs for the evaluation episodes
        log = str(Path(out).with_suffix(".episodes"))
        run = evaluate(
            lambda: NodeRecordingPolicy(log),
            tasks=tasks,
            org=org,
            limit=6,
            seed=0,
            progress=False,
            ray=True,
            ray_address=cluster.address,
            concurrency=2,
        )
        episode_nodes = Path(log).read_text().split()
        figures = {
            "nodes": nodes,
            "runner_nodes": sorted(runner_nodes),
            "steps": steps,
            "episodes": len(run.results),
            "episode_nodes": episode_nodes,
        }
        Path(out).write_text(json.dumps(figures))
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:4])
