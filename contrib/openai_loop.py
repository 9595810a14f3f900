"""`ManagedChat`: the openai client's chat completions with ctxplug managing the context, in one line.

Before::

    response = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
    ... append the reply, run the tools, append their results, call again until the model answers ...

After::

    chat = ManagedChat(client, engine=engine, model=MODEL, provider="openrouter")
    result = chat.run(messages, tools=tools, tool_handler=run_tool)
    messages = result.messages          # the new history; the list you passed is never changed

Per request the wrapper: sizes the prompt (the last reported usage plus what was appended since, see
`contrib.prompt_size`), compresses through the engine when it says so, adds the engine's tools (``lcm_grep``…) to
yours, places Anthropic cache markers when the cache policy turns caching on for the model and provider, sends,
feeds the response's usage to ``engine.track_usage`` (streams ask for it with ``stream_options``), and answers the
engine's tool calls through ``engine.call_tool``. A prompt the API rejects as too long is compressed with
``force=True`` and sent once more.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import openai

from ctxplug.cache_policy import resolve_cache_policy
from ctxplug.cache_ttl import TtlChooser, resolve_ttl
from ctxplug.caching import apply_anthropic_cache_control
from ctxplug.contrib.openai_response import assistant_message, read_stream
from ctxplug.contrib.prompt_size import PromptSize
from ctxplug.engine import CompressionReport
from ctxplug.errors import CtxplugError
from ctxplug.host import EngineHost
from ctxplug.messages import Message, tool_calls_of
from ctxplug.usage import normalize_usage

ToolHandler = Callable[[str, dict[str, Any]], Any]
StopReason = Literal["answered", "tool_calls", "max_rounds"]
DEFAULT_MAX_ROUNDS = 50


@dataclass(frozen=True)
class Result:
    """The new history and the last response, with what the wrapper did on the way.

    ``stop`` says why `ManagedChat.run` returned: ``answered`` (a reply without tool calls), ``tool_calls`` (the model
    called tools of yours and no ``tool_handler`` was given: answer ``pending_tool_calls`` by appending tool messages
    to ``messages`` and call `run` again), ``max_rounds`` (the model kept calling tools).
    """

    messages: list[Message]
    response: Any
    stop: StopReason = "answered"
    pending_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    compressions: list[CompressionReport] = field(default_factory=list)
    requests: int = 0


class ManagedChat:
    """An agent loop over ``client.chat.completions`` whose context one ctxplug engine manages.

    One instance per conversation (the engine and the prompt-size tracker hold that conversation's state).
    ``client`` is an ``openai.OpenAI`` (or anything with ``chat.completions.create`` of the same signature).
    """

    def __init__(
        self,
        client: Any,
        *,
        engine: EngineHost,
        model: str,
        provider: str | None = None,
        cache_ttl: str | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.engine = engine
        self.model = model
        self.max_rounds = max_rounds
        setting = cache_ttl or engine.engine.context.config.prompt_caching.cache_ttl
        self.cache_policy = resolve_cache_policy(model, provider or engine.engine.context.provider, setting)
        # Anthropic's own endpoint, reached with the openai client, is its OpenAI-compatibility layer, which ignores
        # cache_control; markers pay off only where the OpenAI envelope is forwarded to Claude (OpenRouter).
        self.places_cache_markers = self.cache_policy.enabled and not self.cache_policy.native_anthropic
        self._ttl_chooser = TtlChooser() if self.places_cache_markers and setting == "auto" else None
        self._clock = clock
        self.prompt_size = PromptSize(model)
        self.last_prompt_tokens = 0

    def run(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_handler: ToolHandler | None = None,
        stream: bool = False,
        on_chunk: Callable[[Any], None] | None = None,
        **create_kwargs: Any,
    ) -> Result:
        """Send ``messages`` and loop over tool calls until the model answers; return the new history.

        Engine tools are answered by the engine, yours by ``tool_handler(name, arguments) -> str`` (a non-string is
        sent as JSON). ``stream=True`` streams each response (``on_chunk`` sees every chunk) and still reports its
        usage. ``create_kwargs`` go to ``chat.completions.create`` as they are (temperature, max_tokens…).
        """
        for fixed in ("model", "stream_options"):
            if fixed in create_kwargs:
                raise CtxplugError(f"ManagedChat.run: pass {fixed!r} {_WHERE[fixed]}, not as a create() argument")
        engine_schemas = self.engine.tools()
        engine_tools = {_tool_name(schema) for schema in engine_schemas}
        request_tools = _merge_tools(tools or [], engine_schemas)
        history = list(messages)
        reports: list[CompressionReport] = []
        response: Any = None
        for round_number in range(1, self.max_rounds + 1):
            history, response = self._exchange(history, request_tools, reports, stream, on_chunk, create_kwargs)
            reply = assistant_message(response)
            history.append(reply)
            pending = []
            for call in tool_calls_of(reply):
                name = str(call.get("function", {}).get("name", ""))
                arguments = call.get("function", {}).get("arguments")
                if name in engine_tools:
                    content = self.engine.call_tool(name, arguments, messages=history)
                elif tool_handler is not None:
                    parsed = _parse_arguments(arguments)
                    # Malformed arguments are the model's mistake: tell the model, as the engine's tools do.
                    content = tool_handler(name, parsed) if parsed is not None else json.dumps(
                        {"error": f"arguments for {name} are not a JSON object: {arguments!r}"})
                else:
                    pending.append(call)
                    continue
                history.append(_tool_result(call, content))
            if pending:
                return Result(history, response, "tool_calls", pending, reports, round_number)
            if not tool_calls_of(reply):
                return Result(history, response, "answered", [], reports, round_number)
        return Result(history, response, "max_rounds", [], reports, self.max_rounds)

    def _exchange(
        self,
        history: list[Message],
        tools: list[dict[str, Any]],
        reports: list[CompressionReport],
        stream: bool,
        on_chunk: Callable[[Any], None] | None,
        create_kwargs: dict[str, Any],
    ) -> tuple[list[Message], Any]:
        """One request: compress if due, send, and on a context-length rejection compress (forced) and resend once."""
        tokens = self.prompt_size.measure(history, tools)
        if self.engine.should_compress(tokens):
            history, tokens = self._compress(history, tools, tokens, reports, force=False)
        elif tokens > self.engine.context_length:
            # The engine is backing off, but this request cannot fit: sending it would only earn a 400.
            history, tokens = self._compress(history, tools, tokens, reports, force=True)
        try:
            return history, self._send(history, tools, tokens, stream, on_chunk, create_kwargs)
        except openai.BadRequestError as exc:
            if not _is_context_overflow(exc):
                raise
            smaller, tokens = self._compress(history, tools, tokens, reports, force=True)
            if smaller is history:
                raise
            return smaller, self._send(smaller, tools, tokens, stream, on_chunk, create_kwargs)

    def _compress(
        self, history: list[Message], tools: list[dict[str, Any]], tokens: int,
        reports: list[CompressionReport], *, force: bool,
    ) -> tuple[list[Message], int]:
        previous = self.engine.last_report
        compressed = self.engine.compress(history, current_tokens=tokens, force=force)
        report = self.engine.last_report
        if report is not None and report is not previous:
            reports.append(report)
        if compressed is history or compressed == history:
            return history, tokens
        self.prompt_size.forget_reported()
        return list(compressed), self.prompt_size.measure(compressed, tools)

    def _send(
        self, history: list[Message], tools: list[dict[str, Any]], tokens: int, stream: bool,
        on_chunk: Callable[[Any], None] | None, create_kwargs: dict[str, Any],
    ) -> Any:
        body: dict[str, Any] = {"model": self.model, "messages": self._request_messages(history, tokens)}
        if tools:
            body["tools"] = tools
        body.update(create_kwargs)
        if stream:
            chunks = self.client.chat.completions.create(
                **body, stream=True, stream_options={"include_usage": True}
            )
            response = read_stream(chunks, on_chunk)
        else:
            response = self.client.chat.completions.create(**body)
        usage = normalize_usage(getattr(response, "usage", None))
        self.engine.track_usage(usage)
        self.prompt_size.observe(usage)
        self.last_prompt_tokens = usage.prompt_tokens or tokens
        return response

    def _request_messages(self, history: list[Message], tokens: int) -> list[Message]:
        """The messages as sent: with cache markers when caching is on (the history itself never carries them)."""
        if not self.places_cache_markers:
            return history
        if self._ttl_chooser is not None:
            self._ttl_chooser.observe(self._clock(), tokens)
        ttl = resolve_ttl(self.cache_policy.cache_ttl, self._ttl_chooser)
        return apply_anthropic_cache_control(history, cache_ttl=ttl, native_anthropic=False)


_WHERE = {
    "model": "to ManagedChat(model=...) (the engine's budgets are sized for it)",
    "stream_options": "nowhere: stream=True asks for usage itself",
}


def _tool_name(schema: dict[str, Any]) -> str:
    return str(schema.get("function", {}).get("name") or schema.get("name") or "")


def _merge_tools(user_tools: Sequence[dict[str, Any]], engine_tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The caller's tools followed by the engine's; a name both define is an error, not a silent shadowing."""
    names = {_tool_name(schema) for schema in user_tools}
    clashes = sorted(names & {_tool_name(schema) for schema in engine_tools})
    if clashes:
        raise CtxplugError(f"tool name(s) {', '.join(clashes)} are defined by both your tools and the context "
                           f"engine; rename yours (the engine answers its own tools)")
    return [*user_tools, *engine_tools]


def _parse_arguments(arguments: Any) -> dict[str, Any] | None:
    """A tool call's arguments as a dict, or None when they are not a JSON object."""
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments) if arguments else {}
    except (json.JSONDecodeError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def _tool_result(call: dict[str, Any], content: Any) -> Message:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
    return {"role": "tool", "tool_call_id": call.get("id"), "content": text}


def _is_context_overflow(exc: openai.BadRequestError) -> bool:
    """True when a 400 says the prompt exceeds the model's window (OpenAI's code, or the usual wordings)."""
    if exc.code == "context_length_exceeded":
        return True
    text = str(exc).lower()
    return any(phrase in text for phrase in ("context length", "context_length", "maximum context", "too long"))
