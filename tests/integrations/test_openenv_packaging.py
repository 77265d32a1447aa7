"""CRMArena packaged as OpenEnv's environments are: ``openenv.yaml``, ``server/app.py`` and
``server/Dockerfile`` at the checkout's root, ``openenv validate`` passing on it, OpenEnv's own runtime
graders passing on a served episode, ``AutoEnv`` finding the client once ``autoenv/`` is installed, and the
image building from the project's own files (with Docker, or daemonless with buildah where no Docker daemon
answers; skipped with the reason where neither can build)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("openenv.core")
pytest.importorskip("uvicorn")
yaml = pytest.importorskip("yaml")

import crmarena_gym  # noqa: E402
from crmarena_gym.integrations import openenv as adapter  # noqa: E402
from crmarena_gym.integrations.openenv import (  # noqa: E402
    CRMArenaAction,
    CRMArenaHTTPClient,
    CRMArenaHub,
    HubConfig,
    ServerThread,
)
from crmarena_gym.org import LocalOrg  # noqa: E402
from tests.integrations.conftest import PER_TASK, default_signals, oracle_calls  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _openenv_version() -> tuple[int, ...]:
    try:
        text = version("openenv")
    except PackageNotFoundError:
        return (0,)
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())


NEEDS_OPENENV_010 = pytest.mark.skipif(
    _openenv_version() < (0, 10),
    reason="needs the openenv distribution >= 0.10 that the openenv extra pins (an older openenv, or the legacy "
    "openenv-core, is installed: pip install -e '.[openenv]')",
)


def test_the_manifest_describes_this_package() -> None:
    manifest = yaml.safe_load((ROOT / "openenv.yaml").read_text())
    assert manifest["version"] == crmarena_gym.__version__
    assert (manifest["name"], manifest["app"], manifest["port"]) == ("crmarena", "server.app:app", 8000)
    assert getattr(adapter, manifest["action"]) is CRMArenaAction
    assert getattr(adapter, manifest["observation"]).__name__ == manifest["observation"]
    # AutoEnv reads the copy inside the autoenv/ package: the two are one manifest
    assert (ROOT / "autoenv" / "crmarena_env" / "openenv.yaml").read_bytes() == (ROOT / "openenv.yaml").read_bytes()
    dockerfile = (ROOT / "server" / "Dockerfile").read_text()
    assert "HEALTHCHECK" in dockerfile and "/health" in dockerfile.split("HEALTHCHECK", 1)[1].split("\nCMD")[0]
    copied = [line.split()[1:-1] for line in dockerfile.splitlines() if line.startswith("COPY ")]
    assert all((ROOT / path).exists() for paths in copied for path in paths)  # the checkout's own files


@NEEDS_OPENENV_010
def test_openenv_validate_passes_in_the_checkout() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "openenv.cli", "validate", str(ROOT), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] in ("pass", "warn")
    statuses = {r["check_id"]: r["status"] for r in report["results"]}
    assert statuses["static.manifest"] == "pass"
    assert "fail" not in statuses.values() and "error" not in statuses.values()


def test_openenv_validate_url_passes_on_a_running_server(env_org: Path) -> None:
    hub = CRMArenaHub(HubConfig(org=str(env_org), per_task=PER_TASK))
    with ServerThread(hub=hub) as server:
        command = [sys.executable, "-m", "openenv.cli", "validate", "--url", server.url]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout, result.stdout


@NEEDS_OPENENV_010
def test_openenv_runtime_graders_pass_on_a_served_episode(env_org: Path, tmp_path: Path) -> None:
    from openenv.validation.graders import Subject
    from openenv.validation.graders.runtime.basic import (
        ObservationSchemaGrader,
        RewardWellFormedGrader,
        StateContractGrader,
    )
    from openenv.validation.parsers.openenv_yaml import OpenEnvYamlParser
    from openenv.validation.runtime.collector import collect_runtime_evidence
    from openenv.validation.runtime.contracts import RuntimePlan

    hub = CRMArenaHub(HubConfig(org=str(env_org), per_task=PER_TASK))
    instance = next(i for i in hub.instances("train", None) if i.abbrev == "HTU")
    actions = [{"tool_call": {"name": n, "arguments": a}} for n, a in oracle_calls(LocalOrg(env_org), instance)]
    reset = {"episode_id": "validation-episode", "seed": 0, "options": {"split": "train", "task_id": instance.idx}}
    plan = RuntimePlan.model_validate({"plan_schema_version": "1", "reset": reset, "actions": actions})
    with ServerThread(hub=hub) as server:
        evidence = collect_runtime_evidence(server.url, plan, episode_timeout_s=120)
    assert evidence.failure_reason is None
    last = json.loads(evidence.exchanges[-2].response_json)["data"]  # the last step, before its state
    assert last["done"] is True and last["reward"] == 1.0
    manifest = OpenEnvYamlParser().parse(ROOT)
    subject = Subject(ROOT, manifest, None, None, tmp_path, runtime_evidence=evidence)
    for grader in (RewardWellFormedGrader(), ObservationSchemaGrader(), StateContractGrader()):
        result = grader.run(subject)
        assert result.status.value == "pass", (grader.check_id, result.evidence)


def test_server_app_is_the_served_app_and_its_main_is_serve_env(
    env_org: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("CRMARENA_ORG", str(env_org))
    monkeypatch.setenv("MAX_CONCURRENT_ENVS", "7")
    monkeypatch.setenv("CRMARENA_IDLE_TIMEOUT", "42")
    sys.modules.pop("server.app", None)
    import server.app as entry

    app = entry.app
    assert isinstance(app, adapter.CRMArenaApp) and entry.app is app  # made once, on first use
    assert (app.hub.config.org, app.hub.config.max_sessions) == (str(env_org), 7)
    assert app.hub.config.session_timeout == 42.0
    app.close()
    app.hub.close()
    monkeypatch.setenv("MAX_CONCURRENT_ENVS", "many")
    with pytest.raises(ValueError, match="MAX_CONCURRENT_ENVS must be a int, got 'many'"):
        entry.build_app()
    with pytest.raises(SystemExit) as exit_info:
        entry.main(["--help"])
    assert exit_info.value.code == 0 and "crmarena-gym serve-env" in capsys.readouterr().out
    sys.modules.pop("server.app", None)


def test_python_m_server_app_serves_an_episode(env_org: Path) -> None:
    command = [sys.executable, "-m", "server.app", "--port", "0", "--org", str(env_org), "--per-task", "2"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    process = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ), preexec_fn=default_signals, **pipes)
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("serving CRMArena (OpenEnv) on http://127.0.0.1:"), line + process.stderr.read()  # type: ignore[union-attr]
        url = line.split(" on ")[1].split()[0]
        with CRMArenaHTTPClient(url, timeout=60) as client:
            assert client.reset(split="test", seed=0).observation.error is None
            assert client.step(CRMArenaAction(text="submit None")).done
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
def test_autoenv_finds_the_environment_once_its_package_is_installed(env_org: Path, tmp_path: Path) -> None:
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"building autoenv/ offline needs setuptools>=77 here (found {setuptools.__version__})")
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    build = subprocess.run(
        [*pip, "--target", str(target), str(ROOT / "autoenv")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PIP_NO_BUILD_ISOLATION": "1"},
    )
    assert build.returncode == 0, build.stdout + build.stderr
    hub = CRMArenaHub(HubConfig(org=str(env_org), per_task=PER_TASK))
    with ServerThread(hub=hub) as server:
        script = textwrap.dedent(
            f"""
            import asyncio
            from openenv import AutoAction, AutoEnv
            from crmarena_gym.integrations.openenv import CRMArenaAction, CRMArenaClient

            assert AutoAction.from_env("crmarena") is CRMArenaAction
            env = AutoEnv.from_env("crmarena", base_url={server.url!r})
            assert isinstance(env, CRMArenaClient) and type(env).__name__ == "CrmarenaEnv", type(env)

            async def play():
                async with env:
                    start = await env.reset(split="test", seed=2)
                    end = await env.step(CRMArenaAction(text="submit None"))
                    return start.observation.task, end.done

            task, done = asyncio.run(play())
            print("played", task, done)
            """
        )
        environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
        environ["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # AutoEnv's discovery cache: a fresh one
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=environ, timeout=300
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("True")


#: Build output that says the base image could not be fetched (no registry reachable), not that the build broke.
_NO_BASE_IMAGE = (
    "pinging container registry",
    "initializing source",
    "pull access denied",
    "failed to resolve source metadata",
    "error pulling image",
)


def _docker_unavailable() -> str | None:
    if shutil.which("docker") is None:
        return "no docker command on this machine"
    probe = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return "the Docker daemon does not answer: " + (probe.stderr.strip().splitlines() or ["?"])[-1]
    return None


class _Builder:
    """Docker, or where no daemon answers, buildah (daemonless: vfs storage, chroot isolation, as root)."""

    def __init__(self, name: str) -> None:
        self.name = name
        driver = os.environ.get("STORAGE_DRIVER", "vfs")
        self.prefix = ["docker"] if name == "docker" else ["buildah", "--storage-driver", driver]

    def build(self, tag: str, base: str | None) -> subprocess.CompletedProcess[str]:
        args = ["build"] if self.name == "docker" else ["bud", "--format", "docker", "--isolation", "chroot"]
        args += ["--build-arg", f"BASE_IMAGE={base}"] if base else []
        command = [*self.prefix, *args, "-f", "server/Dockerfile", "-t", tag, "."]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=3600)

    def config(self, tag: str) -> dict[str, Any]:
        """The image's Docker config (Healthcheck, Cmd, User ...)."""
        if self.name == "docker":
            inspected = subprocess.run([*self.prefix, "image", "inspect", tag], capture_output=True, text=True)
            return json.loads(inspected.stdout)[0]["Config"]
        inspected = subprocess.run([*self.prefix, "inspect", "--type", "image", tag], capture_output=True, text=True)
        return json.loads(inspected.stdout)["Docker"]["config"]

    def serve(self, tag: str, port: int, log: Any) -> tuple[subprocess.Popen[str], str]:
        """Start the image's server, reachable on ``port`` of the loopback (its output to the file ``log``);
        returns the process and a handle."""
        if self.name == "docker":
            run = subprocess.run(
                [*self.prefix, "run", "-d", "--rm", "-p", f"127.0.0.1:{port}:8000", tag],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert run.returncode == 0, run.stderr
            return subprocess.Popen(["true"], text=True), run.stdout.strip()
        made = subprocess.run([*self.prefix, "from", tag], capture_output=True, text=True, timeout=300)
        assert made.returncode == 0, made.stderr
        container = made.stdout.strip()
        # chroot isolation shares the host's network: the image's server on a free loopback port instead of 8000
        serve = ["python", "-m", "server.app", "--host", "127.0.0.1", "--port", str(port)]
        server = subprocess.Popen(
            [*self.prefix, "run", "--isolation", "chroot", container, "--", *serve],
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=default_signals,
        )
        return server, container

    def stop(self, server: subprocess.Popen[str], container: str, tag: str) -> None:
        if self.name == "docker":
            subprocess.run([*self.prefix, "stop", container], capture_output=True, timeout=120)
            return
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=30)
        subprocess.run([*self.prefix, "rm", container], capture_output=True, timeout=300)
        subprocess.run([*self.prefix, "rmi", tag], capture_output=True, timeout=300)


def _builder() -> _Builder:
    docker = _docker_unavailable()
    if docker is None:
        return _Builder("docker")
    if shutil.which("buildah") is not None and os.geteuid() == 0:
        return _Builder("buildah")
    buildah = "no buildah command" if shutil.which("buildah") is None else "buildah here runs as root only"
    pytest.skip(f"building the image needs Docker ({docker}) or buildah ({buildah})")


@pytest.mark.slow
def test_the_image_builds_from_the_checkout_and_serves_an_episode(tmp_path: Path) -> None:
    """The image builds from the checkout's own files with Docker, or daemonless with buildah where no Docker
    daemon answers; it carries the HEALTHCHECK on /health, and the server it starts plays an episode.
    CRMARENA_BASE_IMAGE names another base image (a local Python 3.11 one where no registry is reachable)."""
    builder = _builder()
    base = os.environ.get("CRMARENA_BASE_IMAGE")
    tag = "localhost/crmarena-env:test"
    built = builder.build(tag, base)
    output = built.stdout[-3000:] + built.stderr[-3000:]
    if built.returncode != 0 and any(marker in output for marker in _NO_BASE_IMAGE):
        pytest.skip(
            f"{builder.name} cannot fetch the base image {base or 'python:3.11-slim'} here (no registry reachable); "
            "set CRMARENA_BASE_IMAGE to a local Python 3.11 image: " + output.strip().splitlines()[-1]
        )
    assert built.returncode == 0, output
    config = builder.config(tag)
    assert "/health" in " ".join(config["Healthcheck"]["Test"])
    assert config["Cmd"][:3] == ["python", "-m", "server.app"] and config["User"] == "crmarena"
    port = _free_port()
    log = (tmp_path / "server.log").open("w")
    server, container = builder.serve(tag, port, log)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(url + "/health", timeout=5).json()["status"] == "healthy":
                    break
            except httpx.HTTPError:
                pass
            failed = server.poll() not in (None, 0) or time.monotonic() > deadline
            assert not failed, "the server did not become healthy: " + (tmp_path / "server.log").read_text()[-2000:]
            time.sleep(1)
        with CRMArenaHTTPClient(url, timeout=120) as client:
            assert client.reset(split="test", seed=0).observation.error is None
            assert client.step(CRMArenaAction(text="submit None")).done
    finally:
        builder.stop(server, container, tag)
        log.close()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
