"""Benchmark of the OpenEnv server: steps per second over HTTP and WebSocket against in-process steps,
and whole sessions per second at concurrency 1, 8 and 64.

The same oracle episodes (training instances of all nine tasks, each played to reward 1 with the task
functions) are played

* in process: :class:`~crmarena_gym.integrations.openenv.CRMArenaEnvironment` called directly (the
  baseline: the environment's own cost);
* over HTTP: :class:`~crmarena_gym.integrations.openenv.CRMArenaHTTPClient`, one request per step;
* over WebSocket: :class:`~crmarena_gym.integrations.openenv.CRMArenaClient`, one message per step;

one after another, for steps per second (resets excluded) and the ratio to in process; then with 1, 8
and 64 clients at once, for whole sessions (reset, every step, the end) per second. The server runs in
this process, on 127.0.0.1, with uvicorn.

Run: ``python benchmarks/bench_openenv.py [--episodes 64] [--org PATH]``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from crmarena_gym.chat import instance_org, make_chat_env
from crmarena_gym.datagen import generate_org
from crmarena_gym.integrations.openenv import (
    CRMArenaAction,
    CRMArenaClient,
    CRMArenaHTTPClient,
    CRMArenaHub,
    HubConfig,
    ServerThread,
)
from crmarena_gym.org import LocalOrg
from crmarena_gym.tasks import oracle_trace

Episode = tuple[int, list[CRMArenaAction]]


def oracle_episodes(hub: CRMArenaHub, n: int) -> list[Episode]:
    """``n`` training instances spread over the nine tasks, each with its oracle's calls as actions."""
    org = LocalOrg(hub.org.path)
    instances = hub.instances("train", None)
    chosen = instances[:: max(1, len(instances) // n)][:n]
    episodes = []
    for instance in chosen:
        _, info = make_chat_env(org, instances=[instance]).reset(seed=0)
        home = LocalOrg(instance_org(instance, org.path))  # an instance drawn from a sibling org is solved there
        trace = oracle_trace(instance, home.with_today(info["today"]))
        actions = [CRMArenaAction(tool_call={"name": c.name, "arguments": dict(c.arguments)}) for c in trace.actions]
        episodes.append((instance.idx, actions))
    return episodes


def check(observation: Any, last: bool) -> None:
    if observation.error is not None or (last and observation.reward != 1.0):
        raise SystemExit(f"an oracle step failed: {observation.text[:300]}")


def in_process(hub: CRMArenaHub, episodes: list[Episode]) -> tuple[int, float]:
    steps, spent = 0, 0.0
    for task_id, actions in episodes:
        env = hub.make_environment()
        env.reset(split="train", task_id=task_id, seed=0)
        start = time.perf_counter()
        for n, action in enumerate(actions):
            check(env.step(action), n == len(actions) - 1)
        spent += time.perf_counter() - start
        steps += len(actions)
        env.close()
    return steps, spent


def over_http(url: str, episodes: list[Episode]) -> tuple[int, float]:
    steps, spent = 0, 0.0
    with CRMArenaHTTPClient(url) as client:
        for task_id, actions in episodes:
            client.reset(split="train", task_id=task_id, seed=0)
            start = time.perf_counter()
            for n, action in enumerate(actions):
                check(client.step(action).observation, n == len(actions) - 1)
            spent += time.perf_counter() - start
            steps += len(actions)
    return steps, spent


def over_ws(url: str, episodes: list[Episode]) -> tuple[int, float]:
    async def run() -> tuple[int, float]:
        steps, spent = 0, 0.0
        async with CRMArenaClient(base_url=url, message_timeout_s=300) as client:
            for task_id, actions in episodes:
                await client.reset(split="train", task_id=task_id, seed=0)
                start = time.perf_counter()
                for n, action in enumerate(actions):
                    check((await client.step(action)).observation, n == len(actions) - 1)
                spent += time.perf_counter() - start
                steps += len(actions)
        return steps, spent

    return asyncio.run(run())


def http_sessions(url: str, episodes: list[Episode], concurrency: int) -> float:
    def play(episode: Episode) -> None:
        task_id, actions = episode
        with CRMArenaHTTPClient(url, timeout=300) as client:
            client.reset(split="train", task_id=task_id, seed=0)
            for n, action in enumerate(actions):
                check(client.step(action).observation, n == len(actions) - 1)

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(play, episodes))
    return len(episodes) / (time.perf_counter() - start)


def ws_sessions(url: str, episodes: list[Episode], concurrency: int) -> float:
    async def run() -> float:
        gate = asyncio.Semaphore(concurrency)

        async def play(episode: Episode) -> None:
            task_id, actions = episode
            async with gate, CRMArenaClient(base_url=url, message_timeout_s=300) as client:
                await client.reset(split="train", task_id=task_id, seed=0)
                for n, action in enumerate(actions):
                    check((await client.step(action)).observation, n == len(actions) - 1)

        start = time.perf_counter()
        await asyncio.gather(*(play(e) for e in episodes))
        return len(episodes) / (time.perf_counter() - start)

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64, help="oracle episodes per measurement (default 64)")
    parser.add_argument("--org", help="an org database (default: one generated at scale 0.5, seed 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        org = args.org
        if org is None:
            org = str(Path(tmp) / "org.sqlite")
            generate_org(org, seed=3, scale=0.5)
        hub = CRMArenaHub(HubConfig(org=org, per_task=max(8, args.episodes // 9 + 1), max_sessions=512))
        episodes = oracle_episodes(hub, args.episodes)
        n_steps = sum(len(a) for _, a in episodes)
        print(f"{len(episodes)} oracle episodes of 9 tasks, {n_steps} steps; server on 127.0.0.1 (uvicorn)")
        with ServerThread(hub=hub) as server:
            over_http(server.url, episodes[:4])  # warm up both paths
            over_ws(server.url, episodes[:4])
            base_steps, base_time = in_process(hub, episodes)
            base = base_steps / base_time
            print(f"in process:  {base:9.1f} steps/s (baseline)")
            for name, run in (("HTTP", over_http), ("WebSocket", over_ws)):
                steps, spent = run(server.url, episodes)
                rate = steps / spent
                print(f"{name + ':':12} {rate:9.1f} steps/s  ({rate / base:.3f} x in process)")
            for concurrency in (1, 8, 64):
                http = http_sessions(server.url, episodes, concurrency)
                ws = ws_sessions(server.url, episodes, concurrency)
                print(f"concurrency {concurrency:2}: HTTP {http:7.1f} sessions/s, WebSocket {ws:7.1f} sessions/s")


if __name__ == "__main__":
    main()
