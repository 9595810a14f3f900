"""The cache simulator against hand-computed cases: lookback, minimum prefix, expiry, refresh, breakpoint cap."""

from __future__ import annotations

from typing import Any

import pytest

from ctxplug.cache_pricing import cache_rules
from ctxplug.cache_sim import Block, BlockCounter, PromptCache, message_blocks, request_blocks
from ctxplug.errors import ConfigError

SONNET = cache_rules("claude-sonnet-4-5")  # minimum 1,024 tokens, 20-block lookback, 5m = 300 s
CHARS = BlockCounter(len, framing=0)  # one token per character, so sizes are visible in the test data


def _blocks(count: int, tokens: int, marked: set[int], prefix: str = "b") -> list[Block]:
    """``count`` blocks of ``tokens`` each; ``marked`` holds 1-based block numbers that carry a marker."""
    return [Block(f"{prefix}{n}", tokens, n in marked) for n in range(1, count + 1)]


@pytest.mark.parametrize(("cached_at", "read"), [(11, 11 * 200), (10, 0)])
def test_lookback_reaches_20_boundaries_back_and_not_21(cached_at: int, read: int) -> None:
    cache = PromptCache(SONNET)
    cache.send(_blocks(30, 200, {cached_at}), 0.0, "5m")
    # a marker on block 30 checks blocks 30, 29, ..., 11: the 20th boundary hits, the 21st (block 10) misses
    cost = cache.send(_blocks(30, 200, {30}), 10.0, "5m")
    assert cost.read_tokens == read
    assert cost.write_tokens == 30 * 200 - read


@pytest.mark.parametrize(("size", "first_cost", "second_cost"), [
    (1023, 1023.0, 1023.0),              # below the minimum the marker is ignored: no write, no read
    (1024, 1024 * 1.25, 1024 * 0.1),     # at the minimum: written at 1.25x, then read at 0.1x
])
def test_minimum_cacheable_prefix(size: int, first_cost: float, second_cost: float) -> None:
    cache = PromptCache(SONNET)
    assert cache.send([Block("x", size, True)], 0.0, "5m").cost == pytest.approx(first_cost)
    assert cache.send([Block("x", size, True)], 1.0, "5m").cost == pytest.approx(second_cost)


@pytest.mark.parametrize(("ttl", "lifetime"), [("5m", 300.0), ("1h", 3600.0)])
def test_entry_expires_at_exactly_its_ttl(ttl: str, lifetime: float) -> None:
    blocks = [Block("x", 2000, True)]
    warm = PromptCache(SONNET)
    warm.send(blocks, 0.0, ttl)
    assert warm.send(blocks, lifetime - 0.001, ttl).read_tokens == 2000
    cold = PromptCache(SONNET)
    cold.send(blocks, 0.0, ttl)
    expired = cold.send(blocks, lifetime, ttl)
    assert (expired.read_tokens, expired.write_tokens) == (0, 2000)
    assert expired.cost == pytest.approx(2000 * SONNET.write_multiplier(ttl))


def test_a_hit_refreshes_the_ttl() -> None:
    cache = PromptCache(SONNET)
    blocks = [Block("x", 2000, True)]
    cache.send(blocks, 0.0, "5m")
    assert cache.send(blocks, 200.0, "5m").read_tokens == 2000
    # 450 s after the write but 250 s after the hit: still there
    assert cache.send(blocks, 450.0, "5m").read_tokens == 2000
    assert cache.send(blocks, 750.0, "5m").read_tokens == 0


def test_refresh_of_an_entry_found_by_lookback() -> None:
    cache = PromptCache(SONNET)
    cache.send(_blocks(5, 300, {5}), 0.0, "5m")
    cache.send(_blocks(8, 300, {8}), 200.0, "5m")  # hits the entry at block 5 through the lookback
    # at 400 s the block-5 entry lives only because the hit at 200 s refreshed it
    assert cache.send(_blocks(5, 300, {5}), 400.0, "5m").read_tokens == 1500


def test_prices_of_write_read_and_uncached_tokens() -> None:
    cache = PromptCache(SONNET)
    first = cache.send(_blocks(4, 600, {2}), 0.0, "1h")
    assert (first.read_tokens, first.write_tokens, first.uncached_tokens) == (0, 1200, 1200)
    assert first.cost == pytest.approx(1200 * 2.0 + 1200)
    second = cache.send(_blocks(4, 600, {4}), 5.0, "1h")
    assert (second.read_tokens, second.write_tokens) == (1200, 1200)
    assert second.cost == pytest.approx(1200 * 0.1 + 1200 * 2.0)


def test_lookups_see_the_cache_as_it_was_before_the_request() -> None:
    # two markers in one request: the second must not read what the first writes in the same request
    cost = PromptCache(SONNET).send(_blocks(4, 600, {2, 4}), 0.0, "5m")
    assert (cost.read_tokens, cost.write_tokens) == (0, 2400)


def test_more_than_four_breakpoints_is_refused() -> None:
    with pytest.raises(ValueError, match="5 cache_control markers"):
        PromptCache(SONNET).send(_blocks(6, 500, {1, 2, 3, 4, 5}), 0.0, "5m")


def test_best_placement_reads_the_longest_live_prefix_anywhere() -> None:
    cache = PromptCache(SONNET)
    cache.send_best(_blocks(40, 100, set()), 0.0, "5m")
    cost = cache.send_best(_blocks(35, 100, set()) + _blocks(3, 100, set(), prefix="new"), 10.0, "5m")
    assert cost.read_tokens == 3500  # no lookback limit, no breakpoint cap


def test_unknown_ttl_is_the_config_error() -> None:
    with pytest.raises(ConfigError, match=r"prompt_caching\.cache_ttl"):
        PromptCache(SONNET).send([Block("x", 2000, True)], 0.0, "auto")


def test_message_blocks_follow_anthropic_conversion() -> None:
    assistant: dict[str, Any] = {"role": "assistant", "content": "  ", "cache_control": {"type": "ephemeral"},
                                 "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}},
                                                {"id": "b", "function": {"name": "g", "arguments": "{}"}}]}
    blocks = message_blocks(assistant, CHARS)
    assert [b.key.split("|")[0] for b in blocks] == ["tool_use", "tool_use"]  # blank text makes no block
    assert [b.marked for b in blocks] == [False, True]  # a message-level marker lands on the last block
    wrapped = message_blocks({"role": "user", "content": [{"type": "text", "text": "hello",
                                                           "cache_control": {"type": "ephemeral"}}]}, CHARS)
    plain = message_blocks({"role": "user", "content": "hello"}, CHARS)
    assert wrapped[0].key == plain[0].key and wrapped[0].tokens == 5  # a marker does not change the prefix
    tool = message_blocks({"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "out"}]}, CHARS)
    assert len(tool) == 1 and tool[0].key.startswith("tool_result|a|")


def test_request_blocks_put_tools_first_and_can_mark_the_last_tool() -> None:
    tools = [{"name": "a"}, {"name": "b"}]
    blocks = request_blocks([{"role": "system", "content": "S"}, {"role": "user", "content": "u"}], CHARS, tools,
                            cache_tools=True)
    assert [b.key.split("|")[0] for b in blocks] == ["tool", "tool", "system", "user"]
    assert [b.marked for b in blocks] == [False, True, False, False]
