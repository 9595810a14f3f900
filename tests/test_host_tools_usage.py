"""EngineHost: engine tools and their dispatch, usage in OpenAI and Anthropic shapes, model facts from load_engine."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.plugin_project import isolate_plugin_sources

import ctxplug
from ctxplug import ContextEngine, codex_autoraise, hookimpl


def _schema(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}


class RecallEngine(ContextEngine):
    """An engine with one tool that reads the live conversation."""

    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None, force: bool = False) -> list[dict[str, Any]]:
        return messages

    def tools(self) -> list[dict[str, Any]]:
        return [_schema("recall"), _schema("crash")]

    def call_tool(self, name: str, arguments: Any, messages: list[dict[str, Any]] | None = None) -> str | None:
        if name == "crash":
            raise KeyError("index missing")
        if name == "recall":
            return json.dumps({"pattern": arguments.get("pattern"), "messages": len(messages or [])})
        return None


class StatsObserver:
    """An observer that offers its own tool, also claims the engine's tool name, and answers every call."""

    @hookimpl
    def tools(self) -> list[dict[str, Any]]:
        return [_schema("recall"), _schema("stats")]

    @hookimpl
    def call_tool(self, name: str, arguments: dict[str, Any], messages: list[dict[str, Any]] | None) -> str | None:
        return json.dumps({"from": "observer", "tool": name})


class FlakyObserver:
    @hookimpl
    def tools(self) -> list[dict[str, Any]]:
        raise RuntimeError("schema builder broke")

    @hookimpl
    def call_tool(self, name: str, arguments: dict[str, Any], messages: list[dict[str, Any]] | None) -> str | None:
        raise RuntimeError("should never be asked about another plugin's tool")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_plugin_sources(monkeypatch, tmp_path)
    ctxplug.register_context_engine("recall", RecallEngine)


def _host(*observers: object, **facts: Any) -> ctxplug.EngineHost:
    facts.setdefault("context_length", 100_000)
    return ctxplug.load_engine({"context": {"engine": "recall"}}, observers=observers, **facts)


def test_tools_come_from_the_engine_then_the_observers_and_the_engine_keeps_its_names() -> None:
    host = _host(StatsObserver())

    assert [s["function"]["name"] for s in host.tools()] == ["recall", "crash", "stats"]
    assert json.loads(host.call_tool("recall", {"pattern": "x"}, messages=[{"role": "user"}])) == \
        {"pattern": "x", "messages": 1}
    assert json.loads(host.call_tool("stats")) == {"from": "observer", "tool": "stats"}


def test_arguments_may_be_a_json_string_as_models_send_them() -> None:
    answer = json.loads(_host().call_tool("recall", '{"pattern": "TimeoutError"}'))

    assert answer["pattern"] == "TimeoutError"


@pytest.mark.parametrize(("name", "arguments", "expected"), [
    ("nope", {}, "unknown context engine tool: nope"),
    ("recall", "{not json", "invalid arguments for recall"),
    ("recall", "[1, 2]", "must be a JSON object"),
    ("crash", {}, "index missing"),
])
def test_tool_errors_are_answers_not_exceptions(name: str, arguments: Any, expected: str) -> None:
    answer = json.loads(_host().call_tool(name, arguments))

    assert expected in answer["error"]


def test_a_broken_observer_neither_hides_nor_blocks_the_engines_tools(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ctxplug"):
        host = _host(FlakyObserver())
        names = [s["function"]["name"] for s in host.tools()]
        answer = json.loads(host.call_tool("recall", {"pattern": "p"}))

    assert names == ["recall", "crash"]
    assert answer["pattern"] == "p"
    assert "schema builder broke" in caplog.text and "should never be asked" not in caplog.text


OPENAI_USAGE = {"prompt_tokens": 61_000, "completion_tokens": 300,
                "prompt_tokens_details": {"cached_tokens": 50_000}}
ANTHROPIC_USAGE = {"input_tokens": 1_000, "output_tokens": 300, "cache_read_input_tokens": 50_000,
                   "cache_creation_input_tokens": 10_000}


@pytest.mark.parametrize("usage", [
    OPENAI_USAGE,
    SimpleNamespace(prompt_tokens=61_000, completion_tokens=300,
                    prompt_tokens_details=SimpleNamespace(cached_tokens=50_000)),
    ANTHROPIC_USAGE,
    SimpleNamespace(**ANTHROPIC_USAGE),
], ids=["openai-dict", "openai-object", "anthropic-dict", "anthropic-object"])
def test_usage_in_either_shape_drives_the_trigger(usage: Any) -> None:
    host = _host()
    assert host.should_compress() is False

    host.track_usage(usage)

    assert host.engine.last_prompt_tokens == 61_000  # the whole prompt, cached parts included
    assert host.engine.last_usage is not None and host.engine.last_usage.cache_read_tokens == 50_000
    assert host.should_compress() is True  # 61,000 >= 50% of 100,000


def test_load_engine_takes_the_window_from_the_model_table() -> None:
    host = _host(model="gpt-4o", context_length=None)

    assert host.context_length == 128_000 and host.threshold_tokens == 64_000


def test_the_codex_auto_raise_is_announced_once_through_load_engine(caplog: pytest.LogCaptureFixture,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex_autoraise, "_announced", set())  # as in a fresh process
    with caplog.at_level(logging.WARNING):
        first = _host(model="gpt-5.5", provider="openai-codex", context_length=272_000)
        _host(model="gpt-5.5", provider="openai-codex", context_length=272_000)
        other = _host(model="gpt-5.5", provider="openrouter", context_length=272_000)

    assert first.threshold_tokens == int(272_000 * 0.85)
    assert other.threshold_tokens == 136_000
    assert caplog.text.count("ctxplug config set compression.codex_gpt55_autoraise false") == 1
