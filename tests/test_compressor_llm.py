"""End to end: the compressor with the LLM writer, through the real `openai` client, against a scripted server.

Whatever the summary model answers — a summary, a context-length error, 401, 429, 500, a hang, malformed JSON,
empty content — no case drops turns without a summary standing for them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from support.compressor_engines import make_engine
from support.conversation_strategies import assert_alternates, assert_tool_pairs_whole, summaries_in
from support.fake_openai_server import (
    FakeOpenAIServer,
    Reply,
    answer,
    context_length_exceeded,
    empty_answer,
    hang,
    malformed,
    rate_limited,
    scripted,
    server_error,
    unauthorized,
)

from ctxplug.plugins.context_engine.compressor.handoff import summary_body
from ctxplug.summarizer.llm import LLMSummaryWriter, RetryPolicy, SummaryEndpoint

Message = dict[str, Any]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 for one test."""
    with FakeOpenAIServer() as running:
        yield running


def session() -> list[Message]:
    """A coding session long enough that 8K of context leaves a middle to summarize."""
    messages: list[Message] = [{"role": "system", "content": "You are a coding agent."},
                               {"role": "user", "content": "Make the parser accept trailing commas."},
                               {"role": "assistant", "content": "I'll start with the failing test."}]
    for turn in range(14):
        arguments = json.dumps({"command": f"pytest tests/test_parser.py -k case{turn}"})
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{turn}", "type": "function", "function": {"name": "bash", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": f"c{turn}",
             "content": f"E   SyntaxError: trailing comma in case{turn}\n" + "trace line\n" * 200 + "exit code 1"},
            {"role": "assistant", "content": f"Case {turn} fails on a trailing comma in src/parser.py."},
            {"role": "user", "content": f"Go on with case {turn + 1}."},
        ]
    return messages


def llm_engine(server: FakeOpenAIServer, *, timeout: float = 5.0, context_length: int = 32_000) -> Any:
    endpoint = SummaryEndpoint("custom", server.base_url, "test-key", "fake-summarizer", timeout, context_length)
    writer = LLMSummaryWriter(endpoint, policy=RetryPolicy(attempts=2, sleep=lambda seconds: None))
    return make_engine(8_000, writer=writer)


def test_a_normal_answer_becomes_the_summary(server: FakeOpenAIServer) -> None:
    server.handler = scripted(answer("## Goal\nAccept trailing commas in src/parser.py"))
    engine = llm_engine(server)
    out = engine.compress(session(), force=True)
    report = engine.last_report
    assert report.outcome == "llm" and report.summarizer_calls == 1
    (index,) = summaries_in(out)
    assert summary_body(out[index]) == "## Goal\nAccept trailing commas in src/parser.py"
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "pytest tests/test_parser.py -k case3" in prompt, "the pruned middle still names every command"
    assert_tool_pairs_whole(out)
    assert_alternates(out)


def test_the_second_compression_hands_the_model_its_previous_summary(server: FakeOpenAIServer) -> None:
    server.handler = scripted(answer("## Goal\nfirst summary"), answer("## Goal\nsecond summary"))
    engine = llm_engine(server)
    once = engine.compress(session(), force=True)
    twice = engine.compress(once + session()[3:], force=True)
    assert "first summary" in server.requests[1]["messages"][-1]["content"]
    (index,) = summaries_in(twice)
    assert summary_body(twice[index]) == "## Goal\nsecond summary"


@pytest.mark.parametrize("failure", ["context_length", "rate_limit", "server", "hang", "malformed", "empty"])
def test_no_failure_drops_turns_without_a_summary(server: FakeOpenAIServer, failure: str) -> None:
    replies: dict[str, Reply] = {
        "context_length": context_length_exceeded(), "rate_limit": rate_limited(0), "server": server_error(),
        "hang": hang(3.0), "malformed": malformed(), "empty": empty_answer(),
    }
    server.handler = lambda body: replies[failure]
    engine = llm_engine(server, timeout=0.5)
    messages = session()
    before = copy.deepcopy(messages)
    out = engine.compress(messages, force=True)
    report = engine.last_report
    assert messages == before
    assert report.outcome in ("chunked", "extractive"), report
    assert report.error, "the report names the failure that the fallback covered"
    (index,) = summaries_in(out)
    body = summary_body(out[index])
    assert "pytest tests/test_parser.py" in body, "the summary must stand for the dropped turns"
    assert_tool_pairs_whole(out)


def test_refused_credentials_abort_and_keep_the_conversation(server: FakeOpenAIServer) -> None:
    server.handler = scripted(unauthorized())
    engine = llm_engine(server)
    messages = session()
    assert engine.compress(messages, force=True) is messages
    assert engine.last_report.outcome == "aborted" and engine.last_report.error.startswith("auth")
    assert not engine.should_compress(10**9), "a refused key must not be retried on the next turn"
