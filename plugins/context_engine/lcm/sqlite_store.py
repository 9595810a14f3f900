"""`SQLiteStore`: the lossless store in one SQLite file (WAL, FTS5), safe to share between processes.

Every write is one ``BEGIN IMMEDIATE`` transaction, so a writer takes the lock before reading what it compares
against and a message whose ``put_messages`` returned is committed. Lock contention waits in SQLite's busy
handler and is then retried with back-off up to ``busy_timeout`` in total; only after that does the caller see
a `StoreBusyError`, never a bare "database is locked".

The full-text index is updated in batches of `INDEX_BATCH` messages rather than on every turn: each FTS5 commit
writes a new index segment, which made per-turn indexing five times slower than storing the messages. Messages
are durable at once; the index catches up inside the write that crosses the batch size and before every search,
so a search never misses a stored message.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ctxplug.errors import CtxplugError
from ctxplug.plugins.context_engine.lcm.codec import content_digest, decode_body, encode_body, search_text
from ctxplug.plugins.context_engine.lcm.schema import migrate, schema_version
from ctxplug.plugins.context_engine.lcm.store import (
    Message,
    SearchHit,
    SearchOrder,
    SpanFacts,
    StoredMessage,
    StoreStats,
    SummaryNode,
)

T = TypeVar("T")

_NODE_COLUMNS = "n.id, s.name, n.depth, n.first_seq, n.last_seq, n.text, n.tokens, n.outcome, n.created_at, n.parent"
_MESSAGE_COLUMNS = "m.id, s.name, m.seq, m.role, m.created_at, m.tokens, m.body"
INDEX_BATCH = 512


class StoreError(CtxplugError):
    """The store cannot do what was asked (an unreadable file, a full disk); the message says which file."""


class StoreBusyError(StoreError):
    """Another process held the store's write lock for longer than ``busy_timeout``."""


class QuerySyntaxError(StoreError):
    """A full-text query is not valid FTS5 syntax."""


class SQLiteStore:
    """`LcmStore` over one SQLite file; thread-safe within a process, and shared safely between processes."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0, synchronous: str = "normal",
                 clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self.clock = clock
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                # whole transcripts, secrets included: readable by the owner only (SQLite gives its -wal and -shm
                # files the same mode)
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            self._db = sqlite3.connect(self.path, timeout=min(busy_timeout, 5.0), isolation_level=None,
                                       check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the lcm store {self.path}: {exc}") from None
        self._retrying(lambda: self._db.execute("PRAGMA journal_mode=WAL").fetchone())
        self._db.execute(f"PRAGMA synchronous={'FULL' if synchronous == 'full' else 'NORMAL'}")
        # a larger write-ahead log between checkpoints: fewer copies back into the database file while ingesting
        self._db.execute("PRAGMA wal_autocheckpoint=4000")
        self._db.execute("PRAGMA cache_size=-32768")
        self._session_ids: dict[str, int] = {}
        self._unindexed: dict[int, str] = {}  # search texts of rows this process stored and has not indexed yet
        self._write(lambda db: migrate(db, str(self.path)))

    # writing
    def put_messages(self, session: str, entries: Sequence[tuple[int, Message]]) -> list[int]:
        """Store ``(seq, message)`` entries once each (see `LcmStore.put_messages`); return their seqs."""
        if not entries:
            return []
        # CPU work outside the lock. A message's stored size is its JSON's bytes / 4: the same order as the rough
        # estimate of its text, at no cost on this hot path, and never below it (it includes the framing).
        rows = []
        for seq, message in entries:
            body = encode_body(message)
            rows.append((seq, str(message.get("role") or ""), content_digest(body), (len(body) + 3) // 4, body,
                         search_text(message)))
        return self._write(lambda db: self._put(db, session, rows))

    def _put(self, db: sqlite3.Connection, session: str, rows: list[tuple[Any, ...]]) -> list[int]:
        sid = self._session(db, session)
        seqs = [row[0] for row in rows]
        next_seq = db.execute("SELECT coalesce(max(seq), -1) + 1 FROM messages WHERE sid = ?", (sid,)).fetchone()[0]
        existing: dict[int, bytes] = {}
        if min(seqs) < next_seq:  # only a retried or edited turn can meet stored messages
            existing = dict(db.execute("SELECT seq, digest FROM messages WHERE sid = ? AND seq BETWEEN ? AND ?",
                                       (sid, min(seqs), max(seqs))).fetchall())
        next_id = db.execute("SELECT coalesce(max(id), 0) + 1 FROM messages").fetchone()[0]
        now = self.clock()
        inserts, placed = [], []
        diverged = False
        for seq, role, digest, tokens, body, text in rows:
            if not diverged and existing.get(seq) == digest:
                placed.append(seq)
                continue
            # a new message, or history the host edited: append, never overwrite what is stored; after an edit
            # the rest of the batch follows it, so the session's seqs keep the batch's order
            diverged = diverged or seq in existing
            seq, next_seq = next_seq, next_seq + 1
            existing[seq] = digest
            inserts.append((next_id, sid, seq, role, digest, now, tokens, body))
            self._unindexed[next_id] = text
            placed.append(seq)
            next_id += 1
        db.executemany("INSERT INTO messages (id, sid, seq, role, digest, created_at, tokens, body) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", inserts)
        if next_id - 1 - self._indexed_upto(db) >= INDEX_BATCH:
            self._index_pending(db)
        return placed

    def _indexed_upto(self, db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT indexed_upto FROM fts_state").fetchone()[0])

    def _index_pending(self, db: sqlite3.Connection) -> None:
        """Add every message the index has not seen yet (inside the caller's write transaction)."""
        upto = self._indexed_upto(db)
        rows = db.execute("SELECT id, sid FROM messages WHERE id > ? ORDER BY id", (upto,)).fetchall()
        if rows:
            # texts this process computed when it stored the message are reused; others' are decoded again
            texts = [(i, self._unindexed.get(i) or self._stored_text(db, i), session_token(sid)) for i, sid in rows]
            db.executemany("INSERT INTO message_fts (rowid, text, session) VALUES (?, ?, ?)", texts)
            db.execute("UPDATE fts_state SET indexed_upto = ?", (rows[-1][0],))
        self._unindexed.clear()

    @staticmethod
    def _stored_text(db: sqlite3.Connection, message_id: int) -> str:
        body = db.execute("SELECT body FROM messages WHERE id = ?", (message_id,)).fetchone()[0]
        return search_text(decode_body(body))

    def catch_up_index(self) -> None:
        """Bring the full-text index up to date with every stored message."""
        pending = self._read("SELECT (SELECT coalesce(max(id), 0) FROM messages) - indexed_upto FROM fts_state", ())
        if pending[0][0] > 0:
            self._write(self._index_pending)

    def add_node(self, session: str, depth: int, first_seq: int, last_seq: int, text: str, tokens: int,
                 outcome: str, children: Sequence[int] = ()) -> SummaryNode:
        """Store a summary node and make it the parent of ``children``, in one transaction."""
        def insert(db: sqlite3.Connection) -> int:
            sid = self._session(db, session)
            cursor = db.execute("INSERT INTO nodes (sid, depth, first_seq, last_seq, text, tokens, outcome, "
                                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                (sid, depth, first_seq, last_seq, text, tokens, outcome, self.clock()))
            node_id = int(cursor.lastrowid or 0)
            db.executemany("UPDATE nodes SET parent = ? WHERE id = ? AND parent IS NULL",
                           [(node_id, child) for child in children])
            return node_id

        node = self.node(self._write(insert))
        assert node is not None
        return node

    # reading
    def messages(self, session: str, first_seq: int, last_seq: int, limit: int | None = None) -> list[StoredMessage]:
        """The stored messages of ``session`` in ``first_seq..last_seq``, in order."""
        sql = (f"SELECT {_MESSAGE_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.sid "
               "WHERE s.name = ? AND m.seq BETWEEN ? AND ? ORDER BY m.seq LIMIT ?")
        rows = self._read(sql, (session, first_seq, last_seq, -1 if limit is None else limit))
        return [StoredMessage(r[0], r[1], r[2], r[3], r[4], r[5], decode_body(r[6])) for r in rows]

    def message_count(self, session: str) -> int:
        """How many messages ``session`` holds."""
        rows = self._read("SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.sid WHERE s.name = ?",
                          (session,))
        return int(rows[0][0])

    def locate(self, message_id: int) -> tuple[str, int] | None:
        """The session and seq of a message id, or None."""
        rows = self._read("SELECT s.name, m.seq FROM messages m JOIN sessions s ON s.id = m.sid WHERE m.id = ?",
                          (message_id,))
        return (str(rows[0][0]), int(rows[0][1])) if rows else None

    def span_facts(self, session: str, first_seq: int, last_seq: int) -> SpanFacts:
        """Counts and bounds of ``first_seq..last_seq``, from the index alone."""
        row = self._read("SELECT count(*), coalesce(sum(m.tokens), 0), min(m.id), max(m.id), min(m.created_at), "
                         "max(m.created_at) FROM messages m JOIN sessions s ON s.id = m.sid "
                         "WHERE s.name = ? AND m.seq BETWEEN ? AND ?", (session, first_seq, last_seq))[0]
        return SpanFacts(int(row[0]), int(row[1]), row[2], row[3], row[4], row[5])

    def node(self, node_id: int) -> SummaryNode | None:
        """One node by id, or None."""
        rows = self._read(f"SELECT {_NODE_COLUMNS} FROM nodes n JOIN sessions s ON s.id = n.sid WHERE n.id = ?",
                          (node_id,))
        return _node(rows[0]) if rows else None

    def children(self, node_id: int) -> list[SummaryNode]:
        """The nodes a condensed node summarizes, in order."""
        rows = self._read(f"SELECT {_NODE_COLUMNS} FROM nodes n JOIN sessions s ON s.id = n.sid "
                          "WHERE n.parent = ? ORDER BY n.first_seq", (node_id,))
        return [_node(r) for r in rows]

    def roots(self, session: str) -> list[SummaryNode]:
        """The session's nodes without a parent, oldest span first."""
        rows = self._read(f"SELECT {_NODE_COLUMNS} FROM nodes n JOIN sessions s ON s.id = n.sid "
                          "WHERE s.name = ? AND n.parent IS NULL ORDER BY n.first_seq", (session,))
        return [_node(r) for r in rows]

    def covering_leaves(self, session: str, seqs: Sequence[int]) -> dict[int, int]:
        """For each seq that a leaf of ``session`` covers, the leaf's id (one query for all of them)."""
        wanted = sorted(set(seqs))
        if not wanted:
            return {}
        rows = self._read("SELECT n.id, n.first_seq, n.last_seq FROM nodes n JOIN sessions s ON s.id = n.sid "
                          "WHERE s.name = ? AND n.depth = 0 AND n.last_seq >= ? AND n.first_seq <= ? "
                          "ORDER BY n.first_seq", (session, wanted[0], wanted[-1]))
        found: dict[int, int] = {}
        for node_id, first, last in rows:
            for seq in wanted[bisect_left(wanted, first):bisect_right(wanted, last)]:
                found.setdefault(seq, int(node_id))
        return found

    def search(self, query: str, session: str | None, limit: int, offset: int,
               order: SearchOrder = "recent") -> list[SearchHit]:
        """Messages matching the FTS5 ``query``; a syntax error becomes a `QuerySyntaxError`."""
        self.catch_up_index()
        match, params = query, (limit, offset)  # type: tuple[str, tuple[Any, ...]]
        if session is not None:
            sid = self._read("SELECT id FROM sessions WHERE name = ?", (session,))
            if not sid:
                return []
            match = f"session : {session_token(sid[0][0])} AND ({query})"
            params = (session, limit, offset)
        where = "message_fts MATCH ?" + (" AND s.name = ?" if session is not None else "")
        sort = "f.rank" if order == "relevance" else "f.rowid DESC"
        sql = (f"SELECT m.id, s.name, m.seq, m.role, m.created_at, m.body FROM message_fts f "
               f"JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.sid "
               f"WHERE {where} ORDER BY {sort} LIMIT ? OFFSET ?")
        try:
            rows = self._read(sql, (match, *params))
        except sqlite3.OperationalError as exc:
            raise QuerySyntaxError(f"invalid full-text query {query!r}: {exc}; FTS5 syntax: words, \"a phrase\", "
                                   "prefix*, AND/OR/NOT, NEAR(a b); put words with punctuation in double "
                                   "quotes") from None
        return [_hit(r) for r in rows]

    def recent(self, session: str | None, limit: int) -> list[SearchHit]:
        """The newest ``limit`` messages (of ``session``, or of every session)."""
        where = "WHERE s.name = ?" if session is not None else ""
        sql = (f"SELECT m.id, s.name, m.seq, m.role, m.created_at, m.body FROM messages m "
               f"JOIN sessions s ON s.id = m.sid {where} ORDER BY m.id DESC LIMIT ?")
        return [_hit(r) for r in self._read(sql, (session, limit) if session is not None else (limit,))]

    def sessions(self) -> list[str]:
        """Every session id in the store, oldest first."""
        return [str(r[0]) for r in self._read("SELECT name FROM sessions ORDER BY id", ())]

    def stats(self) -> StoreStats:
        """Counts and the file size (database plus its write-ahead log)."""
        counts = self._read("SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM messages), "
                            "(SELECT count(*) FROM nodes)", ())[0]
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        with self._lock:
            version = schema_version(self._db)
        return StoreStats(str(self.path), version, int(counts[0]), int(counts[1]), int(counts[2]), size)

    def close(self) -> None:
        """Close the connection (the file stays consistent whether or not this is called)."""
        with self._lock:
            self._db.close()

    # transactions and retries
    def _session(self, db: sqlite3.Connection, name: str) -> int:
        """The id of session ``name``, created when it does not exist yet (inside the caller's write)."""
        sid = self._session_ids.get(name)
        if sid is None:
            row = db.execute("SELECT id FROM sessions WHERE name = ?", (name,)).fetchone()
            if row is None:
                row = (db.execute("INSERT INTO sessions (name, created_at) VALUES (?, ?)",
                                  (name, self.clock())).lastrowid,)
            sid = int(row[0])
            self._session_ids[name] = sid
        return sid

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def transaction() -> T:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                result = work(self._db)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                # rolled-back rows must not stay cached
                self._session_ids.clear()
                self._unindexed.clear()
                raise
            return result

        return self._retrying(transaction)

    def _read(self, sql: str, params: Iterable[Any]) -> list[Any]:
        return self._retrying(lambda: self._db.execute(sql, tuple(params)).fetchall())

    def _retrying(self, action: Callable[[], T]) -> T:
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.005
        while True:
            try:
                with self._lock:
                    return action()
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy:
                    raise
                if time.monotonic() >= deadline:
                    raise StoreBusyError(f"the lcm store {self.path} stayed locked by another process for "
                                         f"{self.busy_timeout:g}s; raise context.engines.lcm.busy_timeout or "
                                         "stop the other writer") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.25)
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"the lcm store {self.path} failed: {exc}") from None


def session_token(sid: int) -> str:
    """The word that stands for a session in the full-text index's ``session`` column."""
    return f"sid{sid}"


def _node(row: Sequence[Any]) -> SummaryNode:
    return SummaryNode(int(row[0]), str(row[1]), int(row[2]), int(row[3]), int(row[4]), str(row[5]), int(row[6]),
                       str(row[7]), float(row[8]), None if row[9] is None else int(row[9]))


def _hit(row: Sequence[Any]) -> SearchHit:
    return SearchHit(int(row[0]), str(row[1]), int(row[2]), str(row[3]), float(row[4]),
                     search_text(decode_body(row[5])))
