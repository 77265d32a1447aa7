"""Scale-out: PPO env runners and evaluation episodes spread over the nodes of a running Ray cluster.

The cluster (a head and a second node on this machine, ``ray.cluster_utils.Cluster``) runs in its own
process (``two_node_cluster.py``): the test session's Ray is a single local node already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")


def test_env_runners_and_eval_episodes_run_on_both_nodes_of_a_two_node_cluster(
    env_org: Path, env_tasks_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "placement.json"
    script = Path(__file__).with_name("two_node_cluster.py")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    done = subprocess.run(
        [sys.executable, str(script), str(env_org), str(env_tasks_file), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert len(figures["nodes"]) == 2
    assert figures["runner_nodes"] == figures["nodes"]  # one env runner on each node
    assert figures["steps"] >= 64
    assert figures["episodes"] == 6 and len(figures["episode_nodes"]) == 6
    assert set(figures["episode_nodes"]) == set(figures["nodes"])  # episodes played on both nodes


def test_eval_takes_the_cluster_address_as_address_or_ray_address() -> None:
    from crmarena_gym.cli import build_parser

    parser = build_parser()
    for flag in ("--address", "--ray-address"):
        args = parser.parse_args(["eval", "--policy", "random", "--ray", flag, "ray://10.0.0.5:10001"])
        assert args.ray and args.ray_address == "ray://10.0.0.5:10001"
