"""The OpenEnv server on 127.0.0.1: 64 concurrent oracle episodes over HTTP and over WebSocket, the same
observations for the same seed and actions, and bad input answered without a crash."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("openenv.core")
pytest.importorskip("uvicorn")
websockets = pytest.importorskip("websockets")

from crmarena_gym.cli import main  # noqa: E402
from crmarena_gym.integrations.openenv import (  # noqa: E402
    CRMArenaAction,
    CRMArenaClient,
    CRMArenaHTTPClient,
    CRMArenaHub,
    HubConfig,
    ServerLimits,
    ServerThread,
    ToolCall,
    check_host,
    make_app,
)
from crmarena_gym.org import LocalOrg  # noqa: E402
from tests.integrations.conftest import PER_TASK, default_signals, oracle_calls  # noqa: E402

SESSIONS = 64


@pytest.fixture(scope="module")
def hub(env_org: Path) -> CRMArenaHub:
    return CRMArenaHub(HubConfig(org=str(env_org), per_task=PER_TASK, max_sessions=200))


@pytest.fixture(scope="module")
def server(hub: CRMArenaHub) -> Iterator[ServerThread]:
    with ServerThread(hub=hub) as running:
        yield running


@pytest.fixture(scope="module")
def episodes(hub: CRMArenaHub) -> list[tuple[int, list[tuple[str, dict[str, Any]]]]]:
    """64 training instances (of every task) with the oracle's calls for each."""
    org = LocalOrg(hub.org.path)
    instances = hub.instances("train", None)
    assert len(instances) >= SESSIONS and len({i.abbrev for i in instances}) == 9
    chosen = instances[:: max(1, len(instances) // SESSIONS)][:SESSIONS]
    return [(instance.idx, oracle_calls(org, instance)) for instance in chosen]


def _tool_action(name: str, arguments: dict[str, Any], n: int) -> CRMArenaAction:
    return CRMArenaAction(tool_call={"name": name, "arguments": arguments, "id": f"call_{n}"})


def test_64_http_sessions_play_oracle_episodes_to_reward_one(server: ServerThread, episodes) -> None:
    def play(episode: tuple[int, list]) -> tuple[float, bool, list]:
        task_id, calls = episode
        with CRMArenaHTTPClient(server.url) as client:
            start = client.reset(split="train", task_id=task_id, seed=0)
            assert start.observation.error is None and start.observation.task_id == task_id
            messages = []
            for n, (name, arguments) in enumerate(calls):
                result = client.step(_tool_action(name, arguments, n))
                assert result.observation.error is None, result.observation.text
                messages.append(result.observation.message)
            return float(result.reward or 0.0), result.done, messages

    with ThreadPoolExecutor(SESSIONS) as pool:
        results = list(pool.map(play, episodes))
    assert all(done and reward == 1.0 for reward, done, _ in results)
    assert results[0][2][0]["role"] == "tool" and results[0][2][0]["tool_call_id"] == "call_0"
    assert server.hub.live_episodes == 0  # every HTTP episode was dropped after its last step


def test_64_websocket_sessions_play_oracle_episodes_to_reward_one(server: ServerThread, episodes) -> None:
    async def play(episode: tuple[int, list]) -> tuple[float, bool]:
        task_id, calls = episode
        async with CRMArenaClient(base_url=server.url, message_timeout_s=120) as client:
            start = await client.reset(split="train", task_id=task_id, seed=0)
            assert start.observation.tools and start.observation.system_prompt
            for n, (name, arguments) in enumerate(calls):
                result = await client.step(_tool_action(name, arguments, n))
                assert result.observation.error is None, result.observation.text
            state = await client.state()
            assert state.done and state.reward == 1.0 and state.task_id == task_id
            return float(result.reward or 0.0), result.done

    async def play_all() -> list[tuple[float, bool]]:
        return await asyncio.gather(*(play(e) for e in episodes))

    results = asyncio.run(play_all())
    assert len(results) == SESSIONS and all(done and reward == 1.0 for reward, done in results)


def test_same_seed_and_actions_give_identical_observations(server: ServerThread) -> None:
    actions = [
        CRMArenaAction(tool_call={"name": "get_issues"}),
        CRMArenaAction(tool_call={"name": "get_period", "arguments": '{"period_name": "Q2", "year": 2021}'}),
        CRMArenaAction(text="submit None"),
    ]

    def over_http() -> list[dict[str, Any]]:
        with CRMArenaHTTPClient(server.url) as client:
            seen = [client.reset(split="test", seed=42).observation]
            seen += [client.step(a).observation for a in actions]
        return [o.model_dump(exclude={"episode_id"}) for o in seen]

    async def over_ws() -> list[dict[str, Any]]:
        async with CRMArenaClient(base_url=server.url) as client:
            seen = [(await client.reset(split="test", seed=42)).observation]
            seen += [(await client.step(a)).observation for a in actions]
        return [o.model_dump(exclude={"episode_id"}) for o in seen]

    first = over_http()
    assert first == over_http() == asyncio.run(over_ws())
    assert first[0]["split"] == "test" and first[-1]["done"] and first[2]["message"]["role"] == "tool"


def test_websocket_steps_on_the_event_loop_or_in_worker_threads_answer_alike(
    server: ServerThread, hub: CRMArenaHub, env_org: Path
) -> None:
    actions = [
        CRMArenaAction(tool_call={"name": "get_issues"}),
        CRMArenaAction(tool_call={"name": "no_such_function"}),
        CRMArenaAction(text="submit None"),
    ]

    async def over_ws(url: str) -> list[dict[str, Any]]:
        async with CRMArenaClient(base_url=url) as client:
            seen = [(await client.reset(split="test", seed=7)).observation]
            seen += [(await client.step(a)).observation for a in actions]
        return [o.model_dump(exclude={"episode_id"}) for o in seen]

    env = hub.make_environment()
    in_process = [env.reset(split="test", seed=7)] + [env.step(a) for a in actions]
    expected = [o.model_dump(exclude={"episode_id"}) for o in in_process]
    assert server.app.inline_steps  # the functions toolset's steps run on the event loop
    with ServerThread(hub=hub, limits=ServerLimits(inline_steps=False)) as threaded:
        assert not threaded.app.inline_steps
        assert asyncio.run(over_ws(server.url)) == asyncio.run(over_ws(threaded.url)) == expected
    assert expected[2]["error"] and expected[-1]["done"] and expected[-1]["record"]
    # Free-form queries (soql, flex) may run to the org's timeout: their steps stay in the worker threads.
    soql = CRMArenaHub(HubConfig(org=str(env_org), toolset="soql", per_task=2))
    app = make_app(hub=soql)
    assert not app.inline_steps
    app.close()
    soql.close()


def _recorded_session(episodes: list[tuple[int, list[tuple[str, dict[str, Any]]]]]) -> list[str]:
    """WebSocket messages of recorded oracle episodes (each reset labelled, so the answers hold the same ids on
    any server), steps that go wrong (an unknown function, refused actions, a step after the end), and
    messages that are not typed actions' steps."""

    def step(data: Any) -> str:
        return json.dumps({"type": "step", "data": data})

    messages = []
    for n, (task_id, calls) in enumerate(episodes):
        label = f"recorded-{n}" + ("\ud800" if n == len(episodes) - 1 else "")  # the last: not UTF-8 text
        reset = {"split": "train", "task_id": task_id, "seed": 0, "episode_id": label}
        messages.append(json.dumps({"type": "reset", "data": reset}))
        messages += [step({"tool_call": {"name": name, "arguments": arguments}}) for name, arguments in calls[:-1]]
        messages += [
            step({"tool_call": {"name": "no_such_function", "arguments": {"x": 1}}}),  # an error observation
            step({"bogus": 1}),  # refused by validation
            '{"type": "step", "data": {"tool_call": {"name": "get_\\ud800"}}}',  # refused: a name is UTF-8
            step({"type": "call_tool", "tool_name": "no_such_function", "arguments": {}}),  # OpenEnv's MCP step
            '{"type": "state"}',
            step({"tool_call": {"name": calls[-1][0], "arguments": calls[-1][1]}}),  # the submission: the record
            step({"text": "submit again"}),  # EPISODE_OVER
            "{not json",
        ]
    return messages


def test_steps_answered_as_they_arrive_are_byte_for_byte_the_general_paths_answers(
    server: ServerThread, hub: CRMArenaHub, episodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The protocol answers a functions-toolset step in its own callback (AnswerNow) while the session waits
    for a message; every answer is the exact text the application's general path gives (its task reading
    the message through ``receive``, on the event loop or in a worker thread), pipelined messages included."""
    from crmarena_gym.integrations.openenv import _app

    messages = _recorded_session(episodes[::9][:6])
    seen: list[str] = []

    async def play(url: str, pipelined: bool = False) -> list[str]:
        async with websockets.connect(url.replace("http", "ws", 1) + "/ws", compression=None) as ws:
            if pipelined:
                for message in messages:
                    await ws.send(message)
                return [await ws.recv() for _ in messages]
            answers = []
            for message in messages:
                await ws.send(message)
                answers.append(await ws.recv())
            return answers

    def counting(app: Any) -> None:
        general = app._ws_message

        async def spy(raw: str | bytes, *args: Any, **kwargs: Any) -> Any:
            seen.append(raw if isinstance(raw, str) else raw.decode(errors="replace"))
            return await general(raw, *args, **kwargs)

        monkeypatch.setattr(app, "_ws_message", spy)

    counting(server.app)
    answered_now = asyncio.run(play(server.url))
    typed_steps = [m for m in messages if m.startswith('{"type": "step"') and '"type": "call_tool"' not in m]
    assert not set(seen) & set(typed_steps) and len(seen) == len(messages) - len(typed_steps)  # none went general
    assert asyncio.run(play(server.url, pipelined=True)) == answered_now
    with ServerThread(hub=hub, limits=ServerLimits(inline_steps=False)) as threaded:
        assert asyncio.run(play(threaded.url)) == answered_now
    monkeypatch.setattr(_app, "ANSWER_NOW", "not offered")  # the application finds no hook: all go general
    with ServerThread(hub=hub) as general:
        seen.clear()
        counting(general.app)
        assert asyncio.run(play(general.url)) == answered_now
        assert seen == messages
    decoded = [json.loads(answer) for answer in answered_now]
    assert decoded[0]["data"]["observation"]["episode_id"] == "recorded-0"
    finals = [d for d in decoded if d["type"] == "observation" and d["data"]["done"]]
    assert len(finals) == 6 and all(d["data"]["reward"] == 1.0 and d["data"]["observation"]["record"] for d in finals)
    errors = {d["data"]["observation"]["error"] for d in decoded if d["type"] == "observation"}
    assert errors == {None, "FUNCTION_ERROR", "EPISODE_OVER"}
    codes = {d["data"]["code"] for d in decoded if d["type"] == "error"}
    assert codes == {"VALIDATION_ERROR", "INVALID_JSON"}
    # text that UTF-8 cannot carry (a lone surrogate in an episode's label) comes back escaped, in every answer
    echoed = [a for a in answered_now if "\ud800" in json.dumps(json.loads(a), ensure_ascii=False)]
    assert echoed and all(a.isascii() for a in echoed)


def test_http_observations_are_the_bytes_starlettes_json_response_writes(hub: CRMArenaHub, episodes) -> None:
    from starlette.responses import JSONResponse

    from crmarena_gym.integrations.openenv._app import _observation_response, serialize_observation

    env = hub.make_environment()
    for task_id, calls in episodes[::16]:
        observations = [env.reset(split="train", task_id=task_id, seed=0)]
        observations += [env.step(_tool_action(name, arguments, n)) for n, (name, arguments) in enumerate(calls)]
        assert observations[-1].reward == 1.0 and observations[0].tools
        for observation in observations:
            ours, starlettes = _observation_response(observation), JSONResponse(serialize_observation(observation))
            assert (ours.body, ours.headers) == (starlettes.body, starlettes.headers)
    # where JSONResponse fails (a lone surrogate cannot be UTF-8), the answer is JSON that reads back the same
    odd = env.reset(split="train", seed=0, episode_id="odd-\ud800")
    assert json.loads(_observation_response(odd).body)["observation"]["episode_id"] == "odd-\ud800"
    with pytest.raises(UnicodeEncodeError):
        JSONResponse(serialize_observation(odd))
    env.close()


def test_answers_are_pydantic_cores_bytes_whichever_encoder_writes_them(hub: CRMArenaHub, episodes) -> None:
    """orjson (the openenv extra's) writes what pydantic-core writes, or refuses and pydantic-core does: the
    bytes of an answer do not depend on what is installed."""
    from pydantic_core import to_json

    from crmarena_gym.integrations.openenv._app import _ORJSON_OPTIONS, encode_answer, serialize_observation

    orjson = pytest.importorskip("orjson")
    env = hub.make_environment()
    answers: list[Any] = []
    for task_id, calls in episodes[::8]:
        answers.append(serialize_observation(env.reset(split="train", task_id=task_id, seed=0)))
        for n, (name, arguments) in enumerate(calls):
            observation = env.step(_tool_action(name, arguments, n))
            answers.append({"type": "observation", "data": serialize_observation(observation)})
    env.close()
    odd = [float("nan"), float("-inf"), -0.0, 1e-7, 1e16, 5e-324, 2**64 - 1, "é\u2028\x00", ("a", 1)]
    answers.append({"odd": odd, "big": 2**70, "keys": {1: "an integer key"}})
    refused = 0
    for answer in answers:
        expected = to_json(answer, inf_nan_mode="null")
        assert encode_answer(answer) == expected
        try:
            assert orjson.dumps(answer, option=_ORJSON_OPTIONS) == expected  # orjson's own bytes
        except TypeError:
            refused += 1
    assert refused == 1  # the integer past 64 bits and the integer key: pydantic-core wrote that one


def test_messages_sent_before_any_answer_is_read_are_all_answered_in_order(server: ServerThread) -> None:
    """The server reads on while a message or two wait for the application (it stops reading past that): a
    client that pipelines its messages loses none and gets the answers in order."""
    sent = 40

    async def pipelined() -> list[dict[str, Any]]:
        async with websockets.connect(server.url.replace("http", "ws", 1) + "/ws") as ws:
            for n in range(sent):
                message = {"type": "reset", "data": {"split": "test", "seed": n}} if n % 2 == 0 else {"type": "state"}
                await ws.send(json.dumps(message))
            return [json.loads(await ws.recv()) for _ in range(sent)]

    answers = asyncio.run(pipelined())
    expected = server.hub.make_environment()
    for n in range(0, sent, 2):
        start, state = answers[n], answers[n + 1]
        assert start["type"] == "observation" and state["type"] == "state"
        assert start["data"]["observation"]["task_id"] == expected.reset(split="test", seed=n).task_id
        assert state["data"]["episode_id"] == start["data"]["observation"]["episode_id"]
    expected.close()


def test_bad_input_gets_clear_errors_and_the_server_survives(server: ServerThread, hub: CRMArenaHub) -> None:
    http = httpx.Client(base_url=server.url, timeout=30)
    # malformed actions: refused by validation with what was wrong
    for body in ({"action": {"bogus": 1}}, {"action": {"tool_calls": [{"name": "a"}], "tool_call": {"name": "a"}}}, {}):
        response = http.post("/step", json=body)
        assert response.status_code == 422, body
    response = http.post("/step", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422
    # an unknown or finished episode
    unknown = http.post("/step", json={"action": {"text": "submit x", "episode_id": "nope"}}).json()
    assert unknown["observation"]["error"] == "NO_EPISODE" and "'nope'" in unknown["observation"]["text"]
    bad_reset = http.post("/reset", json={"split": "dev"}).json()["observation"]
    assert bad_reset["error"] == "BAD_RESET" and "'dev'" in bad_reset["text"]
    bad_task = http.post("/reset", json={"task": "XYZ"}).json()["observation"]
    assert bad_task["error"] == "BAD_RESET" and "'XYZ'" in bad_task["text"]
    assert http.post("/reset", json={"colour": "red"}).json()["observation"]["error"] == "BAD_RESET"
    # unknown tools and bad arguments in a live episode: error observations, the turn used
    with CRMArenaHTTPClient(server.url) as client:
        client.reset(split="train", task="HTU", seed=1)
        result = client.step(CRMArenaAction(tool_call={"name": "drop_all_tables"}))
        assert result.observation.error == "FUNCTION_ERROR" and "'drop_all_tables'" in result.observation.text
        result = client.step(CRMArenaAction(tool_call={"name": "get_cases", "arguments": '{"start_date": '}))
        assert result.observation.error == "FORMAT_ERROR" and "not valid JSON" in result.observation.text
        result = client.step(CRMArenaAction(text="submit None"))
        assert result.done
        over = client.step(CRMArenaAction(text="submit None"))
        assert over.observation.error == "NO_EPISODE"  # dropped after its last step
    # over WebSocket: bad JSON and a malformed action get error messages on a connection that stays usable

    async def ws() -> None:
        async with websockets.connect(server.url.replace("http", "ws") + "/ws") as conn:
            await conn.send("{not json")
            assert json.loads(await conn.recv())["type"] == "error"
            await conn.send(json.dumps({"type": "step", "data": {"tool_call": {"arguments": {}}}}))
            error = json.loads(await conn.recv())
            assert error["type"] == "error" and "name" in json.dumps(error["data"])
            await conn.send(json.dumps({"type": "step", "data": {"text": "submit None"}}))
            assert json.loads(await conn.recv())["data"]["observation"]["error"] == "NO_EPISODE"
            await conn.send(json.dumps({"type": "reset", "data": {"seed": 3}}))
            assert json.loads(await conn.recv())["data"]["observation"]["error"] is None

    asyncio.run(ws())
    assert http.get("/health").status_code == 200
    metadata = http.get("/metadata").json()
    assert metadata["name"] == "CRMArena" and "'functions' toolset" in metadata["description"]
    assert set(http.get("/schema").json()["action"]["properties"]) >= {"tool_call", "text", "episode_id"}


def test_a_client_leaving_mid_episode_leaves_no_session(server: ServerThread, hub: CRMArenaHub) -> None:
    deadline = time.monotonic() + 10
    while server.app.connections:  # the sessions of earlier tests are closed (their episodes dropped)
        assert time.monotonic() < deadline, "earlier WebSocket sessions stayed open"
        time.sleep(0.02)
    before = hub.live_episodes

    async def leave() -> None:
        conn = await websockets.connect(server.url.replace("http", "ws") + "/ws")
        await conn.send(json.dumps({"type": "reset", "data": {"seed": 5, "split": "train"}}))
        await conn.recv()
        await conn.send(json.dumps({"type": "step", "data": {"tool_call": {"name": "get_issues"}}}))
        await conn.recv()
        assert hub.live_episodes == before + 1
        conn.transport.abort()  # no close handshake: the client vanished

    asyncio.run(leave())
    deadline = time.monotonic() + 10
    while hub.live_episodes != before:
        assert time.monotonic() < deadline, "the session of a vanished client was kept"
        time.sleep(0.05)
    assert httpx.get(server.url + "/health").status_code == 200


def test_non_loopback_addresses_are_refused_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    check_host("127.0.0.1")
    check_host("::1")
    with pytest.raises(ValueError, match=r"'0\.0\.0\.0'.*--allow-remote"):
        check_host("0.0.0.0")
    check_host("0.0.0.0", allow_remote=True)
    assert main(["serve-env", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "refusing to listen on '0.0.0.0'" in capsys.readouterr().err


@contextlib.contextmanager
def _serve_env(env_org: Path, *options: str) -> Iterator[str]:
    """``crmarena-gym serve-env`` in a process of its own on a free loopback port, with ``options``: its URL once
    ``/health`` answers; stopped with SIGINT (as Ctrl-C stops it) on leaving."""
    entry = "import sys; from crmarena_gym.cli import main; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", entry, "serve-env", "--port", "0", "--org", str(env_org), "--per-task", "2"]
    process = subprocess.Popen(
        [*command, *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
        preexec_fn=default_signals,
    )
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("serving CRMArena (OpenEnv) on http://127.0.0.1:"), line + process.stderr.read()  # type: ignore[union-attr]
        url = line.split(" on ")[1].split()[0]
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/health").status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.1)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)


def test_the_serve_env_command_serves_an_episode(env_org: Path) -> None:
    with _serve_env(env_org) as url, CRMArenaHTTPClient(url) as client:
        start = client.reset(split="test", task="BRI", seed=0)
        assert start.observation.task == "BRI" and start.observation.split == "test"
        assert client.step(CRMArenaAction(text="submit None")).done


def test_serve_env_refuses_an_llm_user_without_its_key(
    env_org: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # It served, and every reset answered an internal error once the user's model refused the request.
    pytest.importorskip("litellm")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["serve-env", "--port", "0", "--org", str(env_org), "--user", "litellm:gpt-4o"]) == 2
    err = capsys.readouterr().err
    assert err == "crmarena-gym serve-env: the user's model gpt-4o needs OPENAI_API_KEY: set it in the environment\n"


@pytest.mark.slow
def test_serve_env_user_flag_serves_conversations(env_org: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve-env", "--port", "0", "--org", str(env_org), "--user", "gpt-4o"]) == 2
    assert "unknown user 'gpt-4o'" in capsys.readouterr().err
    with _serve_env(env_org, "--user", "scripted") as url, CRMArenaHTTPClient(url) as client:
        start = client.reset(split="test", task="BRI", seed=0)
        assert "respond" in [t["function"]["name"] for t in start.observation.tools]
        reply = client.step(
            CRMArenaAction(tool_call=ToolCall(name="respond", arguments={"message": "For which period?"}))
        )
        # the simulated user's answer comes back as the next user message
        assert not reply.done and reply.observation.messages[-1]["role"] == "user"
        assert reply.observation.messages[-1]["content"] == reply.observation.text and reply.observation.text
        final = client.step(CRMArenaAction(tool_call=ToolCall(name="respond", arguments={"message": "None"})))
        assert final.done and final.observation.text == "###STOP###"
