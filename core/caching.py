"""Anthropic prompt-cache breakpoints on OpenAI-format messages: strategy system_and_3 (SPEC §5).

Anthropic caches the prefix that ends at a ``cache_control`` marker, at most 4 markers per request. The system
prompt gets one (it is stable across turns); the last three messages that can carry one get the others, a window
that rolls forward each turn. After a compaction the kept head (the messages before the summary) gets its own
marker instead of the oldest rolling one, so the next compaction still reads the head from the cache.

Two layouts: *native* (the request is converted to Anthropic Messages by our own code, `ctxplug.contrib.anthropic`,
which moves a message-level marker onto the message's last block) and the *envelope* (OpenAI chat format forwarded
by OpenRouter, which only honours markers on content parts and hangs on a message-level marker on a tool result).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ctxplug.errors import ConfigError
from ctxplug.messages import Message, is_compaction_summary, system_prefix_length

MAX_BREAKPOINTS = 4
CACHE_TTLS = ("5m", "1h")


def cache_marker(cache_ttl: str) -> dict[str, str]:
    """The ``cache_control`` value for a TTL; anything but 5m/1h is a configuration error, never a silent 5m."""
    if cache_ttl == "5m":
        return {"type": "ephemeral"}
    if cache_ttl == "1h":
        return {"type": "ephemeral", "ttl": "1h"}
    raise ConfigError(f"{cache_ttl!r} is not a cache TTL; use 5m or 1h (auto is resolved to one of them by the "
                      f"cache policy before markers are placed)", key_path="prompt_caching.cache_ttl")


def _blank_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "text" and not str(part.get("text") or "").strip()


def has_markable_content(message: Message) -> bool:
    """True when the content itself can hold a marker: non-blank text, or a list whose last part is a real part.

    Blank text is treated as no content: Anthropic rejects whitespace-only text blocks, so a marker there is lost.
    """
    content = message.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list) and content:
        last = content[-1]
        return isinstance(last, dict) and not _blank_text(last)
    return False


def can_carry_marker(message: Message, *, native_anthropic: bool) -> bool:
    """Whether a marker on this message reaches Anthropic in the given layout (else it must go elsewhere).

    Native: anything that becomes at least one block (content, tool calls, or a tool result).
    Envelope: only markable content; empty tool-calling assistants and empty tool results are skipped.
    """
    if has_markable_content(message):
        return True
    if not native_anthropic:
        return False
    return message.get("role") == "tool" or bool(message.get("tool_calls"))


def compaction_head_end(messages: Sequence[Message]) -> int | None:
    """Index of the first compaction summary after the system prompt, or None when nothing was compacted."""
    for index in range(system_prefix_length(messages), len(messages)):
        if is_compaction_summary(messages[index]):
            return index
    return None


def breakpoint_indices(messages: Sequence[Message], *, native_anthropic: bool = False,
                       max_breakpoints: int = MAX_BREAKPOINTS) -> list[int]:
    """Indices of the messages that get a marker, ascending: system, kept head (after a compaction), rolling tail."""
    def carries(index: int) -> bool:
        return can_carry_marker(messages[index], native_anthropic=native_anthropic)

    chosen: list[int] = []
    system_end = system_prefix_length(messages)
    if system_end and max_breakpoints > 0 and carries(system_end - 1):
        chosen.append(system_end - 1)
    summary_at = compaction_head_end(messages)
    # the head marker only pays when at least one rolling marker is left for the newest turn
    if summary_at is not None and max_breakpoints - len(chosen) >= 2:
        head = [i for i in range(system_end, summary_at) if carries(i)]
        if head:
            chosen.append(head[-1])
    rolling: list[int] = []
    for index in range(len(messages) - 1, system_end - 1, -1):
        if len(chosen) + len(rolling) >= max_breakpoints:
            break
        if index not in chosen and carries(index):
            rolling.append(index)
    return sorted(chosen + rolling)


def _without_markers(message: Message) -> Message:
    message.pop("cache_control", None)
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                part.pop("cache_control", None)
    return message


def strip_cache_control(messages: Sequence[Message]) -> list[Message]:
    """A deep copy with every ``cache_control`` removed (message level and content parts)."""
    return [_without_markers(message) for message in copy.deepcopy(list(messages))]


def _with_marker(message: Message, marker: dict[str, str], *, native_anthropic: bool) -> Message:
    # a fresh dict and content list: a deep copy keeps aliasing, and a part shared by two messages must not
    # end up marked twice
    marked = dict(message)
    content = message.get("content")
    if message.get("role") == "tool" and native_anthropic:
        marked["cache_control"] = dict(marker)  # the converter moves it into the tool_result block
    elif isinstance(content, str) and content.strip():
        marked["content"] = [{"type": "text", "text": content, "cache_control": dict(marker)}]
    elif isinstance(content, list) and has_markable_content(message):
        marked["content"] = [*content[:-1], {**content[-1], "cache_control": dict(marker)}]
    else:
        marked["cache_control"] = dict(marker)
    return marked


def apply_anthropic_cache_control(messages: Sequence[Message], cache_ttl: str = "5m", native_anthropic: bool = False,
                                  *, max_breakpoints: int = MAX_BREAKPOINTS) -> list[Message]:
    """A deep copy with system_and_3 cache breakpoints; idempotent, the input is never mutated.

    Existing markers are removed first, so applying it twice (or to a transcript decorated by an earlier turn)
    gives the same result and never more than ``max_breakpoints`` markers. ``max_breakpoints`` is lower than 4
    when the caller spends markers elsewhere (the tools array in the native converter).
    """
    marker = cache_marker(cache_ttl)
    if not 0 <= max_breakpoints <= MAX_BREAKPOINTS:
        raise ValueError(f"max_breakpoints must be between 0 and {MAX_BREAKPOINTS}, got {max_breakpoints}")
    result = strip_cache_control(messages)
    for index in breakpoint_indices(result, native_anthropic=native_anthropic, max_breakpoints=max_breakpoints):
        result[index] = _with_marker(result[index], marker, native_anthropic=native_anthropic)
    return result


def marker_count(messages: Sequence[Message]) -> int:
    """How many ``cache_control`` markers the messages carry (message level and content parts)."""
    count = 0
    for message in messages:
        count += "cache_control" in message
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for part in content if isinstance(part, dict) and "cache_control" in part)
    return count
