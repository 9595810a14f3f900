"""Every corpus transcript compresses to a valid conversation at several context lengths."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import corpus_conversations
from support.compressor_engines import RecordingWriter, make_engine
from support.conversation_strategies import assert_tool_pairs_whole, first_after_system, summaries_in

from ctxplug.config import Config
from ctxplug.messages import sanitize_tool_pairs
from ctxplug.summarizer import make_summary_writer
from ctxplug.tokens import estimate_messages_tokens_rough

CONTEXT_LENGTHS = (4_000, 16_000, 64_000)
CORPUS = corpus_conversations()


@pytest.mark.parametrize("context_length", CONTEXT_LENGTHS)
@pytest.mark.parametrize(("name", "messages"), CORPUS, ids=[name for name, _ in CORPUS])
def test_corpus_transcript_compresses_to_a_valid_conversation(name: str, messages: list[dict[str, Any]],
                                                              context_length: int) -> None:
    before = copy.deepcopy(messages)
    writer = RecordingWriter()
    engine = make_engine(context_length, writer=writer)
    out = engine.compress(messages, force=True)
    report = engine.last_report
    assert report is not None and messages == before
    assert estimate_messages_tokens_rough(out) <= estimate_messages_tokens_rough(messages)
    if not report.changed:
        assert out is messages and report.reason
        return
    assert_tool_pairs_whole(out)
    (index,) = summaries_in(out)
    neighbours = {out[index - 1]["role"] if index else None, out[index + 1]["role"] if index + 1 < len(out) else None}
    assert out[index]["role"] not in neighbours, "the summary must not sit next to a message of its own role"
    first = first_after_system(out)
    assert first is not None and first["role"] == "user"
    summarized = writer.requests[0].messages
    assert len(summarized) == report.messages_summarized
    # the kept messages are the input's own, in order: nothing invented besides the summary and the note
    kept = [m for i, m in enumerate(out) if i != index and i != 0]
    originals = sanitize_tool_pairs(messages)
    assert all(any(k == o for o in originals) for k in kept)


def test_corpus_compresses_at_some_length() -> None:
    changed = 0
    for _, messages in CORPUS:
        engine = make_engine(4_000)
        engine.compress(messages, force=True)
        changed += bool(engine.last_report and engine.last_report.changed)
    assert changed >= len(CORPUS) - 2, "almost every transcript has a middle to summarize at 4K"


@pytest.mark.parametrize(("name", "messages"), CORPUS, ids=[name for name, _ in CORPUS])
def test_corpus_transcript_compresses_offline_with_the_default_writer(name: str,
                                                                     messages: list[dict[str, Any]]) -> None:
    engine = make_engine(8_000, writer=make_summary_writer(Config()))
    out = engine.compress(messages, force=True)
    report = engine.last_report
    assert report is not None and report.outcome in ("extractive", "skipped")
    assert estimate_messages_tokens_rough(out) <= estimate_messages_tokens_rough(messages)
    if report.changed:
        (index,) = summaries_in(out)
        assert report.summary and report.summary in out[index]["content"]
        assert_tool_pairs_whole(out)
