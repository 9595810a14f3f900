"""The compressor's phases one by one: prune, boundaries, the summary message, back-off, the report, registration."""

from __future__ import annotations

import copy
import json
from typing import Any

from support.compressor_engines import FakeClock, RecordingWriter, make_engine
from support.conversation_strategies import assert_alternates

from ctxplug.plugins.context_engine.compressor import CompressorEngine, register
from ctxplug.plugins.context_engine.compressor.backoff import Backoff
from ctxplug.plugins.context_engine.compressor.boundaries import find_head_end, find_span
from ctxplug.plugins.context_engine.compressor.engine import sizes_of, summary_budget
from ctxplug.plugins.context_engine.compressor.handoff import (
    SYSTEM_NOTE,
    merge_summary,
    render_summary,
    summary_message,
    unwrap_summaries,
    with_system_note,
)
from ctxplug.plugins.context_engine.compressor.prune import describe_tool_result, prune_tool_outputs

Message = dict[str, Any]


def call(ident: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_prune_describes_large_outputs_from_the_call_and_leaves_small_ones() -> None:
    log = "collected 12 items\n" + "line\n" * 300 + "E   AssertionError: expected 3, got 4\nexit code 1\n"
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [call("a", "terminal", {"command": "pytest -x"}),
                                                              call("b", "read_file", {"path": "src/app.py"})]},
        {"role": "tool", "tool_call_id": "a", "content": log},
        {"role": "tool", "tool_call_id": "b", "content": "short"},
    ]
    before = copy.deepcopy(messages)
    pruned = prune_tool_outputs(messages)
    assert messages == before
    line, error = pruned[1]["content"].split("\n")
    assert line.startswith('[terminal] command="pytest -x" -> ')
    assert "exit 1" in line and f"{len(log):,} chars" in line
    assert error == "  error: E   AssertionError: expected 3, got 4"
    assert pruned[2] is messages[2]


def test_prune_marks_an_older_identical_output_as_a_repeat() -> None:
    body = "same file contents\n" * 40
    messages = [{"role": "assistant", "content": None, "tool_calls": [call("a", "read_file", {"path": "x"})]},
                {"role": "tool", "tool_call_id": "a", "content": body},
                {"role": "assistant", "content": None, "tool_calls": [call("b", "read_file", {"path": "x"})]},
                {"role": "tool", "tool_call_id": "b", "content": body}]
    pruned = prune_tool_outputs(messages)
    assert "identical to a later output" in pruned[1]["content"]
    assert "identical" not in pruned[3]["content"]


def test_hermes_11762_shortened_arguments_stay_valid_json() -> None:
    arguments = {"path": "big.txt", "content": "é" * 5_000, "nested": {"lines": ["y" * 900, 3]}}
    messages = [{"role": "assistant", "content": "writing", "tool_calls": [call("w", "write_file", arguments)]},
                {"role": "tool", "tool_call_id": "w", "content": "ok"}]
    pruned = prune_tool_outputs(messages)
    shortened = json.loads(pruned[0]["tool_calls"][0]["function"]["arguments"])
    assert shortened["path"] == "big.txt" and shortened["nested"]["lines"][1] == 3
    assert len(shortened["content"]) < 300 and "chars cut" in shortened["content"]
    assert json.loads(messages[0]["tool_calls"][0]["function"]["arguments"]) == arguments


def test_json_outputs_stay_data_with_long_strings_cut() -> None:
    record = {"reservation_id": "ZFA04Y", "amount": 1_204.5, "flights": [{"number": "HAT170", "date": "2024-05-17"}],
              "notes": "n" * 5_000}
    messages = [{"role": "assistant", "content": None, "tool_calls": [call("r", "get_reservation", {"id": "ZFA04Y"})]},
                {"role": "tool", "tool_call_id": "r", "content": json.dumps(record, indent=2)}]
    kept = json.loads(prune_tool_outputs(messages)[1]["content"])
    assert kept["reservation_id"] == "ZFA04Y" and kept["amount"] == 1_204.5 and kept["flights"] == record["flights"]
    assert len(kept["notes"]) < 300


def test_describe_tool_result_without_arguments_or_errors() -> None:
    assert describe_tool_result("think", {}, "a" * 300) == "[think] -> 300 chars, 1 lines of output"


def test_head_is_the_system_prompt_and_the_first_exchange_with_its_tool_group() -> None:
    group = [{"role": "assistant", "content": None, "tool_calls": [call("a", "t", {})]},
             {"role": "tool", "tool_call_id": "a", "content": "r"}]
    system, user = {"role": "system", "content": "s"}, {"role": "user", "content": "u"}
    assert find_head_end([system, user, *group, user], 3) == 4
    assert find_head_end([user, {"role": "assistant", "content": "a"}, user], 3) == 2
    assert find_head_end([system, {"role": "assistant", "content": "hi"}, user], 3) == 1
    assert find_head_end([system, user, user], 3) == 2


def test_span_merges_the_summary_when_no_tail_start_can_alternate() -> None:
    # after the first exchange only user messages follow: a user summary can neither stand before nor after them
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": "a"}, *({"role": "user", "content": "u" * 2000} for _ in range(6))]
    span = find_span(messages, sizes_of(messages), protect_first_n=3, tail_token_budget=100, protect_last_n=1)
    assert span is not None and span.merge and span.summary_role == "user"
    out = make_engine(4_000, protect_last_n=1).compress(messages, force=True)
    assert out[-1]["content"].startswith("[CONTEXT COMPACTION") and out[-1]["content"].endswith("u" * 2000)
    assert len(out) == 4 and len(unwrap_summaries(out).messages) == 4, "a merged summary unwraps to its message"


def test_summary_text_round_trips_through_unwrap() -> None:
    standalone = summary_message("user", "## Goal\nship it")
    merged = merge_summary({"role": "user", "content": "the live request"}, "## Goal\nship it")
    listed = merge_summary({"role": "user", "content": [{"type": "text", "text": "parts"}]}, "body")
    unwrapped = unwrap_summaries([{"role": "system", "content": "s"}, standalone, merged, listed])
    assert unwrapped.found == 3
    assert unwrapped.messages == [{"role": "system", "content": "s"}, {"role": "user", "content": "the live request"},
                                  {"role": "user", "content": [{"type": "text", "text": "parts"}]}]
    assert unwrapped.previous_summary == "## Goal\nship it\n\n## Goal\nship it\n\nbody"
    assert render_summary("x").count("\n") == 4


def test_system_note_is_added_once_to_string_and_list_prompts() -> None:
    noted = with_system_note({"role": "system", "content": "be brief"})
    assert noted["content"].endswith(SYSTEM_NOTE) and with_system_note(noted) is noted
    parts = with_system_note({"role": "system", "content": [{"type": "text", "text": "be brief"}]})
    assert parts["content"][-1] == {"type": "text", "text": SYSTEM_NOTE}


def test_summary_budget_is_a_fifth_of_the_content_within_bounds() -> None:
    assert summary_budget(1_000, 10_000) == 2_000
    assert summary_budget(30_000, 10_000) == 6_000
    assert summary_budget(500_000, 10_000) == 10_000


def test_failures_cool_down_exponentially_and_a_success_resets_them() -> None:
    clock = FakeClock()
    backoff = Backoff(clock)
    backoff.record_failure()
    assert backoff.blocked_reason() and "1 summary failure" in backoff.blocked_reason()  # type: ignore[operator]
    clock.now += 61
    backoff.record_failure()
    clock.now += 61
    assert backoff.blocked_reason(), "the second failure waits twice as long"
    clock.now += 60
    assert backoff.blocked_reason() is None
    backoff.record_compression()
    assert backoff.failures == 0


def test_report_tells_what_the_compression_did() -> None:
    writer = RecordingWriter(outcome="chunked")
    engine = make_engine(8_000, writer=writer)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for turn in range(20):
        messages += [{"role": "assistant", "content": f"step {turn} " + "x" * 800},
                     {"role": "user", "content": f"ok {turn}"}]
    out = engine.compress(messages, focus_topic="the parser")
    report = engine.last_report
    assert report is not None and report.outcome == "chunked" and report.changed
    assert (report.messages_before, report.messages_after) == (len(messages), len(out))
    assert report.tokens_after < report.tokens_before and report.summarizer_calls == 1
    assert report.messages_summarized == len(writer.requests[0].messages)
    assert report.summary and report.summary.startswith("## Goal")
    assert writer.requests[0].focus_topic == "the parser" and writer.requests[0].budget_tokens == 2_000
    assert engine.compression_count == 1 and engine.previous_summary == report.summary
    assert_alternates(out)


def test_nothing_to_compress_is_reported_as_skipped() -> None:
    engine = make_engine(8_000)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"}]
    assert engine.compress(messages, force=True) is messages
    assert engine.last_report is not None and engine.last_report.outcome == "skipped"
    assert "nothing to compress" in (engine.last_report.reason or "")


def test_register_uses_the_third_party_plugin_contract() -> None:
    registered: dict[str, Any] = {}

    class Context:
        def register_context_engine(self, name: str, factory: Any) -> None:
            registered[name] = factory

    register(Context())
    assert registered == {"compressor": CompressorEngine}


def test_disabled_compression_only_runs_when_forced() -> None:
    engine = make_engine(8_000, enabled=False)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for turn in range(20):
        messages += [{"role": "assistant", "content": "x" * 800}, {"role": "user", "content": f"ok {turn}"}]
    assert not engine.should_compress(10**9)
    assert engine.compress(messages) is messages and "disabled" in (engine.last_report.reason or "")  # type: ignore[union-attr]
    assert engine.compress(messages, force=True) is not messages


def test_an_unexpected_writer_exception_aborts_and_backs_off() -> None:
    class BrokenWriter:
        def write(self, request: Any) -> Any:
            raise KeyError("choices")

    engine = make_engine(8_000, writer=BrokenWriter(), clock=FakeClock())
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for turn in range(20):
        messages += [{"role": "assistant", "content": "x" * 800}, {"role": "user", "content": f"ok {turn}"}]
    assert engine.compress(messages) is messages
    report = engine.last_report
    assert report is not None and report.outcome == "aborted" and "unexpected KeyError" in (report.error or "")
    assert not engine.should_compress(10**9)
