"""The lossless store at scale: ingestion throughput, lcm_grep latency and bytes per message at 10k/100k/1M.

Run: .venv/bin/python bench/bench_lcm.py [--sizes 10000,100000,1000000] [--dir /tmp/ctxplug-bench-lcm] [--rebuild]

Stores are built from the corpus transcripts (/work/shared/corpus/trajectories) copied into as many sessions as
needed, written turn by turn (a turn: a user message and everything up to the next one) through
`SQLiteStore.put_messages`, one transaction per turn, the way the engine writes. Every 1,000th message carries a
unique planted word, so a "rare" query has exactly one hit at any size; "common" queries are corpus words found
in a large share of all messages. A store that already exists in --dir is reused (its build time is then not
measured again) unless --rebuild is given. Latency is the whole lcm_grep tool (query, snippets, covering node)
over the store (all sessions) and within one session, 60 queries each after one warm-up.
Targets: ingestion >= 20,000 messages/s; lcm_grep p95 < 50 ms for rare terms at 1M messages.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctxplug.plugins.context_engine.lcm.sqlite_store import SQLiteStore
from ctxplug.plugins.context_engine.lcm.tools import grep

CORPUS = Path("/work/shared/corpus/trajectories")
PLANT_EVERY = 1_000
QUERIES = 60
COMMON_TERMS = ("error", "file", "the")
Message = dict[str, Any]


def corpus_transcripts() -> list[tuple[str, list[Message]]]:
    found = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    record = json.loads(line)
                    found.append((record["id"], record["messages"]))
    return found


def turns(messages: list[Message]) -> Iterator[list[Message]]:
    """The transcript cut before each user message: what an agent adds to its store per turn."""
    current: list[Message] = []
    for message in messages:
        if message.get("role") == "user" and current:
            yield current
            current = []
        current.append(message)
    if current:
        yield current


def planted_word(number: int) -> str:
    return f"plantedqx{number}"


def build(path: Path, size: int) -> dict[str, float]:
    """Write ``size`` messages into a new store; return the throughput figures."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    store = SQLiteStore(path)
    transcripts = corpus_transcripts()
    written = copies = 0
    started, cpu_started = time.perf_counter(), time.process_time()
    slowest_turn = 0.0
    while written < size:
        for name, messages in transcripts:
            session = f"{name}#{copies}"
            seq = 0
            for turn in turns(messages):
                turn = turn[: size - written]
                batch = []
                for message in turn:
                    written += 1
                    if written % PLANT_EVERY == 0:
                        message = {**message, "content": f"{message.get('content') or ''} {planted_word(written)}"}
                    batch.append((seq, message))
                    seq += 1
                turn_started = time.perf_counter()
                store.put_messages(session, batch)
                slowest_turn = max(slowest_turn, time.perf_counter() - turn_started)
                if written >= size:
                    break
            copies += 1
            if written >= size:
                break
    ingest_seconds = time.perf_counter() - started
    index_started = time.perf_counter()
    store.catch_up_index()
    index_seconds = time.perf_counter() - index_started
    cpu_seconds = time.process_time() - cpu_started
    store.close()
    return {"messages": written, "seconds": ingest_seconds + index_seconds, "index_tail_seconds": index_seconds,
            "messages_per_second": written / (ingest_seconds + index_seconds), "slowest_turn_ms": slowest_turn * 1e3,
            "messages_per_cpu_second": written / cpu_seconds, "sessions": copies}


def file_bytes(path: Path) -> int:
    """The database's size after a checkpoint folds the write-ahead log back into it."""
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    return path.stat().st_size


def latency(store: SQLiteStore, queries: list[tuple[str, str | None]]) -> dict[str, float]:
    """Median and p95 of lcm_grep over ``(term, session)`` queries (None: all sessions), after one warm-up."""
    def run(term: str, session: str | None) -> int:
        arguments = {"pattern": term, "limit": 10, "all_sessions": session is None}
        return len(grep(store, session, arguments, regex_timeout=2.0)["results"])

    run(*queries[0])
    times, hits = [], 0
    for term, session in queries:
        started = time.perf_counter()
        hits += run(term, session)
        times.append(time.perf_counter() - started)
    times.sort()
    return {"median_ms": statistics.median(times) * 1e3, "p95_ms": times[int(len(times) * 0.95) - 1] * 1e3,
            "hits_per_query": hits / len(queries)}


def measure(directory: Path, size: int, rebuild: bool) -> dict[str, Any]:
    path = directory / f"lcm-{size}.db"
    built = build(path, size) if rebuild or not path.exists() else None
    store = SQLiteStore(path)
    stats = store.stats()
    size_bytes = file_bytes(path)
    rng = random.Random(size)
    planted = max(1, stats.messages // PLANT_EVERY)
    rare = [planted_word(rng.randint(1, planted) * PLANT_EVERY) for _ in range(QUERIES)]
    common = [COMMON_TERMS[i % len(COMMON_TERMS)] for i in range(QUERIES)]
    # within one session: each rare word in the session that holds it, the common words in a random session
    homes = [store.search(term, None, 1, 0)[0].session for term in rare]
    sessions = store.sessions()
    result = {
        "size": stats.messages, "build": built, "bytes_per_message": size_bytes / stats.messages,
        "file_mb": size_bytes / 1e6,
        "rare_all": latency(store, [(term, None) for term in rare]),
        "common_all": latency(store, [(term, None) for term in common]),
        "rare_session": latency(store, list(zip(rare, homes, strict=True))),
        "common_session": latency(store, [(term, rng.choice(sessions)) for term in common]),
    }
    store.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--dir", default="/tmp/ctxplug-bench-lcm")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    for size in (int(s) for s in args.sizes.split(",")):
        result = measure(directory, size, args.rebuild)
        print(json.dumps(result), flush=True)
        built = result["build"]
        if built:
            print(f"{size:>9,} messages: built in {built['seconds']:.1f}s = {built['messages_per_second']:,.0f} "
                  f"msg/s, {built['messages_per_cpu_second']:,.0f} per CPU-second "
                  f"(slowest turn {built['slowest_turn_ms']:.1f} ms, "
                  f"final index catch-up {built['index_tail_seconds'] * 1e3:.0f} ms)")
        print(f"{'':>9}  {result['bytes_per_message']:,.0f} bytes/message ({result['file_mb']:.1f} MB)")
        for kind in ("rare_all", "common_all", "rare_session", "common_session"):
            figures = result[kind]
            print(f"{'':>9}  grep {kind:<15} median {figures['median_ms']:7.2f} ms  p95 {figures['p95_ms']:7.2f} ms"
                  f"  ({figures['hits_per_query']:.1f} hits)")


if __name__ == "__main__":
    main()
