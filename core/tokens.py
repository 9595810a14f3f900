"""Token counts of text and chat messages: exact with the bundled encodings, or a fast character estimate.

`count_tokens` encodes every text field of every message with the model's encoding (exact for OpenAI-family
models, o200k_base as a stand-in for the rest) and adds the chat framing that OpenAI documents. The rough
estimate (`estimate_messages_tokens_rough`) runs on every turn of an agent, so it only counts characters:
four per token, one per CJK character. `IncrementalTokenCounter` keeps either count for a growing session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

from ctxplug.encodings import encoding_for_model, get_encoding

if TYPE_CHECKING:
    from tiktoken import Encoding

# OpenAI's documented chat framing: every message costs 3 tokens plus its role, a name 1 more, and the reply
# is primed with 3. Tool calls are framed in a format OpenAI does not publish; 3 per call is an approximation.
MESSAGE_FRAMING_TOKENS = 3
NAME_FRAMING_TOKENS = 1
REPLY_PRIMING_TOKENS = 3
TOOL_CALL_FRAMING_TOKENS = 3
# What an image costs depends on its size and the provider; this is about a 1024x1024 image on Claude, and
# more than OpenAI's high-detail tiles, so the count errs on the side of compressing early.
IMAGE_PART_TOKENS = 1500
# The rough estimate's framing: the 3 tokens above plus about one for the role.
ROUGH_MESSAGE_TOKENS = 4
CHARS_PER_TOKEN = 4

IMAGE_PART_TYPES = frozenset({"image_url", "image", "input_image"})
# fields that are not sent to the model as text: counted by their own rules, or not at all
_FRAMED_FIELDS = frozenset({"role", "content", "name", "tool_call_id", "tool_calls", "cache_control"})
# CJK ideographs, kana, hangul and full-width forms: about one token each in every common tokenizer (o200k
# 0.6-0.8, cl100k and Claude about 1), where four characters per token would count them 4x too low.
_WIDE_CHARS = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]"
)

Message = Mapping[str, Any]


def count_tokens(text_or_messages: str | Sequence[Message], model: str | None = None, *,
                 tools: Sequence[Mapping[str, Any]] | None = None) -> int:
    """Tokens of a text or a chat-message list for ``model``, offline; exact for OpenAI-family text.

    A message list includes the chat framing and tool calls; ``tools`` adds the tool schemas as compact JSON.
    Whether the encoding is the model's own says `ctxplug.encodings.encoding_for_model`.
    """
    encoding = get_encoding(encoding_for_model(model).name)
    if isinstance(text_or_messages, str):
        return len(encoding.encode_ordinary(text_or_messages))
    messages = _require_messages(text_or_messages, "count_tokens", "a string or a list of chat messages")
    total = sum(exact_message_tokens(message, encoding) for message in messages)
    if messages:
        total += REPLY_PRIMING_TOKENS
    for tool in tools or ():
        total += len(encoding.encode_ordinary(_compact_json(tool)))
    return total


def exact_message_tokens(message: Message, encoding: Encoding) -> int:
    """One message's tokens in ``encoding``, its share of the chat framing included."""
    encode = encoding.encode_ordinary
    texts, images, tool_calls = _message_texts(message)
    total = MESSAGE_FRAMING_TOKENS + len(encode(str(message.get("role", "")))) + images * IMAGE_PART_TOKENS
    total += tool_calls * TOOL_CALL_FRAMING_TOKENS
    if message.get("name"):
        total += NAME_FRAMING_TOKENS
    return total + sum(len(encode(text)) for text in texts)


def estimate_text_tokens_rough(text: str) -> int:
    """About how many tokens ``text`` is: four characters per token, one per CJK character."""
    if text.isascii():
        return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
    wide = _WIDE_CHARS.subn("", text)[1]
    return wide + (len(text) - wide + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_message_tokens_rough(message: Message) -> int:
    """About how many tokens one message costs, its framing, tool calls and images included."""
    texts, images, tool_calls = _message_texts(message)
    chars = wide = 0
    for text in texts:
        chars += len(text)
        if not text.isascii():
            wide += _WIDE_CHARS.subn("", text)[1]
    text_tokens = wide + (chars - wide + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
    return ROUGH_MESSAGE_TOKENS + text_tokens + images * IMAGE_PART_TOKENS + tool_calls * TOOL_CALL_FRAMING_TOKENS


def estimate_messages_tokens_rough(messages: Sequence[Message],
                                   tools: Sequence[Mapping[str, Any]] | None = None) -> int:
    """About how many prompt tokens ``messages`` (and the ``tools`` schemas) cost; fast enough for every turn."""
    total = sum(estimate_message_tokens_rough(m) for m in _require_messages(messages, "estimate_messages_tokens_rough"))
    return total + sum(estimate_text_tokens_rough(_compact_json(tool)) for tool in tools or ())


class IncrementalTokenCounter:
    """The token total of a session that grows turn by turn, at a per-message cost independent of its length.

    Each message is counted once, when appended. `resync` takes the whole list again after it was replaced
    (a compression) or edited in place, and counts only the messages it has not seen with that exact content.
    ``rough=True`` uses the character estimate instead of the encoding.
    """

    def __init__(self, model: str | None = None, *, rough: bool = False, messages: Iterable[Message] = ()) -> None:
        self.model = model
        self.rough = rough
        choice = encoding_for_model(model)
        self.exact = not rough and choice.exact
        self._encoding_name = choice.name
        self._cost: Callable[[Message], int] = estimate_message_tokens_rough if rough else self._exact_cost
        self._entries: list[tuple[bytes, int]] = []  # (content fingerprint, tokens) per message
        self._sum = 0
        self.extend(messages)

    @property
    def total(self) -> int:
        """Tokens of all messages so far: equal to `count_tokens` (or the rough estimate) of the same list."""
        if self.rough or not self._entries:
            return self._sum
        return self._sum + REPLY_PRIMING_TOKENS

    def __len__(self) -> int:
        return len(self._entries)

    def append(self, message: Message) -> int:
        """Count one new message and return its tokens."""
        _require_messages((message,), "IncrementalTokenCounter.append")
        tokens = self._cost(message)
        self._entries.append((_fingerprint(message), tokens))
        self._sum += tokens
        return tokens

    def extend(self, messages: Iterable[Message]) -> None:
        """Count several new messages."""
        for message in messages:
            self.append(message)

    def resync(self, messages: Sequence[Message]) -> int:
        """Make the counter match ``messages``; return how many messages had to be counted anew."""
        known = dict(self._entries)
        entries: list[tuple[bytes, int]] = []
        recounted = 0
        for message in _require_messages(messages, "IncrementalTokenCounter.resync"):
            key = _fingerprint(message)
            tokens = known.get(key)
            if tokens is None:
                tokens = known[key] = self._cost(message)
                recounted += 1
            entries.append((key, tokens))
        self._entries = entries
        self._sum = sum(tokens for _, tokens in entries)
        return recounted

    def _exact_cost(self, message: Message) -> int:
        return exact_message_tokens(message, get_encoding(self._encoding_name))


def _message_texts(message: Message) -> tuple[list[str], int, int]:
    """The texts of a message that reach the model, its number of image parts, and its number of tool calls."""
    texts: list[str] = []
    images = 0
    content = message.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, Mapping) and part.get("type") in IMAGE_PART_TYPES:
                images += 1
            elif part is not None:
                texts.append(_compact_json(part))
    for field in ("name", "tool_call_id"):
        value = message.get(field)
        if isinstance(value, str):
            texts.append(value)
    calls = message.get("tool_calls")
    tool_calls = len(calls) if isinstance(calls, list) else 0
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            texts.append(_compact_json(call))
            continue
        arguments = function.get("arguments")
        texts.append(str(function.get("name") or ""))
        texts.append(arguments if isinstance(arguments, str) else _compact_json(arguments))
        texts.append(str(call.get("id") or ""))
    for field, value in message.items():
        # replayed reasoning and other provider fields reach the model too (#55572 in the reference: 27%)
        if field in _FRAMED_FIELDS or field.startswith("_") or value is None or isinstance(value, bool | int | float):
            continue
        texts.append(value if isinstance(value, str) else _compact_json(value))
    return texts, images, tool_calls


def _require_messages(messages: Any, caller: str, expected: str = "a list of chat messages") -> Sequence[Message]:
    """``messages`` itself if it is a list or tuple of message mappings, else a TypeError naming what was wrong."""
    if not isinstance(messages, list | tuple):
        hint = " (pass its 'messages' list)" if isinstance(messages, Mapping) and "messages" in messages else ""
        raise TypeError(f"{caller} expects {expected} (dicts with a 'role'), got {type(messages).__name__}{hint}")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(f"{caller} expects chat messages (dicts with a 'role'); "
                            f"item {index} is {type(message).__name__}")
    return messages


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _fingerprint(message: Message) -> bytes:
    # A digest of the content, not the dict's identity: a message edited in place must be counted again.
    return blake2b(repr(message).encode("utf-8", "surrogatepass"), digest_size=16).digest()
