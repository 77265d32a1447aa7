"""Recorded episodes of the discrete env, for comparing two implementations of its step (a script and a module).

Run as a script against any checkout (``PYTHONPATH`` names it), it plays the same episodes at each help level
and pickles what the policy saw at every step: the observation arrays (bytes), the mask, the candidate
features, the rewards and the small ``info`` (every slot's text, the text sent). It uses only the package's
public API, so that an older commit records its episodes with its own code (tests/rl/test_step_reference.py).

Usage:
    python tests/rl/_step_trace.py ORG TASKS.jsonl OUT.pickle [LEVEL ...]
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

import numpy as np

#: The levels recorded by default (``text`` has no discrete step).
LEVELS = ("tools", "parsed", "oracle-args")


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return repr(value)


def trace(org: str, tasks: str, level: str, *, episodes_per_instance: int = 2, seed: int = 5) -> list[Any]:
    """Every step of ``episodes_per_instance`` episodes of each instance of ``tasks`` at ``level``.

    The policy takes a call with priority (7 times in 10; the pipelines go deep: searches, spans, typed
    arguments), else any candidate, and once in 20 steps an empty slot (the wasted turn's path).
    """
    from crmarena_gym.rl import make_discrete_env
    from crmarena_gym.tasks import load_tasks

    instances = load_tasks(tasks)
    env = make_discrete_env(org=org, tasks=tasks, level=level)
    rng = np.random.default_rng(seed)
    steps: list[Any] = []
    for inst in instances:
        for _ in range(episodes_per_instance):
            obs, info = env.reset(options={"task_id": inst.idx})
            steps.append((_plain(obs), _plain(info)))
            done = False
            while not done:
                mask = obs["action_mask"] > 0
                valid = np.flatnonzero(mask)
                calls = [i for i in valid if not env.slots[i].startswith("submit ")]
                roll = rng.random()
                if roll < 0.05 or not len(valid):
                    action = int(rng.choice(np.flatnonzero(~mask))) if (~mask).any() else 0
                elif calls and roll < 0.75:
                    action = int(rng.choice(calls))
                else:
                    action = int(rng.choice(valid))
                obs, reward, terminated, truncated, info = env.step(action)
                done = terminated or truncated
                steps.append((action, _plain(obs), float(reward), terminated, truncated, _plain(info)))
    return steps


def main(argv: list[str]) -> int:
    org, tasks, out, *levels = argv
    recorded = {level: trace(org, tasks, level) for level in levels or LEVELS}
    with open(out, "wb") as f:
        pickle.dump(recorded, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
