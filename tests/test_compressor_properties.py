"""Property tests: over generated agent conversations, sanitize_tool_pairs and compress keep SPEC §7's invariants."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from support.compressor_engines import make_engine
from support.conversation_strategies import (
    assert_alternates,
    assert_tool_pairs_whole,
    conversations,
    first_after_system,
    loose_conversations,
    summaries_in,
)

from ctxplug.messages import content_text, sanitize_tool_pairs
from ctxplug.plugins.context_engine.compressor.handoff import END_MARKER
from ctxplug.tokens import estimate_messages_tokens_rough

Message = dict[str, Any]
PROPERTY_SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def damaged(draw: st.DrawFn) -> list[Message]:
    """A conversation with messages removed, repeated or moved: orphan, duplicate and stray results appear."""
    messages = draw(conversations())
    if not messages:
        return messages
    doomed = draw(st.sets(st.integers(0, len(messages) - 1), max_size=max(1, len(messages) // 3)))
    damaged = [m for i, m in enumerate(messages) if i not in doomed]
    for _ in range(draw(st.integers(0, 3))):
        if damaged:
            source = draw(st.integers(0, len(damaged) - 1))
            damaged.insert(draw(st.integers(0, len(damaged))), damaged[source])
    return damaged


@PROPERTY_SETTINGS
@given(damaged())
def test_sanitize_leaves_every_call_with_exactly_one_result_and_no_orphans(messages: list[Message]) -> None:
    before = copy.deepcopy(messages)
    clean = sanitize_tool_pairs(messages)
    assert messages == before, "sanitize_tool_pairs mutated its input"
    assert_tool_pairs_whole(clean)
    assert sanitize_tool_pairs(clean) == clean, "a second pass changed a sanitized conversation"
    kept_ids = {id(m) for m in messages}
    for message in clean:
        assert id(message) in kept_ids or message.get("role") == "assistant", "only assistant calls are rewritten"


@PROPERTY_SETTINGS
@given(conversations(min_turns=2), st.sampled_from([4_000, 16_000, 64_000]), st.booleans())
def test_compress_keeps_every_invariant(messages: list[Message], context_length: int, note: bool) -> None:
    engine = make_engine(context_length, system_note=note, protect_last_n=4)
    before = copy.deepcopy(messages)
    out = engine.compress(messages, force=True)
    report = engine.last_report
    assert report is not None
    assert messages == before, "compress mutated its input"
    assert estimate_messages_tokens_rough(out) <= estimate_messages_tokens_rough(messages)
    if not report.changed:
        assert out is messages
        return
    assert_tool_pairs_whole(out)
    assert_alternates(out)
    assert len(summaries_in(out)) == 1
    first = first_after_system(out)
    assert first is not None and first["role"] == "user"
    head = next(i for i, m in enumerate(out) if i in summaries_in(out))
    assert out[1:head] == messages[1:head], "the head changed"
    if messages[0]["role"] != "system":
        assert out[0] == messages[0]
    elif not note:
        assert out[0] is messages[0], "system_note: false must keep the system prompt byte-identical"
    tail = len(out) - head - 1
    assert out[len(out) - tail:] == messages[len(messages) - tail:], "the tail changed"
    assert report.messages_after == len(out) and report.tokens_after < report.tokens_before


@PROPERTY_SETTINGS
@given(conversations(min_turns=3), conversations(min_turns=2), st.booleans())
def test_compressing_twice_leaves_one_summary_and_a_user_first(first: list[Message], more: list[Message],
                                                                with_system: bool) -> None:
    if not with_system:
        first = [m for m in first if m["role"] != "system"]
    engine = make_engine(4_000, protect_last_n=3)
    once = engine.compress(first, force=True)
    growth = [m for m in more if m["role"] != "system"]
    if once[-1]["role"] == "user":
        growth = [{"role": "assistant", "content": "continuing"}, *growth]
    twice = engine.compress(once + growth, force=True)
    assert len(summaries_in(twice)) <= 1
    first_message = first_after_system(twice)
    assert first_message is not None and first_message["role"] == "user"
    assert_tool_pairs_whole(twice)
    assert_alternates(twice)
    assert estimate_messages_tokens_rough(twice) <= estimate_messages_tokens_rough(once + growth)


@PROPERTY_SETTINGS
@given(loose_conversations(), st.sampled_from([2_000, 8_000]))
def test_summary_never_meets_its_own_role_even_in_non_alternating_input(messages: list[Message],
                                                                       context_length: int) -> None:
    engine = make_engine(context_length, protect_last_n=2)
    before = copy.deepcopy(messages)
    out = engine.compress(messages, force=True)
    assert messages == before
    assert estimate_messages_tokens_rough(out) <= estimate_messages_tokens_rough(messages)
    if out is messages:
        return
    (index,) = summaries_in(out)
    role = out[index]["role"]
    assert index == 0 or out[index - 1]["role"] != role
    merged = not content_text(out[index]).endswith(END_MARKER)  # the pair after a merged summary is the input's
    assert index + 1 == len(out) or out[index + 1]["role"] != role or merged
    assert_tool_pairs_whole(out)
    if any(m["role"] == "user" for m in messages) or messages[0]["role"] == "system":
        first = first_after_system(out)
        assert first is not None and first["role"] == "user"
