"""Gateway turns: hygiene before each message, its compression persisted, FIFO per-session locking."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.compressor_engines import RecordingWriter, make_engine

from ctxplug.contrib.gateway import Gateway, SessionLocks
from ctxplug.contrib.session_store import SQLiteSessionStore
from ctxplug.errors import CtxplugError
from ctxplug.host import EngineHost
from ctxplug.hygiene import SessionHygiene
from ctxplug.messages import is_compaction_summary
from ctxplug.tokens import estimate_messages_tokens_rough

CONTEXT = 8_000


def turn_messages(k: int, chars: int = 1200) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"request {k} " + "u" * chars},
            {"role": "assistant", "content": f"reply {k} " + "a" * chars}]


class Engines:
    """Builds real compressor engines on demand and counts how many were built."""

    def __init__(self) -> None:
        self.built: list[str] = []

    def __call__(self, session_id: str) -> EngineHost:
        self.built.append(session_id)
        return EngineHost(make_engine(context_length=CONTEXT, writer=RecordingWriter(), protect_last_n=4))


@pytest.fixture
def store(tmp_path: Path) -> SQLiteSessionStore:
    opened = SQLiteSessionStore(tmp_path / "gateway.db")
    yield opened  # type: ignore[misc]
    opened.close()


def test_a_small_session_runs_its_turn_without_building_an_engine(store: SQLiteSessionStore) -> None:
    engines = Engines()
    gateway = Gateway(store, hygiene=SessionHygiene(CONTEXT), engine_for=engines)
    with gateway.turn("chat") as turn:
        assert turn.messages == [] and turn.hygiene.decision.reason == "too_few_messages"
        turn.save([{"role": "system", "content": "be brief"}, *turn_messages(0)], usage={"prompt_tokens": 900})
    with gateway.turn("chat") as turn:
        assert len(turn.messages) == 3 and turn.hygiene.decision.reason == "too_few_messages"
        turn.save([*turn.messages, *turn_messages(1)])
    with gateway.turn("chat") as turn:
        assert turn.hygiene.decision.reason == "under_threshold"
        # the reported prompt covered the first two messages; the reply and the next turn are estimated
        decision = turn.hygiene.decision
        assert decision.token_source == "reported"
        assert decision.tokens == 900 + estimate_messages_tokens_rough(turn.messages[2:])
    assert engines.built == []


def test_hygiene_compresses_an_overgrown_session_and_persists_it(store: SQLiteSessionStore) -> None:
    engines = Engines()
    gateway = Gateway(store, hygiene=SessionHygiene(CONTEXT), engine_for=engines)
    overnight = [{"role": "system", "content": "be brief"}]
    for k in range(12):
        overnight += turn_messages(k)
    store.append("chat", overnight)
    with gateway.turn("chat") as turn:
        outcome = turn.hygiene
        assert outcome.decision.compress and outcome.compressed and not outcome.still_over
        assert any(is_compaction_summary(m) for m in turn.messages)
        assert len(turn.messages) < len(overnight)
        turn.save([*turn.messages, {"role": "user", "content": "good morning"}])
    assert engines.built == ["chat"]
    stored = store.load("chat")
    assert stored.generation == 1 and stored.messages[-1]["content"] == "good morning"
    assert store.archived("chat")[:len(overnight)] == overnight  # nothing was deleted
    with gateway.turn("chat") as turn:
        assert not turn.hygiene.decision.compress
    assert engines.built == ["chat"]


def test_a_session_that_stays_over_is_logged_once_and_then_held(
        store: SQLiteSessionStore, caplog: pytest.LogCaptureFixture) -> None:
    engines = Engines()
    gateway = Gateway(store, hygiene=SessionHygiene(CONTEXT), engine_for=engines)
    store.append("chat", [{"role": "system", "content": "s"}, *turn_messages(0),
                          {"role": "user", "content": "paste: " + "x" * 40_000}])
    with caplog.at_level("WARNING", logger="ctxplug"):
        for _ in range(3):
            with gateway.turn("chat") as turn:
                turn.save([*turn.messages, {"role": "assistant", "content": "too long to handle"}])
    assert engines.built == ["chat"]  # compressed once, then held
    assert turn.hygiene.decision.reason == "held"
    warnings = [r.getMessage() for r in caplog.records if "session chat" in r.getMessage()]
    assert len(warnings) == 1 and "85%" in warnings[0]


def test_saving_a_history_the_agent_compressed_replaces_the_transcript(store: SQLiteSessionStore) -> None:
    gateway = Gateway(store, hygiene=SessionHygiene(CONTEXT), engine_for=Engines())
    with gateway.turn("chat") as turn:
        turn.save([{"role": "system", "content": "s"}, *turn_messages(0), *turn_messages(1)])
    with gateway.turn("chat") as turn:
        compacted = [turn.messages[0], {"role": "user", "content": "[CONTEXT COMPACTION] two turns"},
                     *turn_messages(2)]
        turn.save(compacted, usage={"prompt_tokens": 700, "completion_tokens": 5})
        turn.save([*compacted, {"role": "user", "content": "next"}])
    stored = store.load("chat")
    assert stored.messages == [*compacted, {"role": "user", "content": "next"}]
    assert (stored.generation, stored.last_prompt_tokens) == (1, 700)


def test_hygiene_respects_compression_enabled(store: SQLiteSessionStore) -> None:
    engines = Engines()
    gateway = Gateway(store, hygiene=SessionHygiene(CONTEXT, enabled=False), engine_for=engines)
    store.append("chat", [m for k in range(12) for m in turn_messages(k)])
    with gateway.turn("chat") as turn:
        assert turn.hygiene.decision.reason == "disabled" and len(turn.messages) == 24
    assert engines.built == []


def test_turns_of_one_session_are_served_in_arrival_order() -> None:
    locks = SessionLocks()
    served: list[int] = []
    release = threading.Event()

    def first() -> None:
        with locks.hold("s"):
            release.wait(10)
            served.append(0)

    def later(k: int) -> None:
        with locks.hold("s"):
            served.append(k)

    threads = [threading.Thread(target=first)]
    threads[0].start()
    for k in range(1, 8):
        while locks.queued("s") != k:  # thread k-1 is waiting: arrival order is fixed
            time.sleep(0.001)
        threads.append(threading.Thread(target=later, args=(k,)))
        threads[-1].start()
    while locks.queued("s") != 8:
        time.sleep(0.001)
    release.set()
    for thread in threads:
        thread.join(10)
    assert served == list(range(8))
    assert len(locks) == 0  # entries go away with their last user


def test_other_sessions_do_not_wait_for_a_busy_one() -> None:
    locks = SessionLocks()
    release = threading.Event()

    def hold_busy() -> None:
        with locks.hold("busy"):
            release.wait(10)

    holder = threading.Thread(target=hold_busy)
    holder.start()
    while locks.queued("busy") != 1:
        time.sleep(0.001)
    started = time.monotonic()
    with locks.hold("idle"):
        assert time.monotonic() - started < 1
    release.set()
    holder.join(10)


def test_a_nested_turn_of_the_same_session_is_an_error(store: SQLiteSessionStore) -> None:
    gateway = Gateway(store, hygiene=SessionHygiene(CONTEXT), engine_for=Engines())
    with gateway.turn("chat"), pytest.raises(CtxplugError, match="do not nest"), gateway.turn("chat"):
        pass
    with gateway.turn("chat") as turn:  # the failed attempt left the lock usable
        assert turn.messages == []
    assert len(gateway.locks) == 0
