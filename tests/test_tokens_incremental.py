"""IncrementalTokenCounter: always equal to a full recount, and recounting only what changed."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import corpus_conversations
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxplug import IncrementalTokenCounter, count_tokens, estimate_messages_tokens_rough

POOL = [message for _, messages in corpus_conversations()[:6] for message in messages][:120]

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=60)
generated = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system"]), "content": st.one_of(st.none(), text)},
    optional={"name": st.sampled_from(["alice", "bob"])},
)
message = st.one_of(st.sampled_from(POOL), generated)
operation = st.one_of(
    st.tuples(st.just("append"), message),
    st.tuples(st.just("extend"), st.lists(message, max_size=4)),
    st.tuples(st.just("compress"), st.integers(0, 10), st.integers(0, 10), message),
    st.tuples(st.just("edit"), st.integers(0, 200), text),
)


def _apply(counter: IncrementalTokenCounter, session: list[dict[str, Any]], op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "append":
        session.append(op[1])
        counter.append(op[1])
    elif kind == "extend":
        session.extend(op[1])
        counter.extend(op[1])
    elif kind == "compress":  # head + one summary + tail, as an engine returns
        _, head, tail, summary = op
        session[:] = session[:head] + [summary] + (session[len(session) - tail:] if tail else [])
        counter.resync(session)
    elif session:  # an engine that edits a message in place (pruning a tool result)
        index = op[1] % len(session)
        session[index] = {**session[index], "content": op[2]}
        counter.resync(session)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["gpt-4o", "gpt-4", "claude-sonnet-4.5"]), st.lists(operation, max_size=12))
def test_exact_counter_equals_a_full_recount(model: str, ops: list[tuple[Any, ...]]) -> None:
    counter = IncrementalTokenCounter(model)
    session: list[dict[str, Any]] = []
    for op in ops:
        _apply(counter, session, op)
        assert counter.total == count_tokens(session, model=model)
        assert len(counter) == len(session)


@settings(max_examples=60, deadline=None)
@given(st.lists(operation, max_size=12))
def test_rough_counter_equals_the_rough_estimate(ops: list[tuple[Any, ...]]) -> None:
    counter = IncrementalTokenCounter(rough=True)
    session: list[dict[str, Any]] = []
    for op in ops:
        _apply(counter, session, op)
        assert counter.total == estimate_messages_tokens_rough(session)


def test_resync_after_compression_counts_only_the_new_summary() -> None:
    _, messages = max(corpus_conversations(), key=lambda item: len(item[1]))
    counter = IncrementalTokenCounter("gpt-4o", messages=messages)
    summary = {"role": "user", "content": "[CONTEXT COMPACTION] Earlier turns were summarized: ..."}
    compressed = messages[:3] + [summary] + [dict(m) for m in messages[-10:]]  # copies: same content
    assert counter.resync(compressed) == 1
    assert counter.total == count_tokens(compressed, model="gpt-4o")


def test_a_message_edited_in_place_is_counted_again() -> None:
    messages = [{"role": "user", "content": "short"}, {"role": "tool", "tool_call_id": "c", "content": "x " * 500}]
    counter = IncrementalTokenCounter(messages=messages)
    before = counter.total
    messages[1]["content"] = "[pruned]"
    assert counter.resync(messages) == 1
    assert counter.total == count_tokens(messages) < before


def test_append_returns_the_messages_tokens_and_flags_exactness() -> None:
    counter = IncrementalTokenCounter("gpt-4o")
    first = counter.append({"role": "user", "content": "hello world"})
    assert counter.total == first + 3
    assert counter.exact
    assert not IncrementalTokenCounter("claude-opus-4").exact
    assert not IncrementalTokenCounter("gpt-4o", rough=True).exact


@pytest.mark.parametrize("rough", [False, True])
def test_empty_session_is_zero(rough: bool) -> None:
    counter = IncrementalTokenCounter(rough=rough)
    assert counter.total == 0
    counter.append({"role": "user", "content": "hi"})
    counter.resync([])
    assert counter.total == 0 and len(counter) == 0
