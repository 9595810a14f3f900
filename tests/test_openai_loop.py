"""ManagedChat against a strict OpenAI-compatible server over real HTTP, driven by the real openai client."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from support.compressor_engines import RecordingWriter, make_engine
from support.fake_openai_server import FakeOpenAIServer, Reply, answer, context_length_exceeded, scripted
from support.strict_chat_api import (
    READ_FILE,
    SYSTEM,
    RecallTool,
    ScriptedModel,
    StrictChatApi,
    read_file,
    strict_handler,
)

from ctxplug.contrib.openai_loop import ManagedChat
from ctxplug.errors import CtxplugError
from ctxplug.host import EngineHost
from ctxplug.messages import is_compaction_summary


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


def client_for(server: FakeOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)


def strict(server: FakeOpenAIServer, context_length: int = 100_000, **model: Any) -> StrictChatApi:
    api = StrictChatApi(context_length, ScriptedModel(**model))
    server.handler = strict_handler(api)
    return api


def managed(server: FakeOpenAIServer, context_length: int = 100_000, model: str = "gpt-4o",
            provider: str | None = "openai", **compression: Any) -> tuple[ManagedChat, EngineHost]:
    host = EngineHost(make_engine(context_length=context_length, writer=RecordingWriter(), **compression))
    return ManagedChat(client_for(server), engine=host, model=model, provider=provider), host


def test_a_tool_loop_returns_the_new_history_and_leaves_the_callers_alone(server: FakeOpenAIServer) -> None:
    api = strict(server)
    chat, host = managed(server)
    messages = [SYSTEM, {"role": "user", "content": "Fix the failing test in src/app.py"}]
    before = copy.deepcopy(messages)
    result = chat.run(messages, tools=[READ_FILE], tool_handler=read_file)
    assert messages == before
    assert result.stop == "answered" and result.requests == 2
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert result.messages[:2] == messages and result.messages is not messages
    assert result.messages[3]["content"].startswith("# src/module_1.py")
    assert "tool_calls" not in result.messages[-1] and "cache_control" not in json.dumps(result.messages)
    # usage reached the engine: its last prompt size is what the server counted for the last request
    assert host.engine.last_prompt_tokens == api.log[-1]["prompt_tokens"] == result.response.usage.prompt_tokens
    assert chat.last_prompt_tokens == api.log[-1]["prompt_tokens"]
    assert api.rejections == []


def test_engine_tools_are_offered_and_answered_by_the_engine(server: FakeOpenAIServer) -> None:
    api = strict(server, engine_tool="recall", engine_tool_every=1)
    chat, host = managed(server)
    recall = RecallTool()
    host.add_observer(recall)
    result = chat.run([SYSTEM, {"role": "user", "content": "What was the timeout?"}], tools=[READ_FILE],
                      tool_handler=read_file)
    assert api.log[0]["tools"] == ["read_file", "recall"]
    assert len(recall.calls) == 1 and recall.calls[0]["arguments"] == {"pattern": "step"}
    tool_message = result.messages[3]
    assert tool_message["role"] == "tool" and "30 s" in tool_message["content"]
    assert result.stop == "answered" and api.rejections == []
    assert [u.prompt_tokens for u in recall.usages] == [entry["prompt_tokens"] for entry in api.log]


def test_without_a_handler_the_callers_tool_calls_come_back_pending(server: FakeOpenAIServer) -> None:
    api = strict(server, parallel_every=1)
    chat, _ = managed(server)
    result = chat.run([SYSTEM, {"role": "user", "content": "Look at both files"}], tools=[READ_FILE])
    assert result.stop == "tool_calls" and len(result.pending_tool_calls) == 2
    answered = [*result.messages, *({"role": "tool", "tool_call_id": call["id"], "content": "print('ok')"}
                                    for call in result.pending_tool_calls)]
    final = chat.run(answered, tools=[READ_FILE])
    assert final.stop == "answered" and final.messages[:len(answered)] == answered
    assert api.rejections == []


def test_streaming_reports_usage_and_assembles_tool_calls(server: FakeOpenAIServer) -> None:
    api = strict(server, parallel_every=1)
    chat, host = managed(server)
    chunks: list[Any] = []
    result = chat.run([SYSTEM, {"role": "user", "content": "Stream it"}], tools=[READ_FILE],
                      tool_handler=read_file, stream=True, on_chunk=chunks.append)
    assert all(request["stream"] for request in api.log) and len(api.log) == 2
    assert all(body["stream_options"] == {"include_usage": True} for body in server.requests)
    calls = result.messages[2]["tool_calls"]
    assert [json.loads(c["function"]["arguments"])["path"] for c in calls] == ["src/module_1.py",
                                                                              "tests/test_module_1.py"]
    assert result.response.usage.prompt_tokens == api.log[-1]["prompt_tokens"]
    assert host.engine.last_prompt_tokens == api.log[-1]["prompt_tokens"]
    assert len(chunks) > 10 and chunks[-1].usage is not None
    assert result.messages[-1]["content"].startswith("Done with step")


def test_claude_via_openrouter_gets_cache_markers_on_the_request_only(server: FakeOpenAIServer) -> None:
    strict(server)
    chat, _ = managed(server, model="anthropic/claude-sonnet-4.5", provider="openrouter")
    assert chat.cache_policy.enabled and chat.places_cache_markers
    result = chat.run([SYSTEM, {"role": "user", "content": "hello"}], tools=[READ_FILE], tool_handler=read_file)
    sent = server.requests[-1]["messages"]
    markers = json.dumps(sent).count('"cache_control"')
    assert 2 <= markers <= 4
    assert sent[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps(result.messages)


@pytest.mark.parametrize(("model", "provider"), [("gpt-4o", "openai"), ("claude-sonnet-4-5", "anthropic")])
def test_routes_that_ignore_markers_get_none(server: FakeOpenAIServer, model: str, provider: str) -> None:
    # Anthropic's endpoint behind the openai client is its OpenAI-compatibility layer, which ignores cache_control.
    strict(server)
    chat, _ = managed(server, model=model, provider=provider)
    assert not chat.places_cache_markers
    chat.run([SYSTEM, {"role": "user", "content": "hello"}], tools=[READ_FILE], tool_handler=read_file)
    assert all("cache_control" not in json.dumps(body) for body in server.requests)


def long_history(turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [SYSTEM]
    for turn in range(turns):
        history.append({"role": "user", "content": f"step {turn}: " + "explain the module " * 30})
        history.append({"role": "assistant", "content": f"done {turn}: " + "it parses the input " * 30})
    return history


def test_a_context_length_rejection_is_compressed_away_and_sent_again(server: FakeOpenAIServer) -> None:
    server.handler = scripted(context_length_exceeded(), answer("fits now"))
    chat, host = managed(server, context_length=16_000, protect_last_n=4)  # under its threshold at first
    history = [*long_history(20), {"role": "user", "content": "go on"}]
    result = chat.run(history)
    assert len(server.requests) == 2
    assert len(server.requests[1]["messages"]) < len(history)
    assert any(is_compaction_summary(m) for m in result.messages)
    assert [r.outcome for r in result.compressions] == ["llm"] and host.compression_count == 1
    assert result.messages[-1]["content"] == "fits now"


def test_a_rejection_the_engine_cannot_help_is_raised(server: FakeOpenAIServer) -> None:
    server.handler = scripted(context_length_exceeded())
    chat, _ = managed(server)
    with pytest.raises(openai.BadRequestError, match="maximum context length"):
        chat.run([SYSTEM, {"role": "user", "content": "hi"}])
    assert len(server.requests) == 1


def test_a_prompt_over_the_window_is_compressed_before_sending_even_while_the_engine_backs_off(
        server: FakeOpenAIServer) -> None:
    api = strict(server, context_length=4_000)
    chat, host = managed(server, context_length=4_000, protect_last_n=4)
    host.engine.should_compress = lambda prompt_tokens=None: False  # type: ignore[method-assign]
    result = chat.run([*long_history(20), {"role": "user", "content": "go on"}])
    assert api.rejections == [] and len(result.compressions) == 1
    assert api.log[0]["prompt_tokens"] <= 4_000


def test_malformed_arguments_are_answered_with_an_error_the_model_can_read(server: FakeOpenAIServer) -> None:
    bad_call = {"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": None, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{oops"}}]}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}
    server.handler = lambda body: (answer("understood") if body["messages"][-1]["role"] == "tool"
                                   else Reply.completion(bad_call))
    chat, _ = managed(server)
    seen: list[str] = []
    result = chat.run([SYSTEM, {"role": "user", "content": "read it"}], tools=[READ_FILE],
                      tool_handler=lambda name, arguments: seen.append(name) or "never")
    assert seen == []
    assert "not a JSON object" in result.messages[3]["content"]
    assert result.messages[-1]["content"] == "understood"


def test_a_tool_name_both_sides_define_is_an_error(server: FakeOpenAIServer) -> None:
    chat, host = managed(server)
    host.add_observer(RecallTool())
    clash = {"type": "function", "function": {"name": "recall", "parameters": {"type": "object"}}}
    with pytest.raises(CtxplugError, match="recall"):
        chat.run([SYSTEM, {"role": "user", "content": "hi"}], tools=[clash])
    assert server.requests == []


@pytest.mark.parametrize("argument", ["model", "stream_options"])
def test_arguments_the_wrapper_owns_are_refused_with_a_pointer(server: FakeOpenAIServer, argument: str) -> None:
    chat, _ = managed(server)
    with pytest.raises(CtxplugError, match=argument):
        chat.run([SYSTEM], **{argument: "x"})


def test_other_create_arguments_pass_through(server: FakeOpenAIServer) -> None:
    strict(server)
    chat, _ = managed(server)
    chat.run([SYSTEM, {"role": "user", "content": "hi"}], temperature=0, max_tokens=77)
    assert server.requests[0]["temperature"] == 0 and server.requests[0]["max_tokens"] == 77


@pytest.mark.parametrize(("messages", "code"), [
    ([SYSTEM, {"role": "tool", "tool_call_id": "c9", "content": "orphan"}], "invalid_tool_result"),
    ([SYSTEM, {"role": "user", "content": "go"},
      {"role": "assistant", "content": None, "tool_calls": [
          {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
      {"role": "user", "content": "no result in between"}], "missing_tool_result"),
    ([SYSTEM, {"role": "user", "content": "word " * 5_000}], "context_length_exceeded"),
])
def test_the_strict_api_rejects_what_a_strict_provider_rejects(
        server: FakeOpenAIServer, messages: list[dict[str, Any]], code: str) -> None:
    # The end-to-end run's "no request was rejected" means something only because these are rejected.
    api = strict(server, context_length=2_000)
    with pytest.raises(openai.BadRequestError) as raised:
        client_for(server).chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]
    assert raised.value.code == code and [r.code for r in api.rejections] == [code]
