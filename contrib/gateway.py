"""A chat gateway's session handling: one turn at a time per session, session hygiene before each turn.

::

    store = SQLiteSessionStore("sessions.db")
    gateway = Gateway(store, hygiene=SessionHygiene(200_000, enabled=cfg.compression.enabled),
                      engine_for=lambda session_id: ctxplug.load_engine(cfg, model=MODEL, provider=PROVIDER))

    with gateway.turn(chat_id) as turn:            # waits for this chat's earlier messages; runs hygiene
        history = [*turn.messages, {"role": "user", "content": text}]
        turn.save(history)                         # the incoming message is stored before the agent runs
        result = chat.run(history, tools=tools, tool_handler=run_tool)
        turn.save(result.messages, usage=result.response.usage)

Turns of one session run one after the other, in the order they arrived (a first-come, first-served lock per
session); turns of different sessions run in parallel. The lock covers one process: gateways in several processes
sharing a store still never lose a message (the store's writes are atomic and a replacement is refused when the
session moved on), but their turns of one session may interleave.
"""

from __future__ import annotations

import logging
import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ctxplug.contrib.session_store import SessionConflictError, SessionStore, StoredSession
from ctxplug.errors import CtxplugError
from ctxplug.host import EngineHost
from ctxplug.hygiene import HygieneOutcome, SessionHygiene
from ctxplug.messages import Message
from ctxplug.usage import normalize_usage

log = logging.getLogger("ctxplug")


@dataclass
class _Queue:
    """One session's first-come, first-served lock: tickets handed out on arrival, served in order."""

    condition: threading.Condition = field(default_factory=threading.Condition)
    next_ticket: int = 0
    serving: int = 0
    users: int = 0
    owner: int | None = None


class SessionLocks:
    """Per-session FIFO locks; a session's entry exists only while someone holds or waits for it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._queues: dict[str, _Queue] = {}

    @contextmanager
    def hold(self, session_id: str) -> Iterator[None]:
        """Hold the session's lock; waiters are served in the order they called `hold`."""
        me = threading.get_ident()
        with self._guard:
            queue = self._queues.setdefault(session_id, _Queue())
            if queue.owner == me:
                raise CtxplugError(f"session {session_id!r} is already in a turn on this thread; finish that turn "
                                   f"first (turns of one session do not nest)")
            ticket = queue.next_ticket
            queue.next_ticket += 1
            queue.users += 1
        try:
            with queue.condition:
                queue.condition.wait_for(lambda: queue.serving == ticket)
                queue.owner = me
            yield
        finally:
            with queue.condition:
                queue.owner = None
                queue.serving += 1
                queue.condition.notify_all()
            with self._guard:
                queue.users -= 1
                if queue.users == 0:
                    del self._queues[session_id]

    def queued(self, session_id: str) -> int:
        """How many turns of the session are running or waiting (0 when it is idle)."""
        with self._guard:
            queue = self._queues.get(session_id)
            return queue.users if queue is not None else 0

    def __len__(self) -> int:
        """How many sessions are busy."""
        with self._guard:
            return len(self._queues)


class Turn:
    """One session's turn: the history after hygiene, and `save` to persist how it continues."""

    def __init__(self, store: SessionStore, session: StoredSession, hygiene: HygieneOutcome) -> None:
        self.session_id = session.session_id
        self.hygiene = hygiene
        self._store = store
        self._session = session

    @property
    def messages(self) -> list[Message]:
        """The session's history as saved so far (a copy: extend it and `save` the result)."""
        return list(self._session.messages)

    def save(self, history: Sequence[Message], *, usage: Any = None) -> None:
        """Persist ``history`` as the session's transcript; ``usage`` is that of the response ``history`` ends with.

        A history that extends the saved one is appended; any other (the agent's engine compressed it) replaces
        the transcript, whose old rows are archived. The usage's prompt covered every message but the last (the
        reply); hygiene adds an estimate for whatever is stored after it.
        """
        session = self._session
        tokens = normalize_usage(usage).prompt_tokens or None
        covered = len(history) - 1 if tokens else None
        if _extends(history, session.messages):
            added = list(history[len(session.messages):])
            if not added and tokens is None:
                return
            version = self._store.append(self.session_id, added, prompt_tokens=tokens, prompt_messages=covered)
            generation = session.generation
            if tokens is None:
                tokens, covered = session.last_prompt_tokens, session.prompt_messages
        else:
            version = self._store.replace(self.session_id, history, based_on_version=session.version,
                                          prompt_tokens=tokens, prompt_messages=covered)
            generation = session.generation + 1
        self._session = StoredSession(self.session_id, list(history), version, generation, tokens, covered)


class Gateway:
    """Runs each incoming message's turn under its session's lock, after session hygiene."""

    def __init__(
        self,
        store: SessionStore,
        *,
        hygiene: SessionHygiene,
        engine_for: Callable[[str], EngineHost],
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        self.store = store
        self.hygiene = hygiene
        self.engine_for = engine_for
        self.tools = list(tools) if tools else None
        self.locks = SessionLocks()

    @contextmanager
    def turn(self, session_id: str) -> Iterator[Turn]:
        """Wait for the session's earlier turns, run hygiene on its stored history, and hand the turn over."""
        with self.locks.hold(session_id):
            session = self.store.load(session_id)
            outcome = self.hygiene.run(
                session_id, session.messages, lambda: self.engine_for(session_id),
                reported_prompt_tokens=session.last_prompt_tokens, reported_messages=session.prompt_messages,
                tools=self.tools,
            )
            if outcome.warning:
                log.warning("session %s: %s", session_id, outcome.warning)
            if outcome.compressed:
                session = self._replace(session, outcome.messages)
            yield Turn(self.store, session, outcome)

    def _replace(self, session: StoredSession, messages: list[Message]) -> StoredSession:
        try:
            version = self.store.replace(session.session_id, messages, based_on_version=session.version)
        except SessionConflictError:
            # Another process wrote meanwhile: keep its messages, hygiene tries again on the next message.
            self.hygiene.forget(session.session_id)
            return self.store.load(session.session_id)
        return StoredSession(session.session_id, messages, version, session.generation + 1, None)


def _extends(history: Sequence[Message], saved: Sequence[Message]) -> bool:
    """True when ``history`` starts with ``saved`` (the same objects, or equal ones)."""
    if len(history) < len(saved):
        return False
    return all(map(operator.is_, history, saved)) or list(history[:len(saved)]) == list(saved)
