"""``ctxplug tokens FILE``: exact per-role counts for OpenAI models, a marked estimate for the rest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CORPUS, load_corpus

from ctxplug import count_tokens, estimate_messages_tokens_rough
from ctxplug.cli import main

SESSION = CORPUS / "swe_agent.jsonl"  # JSONL of conversations: the reader takes the first one


def _first_conversation() -> list[dict[str, object]]:
    messages: list[dict[str, object]] = load_corpus("swe_agent")[0]["messages"]
    return messages


def test_json_report_matches_count_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tokens", str(SESSION), "--model", "gpt-4", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    messages = _first_conversation()
    assert report["exact"] is True and report["encoding"] == "cl100k_base"
    assert report["tokens"] == count_tokens(messages, model="gpt-4")
    assert report["rough_estimate"] == estimate_messages_tokens_rough(messages)
    assert sum(row["messages"] for row in report["by_role"].values()) == len(messages) == report["messages"]
    assert sum(row["tokens"] for row in report["by_role"].values()) + report["reply_priming"] == report["tokens"]


def test_table_for_an_openai_model_says_exact(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tokens", str(SESSION), "--model", "gpt-4o"]) == 0
    out = capsys.readouterr().out
    total = count_tokens(_first_conversation(), model="gpt-4o")
    assert f"{total:,} tokens (exact, o200k_base for gpt-4o)" in out
    assert "  tool " in out and "  assistant " in out


def test_other_models_are_marked_as_an_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tokens", str(SESSION), "--model", "anthropic/claude-sonnet-4.5"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "~" in first and "ESTIMATE" in first and "claude-sonnet-4.5" in first


def test_a_missing_or_malformed_file_is_one_line_on_stderr(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tokens", str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err.strip() == f"ctxplug: error: {tmp_path / 'nope.json'}: no such file"
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user", "content": 5}]', encoding="utf-8")
    assert main(["tokens", str(bad)]) == 2
    assert "message 0 content is int" in capsys.readouterr().err
