"""A strict chat-completions API and a scripted tool-using model, for end-to-end tests of the agent loop.

`StrictChatApi` checks every request the way a strict provider does and answers 400 when it breaks a rule: a tool
result whose call is not in the assistant message right before it, a tool call without its result, or a prompt
over the context length (counted with ctxplug's own token counter, which is also what the usage reports). Valid
requests are answered by a `ScriptedModel`, which decides from the last message, so a compressed history gets a
sensible answer too. Every request is logged for the test to inspect. `strict_handler` plugs it into
`FakeOpenAIServer`; `READ_FILE` / `read_file` are the tool the model calls, `RecallTool` an observer plugin that
offers an engine-side tool.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctxplug.hookspecs import hookimpl
from ctxplug.tokens import count_tokens
from ctxplug.usage import Usage
from support.fake_openai_server import FakeOpenAIServer, Handler, Reply

Message = dict[str, Any]

READ_FILE = {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                              "parameters": {"type": "object",
                                                             "properties": {"path": {"type": "string"}}}}}
SYSTEM = {"role": "system", "content": "You are a careful coding agent."}


class RecallTool:
    """An observer plugin that offers one tool and records the usage it is given, like a memory plugin."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.usages: list[Usage] = []

    @hookimpl
    def tools(self) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {"name": "recall", "parameters": {"type": "object"}}}]

    @hookimpl
    def call_tool(self, name: str, arguments: dict[str, Any], messages: list[dict[str, Any]] | None) -> str | None:
        if name != "recall":
            return None
        self.calls.append({"arguments": arguments, "messages": len(messages or [])})
        return json.dumps({"matches": ["step 3: the timeout was 30 s"]})

    @hookimpl
    def track_usage(self, usage: Usage) -> None:
        self.usages.append(usage)


def read_file(name: str, arguments: dict[str, Any]) -> str:
    assert name == "read_file", name
    return f"# {arguments['path']}\n" + "def handler(event):\n    return process(event)\n" * 20


class Rejection(Exception):
    """The API refuses a request: HTTP status, OpenAI error code, and message."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.status = status

    def body(self) -> dict[str, Any]:
        return {"error": {"message": str(self), "type": "invalid_request_error", "code": self.code}}


def check_tool_pairs(messages: list[Message]) -> None:
    """Raise `Rejection` unless every tool call is answered right after its message and every result has a call."""
    waiting: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in waiting:
                raise Rejection("invalid_tool_result", f"messages[{index}]: a tool message must answer a tool call "
                                f"of the preceding assistant message; {call_id!r} does not")
            waiting.discard(call_id)
            continue
        if waiting:
            raise Rejection("missing_tool_result", f"messages[{index}]: tool call(s) {sorted(waiting)} were not "
                            "answered before the next message")
        if role == "assistant":
            waiting = {str(call["id"]) for call in message.get("tool_calls") or ()}
    if waiting:
        raise Rejection("missing_tool_result", f"the conversation ends with unanswered tool call(s) {sorted(waiting)}")


@dataclass
class ScriptedModel:
    """Replies from the conversation's state, calling tools the way a coding agent does.

    After a user message it calls ``read_file`` (two calls in parallel every ``parallel_every`` user turns, the
    ``engine_tool`` every ``engine_tool_every`` user turns); after tool results it answers in text.
    """

    engine_tool: str | None = None
    engine_tool_every: int = 25
    parallel_every: int = 7
    answer_chars: int = 300
    calls: int = 0
    user_turns: int = 0

    def reply(self, messages: list[Message]) -> Message:
        last = messages[-1]
        self.calls += 1
        if last.get("role") != "user":
            return {"role": "assistant", "content": f"Done with step {self.calls}. " + "r" * self.answer_chars}
        # counted by the model, not from the history: a compressed history has fewer user messages
        self.user_turns += 1
        turn = self.user_turns
        if self.engine_tool and turn % self.engine_tool_every == 0:
            return self._call((self.engine_tool, {"pattern": "step"}))
        paths = [f"src/module_{turn}.py"]
        if turn % self.parallel_every == 0:
            paths.append(f"tests/test_module_{turn}.py")
        return self._call(*(("read_file", {"path": path}) for path in paths))

    def _call(self, *calls: tuple[str, dict[str, Any]]) -> Message:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{self.calls}_{n}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}
            for n, (name, arguments) in enumerate(calls)
        ]}


@dataclass
class StrictChatApi:
    """Validates each request body, answers it with the scripted model, and logs both."""

    context_length: int
    model: ScriptedModel = field(default_factory=ScriptedModel)
    on_request: Callable[[dict[str, Any], int], None] | None = None
    log: list[dict[str, Any]] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The completion for ``body`` as a JSON-ready dict; raises `Rejection` for a request that breaks a rule."""
        with self._lock:
            try:
                messages = body["messages"]
                check_tool_pairs(messages)
                prompt = count_tokens(messages, body.get("model"), tools=body.get("tools"))
                if prompt > self.context_length:
                    raise Rejection("context_length_exceeded", f"This model's maximum context length is "
                                    f"{self.context_length} tokens; your messages resulted in {prompt} tokens")
            except Rejection as rejection:
                self.rejections.append(rejection)
                raise
            if self.on_request is not None:
                self.on_request(body, prompt)
            reply = self.model.reply(messages)
            completion_tokens = count_tokens([reply], body.get("model")) if reply.get("content") else 20
            self.log.append({"prompt_tokens": prompt, "messages": len(messages), "stream": bool(body.get("stream")),
                             "tools": [t["function"]["name"] for t in body.get("tools") or ()]})
            return {
                "id": f"chatcmpl-{len(self.log)}", "object": "chat.completion", "created": 0,
                "model": body.get("model", "scripted"),
                "choices": [{"index": 0, "message": reply,
                             "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                          "total_tokens": prompt + completion_tokens},
            }


def as_chunks(completion: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The completion as the chunks of a streamed response: role, content in pieces, tool calls, then usage."""
    message = completion["choices"][0]["message"]
    base = {"id": completion["id"], "object": "chat.completion.chunk", "created": 0, "model": completion["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    content = message.get("content") or ""
    chunks += [chunk({"content": content[i:i + 40]}) for i in range(0, len(content), 40)]
    for index, call in enumerate(message.get("tool_calls") or ()):
        arguments = call["function"]["arguments"]
        chunks.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                             "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        chunks += [chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i:i + 10]}}]})
                   for i in range(0, len(arguments), 10)]
    chunks.append(chunk({}, completion["choices"][0]["finish_reason"]))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    return chunks


def strict_handler(api: StrictChatApi) -> Handler:
    """A `FakeOpenAIServer` handler: 400 for a rule broken, else the scripted answer (streamed when asked)."""

    def handle(body: dict[str, Any]) -> Reply:
        try:
            completion = api.answer(body)
        except Rejection as rejection:
            return Reply.error(rejection.status, str(rejection), code=rejection.code)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return Reply.stream(as_chunks(completion, include_usage))
        return Reply.completion(completion)

    return handle


def serve_strict(api: StrictChatApi) -> FakeOpenAIServer:
    """A (not yet started) `FakeOpenAIServer` answering through ``api``."""
    return FakeOpenAIServer(strict_handler(api))
