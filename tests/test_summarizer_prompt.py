"""What the summary model reads: compact redacted blocks, reasoning stripped, chunks that respect the limit."""

from __future__ import annotations

import json

from ctxplug.summarizer.llm.escalation import split_blocks
from ctxplug.summarizer.llm.prompt import ARGUMENTS_MAX_CHARS, serialize_message, strip_reasoning, summary_prompt
from ctxplug.tokens import estimate_text_tokens_rough


def test_reasoning_blocks_are_stripped_closed_or_not() -> None:
    assert strip_reasoning("<thinking>a\nb</thinking>\n## Goal\nx") == "## Goal\nx"
    assert strip_reasoning("<think>cut off mid-thought\n## Goal\nx") == "## Goal\nx"
    assert strip_reasoning("<think>only thoughts</think>") == "<think>only thoughts</think>"  # never empty


def test_a_message_becomes_one_labelled_redacted_block() -> None:
    arguments = json.dumps({"command": "curl -H 'Authorization: Bearer abcdefghijklmnop123' " + "x" * 2_000})
    block = serialize_message({"role": "assistant", "content": "<think>hidden</think>Checking the API.",
                               "tool_calls": [{"id": "1", "type": "function",
                                               "function": {"name": "bash", "arguments": arguments}}]})
    first, call = block.split("\n")
    assert first == "[assistant] Checking the API."
    assert call.startswith("  -> call bash(") and "abcdefghijklmnop123" not in call and "Bearer [REDACTED]" in call
    assert len(call) < ARGUMENTS_MAX_CHARS + 40
    tool = serialize_message({"role": "tool", "tool_call_id": "1", "name": "bash", "content": "ok"})
    assert tool == "[tool result bash] ok"


def test_first_and_iterative_prompts_differ_only_where_they_should() -> None:
    first = summary_prompt(["[user] hi"], budget_tokens=3_000)
    update = summary_prompt(["[user] hi"], budget_tokens=3_000, previous_summary="## Goal\nold")
    assert first[0] == update[0] and first[0]["role"] == "system"
    assert "EARLIER NOTE" not in first[1]["content"] and "EARLIER NOTE:\n<<<\n## Goal\nold\n>>>" in update[1]["content"]
    assert "about 3,000 tokens" in first[1]["content"]


def test_chunks_stay_under_the_limit_and_keep_order() -> None:
    blocks = [f"[user] message {i} " + "w" * (i * 37 % 900) for i in range(60)] + ["[tool result] " + "z" * 50_000]
    groups = split_blocks(blocks, 1_000)
    assert all(sum(estimate_text_tokens_rough(b) for b in group) <= 1_000 or len(group) == 1 for group in groups)
    assert all(estimate_text_tokens_rough(b) <= 1_000 for group in groups for b in group)
    flat = [b for group in groups for b in group]
    assert [b.split(" ", 3)[2] for b in flat[:-1]] == [str(i) for i in range(60)]
