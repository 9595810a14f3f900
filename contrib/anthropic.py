"""OpenAI-format conversation -> Anthropic Messages request, with native prompt-cache breakpoints.

What the Messages API demands and this converter guarantees: the system prompt goes in the top-level ``system``;
turns alternate user/assistant starting with user (consecutive same-role messages are merged, a conversation that
opens with the assistant gets a short user turn first); every ``tool_result`` answers a ``tool_use`` of the
assistant turn right before it, and comes first in its user turn; no text block is empty; at most 4
``cache_control`` markers, counting the one on the tools array when ``cache_tools`` asks for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ctxplug.caching import (
    MAX_BREAKPOINTS,
    apply_anthropic_cache_control,
    cache_marker,
    strip_cache_control,
)
from ctxplug.errors import ConversationError
from ctxplug.messages import Message, sanitize_tool_pairs, system_prefix_length, tool_call_id, tool_calls_of

Block = dict[str, Any]
OPENING_USER_TEXT = "(The conversation so far continues below.)"


def _image_block(part: Mapping[str, Any], where: str) -> Block:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str) or not url:
        raise ConversationError(f"{where}: image part without a URL")
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type, _, encoding = header[len("data:"):].partition(";")
        if encoding != "base64" or not data:
            raise ConversationError(f"{where}: image data URL must be base64 (data:<type>;base64,<data>)")
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _content_blocks(content: Any, where: str) -> list[Block]:
    """Text and image blocks of a string or a list of parts; blank text is dropped (the API rejects it)."""
    parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    blocks: list[Block] = []
    for part in parts:
        if isinstance(part, str):
            part = {"type": "text", "text": part}
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "image_url":
            block = _image_block(part, where)
        elif isinstance(part.get("text"), str) and part["text"].strip():
            block = {"type": "text", "text": part["text"]}
        else:
            continue
        if "cache_control" in part:
            block["cache_control"] = part["cache_control"]
        blocks.append(block)
    return blocks


def _tool_use(call: Mapping[str, Any], where: str) -> Block:
    function = call.get("function") or {}
    arguments = function.get("arguments") or "{}"
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError as exc:
        raise ConversationError(f"{where}: tool call {tool_call_id(call)} has arguments that are not JSON "
                                f"({exc.msg}); Anthropic needs an object as tool_use input") from None
    if not isinstance(parsed, dict):
        raise ConversationError(f"{where}: tool call {tool_call_id(call)} arguments must be a JSON object")
    # the id a tool result answers (Responses-style calls keep it in call_id)
    return {"type": "tool_use", "id": tool_call_id(call), "name": function.get("name"), "input": parsed}


def _tool_result(message: Message, where: str) -> Block:
    inner = [{k: v for k, v in b.items() if k != "cache_control"}
             for b in _content_blocks(message.get("content"), where)]
    block: Block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id")}
    if inner:
        block["content"] = inner
    return block


def message_blocks(message: Message, index: int) -> tuple[str, list[Block]]:
    """The Anthropic role and blocks of one non-system message; a message-level marker lands on its last block."""
    where = f"message {index}"
    role = message.get("role")
    if role == "tool":
        return "user", _with_message_marker(message, [_tool_result(message, where)])
    blocks = _content_blocks(message.get("content"), where)
    if role == "assistant":
        blocks.extend(_tool_use(call, where) for call in tool_calls_of(message))
        return "assistant", _with_message_marker(message, blocks)
    return "user", _with_message_marker(message, blocks)  # user, and system/developer in mid-conversation


def _with_message_marker(message: Message, blocks: list[Block]) -> list[Block]:
    if "cache_control" in message and blocks:
        blocks[-1] = {**blocks[-1], "cache_control": message["cache_control"]}
    return blocks


def _merged_turns(turns: Sequence[tuple[str, list[Block]]]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for role, blocks in turns:
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": list(blocks)})
    for turn in merged:
        if turn["role"] == "user":  # tool results must open the user turn that answers the tool calls
            turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    if merged and merged[0]["role"] != "user":
        merged.insert(0, {"role": "user", "content": [{"type": "text", "text": OPENING_USER_TEXT}]})
    return merged


def convert_tools(tools: Sequence[Mapping[str, Any]]) -> list[Block]:
    """OpenAI function tool schemas -> Anthropic tool definitions (name, description, input_schema)."""
    converted = []
    for tool in tools:
        function = tool.get("function", tool)
        entry: Block = {"name": function["name"],
                        "input_schema": function.get("parameters") or {"type": "object", "properties": {}}}
        if function.get("description"):
            entry["description"] = function["description"]
        converted.append(entry)
    return converted


def to_anthropic_request(messages: Sequence[Message], *, tools: Sequence[Mapping[str, Any]] | None = None,
                         cache_ttl: str | None = "5m", cache_tools: bool = False) -> dict[str, Any]:
    """The ``system``, ``messages`` (and ``tools``) of a Messages API request; ``cache_ttl=None`` places no markers.

    With ``cache_tools`` the last tool definition takes one of the 4 markers (tools come first in the cached
    prefix, so a stable tool list is cached once for the whole session) and the messages keep the other three.
    """
    cache_tools = bool(cache_tools and tools and cache_ttl)
    system_end = system_prefix_length(messages)
    # A request must answer every call, including the last group's (which sanitize_tool_pairs keeps as in flight
    # when it ends the list): a closing sentinel makes that group an ordinary one. Unanswered calls go before
    # markers are placed, so no marker lands on a call that is then removed.
    sentinel: Message = {"role": "user", "content": None}
    cleaned = [*messages[:system_end], *sanitize_tool_pairs([*messages[system_end:], sentinel])[:-1]]
    if cache_ttl:
        budget = MAX_BREAKPOINTS - (1 if cache_tools else 0)
        cleaned = apply_anthropic_cache_control(cleaned, cache_ttl, native_anthropic=True, max_breakpoints=budget)
    else:
        cleaned = strip_cache_control(cleaned)
    system: list[Block] = []
    for index in range(system_end):
        system.extend(_with_message_marker(cleaned[index],
                                           _content_blocks(cleaned[index].get("content"), f"message {index}")))
    turns = _merged_turns([message_blocks(cleaned[i], i) for i in range(system_end, len(cleaned))])
    if not turns:
        raise ConversationError("no user or assistant content to send; a Messages request needs at least one turn")
    request: dict[str, Any] = {"messages": turns}
    if system:
        request["system"] = system
    if tools:
        request["tools"] = convert_tools(tools)
        if cache_tools and cache_ttl:
            request["tools"][-1]["cache_control"] = cache_marker(cache_ttl)
    return request
