"""The discrete RL step: steps per CPU-second of ``make_discrete_env`` at each help level, against an older commit.

Each round plays, for this checkout and for the older commit (default 334e9d2, the last before the step
cached its candidates, spans and features; checked out into a temporary git worktree), in a fresh process
per side and level, the same episodes: every instance of a generated training set (``generate_tasks(org,
seed=1, per_task=--per-task)`` over the nine families) once in a shuffled order (the ``cold`` pass: each
instance's first episode), then ``--passes`` more times in other orders (the ``warm`` passes: a training
run visits each instance many times). The policy picks a random candidate (a PPO policy's first
iterations); an empty slot is never chosen.

Only the environment's work is timed: ``time.process_time`` (and the wall clock) around each ``reset`` and
``step``, summed, in the child; the policy and the check below are not. Each child also hashes every
observation array, reward and candidate list it saw: both sides must report the same digest (the same
candidates and features, step for step), or the script says so and exits 1.

The sides alternate within each round and which goes first alternates between rounds; medians are
compared, and each round's ratio is printed too. The machine's load is printed before and after, and each
side's peak resident memory (the caches the step keeps cost memory). Target (issue 32): the ``parsed``
level's warm steps per CPU-second at least 2x the older commit's.

Usage:
    python benchmarks/bench_discrete.py [--rounds 5] [--levels parsed tools] [--per-task 10] [--passes 3]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
from pathlib import Path

from _old_commit import REPO_ROOT, Sides, alternating, load_line, old_checkout

#: The commit before the step was made fast (issue 32, item 4).
STEP_COMMIT = "334e9d2"
TARGET = 2.0

_CHILD = """
import hashlib, json, resource, sys, time
import numpy as np
from crmarena_gym.rl import make_discrete_env
from crmarena_gym.tasks import load_tasks

org, tasks, level, passes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ids = [inst.idx for inst in load_tasks(tasks)]
env = make_discrete_env(org=org, tasks=tasks, level=level)
rng = np.random.default_rng(0)
digest = hashlib.sha256()


def seen(obs, reward, info):
    for key in sorted(obs):
        digest.update(obs[key].tobytes())
    digest.update(repr((reward, info.get("candidates"))).encode())


out = {}
for n in range(passes + 1):
    cpu = wall = 0.0
    steps = 0
    for idx in rng.permutation(ids).tolist():
        c0, w0 = time.process_time(), time.perf_counter()
        obs, info = env.reset(options={"task_id": idx})
        cpu += time.process_time() - c0
        wall += time.perf_counter() - w0
        seen(obs, 0.0, info)
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            c0, w0 = time.process_time(), time.perf_counter()
            obs, reward, terminated, truncated, info = env.step(action)
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            steps += 1
            seen(obs, reward, info)
            done = terminated or truncated
    side = "cold" if n == 0 else "warm"
    prior = out.get(side, {"steps": 0, "cpu": 0.0, "wall": 0.0})
    out[side] = {"steps": prior["steps"] + steps, "cpu": prior["cpu"] + cpu, "wall": prior["wall"] + wall}
out["digest"] = digest.hexdigest()
out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def _prepare(workdir: Path, per_task: int) -> tuple[Path, Path]:
    """The org (the default one) and the training instances, saved for both sides' children."""
    from crmarena_gym.org import default_org_path
    from crmarena_gym.tasks import generate_tasks, save_tasks

    org = default_org_path()
    tasks = workdir / "tasks.jsonl"
    save_tasks(generate_tasks(org, seed=1, per_task=per_task, allow_fewer=True), tasks)
    return org, tasks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--levels", nargs="+", default=["parsed", "tools"])
    parser.add_argument("--per-task", type=int, default=10, help="instances per family (default 10)")
    parser.add_argument("--passes", type=int, default=3, help="warm passes over the instances (default 3)")
    parser.add_argument("--commit", default=STEP_COMMIT, help=f"the older commit (default {STEP_COMMIT})")
    args = parser.parse_args()
    if args.rounds < 1 or args.passes < 1 or args.per_task < 1:
        parser.error("--rounds, --passes and --per-task must be at least 1")
    # A terminated run still removes its worktree of the older commit (the context manager's cleanup).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    print(load_line())
    sides_names = ("old", "new")
    results: dict[tuple[str, str], list[dict[str, dict[str, float]]]] = {}
    digests: dict[tuple[str, str], set[str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_discrete_") as tmp, old_checkout(args.commit) as old:
        workdir = Path(tmp)
        org, tasks = _prepare(workdir, args.per_task)
        sides = Sides({"old": old, "new": REPO_ROOT}, workdir)
        for side in sides_names:
            sides.check(side)
        print(f"org {org}; {tasks.read_text().count(chr(10))} instances; 1 cold and {args.passes} warm passes")
        for level in args.levels:  # untimed: bytecode, and what each side's cache lacks
            for side in sides_names:
                sides.run(side, ["-c", _CHILD, str(org), str(tasks), level, "0"])
        for n, side in alternating(sides_names, args.rounds):
            for level in args.levels:
                run = sides.run(side, ["-c", _CHILD, str(org), str(tasks), level, str(args.passes)])
                found = json.loads(run.stdout.strip().splitlines()[-1])
                digests.setdefault((level, side), set()).add(found.pop("digest"))
                results.setdefault((level, side), []).append(found)
                warm = found["warm"]
                print(
                    f"  round {n} {side:3} {level:11} warm {warm['steps'] / warm['cpu']:7.0f} steps/CPU-s "
                    f"({warm['steps']} steps, {warm['cpu']:.2f} s CPU, {warm['wall']:.2f} s wall)"
                )
    print(load_line())
    failed = False
    header = ("level", "pass", "old steps/CPU-s", "new steps/CPU-s", "CPU ratio", "wall ratio")
    print("\n{:11} {:5} {:>16} {:>16} {:>9} {:>10}".format(*header))
    for level in args.levels:
        for which in ("cold", "warm"):
            rate = {}
            wall = {}
            for side in sides_names:
                runs = results[(level, side)]
                rate[side] = statistics.median(r[which]["steps"] / r[which]["cpu"] for r in runs)
                wall[side] = statistics.median(r[which]["steps"] / r[which]["wall"] for r in runs)
            ratio = rate["new"] / rate["old"]
            print(
                f"{level:11} {which:5} {rate['old']:16.0f} {rate['new']:16.0f} {ratio:8.2f}x "
                f"{wall['new'] / wall['old']:9.2f}x"
            )
            paired = sorted(
                (n[which]["steps"] / n[which]["cpu"]) / (o[which]["steps"] / o[which]["cpu"])
                for o, n in zip(results[(level, "old")], results[(level, "new")], strict=True)
            )
            print(f"{'':17} per round (the sides of one round): {' '.join(f'{r:.2f}x' for r in paired)}")
            if level == "parsed" and which == "warm" and ratio < TARGET:
                print(f"  below the target of {TARGET}x")
        rss = {side: statistics.median(r["peak_rss_mib"] for r in results[(level, side)]) for side in sides_names}
        print(f"{level:11} peak RSS of a child: old {rss['old']:.0f} MiB, new {rss['new']:.0f} MiB")
        same = digests[(level, "old")] == digests[(level, "new")] and len(digests[(level, "new")]) == 1
        print(f"{level:11} same observations, features and candidates as the older commit: {'yes' if same else 'NO'}")
        failed |= not same
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
