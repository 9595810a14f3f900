"""Reading and writing conversation files: a JSON list, a ``{"messages": [...]}`` object, or JSONL.

A malformed file fails with `ConversationError` naming the file, the line and the problem, so the CLI can print
one actionable line instead of a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ctxplug.errors import ConversationError
from ctxplug.messages import ROLES, Message


def read_conversation(path: str | Path) -> list[Message]:
    """Load the messages of a conversation file, validating each message's shape."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConversationError("no such file", source=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConversationError(f"cannot read the file: {exc}", source=source) from None
    return parse_conversation(text, source=source)


def parse_conversation(text: str, *, source: str = "conversation") -> list[Message]:
    """Parse a conversation from its text: a JSON document first, JSONL when the text is not one document."""
    stripped = text.lstrip()
    if not stripped:
        raise ConversationError("the file is empty; expected a JSON list of messages, an object with "
                                "'messages', or JSONL", source=source, line=1)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as whole_error:
        if stripped.startswith("["):
            raise ConversationError(f"invalid JSON: {whole_error.msg}", source=source,
                                    line=whole_error.lineno) from None
        return _parse_jsonl(text, source)
    if isinstance(document, list):
        return _validated(document, source, lambda index: _element_line(text, index))
    if isinstance(document, dict) and isinstance(document.get("messages"), list):
        return _validated(document["messages"], source, lambda index: None)
    if isinstance(document, dict) and "role" in document:
        return _validated([document], source, lambda index: 1 + text[: len(text) - len(stripped)].count("\n"))
    raise ConversationError(f"expected a JSON list of messages or an object with a 'messages' list, "
                            f"got {type(document).__name__}", source=source, line=1)


def _parse_jsonl(text: str, source: str) -> list[Message]:
    messages: list[Any] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConversationError(f"invalid JSON on this line: {exc.msg} (column {exc.colno})",
                                    source=source, line=number) from None
        if isinstance(record, dict) and isinstance(record.get("messages"), list) and "role" not in record:
            # a JSONL of whole conversations (the corpus format): the first one is the conversation
            return _validated(record["messages"], source, lambda index: None)
        messages.append(record)
        lines.append(number)
    return _validated(messages, source, lines.__getitem__)


def _validated(messages: list[Any], source: str, line_of: Callable[[int], int | None]) -> list[Message]:
    for index, message in enumerate(messages):
        problem = _problem_with(message)
        if problem:
            raise ConversationError(f"message {index} {problem}", source=source, line=line_of(index))
    return messages


def _problem_with(message: Any) -> str | None:
    """What is wrong with one message's shape, or None."""
    if not isinstance(message, dict):
        return f"is {type(message).__name__}, expected an object with a 'role'"
    role = message.get("role")
    if role not in ROLES:
        return f"has role {role!r}; expected one of {', '.join(ROLES)}"
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        return f"content is {type(content).__name__}; expected a string, a list of parts, or null"
    if role == "tool" and not message.get("tool_call_id"):
        return "is a tool result without 'tool_call_id'"
    if message.get("tool_calls") is not None and not isinstance(message["tool_calls"], list):
        return "has 'tool_calls' that is not a list"
    return None


def _element_line(text: str, wanted: int) -> int | None:
    """Line where the top-level list's element ``wanted`` starts (computed only to report an error)."""
    decoder = json.JSONDecoder()
    position = text.index("[") + 1
    for index in range(wanted + 1):
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if index == wanted:
            return text.count("\n", 0, position) + 1
        try:
            _, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return None
    return None


def write_conversation(messages: Sequence[Message], path: str | Path) -> None:
    """Write messages as a pretty JSON list (``.jsonl``: one message per line)."""
    target = Path(path)
    if target.suffix == ".jsonl":
        body = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages)
    else:
        body = json.dumps(list(messages), ensure_ascii=False, indent=1) + "\n"
    target.write_text(body, encoding="utf-8")
