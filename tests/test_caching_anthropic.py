"""The Anthropic Messages converter: its output obeys the API's request rules, on the corpus and generated input."""

from __future__ import annotations

import copy
from itertools import pairwise
from typing import Any

import pytest
from conftest import corpus_conversations, load_corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from support.conversation_strategies import conversations

from ctxplug.contrib.anthropic import OPENING_USER_TEXT, to_anthropic_request
from ctxplug.errors import ConversationError

HOUR = {"type": "ephemeral", "ttl": "1h"}


def _markers(request: dict[str, Any]) -> int:
    def count(blocks: list[dict[str, Any]]) -> int:
        return sum(("cache_control" in b) + count(b.get("content") if isinstance(b.get("content"), list) else [])
                   for b in blocks)
    return (count(request.get("tools", [])) + count(request.get("system", []))
            + sum(count(turn["content"]) for turn in request["messages"]))


def rule_violations(request: dict[str, Any]) -> list[str]:
    """Everything in a request that the Messages API would reject."""
    problems = []
    turns = request["messages"]
    if not turns or turns[0]["role"] != "user":
        problems.append("the first turn is not a user turn")
    problems += [f"turn {i}: two {a['role']} turns in a row" for i, (a, b) in enumerate(pairwise(turns), 1)
                 if a["role"] == b["role"]]
    for index, turn in enumerate(turns):
        if not turn["content"]:
            problems.append(f"turn {index} is empty")
        previous_uses = {b["id"] for b in turns[index - 1]["content"] if b["type"] == "tool_use"} if index else set()
        seen_other = False
        for block in turn["content"]:
            nested = block.get("content") if isinstance(block.get("content"), list) else []
            for text_block in [block, *nested]:
                if text_block["type"] == "text" and not text_block["text"].strip():
                    problems.append(f"turn {index}: empty text block")
            if block["type"] == "tool_result":
                if block["tool_use_id"] not in previous_uses:
                    problems.append(f"turn {index}: tool_result {block['tool_use_id']} answers no tool_use of the "
                                    "previous assistant turn")
                if seen_other:
                    problems.append(f"turn {index}: tool_result after other content")
            else:
                seen_other = True
            if block["type"] == "tool_use" and not isinstance(block["input"], dict):
                problems.append(f"turn {index}: tool_use input is not an object")
        uses = {b["id"] for b in turn["content"] if b["type"] == "tool_use"}
        if uses and index + 1 < len(turns):
            answered = {b["tool_use_id"] for b in turns[index + 1]["content"] if b["type"] == "tool_result"}
            problems += [f"turn {index}: tool_use {u} has no result" for u in uses - answered]
    for block in request.get("system", []):
        if block["type"] != "text" or not block["text"].strip():
            problems.append("system block is not non-empty text")
    if _markers(request) > 4:
        problems.append(f"{_markers(request)} cache_control markers")
    return problems


def test_conversion_splits_system_builds_tool_blocks_and_merges_roles() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Look at this"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                                     {"type": "image_url", "image_url": {"url": "https://example.test/b.jpg"}}]},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py"}'}},
            {"id": "fc_2", "call_id": "c2", "type": "function", "function": {"name": "ls", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "a.py"},
        {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
        {"role": "user", "content": "and?"},
    ]
    request = to_anthropic_request(messages, cache_ttl=None)
    assert request["system"] == [{"type": "text", "text": "Be brief."}]
    user, assistant, results = request["messages"]
    assert user["content"] == [
        {"type": "text", "text": "Look at this"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.test/b.jpg"}}]
    assert assistant["content"] == [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "c2", "name": "ls", "input": {}}]
    assert results == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text", "text": "a.py"}]},
        {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "print(1)"}]},
        {"type": "text", "text": "and?"}]}
    assert _markers(request) == 0


def test_native_markers_land_on_system_and_the_last_blocks() -> None:
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "q"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "out"}]
    request = to_anthropic_request(messages, cache_ttl="1h")
    assert request["system"][-1]["cache_control"] == HOUR
    user, assistant, result = request["messages"]
    assert user["content"][-1]["cache_control"] == HOUR
    assert assistant["content"][-1] == {"type": "tool_use", "id": "c", "name": "f", "input": {},
                                        "cache_control": HOUR}
    assert result["content"][0]["cache_control"] == HOUR and "cache_control" not in result["content"][0]["content"][0]


def test_cached_tools_take_one_of_the_four_markers() -> None:
    tools = [{"type": "function", "function": {"name": n, "description": "d", "parameters": {"type": "object"}}}
             for n in ("a", "b")]
    messages = [{"role": "system", "content": "S"}] + [
        {"role": r, "content": f"m{i}"} for i, r in enumerate(["user", "assistant"] * 4)]
    request = to_anthropic_request(messages, tools=tools, cache_tools=True)
    assert request["tools"][0] == {"name": "a", "description": "d", "input_schema": {"type": "object"}}
    assert request["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert _markers(request) == 4
    assert [bool(t["content"][-1].get("cache_control")) for t in request["messages"]] == [False] * 6 + [True] * 2


def test_conversation_opening_with_the_assistant_gets_a_user_turn_first() -> None:
    request = to_anthropic_request([{"role": "assistant", "content": "Hello"}], cache_ttl=None)
    assert request["messages"][0] == {"role": "user", "content": [{"type": "text", "text": OPENING_USER_TEXT}]}


@pytest.mark.parametrize(("messages", "complaint"), [
    ([{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]},
      {"role": "tool", "tool_call_id": "c", "content": "r"}], "message 1: tool call c has arguments that are not JSON"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png,xx"}}]}],
     "base64"),
    ([{"role": "system", "content": "only a system prompt"}], "no user or assistant content"),
])
def test_unconvertible_input_names_the_problem(messages: list[dict[str, Any]], complaint: str) -> None:
    with pytest.raises(ConversationError, match=complaint):
        to_anthropic_request(messages)


@pytest.mark.parametrize(("conversation_id", "messages"), corpus_conversations())
def test_corpus_conversations_convert_to_valid_requests(conversation_id: str, messages: list[dict[str, Any]]) -> None:
    tools = next((r.get("tools") for name in ("openhands_codeact", "toolbench")
                  for r in load_corpus(name) if conversation_id.endswith(str(r["id"]))), None)
    snapshot = copy.deepcopy(messages)
    request = to_anthropic_request(messages, tools=tools, cache_tools=True)
    assert rule_violations(request) == []
    assert messages == snapshot
    assert _markers(request) == 4 if tools else _markers(request) >= 1


@st.composite
def damaged(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A valid conversation with random messages removed: orphan results, unanswered calls, same-role runs."""
    messages = draw(conversations(max_turns=6))
    keep = draw(st.lists(st.booleans(), min_size=len(messages), max_size=len(messages)))
    return [m for m, k in zip(messages, keep, strict=True) if k or m["role"] == "system"]


@settings(max_examples=100, deadline=None)
@given(st.one_of(conversations(max_turns=6), damaged()), st.sampled_from([None, "5m", "1h"]), st.booleans())
def test_generated_conversations_convert_to_valid_requests(messages: list[dict[str, Any]], ttl: str | None,
                                                           cache_tools: bool) -> None:
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
    snapshot = copy.deepcopy(messages)
    try:
        request = to_anthropic_request(messages, tools=tools, cache_ttl=ttl, cache_tools=cache_tools)
    except ConversationError as exc:
        assert "no user or assistant content" in str(exc)
        return
    assert rule_violations(request) == []
    assert messages == snapshot
