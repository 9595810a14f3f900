"""Prompt-caching benchmark on the shared corpus (issue 4), Sonnet 4.5 rules, 10 s between requests.

1. Linear replays: input cost with system_and_3 against no caching and against the best possible placement
   (every request reads the longest prefix any earlier request wrote). Target: within 2% of the best.
2. Compaction: the cost of the first five requests after each compaction above a warm cache, for ctxplug's
   compressor (system_note false, and the default that notes the compaction in the system prompt once) against a
   compaction that rewrites the system prompt every time. Target: penalty at most a third of the rewrite's.
3. TTL with 6-minute gaps: session cost under 5m, 1h and auto. Target: auto within 5% of the better fixed TTL.

Run: .venv/bin/python bench/bench_cache.py [--corpus DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxplug import load_config, load_engine
from ctxplug.cache_replay import Compactor, SimulationReport, simulate
from ctxplug.cache_sim import BlockCounter, request_blocks

MODEL = "claude-sonnet-4-5"
TURN_SECONDS = 10.0
GAP_SECONDS = 360.0
LONG_SESSION_REQUESTS = 20
COMPACT_AT_SHARE = 0.5  # compact when a request passes half the session's final size: one to three compactions
Message = dict[str, Any]
Session = tuple[str, list[Message], list[dict[str, Any]]]


def load_sessions(corpus: Path) -> list[Session]:
    """Every trajectory (id, messages, tools), plus the tau-bench ones joined into one long session."""
    sessions: list[Session] = []
    for path in sorted((corpus / "trajectories").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            sessions.append((f"{path.stem}:{record['id']}", record["messages"], record.get("tools") or []))
    tau = [s for s in sessions if s[0].startswith("tau_bench_airline:")]
    if tau:
        sessions.append(("tau_bench_airline:all-4-joined", join_sessions([s[1] for s in tau]), []))
    return sessions


def join_sessions(conversations: list[list[Message]]) -> list[Message]:
    """One long session: the first system prompt, then every conversation's turns with renumbered call ids."""
    joined: list[Message] = [conversations[0][0]] if conversations[0][0]["role"] == "system" else []
    for number, messages in enumerate(conversations):
        for message in messages:
            if message["role"] == "system":
                continue
            copy = dict(message)
            if copy.get("tool_calls"):
                copy["tool_calls"] = [{**c, "id": f"j{number}_{c['id']}"} for c in copy["tool_calls"]]
            if copy.get("tool_call_id"):
                copy["tool_call_id"] = f"j{number}_{copy['tool_call_id']}"
            joined.append(copy)
    return joined


def compressor(compact_at: int, *, system_note: bool) -> Compactor:
    """ctxplug's builtin compressor (offline extractive summaries) with its threshold at ``compact_at`` tokens."""
    config = load_config({"compression": {"system_note": system_note}})
    context_length = int(compact_at / config.compression.threshold)
    host = load_engine(config, model=MODEL, context_length=context_length)
    return lambda messages: list(host.compress(messages, force=True))


def rewriting(inner: Compactor, original_system: Any) -> Compactor:
    """A compaction as the reference does it: the system prompt is rebuilt (a note that changes) every time."""
    count = [0]

    def compact(messages: list[Message]) -> list[Message]:
        result = inner(messages)
        if result != messages and result and result[0]["role"] == "system":
            count[0] += 1
            note = f"\n\n[earlier turns compacted; compaction number {count[0]}]"
            result = [{**result[0], "content": f"{original_system}{note}"}, *result[1:]]
        return result

    return compact


def linear(sessions: list[Session], counter: BlockCounter) -> list[str]:
    lines = ["| session | requests | uncached | system_and_3 | best | system_and_3 / best |",
             "|---|---|---|---|---|---|"]
    sums = {"none": 0.0, "system_and_3": 0.0, "best": 0.0}
    worst = 0.0
    for name, messages, tools in sessions:
        report = simulate(messages, model=MODEL, tools=tools, turn_seconds=TURN_SECONDS, counter=counter)
        p = {k: report.placements[k].cost for k in sums}
        for key in sums:
            sums[key] += p[key]
        worst = max(worst, p["system_and_3"] / p["best"])
        lines.append(f"| {name} | {report.requests} | {p['none']:,.0f} | {p['system_and_3'] / p['none']:.1%} | "
                     f"{p['best'] / p['none']:.1%} | {p['system_and_3'] / p['best']:.4f} |")
    lines.append(f"| **all** | | {sums['none']:,.0f} | {sums['system_and_3'] / sums['none']:.1%} | "
                 f"{sums['best'] / sums['none']:.1%} | {sums['system_and_3'] / sums['best']:.4f} |")
    lines.append(f"\nworst session: system_and_3 costs {worst - 1:.2%} more than the best placement (target <= 2%)")
    return lines


def compaction(sessions: list[Session], counter: BlockCounter) -> list[str]:
    variants: dict[str, Callable[[int, Any], Compactor]] = {
        "ctxplug, system_note false": lambda n, _: compressor(n, system_note=False),
        "ctxplug, default (note once)": lambda n, _: compressor(n, system_note=True),
        "rewrites the system prompt": lambda n, system: rewriting(compressor(n, system_note=False), system),
    }
    # per variant: penalty over five requests, first-request penalty, cache loss, compactions, tokens read
    totals = {name: [0.0, 0.0, 0.0, 0, 0] for name in variants}
    lines = ["| session | compact at | compactions | "
             + " | ".join(f"{v}: penalty / cache loss" for v in variants) + " |", "|---|---|---|---|---|---|"]
    for name, messages, tools in sessions:
        size = sum(b.tokens for b in request_blocks(messages, counter, tools))
        if len([m for m in messages if m["role"] == "assistant"]) < 20:
            continue
        compact_at = max(6_000, int(size * COMPACT_AT_SHARE))
        cells = []
        count = 0
        for variant, make in variants.items():
            report: SimulationReport = simulate(messages, model=MODEL, tools=tools, turn_seconds=TURN_SECONDS,
                                                counter=counter, compact_at=compact_at,
                                                compact=make(compact_at, messages[0]["content"]))
            count = len(report.compactions)
            row = totals[variant]
            row[0] += sum(c.penalty for c in report.compactions)
            row[1] += sum(c.first_penalty for c in report.compactions)
            row[2] += sum(c.cache_loss for c in report.compactions)
            row[3] += count
            row[4] += sum(c.first_read_tokens for c in report.compactions)
            cells.append(f"{sum(c.penalty for c in report.compactions):,.0f} / "
                         f"{sum(c.cache_loss for c in report.compactions):,.0f}")
        lines.append(f"| {name} | {compact_at:,} | {count} | " + " | ".join(cells) + " |")
    rewrite = totals["rewrites the system prompt"]
    lines.append("")
    for variant, (five, first, loss, count, read) in totals.items():
        lines.append(f"- {variant}: {count} compactions; penalty above an ideal compaction, first five requests "
                     f"{five:,.0f} = {five / rewrite[0]:.2f} of the rewrite's (first request alone "
                     f"{first / rewrite[1]:.2f}); cache loss above a fully warm cache {loss:,.0f} = "
                     f"{loss / rewrite[2]:.2f}; {read / max(count, 1):,.0f} tokens read by the first request")
    return lines


def ttl(sessions: list[Session], counter: BlockCounter) -> list[str]:
    lines = []
    for label, turn, gap in (("6-minute gaps before each user turn, 10 s tool loops", TURN_SECONDS, GAP_SECONDS),
                             ("6 minutes between every request", GAP_SECONDS, GAP_SECONDS),
                             ("10 s between every request (no gaps)", TURN_SECONDS, TURN_SECONDS)):
        sums = {"5m": 0.0, "1h": 0.0, "auto": 0.0, "none": 0.0}
        worst = worst_long = 0.0
        for _, messages, tools in sessions:
            costs = {}
            for setting in ("5m", "1h", "auto"):
                report = simulate(messages, model=MODEL, tools=tools, cache_ttl=setting, turn_seconds=turn,
                                  user_gap_seconds=gap, counter=counter)
                costs[setting] = report.placements["system_and_3"].cost
                sums["none"] += report.placements["none"].cost / 3
            for key, value in costs.items():
                sums[key] += value
            ratio = costs["auto"] / min(costs["5m"], costs["1h"])
            worst = max(worst, ratio)
            if report.requests >= LONG_SESSION_REQUESTS:
                worst_long = max(worst_long, ratio)
        best = min(sums["5m"], sums["1h"])
        lines.append(f"- {label}: of uncached cost 5m {sums['5m'] / sums['none']:.1%}, 1h "
                     f"{sums['1h'] / sums['none']:.1%}, auto {sums['auto'] / sums['none']:.1%}; auto / better "
                     f"fixed TTL = {sums['auto'] / best:.3f} over the corpus; worst session {worst:.3f}, worst of "
                     f"those with {LONG_SESSION_REQUESTS}+ requests {worst_long:.3f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpus"))
    args = parser.parse_args()
    sessions = load_sessions(args.corpus)
    counter = BlockCounter(model=MODEL)
    started = time.perf_counter()
    for title, part in (("Linear replays", linear), ("Compaction penalty", compaction), ("TTL", ttl)):
        print(f"\n### {title}\n")
        print("\n".join(part(sessions, counter)))
    print(f"\n({len(sessions)} sessions, {time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
