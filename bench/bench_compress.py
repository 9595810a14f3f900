"""Compression speed: CPU time of the builtin compressor's compress() against one json.dumps of the same messages.

Run: .venv/bin/python bench/bench_compress.py [--quick]

The summary writer answers instantly, so the figure is the engine's own work (prune, boundaries, assembly,
sanitize, sizes). Each conversation is timed interleaved with ``json.dumps`` of itself in the same run (best of N
CPU times), which cancels the machine's speed. Sessions of 1k, 10k and 100k messages are corpus transcripts
concatenated with renumbered tool-call ids. Targets: median ratio <= 3 over the corpus, and a per-message cost that
stays flat from 1k to 100k messages (linear growth).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from timing import best_of

from ctxplug.budgets import compute_budgets
from ctxplug.config import Config
from ctxplug.engine import EngineContext
from ctxplug.plugins.context_engine.compressor import CompressorEngine
from ctxplug.summarizer import SummaryRequest, SummaryResult

CORPUS = Path("/work/shared/corpus/trajectories")
# The corpus transcripts are 10-100 messages: at 8K nearly all of them have a middle to summarize.
CORPUS_CONTEXT_LENGTH = 8_000
SESSION_CONTEXT_LENGTH = 128_000
Message = dict[str, Any]


class InstantWriter:
    """A summary writer that costs nothing, so only the engine is measured."""

    def write(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(text=f"## Goal\n{len(request.messages)} messages summarized", outcome="llm", calls=1)


def corpus_conversations() -> list[list[Message]]:
    conversations: list[list[Message]] = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            conversations.extend(json.loads(line)["messages"] for line in handle if line.strip())
    return conversations


def concatenated(conversations: list[list[Message]], size: int) -> list[Message]:
    """A session of ``size`` messages: one system prompt, then transcripts back to back with unique call ids."""
    session: list[Message] = [next(m for c in conversations for m in c if m["role"] == "system")]
    copy_number = 0
    while len(session) < size:
        for conversation in conversations:
            copy_number += 1
            session.extend(_renumbered(m, copy_number) for m in conversation if m["role"] != "system")
    return session[:size]


def _renumbered(message: Message, copy_number: int) -> Message:
    if message.get("tool_call_id"):
        return {**message, "tool_call_id": f"{message['tool_call_id']}-{copy_number}"}
    calls = message.get("tool_calls")
    if not calls:
        return dict(message)
    return {**message, "tool_calls": [{**c, "id": f"{c['id']}-{copy_number}"} for c in calls]}


def engine(context_length: int) -> CompressorEngine:
    config = Config()
    context = EngineContext(name="compressor", config=config,
                            budgets=compute_budgets(config, context_length=context_length))
    return CompressorEngine(context, summary_writer=InstantWriter())


def ratio_of(messages: list[Message], repeats: int, context_length: int) -> tuple[float, float, float, str]:
    """(compress seconds, json.dumps seconds, ratio, outcome) for one conversation."""
    subject = engine(context_length)
    compress_time, dumps_time = best_of(repeats, lambda: subject.compress(messages, force=True),
                                        lambda: json.dumps(messages), clock=time.process_time)
    outcome = subject.last_report.outcome if subject.last_report else "none"
    return compress_time, dumps_time, compress_time / dumps_time, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no 100k session")
    args = parser.parse_args()
    repeats = 5 if args.quick else 15
    conversations = corpus_conversations()
    ratios, outcomes = [], []
    for messages in conversations:
        _, _, ratio, outcome = ratio_of(messages, repeats, CORPUS_CONTEXT_LENGTH)
        ratios.append(ratio)
        outcomes.append(outcome)
    compressed = sum(outcome == "llm" for outcome in outcomes)
    print(f"corpus: {len(conversations)} transcripts ({compressed} compressed) at context length "
          f"{CORPUS_CONTEXT_LENGTH:,}: compress / json.dumps median {statistics.median(ratios):.2f}, "
          f"min {min(ratios):.2f}, max {max(ratios):.2f}")
    print(f"sessions at context length {SESSION_CONTEXT_LENGTH:,}:")
    print(f"{'messages':>9} {'compress ms':>12} {'dumps ms':>9} {'ratio':>6} {'us/message':>11}  outcome")
    for size in (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000):
        session = concatenated(conversations, size)
        compress_time, dumps_time, ratio, outcome = ratio_of(session, max(3, repeats // (size // 1_000)),
                                                         SESSION_CONTEXT_LENGTH)
        print(f"{size:>9,} {compress_time * 1e3:>12.1f} {dumps_time * 1e3:>9.1f} {ratio:>6.2f} "
              f"{compress_time / size * 1e6:>11.2f}  {outcome}")


if __name__ == "__main__":
    main()
