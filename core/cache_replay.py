"""Replay a conversation turn by turn against the simulated prompt cache, with optional compaction.

Each assistant message in the conversation is one request that carries everything before it. Requests are
``turn_seconds`` apart, or ``user_gap_seconds`` when a user message arrived since the previous request (a person
answering). With ``compact_at``, the compactor runs whenever a request would pass that many tokens, and the replay
goes on from the compacted history, as an agent would. The same requests are priced three ways: without caching,
with ctxplug's breakpoints (system_and_3), and with the best any placement could do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ctxplug.cache_pricing import CacheRules, cache_rules
from ctxplug.cache_sim import PLACEMENTS, BlockCounter, PromptCache, RequestCost, request_blocks, uncached_cost
from ctxplug.cache_ttl import TtlChooser, resolve_ttl
from ctxplug.caching import MAX_BREAKPOINTS, apply_anthropic_cache_control, compaction_head_end
from ctxplug.messages import Message

Compactor = Callable[[list[Message]], list[Message]]
REQUESTS_AFTER_COMPACTION = 5


@dataclass(frozen=True)
class Request:
    """One API request of the replay: the history it carries and when it is sent."""

    source_index: int
    at: float
    messages: list[Message]


@dataclass(frozen=True)
class Compaction:
    """One compaction during the replay: before which request it ran and how much it removed."""

    number: int
    first_request: int
    tokens_before: int
    tokens_after: int


@dataclass
class Replay:
    """The requests of a replay and the compactions that shaped them."""

    requests: list[Request] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)


def build_requests(messages: Sequence[Message], *, size: Callable[[Sequence[Message]], int],
                   turn_seconds: float = 10.0, user_gap_seconds: float | None = None,
                   compact_at: int | None = None, compact: Compactor | None = None) -> Replay:
    """The request sequence an agent would have sent for this conversation, compacting past ``compact_at``."""
    if compact_at is not None and compact is None:
        raise ValueError("compact_at needs a compactor")
    user_gap = turn_seconds if user_gap_seconds is None else user_gap_seconds
    replay = Replay()
    active: list[Message] = []
    at = 0.0
    user_spoke = False
    for index, message in enumerate(messages):
        if message.get("role") == "assistant" and active:
            if replay.requests:
                at += user_gap if user_spoke else turn_seconds
            if compact is not None and compact_at is not None and (before := size(active)) > compact_at:
                compacted = list(compact(list(active)))
                if compacted != active:  # an engine that declined (or failed) changed nothing and cost nothing
                    replay.compactions.append(Compaction(len(replay.compactions) + 1, len(replay.requests),
                                                         before, size(compacted)))
                    active = compacted
            replay.requests.append(Request(index, at, list(active)))
            user_spoke = False
        user_spoke = user_spoke or message.get("role") == "user"
        active.append(message)
    return replay


@dataclass(frozen=True)
class Pricing:
    """How to price a replay: the model's rules, the TTL setting, the layout and whether tools get a marker."""

    rules: CacheRules
    cache_ttl: str = "5m"
    native_anthropic: bool = False
    tools: tuple[Mapping[str, Any], ...] = ()
    cache_tools: bool = False


def price_requests(requests: Sequence[Request], pricing: Pricing, placement: str, counter: BlockCounter, *,
                   warm: bool = False) -> list[RequestCost]:
    """What each request pays under one placement: ``system_and_3``, ``best`` or ``none`` (no caching).

    ``warm`` first sends the first request once, unpriced: the cache then holds that request as if it had been
    sent before, the steady state that a compaction's cost is measured against.
    """
    if warm and requests:
        return price_requests([requests[0], *requests], pricing, placement, counter)[1:]
    cache = PromptCache(pricing.rules)
    chooser = TtlChooser(pricing.rules) if pricing.cache_ttl == "auto" else None
    cache_tools = pricing.cache_tools and bool(pricing.tools)
    budget = MAX_BREAKPOINTS - (1 if cache_tools else 0)
    costs = []
    for request in requests:
        # the unmarked blocks: priced as they are by "none" and "best", and the size the TTL chooser sees; for
        # system_and_3 without a chooser they would be counted only to be thrown away
        plain = (request_blocks(request.messages, counter, pricing.tools)
                 if placement != "system_and_3" or chooser is not None else [])
        if placement == "none":
            costs.append(uncached_cost(plain))
            continue
        if chooser is not None:
            chooser.observe(request.at, sum(block.tokens for block in plain))
        ttl = resolve_ttl(pricing.cache_ttl, chooser)
        if placement == "best":
            costs.append(cache.send_best(plain, request.at, ttl))
            continue
        marked = apply_anthropic_cache_control(request.messages, ttl, pricing.native_anthropic,
                                               max_breakpoints=budget)
        blocks = request_blocks(marked, counter, pricing.tools, cache_tools=cache_tools)
        costs.append(cache.send(blocks, request.at, ttl))
    return costs


@dataclass(frozen=True)
class Totals:
    """Sums over the requests of one placement."""

    cost: float
    prompt_tokens: int
    read_tokens: int
    write_tokens: int
    ttl_5m_requests: int
    ttl_1h_requests: int

    @property
    def hit_rate(self) -> float:
        """Share of prompt tokens read from the cache."""
        return self.read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def totals(costs: Sequence[RequestCost]) -> Totals:
    """Add up one placement's request costs."""
    return Totals(sum(c.cost for c in costs), sum(c.prompt_tokens for c in costs), sum(c.read_tokens for c in costs),
                  sum(c.write_tokens for c in costs), sum(c.cache_ttl == "5m" for c in costs),
                  sum(c.cache_ttl == "1h" for c in costs))


@dataclass(frozen=True)
class CompactionCost:
    """What the first requests after one compaction paid, against two baselines and against not compacting.

    The *ideal* compaction keeps everything before its summary in the cache and pays only to write the summary
    and what follows it; ``penalty`` is the cost above that, the part a cache-aware compaction can avoid. The
    *warm* baseline has even the summary cached (no compaction can do that); ``cache_loss`` is the cost above it.
    ``kept_prefix_tokens`` is what comes before the summary; ``first_read_tokens`` is how much of the first request
    after the compaction the cache actually served.
    """

    number: int
    at_message: int
    tokens_before: int
    tokens_after: int
    requests: int
    cost: float
    ideal_cost: float
    warm_cost: float
    uncompacted_cost: float
    kept_prefix_tokens: int
    first_read_tokens: int
    first_cost: float
    first_ideal_cost: float

    @property
    def penalty(self) -> float:
        """Cost above the ideal compaction over the requests that follow it."""
        return self.cost - self.ideal_cost

    @property
    def first_penalty(self) -> float:
        """The first request's cost above the ideal compaction (where almost all of the penalty falls)."""
        return self.first_cost - self.first_ideal_cost

    @property
    def cache_loss(self) -> float:
        """Cost above a cache that already held the compacted history, summary included."""
        return self.cost - self.warm_cost


def _kept_prefix_tokens(request: Request, pricing: Pricing, counter: BlockCounter) -> int:
    """Tokens before the compaction summary (tools included): what an ideal compaction leaves cached."""
    head_end = compaction_head_end(request.messages)
    if head_end is None:
        return 0
    kept = sum(block.tokens for block in request_blocks(request.messages[:head_end], counter, pricing.tools))
    return kept if kept >= pricing.rules.min_prefix else 0


def compaction_costs(replay: Replay, cached: Sequence[RequestCost], pricing: Pricing, counter: BlockCounter,
                     uncompacted: Mapping[int, RequestCost]) -> list[CompactionCost]:
    """One `CompactionCost` per compaction, over the (at most five) requests that follow it."""
    found = []
    for compaction in replay.compactions:
        span = range(compaction.first_request,
                     min(compaction.first_request + REQUESTS_AFTER_COMPACTION, len(replay.requests)))
        if not span:
            continue
        first = replay.requests[span[0]]
        sources = [replay.requests[i].source_index for i in span]
        warm = price_requests([replay.requests[i] for i in span], pricing, "system_and_3", counter, warm=True)
        kept = min(_kept_prefix_tokens(first, pricing, counter), warm[0].read_tokens)
        write = pricing.rules.write_multiplier(warm[0].cache_ttl or "5m")
        # ideal first request: read the kept prefix, write the rest of what the warm request read
        first_ideal = warm[0].cost + (write - pricing.rules.read) * (warm[0].read_tokens - kept)
        warm_total = sum(c.cost for c in warm)
        found.append(CompactionCost(
            compaction.number, sources[0], compaction.tokens_before, compaction.tokens_after, len(span),
            sum(cached[i].cost for i in span), warm_total - warm[0].cost + first_ideal, warm_total,
            sum(uncompacted[s].cost for s in sources if s in uncompacted), kept, cached[span[0]].read_tokens,
            cached[span[0]].cost, first_ideal))
    return found


@dataclass(frozen=True)
class SimulationReport:
    """Everything `ctxplug cache simulate` prints: totals per placement and the cost of each compaction."""

    model_family: str
    cache_ttl: str
    requests: int
    placements: dict[str, Totals]
    compactions: list[CompactionCost]
    uncompacted: Totals | None
    input_usd_per_mtok: float | None

    def saving(self, placement: str = "system_and_3") -> float:
        """Share of the uncached input cost that a placement saves (0.75 means it pays a quarter)."""
        base = self.placements["none"].cost
        return 1.0 - self.placements[placement].cost / base if base else 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``--json``)."""
        data = asdict(self)
        for name, placement in self.placements.items():
            data["placements"][name]["hit_rate"] = placement.hit_rate
        for entry, compaction in zip(data["compactions"], self.compactions, strict=True):
            entry.update(penalty=compaction.penalty, first_penalty=compaction.first_penalty,
                         cache_loss=compaction.cache_loss)
        data["saving"] = self.saving()
        return data


def simulate(messages: Sequence[Message], *, model: str | None = None, rules: CacheRules | None = None,
             cache_ttl: str = "5m", turn_seconds: float = 10.0, user_gap_seconds: float | None = None,
             native_anthropic: bool = False, tools: Sequence[Mapping[str, Any]] = (), cache_tools: bool = False,
             compact_at: int | None = None, compact: Compactor | None = None,
             counter: BlockCounter | None = None) -> SimulationReport:
    """Replay a conversation and price it without caching, with system_and_3, and with the best placement."""
    rules = rules or cache_rules(model)
    counter = counter or BlockCounter(model=model)
    pricing = Pricing(rules, cache_ttl, native_anthropic, tuple(tools), cache_tools)

    def size(history: Sequence[Message]) -> int:
        return sum(block.tokens for block in request_blocks(history, counter, pricing.tools))

    def replayed(compactor: Compactor | None) -> Replay:
        return build_requests(messages, size=size, turn_seconds=turn_seconds, user_gap_seconds=user_gap_seconds,
                              compact_at=compact_at if compactor else None, compact=compactor)

    replay = replayed(compact)
    priced = {name: price_requests(replay.requests, pricing, name, counter) for name in PLACEMENTS}
    uncompacted_totals = None
    uncompacted: dict[int, RequestCost] = {}
    if replay.compactions:
        plain = replayed(None)
        plain_costs = price_requests(plain.requests, pricing, "system_and_3", counter)
        uncompacted = {r.source_index: c for r, c in zip(plain.requests, plain_costs, strict=True)}
        uncompacted_totals = totals(plain_costs)
    return SimulationReport(
        model_family=rules.family, cache_ttl=cache_ttl, requests=len(replay.requests),
        placements={name: totals(costs) for name, costs in priced.items()},
        compactions=compaction_costs(replay, priced["system_and_3"], pricing, counter, uncompacted),
        uncompacted=uncompacted_totals, input_usd_per_mtok=rules.input_usd_per_mtok)
