"""The SQLite session store: ordered atomic appends, archiving replacements, conflicts, sharing a file."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ctxplug.contrib.session_store import SessionConflictError, SQLiteSessionStore, StoredSession
from ctxplug.errors import CtxplugError


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


@pytest.fixture
def store(tmp_path: Path) -> SQLiteSessionStore:
    opened = SQLiteSessionStore(tmp_path / "sessions.db")
    yield opened  # type: ignore[misc]
    opened.close()


def test_an_unknown_session_is_empty(store: SQLiteSessionStore) -> None:
    assert store.load("nobody") == StoredSession("nobody")


def test_appends_keep_order_content_and_versions(store: SQLiteSessionStore) -> None:
    assert store.append("s", [user("one"), user("two")]) == 2
    tricky = {"role": "assistant", "content": [{"type": "text", "text": "é 中文 \u0000 \"quoted\""}],
              "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    assert store.append("s", [tricky], prompt_tokens=1234) == 3
    loaded = store.load("s")
    assert loaded.messages == [user("one"), user("two"), tricky]
    assert (loaded.version, loaded.generation, loaded.last_prompt_tokens) == (3, 0, 1234)


def test_a_missing_or_zero_usage_keeps_the_last_reported_size(store: SQLiteSessionStore) -> None:
    store.append("s", [user("a")], prompt_tokens=500)
    store.append("s", [user("b")])
    store.append("s", [user("c")], prompt_tokens=0)
    assert store.load("s").last_prompt_tokens == 500


def test_replace_archives_the_old_transcript_and_clears_the_stale_size(store: SQLiteSessionStore) -> None:
    store.append("s", [user(f"m{i}") for i in range(6)], prompt_tokens=9000)
    before = store.load("s")
    summary = user("[CONTEXT COMPACTION] m0..m3")
    version = store.replace("s", [summary, user("m4"), user("m5")], based_on_version=before.version)
    after = store.load("s")
    assert after.messages == [summary, user("m4"), user("m5")]
    assert (after.version, after.generation, after.last_prompt_tokens) == (version, 1, None)
    everything = store.archived("s")
    assert everything[:6] == before.messages and everything[6:] == after.messages
    store.append("s", [user("m6")])
    assert store.load("s").messages[-1] == user("m6")


def test_a_replacement_computed_from_an_old_version_is_refused(store: SQLiteSessionStore) -> None:
    store.append("s", [user("a"), user("b")])
    old = store.load("s")
    store.append("s", [user("arrived meanwhile")])
    with pytest.raises(SessionConflictError, match=r"version 3.*version 2"):
        store.replace("s", [user("summary")], based_on_version=old.version)
    assert store.load("s").messages == [user("a"), user("b"), user("arrived meanwhile")]


def test_rejects_what_is_not_a_message(store: SQLiteSessionStore) -> None:
    with pytest.raises(CtxplugError, match="role"):
        store.append("s", [{"content": "no role"}])
    assert store.load("s").messages == []


def test_sessions_are_listed_most_recent_first(store: SQLiteSessionStore) -> None:
    for name in ("a", "b", "c"):
        store.append(name, [user(name)])
    store.append("a", [user("again")])
    assert store.session_ids()[0] == "a" and sorted(store.session_ids()) == ["a", "b", "c"]


def test_two_processes_appending_to_one_file_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    SQLiteSessionStore(path).close()
    writer = textwrap.dedent("""
        import sys
        from ctxplug.contrib.session_store import SQLiteSessionStore
        store = SQLiteSessionStore(sys.argv[1])
        for k in range(150):
            store.append("shared", [{"role": "user", "content": f"{sys.argv[2]}:{k}"}])
        store.close()
    """)
    procs = [subprocess.Popen([sys.executable, "-c", writer, str(path), name]) for name in ("p", "q")]
    assert [proc.wait(timeout=60) for proc in procs] == [0, 0]
    store = SQLiteSessionStore(path)
    texts = [m["content"] for m in store.load("shared").messages]
    store.close()
    assert len(texts) == 300
    for name in ("p", "q"):
        mine = [int(t.split(":")[1]) for t in texts if t.startswith(name + ":")]
        assert mine == list(range(150))


def test_a_reopened_store_finds_everything(tmp_path: Path) -> None:
    first = SQLiteSessionStore(tmp_path / "s.db")
    first.append("s", [user("kept")], prompt_tokens=42)
    first.close()
    second = SQLiteSessionStore(tmp_path / "s.db")
    assert second.load("s") == StoredSession("s", [user("kept")], 1, 0, 42)
    raw = second.archived("s")
    second.close()
    assert json.dumps(raw) == json.dumps([user("kept")])
