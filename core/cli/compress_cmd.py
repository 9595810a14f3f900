"""``ctxplug compress SESSION``: compress a conversation file with the configured engine and report what happened.

Without ``-o`` nothing is written: the report (and the summary) is printed, so a first run is safe. ``-o OUT``
writes the compressed conversation (JSON, or JSONL when OUT ends in ``.jsonl``); ``-o -`` writes it to stdout and
moves the report to stderr. ``--json`` prints the report as one JSON object. Exit status: 0 when the engine
compressed or had nothing to do, 1 when it aborted or failed (the conversation is unchanged), 2 for a user error.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any, TextIO

from ctxplug.cli import config_from_args
from ctxplug.conversation_io import read_conversation, write_conversation
from ctxplug.engine import CompressionReport
from ctxplug.models import DEFAULT_CONTEXT_LENGTH
from ctxplug.registry import load_engine


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``compress`` command."""
    parser = subparsers.add_parser(
        "compress", help="compress a conversation file and print a before/after report",
        description="Compress a conversation (JSON list, {\"messages\": [...]} object, or JSONL) with the "
                    "configured context engine, as if it had reached its threshold. Nothing is written "
                    "unless -o is given.")
    parser.add_argument("session", metavar="SESSION", help="the conversation file to compress")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="write the compressed conversation here (.jsonl: one message per line; -: stdout)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--context-length", type=_positive_int, metavar="N",
                      help=f"the main model's context window in tokens (default {DEFAULT_CONTEXT_LENGTH:,})")
    size.add_argument("--model", metavar="M", help="take the context window from this model's known size")
    parser.add_argument("--focus", metavar="TOPIC", help="ask the summary to keep full detail about TOPIC")
    parser.add_argument("--json", action="store_true", help="print the report as a JSON object")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Compress ``args.session`` once (forced, ignoring back-off) and report the result."""
    messages = read_conversation(args.session)
    config = config_from_args(args)
    host = load_engine(config, model=args.model, context_length=_context_length(args))
    context_length = host.context_length
    progress = _Progress(sys.stderr)
    progress.show(f"compressing {len(messages):,} messages with {host.name!r}…")
    try:
        compressed = host.compress(messages, focus_topic=args.focus, force=True)
    finally:
        progress.clear()
    report = host.last_report or CompressionReport(engine=host.name, outcome="skipped",
                                                    reason="the engine left no report")
    out: TextIO = sys.stderr if args.output == "-" else sys.stdout
    if args.output == "-":
        sys.stdout.write(json.dumps(compressed, ensure_ascii=False, indent=1) + "\n")
    elif args.output:
        write_conversation(compressed, args.output)
    facts = {"session": args.session, "output": args.output, "context_length": context_length,
             "summary_model": config.auxiliary.compression.model, **asdict(report)}
    if args.json:
        print(json.dumps(facts, ensure_ascii=False, indent=2), file=out)
    else:
        for line in report_lines(facts):
            print(line, file=out)
    return 1 if report.outcome in ("failed", "aborted") else 0


def report_lines(facts: dict[str, Any]) -> list[str]:
    """The human report: sizes before and after, the span, how the summary was written, and the summary."""
    before, after = facts["tokens_before"], facts["tokens_after"]
    saved = f" (-{100 * (before - after) / before:.0f}%)" if before and after < before else ""
    lines = [
        f"{facts['session']}: {facts['messages_before']:,} messages, ~{before:,} tokens"
        f" -> {facts['messages_after']:,} messages, ~{after:,} tokens{saved}",
        f"engine: {facts['engine']}, context length {facts['context_length']:,} tokens",
        f"outcome: {facts['outcome']}{_outcome_note(facts)}",
    ]
    if facts["messages_summarized"]:
        lines.append(f"summarized: {facts['reason']}")
        lines.append(f"summary-model calls: {facts['summarizer_calls']}")
    elif facts["reason"]:
        lines.append(f"why: {facts['reason']}")
    if facts["error"]:
        lines.append(f"error: {facts['error']}")
    if facts["output"] and facts["output"] != "-":
        lines.append(f"wrote: {facts['output']}")
    elif not facts["output"]:
        lines.append("nothing written: pass -o FILE to save the compressed conversation")
    if facts["summary"]:
        lines += ["", "--- summary ---", facts["summary"].rstrip(), "--- end of summary ---"]
    return lines


def _outcome_note(facts: dict[str, Any]) -> str:
    if facts["outcome"] == "extractive" and not facts["summary_model"]:
        return (" — ran offline: no summary model is configured (auxiliary.compression.model), so the "
                "deterministic extractive summarizer wrote the summary")
    if facts["outcome"] == "extractive":
        return " — the summary model failed; the extractive summarizer wrote the summary, nothing was lost"
    if facts["outcome"] == "aborted":
        return " — nothing was dropped; the conversation is unchanged"
    return ""


def _context_length(args: argparse.Namespace) -> int | None:
    """The window asked for; None lets the engine loader look up ``--model``'s window."""
    if args.context_length:
        return int(args.context_length)
    return None if args.model else DEFAULT_CONTEXT_LENGTH


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of tokens, got {value}")
    return value


class _Progress:
    """A one-line status on a terminal's stderr; silent when stderr is not a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.active = stream.isatty()

    def show(self, text: str) -> None:
        if self.active:
            self.stream.write(f"\r{text}")
            self.stream.flush()

    def clear(self) -> None:
        if self.active:
            self.stream.write("\r\033[K")
            self.stream.flush()
