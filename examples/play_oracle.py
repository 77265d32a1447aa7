"""Play one episode of each of the nine tasks with the oracle, through ``gym.make``.

The oracle knows each instance's hidden parameters (never its answer) and reaches the answer through
the task-specific functions, exactly as a function-calling agent would. Run:

    python examples/play_oracle.py
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.org import LocalOrg, default_org_path
from crmarena_gym.tasks import TASK_SPECS, default_tasks, oracle_trace


def main() -> None:
    org = LocalOrg(default_org_path())  # the embedded org, generated on first use
    instances = {inst.idx: inst for inst in default_tasks()}
    for spec in TASK_SPECS:
        env = gym.make(f"CRMArena-{spec.abbrev}-v0", toolset="functions")
        obs, info = env.reset(seed=0)
        instance = instances[info["idx"]]
        print(f"=== {spec.abbrev} ({spec.name}), instance {instance.idx}, asked by a {info['persona']}")
        print(obs.split("\n\n")[0][:300])
        trace = oracle_trace(instance, org.with_today(info["today"]))
        for call in trace.actions:
            action = call.to_action()
            obs, reward, _, _, step_info = env.step(action)
            shown = obs if len(obs) < 160 else obs[:157] + "..."
            print(f"  > {action[:110]}")
            print(f"  < {shown}")
        print(f"  reward {reward} after {step_info['turn']} turns\n")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help, and no stray arguments
    main()
