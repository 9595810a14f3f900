"""Cache policy: Claude detection in every spelling, the provider matrix, the status line, and the auto TTL."""

from __future__ import annotations

import pytest

from ctxplug.cache_policy import resolve_cache_policy
from ctxplug.cache_pricing import cache_rules
from ctxplug.cache_ttl import TtlChooser, resolve_ttl
from ctxplug.errors import ConfigError
from ctxplug.models import canonical_claude_name, is_claude_model


@pytest.mark.parametrize(("model", "family"), [
    ("claude-sonnet-4-5", "claude-sonnet-4-5"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
    ("anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet"),
    ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
    ("us.anthropic.claude-3-5-haiku-20241022-v1:0", "claude-3-5-haiku"),
    ("global.anthropic.claude-opus-4-5-20251101-v1:0", "claude-opus-4-5"),
    ("claude-opus-4-1@20250805", "claude-opus-4-1"),
    ("Claude-3-Opus-Latest", "claude-3-opus"),
])
def test_claude_names_in_all_forms(model: str, family: str) -> None:
    assert canonical_claude_name(model) == family


@pytest.mark.parametrize("model", ["gpt-4o", "openai/gpt-5.5", "deepseek-chat", "qwen/qwen3-coder", "", None])
def test_other_models_are_not_claude(model: str | None) -> None:
    assert not is_claude_model(model)


@pytest.mark.parametrize(("model", "provider", "enabled", "native"), [
    ("anthropic/claude-sonnet-4.5", "openrouter", True, False),
    ("claude-sonnet-4-5-20250929", "anthropic", True, True),
    ("anthropic/claude-sonnet-4.5", None, True, False),      # the anthropic/ spelling is OpenRouter's
    ("claude-sonnet-4-5", None, True, True),                # a bare id is the Anthropic API's
    ("anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock", False, False),
    ("claude-sonnet-4-5@20250929", "vertex", False, False),
    ("claude-sonnet-4-5@20250929", None, False, False),
    ("gpt-4o", "openrouter", False, False),
    ("gpt-4o", "openai", False, False),
])
def test_policy_matrix(model: str, provider: str | None, enabled: bool, native: bool) -> None:
    policy = resolve_cache_policy(model, provider)
    assert (policy.enabled, policy.native_anthropic) == (enabled, native)


def test_status_lines_say_state_route_ttl_and_reason() -> None:
    assert resolve_cache_policy("anthropic/claude-sonnet-4.5", "openrouter").status_line() == \
        "💾 Prompt caching: ENABLED (Claude via OpenRouter, 5m TTL)"
    assert resolve_cache_policy("claude-opus-4-5", "anthropic", "1h").status_line() == \
        "💾 Prompt caching: ENABLED (Claude via Anthropic, 1h TTL)"
    assert resolve_cache_policy("gpt-4o", "openai").status_line() == \
        "💾 Prompt caching: DISABLED (gpt-4o is not a Claude model; cache_control markers are for Claude)"
    assert resolve_cache_policy("claude-sonnet-4-5", "bedrock").status_line() == (
        "💾 Prompt caching: DISABLED (provider bedrock does not honour cache_control; only anthropic and "
        "openrouter do)")


def test_policy_rejects_unknown_ttl_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"prompt_caching\.cache_ttl.*5m, 1h, auto"):
        resolve_cache_policy("claude-sonnet-4-5", "anthropic", "2h")


@pytest.mark.parametrize(("model", "minimum"), [
    ("anthropic/claude-sonnet-4.5", 1024), ("claude-opus-4-1", 1024), ("claude-opus-4-20250514", 1024),
    ("claude-3-5-haiku-20241022", 2048), ("claude-3-haiku-20240307", 2048),
    ("claude-opus-4-5", 4096), ("us.anthropic.claude-haiku-4-5-20251001-v1:0", 4096),
])
def test_minimum_cacheable_prefix_table(model: str, minimum: int) -> None:
    assert cache_rules(model).min_prefix == minimum


def _fed(gaps: list[float], start: int = 10_000, step: int = 500) -> TtlChooser:
    chooser = TtlChooser(cache_rules("claude-sonnet-4-5"))
    at, tokens = 0.0, start
    chooser.observe(at, tokens)
    for gap in gaps:
        at, tokens = at + gap, tokens + step
        chooser.observe(at, tokens)
    return chooser


def test_auto_ttl_bets_on_1h_until_quick_requests_say_5m() -> None:
    assert TtlChooser().choose() == "1h"  # a wrong 1h bet costs 0.75·P once, a wrong 5m bet 1.15·P
    assert _fed([10.0]).choose() == "5m"
    assert _fed([10.0] * 20).choose() == "5m"


def test_auto_ttl_switches_to_1h_when_gaps_expire_the_5m_cache() -> None:
    assert _fed([360.0] * 3).choose() == "1h"
    # one 6-minute gap among many quick requests already pays for the dearer 1h writes (1.15·P ≫ 0.75·Δ)
    assert _fed([10.0] * 20 + [360.0]).choose() == "1h"
    # gaps beyond an hour expire both; then the cheaper write wins
    assert _fed([4000.0] * 3).choose() == "5m"


def test_auto_ttl_break_even_matches_the_documented_formula() -> None:
    chooser = _fed([10.0, 360.0])
    # the next request's prefix is the 11,000 tokens just sent; each observed gap (10 s, 6 min) may come again,
    # with 500 new tokens. 10 s: both read P; 5m writes Δ at 1.25, 1h at 2. 6 min: the 5m entry is gone.
    assert chooser.expected_cost("5m") == pytest.approx(0.1 * 11_000 + 1.25 * 500 + 1.25 * 11_500)
    assert chooser.expected_cost("1h") == pytest.approx(2 * (0.1 * 11_000 + 2 * 500))


def test_resolve_ttl_passes_fixed_settings_through() -> None:
    assert resolve_ttl("1h", None) == "1h"
    assert resolve_ttl("auto", _fed([360.0] * 3)) == "1h"
    with pytest.raises(ValueError, match="TtlChooser"):
        resolve_ttl("auto", None)
