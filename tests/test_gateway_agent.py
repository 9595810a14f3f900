"""The gateway and the managed chat together, as docs/agent-loop.md shows them, against the strict API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
from support.compressor_engines import RecordingWriter, make_engine
from support.strict_chat_api import READ_FILE, SYSTEM, ScriptedModel, StrictChatApi, read_file, serve_strict

from ctxplug.contrib.gateway import Gateway
from ctxplug.contrib.openai_loop import ManagedChat
from ctxplug.contrib.session_store import SQLiteSessionStore
from ctxplug.host import EngineHost
from ctxplug.hygiene import SessionHygiene

CONTEXT_LENGTH = 8_000


def engine_for(session_id: str) -> EngineHost:
    return EngineHost(make_engine(context_length=CONTEXT_LENGTH, writer=RecordingWriter(), protect_last_n=4))


def test_a_chat_served_turn_by_turn_stores_usage_for_hygiene_and_survives_overnight_growth(tmp_path: Path) -> None:
    api = StrictChatApi(CONTEXT_LENGTH, ScriptedModel())
    store = SQLiteSessionStore(tmp_path / "chats.db")
    gateway = Gateway(store, hygiene=SessionHygiene(CONTEXT_LENGTH), engine_for=engine_for, tools=[READ_FILE])
    with serve_strict(api) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)

        def on_message(chat_id: str, text: str) -> Any:
            with gateway.turn(chat_id) as turn:
                history = [*(turn.messages or [SYSTEM]), {"role": "user", "content": text}]
                turn.save(history)
                chat = ManagedChat(client, engine=engine_for(chat_id), model="gpt-4o", provider="openai")
                result = chat.run(history, tools=[READ_FILE], tool_handler=read_file)
                turn.save(result.messages, usage=result.response.usage)
                return turn.hygiene, result

        for k in range(6):
            hygiene, result = on_message("alice", f"message {k}: what does the parser do?")
        stored = store.load("alice")
        assert stored.messages == result.messages
        assert stored.last_prompt_tokens == api.log[-1]["prompt_tokens"]
        assert hygiene.decision.token_source == "reported"

        # overnight, another channel stored a long exchange without any usage: only hygiene can catch it
        night = []
        for i in range(12):
            night.append({"role": "user", "content": f"log batch {i}: " + "GET /api/items 502 " * 60})
            night.append({"role": "assistant", "content": f"noted batch {i}: " + "upstream timeout " * 40})
        store.append("alice", night)
        hygiene, result = on_message("alice", "good morning, what broke?")
        assert hygiene.compressed and hygiene.decision.compress
        assert hygiene.decision.token_source == "reported"  # the stored size, not a guess, made the call
    assert api.rejections == []
    assert store.load("alice").generation >= 1
    assert len(store.archived("alice")) > len(store.load("alice").messages)
    store.close()
