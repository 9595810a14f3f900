"""``prompt_caching.cache_ttl: auto``: choose the 5-minute or the 1-hour cache from the gaps between requests.

The break-even, per request, with P the prefix the previous request cached and Δ the tokens this request adds
(prices in base input tokens; w5 = 1.25, w1h = 2, r = 0.1):

=====================  ======================  ======================
gap g before request   5m TTL                  1h TTL
=====================  ======================  ======================
g < 5 min              r·P + w5·Δ              r·P + w1h·Δ
5 min <= g < 1 h       w5·(P + Δ)  (expired)   r·P + w1h·Δ
g >= 1 h               w5·(P + Δ)              w1h·(P + Δ)
=====================  ======================  ======================

So a short gap makes 1h cost (w1h − w5)·Δ = 0.75·Δ more, and a gap between 5 minutes and an hour makes 5m cost
(w5 − r)·P − (w1h − w5)·Δ = 1.15·P − 0.75·Δ more. Since P is usually far larger than Δ (the whole conversation
against one new turn), one gap of a few minutes outweighs many quick tool-loop requests: with P = 20Δ a single
6-minute gap pays for about 30 short ones. The chooser prices the next request both ways, with P the prompt just
sent and each of the recent gaps (and its Δ) as likely to come again, and picks the cheaper TTL for the next
write; it never looks at whether the cache is warm to delay anything else
(deferring work while the cache is hot livelocked lossless-claw, see docs/caching.md).

Before any gap has been seen it bets on 1h: if the bet is wrong, a 1h write costs (w1h − w5)·P = 0.75·P more
than needed, once; a wrong 5m bet loses the whole prefix at the first long gap, (w5 − r)·P = 1.15·P. The smaller
worst case wins, and one quick follow-up request is enough evidence to move to 5m.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ctxplug.cache_pricing import CacheRules, cache_rules

RECENT_GAPS = 24


@dataclass(frozen=True)
class _Step:
    gap: float
    new_tokens: int


class TtlChooser:
    """Stateful chooser for ``cache_ttl: auto``: feed it each request's time and size, ask it which TTL to write."""

    def __init__(self, rules: CacheRules | None = None, *, window: int = RECENT_GAPS, initial: str = "1h") -> None:
        self.rules = rules or cache_rules()
        self.initial = initial
        self._steps: deque[_Step] = deque(maxlen=window)
        self._last: tuple[float, int] | None = None

    def observe(self, at: float, prompt_tokens: int) -> None:
        """Record one request sent at ``at`` (seconds, any epoch) carrying ``prompt_tokens``."""
        if self._last is not None:
            last_at, last_tokens = self._last
            self._steps.append(_Step(max(0.0, at - last_at), max(0, prompt_tokens - last_tokens)))
        self._last = (at, prompt_tokens)

    def expected_cost(self, cache_ttl: str) -> float:
        """What the next request would cost with this TTL, summed over the recent gaps (the table above).

        The prefix P is the prompt just sent (what this request's markers cache for the next one); the gaps and
        the growth Δ are the ones observed, each as likely to come again.
        """
        rules = self.rules
        write = rules.write_multiplier(cache_ttl)
        lifetime = rules.lifetime(cache_ttl)
        prefix = self._last[1] if self._last else 0
        total = 0.0
        for step in self._steps:
            if step.gap < lifetime:
                total += rules.read * prefix + write * step.new_tokens
            else:
                total += write * (prefix + step.new_tokens)
        return total

    def choose(self) -> str:
        """The TTL for the next request's markers: the initial bet until a gap has been seen, then the cheaper."""
        if not self._steps:
            return self.initial
        return "1h" if self.expected_cost("1h") < self.expected_cost("5m") else "5m"


def resolve_ttl(setting: str, chooser: TtlChooser | None) -> str:
    """The concrete TTL for a request: the configured one, or the chooser's pick for ``auto``."""
    if setting != "auto":
        return setting
    if chooser is None:
        raise ValueError("cache_ttl 'auto' needs a TtlChooser fed with the request times")
    return chooser.choose()
