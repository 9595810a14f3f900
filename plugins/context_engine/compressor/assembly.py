"""Phase 4: head, summary, tail — then the tool pairs are made whole again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxplug.messages import SYSTEM_ROLES, sanitize_tool_pairs
from ctxplug.plugins.context_engine.compressor.boundaries import Span
from ctxplug.plugins.context_engine.compressor.handoff import merge_summary, summary_message, with_system_note

Message = dict[str, Any]


def assemble(messages: Sequence[Message], span: Span, body: str, *, system_note: bool) -> list[Message]:
    """The compressed conversation: the head (byte-identical unless ``system_note``), the summary, the tail.

    Head and tail messages are the caller's own objects, never modified; only the system prompt (when noted) and a
    tail message that receives a merged summary are new copies.
    """
    head = list(messages[:span.head_end])
    if system_note and head and head[0].get("role") in SYSTEM_ROLES:
        head[0] = with_system_note(head[0])
    tail = list(messages[span.tail_start:])
    if span.merge:
        tail[0] = merge_summary(tail[0], body)
        return sanitize_tool_pairs(head + tail)
    return sanitize_tool_pairs([*head, summary_message(span.summary_role, body), *tail])
