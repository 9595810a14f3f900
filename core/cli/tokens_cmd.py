"""``ctxplug tokens FILE [--model M] [--json]``: the tokens of a conversation file, per role."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ctxplug.conversation_io import read_conversation
from ctxplug.encodings import encoding_for_model, get_encoding
from ctxplug.tokens import REPLY_PRIMING_TOKENS, estimate_message_tokens_rough, exact_message_tokens


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``tokens`` command."""
    parser = subparsers.add_parser(
        "tokens", help="count the tokens of a conversation file",
        description="Count a conversation's prompt tokens offline: exact for OpenAI models (o200k_base, "
                    "cl100k_base), an estimate marked as such for other models.")
    parser.add_argument("file", metavar="FILE", help="conversation: JSON list, {\"messages\": [...]} or JSONL")
    parser.add_argument("--model", metavar="M", default=None,
                        help="model whose tokenizer to use (default: o200k_base, the current OpenAI encoding)")
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    parser.set_defaults(handler=run)


def token_report(messages: list[dict[str, Any]], model: str | None) -> dict[str, Any]:
    """Token totals of ``messages`` per role, with the encoding used and whether the count is the model's own."""
    choice = encoding_for_model(model)
    encoding = get_encoding(choice.name)
    by_role: dict[str, dict[str, int]] = {}
    rough = 0
    for message in messages:
        row = by_role.setdefault(str(message.get("role")), {"messages": 0, "tokens": 0})
        row["messages"] += 1
        row["tokens"] += exact_message_tokens(message, encoding)
        rough += estimate_message_tokens_rough(message)
    priming = REPLY_PRIMING_TOKENS if messages else 0
    return {
        "model": model, "encoding": choice.name, "exact": choice.exact, "messages": len(messages),
        "tokens": sum(row["tokens"] for row in by_role.values()) + priming, "reply_priming": priming,
        "by_role": by_role, "rough_estimate": rough,
    }


def run(args: argparse.Namespace) -> int:
    """Print the token report of ``args.file``."""
    report = {"file": args.file, **token_report(read_conversation(args.file), args.model)}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for line in _table(report):
        print(line)
    return 0


def _table(report: dict[str, Any]) -> list[str]:
    if report["exact"]:
        how = f"exact, {report['encoding']}" + (f" for {report['model']}" if report["model"] else "")
        total = f"{report['tokens']:,}"
    else:
        how = (f"ESTIMATE: {report['model']} has no bundled tokenizer; counted with {report['encoding']}, "
               "the model's own tokenizer counts differently")
        total = f"~{report['tokens']:,}"
    lines = [f"{report['file']}: {report['messages']} messages, {total} tokens ({how})",
             f"  {'role':<10} {'messages':>8} {'tokens':>12}"]
    for role, row in sorted(report["by_role"].items(), key=lambda item: -item[1]["tokens"]):
        lines.append(f"  {role:<10} {row['messages']:>8,} {row['tokens']:>12,}")
    if report["reply_priming"]:
        lines.append(f"  {'(framing)':<10} {'':>8} {report['reply_priming']:>12,}")
    lines.append(f"rough estimate (4 characters per token): {report['rough_estimate']:,}")
    return lines
