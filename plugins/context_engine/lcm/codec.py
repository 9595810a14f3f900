"""How a message becomes stored bytes, a content hash and searchable text — the same for every store.

The body is the message's canonical JSON (sorted keys) in UTF-8 with ``surrogatepass``, so content that is not
valid Unicode (lone surrogates from a broken decoder) round-trips exactly instead of failing to store. The search
text replaces what UTF-8 cannot carry, since the full-text index needs real text.
"""

from __future__ import annotations

import json
from hashlib import blake2b
from typing import Any

from ctxplug.errors import ConversationError
from ctxplug.messages import content_text, tool_calls_of

Message = dict[str, Any]


def encode_body(message: Message) -> bytes:
    """The stored form of ``message``: canonical JSON bytes."""
    try:
        text = json.dumps(message, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ConversationError(f"a message cannot be stored as JSON: {exc}") from None
    return text.encode("utf-8", "surrogatepass")


def decode_body(body: bytes) -> Message:
    """The message stored as ``body``."""
    value: Message = json.loads(bytes(body).decode("utf-8", "surrogatepass"))
    return value


def content_digest(body: bytes) -> bytes:
    """The 16-byte hash that tells a retried message from a different one at the same position."""
    return blake2b(body, digest_size=16).digest()


def search_text(message: Message) -> str:
    """What the full-text index sees: the message's text plus its tool calls' names and arguments."""
    parts = [content_text(message)]
    for call in tool_calls_of(message):
        function = call.get("function")
        if isinstance(function, dict):
            parts.append(str(function.get("name") or ""))
            parts.append(str(function.get("arguments") or ""))
    text = "\n".join(p for p in parts if p)
    return clean_text(text)


def clean_text(text: str) -> str:
    """``text`` with NUL bytes and unencodable code points (lone surrogates) replaced, so SQLite can take it."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "replace").decode("utf-8")
    return text.replace("\x00", " ") if "\x00" in text else text
