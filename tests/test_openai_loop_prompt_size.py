"""PromptSize: the next prompt is the last reported one plus what was appended since, counted once."""

from __future__ import annotations

from typing import Any

from ctxplug.contrib.prompt_size import PromptSize
from ctxplug.tokens import count_tokens
from ctxplug.usage import Usage

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def history(n: int) -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "text " * 40}
            for i in range(n)]


def test_without_a_report_the_history_and_tools_are_counted() -> None:
    size = PromptSize("gpt-4o")
    messages = history(6)
    assert size.measure(messages, TOOLS) == count_tokens(messages, "gpt-4o", tools=TOOLS)


def test_after_a_report_only_the_appended_messages_are_added() -> None:
    size = PromptSize("gpt-4o")
    messages = history(6)
    size.measure(messages, TOOLS)
    size.observe(Usage(prompt_tokens=5_000, completion_tokens=30))
    longer = [*messages, *history(3)]
    added = count_tokens(longer, "gpt-4o") - count_tokens(messages, "gpt-4o")
    assert size.measure(longer, TOOLS) == 5_000 + added


def test_a_response_without_usage_keeps_the_previous_anchor() -> None:
    size = PromptSize("gpt-4o")
    messages = history(4)
    size.measure(messages)
    size.observe(Usage(prompt_tokens=1_000))
    longer = [*messages, *history(2)]
    expected = size.measure(longer)
    size.observe(Usage())  # a disconnect: no usage
    assert size.measure(longer) == expected


def test_a_replaced_history_is_recounted_and_scaled_by_what_the_api_reported() -> None:
    size = PromptSize("anthropic/claude-sonnet-4.5")
    messages = history(10)
    counted = size.measure(messages)
    size.observe(Usage(prompt_tokens=counted * 3 // 2))  # Claude's tokenizer counts more than o200k_base
    size.forget_reported()  # a compression replaced the conversation
    compressed = [messages[0], {"role": "user", "content": "[CONTEXT COMPACTION] summary"}, *messages[-2:]]
    recount = count_tokens(compressed, "anthropic/claude-sonnet-4.5")
    ratio = (counted * 3 // 2) / counted
    assert size.calibration_ratio == ratio
    assert size.measure(compressed) == round(recount * ratio)


def test_an_edited_history_is_not_mistaken_for_an_extension() -> None:
    size = PromptSize("gpt-4o")
    messages = history(6)
    size.measure(messages)
    size.observe(Usage(prompt_tokens=count_tokens(messages, "gpt-4o")))
    edited = [dict(m) for m in messages]
    edited[2] = {"role": "user", "content": "short"}
    assert size.measure(edited) == count_tokens(edited, "gpt-4o")
