"""Benchmark of the OpenEnv server: steps per second over HTTP and WebSocket against in-process steps,
and whole sessions per second at concurrency 1, 64 and 256, none of them refused or failed.

The same oracle episodes (training instances of all nine tasks, each played to reward 1 with the task
functions) are played

* in process: :class:`~crmarena_gym.integrations.openenv.CRMArenaEnvironment` called directly (the
  baseline: the environment's own cost);
* over HTTP: :class:`~crmarena_gym.integrations.openenv.CRMArenaHTTPClient`, one request per step;
* over WebSocket: :class:`~crmarena_gym.integrations.openenv.CRMArenaClient`, one message per step;

one after another, for steps per second (resets excluded) and the ratio to in process; then whole sessions
(reset, every step, the end) per second, in process one after another (the baseline) and with 1, 64 and 256
clients at once over each transport, HTTP and WebSocket alternating at each level. A session that is refused
(capacity), answers an error or ends below reward 1 stops the run: every figure printed is of sessions that
all succeeded. The server runs in this process (on 127.0.0.1, with uvicorn), so the CPU seconds printed beside
the wall-clock seconds are the clients' and the server's together; the machine's load average is printed
before and after, since the machine may be shared.

Run: ``python benchmarks/bench_openenv.py [--episodes 64] [--sessions N] [--org PATH]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

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
CONCURRENCY = (1, 64, 256)


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


class Clock:
    """Wall-clock and CPU seconds of this process (clients and server) over a block."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


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


def sessions_in_process(hub: CRMArenaHub, sessions: list[Episode]) -> None:
    for task_id, actions in sessions:
        env = hub.make_environment()
        env.reset(split="train", task_id=task_id, seed=0)
        for n, action in enumerate(actions):
            check(env.step(action), n == len(actions) - 1)
        env.close()


def http_sessions(url: str, sessions: list[Episode], concurrency: int) -> None:
    def play(episode: Episode) -> None:
        task_id, actions = episode
        with CRMArenaHTTPClient(url, timeout=600) as client:
            check(client.reset(split="train", task_id=task_id, seed=0).observation, False)
            for n, action in enumerate(actions):
                check(client.step(action).observation, n == len(actions) - 1)

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(play, sessions))


def ws_sessions(url: str, sessions: list[Episode], concurrency: int) -> None:
    async def run() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def play(episode: Episode) -> None:
            task_id, actions = episode
            async with gate, CRMArenaClient(base_url=url, message_timeout_s=600) as client:
                check((await client.reset(split="train", task_id=task_id, seed=0)).observation, False)
                for n, action in enumerate(actions):
                    check((await client.step(action)).observation, n == len(actions) - 1)

        await asyncio.gather(*(play(e) for e in sessions))

    asyncio.run(run())


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64, help="distinct oracle episodes (default 64)")
    parser.add_argument(
        "--sessions", type=int, help="sessions per concurrency level (default: twice the concurrency, at least 64)"
    )
    parser.add_argument("--org", help="an org database (default: one generated at scale 0.5, seed 3)")
    args = parser.parse_args()
    print(load())
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
            print("whole sessions (reset, every step, reward 1), all succeeding:")
            for concurrency in CONCURRENCY:
                count = args.sessions or max(64, 2 * concurrency)
                sessions = [episodes[i % len(episodes)] for i in range(count)]
                with Clock() as baseline:
                    sessions_in_process(hub, sessions)
                line = [f"  concurrency {concurrency:3}, {count} sessions: in process {count / baseline.wall:6.1f}/s"]
                for name, play in (("HTTP", http_sessions), ("WebSocket", ws_sessions)):
                    with Clock() as clock:
                        play(server.url, sessions, concurrency)
                    rate = count / clock.wall
                    line.append(
                        f"{name} {rate:6.1f}/s ({rate * baseline.wall / count:.2f} x; "
                        f"wall {clock.wall:5.1f} s, CPU {clock.cpu:5.1f} s)"
                    )
                print("; ".join(line))
            health = httpx.get(server.url + "/health", timeout=60).json()
            refused = {k: v for k, v in health["refused"].items() if v}
            if refused or health["live_episodes"]:
                raise SystemExit(f"refusals or leftover episodes: {refused}, {health['live_episodes']} live")
            print(f"no refusals, no episode left live ({health['episodes_started']} episodes started)")
    print(load())


if __name__ == "__main__":
    main()
