"""The OpenEnv server's sessions on 127.0.0.1: episodes with an owner and a lifetime, capacity refusals in
OpenEnv's error shape, malformed messages answered, live counts on /health and /metrics, the tools as MCP.

What each test expects is computed apart from the server: the answers a stranger gets for a real id are
compared with those for ids that never existed, counts with the sessions the test itself opened, the MCP
tools with the tool schemas the reset hands a typed client.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("openenv.core")
pytest.importorskip("uvicorn")
websockets = pytest.importorskip("websockets")

from crmarena_gym.integrations.openenv import (  # noqa: E402
    CRMArenaAction,
    CRMArenaClient,
    CRMArenaHTTPClient,
    CRMArenaHub,
    HubConfig,
    ServerBusyError,
    ServerLimits,
    ServerThread,
)
from crmarena_gym.org import LocalOrg  # noqa: E402
from tests.integrations.conftest import PER_TASK, oracle_calls  # noqa: E402

ID = re.compile(r"^[A-Za-z0-9_-]{24}$")  # 144 random bits, URL-safe


@pytest.fixture(scope="module")
def server(env_org: Path) -> Iterator[ServerThread]:
    hub = CRMArenaHub(HubConfig(org=str(env_org), per_task=PER_TASK, max_sessions=64))
    with ServerThread(hub=hub) as running:
        yield running


def _ws_url(server: ServerThread, path: str = "/ws") -> str:
    return server.url.replace("http://", "ws://") + path


async def _exchange(conn: Any, kind: str, data: Any = None) -> dict[str, Any]:
    await conn.send(json.dumps({"type": kind, "data": {} if data is None else data}))
    return json.loads(await conn.recv())


def _health(server: ServerThread) -> dict[str, Any]:
    response = httpx.get(server.url + "/health", timeout=30)
    assert response.status_code == 200
    return response.json()


def _wait_for(predicate: Any, timeout: float, what: str) -> float:
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout, what
        time.sleep(0.02)
    return time.monotonic() - start


def _no_episode_text(observation: dict[str, Any], episode_id: str) -> str:
    """The NO_EPISODE answer with the id blanked out (to compare the answers for different ids)."""
    assert observation["error"] == "NO_EPISODE", observation["text"]
    return observation["text"].replace(repr(episode_id), "<id>")


def test_a_client_cannot_act_in_or_read_another_clients_episode(server: ServerThread) -> None:
    http = httpx.Client(base_url=server.url, timeout=60)
    ids = [
        http.post("/reset", json={"split": "train", "seed": n}).json()["observation"]["episode_id"] for n in range(6)
    ]
    assert all(ID.match(i) for i in ids) and len(set(ids)) == 6  # unguessable tokens, never a counter

    async def scenario() -> None:
        async with websockets.connect(_ws_url(server)) as alice, websockets.connect(_ws_url(server)) as mallory:
            start = (await _exchange(alice, "reset", {"split": "train", "task": "BRI", "seed": 1}))["data"]
            alice_id = start["observation"]["episode_id"]
            assert ID.match(alice_id)
            await _exchange(alice, "step", {"tool_call": {"name": "get_issues"}})
            # Mallory names Alice's episode over her own session, over HTTP and over MCP: each answer is the one
            # an id that never existed gets (nothing tells her the episode exists), and Alice's episode is untouched.
            guesses = [alice_id, "episode-1", "episode-2", "A" * 24]
            mine = [(await _exchange(mallory, "step", {"text": "submit x", "episode_id": g}))["data"] for g in guesses]
            assert len({_no_episode_text(o["observation"], g) for o, g in zip(mine, guesses, strict=True)}) == 1
            over_http = [
                http.post("/step", json={"action": {"text": "submit x", "episode_id": g}}).json() for g in guesses
            ]
            assert len({_no_episode_text(o["observation"], g) for o, g in zip(over_http, guesses, strict=True)}) == 1
            for guess in guesses:
                state = http.get("/state", params={"episode_id": guess}).json()
                assert state["task"] is None and state["step_count"] == 0  # reads nothing
                rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
                rpc["params"] = {"name": "submit", "arguments": {"content": "x"}, "session_id": guess}
                assert http.post("/mcp", json=rpc).json()["error"]["data"]["code"] == "NO_EPISODE"
            # nor can she take over the id with a reset of her own
            taken = http.post("/reset", json={"episode_id": alice_id}).json()["observation"]
            assert taken["error"] == "BAD_RESET" and "send no episode_id" in taken["text"]
            state = (await _exchange(alice, "state"))["data"]
            assert state["episode_id"] == alice_id and state["step_count"] == 1 and not state["done"]
            # Alice's own session acts in her episode, by its id or without it
            step = await _exchange(alice, "step", {"tool_call": {"name": "get_issues"}, "episode_id": alice_id})
            assert step["data"]["observation"]["error"] is None and step["data"]["observation"]["turn"] == 2
            # an HTTP episode is reachable by its id over HTTP only: not from a WebSocket session
            over_ws = (await _exchange(alice, "step", {"text": "submit x", "episode_id": ids[0]}))["data"]
            assert _no_episode_text(over_ws["observation"], ids[0]) == _no_episode_text(
                mine[1]["observation"], guesses[1]
            )
            # a reset drops the session's episode: its old id is unknown from then on, even to Alice
            await _exchange(alice, "reset", {"seed": 2})
            stale = (await _exchange(alice, "step", {"text": "submit x", "episode_id": alice_id}))["data"]
            assert stale["observation"]["error"] == "NO_EPISODE"

    asyncio.run(scenario())
    # the HTTP episodes still answer their holders; one played out is gone (its id is not reusable)
    done = http.post("/step", json={"action": {"text": "submit None", "episode_id": ids[0]}}).json()
    assert done["done"] is True
    again = http.post("/step", json={"action": {"text": "submit None", "episode_id": ids[0]}}).json()
    assert again["observation"]["error"] == "NO_EPISODE"
    assert http.get("/state", params={"episode_id": ids[1]}).json()["split"] == "train"


def test_a_session_that_resets_or_leaves_keeps_no_episode(server: ServerThread) -> None:
    before = _health(server)["live_episodes"]

    async def scenario() -> None:
        conn = await websockets.connect(_ws_url(server))
        for seed in range(5):  # five rollouts stopped before submitting: one episode live, not five
            await _exchange(conn, "reset", {"seed": seed})
            await _exchange(conn, "step", {"tool_call": {"name": "get_issues"}})
        assert _health(server)["live_episodes"] == before + 1
        await conn.close()  # leaves politely
        _wait_for(lambda: _health(server)["live_episodes"] == before, 10, "a closed session kept its episode")
        conn = await websockets.connect(_ws_url(server))
        await _exchange(conn, "reset", {"seed": 9})  # only resets, then vanishes without a close handshake
        assert _health(server)["live_episodes"] == before + 1
        conn.transport.abort()

    asyncio.run(scenario())
    _wait_for(lambda: _health(server)["live_episodes"] == before, 10, "a vanished session kept its episode")
    assert _health(server)["websocket_connections"] == 0


@pytest.mark.slow
def test_abandoned_rollouts_leave_no_live_episode_within_the_idle_timeout(env_org: Path) -> None:
    idle = 1.0
    hub = CRMArenaHub(HubConfig(org=str(env_org), per_task=PER_TASK, max_sessions=4, session_timeout=idle))
    with ServerThread(hub=hub) as server:

        async def rollouts() -> None:
            async with CRMArenaClient(base_url=server.url, message_timeout_s=120) as client:
                period = CRMArenaAction(
                    tool_call={"name": "get_period", "arguments": {"period_name": "Q1", "year": 2021}}
                )
                for n in range(1000):  # each stops before submitting, as a trainer's truncation does
                    await client.reset(seed=n)
                    assert (await client.step(period)).observation.error is None
                assert _health(server)["live_episodes"] == 1  # each reset dropped the episode before it
                waited = _wait_for(lambda: _health(server)["live_episodes"] == 0, idle + 3, "an idle episode lived on")
                assert waited <= idle + 3
                start = await client.reset(seed=1000)  # the same connection starts again
                assert start.observation.error is None and _health(server)["live_episodes"] == 1

        asyncio.run(rollouts())
        metrics = httpx.get(server.url + "/metrics", timeout=30).text
        assert 'crmarena_episodes_ended_total{reason="reset"} 999' in metrics
        assert 'crmarena_episodes_ended_total{reason="idle"} 1' in metrics
        assert "crmarena_episodes_started_total 1001" in metrics


def test_a_server_at_capacity_answers_a_capacity_error_the_openenv_client_raises(env_org: Path) -> None:
    hub = CRMArenaHub(HubConfig(org=str(env_org), per_task=PER_TASK, max_sessions=2))
    with ServerThread(hub=hub, limits=ServerLimits(max_connections=3)) as server:

        async def scenario() -> None:
            first, second = CRMArenaClient(base_url=server.url), CRMArenaClient(base_url=server.url)
            await first.reset(seed=1)
            await second.reset(seed=2)
            third = CRMArenaClient(base_url=server.url)  # a third episode: past max_sessions
            with pytest.raises(RuntimeError, match=r"at capacity: 2/2 live episodes.*\(code: CAPACITY_REACHED\)"):
                await third.reset(seed=3)
            fourth = CRMArenaClient(base_url=server.url)  # a fourth connection: past max_connections
            with pytest.raises(RuntimeError, match=r"at capacity: 3/3 live sessions.*\(code: CAPACITY_REACHED\)"):
                await fourth.reset(seed=4)
            with (
                CRMArenaHTTPClient(server.url) as http_client,
                pytest.raises(ServerBusyError, match="CAPACITY_REACHED"),
            ):
                http_client.reset(seed=5)
            response = httpx.post(server.url + "/reset", json={"seed": 5}, timeout=30)
            assert response.status_code == 503 and response.headers["retry-after"] == "1"
            detail = response.json()["detail"]
            assert (detail["code"], detail["active_sessions"], detail["max_sessions"]) == ("CAPACITY_REACHED", 2, 2)
            rpc = {"jsonrpc": "2.0", "id": 7, "method": "openenv/session/create"}
            refused = httpx.post(server.url + "/mcp", json=rpc, timeout=30).json()["error"]
            assert refused["data"]["code"] == "CAPACITY_REACHED" and refused["data"]["max_sessions"] == 3
            await first.close()  # a slot frees: the third client is served now
            _wait_for(lambda: _health(server)["live_episodes"] == 1, 10, "a closed session kept its slot")
            assert (await third.reset(seed=3)).observation.error is None
            for client in (second, third, fourth):
                await client.close()

        asyncio.run(scenario())
        refused = _health(server)["refused"]  # the third client's reset and the two HTTP resets; the fourth client
        assert (refused["episodes"], refused["connections"], refused["sessions"]) == (3, 1, 1)


def test_malformed_websocket_messages_get_answers_and_the_session_goes_on(server: ServerThread) -> None:
    huge = "1" + "0" * 5000  # past Python's 4,300-digit limit for reading an integer
    cases = [
        ("null", "VALIDATION_ERROR"),
        ("[]", "VALIDATION_ERROR"),
        ('"reset"', "VALIDATION_ERROR"),
        ("5", "VALIDATION_ERROR"),
        ('{"type": 5}', "VALIDATION_ERROR"),
        ('{"type": "reset", "data": []}', "VALIDATION_ERROR"),
        ('{"type": "step", "data": "submit x"}', "VALIDATION_ERROR"),
        ('{"type": "reset", "data": {"seed": ' + huge + "}}", "INVALID_JSON"),
        ('{"type": "step", "data": {"text": "x", "n": ' + huge + "}}", "INVALID_JSON"),
        ("{not json", "INVALID_JSON"),
        ('{"type": "dance"}', "UNKNOWN_TYPE"),
        ('{"type": "step", "data": {"tool_call": {"arguments": {}}}}', "VALIDATION_ERROR"),
    ]

    async def scenario() -> None:
        async with websockets.connect(_ws_url(server)) as conn:
            for message, code in cases:
                await conn.send(message)
                answer = json.loads(await conn.recv())
                assert answer["type"] == "error" and answer["data"]["code"] == code, (message[:40], answer)
            await conn.send(b"\xff\xfe{")  # a binary frame that is not UTF-8
            assert json.loads(await conn.recv())["data"]["code"] == "INVALID_JSON"
            for options, wrong in (({"seed": 1e400}, "seed"), ({"seed": -1}, "seed"), ({"self": 1}, "'self'")):
                observation = (await _exchange(conn, "reset", options))["data"]["observation"]
                assert observation["error"] == "BAD_RESET" and wrong in observation["text"]
            start = (await _exchange(conn, "reset", {"seed": 4}))["data"]["observation"]
            assert start["error"] is None
            # a tool call whose arguments hold an unreadable number is the episode's FORMAT_ERROR, a turn used
            call = {"tool_call": {"name": "get_cases", "arguments": '{"start_date": ' + huge + "}"}}
            step = (await _exchange(conn, "step", call))["data"]["observation"]
            assert step["error"] == "FORMAT_ERROR" and "digits, more than can be read" in step["text"]
            assert step["turn"] == 1
            assert (await _exchange(conn, "state"))["data"]["step_count"] == 1

    asyncio.run(scenario())
    http = httpx.Client(base_url=server.url, timeout=30)
    for body in (b"null", b"[]", b'{"action": null}', b'{"action": {"text": "x"}, "n": ' + huge.encode() + b"}"):
        response = http.post("/step", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422, (body[:30], response.text[:200])
    for body in (b"[]", b'{"seed": ' + huge.encode() + b"}", b"\xff"):
        assert http.post("/reset", content=body).status_code == 422
    assert http.post("/mcp", content=b"[1, 2]").json()["error"]["code"] == -32600
    assert http.post("/mcp", content=b"{").json()["error"]["code"] == -32700
    assert http.post("/mcp", json={}).json()["jsonrpc"] == "2.0"  # what openenv validate --url probes


def _prometheus(text: str) -> dict[str, float]:
    """Prometheus text format: ``# HELP``/``# TYPE`` comments, then ``name{labels} value`` samples."""
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert kind in ("gauge", "counter")
            typed.add(name)
        elif line and not line.startswith("#"):
            match = re.fullmatch(r'([a-z_]+)(\{[a-z_]+="[a-z_]+"\})? (-?[0-9.e+]+)', line)
            assert match, line
            assert match.group(1) in typed, f"{match.group(1)} has no # TYPE line"
            samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples


def test_health_and_metrics_report_live_sessions_and_episodes(server: ServerThread) -> None:
    base = _health(server)

    async def scenario() -> None:
        async with websockets.connect(_ws_url(server)) as a, websockets.connect(_ws_url(server)) as b:
            await _exchange(a, "reset", {"seed": 1})
            await _exchange(b, "state")  # connected, no episode
            http_id = httpx.post(server.url + "/reset", json={"seed": 2}, timeout=30).json()
            assert http_id["observation"]["episode_id"]
            health = _health(server)
            assert health["status"] == "healthy"
            assert health["websocket_connections"] == base["websocket_connections"] + 2
            assert health["live_episodes_by_transport"]["session"] == base["live_episodes_by_transport"]["session"] + 1
            assert health["live_episodes_by_transport"]["http"] == base["live_episodes_by_transport"]["http"] + 1
            response = httpx.get(server.url + "/metrics", timeout=30)
            assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
            metrics = _prometheus(response.text)
            assert metrics["crmarena_websocket_connections"] == health["websocket_connections"]
            assert (
                metrics['crmarena_live_episodes{transport="session"}']
                == (health["live_episodes_by_transport"]["session"])
            )
            assert metrics['crmarena_live_episodes{transport="http"}'] == health["live_episodes_by_transport"]["http"]
            assert metrics["crmarena_max_episodes"] == 64
            assert metrics["crmarena_episodes_started_total"] == health["episodes_started"]

    asyncio.run(scenario())


def test_the_tools_as_mcp_list_and_play_an_episode_to_reward_one(server: ServerThread) -> None:
    from openenv.core.mcp_client import MCPToolClient

    hub = server.hub
    instance = next(i for i in hub.instances("train", None) if i.abbrev == "TII")
    calls = oracle_calls(LocalOrg(hub.org.path), instance)
    http = httpx.Client(base_url=server.url, timeout=60)
    start = http.post("/reset", json={"split": "train", "task_id": instance.idx, "seed": 0}).json()["observation"]
    listed = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()["result"]["tools"]
    typed = [t["function"] for t in start["tools"]]  # what a typed client is handed at reset
    assert [(t["name"], t["description"], t["inputSchema"]) for t in listed] == [
        (f["name"], f.get("description", ""), f["parameters"]) for f in typed
    ]
    # over HTTP, tools/call acts in the HTTP episode its id names; the same episode, turn for turn
    first_name, first_args = calls[0]
    rpc = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    rpc["params"] = {"name": first_name, "arguments": first_args, "session_id": start["episode_id"]}
    result = http.post("/mcp", json=rpc).json()["result"]
    assert result["isError"] is False and result["structuredContent"]["turn"] == 1
    assert result["content"][0]["text"] == result["structuredContent"]["observation"]

    async def play() -> dict[str, Any]:
        async with MCPToolClient(base_url=server.url, message_timeout_s=120) as env:
            await env.reset(split="train", task_id=instance.idx, seed=0)
            names = [t.name for t in await env.list_tools()]
            assert names == [f["name"] for f in typed]
            outcome: dict[str, Any] = {}
            for name, arguments in calls:
                outcome = await env.call_tool(name, **arguments)
                assert outcome["error"] is None, outcome
            return outcome

    outcome = asyncio.run(play())
    assert outcome["done"] is True and outcome["reward"] == 1.0
    _wait_for(lambda: _health(server)["mcp_sessions"] == 0, 10, "a closed MCP session lived on")


def test_idle_mcp_sessions_are_closed(env_org: Path) -> None:
    hub = CRMArenaHub(HubConfig(org=str(env_org), per_task=PER_TASK, session_timeout=0.3))
    with ServerThread(hub=hub) as server:
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}
        session_id = httpx.post(server.url + "/mcp", json=rpc, timeout=30).json()["result"]["session_id"]
        assert ID.match(session_id) and _health(server)["mcp_sessions"] == 1
        _wait_for(lambda: _health(server)["mcp_sessions"] == 0, 5, "an idle MCP session lived on")
        closing = {"jsonrpc": "2.0", "id": 2, "method": "openenv/session/close", "params": {"session_id": session_id}}
        answer = httpx.post(server.url + "/mcp", json=closing, timeout=30).json()
        assert "Unknown session_id" in answer["error"]["message"]
