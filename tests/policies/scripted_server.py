"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests (no network leaves the machine).

Each POST to ``/v1/chat/completions`` takes the next step of the script:

- ``{"content": "..."}`` or ``{"tool_calls": [{"name": ..., "arguments": {...}}]}``: a reply;
- ``{"status": 429}`` (or 500, 503 ...): an error answer with that status;
- ``{"sleep": seconds}``: the server waits that long, then answers 500 (a client with a shorter
  timeout has given up by then).

Replies carry ``usage`` with token counts of ``prompt_tokens=len(messages) * 10`` and
``completion_tokens=7``, so tests know what to expect. Every request body is kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMPLETION_TOKENS = 7


def prompt_tokens(messages: list[Any]) -> int:
    """The prompt tokens the server reports for a request with these messages."""
    return 10 * len(messages)


class ScriptedServer:
    """Serve a script of chat replies; use as a context manager.

    Attributes:
        url: The ``api_base`` to give litellm (``http://127.0.0.1:PORT/v1``).
        requests: The JSON bodies received, in order.
    """

    def __init__(self, script: Iterable[dict[str, Any]] = ()) -> None:
        self.script: list[dict[str, Any]] = list(script)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                step = server._next(body)
                if "sleep" in step:
                    time.sleep(step["sleep"])
                    step = {"status": 500, "message": "answered after the client's timeout"}
                status, payload = server._answer(body, step)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def add(self, *steps: dict[str, Any]) -> None:
        """Append steps to the script."""
        with self.lock:
            self.script.extend(steps)

    def _next(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.requests.append(body)
            if not self.script:
                return {"status": 500, "message": "the script is exhausted"}
            return self.script.pop(0)

    @staticmethod
    def _answer(body: dict[str, Any], step: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "status" in step:
            message = step.get("message", f"scripted error {step['status']}")
            return step["status"], {"error": {"message": message, "type": "scripted", "code": step["status"]}}
        message: dict[str, Any] = {"role": "assistant", "content": step.get("content")}
        if step.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": f"call_{n}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
                }
                for n, c in enumerate(step["tool_calls"])
            ]
        n_prompt = prompt_tokens(body.get("messages", []))
        usage: dict[str, Any] = {
            "prompt_tokens": n_prompt,
            "completion_tokens": COMPLETION_TOKENS,
            "total_tokens": n_prompt + COMPLETION_TOKENS,
        }
        if "cost" in step:
            usage["cost"] = step["cost"]
        return 200, {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if step.get("tool_calls") else "stop"}
            ],
            "usage": usage,
        }

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
