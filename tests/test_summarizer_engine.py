"""The compressor with the LLM writer, against the scripted server: no failure drops a turn without a summary."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import load_corpus
from support.compressor_engines import make_engine
from support.fake_openai_server import (
    FakeOpenAIServer,
    Reply,
    answer,
    context_length_exceeded,
    empty_answer,
    fake_openai_fixture,  # noqa: F401  (provides the fake_openai fixture)
    hang,
    malformed,
    rate_limited,
    scripted,
    server_error,
    unauthorized,
)

from ctxplug.summarizer.llm import LLMSummaryWriter, RetryPolicy, SummaryEndpoint

SUMMARY = "## Goal\nFix the C parser crash\n## Relevant Files\n- src/libponyc/ast/parser.c"


def session() -> list[dict[str, Any]]:
    return load_corpus("openhands_codeact")[0]["messages"]


def engine_for(server: FakeOpenAIServer) -> Any:
    endpoint = SummaryEndpoint("custom", server.base_url, "key", "fake-summarizer", 0.3, 32_000)
    writer = LLMSummaryWriter(endpoint, policy=RetryPolicy(attempts=2, sleep=lambda _: None))
    return make_engine(context_length=16_000, writer=writer, protect_last_n=4)


def summarized_text(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False)


@pytest.mark.parametrize(("replies", "outcome"), [
    ((answer(SUMMARY),), "llm"),
    ((rate_limited(0), answer(SUMMARY)), "llm"),
    ((context_length_exceeded(), answer(SUMMARY)), "chunked"),
    ((server_error(503),), "extractive"),
    ((hang(30),), "extractive"),
    ((malformed(),), "extractive"),
    ((empty_answer(),), "extractive"),
])
def test_every_answer_of_the_server_ends_in_a_summary(fake_openai: FakeOpenAIServer, replies: tuple[Reply, ...],
                                                      outcome: str) -> None:
    fake_openai.handler = scripted(*replies)
    engine = engine_for(fake_openai)
    original = session()
    compressed = engine.compress(original, force=True)
    report = engine.last_report
    assert report.outcome == outcome and report.messages_summarized > 0
    assert report.summarizer_calls == len(fake_openai.requests)
    assert len(compressed) < len(original)
    text = summarized_text(compressed)
    if outcome == "extractive":
        # the first user request of the span and the files it worked on are in the summary
        assert "## Relevant Files" in text and "ponyc" in report.summary and report.error
    else:
        assert "Fix the C parser crash" in text


def test_refused_credentials_leave_the_conversation_unchanged(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = scripted(unauthorized())
    engine = engine_for(fake_openai)
    original = session()
    assert engine.compress(original, force=True) == original
    assert engine.last_report.outcome == "aborted" and "auth" in (engine.last_report.error or "")
