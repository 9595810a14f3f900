"""Anthropic's cache rules per model, read from ``data/anthropic_cache.json`` (data, so a new model is one line).

Prices are multiples of the model's base input price: a 5-minute write costs 1.25×, a 1-hour write 2×, a read
0.1×. Below the model's minimum cacheable prefix a marker is silently ignored by the API.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ctxplug.caching import cache_marker
from ctxplug.models import canonical_claude_name


@dataclass(frozen=True)
class CacheRules:
    """What the cache simulator needs to know about one model."""

    family: str
    min_prefix: int
    write_5m: float
    write_1h: float
    read: float
    ttl_seconds: dict[str, float]
    lookback_blocks: int
    max_breakpoints: int
    input_usd_per_mtok: float | None = None

    def write_multiplier(self, cache_ttl: str) -> float:
        """Price of writing one token to the cache with this TTL, in base input tokens."""
        cache_marker(cache_ttl)  # rejects anything but 5m/1h with the configuration error
        return self.write_5m if cache_ttl == "5m" else self.write_1h

    def lifetime(self, cache_ttl: str) -> float:
        """Seconds an entry written with this TTL lives after its last write or hit."""
        cache_marker(cache_ttl)
        return self.ttl_seconds[cache_ttl]

    def usd(self, base_tokens: float) -> float | None:
        """Dollars for a cost expressed in base input tokens, when the table has a price for the model."""
        if self.input_usd_per_mtok is None:
            return None
        return base_tokens * self.input_usd_per_mtok / 1_000_000


@cache
def _table() -> dict[str, Any]:
    text = resources.files("ctxplug").joinpath("data/anthropic_cache.json").read_text(encoding="utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


def _family_of(model: str | None, families: dict[str, Any], default: str) -> str:
    name = canonical_claude_name(model)
    if name is None:
        return default
    matches = [f for f in families if name == f or name.startswith(f + "-")]
    return max(matches, key=len) if matches else default


def cache_rules(model: str | None = None, *, min_prefix: int | None = None) -> CacheRules:
    """The rules for a model (by any spelling of its name); an unknown model gets the default family's rules."""
    table = _table()
    families: dict[str, Any] = table["families"]
    family = _family_of(model, families, table["default_family"])
    entry = families[family]
    multipliers = table["multipliers"]
    return CacheRules(
        family=family,
        min_prefix=entry["min_prefix"] if min_prefix is None else min_prefix,
        write_5m=multipliers["write_5m"],
        write_1h=multipliers["write_1h"],
        read=multipliers["read"],
        ttl_seconds={ttl: float(seconds) for ttl, seconds in table["ttl_seconds"].items()},
        lookback_blocks=table["lookback_blocks"],
        max_breakpoints=table["max_breakpoints"],
        input_usd_per_mtok=entry.get("input_usd_per_mtok"),
    )
