"""The agent loop's own cost per request, and the gateway's sustained message rate.

Run: .venv/bin/python bench/bench_loop.py [--quick]

1. `ManagedChat` overhead: everything one request costs except the HTTP call (sizing the prompt, asking the
   engine, merging tools, cache markers, reading the response, tracking usage, extending the history), measured
   with an in-process client that returns a prepared completion at once, at 100, 1,000 and 10,000 messages of
   history (corpus transcripts back to back). Next to it, in the same run and on the same body, the time of
   ``json.dumps`` of the request body, which any client pays to send it. Targets: overhead within 2x of that
   serialization, and growing linearly (a flat ratio from 100 to 10,000 messages). Two routes: an OpenAI model
   (no markers) and Claude via OpenRouter (cache markers on every request).
2. Gateway: 50 sessions x 200 messages, one turn per message (load, hygiene, append), from 8 writer threads and
   from 1, on a SQLite file in a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench_compress import concatenated, corpus_conversations  # same directory: the corpus sessions it builds
from openai.types.chat import ChatCompletion

from ctxplug.budgets import compute_budgets
from ctxplug.config import Config
from ctxplug.contrib.gateway import Gateway
from ctxplug.contrib.openai_loop import ManagedChat
from ctxplug.contrib.session_store import SQLiteSessionStore
from ctxplug.engine import EngineContext
from ctxplug.host import EngineHost
from ctxplug.hygiene import SessionHygiene
from ctxplug.plugins.context_engine.compressor import CompressorEngine

# Large enough that nothing is compressed: the loop's own work is measured, not the engine's compression.
CONTEXT_LENGTH = 100_000_000
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file of the repository.",
                                           "parameters": {"type": "object",
                                                          "properties": {"path": {"type": "string"}}}}}]


class InstantClient:
    """Stands in for ``openai.OpenAI``: returns a prepared completion and remembers the body it was given."""

    def __init__(self, model: str) -> None:
        self.chat = SimpleNamespace(completions=self)
        self.body: dict[str, Any] = {}
        self.inside = 0.0
        self.response = ChatCompletion.model_validate({
            "id": "bench", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Done: the tests pass now."}}],
            "usage": {"prompt_tokens": 50_000, "completion_tokens": 12, "total_tokens": 50_012},
        })

    def create(self, **body: Any) -> ChatCompletion:
        started = time.perf_counter()
        self.body = body
        self.inside += time.perf_counter() - started
        return self.response


def managed_chat(model: str, provider: str | None) -> tuple[ManagedChat, InstantClient]:
    config = Config()
    context = EngineContext("compressor", config, compute_budgets(config, context_length=CONTEXT_LENGTH),
                            model=model, provider=provider)
    client = InstantClient(model)
    return ManagedChat(client, engine=EngineHost(CompressorEngine(context)), model=model, provider=provider), client


def loop_overhead(history: list[dict[str, Any]], model: str, provider: str | None,
                  requests: int) -> tuple[float, float]:
    """Median seconds per request of the wrapper's own work and of json.dumps of the same request body."""
    chat, client = managed_chat(model, provider)
    chat.run(history, tools=TOOLS)  # the first request counts the whole history once; steady state follows
    history = chat.run(history, tools=TOOLS).messages
    overheads, dumps = [], []
    for turn in range(requests):
        history = [*history, {"role": "user", "content": f"Next step {turn}: run the test suite again."}]
        client.inside = 0.0
        started = time.perf_counter()
        history = chat.run(history, tools=TOOLS).messages
        overheads.append(time.perf_counter() - started - client.inside)
        started = time.perf_counter()
        json.dumps(client.body)
        dumps.append(time.perf_counter() - started)
    return statistics.median(overheads), statistics.median(dumps)


def gateway_rate(path: Path, writers: int, sessions: int, per_session: int) -> float:
    """Messages per second through `Gateway.turn` (load, hygiene, append) with ``writers`` threads."""
    store = SQLiteSessionStore(path)
    gateway = Gateway(store, hygiene=SessionHygiene(CONTEXT_LENGTH), engine_for=_no_engine)
    plan = [[(f"s{s}", k) for k in range(per_session) for s in range(sessions) if s % writers == w]
            for w in range(writers)]
    text = "Please also check the deployment logs for the 502 errors we saw this morning."

    def writer(messages: list[tuple[str, int]]) -> None:
        for session_id, k in messages:
            with gateway.turn(session_id) as turn:
                turn.save([*turn.messages, {"role": "user", "content": f"{k}: {text}"}])

    threads = [threading.Thread(target=writer, args=(messages,)) for messages in plan]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    store.close()
    return sessions * per_session / elapsed


def _no_engine(session_id: str) -> EngineHost:
    raise AssertionError("hygiene must not fire in this benchmark")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests and messages (a smoke run)")
    args = parser.parse_args()
    requests = 5 if args.quick else 30
    conversations = corpus_conversations()
    print("ManagedChat overhead per request (median), next to json.dumps of the request body")
    print(f"{'route':<44}{'messages':>9}{'overhead ms':>13}{'dumps ms':>10}{'ratio':>7}{'us/message':>12}")
    for model, provider in (("gpt-4o", "openai"), ("anthropic/claude-sonnet-4.5", "openrouter")):
        for size in (100, 1_000, 10_000):
            history = concatenated(conversations, size)
            overhead, dumps = loop_overhead(history, model, provider, max(3, requests // (size // 1000 or 1)))
            print(f"{model + ' via ' + provider:<44}{size:>9,}{overhead * 1e3:>13.2f}{dumps * 1e3:>10.2f}"
                  f"{overhead / dumps:>7.2f}{overhead / size * 1e6:>12.2f}")
    sessions, per_session = (10, 50) if args.quick else (50, 200)
    with tempfile.TemporaryDirectory() as tmp:
        print(f"\nGateway: {sessions} sessions x {per_session} messages, one turn per message")
        for writers in (1, 8):
            rate = gateway_rate(Path(tmp) / f"gateway-{writers}.db", writers, sessions, per_session)
            print(f"  {writers} writer thread(s): {rate:,.0f} messages/s")


if __name__ == "__main__":
    sys.exit(main())
