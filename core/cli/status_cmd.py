"""``ctxplug status [--model M] [--provider P] [--context-length N]``: thresholds, budgets and the caching line.

What an agent started with this configuration would use: the main model's window, the compression trigger and
the budgets derived from it (SPEC §3), the hygiene trigger, and whether Anthropic prompt caching is on.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ctxplug.budgets import compute_budgets
from ctxplug.cache_policy import infer_provider, resolve_cache_policy
from ctxplug.cli import config_from_args
from ctxplug.codex_autoraise import OPT_OUT_COMMAND
from ctxplug.hygiene import HYGIENE_THRESHOLD
from ctxplug.models import lookup_model


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``status`` command."""
    parser = subparsers.add_parser(
        "status", help="show computed thresholds, budgets and the prompt-caching status",
        description="Show what the configuration means for one model and route: the compression threshold in "
                    "tokens, the tail and summary budgets, the hygiene trigger, and the prompt-caching line.")
    parser.add_argument("--model", metavar="M", help="the main agent model (its window sets every threshold)")
    parser.add_argument("--provider", metavar="P", help="the route: anthropic, openrouter, openai-codex, …")
    parser.add_argument("--context-length", type=int, metavar="N", help="override the model's context window")
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.set_defaults(handler=run)


def status_facts(args: argparse.Namespace) -> dict[str, Any]:
    """Everything the status command shows, as plain data."""
    config = config_from_args(args)
    provider = infer_provider(args.model, args.provider)
    info = lookup_model(args.model, provider, config)
    context_length = args.context_length or info.context_length
    budgets = compute_budgets(config, context_length=context_length, model=args.model, provider=provider)
    policy = resolve_cache_policy(args.model, provider, config.prompt_caching.cache_ttl)
    return {
        "config": str(config.source) if config.source else None,
        "model": args.model, "provider": provider, "engine": config.context.engine,
        "context_length": context_length,
        "context_length_source": "command line" if args.context_length else info.source,
        "compression_enabled": config.compression.enabled,
        "threshold": budgets.threshold, "threshold_tokens": budgets.threshold_tokens,
        "autoraised": budgets.autoraised,
        "target_ratio": config.compression.target_ratio, "tail_token_budget": budgets.tail_token_budget,
        "max_summary_tokens": budgets.max_summary_tokens,
        "protect_first_n": budgets.protect_first_n, "protect_last_n": budgets.protect_last_n,
        "hygiene_tokens": int(context_length * HYGIENE_THRESHOLD),
        "caching": {"enabled": policy.enabled, "native_anthropic": policy.native_anthropic,
                    "cache_ttl": policy.cache_ttl, "status_line": policy.status_line()},
    }


def status_lines(facts: dict[str, Any]) -> list[str]:
    """The human form of `status_facts`."""
    route = f" via {facts['provider']}" if facts["provider"] else ""
    model = facts["model"] or "no model given"
    raised = f" (raised for gpt-5.5 on openai-codex; to undo: {OPT_OUT_COMMAND})" if facts["autoraised"] else ""
    state = "enabled" if facts["compression_enabled"] else "DISABLED (compression.enabled: false)"
    return [
        f"config: {facts['config'] or 'defaults (no config.yaml found)'}",
        f"model: {model}{route}, context length {facts['context_length']:,} tokens "
        f"({facts['context_length_source']})",
        f"engine: {facts['engine']}, compression {state}",
        f"  threshold_tokens    {facts['threshold_tokens']:>9,}  "
        f"({facts['threshold']:.0%} of the context length){raised}",
        f"  tail_token_budget   {facts['tail_token_budget']:>9,}  "
        f"(threshold_tokens × target_ratio {facts['target_ratio']:.2f})",
        f"  max_summary_tokens  {facts['max_summary_tokens']:>9,}  (min(context length × 0.05, 12,000))",
        f"  protected messages  first {facts['protect_first_n']}, last {facts['protect_last_n']} at least",
        f"  session hygiene     {facts['hygiene_tokens']:>9,}  ({HYGIENE_THRESHOLD:.0%}, gateway safety net)",
        facts["caching"]["status_line"],
    ]


def run(args: argparse.Namespace) -> int:
    """Print the status for the configuration and the model given."""
    facts = status_facts(args)
    if args.json:
        print(json.dumps(facts, ensure_ascii=False, indent=2))
    else:
        print("\n".join(status_lines(facts)))
    return 0
