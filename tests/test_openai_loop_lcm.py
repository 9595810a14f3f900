"""ManagedChat with the lossless `lcm` engine chosen by configuration: its tools reach the model and are answered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
from support.strict_chat_api import READ_FILE, SYSTEM, ScriptedModel, StrictChatApi, read_file, serve_strict

import ctxplug
from ctxplug.contrib.openai_loop import ManagedChat

CONTEXT_LENGTH = 8_000


def test_lcm_grep_is_offered_dispatched_and_finds_compacted_turns(tmp_path: Path) -> None:
    config = {"context": {"engine": "lcm", "engines": {"lcm": {"database": str(tmp_path / "lcm.db")}}}}
    engine = ctxplug.load_engine(config, model="gpt-4o", provider="openai", context_length=CONTEXT_LENGTH)
    assert engine.name == "lcm"
    api = StrictChatApi(CONTEXT_LENGTH, ScriptedModel(engine_tool="lcm_grep", engine_tool_every=15))
    history: list[dict[str, Any]] = [SYSTEM]
    with serve_strict(api) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        chat = ManagedChat(client, engine=engine, model="gpt-4o", provider="openai")
        for turn in range(45):
            history = [*history, {"role": "user", "content": f"Turn {turn}: fix the next failing test. " * 12}]
            history = chat.run(history, tools=[READ_FILE], tool_handler=read_file).messages
    assert api.rejections == []
    assert engine.compression_count >= 1
    assert all(entry["tools"][:2] == ["read_file", "lcm_grep"] for entry in api.log)
    grep_calls = {c["id"] for m in history if m["role"] == "assistant" for c in m.get("tool_calls") or ()
                  if c["function"]["name"] == "lcm_grep"}
    answers = [json.loads(m["content"]) for m in history if m["role"] == "tool" and m["tool_call_id"] in grep_calls]
    assert answers and all("error" not in answer for answer in answers)
    assert any("Done with step" in hit["snippet"] for answer in answers for hit in answer["results"])
