"""``ctxplug status``, ``ctxplug cache plan`` and ``ctxplug cache simulate`` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CORPUS

from ctxplug.cli import main

TAU = str(CORPUS / "tau_bench_airline.jsonl")
OPENHANDS = str(CORPUS / "openhands_codeact.jsonl")


@pytest.fixture(autouse=True)
def _no_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CTXPLUG_CONFIG", raising=False)


def test_status_prints_budgets_and_the_exact_caching_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--model", "anthropic/claude-sonnet-4.5", "--provider", "openrouter",
                 "--context-length", "200000"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "💾 Prompt caching: ENABLED (Claude via OpenRouter, 5m TTL)" in out
    text = "\n".join(out)
    assert "threshold_tokens      100,000" in text
    assert "tail_token_budget      20,000" in text
    assert "max_summary_tokens     10,000" in text


def test_status_reads_the_ttl_from_the_config_and_explains_a_disabled_route(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("prompt_caching:\n  cache_ttl: 1h\n", encoding="utf-8")
    assert main(["status", "--model", "claude-sonnet-4-5", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["caching"]["status_line"] == "💾 Prompt caching: ENABLED (Claude via Anthropic, 1h TTL)"
    assert facts["caching"]["native_anthropic"] is True
    assert main(["status", "--model", "gpt-4o", "--provider", "openai"]) == 0
    assert "💾 Prompt caching: DISABLED (gpt-4o is not a Claude model" in capsys.readouterr().out


def test_status_rejects_a_bad_ttl_in_the_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("prompt_caching:\n  cache_ttl: 10m\n", encoding="utf-8")
    assert main(["status", "--model", "claude-sonnet-4-5"]) == 2
    assert "prompt_caching.cache_ttl" in capsys.readouterr().err


def test_cache_plan_shows_system_and_rolling_breakpoints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "plan", TAU, "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    kinds = [b["kind"] for b in facts["breakpoints"]]
    assert kinds == ["system prompt", "rolling window", "rolling window", "rolling window"]
    assert facts["breakpoints"][0]["index"] == 0 and facts["breakpoints"][-1]["index"] == facts["messages"] - 1
    prefixes = [b["prefix_tokens"] for b in facts["breakpoints"]]
    assert prefixes == sorted(prefixes) and prefixes[-1] == facts["prompt_tokens"]
    assert main(["cache", "plan", TAU]) == 0
    assert "#1 message     0 system" in capsys.readouterr().out


def test_cache_simulate_prints_costs_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "simulate", TAU, "--turn-seconds", "10"]) == 0
    out = capsys.readouterr().out
    assert "no caching" in out and "system_and_3" in out and "caching saves" in out
    assert main(["cache", "simulate", TAU, "--json", "--ttl", "auto", "--user-gap-seconds", "360"]) == 0
    data = json.loads(capsys.readouterr().out)
    ours, none = data["placements"]["system_and_3"], data["placements"]["none"]
    assert ours["cost"] < none["cost"] and ours["ttl_1h_requests"] > 0
    assert data["saving"] == pytest.approx(1 - ours["cost"] / none["cost"])


def test_cache_simulate_rejects_a_missing_file_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "simulate", "nope.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxplug: error: nope.json: no such file") and "Traceback" not in err


def test_cache_simulate_compacts_with_the_configured_engine(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("compression:\n  system_note: false\n", encoding="utf-8")
    assert main(["cache", "simulate", OPENHANDS, "--compact-at", "12000", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["compactions"], "the session passes 12,000 tokens, so the engine must have compacted it"
    for compaction in data["compactions"]:
        assert compaction["tokens_after"] < compaction["tokens_before"]
        # a byte-stable system prompt and head are read from the cache, as an ideal compaction would
        assert compaction["first_read_tokens"] >= compaction["kept_prefix_tokens"] > 0
        assert compaction["penalty"] == pytest.approx(0.0, abs=1.0)
    assert data["uncompacted"]["cost"] > data["placements"]["system_and_3"]["cost"]
    assert main(["cache", "simulate", OPENHANDS, "--compact-at", "12000"]) == 0
    assert "compaction #1 before message" in capsys.readouterr().out
