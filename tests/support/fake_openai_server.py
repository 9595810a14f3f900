"""A small OpenAI-compatible HTTP server on 127.0.0.1 whose every answer is scripted by the test.

The real `openai` client talks to it over real HTTP, so tests exercise the SDK's own parsing, status handling and
timeouts. A handler ``(request_json) -> Reply`` decides each answer; helpers build the usual ones (an answer, 400
context_length_exceeded, 401, 429, 500, a hang, malformed JSON, empty content), and `scripted` plays a list of them
in order. A handler may also return a whole completion dict (`Reply.completion`) or the chunks of a stream
(`Reply.stream`), which is how a strict-API handler that validates tool pairs and reports usage plugs in.
Every request body is recorded in ``server.requests``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Reply:
    """One HTTP answer: status, JSON (or raw bytes), headers, an optional delay, or stream chunks."""

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunks: list[dict[str, Any]] | None = None

    @classmethod
    def completion(cls, completion: dict[str, Any]) -> Reply:
        """A 200 with a full chat-completion object."""
        return cls(body=completion)

    @classmethod
    def stream(cls, chunks: list[dict[str, Any]]) -> Reply:
        """A 200 server-sent-event stream of ``chunks``, then ``[DONE]``."""
        return cls(chunks=chunks)

    @classmethod
    def error(cls, status: int, message: str, code: str | None = None, err_type: str = "invalid_request_error",
              headers: dict[str, str] | None = None) -> Reply:
        """An OpenAI-style error body."""
        return cls(status=status, body={"error": {"message": message, "type": err_type, "code": code}},
                   headers=headers or {})


Handler = Callable[[dict[str, Any]], Reply]


def completion_dict(text: str | None, *, model: str = "fake-summarizer", prompt_tokens: int = 100) -> dict[str, Any]:
    """A chat completion whose single choice says ``text``."""
    completion_tokens = len(text or "") // 4
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def answer(text: str) -> Reply:
    """A normal answer (streamed as chunks when the request asks for a stream)."""
    return Reply.completion(completion_dict(text))


def empty_answer() -> Reply:
    """A well-formed completion whose content is empty."""
    return Reply.completion(completion_dict(""))


def context_length_exceeded(limit: int = 8_192) -> Reply:
    """The 400 a provider sends when the prompt does not fit the model's window."""
    return Reply.error(400, f"This model's maximum context length is {limit} tokens. However, your messages "
                            "resulted in more tokens. Please reduce the length of the messages.",
                       code="context_length_exceeded")


def unauthorized() -> Reply:
    return Reply.error(401, "Incorrect API key provided.", code="invalid_api_key", err_type="authentication_error")


def rate_limited(retry_after: float | None = None) -> Reply:
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return Reply.error(429, "Rate limit reached, slow down.", code="rate_limit_exceeded", err_type="requests",
                       headers=headers)


def server_error(status: int = 500) -> Reply:
    return Reply.error(status, "The server had an error while processing your request.", err_type="server_error")


def hang(seconds: float = 30.0) -> Reply:
    """No answer for ``seconds`` (the client's timeout should fire first); cut short when the server stops."""
    return Reply(delay=seconds, body=completion_dict("too late"))


def malformed() -> Reply:
    """A 200 whose body is not JSON."""
    return Reply(raw=b'{"id": "chatcmpl-broken", "choices": [{"message": ')


def scripted(*replies: Reply) -> Handler:
    """A handler answering with ``replies`` in order, repeating the last one."""
    queue = list(replies)
    lock = threading.Lock()

    def handle(request: dict[str, Any]) -> Reply:
        with lock:
            return queue.pop(0) if len(queue) > 1 else queue[0]

    return handle


def stream_chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """A text completion as streamed chunks (role, content in pieces, finish, usage)."""
    base = {"id": completion["id"], "object": "chat.completion.chunk", "created": 0, "model": completion["model"]}
    content = completion["choices"][0]["message"].get("content") or ""
    deltas = [{"role": "assistant", "content": ""}] + [{"content": content[i:i + 40]}
                                                        for i in range(0, len(content), 40)]
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append({**base, "choices": [], "usage": completion.get("usage")})
    return chunks


class FakeOpenAIServer:
    """``/v1/chat/completions`` on 127.0.0.1 at a free port; ``handler`` may be replaced between requests."""

    def __init__(self, handler: Handler | None = None) -> None:
        self.handler: Handler = handler or scripted(answer("## Goal\nfake summary"))
        self.requests: list[dict[str, Any]] = []
        self.stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_request_handler(self))
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits for one, and every test stops a server.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-openai", daemon=True)

    @property
    def base_url(self) -> str:
        """The URL to hand to ``openai.OpenAI(base_url=...)``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _make_request_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; with Nagle's algorithm on, each answer on a kept-alive
        # connection would wait ~40 ms for the client's delayed ACK.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(Reply.error(404, f"no route {self.path}"))
                return
            server.requests.append(body)
            reply = server.handler(body)
            if reply.delay and server.stopping.wait(reply.delay):
                return
            if reply.chunks is None and body.get("stream") and reply.status == 200 and isinstance(reply.body, dict):
                reply = Reply.stream(stream_chunks(reply.body))
            self._send(reply)

        def _send(self, reply: Reply) -> None:
            try:
                if reply.chunks is not None:
                    self._send_stream(reply.chunks)
                    return
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                return

        def _send_stream(self, chunks: list[dict[str, Any]]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

    return RequestHandler


@pytest.fixture(name="fake_openai")
def fake_openai_fixture() -> Iterator[FakeOpenAIServer]:
    """A running `FakeOpenAIServer` as the ``fake_openai`` fixture (import this name); set its ``handler``."""
    with FakeOpenAIServer() as server:
        yield server
