"""A small OpenAI-compatible server on 127.0.0.1 that answers what each test scripts.

The real `openai` client talks HTTP to it, so retries, timeouts, headers and
parsing are exercised for real. A test scripts replies either as a queue
(``server.queue(...)``) or as a function of the request (``server.responder``).
Every request is recorded (JSON body and headers) for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Scripted:
    status: int = 200
    body: Any = None  # dict -> JSON; bytes -> sent raw
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    truncate: bool = False  # promise more bytes than are sent, then hang up


def completion(content: str, prompt_tokens: int = 100, completion_tokens: int = 50, model: str = "scripted",
               finish_reason: str = "stop") -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def reply(content: str | dict, **kwargs) -> Scripted:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return Scripted(body=completion(text), **kwargs)


def error(status: int, message: str = "scripted error", headers: dict[str, str] | None = None) -> Scripted:
    return Scripted(status=status, body={"error": {"message": message, "type": "scripted", "code": str(status)}},
                    headers=headers or {})


@dataclass
class Request:
    path: str
    body: dict
    headers: dict[str, str]
    at: float


class ScriptedOpenAI:
    """``models``: what GET /v1/models lists (None: 404, as a server without the list answers); ``props``: what
    llama.cpp's GET /props answers (None: 404)."""

    def __init__(self, models: list[str] | None = None, props: dict | None = None) -> None:
        self.requests: list[Request] = []
        self._queue: list[Scripted] = []
        self._lock = threading.Lock()
        self.responder: Callable[[Request], Scripted] | None = None
        self.models = models
        self.props = props
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def queue(self, *replies: Scripted) -> None:
        with self._lock:
            self._queue.extend(replies)

    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _next(self, request: Request) -> Scripted:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.pop(0)
        if self.responder is not None:
            return self.responder(request)
        return error(500, "no scripted reply left")

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle on, the body waits for the client's
            # delayed ACK, adding ~40 ms to every reply (benchmarks/loop_overhead.py measures latency).
            disable_nagle_algorithm = True

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # (http.server's naming): the server describing itself
                server.requests.append(Request(self.path, {}, {k.lower(): v for k, v in self.headers.items()}, time.time()))
                listed = {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models or []]}
                found = (listed if self.path.endswith("/models") and server.models is not None
                         else server.props if self.path == "/props" and server.props is not None else None)
                payload = json.dumps(found if found is not None else {"detail": "Not Found"}).encode()
                self.send_response(200 if found is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:  # (http.server's naming)
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                arrived = time.monotonic()
                scripted = server._next(Request(self.path, body, {k.lower(): v for k, v in self.headers.items()}, time.time()))
                if scripted.delay:  # a latency counted from the request's arrival, as a model server's is
                    time.sleep(max(0.0, scripted.delay - (time.monotonic() - arrived)))
                payload = scripted.body if isinstance(scripted.body, bytes) else json.dumps(scripted.body).encode()
                try:
                    self.send_response(scripted.status)
                    self.send_header("Content-Type", "application/json")
                    for name, value in scripted.headers.items():
                        self.send_header(name, value)
                    if scripted.truncate:
                        self.send_header("Content-Length", str(len(payload) + 500))
                        self.end_headers()
                        self.wfile.write(payload[: len(payload) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

        return Handler

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
