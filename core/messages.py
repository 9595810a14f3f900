"""OpenAI-format message surgery: roles, tool-call ids, tool-call groups, and `sanitize_tool_pairs`.

Every function here is pure: it reads the caller's list and returns a new one, never mutating a message.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

Message = dict[str, Any]

ROLES = ("system", "developer", "user", "assistant", "tool")
# Roles that make up the system prompt (Anthropic's top-level ``system``); developer is OpenAI's newer spelling.
SYSTEM_ROLES = ("system", "developer")

REMOVED_CALL_NOTE = "[tool call removed: its result was compacted away]"

# Every compaction summary that an engine inserts starts with this marker, so caching, hygiene and a restarted
# engine can find it again; engines choose the rest of the wording.
COMPACTION_MARKER = "[CONTEXT COMPACTION"


def tool_call_id(call: Any) -> str | None:
    """The id a tool result answers: ``call_id`` (Responses-style) when present, else ``id``."""
    if not isinstance(call, dict):
        return None
    value = call.get("call_id") or call.get("id")
    return str(value) if value else None


def tool_calls_of(message: Message) -> list[dict[str, Any]]:
    """The assistant message's tool calls (an empty list when there are none or the field is malformed)."""
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def is_tool_result(message: Message) -> bool:
    return message.get("role") == "tool"


def content_text(message: Message) -> str:
    """The message's text: a string content, or the text parts of a list content joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


def system_prefix_length(messages: Sequence[Message]) -> int:
    """How many leading messages form the system prompt."""
    count = 0
    while count < len(messages) and messages[count].get("role") in SYSTEM_ROLES:
        count += 1
    return count


def is_compaction_summary(message: Message) -> bool:
    """True for a summary message that an engine inserted in place of compacted turns."""
    return content_text(message).lstrip().startswith(COMPACTION_MARKER)


def group_end(messages: Sequence[Message], start: int) -> int:
    """Index just past the group that starts at ``start``: an assistant with tool calls plus its results."""
    end = start + 1
    if tool_calls_of(messages[start]) and messages[start].get("role") == "assistant":
        while end < len(messages) and is_tool_result(messages[end]):
            end += 1
    return end


def iter_groups(messages: Sequence[Message]) -> Iterator[tuple[int, int]]:
    """Yield ``(start, end)`` spans that stay together: a tool-calling assistant with its results, or one message."""
    index = 0
    while index < len(messages):
        end = group_end(messages, index)
        yield index, end
        index = end


def align_boundary_backward(messages: Sequence[Message], index: int) -> int:
    """Move a cut point back so it does not fall inside a tool-call group (parallel calls included).

    A cut at ``index`` keeps ``messages[index:]``; when that starts with tool results, the cut moves to their
    parent assistant message so the whole group stays on one side.
    """
    if index <= 0 or index >= len(messages):
        return max(0, min(index, len(messages)))
    cursor = index
    while cursor > 0 and is_tool_result(messages[cursor]):
        cursor -= 1
    if cursor < index and messages[cursor].get("role") == "assistant" and tool_calls_of(messages[cursor]):
        return cursor
    return index


def align_boundary_forward(messages: Sequence[Message], index: int) -> int:
    """Move a cut point forward past tool results, so the kept part never starts with an orphan result."""
    while 0 <= index < len(messages) and is_tool_result(messages[index]):
        index += 1
    return index


def sanitize_tool_pairs(messages: Sequence[Message]) -> list[Message]:
    """Return a copy in which every tool call has exactly one result right after it and no result is orphaned.

    The rule, applied per group (an assistant with tool calls followed by its contiguous tool results):
    - a result whose call is not in the preceding assistant message, or that repeats an answered id, is dropped;
    - a call with no result is removed from ``tool_calls`` (a message left with neither text nor calls keeps a
      short note as content, so role alternation is unchanged);
    - except in the final group: calls still waiting for their results at the very end of the conversation are
      in flight (the agent is executing them) and are kept as they are.

    Removing an unanswered call, rather than inventing a stub result, keeps the transcript truthful: the model
    never reads a tool output that did not happen, and the compaction summary already tells what the call did.
    Messages that need no change are returned as the same objects; changed ones are shallow copies.
    """
    result: list[Message] = []
    index = 0
    total = len(messages)
    while index < total:
        message = messages[index]
        calls = tool_calls_of(message) if message.get("role") == "assistant" else []
        if not calls:
            if not is_tool_result(message):
                result.append(message)
            index += 1
            continue
        end = group_end(messages, index)
        wanted = [tool_call_id(c) for c in calls]
        answered: dict[str, Message] = {}
        for tool_message in messages[index + 1:end]:
            call_ref = tool_message.get("tool_call_id")
            if call_ref in wanted and call_ref not in answered:
                answered[str(call_ref)] = tool_message
        if end == total and len(answered) < len(wanted):
            result.append(message)  # in flight: keep every call, drop only results that answer none
            result.extend(m for m in messages[index + 1:end] if any(m is a for a in answered.values()))
        elif len(answered) == len(calls) == end - index - 1:
            result.extend(messages[index:end])
        else:
            kept_calls = [c for c in calls if tool_call_id(c) in answered]
            result.append(_with_calls(message, kept_calls))
            result.extend(answered[str(tool_call_id(c))] for c in kept_calls)
        index = end
    return result


def _with_calls(message: Message, calls: list[dict[str, Any]]) -> Message:
    copy = dict(message)
    if calls:
        copy["tool_calls"] = calls
        return copy
    copy.pop("tool_calls", None)
    if not content_text(copy).strip() and not (isinstance(copy.get("content"), list) and copy["content"]):
        copy["content"] = REMOVED_CALL_NOTE
    return copy
