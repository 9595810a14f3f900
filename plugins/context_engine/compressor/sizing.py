"""Token sizes of messages, measured once per message so every phase reuses the same figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Message = dict[str, Any]

# Keys whose values are sent to the model besides the content (tool-call envelopes, replayed reasoning).
_SIZED_KEYS = ("tool_calls", "reasoning", "reasoning_content", "reasoning_details")
_MESSAGE_OVERHEAD_TOKENS = 4


def message_tokens(message: Message) -> int:
    """A rough token size of one message (characters / 4 plus a small per-message overhead)."""
    chars = _value_chars(message.get("content"))
    for key in _SIZED_KEYS:
        value = message.get(key)
        if value:
            chars += _value_chars(value)
    return chars // 4 + _MESSAGE_OVERHEAD_TOKENS


def sizes_of(messages: Sequence[Message]) -> list[int]:
    """`message_tokens` of every message, in order."""
    return [message_tokens(m) for m in messages]


def _value_chars(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + _value_chars(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(_value_chars(v) for v in value)
    return len(str(value))
