"""``ctxplug compress``: the report, the written file, and one clear line for a malformed file (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.compressor_engines import FailingWriter, RecordingWriter
from support.conversation_strategies import assert_tool_pairs_whole, summaries_in

import ctxplug.summarizer
from ctxplug.cli import main
from ctxplug.config import Config
from ctxplug.conversation_io import read_conversation

FIXTURES = Path(__file__).parent / "fixtures" / "corpus"


def session_file(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The longest corpus transcript, written as a plain JSON list."""
    records = [json.loads(line) for line in (FIXTURES / "openhands_codeact.jsonl").read_text().splitlines() if line]
    messages = max((r["messages"] for r in records), key=len)
    path = tmp_path / "session.json"
    path.write_text(json.dumps(messages))
    return path, messages


@pytest.fixture
def writer(monkeypatch: pytest.MonkeyPatch) -> RecordingWriter:
    """Every engine the CLI builds gets this writer instead of the configured one."""
    recording = RecordingWriter(outcome="extractive")

    def make_summary_writer(config: Config) -> RecordingWriter:
        return recording

    monkeypatch.setattr(ctxplug.summarizer, "make_summary_writer", make_summary_writer, raising=False)
    monkeypatch.chdir(Path(__file__).parent)  # no ./config.yaml here: the defaults apply
    monkeypatch.delenv("CTXPLUG_CONFIG", raising=False)
    return recording


def test_compress_prints_a_before_after_report_and_writes_nothing_without_o(
        tmp_path: Path, writer: RecordingWriter, capsys: pytest.CaptureFixture[str]) -> None:
    path, messages = session_file(tmp_path)
    assert main(["compress", str(path), "--context-length", "32000"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith(f"{path}: {len(messages)} messages, ~") and " -> " in first and "%)" in first
    assert "outcome: extractive — ran offline" in out
    summarized = len(writer.requests[0].messages)
    assert f"summarized: messages 5-{4 + summarized} of {len(messages)} replaced by the summary" in out
    assert "--- summary ---" in out and "## Goal" in out
    assert "nothing written" in out and list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize("name", ["out.json", "out.jsonl"])
def test_compress_writes_a_valid_smaller_conversation(tmp_path: Path, writer: RecordingWriter, name: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path, messages = session_file(tmp_path)
    target = tmp_path / name
    assert main(["compress", str(path), "-o", str(target), "--context-length", "16000", "--focus", "tests"]) == 0
    written = read_conversation(target)
    assert len(written) < len(messages) and len(summaries_in(written)) == 1
    assert_tool_pairs_whole(written)
    assert writer.requests[0].focus_topic == "tests"
    assert f"wrote: {target}" in capsys.readouterr().out


def test_compress_json_report_and_stdout_output(tmp_path: Path, writer: RecordingWriter,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path, messages = session_file(tmp_path)
    assert main(["compress", str(path), "--json", "--context-length", "16000"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["messages_before"] == len(messages) and report["outcome"] == "extractive"
    assert report["tokens_after"] < report["tokens_before"] and report["summary"].startswith("## Goal")
    assert main(["compress", str(path), "-o", "-", "--context-length", "16000"]) == 0
    captured = capsys.readouterr()
    assert len(summaries_in(json.loads(captured.out))) == 1 and "outcome: extractive" in captured.err


def test_compress_model_sets_the_context_length(tmp_path: Path, writer: RecordingWriter,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = session_file(tmp_path)
    assert main(["compress", str(path), "--model", "gpt-4o", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["context_length"] == 128_000


@pytest.mark.parametrize(("text", "line", "problem"), [
    ('[\n {"role": "user", "content": "hi"},\n {"role": "robot", "content": "x"}\n]', 3, "role 'robot'"),
    ('{"role": "user", "content": "a"}\n{"role": "assistant", "content": "b"\n', 2, "invalid JSON"),
    ('[\n {"role": "user", "content": "hi"},\n', 3, "invalid JSON"),
])
def test_malformed_file_is_one_line_with_its_line_number_and_exit_2(
        tmp_path: Path, writer: RecordingWriter, capsys: pytest.CaptureFixture[str],
        text: str, line: int, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert main(["compress", str(path)]) == 2
    captured = capsys.readouterr()
    (error,) = captured.err.strip().splitlines()
    assert error.startswith(f"ctxplug: error: {path}:{line}: ") and problem in error
    assert "Traceback" not in captured.err and captured.out == ""


def test_missing_file_and_bad_context_length_are_clear_errors(tmp_path: Path, writer: RecordingWriter,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compress", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["compress", str(tmp_path / "nope.json"), "--context-length", "-5"])
    assert exit_info.value.code == 2 and "positive number of tokens" in capsys.readouterr().err


def test_an_aborted_compression_exits_1_and_says_nothing_was_dropped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(ctxplug.summarizer, "make_summary_writer", lambda config: FailingWriter(kind="auth"),
                        raising=False)
    path, messages = session_file(tmp_path)
    target = tmp_path / "out.json"
    assert main(["compress", str(path), "-o", str(target), "--context-length", "16000"]) == 1
    out = capsys.readouterr().out
    assert "outcome: aborted — nothing was dropped" in out and "error: auth" in out
    assert read_conversation(target) == messages


def test_readme_first_command_compresses_the_example_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # The real default writer: no summary model configured, so the extractive summarizer, with no network.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CTXPLUG_CONFIG", raising=False)
    example = Path(__file__).resolve().parents[1] / "examples" / "session.json"
    assert main(["compress", str(example), "--context-length", "32000", "-o", "compressed.json"]) == 0
    out = capsys.readouterr().out
    assert "outcome: extractive — ran offline" in out and "## Relevant Files" in out
    original = read_conversation(example)
    written = read_conversation(tmp_path / "compressed.json")
    assert len(written) < len(original) and len(summaries_in(written)) == 1
    assert written[:4] == original[:4] or written[0]["content"].startswith(original[0]["content"])
    assert written[-10:] == original[-10:]
    assert_tool_pairs_whole(written)


def test_compress_uses_the_config_given_before_the_command(tmp_path: Path, writer: RecordingWriter,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path, messages = session_file(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text("compression:\n  system_note: false\n  protect_last_n: 3\n")
    target = tmp_path / "out.json"
    assert main(["--config", str(config), "compress", str(path), "-o", str(target), "--json"]) == 0
    written = read_conversation(target)
    assert written[0] == messages[0], "system_note: false keeps the system prompt byte-identical"
    report = json.loads(capsys.readouterr().out)
    assert report["engine"] == "compressor" and report["context_length"] == 128_000
