"""count_tokens and the rough estimate over real message shapes: tool calls, None and list content, images."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import corpus_conversations

from ctxplug import IncrementalTokenCounter, count_tokens, estimate_messages_tokens_rough
from ctxplug.encodings import get_encoding
from ctxplug.tokens import (
    IMAGE_PART_TOKENS,
    MESSAGE_FRAMING_TOKENS,
    REPLY_PRIMING_TOKENS,
    TOOL_CALL_FRAMING_TOKENS,
    estimate_text_tokens_rough,
)

CJK = ("我们今天讨论的是如何在长时间的对话中管理上下文窗口。当对话变得太长时，系统需要压缩早期的消息，"
       "同时保留重要的信息。このツールは長い会話の文脈を管理します。이 도구는 긴 대화의 문맥 창을 관리합니다.")


def _n(text: str, encoding: str = "o200k_base") -> int:
    return len(get_encoding(encoding).encode_ordinary(text))


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_text_is_counted_with_the_models_encoding() -> None:
    text = "The quick brown fox; def main(): return 42"
    assert count_tokens(text, model="gpt-4o") == _n(text)
    assert count_tokens(text, model="gpt-4-turbo") == _n(text, "cl100k_base")
    assert count_tokens("<|endoftext|>") == _n("<|endoftext|>") > 1  # user text, never a special token


def test_a_message_costs_its_text_plus_the_documented_framing() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello world"}]
    expected = sum(MESSAGE_FRAMING_TOKENS + _n(m["role"]) + _n(m["content"]) for m in messages)
    assert count_tokens(messages, model="gpt-4o") == expected + REPLY_PRIMING_TOKENS
    assert count_tokens([], model="gpt-4o") == 0


def test_tool_calls_count_name_arguments_and_ids() -> None:
    arguments = '{"path": "src/app/main.py", "start": 10, "end": 80}'
    call = {"role": "assistant", "content": None, "tool_calls": [_call("call_1", "read_file", arguments)]}
    result = {"role": "tool", "tool_call_id": "call_1", "content": "print('hi')"}
    expected_call = (MESSAGE_FRAMING_TOKENS + _n("assistant") + TOOL_CALL_FRAMING_TOKENS
                     + _n("read_file") + _n(arguments) + _n("call_1"))
    expected_result = MESSAGE_FRAMING_TOKENS + _n("tool") + _n("call_1") + _n("print('hi')")
    assert count_tokens([call, result]) == expected_call + expected_result + REPLY_PRIMING_TOKENS


def test_parallel_calls_each_count() -> None:
    one = {"role": "assistant", "content": None, "tool_calls": [_call("a", "ls", "{}")]}
    two = {"role": "assistant", "content": None, "tool_calls": [_call("a", "ls", "{}"), _call("b", "ls", "{}")]}
    assert count_tokens([two]) - count_tokens([one]) == TOOL_CALL_FRAMING_TOKENS + _n("ls") + _n("{}") + _n("b")


def test_list_content_counts_text_parts_and_a_fixed_cost_per_image() -> None:
    parts = [{"type": "text", "text": "What is in this picture?"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5000}},
             {"type": "text", "text": "And this one?"},
             {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]
    as_list = count_tokens([{"role": "user", "content": parts}])
    text_only = MESSAGE_FRAMING_TOKENS + _n("user") + _n("What is in this picture?") + _n("And this one?")
    assert as_list == text_only + 2 * IMAGE_PART_TOKENS + REPLY_PRIMING_TOKENS
    rough = estimate_messages_tokens_rough([{"role": "user", "content": parts}])
    assert 2 * IMAGE_PART_TOKENS < rough < 2 * IMAGE_PART_TOKENS + 50  # the base64 payload is not text


def test_names_replayed_reasoning_and_private_fields() -> None:
    base = {"role": "user", "content": "hi"}
    assert count_tokens([{**base, "name": "alice"}]) - count_tokens([base]) == _n("alice") + 1
    reasoning = "First I will inspect the failing test, then the fixture."
    assert count_tokens([{**base, "reasoning_content": reasoning}]) - count_tokens([base]) == _n(reasoning)
    assert count_tokens([{**base, "_meta": {"x": "y" * 100}, "cache_control": {"type": "ephemeral"}}]) \
        == count_tokens([base])


def test_tool_schemas_count_when_given() -> None:
    tools = [{"type": "function", "function": {"name": "lcm_grep", "description": "Search compacted history.",
                                               "parameters": {"type": "object", "properties": {}}}}]
    messages = [{"role": "user", "content": "hi"}]
    assert count_tokens(messages, tools=tools) > count_tokens(messages) + 10
    assert estimate_messages_tokens_rough(messages, tools) > estimate_messages_tokens_rough(messages) + 10


def test_counting_never_mutates_the_messages() -> None:
    _, messages = corpus_conversations()[0]
    before = copy.deepcopy(messages)
    count_tokens(messages, model="gpt-4")
    estimate_messages_tokens_rough(messages)
    IncrementalTokenCounter(messages=messages)
    assert messages == before


@pytest.mark.parametrize(("bad", "pattern"), [
    (42, "count_tokens expects a string or a list of chat messages .*got int"),
    (None, "got NoneType"),
    (b"bytes", "got bytes"),
    ({"messages": []}, r"got dict \(pass its 'messages' list\)"),
    (["hello", "world"], "item 0 is str"),
    ([{"role": "user", "content": "x"}, 7], "item 1 is int"),
])
def test_non_messages_are_a_type_error_naming_what_was_expected(bad: Any, pattern: str) -> None:
    with pytest.raises(TypeError, match=pattern):
        count_tokens(bad)


def test_the_estimate_and_the_counter_reject_non_messages_too() -> None:
    with pytest.raises(TypeError, match="estimate_messages_tokens_rough expects a list of chat messages"):
        estimate_messages_tokens_rough("just text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"IncrementalTokenCounter.append .*item 0 is list"):
        IncrementalTokenCounter().append([{"role": "user"}])  # type: ignore[arg-type]


def test_rough_estimate_counts_cjk_about_one_token_per_character() -> None:
    exact_o200k, exact_cl100k = _n(CJK), _n(CJK, "cl100k_base")
    rough = estimate_text_tokens_rough(CJK)
    naive = (len(CJK) + 3) // 4  # the reference's original rule
    assert naive < 0.5 * exact_o200k  # the 4x undercount this estimate fixes
    assert 0.9 * exact_o200k <= rough <= 2.0 * exact_o200k
    assert 0.7 * exact_cl100k <= rough <= 1.5 * exact_cl100k


def test_rough_estimate_follows_exact_counts_on_real_transcripts() -> None:
    for name, messages in corpus_conversations():
        exact = count_tokens(messages, model="gpt-4o")
        rough = estimate_messages_tokens_rough(messages)
        assert 0.6 * exact <= rough <= 1.5 * exact, name


def test_rough_estimate_counts_the_tool_call_envelope() -> None:
    arguments = '{"command": "' + "x" * 4000 + '"}'
    call = {"role": "assistant", "content": None, "tool_calls": [_call("call_9", "run", arguments)]}
    assert estimate_messages_tokens_rough([call]) >= len(arguments) // 4
