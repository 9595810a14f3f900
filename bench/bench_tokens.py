"""Token counting speed: ctxplug's exact count against raw tiktoken, and the incremental counter's per-append cost.

Run: .venv/bin/python bench/bench_tokens.py [--quick]

1. Every message of /work/shared/corpus/trajectories counted exactly (count_tokens per conversation, gpt-4o and
   gpt-4) against tiktoken's ``encode_ordinary`` of the same texts, interleaved in one run: ratio <= 1.2.
2. IncrementalTokenCounter: the time of one append once the session already holds 100 ... 100,000 messages
   (the same batch of corpus messages appended at every size): flat means independent of the session length.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from timing import best_of

from ctxplug import IncrementalTokenCounter, count_tokens, estimate_messages_tokens_rough
from ctxplug.encodings import encoding_for_model, get_encoding
from ctxplug.tokens import _message_texts

CORPUS = Path("/work/shared/corpus/trajectories")
Message = dict[str, Any]


def corpus_conversations() -> list[list[Message]]:
    conversations = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            conversations.extend(json.loads(line)["messages"] for line in handle if line.strip())
    return conversations


def bench_exact(conversations: list[list[Message]], repeats: int) -> list[dict[str, Any]]:
    rows = []
    for model in ("gpt-4o", "gpt-4"):
        encoding = get_encoding(encoding_for_model(model).name)  # loaded before timing: both sides start warm
        texts = ["\n".join(_message_texts(m)[0]) for conversation in conversations for m in conversation]

        def raw(texts: list[str] = texts, encode: Any = encoding.encode_ordinary) -> int:
            return sum(len(encode(text)) for text in texts)

        def ours(model: str = model) -> int:
            return sum(count_tokens(conversation, model=model) for conversation in conversations)

        def rough() -> int:
            return sum(estimate_messages_tokens_rough(conversation) for conversation in conversations)

        raw_s, ours_s, rough_s = best_of(repeats, raw, ours, rough)
        rows.append({"model": model, "encoding": encoding.name, "messages": len(texts), "tokens": ours(),
                     "raw_ms": raw_s * 1e3, "ctxplug_ms": ours_s * 1e3, "ratio": ours_s / raw_s,
                     "rough_ms": rough_s * 1e3, "rough_tokens": rough()})
    return rows


def bench_incremental(conversations: list[list[Message]], sizes: list[int], batch: int) -> list[dict[str, Any]]:
    pool = [message for conversation in conversations for message in conversation]
    appended = pool[:batch]
    rows = []
    for rough in (False, True):
        for size in sizes:
            counter = IncrementalTokenCounter("gpt-4o", rough=rough)
            fill_start = time.perf_counter()
            counter.extend(pool[i % len(pool)] for i in range(size))
            fill_s = time.perf_counter() - fill_start
            # the same messages appended at every size: only the session's length differs (it grows by at
            # most 5 x batch while measuring)
            per_append = min(_time_appends(counter, appended) for _ in range(5)) / batch
            summary = {"role": "user", "content": "[CONTEXT COMPACTION] summary of the earlier turns"}
            compressed = pool[:3] + [summary] + [pool[i % len(pool)] for i in range(size - 20, size)]
            resync_start = time.perf_counter()
            recounted = counter.resync(compressed)
            rows.append({"mode": "rough" if rough else "exact o200k_base", "messages": size,
                         "append_us": per_append * 1e6, "fill_s": fill_s,
                         "resync_ms": (time.perf_counter() - resync_start) * 1e3, "recounted": recounted})
    return rows


def _time_appends(counter: IncrementalTokenCounter, messages: list[Message]) -> float:
    start = time.perf_counter()
    for message in messages:
        counter.append(message)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="sizes up to 10,000 and fewer repeats")
    args = parser.parse_args(argv)
    conversations = corpus_conversations()
    sizes = [100, 1_000, 10_000] if args.quick else [100, 1_000, 10_000, 100_000]

    print(f"python {sys.version.split()[0]}; corpus: {sum(map(len, conversations))} messages "
          f"in {len(conversations)} conversations")
    print("\n1. exact counting vs raw tiktoken encode_ordinary (best of interleaved runs)")
    print(f"{'model':<8} {'encoding':<12} {'messages':>8} {'tokens':>9} {'raw ms':>8} {'ctxplug ms':>10} {'ratio':>6}"
          f" {'rough ms':>9} {'rough tokens':>12}")
    for row in bench_exact(conversations, 5 if args.quick else 15):
        print(f"{row['model']:<8} {row['encoding']:<12} {row['messages']:>8} {row['tokens']:>9,} "
              f"{row['raw_ms']:>8.1f} {row['ctxplug_ms']:>10.1f} {row['ratio']:>6.2f} {row['rough_ms']:>9.2f} "
              f"{row['rough_tokens']:>12,}")

    print("\n2. IncrementalTokenCounter: cost of one append at a given session length (200 corpus messages)")
    print(f"{'mode':<17} {'messages':>8} {'us/append':>10} {'fill s':>7} {'resync ms':>10} {'recounted':>9}")
    rows = bench_incremental(conversations, sizes, batch=200)
    for row in rows:
        print(f"{row['mode']:<17} {row['messages']:>8,} {row['append_us']:>10.1f} {row['fill_s']:>7.2f} "
              f"{row['resync_ms']:>10.2f} {row['recounted']:>9}")
    for mode in ("exact o200k_base", "rough"):
        costs = [row["append_us"] for row in rows if row["mode"] == mode]
        print(f"{mode}: largest/smallest session per-append cost = {costs[-1] / costs[0]:.2f}, "
              f"spread (max/min) = {max(costs) / min(costs):.2f}, median {statistics.median(costs):.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
