"""What the extractive summary keeps of the span it replaces, and what secret redaction costs per message.

Run: .venv/bin/python bench/bench_extractive.py

For every corpus transcript (and sessions built by concatenating them), the span is the one the builtin
compressor would summarize (its own `find_span` at the given context length). Items counted are those that occur
in the span and nowhere in the kept head or tail:
- file paths: path arguments of tool calls, and slash-separated names with an extension in commands, tool-call
  arguments and message text;
- commands: the shell command of every tool call with a ``command``/``cmd`` argument (editor sub-commands such as
  ``view`` excluded); kept when its first 60 characters appear in the summary;
- error lines: output lines naming an error (``...Error``, ``Exception``, ``error:``, ``FAILED``, ``fatal:``,
  ``Traceback``, ``No such file``, ``command not found``), except in the output of a file view (``view``, or a
  tool named read/view/open/cat) longer than 3 lines, and except numbered source lines (``1466:    raise
  ValueError(msg)``, as editors and ``cat -n`` print them): those are code that names an error class, not an error
  that happened; kept when their first 80 characters appear.
Two pipelines: the writer on the raw span, and the request exactly as the compressor builds it (the pruned
span for a model to read, the original span as `source_messages`). Summaries are capped at 8,000 characters
(budget 2,000 tokens) and checked.
QA: on the tau-bench fact questions, the share of questions whose evidence lies in the span and whose answer is
not in the head or tail, and whose answer's words all appear in the summary.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench_compress import concatenated, corpus_conversations

from ctxplug.budgets import compute_budgets
from ctxplug.config import Config
from ctxplug.plugins.context_engine.compressor.boundaries import find_span
from ctxplug.plugins.context_engine.compressor.engine import sizes_of
from ctxplug.plugins.context_engine.compressor.prune import prune_tool_outputs
from ctxplug.redact import redact_secrets
from ctxplug.summarizer import SummaryRequest
from ctxplug.summarizer.extractive import ExtractiveSummaryWriter

QA = Path("/work/shared/corpus/qa/tau_bench_airline_fact_qa.jsonl")
MAX_CHARS = 8_000
BUDGET_TOKENS = MAX_CHARS // 4
PATH_KEYS = ("path", "file_path", "filename", "file", "target_file", "file_name")
EDITOR_SUBCOMMANDS = {"view", "create", "str_replace", "insert", "undo_edit"}
SLASH_PATH = re.compile(r"(?<![\w:/.-])(?:[\w.-]+/)+[\w-]+\.[A-Za-z]\w{0,6}\b")
ERROR = re.compile(r"Error\b|Exception\b|error:|FAILED|fatal:|Traceback|No such file|command not found")
SOURCE_LINE = re.compile(r"^\s*\d+(?::|\t| \| )")
Message = dict[str, Any]


def text_of(message: Message) -> str:
    content = message.get("content")
    parts = [content if isinstance(content, str) else json.dumps(content) if content else ""]
    for call in message.get("tool_calls") or []:
        parts.append(call["function"]["name"] + " " + call["function"]["arguments"])
    return "\n".join(parts)


def span_items(messages: list[Message]) -> dict[str, set[str]]:
    """Paths, commands and error lines that a span contains."""
    found: dict[str, set[str]] = {"paths": set(), "commands": set(), "errors": set()}
    file_views: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            try:
                args = json.loads(call["function"]["arguments"])
            except ValueError:
                continue
            if not isinstance(args, dict):
                continue
            if args.get("command") == "view" or re.search(r"read|view|open|cat", call["function"]["name"]):
                file_views.add(call["id"])
            for key in PATH_KEYS:
                if isinstance(args.get(key), str) and args[key].strip():
                    found["paths"].add(args[key].strip())
            command = args.get("command", args.get("cmd"))
            if isinstance(command, str) and command.strip() and command.strip() not in EDITOR_SUBCOMMANDS:
                found["commands"].add(command.strip())
        text = text_of(message)
        found["paths"].update(SLASH_PATH.findall(text))
        viewed = message.get("tool_call_id") in file_views and text.count("\n") >= 3
        if message.get("role") == "tool" and not viewed:
            found["errors"].update(line.strip() for line in text.splitlines()
                                   if ERROR.search(line) and line.strip() and not SOURCE_LINE.match(line))
    return found


def retention(messages: list[Message], context_length: int, writer: ExtractiveSummaryWriter,
              protect_last_n: int = 20) -> dict[str, Any] | None:
    """Kept/total per kind for the compressor's span of ``messages``, raw and as the engine requests it."""
    config = Config()
    config = replace(config, compression=replace(config.compression, protect_last_n=protect_last_n))
    budgets = compute_budgets(config, context_length=context_length)
    span = find_span(messages, sizes_of(messages), protect_first_n=budgets.protect_first_n,
                     tail_token_budget=budgets.tail_token_budget, protect_last_n=budgets.protect_last_n)
    if span is None:
        return None
    middle = messages[span.head_end:span.tail_start]
    kept_text = "\n".join(text_of(m) for m in messages[:span.head_end] + messages[span.tail_start:])
    items = {kind: {i for i in values if i not in kept_text} for kind, values in span_items(middle).items()}
    result: dict[str, Any] = {"span": len(middle)}
    for label, request in (("raw", SummaryRequest(messages=middle, budget_tokens=BUDGET_TOKENS)),
                           ("engine", engine_request(middle))):
        summary = writer.write(request).text
        assert len(summary) <= MAX_CHARS, len(summary)
        result[label] = {kind: (sum(_kept(kind, i, summary) for i in values), len(values))
                         for kind, values in items.items()}
        result[label + "_chars"] = len(summary)
    return result


def engine_request(middle: list[Message]) -> SummaryRequest:
    """The request the compressor sends: the pruned span to read, the original span for rule-based extraction."""
    return SummaryRequest(messages=prune_tool_outputs(middle), budget_tokens=BUDGET_TOKENS, source_messages=middle)


def _kept(kind: str, item: str, summary: str) -> bool:
    probe = {"paths": item, "commands": item.splitlines()[0][:60], "errors": item[:80]}[kind]
    return probe in summary


def qa_retention(writer: ExtractiveSummaryWriter, context_length: int) -> tuple[int, int, int, int]:
    """(kept raw, kept by the engine's request, eligible questions, conversations with a span) on the fact-QA file."""
    kept_raw = kept_engine = eligible = spans = 0
    budgets = compute_budgets(Config(), context_length=context_length)
    for line in QA.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        messages = record["messages"]
        span = find_span(messages, sizes_of(messages), protect_first_n=budgets.protect_first_n,
                         tail_token_budget=budgets.tail_token_budget, protect_last_n=budgets.protect_last_n)
        if span is None:
            continue
        spans += 1
        middle = messages[span.head_end:span.tail_start]
        kept_text = "\n".join(text_of(m) for m in messages[:span.head_end] + messages[span.tail_start:]).lower()
        summaries = [writer.write(request).text.lower()
                     for request in (SummaryRequest(messages=middle, budget_tokens=BUDGET_TOKENS),
                                     engine_request(middle))]
        for question in record["questions"]:
            if not all(span.head_end <= i < span.tail_start for i in question["evidence_message_indices"]):
                continue
            words = re.findall(r"\w+", str(question["a"]).lower())
            if not words or all(w in kept_text for w in words):
                continue
            eligible += 1
            kept_raw += all(w in summaries[0] for w in words)
            kept_engine += all(w in summaries[1] for w in words)
    return kept_raw, kept_engine, eligible, spans


def redaction_cost(conversations: list[list[Message]]) -> tuple[float, float, int]:
    """(µs per message for redact_secrets over every text field, µs for json.dumps of the message), best of 5."""
    messages = [m for c in conversations for m in c]
    texts = [text_of(m) for m in messages]
    best_redact = best_dumps = float("inf")
    for _ in range(5):
        start = time.process_time()
        for text in texts:
            redact_secrets(text)
        middle = time.process_time()
        for message in messages:
            json.dumps(message)
        end = time.process_time()
        best_redact = min(best_redact, middle - start)
        best_dumps = min(best_dumps, end - middle)
    return best_redact / len(messages) * 1e6, best_dumps / len(messages) * 1e6, len(messages)


def _share(pairs: list[tuple[int, int]]) -> str:
    kept, total = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    return f"{kept / total:6.1%} ({kept}/{total})" if total else "   n/a"


def main() -> int:
    writer = ExtractiveSummaryWriter()
    conversations = corpus_conversations()
    cases = [(f"corpus #{i}", c, 8_000, 20) for i, c in enumerate(conversations)]
    cases += [(f"corpus4 #{i}", c, 8_000, 4) for i, c in enumerate(conversations)]
    cases += [(f"session {n}", concatenated(conversations, n), ctx, 20) for n, ctx in ((200, 32_000), (1_000, 128_000))]
    rows = []
    for name, messages, context_length, protect_last_n in cases:
        result = retention(messages, context_length, writer, protect_last_n)
        if result is not None:
            rows.append((name, result))
    print(f"extractive summary <= {MAX_CHARS:,} chars; items only in the compressor's span")
    for label in ("raw", "engine"):
        for prefix, what in (("corpus #", "corpus, protect_last_n=20"), ("corpus4 #", "corpus, protect_last_n=4")):
            corpus_rows = [r for n, r in rows if n.startswith(prefix)]
            print(f"{label:>6} {what} ({len(corpus_rows)} spans, {sum(r['span'] for r in corpus_rows)} messages): "
                  + "  ".join(f"{kind} {_share([r[label][kind] for r in corpus_rows])}"
                              for kind in ("paths", "commands", "errors")))
        for name, result in rows:
            if name.startswith("session"):
                print(f"{label:>6} {name} (span {result['span']} messages): " + "  ".join(
                    f"{kind} {_share([result[label][kind]])}" for kind in ("paths", "commands", "errors")))
    chars = [r["raw_chars"] for _, r in rows]
    print(f"summary length: median {statistics.median(chars):,.0f} chars, max {max(chars):,}")
    raw, engine, eligible, spans = qa_retention(writer, 8_000)
    print(f"fact QA ({spans} conversations, {eligible} questions answered only in the span): "
          f"raw {raw / eligible:.1%} ({raw}/{eligible}), engine {engine / eligible:.1%} ({engine}/{eligible})")
    redact_us, dumps_us, count = redaction_cost(conversations)
    print(f"redact_secrets: {redact_us:.1f} us/message over {count} messages "
          f"(json.dumps of the message {dumps_us:.1f} us, ratio {redact_us / dumps_us:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
