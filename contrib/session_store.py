"""Persisted chat sessions for gateways: the `SessionStore` interface and its SQLite implementation.

A gateway keeps one transcript per chat (a user, a channel) across processes and days. The store keeps every
message ever written: a compression archives the rows it replaces (``active = 0``) instead of deleting them, so a
rewrite can never lose the transcript (the reference lost data in exactly that step, #21301 / #61145).

Concurrency: every write is one transaction that takes the database's write lock before reading the session's
sequence counter (``BEGIN IMMEDIATE``), so messages get gap-free, strictly increasing positions in commit order
even with several processes on one file. A replacement states the version it was computed from and fails with
`SessionConflictError` if anything was written since, instead of overwriting newer messages.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ctxplug.errors import CtxplugError
from ctxplug.messages import Message

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0,
    last_prompt_tokens INTEGER,
    prompt_messages INTEGER,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    active INTEGER NOT NULL DEFAULT 1,
    body TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS messages_active ON messages (session_id, active, seq);
"""


class SessionConflictError(CtxplugError):
    """A session changed between reading it and replacing it; reload it and compute the replacement again."""


@dataclass(frozen=True)
class StoredSession:
    """A session's active transcript and what hygiene needs to know about it.

    ``version`` counts every message ever written to the session (it changes on every write, so it tells whether
    a replacement is still based on the latest state); ``generation`` counts the replacements (compressions);
    ``last_prompt_tokens`` is the prompt size the API reported for the latest response, or None when unknown or
    stale (after a replacement); ``prompt_messages`` is how many leading messages that prompt covered (those
    written later, such as its reply, are not in it).
    """

    session_id: str
    messages: list[Message] = field(default_factory=list)
    version: int = 0
    generation: int = 0
    last_prompt_tokens: int | None = None
    prompt_messages: int | None = None


class SessionStore(ABC):
    """Where a gateway keeps its sessions; implement it over a server database to replace SQLite."""

    @abstractmethod
    def load(self, session_id: str) -> StoredSession:
        """The session's active transcript (an empty session when it does not exist yet)."""

    @abstractmethod
    def append(self, session_id: str, messages: Sequence[Message], *, prompt_tokens: int | None = None,
               prompt_messages: int | None = None) -> int:
        """Add messages at the end, atomically and in order; returns the session's new version.

        ``prompt_tokens`` (a response's reported prompt size) and ``prompt_messages`` (how many leading messages of
        the transcript that prompt covered) are recorded for hygiene when given.
        """

    @abstractmethod
    def replace(self, session_id: str, messages: Sequence[Message], *, based_on_version: int,
                prompt_tokens: int | None = None, prompt_messages: int | None = None) -> int:
        """Archive the active transcript and make ``messages`` the new one (a compression); returns the new version.

        ``prompt_tokens`` / ``prompt_messages`` describe a reported prompt of the new transcript, if there is one
        (else the stored size is cleared: it described the old one). Raises `SessionConflictError` when the session's
        version is no longer ``based_on_version``.
        """

    @abstractmethod
    def archived(self, session_id: str) -> list[Message]:
        """Every message the session ever had, archived ones included, in the order they were written."""

    @abstractmethod
    def session_ids(self) -> list[str]:
        """All sessions, most recently updated first."""

    @abstractmethod
    def close(self) -> None:
        """Release the store's resources."""


class SQLiteSessionStore(SessionStore):
    """`SessionStore` on one SQLite file (WAL mode), safe for threads and for processes sharing the file."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._connection().executescript(SCHEMA)  # idempotent; executescript runs outside any transaction

    def load(self, session_id: str) -> StoredSession:
        db = self._connection()
        db.execute("BEGIN")  # one snapshot for the session row and its messages
        try:
            row = db.execute(
                "SELECT version, generation, last_prompt_tokens, prompt_messages FROM sessions WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            bodies = db.execute(
                "SELECT body FROM messages WHERE session_id = ? AND active = 1 ORDER BY seq", (session_id,)
            ).fetchall()
        finally:
            db.execute("COMMIT")
        if row is None:
            return StoredSession(session_id)
        return StoredSession(session_id, _decode(bodies), *row)

    def append(self, session_id: str, messages: Sequence[Message], *, prompt_tokens: int | None = None,
               prompt_messages: int | None = None) -> int:
        encoded = [_encode(message) for message in messages]
        with self._write() as db:
            version, generation = self._session_row(db, session_id)
            version = _insert_messages(db, session_id, version, generation, encoded)
            if _reported(prompt_tokens) is None:
                db.execute("UPDATE sessions SET version = ?, updated_at = ? WHERE session_id = ?",
                           (version, time.time(), session_id))
            else:
                db.execute(
                    "UPDATE sessions SET version = ?, last_prompt_tokens = ?, prompt_messages = ?, updated_at = ? "
                    "WHERE session_id = ?", (version, prompt_tokens, prompt_messages, time.time(), session_id),
                )
        return version

    def replace(self, session_id: str, messages: Sequence[Message], *, based_on_version: int,
                prompt_tokens: int | None = None, prompt_messages: int | None = None) -> int:
        encoded = [_encode(message) for message in messages]
        with self._write() as db:
            version, generation = self._session_row(db, session_id)
            if version != based_on_version:
                raise SessionConflictError(
                    f"session {session_id!r} is at version {version}, but the replacement was computed from "
                    f"version {based_on_version}; reload the session and compress it again"
                )
            generation += 1
            db.execute("UPDATE messages SET active = 0 WHERE session_id = ? AND active = 1", (session_id,))
            version = _insert_messages(db, session_id, version, generation, encoded)
            reported = _reported(prompt_tokens)
            db.execute(
                "UPDATE sessions SET version = ?, generation = ?, last_prompt_tokens = ?, prompt_messages = ?, "
                "updated_at = ? WHERE session_id = ?",
                (version, generation, reported, prompt_messages if reported else None, time.time(), session_id),
            )
        return version

    def archived(self, session_id: str) -> list[Message]:
        rows = self._connection().execute(
            "SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        return _decode(rows)

    def session_ids(self) -> list[str]:
        rows = self._connection().execute("SELECT session_id FROM sessions ORDER BY updated_at DESC").fetchall()
        return [session_id for (session_id,) in rows]

    def close(self) -> None:
        with self._connections_lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        self._local = threading.local()

    def _connection(self) -> sqlite3.Connection:
        # sqlite3 connections must not be shared between threads; each thread gets its own.
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                                         check_same_thread=False)
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")  # durable at checkpoints; WAL keeps it consistent
            self._local.connection = connection
            with self._connections_lock:
                self._connections.append(connection)
        return connection

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that holds the database's write lock from its first statement."""
        db = self._connection()
        # Threads of this process queue on a Python lock: SQLite's own busy handler waits by sleeping and retrying,
        # which wastes most of the time when 8 threads write at once. Other processes still meet the file lock.
        with self._write_lock:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    @staticmethod
    def _session_row(db: sqlite3.Connection, session_id: str) -> tuple[int, int]:
        db.execute("INSERT OR IGNORE INTO sessions (session_id, updated_at) VALUES (?, ?)", (session_id, time.time()))
        row = db.execute("SELECT version, generation FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        return int(row[0]), int(row[1])


def _insert_messages(db: sqlite3.Connection, session_id: str, version: int, generation: int,
                     encoded: Sequence[str]) -> int:
    """Insert encoded messages at the positions after ``version``; return the session's new version."""
    db.executemany(
        "INSERT INTO messages (session_id, seq, generation, body) VALUES (?, ?, ?, ?)",
        [(session_id, version + offset, generation, body) for offset, body in enumerate(encoded, 1)],
    )
    return version + len(encoded)


def _reported(prompt_tokens: int | None) -> int | None:
    # 0 is what a response without usage reports; storing it would hide the last real size from hygiene
    return prompt_tokens if prompt_tokens and prompt_tokens > 0 else None


def _decode(rows: list[tuple[str]]) -> list[Message]:
    # One parse of a JSON array instead of one json.loads per row: the C decoder does the loop.
    decoded: list[Message] = json.loads("[" + ",".join(body for (body,) in rows) + "]")
    return decoded


def _encode(message: Message) -> str:
    if not isinstance(message, dict) or "role" not in message:
        raise CtxplugError(f"a session stores chat messages (dicts with a 'role'), got {str(message)[:80]!r}")
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))
