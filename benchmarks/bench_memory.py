"""Memory and start-up of many environments in one process: RSS of 64 envs against one, and the time of a
second ``gym.make`` against the first.

Each figure comes from a fresh Python process (so nothing is warm before it is measured), on the
embedded org and its default task set (generated into the cache first if needed). RSS is read from
``/proc/self/statm`` (Linux).

Usage:
    python benchmarks/bench_memory.py [--envs 64] [--env-id CRMArena-v0]

Targets: 64 envs under 1.5x the RSS of one; a second ``gym.make`` under 20 ms.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    import gymnasium as gym
    import crmarena_gym

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    env_id, n = sys.argv[1], int(sys.argv[2])
    base = rss()
    started = time.perf_counter()
    envs = [gym.make(env_id)]
    first = time.perf_counter() - started
    for env in envs:
        env.reset(seed=0)
    one = rss()
    times = []
    for i in range(n - 1):
        started = time.perf_counter()
        env = gym.make(env_id)
        times.append(time.perf_counter() - started)
        env.reset(seed=i)
        envs.append(env)
    print(json.dumps({"base": base, "one": one, "all": rss(), "first": first, "next": times}))
    """
)


def _run(env_id: str, n: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _CHILD, env_id, str(n)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, default=64, help="environments in the process")
    parser.add_argument("--env-id", default="CRMArena-v0", help="the registered id to make")
    args = parser.parse_args()

    _run(args.env_id, 1)  # generates the embedded org and its task set into the cache if needed
    r = _run(args.env_id, args.envs)
    mib = 1024 * 1024
    per_env = (r["all"] - r["one"]) / max(1, args.envs - 1)
    later = sorted(r["next"])
    median = later[len(later) // 2] if later else float("nan")
    print(
        f"{args.env_id}: RSS after import {r['base'] / mib:.1f} MiB, one env {r['one'] / mib:.1f} MiB, "
        f"{args.envs} envs {r['all'] / mib:.1f} MiB ({per_env / 1024:.0f} KiB per extra env)"
    )
    print(f"RSS {args.envs} envs / one env: {r['all'] / r['one']:.2f}x (target < 1.5x)")
    print(
        f"gym.make: first {r['first'] * 1000:.0f} ms, later ones median {median * 1000:.1f} ms "
        f"(max {later[-1] * 1000:.1f} ms); later/first {median / r['first']:.3f}x (target < 20 ms)"
    )


if __name__ == "__main__":
    main()
