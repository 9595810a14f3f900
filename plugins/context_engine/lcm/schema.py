"""The SQLite schema of the lossless store and its migrations; the version lives in ``PRAGMA user_version``.

Each migration moves the schema up one version inside the caller's write transaction, so a process that dies
half-way leaves the previous version intact. Messages are immutable: triggers refuse updates and deletes, so not
even a bug elsewhere can rewrite history.
"""

from __future__ import annotations

import sqlite3

from ctxplug.errors import CtxplugError

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # version 1: sessions, messages, the full-text index, summary nodes
        """CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at REAL NOT NULL)""",
        """CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            sid INTEGER NOT NULL REFERENCES sessions(id),
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            digest BLOB NOT NULL,
            created_at REAL NOT NULL,
            tokens INTEGER NOT NULL,
            body BLOB NOT NULL,
            UNIQUE (sid, seq))""",
        # contentless: the text lives once, in messages.body; snippets are cut from the decoded message. The
        # session column holds one token per session, so a search within a session is an index intersection
        # instead of a scan over every other session's hits.
        "CREATE VIRTUAL TABLE message_fts USING fts5(text, session, content='', "
        "tokenize='unicode61 remove_diacritics 2')",
        # merge index segments in runs of 8 instead of 4: less merge work per message stored, searches unchanged
        "INSERT INTO message_fts (message_fts, rank) VALUES ('automerge', 8)",
        # the index trails the messages by at most a batch (see SQLiteStore); this is how far it has come
        "CREATE TABLE fts_state (id INTEGER PRIMARY KEY CHECK (id = 1), indexed_upto INTEGER NOT NULL)",
        "INSERT INTO fts_state VALUES (1, 0)",
        """CREATE TABLE nodes (
            id INTEGER PRIMARY KEY,
            sid INTEGER NOT NULL REFERENCES sessions(id),
            depth INTEGER NOT NULL,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            parent INTEGER REFERENCES nodes(id),
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            outcome TEXT NOT NULL,
            created_at REAL NOT NULL)""",
        "CREATE INDEX nodes_by_session ON nodes(sid, depth, first_seq)",
        "CREATE INDEX nodes_by_parent ON nodes(parent)",
        """CREATE TRIGGER messages_are_immutable BEFORE UPDATE ON messages
            BEGIN SELECT RAISE(ABORT, 'lcm: stored messages are immutable'); END""",
        """CREATE TRIGGER messages_are_kept BEFORE DELETE ON messages
            BEGIN SELECT RAISE(ABORT, 'lcm: stored messages are never deleted'); END""",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)


class SchemaError(CtxplugError):
    """The store file was written by a newer ctxplug, or is not an lcm store."""


def schema_version(connection: sqlite3.Connection) -> int:
    """The schema version recorded in the file (0 for a new file)."""
    return int(connection.execute("PRAGMA user_version").fetchone()[0])


def migrate(connection: sqlite3.Connection, path: str) -> int:
    """Bring the schema up to `SCHEMA_VERSION` inside the caller's transaction; return the version found."""
    found = schema_version(connection)
    if found > SCHEMA_VERSION:
        raise SchemaError(f"{path}: the lcm store has schema version {found}, this ctxplug knows up to "
                          f"{SCHEMA_VERSION}; upgrade ctxplug or point context.engines.lcm.database elsewhere")
    if found == 0 and connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
        raise SchemaError(f"{path}: the file is an SQLite database but not an lcm store; "
                          "choose another path for context.engines.lcm.database")
    for statements in MIGRATIONS[found:]:
        for statement in statements:
            connection.execute(statement)
    if found < SCHEMA_VERSION:
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return found
