"""The gateway under load: 50 sessions × 200 messages from 8 threads; nothing lost, nothing reordered."""

from __future__ import annotations

import random
import threading
from pathlib import Path

from support.compressor_engines import RecordingWriter, make_engine

from ctxplug.contrib.gateway import Gateway
from ctxplug.contrib.session_store import SQLiteSessionStore
from ctxplug.host import EngineHost
from ctxplug.hygiene import SessionHygiene

SESSIONS = 50
PER_SESSION = 200
THREADS = 8


def no_engine(session_id: str) -> EngineHost:
    raise AssertionError(f"hygiene fired for {session_id} in a window of a million tokens")


def run_writers(gateway: Gateway, plan: list[list[tuple[str, str]]]) -> list[BaseException]:
    """Each thread sends its planned (session, text) messages in order, one turn per message."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(plan))

    def writer(messages: list[tuple[str, str]]) -> None:
        try:
            start.wait()
            for session_id, text in messages:
                with gateway.turn(session_id) as turn:
                    turn.save([*turn.messages, {"role": "user", "content": text}])
        except BaseException as exc:  # reported to the test thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(messages,)) for messages in plan]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return errors


def shared_plan(seed: int) -> list[list[tuple[str, str]]]:
    """Every session gets 25 messages from each of the 8 threads, the threads visiting sessions in random order."""
    rng = random.Random(seed)
    plan = []
    for thread in range(THREADS):
        visits = [f"s{s}" for s in range(SESSIONS) for _ in range(PER_SESSION // THREADS)]
        rng.shuffle(visits)
        counters: dict[str, int] = {}
        messages = []
        for session_id in visits:
            k = counters[session_id] = counters.get(session_id, -1) + 1
            messages.append((session_id, f"t{thread}:{k}"))
        plan.append(messages)
    return plan


def test_fifty_sessions_times_two_hundred_messages_from_eight_threads(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "load.db")
    gateway = Gateway(store, hygiene=SessionHygiene(1_000_000), engine_for=no_engine)
    errors = run_writers(gateway, shared_plan(seed=5))
    assert errors == []
    total = 0
    for s in range(SESSIONS):
        texts = [m["content"] for m in store.load(f"s{s}").messages]
        total += len(texts)
        assert len(texts) == PER_SESSION
        for thread in range(THREADS):
            # every thread's messages to this session are all there, in the order that thread sent them
            assert [int(t.split(":")[1]) for t in texts if t.startswith(f"t{thread}:")] == list(range(25))
    assert total == SESSIONS * PER_SESSION
    assert len(gateway.locks) == 0
    store.close()


def test_compressions_under_load_lose_and_reorder_nothing(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "compress.db")
    gateway = Gateway(
        store, hygiene=SessionHygiene(4_000),
        engine_for=lambda sid: EngineHost(make_engine(context_length=4_000, writer=RecordingWriter(),
                                                      protect_last_n=4)),
    )
    plan = [[(f"c{s}", f"t{thread}:{k}:" + "w" * 600) for k in range(12) for s in range(4)] for thread in range(4)]
    assert run_writers(gateway, plan) == []
    for s in range(4):
        session = store.load(f"c{s}")
        assert session.generation >= 1  # hygiene did compress these sessions under concurrent traffic
        written = [m["content"].split(":") for m in store.archived(f"c{s}") if m["role"] == "user"
                   and m["content"].startswith("t")]
        for thread in range(4):
            seen: list[int] = []
            for tag, k, _ in written:
                if tag == f"t{thread}" and int(k) not in seen:  # a compression re-inserts kept messages
                    seen.append(int(k))
            assert seen == list(range(12))
    store.close()
