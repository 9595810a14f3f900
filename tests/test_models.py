"""Model facts: the context-window table, name normalization, routes, overrides, the default, and the Codex notice."""

from __future__ import annotations

import json
import logging
from importlib import resources

import pytest

import ctxplug
from ctxplug import codex_autoraise as autoraise_module
from ctxplug import compute_budgets, context_length_for, load_config, lookup_model
from ctxplug import models as models_module
from ctxplug.codex_autoraise import OPT_OUT_COMMAND, announce_codex_autoraise
from ctxplug.models import DEFAULT_CONTEXT_LENGTH, normalize_model_name


@pytest.fixture(autouse=True)
def fresh_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models_module, "_warned", set())
    monkeypatch.setattr(autoraise_module, "_announced", set())


@pytest.mark.parametrize(("model", "expected"), [
    ("claude-3-haiku-20240307", 200_000),
    ("claude-3-5-sonnet-20241022", 200_000),
    ("anthropic/claude-3.5-sonnet", 200_000),
    ("claude-3-7-sonnet-latest", 200_000),
    ("claude-sonnet-4-20250514", 200_000),
    ("claude-opus-4-1", 200_000),
    ("claude-sonnet-4-5-20250929", 200_000),
    ("claude-haiku-4-5", 200_000),
    ("claude-opus-4-5-20251101", 200_000),
    ("claude-sonnet-4-5[1m]", 1_000_000),  # 1M on request only
    ("claude-sonnet-4[1m]", 1_000_000),
    ("claude-sonnet-4-6", 1_000_000),  # 1M natively from 4.6 on
    ("claude-opus-4-6", 1_000_000),
    ("claude-opus-4-8[1m]", 1_000_000),
    ("anthropic/claude-sonnet-5.5", 1_000_000),
    ("claude-opus-5-5", 1_000_000),
    ("gpt-4o", 128_000),
    ("gpt-4o-2024-08-06", 128_000),
    ("openai/gpt-4o-mini", 128_000),
    ("gpt-4", 8_192),
    ("gpt-4-turbo-2024-04-09", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.1-mini-2025-04-14", 1_047_576),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o3-mini", 200_000),
    ("o4-mini", 200_000),
    ("gpt-5", 400_000),
    ("gpt-5-mini", 400_000),
    ("gpt-5.1-codex-max", 400_000),
    ("gpt-5.4", 1_050_000),
    ("gpt-5.5", 1_050_000),
    ("google/gemini-2.0-flash-001", 1_048_576),
    ("gemini-2.5-pro", 1_048_576),
    ("gemini-3-pro-preview", 1_048_576),
    ("gemini-1.5-pro-002", 2_097_152),
    ("meta-llama/llama-3.1-70b-instruct", 131_072),
    ("Meta-Llama-3-8B-Instruct", 8_192),
    ("llama-3.3-70b-versatile", 131_072),
    ("meta-llama/llama-4-maverick", 1_048_576),
    ("qwen/qwen-2.5-72b-instruct", 131_072),
    ("Qwen/Qwen2.5-Coder-32B-Instruct", 131_072),
    ("qwen3-32b", 32_768),
    ("qwen/qwen3-coder", 262_144),
    ("qwen3-235b-a22b-instruct-2507", 262_144),
    ("deepseek-ai/DeepSeek-V3", 131_072),
    ("deepseek/deepseek-r1", 131_072),
    ("deepseek-chat", 131_072),
    ("nousresearch/hermes-3-llama-3.1-405b", 131_072),
    ("NousResearch/Hermes-4-70B", 131_072),
])
def test_the_table_knows_the_common_models(model: str, expected: int) -> None:
    info = lookup_model(model)
    assert info.context_length == expected
    assert info.source == "table"


@pytest.mark.parametrize(("spelling", "canonical"), [
    ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
    ("openrouter/anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
    ("anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
    ("us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"),
    ("claude-opus-4-1@20250805", "claude-opus-4-1"),
    ("claude-sonnet-4-5-20250929[1m]", "claude-sonnet-4-5[1m]"),
    ("meta.llama3-1-70b-instruct-v1:0", "llama3-1-70b-instruct"),
    ("models/gemini-2.5-pro", "gemini-2.5-pro"),
    ("  GPT-4o  ", "gpt-4o"),
])
def test_names_are_normalized_across_providers(spelling: str, canonical: str) -> None:
    assert normalize_model_name(spelling) == canonical


@pytest.mark.parametrize("model", [
    "claude-sonnet-4-5", "anthropic/claude-sonnet-4.5", "anthropic.claude-sonnet-4-5-20250929-v1:0",
    "eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5@20250929",
])
def test_every_spelling_of_one_model_has_one_window(model: str) -> None:
    assert lookup_model(model).matched_key == "claude-sonnet-4-5"
    assert context_length_for(model) == 200_000


def test_longest_key_wins() -> None:
    assert lookup_model("gpt-4o-mini").matched_key == "gpt-4o-mini"
    assert lookup_model("gpt-4-32k-0613").matched_key == "gpt-4-32k"
    assert lookup_model("gpt-5.3-codex-spark").context_length == 128_000
    assert lookup_model("gpt-5.3-codex").context_length == 400_000
    assert lookup_model("qwen2.5-3b-instruct").context_length == 32_768


def test_a_key_only_matches_at_a_word_boundary() -> None:
    assert lookup_model("gpt-4o").matched_key == "gpt-4o"  # not "gpt-4" (8K)
    assert lookup_model("o10-preview").source == "default"  # "o1" must not match "o10"


def test_ollama_tags_and_infix_names_match() -> None:
    assert context_length_for("llama3.1:70b", "ollama") == 131_072
    assert context_length_for("accounts/x/models/my-llama-3.1-finetune") == 131_072


@pytest.mark.parametrize(("provider", "expected"), [
    ("openai-codex", 272_000),
    ("OpenAI-Codex", 272_000),
    ("openai", 1_050_000),
    ("openrouter", 1_050_000),
    ("azure", 1_050_000),
    (None, 1_050_000),
    ("copilot", 400_000),
    ("github-copilot", 400_000),
])
def test_gpt55_window_depends_on_the_route(provider: str | None, expected: int) -> None:
    model = "openai/gpt-5.5" if provider == "openrouter" else "gpt-5.5"
    info = lookup_model(model, provider)
    assert info.context_length == expected
    assert info.source == ("route" if expected != 1_050_000 else "table")


def test_codex_caps_every_gpt5_window_at_272k() -> None:
    for model in ("gpt-5", "gpt-5-codex", "gpt-5.1-codex", "gpt-5.4", "gpt-5.5-pro"):
        assert context_length_for(model, "openai-codex") == 272_000, model
    assert context_length_for("gpt-5.3-codex-spark", "openai-codex") == 128_000


def test_config_overrides_win() -> None:
    config = load_config({"models": {"gpt-4o": 64_000, "claude-sonnet-4-5": 1_000_000, "my-local-model": 32_768}})
    assert context_length_for("gpt-4o", config=config) == 64_000
    assert context_length_for("anthropic/claude-sonnet-4.5", config=config) == 1_000_000  # normalized both ways
    assert context_length_for("gpt-5.5", "openai-codex", config=load_config({"models": {"gpt-5.5": 300_000}})) \
        == 300_000
    info = lookup_model("my-local-model:latest", config=config)
    assert (info.context_length, info.source) == (32_768, "config")
    assert context_length_for("gpt-4o-mini", config=config) == 128_000  # an override of gpt-4o is not gpt-4o-mini


def test_unknown_model_gets_the_default_and_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ctxplug.models"):
        assert context_length_for("mystery-model-9000") == DEFAULT_CONTEXT_LENGTH == 128_000
        assert context_length_for("mystery-model-9000") == 128_000
        assert context_length_for(None) == 128_000
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 2  # one per unknown model, not one per call
    assert "'mystery-model-9000' is not in the bundled model table" in warnings[0]
    assert "128,000" in warnings[0] and "ctxplug config set models.mystery-model-9000" in warnings[0]
    assert lookup_model("mystery-model-9000").source == "default"


def test_the_table_is_package_data_and_well_formed() -> None:
    raw = json.loads(resources.files("ctxplug").joinpath("data/models.json").read_text("utf-8"))
    assert all(isinstance(value, int) and value > 0 for value in raw["models"].values())
    for route, windows in raw["routes"].items():
        assert set(windows) <= set(raw["models"]), f"route {route} names a key the table does not have"
    assert all(key == key.lower() for key in raw["models"])


def test_public_names() -> None:
    assert ctxplug.context_length_for is context_length_for
    assert ctxplug.lookup_model is lookup_model


def test_autoraise_on_codex_gpt55_only() -> None:
    raised = compute_budgets(load_config(None), context_length=context_length_for("gpt-5.5", "openai-codex"),
                             model="gpt-5.5", provider="openai-codex")
    assert raised.autoraised and raised.threshold == 0.85
    assert raised.threshold_tokens == 231_200  # 85% of 272K, instead of 136K at 50%
    for model, provider in [("gpt-5.5", "openrouter"), ("openai/gpt-5.5", "openrouter"), ("gpt-5.5", "openai"),
                            ("gpt-5.5", "copilot"), ("gpt-5.4", "openai-codex"), ("gpt-5", "openai-codex"),
                            ("claude-sonnet-4-5", "openai-codex")]:
        budgets = compute_budgets(load_config(None), context_length=context_length_for(model, provider),
                                  model=model, provider=provider)
        assert not budgets.autoraised and budgets.threshold == 0.50, (model, provider)


def test_autoraise_is_off_with_the_flag() -> None:
    config = load_config({"compression": {"codex_gpt55_autoraise": False}})
    budgets = compute_budgets(config, context_length=272_000, model="gpt-5.5", provider="openai-codex")
    assert not budgets.autoraised and budgets.threshold_tokens == 136_000
    assert not announce_codex_autoraise(budgets, config, "gpt-5.5")


def test_autoraise_never_lowers_a_higher_threshold() -> None:
    config = load_config({"compression": {"threshold": 0.9}})
    budgets = compute_budgets(config, context_length=272_000, model="gpt-5.5", provider="openai-codex")
    assert budgets.threshold == 0.9 and not budgets.autoraised


def test_the_notice_is_logged_once_per_model(caplog: pytest.LogCaptureFixture) -> None:
    config = load_config(None)
    budgets = compute_budgets(config, context_length=272_000, model="gpt-5.5", provider="openai-codex")
    with caplog.at_level(logging.WARNING, logger="ctxplug.codex_autoraise"):
        assert announce_codex_autoraise(budgets, config, "gpt-5.5") is True
        assert announce_codex_autoraise(budgets, config, "gpt-5.5") is False
        assert announce_codex_autoraise(budgets, config, "gpt-5.5-pro") is True
    notices = [record.getMessage() for record in caplog.records]
    assert len(notices) == 2
    first = notices[0]
    for fragment in ("gpt-5.5", "openai-codex", "272,000", "85%", "50%", "231,200", OPT_OUT_COMMAND):
        assert fragment in first
    assert OPT_OUT_COMMAND == "ctxplug config set compression.codex_gpt55_autoraise false"


def test_no_notice_without_an_autoraise(caplog: pytest.LogCaptureFixture) -> None:
    config = load_config(None)
    budgets = compute_budgets(config, context_length=1_050_000, model="gpt-5.5", provider="openrouter")
    with caplog.at_level(logging.WARNING):
        assert announce_codex_autoraise(budgets, config, "gpt-5.5") is False
    assert caplog.records == []
