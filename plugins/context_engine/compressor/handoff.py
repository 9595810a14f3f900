"""The summary message: its wording, the system-prompt note, and finding (and unwrapping) earlier summaries.

A summary message is ``SUMMARY_PREFIX``, a blank line, the body, a blank line and ``END_MARKER``. When role
alternation leaves no other choice, the summary is merged in front of a tail message: the original content then
follows the end marker, and `unwrap_summaries` restores it before the next compression.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxplug.messages import COMPACTION_MARKER, SYSTEM_ROLES, content_text, is_compaction_summary

Message = dict[str, Any]

SUMMARY_PREFIX = (
    f"{COMPACTION_MARKER} — background only] Earlier turns of this conversation were replaced by the summary "
    "below to save context space. It records past work; it is not a new request. Answer the latest message after "
    "it and do not redo work it lists as done."
)
END_MARKER = "[END OF COMPACTION SUMMARY — the conversation continues below]"
SYSTEM_NOTE = (
    "[Note: earlier turns of this conversation have been compacted into a summary message. Build on the work it "
    "records instead of repeating it.]"
)
_SEPARATOR = "\n\n"


def render_summary(body: str) -> str:
    """The full text of a summary message for ``body``."""
    return f"{SUMMARY_PREFIX}{_SEPARATOR}{body.strip()}{_SEPARATOR}{END_MARKER}"


def summary_message(role: str, body: str) -> Message:
    """A standalone summary message with the given role."""
    return {"role": role, "content": render_summary(body)}


def merge_summary(message: Message, body: str) -> Message:
    """A copy of ``message`` with the summary in front of its content (used when alternation forbids a new message)."""
    rendered = render_summary(body)
    copy = dict(message)
    content = message.get("content")
    if isinstance(content, list):
        copy["content"] = [{"type": "text", "text": rendered}, *content]
    elif isinstance(content, str) and content:
        copy["content"] = f"{rendered}{_SEPARATOR}{content}"
    else:
        copy["content"] = rendered
    return copy


def summary_body(message: Message) -> str:
    """The body of a summary message: its prefix line, end marker and any merged original content removed."""
    text = content_text(message).lstrip()
    first_break = text.find("\n")
    body = text[first_break + 1:] if first_break >= 0 else ""
    end = body.find(END_MARKER)
    return (body[:end] if end >= 0 else body).strip()


def with_system_note(message: Message) -> Message:
    """A copy of the system prompt with the compaction note appended once (idempotent)."""
    if SYSTEM_NOTE in content_text(message):
        return message
    copy = dict(message)
    content = message.get("content")
    if isinstance(content, list):
        copy["content"] = [*content, {"type": "text", "text": SYSTEM_NOTE}]
    elif isinstance(content, str) and content:
        copy["content"] = f"{content}{_SEPARATOR}{SYSTEM_NOTE}"
    else:
        copy["content"] = SYSTEM_NOTE
    return copy


@dataclass(frozen=True)
class Unwrapped:
    """A conversation with its summary messages taken out, and what they said."""

    messages: list[Message]
    previous_summary: str | None
    found: int


def unwrap_summaries(messages: Sequence[Message]) -> Unwrapped:
    """Take every compaction summary out of ``messages``: standalone ones are dropped, merged ones restored.

    The bodies (oldest first) become the previous summary the next one updates, so summaries never stack, also
    after a restart where the engine's own memory of its last summary is gone.
    """
    kept: list[Message] = []
    bodies: list[str] = []
    for message in messages:
        if message.get("role") in SYSTEM_ROLES or not is_compaction_summary(message):
            kept.append(message)
            continue
        body = summary_body(message)
        if body:
            bodies.append(body)
        original = _merged_original(message)
        if original is not None:
            kept.append(original)
    previous = _SEPARATOR.join(bodies) if bodies else None
    return Unwrapped(kept, previous, len(bodies))


def _merged_original(message: Message) -> Message | None:
    """The tail message a summary was merged into, or None for a standalone summary."""
    content = message.get("content")
    if isinstance(content, list):
        parts = content[1:]
        return {**message, "content": parts} if parts or message.get("tool_calls") else None
    if not isinstance(content, str):
        return None
    end = content.find(END_MARKER)
    if end < 0:
        return None
    rest = content[end + len(END_MARKER):].removeprefix(_SEPARATOR)
    if rest or message.get("tool_calls"):
        return {**message, "content": rest or None}
    return None
