"""Anthropic's prompt cache, simulated: the blocks a request carries and what each request pays for them.

The modelling assumptions, each with its source, are listed in docs/caching.md. In short: a request is the
sequence of content blocks Anthropic sees (tools, then system, then messages); a cache entry is the exact prefix
that ends at a marked block, written when that prefix reaches the model's minimum; each marker looks up the
entries ending at its own block and the 19 blocks before it (20 boundaries); a hit refreshes the entry's TTL and
an entry is gone at exactly its TTL. Costs are in base input tokens (1.0 = one uncached input token).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Any

from ctxplug.cache_pricing import CacheRules
from ctxplug.messages import Message, content_text, tool_calls_of
from ctxplug.tokens import IMAGE_PART_TOKENS, IMAGE_PART_TYPES, count_tokens

# Anthropic does not publish the framing a block costs; a few tokens per block keeps many small blocks from
# counting as free next to the API's own count (docs/caching.md, "token counts").
BLOCK_FRAMING_TOKENS = 3
# what a replay is priced under, in report order: no caching, ctxplug's breakpoints, the best any placement does
PLACEMENTS = ("none", "system_and_3", "best")


@dataclass(frozen=True)
class Block:
    """One content block as Anthropic sees it: its identity, its size, and whether it carries a marker."""

    key: str
    tokens: int
    marked: bool = False


class BlockCounter:
    """Token counts per block text, memoized: a replay shows the same blocks to every later request."""

    def __init__(self, count_text: Callable[[str], int] | None = None, *, model: str | None = None,
                 framing: int = BLOCK_FRAMING_TOKENS) -> None:
        self._count = count_text or (lambda text: count_tokens(text, model))
        self.framing = framing
        self._known: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        known = self._known.get(text)
        if known is None:
            known = self._known[text] = self._count(text) + self.framing
        return known


def _part_blocks(role: str, part: Any, count: BlockCounter) -> Iterator[tuple[str, int, bool]]:
    marked = isinstance(part, dict) and "cache_control" in part
    if isinstance(part, str):
        part = {"type": "text", "text": part}
    if not isinstance(part, dict):
        return
    if part.get("type") in IMAGE_PART_TYPES:
        source = json.dumps({k: v for k, v in part.items() if k != "cache_control"}, sort_keys=True)
        yield f"{role}|image|{source}", IMAGE_PART_TOKENS + count.framing, marked
    elif isinstance(part.get("text"), str) and part["text"].strip():
        yield f"{role}|text|{part['text']}", count(part["text"]), marked


def message_blocks(message: Message, count: BlockCounter) -> list[Block]:
    """The content blocks of one OpenAI-format message in Anthropic's form; a message-level marker marks the last.

    Blank text becomes no block (Anthropic rejects it), each tool call a tool_use block, a tool result one
    tool_result block whatever its content.
    """
    role = str(message.get("role"))
    found: list[tuple[str, int, bool]] = []
    content = message.get("content")
    if role == "tool":
        marked = isinstance(content, list) and any(isinstance(p, dict) and "cache_control" in p for p in content)
        text = content_text(message)
        found.append((f"tool_result|{message.get('tool_call_id')}|{text}", count(text), marked))
    else:
        parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
        for part in parts:
            found.extend(_part_blocks(role, part, count))
        for call in tool_calls_of(message):
            function = call.get("function") or {}
            text = f"{function.get('name')} {function.get('arguments')}"
            found.append((f"tool_use|{call.get('id')}|{text}", count(text), False))
    if "cache_control" in message and found:
        key, tokens, _ = found[-1]
        found[-1] = (key, tokens, True)
    return [Block(key, tokens, marked) for key, tokens, marked in found]


def request_blocks(messages: Sequence[Message], count: BlockCounter,
                   tools: Sequence[Mapping[str, Any]] = (), *, cache_tools: bool = False) -> list[Block]:
    """Every block of one request in Anthropic's cache order: tools, then the system prompt, then the messages."""
    schemas = [json.dumps(tool, sort_keys=True) for tool in tools]
    blocks = [Block(f"tool|{schema}", count(schema), cache_tools and index == len(schemas) - 1)
              for index, schema in enumerate(schemas)]
    for message in messages:
        blocks.extend(message_blocks(message, count))
    return blocks


def prefix_hashes(blocks: Sequence[Block]) -> list[bytes]:
    """``hashes[n]`` identifies the prefix of the first ``n`` blocks (``hashes[0]`` is the empty prefix)."""
    hashes = [b""]
    for block in blocks:
        hashes.append(blake2b(hashes[-1] + block.key.encode(), digest_size=16).digest())
    return hashes


@dataclass(frozen=True)
class RequestCost:
    """What one request paid, in tokens and in base input tokens."""

    prompt_tokens: int
    read_tokens: int
    write_tokens: int
    cache_ttl: str | None
    cost: float

    @property
    def uncached_tokens(self) -> int:
        """Tokens billed at the plain input price."""
        return self.prompt_tokens - self.read_tokens - self.write_tokens


@dataclass
class PromptCache:
    """The cache of one organization: prefix hash -> the time that entry expires (exclusive)."""

    rules: CacheRules
    entries: dict[bytes, float] = field(default_factory=dict)

    def live(self, key: bytes, at: float) -> bool:
        """True when the entry exists and its TTL has not run out (gone at exactly the TTL)."""
        return self.entries.get(key, float("-inf")) > at

    def send(self, blocks: Sequence[Block], at: float, cache_ttl: str) -> RequestCost:
        """Price one request with markers, under the breakpoint, lookback and minimum-prefix rules."""
        rules = self.rules
        marks = [index + 1 for index, block in enumerate(blocks) if block.marked]
        if len(marks) > rules.max_breakpoints:
            raise ValueError(f"{len(marks)} cache_control markers in one request; Anthropic allows "
                             f"{rules.max_breakpoints}")
        hashes = prefix_hashes(blocks)
        sizes = _cumulative(blocks)
        lifetime = rules.lifetime(cache_ttl)
        # below the minimum the API ignores a marker without a word
        ends = [end for end in marks if sizes[end] >= rules.min_prefix]
        hits = [self._lookup(hashes, end, at) for end in ends]  # all lookups see the cache as it was before
        for start in hits:
            if start:
                self.entries[hashes[start]] = at + lifetime
        for end in ends:
            self.entries[hashes[end]] = max(self.entries.get(hashes[end], 0.0), at + lifetime)
        return _priced(sizes, max(hits, default=0), max(ends, default=0), cache_ttl, rules)

    def _lookup(self, hashes: Sequence[bytes], end: int, at: float) -> int:
        """The longest live prefix among the ``lookback_blocks`` boundaries ending at ``end`` (0: a miss)."""
        for start in range(end, max(0, end - self.rules.lookback_blocks), -1):
            if self.live(hashes[start], at):
                return start
        return 0

    def send_best(self, blocks: Sequence[Block], at: float, cache_ttl: str) -> RequestCost:
        """The best any placement could do: read the longest live prefix of any earlier request, cache all."""
        rules = self.rules
        hashes = prefix_hashes(blocks)
        sizes = _cumulative(blocks)
        read_end = next((n for n in range(len(blocks), 0, -1) if self.live(hashes[n], at)), 0)
        expires = at + rules.lifetime(cache_ttl)
        for n in range(1, len(blocks) + 1):
            if sizes[n] >= rules.min_prefix:
                self.entries[hashes[n]] = expires
        write_end = len(blocks) if sizes[-1] >= rules.min_prefix else 0
        return _priced(sizes, read_end, write_end, cache_ttl, rules)


def _cumulative(blocks: Sequence[Block]) -> list[int]:
    sizes = [0]
    for block in blocks:
        sizes.append(sizes[-1] + block.tokens)
    return sizes


def _priced(sizes: list[int], read_end: int, write_end: int, cache_ttl: str, rules: CacheRules) -> RequestCost:
    read = sizes[read_end]
    written = max(0, sizes[write_end] - read)
    total = sizes[-1]
    cost = read * rules.read + written * rules.write_multiplier(cache_ttl) + (total - read - written)
    return RequestCost(total, read, written, cache_ttl, cost)


def uncached_cost(blocks: Sequence[Block]) -> RequestCost:
    """A request without caching pays every token at the base price."""
    total = sum(block.tokens for block in blocks)
    return RequestCost(total, 0, 0, None, float(total))
