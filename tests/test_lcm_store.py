"""The SQLite store: schema and migrations, immutability, one copy per message, isolated sessions, odd content."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ctxplug.errors import CtxplugError
from ctxplug.plugins.context_engine.lcm.schema import SCHEMA_VERSION
from ctxplug.plugins.context_engine.lcm.sqlite_store import QuerySyntaxError, SQLiteStore


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_a_new_store_is_wal_with_its_schema_version(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "deep" / "lcm.db")
    assert store.stats().schema_version == SCHEMA_VERSION
    store.close()
    raw = sqlite3.connect(tmp_path / "deep" / "lcm.db")
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (tmp_path / "deep" / "lcm.db").stat().st_mode & 0o077 == 0, "transcripts are readable by the owner only"
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_store_from_a_newer_version_or_another_program_is_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.db"
    SQLiteStore(newer).close()
    raw = sqlite3.connect(newer)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(CtxplugError, match="upgrade ctxplug"):
        SQLiteStore(newer)
    foreign = tmp_path / "foreign.db"
    raw = sqlite3.connect(foreign)
    raw.execute("CREATE TABLE notes (x)")
    raw.close()
    with pytest.raises(CtxplugError, match="not an lcm store"):
        SQLiteStore(foreign)


def test_the_same_message_at_the_same_position_is_stored_once(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lcm.db")
    batch = [(0, _user("hello")), (1, {"role": "assistant", "content": "hi"})]
    assert store.put_messages("s", batch) == [0, 1]
    assert store.put_messages("s", batch) == [0, 1]
    assert store.message_count("s") == 2


def test_an_edited_message_is_appended_and_the_stored_one_kept(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lcm.db")
    store.put_messages("s", [(0, _user("one")), (1, _user("two")), (2, _user("three"))])
    assert store.put_messages("s", [(1, _user("TWO")), (2, _user("three"))]) == [3, 4]
    assert [m.message["content"] for m in store.messages("s", 0, 10)] == ["one", "two", "three", "TWO", "three"]


def test_stored_messages_cannot_be_changed_or_deleted(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lcm.db")
    store.put_messages("s", [(0, _user("fixed"))])
    raw = sqlite3.connect(tmp_path / "lcm.db")
    with pytest.raises(sqlite3.DatabaseError, match="immutable"):
        raw.execute("UPDATE messages SET role = 'x'")
    with pytest.raises(sqlite3.DatabaseError, match="never deleted"):
        raw.execute("DELETE FROM messages")


def test_sessions_are_isolated(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lcm.db")
    store.put_messages("a", [(0, _user("apple pie recipe"))])
    store.put_messages("b", [(0, _user("banana bread recipe"))])
    assert [h.session for h in store.search("recipe", "a", 10, 0)] == ["a"]
    assert {h.session for h in store.search("recipe", None, 10, 0)} == {"a", "b"}
    assert store.messages("b", 0, 0)[0].message["content"] == "banana bread recipe"
    assert store.search("apple", "b", 10, 0) == []


def test_search_sees_every_message_even_before_the_index_batch_fills(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lcm.db")
    store.put_messages("s", [(i, _user(f"note number{i}")) for i in range(3)])
    assert [h.seq for h in store.search("number1", "s", 10, 0)] == [1]
    other = SQLiteStore(tmp_path / "lcm.db")  # another process's view: nothing cached, the index catches up
    store.put_messages("s", [(3, _user("late arrival"))])
    assert [h.seq for h in other.search("arrival", None, 10, 0)] == [3]


def test_content_that_is_not_valid_unicode_round_trips(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lcm.db")
    odd = "nul\x00byte, lone \ud800 surrogate, emoji 🦓, cjk 修复"
    store.put_messages("s", [(0, _user(odd)), (1, {"role": "assistant", "content": [{"type": "text", "text": odd}]})])
    stored = store.messages("s", 0, 1)
    assert stored[0].message["content"] == odd and stored[1].message["content"][0]["text"] == odd
    assert [h.seq for h in store.search("surrogate", "s", 10, 0)] == [1, 0]
    assert store.put_messages("s", [(0, _user(odd))]) == [0], "hashing odd content is stable"


def test_fts_syntax_errors_are_clear(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lcm.db")
    store.put_messages("s", [(0, _user("text"))])
    for query in ('"unclosed', "a AND (", "NEAR(", "*", "col:x"):
        with pytest.raises(QuerySyntaxError, match="invalid full-text query"):
            store.search(query, "s", 10, 0)


def test_a_non_json_message_is_a_clear_error(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "lcm.db")
    with pytest.raises(CtxplugError, match="cannot be stored as JSON"):
        store.put_messages("s", [(0, {"role": "user", "content": object()})])
    assert store.message_count("s") == 0
