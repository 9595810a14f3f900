"""Every corpus transcript, replayed turn by turn through the lossless engine at a small window, stays valid."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import corpus_conversations
from support.conversation_strategies import assert_tool_pairs_whole
from support.lcm_engines import make_lcm_host, summary_nodes

from ctxplug.messages import COMPACTION_MARKER, content_text, iter_groups
from ctxplug.plugins.context_engine.lcm.assembly import find_head_end
from ctxplug.tokens import estimate_messages_tokens_rough

CORPUS = corpus_conversations()
CONTEXT_LENGTH = 6_000


def _assert_valid_step(out: list[dict[str, Any]], original: list[dict[str, Any]]) -> None:
    """Tool pairs whole; no same-role neighbours except ones the transcript itself had; one summary at most."""
    assert_tool_pairs_whole(out)
    summaries = [i for i, m in enumerate(out) if COMPACTION_MARKER in content_text(m)]
    assert len(summaries) <= 1
    position = {id(m): i for i, m in enumerate(original)}
    for before, after in pairwise(out):
        if before.get("role") == after.get("role") and before.get("role") in ("user", "assistant"):
            i, j = position.get(id(before)), position.get(id(after))
            assert i is not None and j == i + 1, f"two {before['role']} messages in a row that were not adjacent"


@pytest.mark.parametrize(("name", "messages"), CORPUS, ids=[name for name, _ in CORPUS])
def test_corpus_transcript_replayed_through_lcm(name: str, messages: list[dict[str, Any]], tmp_path: Path) -> None:
    host = make_lcm_host(tmp_path / "lcm.db", context_length=CONTEXT_LENGTH)
    context: list[dict[str, Any]] = []
    compressions = 0
    for start, end in iter_groups(messages):
        context = context + messages[start:end]
        if host.should_compress(estimate_messages_tokens_rough(context)):
            context = host.compress(context)
            report = host.last_report
            assert report is not None and report.outcome != "failed", report
            _assert_valid_step(context, messages)
            if report.changed:
                compressions += 1
                assert summary_nodes(context)
                assert report.tokens_after < report.tokens_before
                assert report.tokens_after <= host.threshold_tokens or "still above" in str(report.reason)
    host.engine.ingest(context)  # type: ignore[attr-defined]
    stored = host.engine.store.stats()  # type: ignore[attr-defined]
    assert stored.messages == len(messages), "every message stored, each exactly once"
    head = messages[:find_head_end(messages)]
    roomy = estimate_messages_tokens_rough(head) < host.threshold_tokens // 2
    if roomy and estimate_messages_tokens_rough(messages) > host.threshold_tokens:
        assert compressions > 0, "a transcript with room beside its head must compress at this window"
