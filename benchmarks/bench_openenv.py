"""Benchmark of the OpenEnv server (``crmarena-gym serve-env``): the CPU of a step over HTTP and WebSocket
against the same step in process, and whole sessions per second at concurrency 1, 64 and 256, none of them
refused or failed.

The oracle's actions on training instances of all nine tasks are recorded once (each episode reaches
reward 1 with the task functions) and replayed

* in process: :class:`~crmarena_gym.integrations.openenv.CRMArenaEnvironment` called directly (the
  baseline: the environment's own cost);
* over HTTP: :class:`~crmarena_gym.integrations.openenv.CRMArenaHTTPClient`, one request per step;
* over WebSocket: :class:`~crmarena_gym.integrations.openenv.CRMArenaClient` (OpenEnv's ``EnvClient``),
  one message per step;

in alternating rounds (in process, HTTP, WebSocket, again ...), each episode's best round kept on each side.
The server is ``crmarena-gym serve-env`` in a process of its own, so its CPU (every thread's, from ``/proc``)
is measured apart from the client's (this process's ``process_time``); resets are left out of the step
figures. Printed per step: the server's CPU, the client's, the wall time, the server's CPU as a multiple of
the in-process step's, and the framework's share of the server's CPU (what is not the environment's step).

Then whole sessions (reset, every step, the end) per second, with 1, 64 and 256 clients at once over each
transport, HTTP and WebSocket alternating at each level, each with the server's and the clients' CPU per
session beside the in-process session's. A session that is refused (capacity), answers an error or ends
below reward 1 stops the run: every figure printed is of sessions that all succeeded. The machine's load
average is printed before and after, since the machine may be shared.

``--compare-with DIR`` serves the same episodes from another checkout's ``crmarena_gym`` too (a second
``serve-env``, its package first on ``PYTHONPATH``; ``git worktree add /tmp/old COMMIT`` makes one), stepped
over WebSocket in the same alternating rounds: the code before and after a change, measured side by side.

The ratio printed is the server's CPU per WebSocket step over the in-process step's CPU, for the same env,
instances and actions. The in-process steps run back to back; the server's alternate with the client's turns
and waits, so its environment step itself runs on colder caches and costs more than in process: the ratio
counts that against the server too. A last line measures that effect: the in-process steps taken one at a
time, each after a pause as long as the client's turn in that round's WebSocket steps (the steps' CPU alone).

Run: ``python benchmarks/bench_openenv.py [--episodes 64] [--rounds 5] [--sessions N] [--org PATH]
[--compare-with DIR]``.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
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


class Server:
    """``crmarena-gym serve-env`` in a process of its own (a context manager), and its CPU seconds."""

    def __init__(self, org: str, per_task: int, checkout: str | None = None) -> None:
        command = [sys.executable, "-m", "crmarena_gym.cli", "serve-env", "--port", "0", "--org", org]
        command += ["--per-task", str(per_task), "--max-sessions", "512", "--max-connections", "1024"]
        env = dict(os.environ)
        if checkout is not None:  # that checkout's crmarena_gym first (``-m`` puts the working directory first)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (checkout, env.get("PYTHONPATH")) if p)
            where = subprocess.run(
                [sys.executable, "-c", "import crmarena_gym; print(crmarena_gym.__file__)"],
                cwd=checkout,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            if not Path(where).resolve().is_relative_to(Path(checkout).resolve()):
                raise SystemExit(f"--compare-with: {checkout!r} would serve the crmarena_gym of {where}")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=checkout)
        announced = self.process.stdout.readline() if self.process.stdout else ""
        found = re.search(r"http://\S+", announced)
        if found is None:
            self.process.kill()
            raise SystemExit(f"the server did not start: {announced!r}")
        self.url = found.group(0)

    def cpu(self) -> float:
        """The server's CPU seconds so far: every thread's run time (nanoseconds, /proc/PID/task/*/schedstat),
        or where that is missing the process's user and system time (clock ticks, /proc/PID/stat)."""
        total, found = 0, False
        for path in glob.glob(f"/proc/{self.process.pid}/task/*/schedstat"):
            try:
                with open(path, encoding="ascii") as stat:
                    total += int(stat.read().split()[0])
                found = True
            except (OSError, ValueError, IndexError):
                pass  # a thread that ended meanwhile
        if found:
            return total / 1e9
        with open(f"/proc/{self.process.pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Spent:
    """What steps or sessions cost: server CPU, client CPU, wall seconds, and how many; and block by block
    (an episode's steps), each ``(server, client, wall, count)``."""

    server: float = 0.0
    client: float = 0.0
    wall: float = 0.0
    count: int = 0
    blocks: list[tuple[float, float, float, int]] = field(default_factory=list)

    def add(self, server: float, client: float, wall: float, count: int) -> None:
        self.server, self.client, self.wall, self.count = (
            self.server + server,
            self.client + client,
            self.wall + wall,
            self.count + count,
        )
        self.blocks.append((server, client, wall, count))

    def per(self) -> tuple[float, float, float]:
        return self.server / self.count, self.client / self.count, self.wall / self.count


@contextmanager
def measured(spent: Spent, server: Server | None, count: int) -> Iterator[None]:
    """Add a block's server CPU (none in process), client CPU and wall time to ``spent``."""
    before = server.cpu() if server else 0.0
    cpu, wall = time.process_time(), time.perf_counter()
    yield
    client, wall = time.process_time() - cpu, time.perf_counter() - wall
    spent.add((server.cpu() - before) if server else 0.0, client, wall, count)


def in_process(hub: CRMArenaHub, episodes: list[Episode], server: Server) -> Spent:
    spent = Spent()
    for task_id, actions in episodes:
        env = hub.make_environment()
        env.reset(split="train", task_id=task_id, seed=0)
        with measured(spent, None, len(actions)):
            for n, action in enumerate(actions):
                check(env.step(action), n == len(actions) - 1)
        env.close()
    return spent


def in_process_paced(hub: CRMArenaHub, episodes: list[Episode], pause: float) -> Spent:
    """The in-process steps each taken after a pause of ``pause`` seconds (the CPU of the steps alone), as a
    served step comes after the client's turn: what the machine ran meanwhile has had the caches."""
    spent = Spent()
    for task_id, actions in episodes:
        env = hub.make_environment()
        env.reset(split="train", task_id=task_id, seed=0)
        episode = Spent()
        for n, action in enumerate(actions):
            time.sleep(pause)
            with measured(episode, None, 1):
                check(env.step(action), n == len(actions) - 1)
        spent.add(episode.server, episode.client, episode.wall, episode.count)
        env.close()
    return spent


def over_http(hub: CRMArenaHub, episodes: list[Episode], server: Server) -> Spent:
    spent = Spent()
    with CRMArenaHTTPClient(server.url) as client:
        for task_id, actions in episodes:
            client.reset(split="train", task_id=task_id, seed=0)
            with measured(spent, server, len(actions)):
                for n, action in enumerate(actions):
                    check(client.step(action).observation, n == len(actions) - 1)
    return spent


def over_ws(hub: CRMArenaHub, episodes: list[Episode], server: Server) -> Spent:
    async def run() -> Spent:
        spent = Spent()
        async with CRMArenaClient(base_url=server.url, message_timeout_s=300) as client:
            for task_id, actions in episodes:
                await client.reset(split="train", task_id=task_id, seed=0)
                with measured(spent, server, len(actions)):
                    for n, action in enumerate(actions):
                        check((await client.step(action)).observation, n == len(actions) - 1)
        return spent

    return asyncio.run(run())


def sessions_in_process(hub: CRMArenaHub, url: str, sessions: list[Episode], concurrency: int) -> None:
    for task_id, actions in sessions:
        env = hub.make_environment()
        env.reset(split="train", task_id=task_id, seed=0)
        for n, action in enumerate(actions):
            check(env.step(action), n == len(actions) - 1)
        env.close()


def http_sessions(hub: CRMArenaHub, url: str, sessions: list[Episode], concurrency: int) -> None:
    def play(episode: Episode) -> None:
        task_id, actions = episode
        with CRMArenaHTTPClient(url, timeout=600) as client:
            check(client.reset(split="train", task_id=task_id, seed=0).observation, False)
            for n, action in enumerate(actions):
                check(client.step(action).observation, n == len(actions) - 1)

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(play, sessions))


def ws_sessions(hub: CRMArenaHub, url: str, sessions: list[Episode], concurrency: int) -> None:
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
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min), {fifteen:.2f} (15 min) on {os.cpu_count()} CPUs"


def best(rounds: list[Spent]) -> Spent:
    """Each episode's least CPU (server and client) over the rounds, summed: every episode as the shared
    machine disturbed it least (a whole round seldom runs undisturbed, a long one less often than a short)."""
    least = Spent()
    for blocks in zip(*(r.blocks for r in rounds), strict=True):
        least.add(*min(blocks, key=lambda b: (b[0] + b[1]) / b[3]))
    return least


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64, help="distinct oracle episodes (default 64)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of the step figures (default 5)")
    parser.add_argument(
        "--sessions", type=int, help="sessions per concurrency level (default: twice the concurrency, at least 64)"
    )
    parser.add_argument("--org", help="an org database (default: one generated at scale 0.5, seed 3)")
    parser.add_argument(
        "--compare-with", metavar="DIR", help="a checkout whose server is stepped over WebSocket in the same rounds"
    )
    args = parser.parse_args()
    if args.compare_with and not (Path(args.compare_with) / "crmarena_gym" / "__init__.py").is_file():
        raise SystemExit(f"--compare-with: no crmarena_gym package in {args.compare_with!r}")
    print(load(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        org = args.org
        if org is None:
            org = str(Path(tmp) / "org.sqlite")
            generate_org(org, seed=3, scale=0.5)
        org = str(Path(org).resolve())  # a compared server runs in its checkout's directory
        per_task = max(8, args.episodes // 9 + 1)
        hub = CRMArenaHub(HubConfig(org=org, per_task=per_task, max_sessions=512))
        episodes = oracle_episodes(hub, args.episodes)
        n_steps = sum(len(a) for _, a in episodes)
        print(f"{len(episodes)} oracle episodes of 9 tasks, {n_steps} steps, recorded and replayed")
        loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio's event loop"
        other = Server(org, per_task, args.compare_with) if args.compare_with else nullcontext()
        with Server(org, per_task) as server, other as compared:
            print(f"server: crmarena-gym serve-env at {server.url} (pid {server.process.pid}, uvicorn, {loop})")
            if args.compare_with:
                print(f"compared: the server of {args.compare_with} at {compared.url} (pid {compared.process.pid})")
            sys.stdout.flush()
            over_http(hub, episodes[:4], server)  # warm up both paths
            over_ws(hub, episodes[:4], server)
            sides: dict[str, Callable[[CRMArenaHub, list[Episode], Server], Spent]] = {
                "in process": in_process,
                "HTTP": over_http,
                "WebSocket": over_ws,
            }
            if args.compare_with:
                over_ws(hub, episodes[:4], compared)
                sides["compared WS"] = lambda hub, episodes, _: over_ws(hub, episodes, compared)

            def paced(hub: CRMArenaHub, episodes: list[Episode], _: Server) -> Spent:
                server_cpu, _client, wall = measured_rounds["WebSocket"][-1].per()  # this round's client turn
                return in_process_paced(hub, episodes, max(wall - server_cpu, 0.0))

            sides["paced"] = paced
            measured_rounds: dict[str, list[Spent]] = {name: [] for name in sides}
            for _ in range(args.rounds):
                for name, run in sides.items():
                    measured_rounds[name].append(run(hub, episodes, server))
            base = best(measured_rounds["in process"]).per()[1]
            print(f"per step, each episode's best of {args.rounds} alternating rounds (CPU in microseconds):")
            print(f"  {'':11} {'server CPU':>10} {'client CPU':>10} {'wall':>8} {'server / in process':>20} framework")
            for name in sides:
                if name == "paced":
                    continue
                server_cpu, client_cpu, wall = best(measured_rounds[name]).per()
                if name == "in process":
                    print(f"  {name:11} {client_cpu * 1e6:10.0f} {'':>10} {wall * 1e6:8.0f} {'1.00x (baseline)':>20}")
                    continue
                share = max(0.0, 1 - base / server_cpu)
                print(
                    f"  {name:11} {server_cpu * 1e6:10.0f} {client_cpu * 1e6:10.0f} {wall * 1e6:8.0f} "
                    f"{server_cpu / base:19.2f}x {share:8.0%}"
                )
            paced_cpu = best(measured_rounds["paced"]).per()[1]
            ws_cpu = best(measured_rounds["WebSocket"]).per()[0]
            print(
                f"  the in-process step after a pause as long as the client's turn costs {paced_cpu * 1e6:.0f} us "
                f"({paced_cpu / base:.2f}x the back-to-back step): the WebSocket step is {ws_cpu / paced_cpu:.2f}x that"
            )
            print("whole sessions (reset, every step, reward 1), all succeeding; CPU in ms per session:")
            levels: dict[str, Callable[[CRMArenaHub, str, list[Episode], int], None]] = {
                "in process": sessions_in_process,
                "HTTP": http_sessions,
                "WebSocket": ws_sessions,
            }
            for concurrency in CONCURRENCY:
                count = args.sessions or max(64, 2 * concurrency)
                sessions = [episodes[i % len(episodes)] for i in range(count)]
                line = [f"  concurrency {concurrency:3}, {count} sessions:"]
                for name, play in levels.items():
                    spent = Spent()
                    with measured(spent, None if name == "in process" else server, count):
                        play(hub, server.url, sessions, concurrency)
                    server_cpu, client_cpu, wall = spent.per()
                    cpu = (
                        f"CPU {client_cpu * 1e3:.2f}"
                        if name == "in process"
                        else (f"CPU server {server_cpu * 1e3:.2f} + client {client_cpu * 1e3:.2f}")
                    )
                    line.append(f"{name} {1 / wall:6.1f}/s ({cpu})")
                print("; ".join(line), flush=True)
            health = httpx.get(server.url + "/health", timeout=60).json()
            refused = {k: v for k, v in health["refused"].items() if v}
            if refused or health["live_episodes"]:
                raise SystemExit(f"refusals or leftover episodes: {refused}, {health['live_episodes']} live")
            print(f"no refusals, no episode left live ({health['episodes_started']} episodes started)")
    print(load())


if __name__ == "__main__":
    main()
