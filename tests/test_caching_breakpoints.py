"""system_and_3 breakpoints: the placement table of SPEC §5 in both layouts, and the invariants as properties."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxplug
from ctxplug.caching import (
    apply_anthropic_cache_control,
    breakpoint_indices,
    can_carry_marker,
    marker_count,
    strip_cache_control,
)
from ctxplug.errors import ConfigError
from ctxplug.messages import COMPACTION_MARKER

FIVE = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


def _conversation() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are careful."},
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
        {"role": "assistant", "content": "Two files."},
        {"role": "user", "content": [{"type": "text", "text": "Open a.py"},
                                     {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}]},
    ]


def _marked_indices(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if marker_count([m])]


def test_public_name_is_the_contract_function() -> None:
    assert ctxplug.apply_anthropic_cache_control is apply_anthropic_cache_control


def test_envelope_marks_system_and_last_three_carriers_with_the_table_placements() -> None:
    out = apply_anthropic_cache_control(_conversation())
    assert _marked_indices(out) == [0, 3, 4, 5]
    assert out[0]["content"] == [{"type": "text", "text": "You are careful.", "cache_control": FIVE}]
    assert out[3]["content"] == [{"type": "text", "text": "a.py\nb.py", "cache_control": FIVE}]
    assert out[5]["content"][-1]["cache_control"] == FIVE and "cache_control" not in out[5]["content"][0]
    assert "cache_control" not in out[2]  # an empty tool-calling assistant cannot carry one on OpenRouter


def test_native_puts_tool_and_empty_messages_at_message_level() -> None:
    conversation = _conversation()[:4]
    out = apply_anthropic_cache_control(conversation, "1h", native_anthropic=True)
    assert _marked_indices(out) == [0, 1, 2, 3]
    assert out[2]["cache_control"] == HOUR and out[2]["content"] is None
    assert out[3]["cache_control"] == HOUR and out[3]["content"] == "a.py\nb.py"


def test_envelope_skips_empty_tool_results_and_blank_text() -> None:
    conversation = [{"role": "user", "content": "go"},
                    {"role": "assistant", "content": "  ",
                     "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "c", "content": ""}]
    out = apply_anthropic_cache_control(conversation)
    assert _marked_indices(out) == [0]
    assert _marked_indices(apply_anthropic_cache_control(conversation, native_anthropic=True)) == [0, 1, 2]


def test_ttl_other_than_5m_or_1h_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"prompt_caching\.cache_ttl"):
        apply_anthropic_cache_control(_conversation(), cache_ttl="auto")
    with pytest.raises(ConfigError, match="5m or 1h"):
        apply_anthropic_cache_control(_conversation(), cache_ttl="10m")


def test_after_compaction_the_kept_head_gets_its_own_breakpoint() -> None:
    conversation = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first request"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": f"{COMPACTION_MARKER}] earlier turns were summarized"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"},
    ]
    assert breakpoint_indices(conversation) == [0, 2, 5, 6]
    # with a marker spent on the tools only one rolling marker would be left: the head still gets its own
    assert breakpoint_indices(conversation, max_breakpoints=3) == [0, 2, 6]
    assert breakpoint_indices(conversation, max_breakpoints=2) == [0, 6]


def test_strip_removes_every_marker_without_touching_the_input() -> None:
    decorated = apply_anthropic_cache_control(_conversation(), native_anthropic=True)
    snapshot = copy.deepcopy(decorated)
    assert marker_count(strip_cache_control(decorated)) == 0
    assert decorated == snapshot


# ---- properties over generated conversations ------------------------------------------------------------------

_text = st.one_of(st.none(), st.just(""), st.just("  "), st.text(min_size=1, max_size=8))
_part = st.one_of(st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=6)),
                  st.just({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}))
_content = st.one_of(_text, st.lists(_part, max_size=3))


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(_content)})
    for number in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "summary"]))
        if kind == "tools":
            ids = [f"t{number}_{k}" for k in range(draw(st.integers(1, 3)))]
            messages.append({"role": "assistant", "content": draw(_content), "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]})
            messages.extend({"role": "tool", "tool_call_id": i, "content": draw(_content)} for i in ids)
        elif kind == "summary":
            messages.append({"role": "user", "content": f"{COMPACTION_MARKER}] summary {number}"})
        else:
            messages.append({"role": kind, "content": draw(_content)})
    return messages


def _carriers_marked(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if "cache_control" in m or (
        isinstance(m.get("content"), list) and m["content"] and isinstance(m["content"][-1], dict)
        and "cache_control" in m["content"][-1])]


@settings(max_examples=300, deadline=None)
@given(conversations(), st.booleans(), st.sampled_from(["5m", "1h"]))
def test_breakpoint_invariants(messages: list[dict[str, Any]], native: bool, ttl: str) -> None:
    snapshot = copy.deepcopy(messages)
    out = apply_anthropic_cache_control(messages, ttl, native)
    assert messages == snapshot  # input never mutated
    assert marker_count(out) <= 4
    assert apply_anthropic_cache_control(out, ttl, native) == out  # idempotent
    marked = _carriers_marked(out)
    assert marker_count(out) == len(marked)  # one marker per message, only on the last part or the message
    for index in marked:
        # every marker sits on a message that can carry it in this layout
        assert can_carry_marker(messages[index], native_anthropic=native)
        if not native:
            assert "cache_control" not in out[index]  # OpenRouter only honours part markers
    carriers = [i for i, m in enumerate(messages) if can_carry_marker(m, native_anthropic=native)]
    if messages and messages[0]["role"] == "system" and 0 in carriers:
        assert marked[0] == 0  # the system prompt comes first
    assert len(marked) == min(4, len(carriers))  # no carrier is left unused while the budget lasts
    if carriers:
        assert carriers[-1] in marked  # the newest carrier always holds the rolling edge
    assert strip_cache_control(out) == strip_cache_control(apply_anthropic_cache_control(snapshot, ttl, native))
