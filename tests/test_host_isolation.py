"""EngineHost: an exception inside the engine or an observer never costs the caller its messages."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest
from support.plugin_project import isolate_plugin_sources

import ctxplug
from ctxplug import ContextEngine, hookimpl
from ctxplug.usage import Usage

MESSAGES: list[dict[str, Any]] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello"},
                                  {"role": "assistant", "content": "hi"}, {"role": "user", "content": "more"}]


class ExplodingEngine(ContextEngine):
    """Damages its own copy of the list, then fails, as a buggy engine would."""

    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None, force: bool = False) -> list[dict[str, Any]]:
        messages.pop()
        messages.append({"role": "user", "content": "garbage"})
        raise RuntimeError("summary backend exploded")

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        raise ValueError("trigger bug")


class WrongTypeEngine(ContextEngine):
    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None, force: bool = False) -> list[dict[str, Any]]:
        return "not a list"  # type: ignore[return-value]


class IdentityEngine(ContextEngine):
    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None, force: bool = False) -> list[dict[str, Any]]:
        return messages


class BrokenObserver:
    @hookimpl
    def track_usage(self, usage: Usage) -> None:
        raise RuntimeError("metrics backend down")


class RecordingObserver:
    def __init__(self) -> None:
        self.seen: list[Usage] = []

    @hookimpl
    def track_usage(self, usage: Usage) -> None:
        self.seen.append(usage)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_plugin_sources(monkeypatch, tmp_path)


def _host(factory: type[ContextEngine], observers: tuple[object, ...] = ()) -> ctxplug.EngineHost:
    ctxplug.register_context_engine("under-test", factory)
    return ctxplug.load_engine({"context": {"engine": "under-test"}}, context_length=10_000, observers=observers)


def test_an_engine_that_raises_returns_the_callers_list_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    host = _host(ExplodingEngine)
    messages = copy.deepcopy(MESSAGES)

    with caplog.at_level(logging.WARNING, logger="ctxplug"):
        result = host.compress(messages, current_tokens=9_000)

    assert result is messages and messages == MESSAGES
    report = host.last_report
    assert report is not None and report.outcome == "failed" and report.engine == "under-test"
    assert report.error and "'under-test'" in report.error and "summary backend exploded" in report.error
    assert report.messages_before == report.messages_after == len(MESSAGES)
    assert "summary backend exploded" in caplog.text


def test_a_compress_result_that_is_not_a_list_is_a_failure() -> None:
    host = _host(WrongTypeEngine)

    assert host.compress(MESSAGES) is MESSAGES
    assert host.last_report is not None and host.last_report.outcome == "failed"
    assert "expected a list of messages" in (host.last_report.error or "")


def test_an_unchanged_conversation_comes_back_as_the_callers_object() -> None:
    assert _host(IdentityEngine).compress(MESSAGES) is MESSAGES


def test_a_trigger_that_raises_answers_false() -> None:
    host = _host(ExplodingEngine)

    assert host.should_compress(9_999_999) is False
    assert host.last_error and "trigger bug" in host.last_error


def test_an_observer_that_raises_does_not_stop_the_engine_or_other_observers() -> None:
    recorder = RecordingObserver()
    host = _host(IdentityEngine, observers=(BrokenObserver(), recorder))

    host.track_usage({"prompt_tokens": 7_000, "completion_tokens": 12})

    assert host.engine.last_prompt_tokens == 7_000
    assert host.should_compress() is True  # 7,000 >= threshold 5,000 from the reported usage
    assert [u.prompt_tokens for u in recorder.seen] == [7_000]
    assert host.last_error and "metrics backend down" in host.last_error


def test_observers_can_be_added_after_loading() -> None:
    host = _host(IdentityEngine)
    recorder = RecordingObserver()
    host.add_observer(recorder, name="recorder")

    host.track_usage({"input_tokens": 10, "output_tokens": 2})

    assert [u.prompt_tokens for u in recorder.seen] == [10]


def test_an_observer_class_instead_of_an_instance_is_refused() -> None:
    with pytest.raises(TypeError, match=r"pass RecordingObserver\(\)"):
        _host(IdentityEngine, observers=(RecordingObserver,))
