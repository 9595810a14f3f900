"""``ctxplug cache plan SESSION`` and ``ctxplug cache simulate SESSION``: where breakpoints land, what caching costs.

``plan`` shows the markers `apply_anthropic_cache_control` would place on the whole conversation. ``simulate``
replays the conversation request by request under Anthropic's cache rules (docs/caching.md lists every
assumption) and prints the input cost without caching, with ctxplug's breakpoints and with the best possible
placement; with ``--compact-at`` the configured engine compacts the history whenever a request would pass that
many tokens, and each compaction's cost is shown.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from ctxplug.cache_policy import TTL_CHOICES
from ctxplug.cache_pricing import cache_rules
from ctxplug.cache_replay import Compactor, SimulationReport, simulate
from ctxplug.cache_sim import BlockCounter, message_blocks
from ctxplug.caching import apply_anthropic_cache_control, breakpoint_indices, compaction_head_end
from ctxplug.cli import config_from_args
from ctxplug.config import Config
from ctxplug.conversation_io import read_conversation
from ctxplug.errors import ConversationError
from ctxplug.messages import SYSTEM_ROLES, Message

DEFAULT_MODEL = "claude-sonnet-4-5"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``cache`` command group (``plan``, ``simulate``)."""
    parser = subparsers.add_parser("cache", help="Anthropic prompt caching: breakpoint plan and cost simulation",
                                   description="Show where cache breakpoints land, or replay a session to see "
                                               "what prompt caching (and compaction) cost and save.")
    commands = parser.add_subparsers(dest="cache_command", metavar="{plan,simulate}", required=True)

    plan = commands.add_parser("plan", help="show where the cache breakpoints land on a conversation")
    plan.add_argument("session", metavar="SESSION", help="conversation file (JSON list, object or JSONL)")
    plan.add_argument("--native", action="store_true", help="native Anthropic layout (default: the OpenRouter "
                                                           "envelope)")
    plan.add_argument("--model", metavar="M", default=DEFAULT_MODEL, help="tokenizer and minimum prefix to use")
    plan.add_argument("--json", action="store_true", help="print a JSON object")
    plan.set_defaults(handler=run_plan)

    sim = commands.add_parser("simulate", help="replay a session under Anthropic's cache rules and price it")
    sim.add_argument("session", metavar="SESSION", help="conversation file (JSON list, object or JSONL)")
    sim.add_argument("--ttl", choices=TTL_CHOICES, default=None,
                     help="cache TTL (default: prompt_caching.cache_ttl of the configuration)")
    sim.add_argument("--turn-seconds", type=_non_negative, default=10.0, metavar="S",
                     help="seconds between requests (default 10)")
    sim.add_argument("--user-gap-seconds", type=_non_negative, default=None, metavar="G",
                     help="seconds before a request that follows a new user message (default: --turn-seconds)")
    sim.add_argument("--model", metavar="M", default=DEFAULT_MODEL,
                     help=f"Claude model whose minimum prefix and price apply (default {DEFAULT_MODEL})")
    sim.add_argument("--native", action="store_true", help="native Anthropic layout (default: OpenRouter's)")
    sim.add_argument("--tools", metavar="FILE", help="JSON list of the OpenAI tool schemas sent with each request")
    sim.add_argument("--cache-tools", action="store_true", help="spend one breakpoint on the tools array")
    sim.add_argument("--compact-at", type=int, metavar="N",
                     help="run the configured engine whenever a request would pass N tokens")
    sim.add_argument("--json", action="store_true", help="print a JSON object")
    sim.set_defaults(handler=run_simulate)


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected zero or more seconds, got {value}")
    return value


def plan_facts(messages: Sequence[Message], *, native: bool, model: str) -> dict[str, Any]:
    """Each breakpoint with its message, kind and the prefix it caches, plus the messages that cannot carry one."""
    counter = BlockCounter(model=model)
    marked = apply_anthropic_cache_control(messages, "5m", native)
    indices = breakpoint_indices(messages, native_anthropic=native)
    head_end = compaction_head_end(messages)
    prefix = 0
    sizes = []
    for message in marked:
        prefix += sum(block.tokens for block in message_blocks(message, counter))
        sizes.append(prefix)
    minimum = cache_rules(model).min_prefix
    breakpoints = []
    for number, index in enumerate(indices, start=1):
        kind = ("system prompt" if messages[index].get("role") in SYSTEM_ROLES
                else "kept head" if head_end is not None and index < head_end else "rolling window")
        breakpoints.append({"number": number, "index": index, "role": messages[index].get("role"), "kind": kind,
                            "prefix_tokens": sizes[index], "cached": sizes[index] >= minimum})
    return {"messages": len(messages), "layout": "native Anthropic" if native else "OpenRouter envelope",
            "model_family": cache_rules(model).family, "min_prefix": minimum, "prompt_tokens": prefix,
            "breakpoints": breakpoints}


def run_plan(args: argparse.Namespace) -> int:
    """Print where the breakpoints land on ``args.session``."""
    facts = plan_facts(read_conversation(args.session), native=args.native, model=args.model)
    if args.json:
        print(json.dumps({"session": args.session, **facts}, indent=2))
        return 0
    print(f"{args.session}: {facts['messages']:,} messages, ~{facts['prompt_tokens']:,} tokens, "
          f"{facts['layout']} layout, {len(facts['breakpoints'])} of 4 breakpoints")
    for point in facts["breakpoints"]:
        note = "" if point["cached"] else f"  (below the {facts['min_prefix']:,}-token minimum: ignored)"
        print(f"  #{point['number']} message {point['index']:>5} {point['role']:<9} {point['kind']:<14} "
              f"caches the first {point['prefix_tokens']:>9,} tokens{note}")
    return 0


def _compactor(config: Config, model: str, compact_at: int) -> Compactor:
    """The configured engine, sized so that its threshold is ``compact_at``, as a messages -> messages function."""
    from ctxplug.registry import load_engine

    context_length = max(1, int(compact_at / config.compression.threshold))
    host = load_engine(config, model=model, provider=None, context_length=context_length)

    def compact(messages: list[Message]) -> list[Message]:
        return list(host.compress(messages, force=True))

    return compact


def _read_tools(path: str | None) -> list[dict[str, Any]]:
    if path is None:
        return []
    try:
        with open(path, encoding="utf-8") as handle:
            tools = json.load(handle)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConversationError(f"cannot read the tool schemas: {exc}", source=path) from None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise ConversationError("expected a JSON list of tool schemas", source=path)
    return tools


def run_simulate(args: argparse.Namespace) -> int:
    """Replay ``args.session`` and print what caching costs and saves."""
    messages = read_conversation(args.session)
    config = config_from_args(args)
    ttl = args.ttl or config.prompt_caching.cache_ttl
    compact = _compactor(config, args.model, args.compact_at) if args.compact_at else None
    report = simulate(messages, model=args.model, cache_ttl=ttl, turn_seconds=args.turn_seconds,
                      user_gap_seconds=args.user_gap_seconds, native_anthropic=args.native,
                      tools=_read_tools(args.tools), cache_tools=args.cache_tools, compact_at=args.compact_at,
                      compact=compact)
    if args.json:
        print(json.dumps({"session": args.session, **report.to_dict()}, indent=2))
    else:
        gap = args.turn_seconds if args.user_gap_seconds is None else args.user_gap_seconds
        print(f"{args.session}: {report.requests:,} requests, {report.model_family} rules, {ttl} TTL, "
              f"{args.turn_seconds:g} s between requests, {gap:g} s after a user message")
        print("\n".join(simulation_lines(report)))
    return 0


def simulation_lines(report: SimulationReport) -> list[str]:
    """The human report: cost per placement, the saving, and each compaction's cost."""
    none = report.placements["none"].cost
    usd = report.input_usd_per_mtok
    lines = [f"  {'placement':<15} {'input cost':>12} {'dollars':>9} {'of uncached':>12} {'read from cache':>16}"]
    names = {"none": "no caching", "system_and_3": "system_and_3", "best": "best possible"}
    for key, label in names.items():
        totals = report.placements[key]
        dollars = f"${totals.cost * usd / 1e6:,.4f}" if usd is not None else "-"
        share = totals.cost / none if none else 0.0
        lines.append(f"  {label:<15} {totals.cost:>12,.0f} {dollars:>9} {share:>12.1%} {totals.hit_rate:>16.1%}")
    ttl_note = ""
    ours = report.placements["system_and_3"]
    if report.cache_ttl == "auto":
        ttl_note = f"; auto chose 5m for {ours.ttl_5m_requests} and 1h for {ours.ttl_1h_requests} requests"
    lines.append(f"caching saves {report.saving():.1%} of the input cost{ttl_note} (costs in uncached input "
                 "tokens; output is the same either way and not counted)")
    if report.uncompacted is not None:
        lines.append(f"without compaction the same session would cost {report.uncompacted.cost:,.0f} with caching")
    for c in report.compactions:
        lines.append(f"compaction #{c.number} before message {c.at_message}: {c.tokens_before:,} -> "
                     f"{c.tokens_after:,} tokens, {c.first_read_tokens:,} of the {c.kept_prefix_tokens:,} tokens "
                     f"before the summary read from the cache")
        lines.append(f"  next {c.requests} requests cost {c.cost:,.0f}: penalty {c.penalty:,.0f} above an ideal "
                     f"compaction, {c.cache_loss:,.0f} above a cache that held everything; "
                     f"{c.uncompacted_cost:,.0f} without compacting")
    return lines
