"""Which endpoint and key the summary writer uses, from configuration and the providers' environment variables."""

from __future__ import annotations

from typing import Any

import pytest
from support.fake_openai_server import FakeOpenAIServer, answer, fake_openai_fixture, scripted  # noqa: F401

from ctxplug.config import load_config
from ctxplug.errors import SummaryError
from ctxplug.summarizer import SummaryRequest, make_summary_writer
from ctxplug.summarizer.extractive import ExtractiveSummaryWriter
from ctxplug.summarizer.llm import LLMSummaryWriter
from ctxplug.summarizer.llm.client import resolve_endpoint


def config(**compression: Any) -> Any:
    return load_config({"auxiliary": {"compression": compression}})


def test_auto_takes_the_first_provider_with_a_key() -> None:
    env = {"NOUS_API_KEY": "nous-key", "OPENAI_API_KEY": "openai-key"}
    endpoint = resolve_endpoint(config(model="hermes-4"), env)
    assert (endpoint.provider, endpoint.api_key) == ("nous", "nous-key")
    assert endpoint.base_url is not None and "nousresearch" in endpoint.base_url
    env["OPENROUTER_API_KEY"] = "or-key"
    endpoint = resolve_endpoint(config(model="google/gemini-2.5-flash"), env)
    assert (endpoint.provider, endpoint.api_key, endpoint.base_url) == ("openrouter", "or-key",
                                                                        "https://openrouter.ai/api/v1")


def test_main_uses_the_openai_environment() -> None:
    env = {"OPENAI_API_KEY": "sk-main", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    endpoint = resolve_endpoint(config(model="gpt-4o-mini", provider="main"), env)
    assert (endpoint.api_key, endpoint.base_url) == ("sk-main", "http://127.0.0.1:9/v1")


def test_a_base_url_is_a_custom_endpoint_and_the_configured_key_wins() -> None:
    endpoint = resolve_endpoint(config(model="local", base_url="http://127.0.0.1:8080/v1", api_key="cfg-key",
                                       context_length=32_768, timeout=7), {"OPENROUTER_API_KEY": "or"})
    assert (endpoint.provider, endpoint.base_url, endpoint.api_key) == ("custom", "http://127.0.0.1:8080/v1",
                                                                        "cfg-key")
    assert (endpoint.context_length, endpoint.timeout) == (32_768, 7)


def test_the_summary_window_comes_from_the_model_table_when_not_configured() -> None:
    from ctxplug.models import context_length_for

    endpoint = resolve_endpoint(config(model="gpt-4o-mini", provider="main"), {"OPENAI_API_KEY": "k"})
    assert endpoint.context_length == context_length_for("gpt-4o-mini", "main") > 0


@pytest.mark.parametrize(("settings", "env", "names"), [
    ({"model": "m"}, {}, "OPENROUTER_API_KEY"),
    ({"model": "m", "provider": "openrouter"}, {"NOUS_API_KEY": "x"}, "OPENROUTER_API_KEY"),
    ({"base_url": "http://127.0.0.1:1/v1"}, {}, "auxiliary.compression.model"),
    ({"model": "m", "provider": "custom"}, {"OPENAI_API_KEY": "k"}, "base_url is not set"),
])
def test_missing_pieces_are_named(settings: dict[str, Any], env: dict[str, str], names: str) -> None:
    with pytest.raises(SummaryError) as raised:
        resolve_endpoint(config(**settings), env)
    assert raised.value.kind == "config" and names in str(raised.value)


def test_make_summary_writer_builds_the_llm_writer_for_a_configured_model(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = scripted(answer("## Goal\nfrom the configured endpoint"))
    writer = make_summary_writer(config(model="tiny", base_url=fake_openai.base_url, timeout=5))
    assert isinstance(writer, LLMSummaryWriter)
    result = writer.write(SummaryRequest(messages=[{"role": "user", "content": "hello there"}], budget_tokens=2_000))
    assert (result.outcome, result.text) == ("llm", "## Goal\nfrom the configured endpoint")
    assert fake_openai.requests[0]["model"] == "tiny"


def test_a_model_without_a_key_summarizes_offline_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "NOUS_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    writer = make_summary_writer(config(model="some-model"))
    result = writer.write(SummaryRequest(messages=[{"role": "user", "content": "keep this"}], budget_tokens=2_000))
    assert result.outcome == "extractive" and result.calls == 0 and '"keep this"' in result.text
    assert result.error is not None and "OPENROUTER_API_KEY" in result.error
    assert isinstance(make_summary_writer(config()), ExtractiveSummaryWriter)
