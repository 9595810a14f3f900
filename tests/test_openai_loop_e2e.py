"""End to end: ManagedChat drives a 300-turn tool-using session through a strict API with a small window.

The server rejects with 400 what a strict provider rejects (orphan tool results, unanswered calls, a prompt over
the window) and reports usage counted by ctxplug's own counter. The real compressor runs with an instant summary
writer; the engine's clock advances 20 s per request, as an agent's would, so its rate limit sees a real pace.
"""

from __future__ import annotations

from typing import Any

import openai
from support.compressor_engines import FakeClock, RecordingWriter, make_engine
from support.strict_chat_api import READ_FILE, SYSTEM, RecallTool, ScriptedModel, StrictChatApi, read_file, serve_strict

from ctxplug.contrib.openai_loop import ManagedChat
from ctxplug.host import EngineHost

CONTEXT_LENGTH = 8_000
TURNS = 300


def test_three_hundred_turns_with_repeated_compressions_and_no_rejection() -> None:
    clock = FakeClock()
    host = EngineHost(make_engine(context_length=CONTEXT_LENGTH, writer=RecordingWriter(), clock=clock))
    recall = RecallTool()
    host.add_observer(recall)
    requests: list[tuple[int, int]] = []  # (compressions so far, prompt tokens) per accepted request

    def on_request(body: dict[str, Any], prompt_tokens: int) -> None:
        requests.append((host.compression_count, prompt_tokens))
        clock.now += 20

    api = StrictChatApi(CONTEXT_LENGTH, ScriptedModel(engine_tool="recall", engine_tool_every=40),
                        on_request=on_request)
    with serve_strict(api) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        chat = ManagedChat(client, engine=host, model="gpt-4o", provider="openai")
        history: list[dict[str, Any]] = [SYSTEM]
        streamed_usage: list[int] = []
        for turn in range(TURNS):
            history = [*history, {"role": "user", "content": f"Turn {turn}: fix the next failing test. " * 12}]
            stream = turn % 10 == 9
            result = chat.run(history, tools=[READ_FILE], tool_handler=read_file, stream=stream)
            assert result.stop == "answered"
            if stream:
                streamed_usage.append(result.response.usage.prompt_tokens)
            history = result.messages

    assert api.rejections == []  # no request broke a tool-pair rule or the window
    threshold = host.threshold_tokens
    assert host.compression_count >= TURNS // 15  # compressed over and over, not once
    first_after: dict[int, int] = {}
    for compressions, prompt_tokens in requests:
        first_after.setdefault(compressions, prompt_tokens)
    # every compression is followed by a prompt under the threshold
    assert all(first_after[k] < threshold for k in range(1, host.compression_count + 1))
    assert max(prompt for _, prompt in requests) <= CONTEXT_LENGTH
    # the engine tool was offered on every request and answered by its plugin
    assert all(entry["tools"] == ["read_file", "recall"] for entry in api.log)
    assert len(recall.calls) == TURNS // 40
    # streamed responses reported their usage, and the engine received it
    assert len(streamed_usage) == TURNS // 10 and all(tokens > 0 for tokens in streamed_usage)
    streamed = [entry["prompt_tokens"] for entry in api.log if entry["stream"]]
    assert set(streamed_usage) <= set(streamed)
    assert len(recall.usages) == len(api.log)
