"""One test per Hermes bug of hermes-behaviour.md §3 that the builtin compressor covers, named after the issue."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from support.compressor_engines import FailingWriter, FakeClock, RecordingWriter, make_engine
from support.conversation_strategies import (
    assert_alternates,
    assert_tool_pairs_whole,
    first_after_system,
    summaries_in,
)

from ctxplug.host import EngineHost
from ctxplug.messages import sanitize_tool_pairs
from ctxplug.plugins.context_engine.compressor.handoff import END_MARKER, SYSTEM_NOTE
from ctxplug.summarizer import SummaryRequest, SummaryResult
from ctxplug.tokens import estimate_messages_tokens_rough

Message = dict[str, Any]


def agent_session(turns: int = 12, output_chars: int = 2_000, system: bool = True) -> list[Message]:
    """A coding-agent transcript: a task, then tool calls with large outputs and short replies."""
    messages: list[Message] = [{"role": "system", "content": "You are a coding agent."}] if system else []
    messages += [{"role": "user", "content": "Fix the failing tests in src/app.py"},
                 {"role": "assistant", "content": "Looking at the tests first."}]
    for turn in range(turns):
        call = {"id": f"call_{turn}", "type": "function",
                "function": {"name": "terminal", "arguments": json.dumps({"command": f"pytest -k case{turn}"})}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        output = f"case{turn}\n" * (output_chars // 6)
        messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": output})
        messages.append({"role": "assistant", "content": f"Case {turn} examined."})
        messages.append({"role": "user", "content": f"Next, case {turn + 1}."})
    messages.append({"role": "assistant", "content": "All cases examined."})
    return messages


def test_hermes_10719_failed_summary_never_drops_turns_silently() -> None:
    engine = make_engine(8_000, writer=FailingWriter(kind="server"))
    messages = agent_session()
    assert engine.compress(messages, force=True) is messages
    assert engine.last_report is not None and engine.last_report.outcome == "aborted"
    assert engine.last_report.messages_after == len(messages)


def test_hermes_29559_connection_error_keeps_every_message() -> None:
    engine = make_engine(8_000, writer=FailingWriter(kind="timeout"))
    messages = agent_session(turns=30)
    before = copy.deepcopy(messages)
    result = engine.compress(messages, force=True)
    assert result == before and result is messages
    assert "no message was dropped" in (engine.last_report.reason or "")  # type: ignore[union-attr]


def test_hermes_11753_auth_failure_aborts_and_cools_down() -> None:
    clock = FakeClock()
    writer = FailingWriter(kind="auth")
    engine = make_engine(8_000, writer=writer, clock=clock)
    messages = agent_session()
    assert engine.compress(messages) is messages
    report = engine.last_report
    assert report is not None and report.outcome == "aborted" and report.error and report.error.startswith("auth")
    assert not engine.should_compress(10**9), "a failure must start a cooldown"
    assert engine.compress(messages) is messages and writer.calls == 1, "the cooldown must not call the model again"
    clock.now += 61
    assert engine.should_compress(10**9)


def test_hermes_11978_empty_summary_counts_as_failure() -> None:
    class EmptyWriter:
        def write(self, request: SummaryRequest) -> SummaryResult:
            return SummaryResult(text="  \n", outcome="llm", calls=1)

    engine = make_engine(8_000, writer=EmptyWriter())
    messages = agent_session()
    assert engine.compress(messages, force=True) is messages
    assert engine.last_report is not None and engine.last_report.outcome == "aborted"


def test_hermes_40803_transcript_inside_the_tail_floor_still_compresses() -> None:
    # 8 huge messages after the head: protect_last_n=20 would protect all of them and loop forever.
    engine = make_engine(8_000)
    messages = agent_session(turns=2, output_chars=20_000)
    out = engine.compress(messages, force=True)
    assert engine.last_report is not None and engine.last_report.changed
    assert len(out) < len(messages)
    assert_tool_pairs_whole(out)


def test_hermes_53008_ineffective_compressions_back_off() -> None:
    clock = FakeClock()
    engine = make_engine(8_000, clock=clock)
    for strike in range(2):
        engine.compress(agent_session(), force=False)
        assert engine.last_report is not None and engine.last_report.changed
        engine.track_usage({"prompt_tokens": engine.threshold_tokens + 100, "completion_tokens": 5})
        assert engine.should_compress() is (strike == 0), f"after strike {strike + 1}"
    assert engine.compress(agent_session()) is not None and engine.last_report.outcome == "skipped"
    assert engine.compress(agent_session(), force=True) and engine.last_report.changed, "force bypasses the back-off"


def test_hermes_53008_cooldown_after_ineffective_compressions_grows_exponentially() -> None:
    clock = FakeClock()
    engine = make_engine(8_000, clock=clock)
    waits = []
    for _ in range(3):
        engine.compress(agent_session(), force=True)
        engine.track_usage({"prompt_tokens": engine.threshold_tokens})
        start = clock.now
        while not engine.should_compress(engine.threshold_tokens) and clock.now - start < 10_000:
            clock.now += 10
        waits.append(clock.now - start)
    assert waits[0] == 0 and 0 < waits[1] < waits[2]


def test_hermes_98722_compressions_that_make_no_progress_stop_the_loop() -> None:
    engine = make_engine(8_000, clock=FakeClock())
    tiny = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello " * 3_000}]
    for _ in range(2):
        assert engine.should_compress(engine.threshold_tokens)
        assert engine.compress(tiny) is tiny and engine.last_report.outcome == "skipped"  # type: ignore[union-attr]
    assert not engine.should_compress(engine.threshold_tokens), "two no-progress attempts must start a cooldown"


def test_hermes_117574_many_effective_compressions_trip_the_frequency_breaker() -> None:
    engine = make_engine(8_000, clock=FakeClock())
    allowed = 0
    for _ in range(100):
        if not engine.should_compress(engine.threshold_tokens):
            break
        engine.compress(agent_session())
        engine.track_usage({"prompt_tokens": engine.threshold_tokens // 2})  # effective every time
        allowed += 1
    assert allowed < 100 and not engine.should_compress(engine.threshold_tokens)
    assert engine.backoff.blocked_reason() and "rate limit" in engine.backoff.blocked_reason()  # type: ignore[operator]


def test_hermes_2153_should_compress_uses_the_last_reported_prompt_tokens() -> None:
    engine = make_engine(8_000)
    assert not engine.should_compress()
    engine.track_usage({"prompt_tokens": engine.threshold_tokens, "completion_tokens": 10})
    assert engine.should_compress()
    engine.track_usage({"input_tokens": 10, "output_tokens": 3})  # Anthropic shape, small prompt
    assert not engine.should_compress()


def test_hermes_36718_stale_prompt_count_does_not_trigger_again_after_compressing() -> None:
    engine = make_engine(8_000)
    engine.track_usage({"prompt_tokens": engine.threshold_tokens + 1})
    assert engine.should_compress()
    engine.compress(agent_session())
    assert engine.last_report is not None and engine.last_report.changed
    assert not engine.should_compress(), "the pre-compression prompt size must not fire a second compression"


def test_hermes_1993_parallel_tool_results_stay_with_their_call() -> None:
    messages = agent_session(turns=6)
    calls = [{"id": f"p{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
             for i in range(3)]
    middle = len(messages) // 2
    group = [{"role": "assistant", "content": None, "tool_calls": calls},
             *({"role": "tool", "tool_call_id": f"p{i}", "content": "x" * 3000} for i in range(3)),
             {"role": "assistant", "content": "Read three files."}, {"role": "user", "content": "Go on."}]
    messages = messages[:middle] + group + messages[middle:]
    for context_length in range(4_000, 40_000, 1_000):
        out = make_engine(context_length, protect_last_n=1).compress(messages, force=True)
        assert_tool_pairs_whole(out)
        kept = [m for m in out if m.get("tool_call_id", "").startswith("p")]
        assert len(kept) in (0, 3), f"a parallel group was split at context length {context_length}"


def test_hermes_51218_orphan_call_with_call_id_is_removed_not_stubbed() -> None:
    call = {"id": "fc_1", "call_id": "call_1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "user", "content": "and?"}]
    clean = sanitize_tool_pairs(messages)
    assert "tool_calls" not in clean[1] and clean[1]["content"]
    assert [m["role"] for m in clean] == ["user", "assistant", "user"]
    answered = [*messages[:2], {"role": "tool", "tool_call_id": "call_1", "content": "done"}, messages[2]]
    assert sanitize_tool_pairs(answered) == answered, "a call_id-style pair is whole"


def test_hermes_79278_in_flight_tool_chain_survives_compression() -> None:
    messages = agent_session()
    pending = {"id": "live", "type": "function", "function": {"name": "deploy", "arguments": "{}"}}
    messages.append({"role": "user", "content": "Deploy it."})
    messages.append({"role": "assistant", "content": None, "tool_calls": [pending]})
    out = make_engine(8_000).compress(messages, force=True)
    assert out[-1] is messages[-1], "the call being executed must not be dropped as an orphan"


def test_hermes_10896_last_user_message_stays_in_the_tail() -> None:
    messages = agent_session(turns=10)
    messages += [{"role": "user", "content": "Now add error handling."}]
    messages += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": f"z{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]} if i % 2 == 0
        else {"role": "tool", "tool_call_id": f"z{i - 1}", "content": "y" * 4000} for i in range(8)]
    out = make_engine(8_000, protect_last_n=1).compress(messages, force=True)
    assert any(m.get("content") == "Now add error handling." for m in out)


def test_hermes_29824_last_assistant_reply_stays_in_the_tail() -> None:
    messages = agent_session(turns=10)
    messages += [{"role": "user", "content": "Thanks."}]
    out = make_engine(8_000, protect_last_n=1).compress(messages, force=True)
    assert out[-2:] == messages[-2:] and out[-2]["content"] == "All cases examined."


def test_hermes_11475_summary_is_framed_end_marked_and_alternates() -> None:
    out = make_engine(8_000).compress(agent_session(), force=True)
    (index,) = summaries_in(out)
    text = out[index]["content"]
    assert text.startswith("[CONTEXT COMPACTION") and text.endswith(END_MARKER)
    assert out[index - 1]["role"] != out[index]["role"] != out[index + 1]["role"]
    assert_alternates(out)


def test_hermes_52160_first_message_after_the_system_prompt_is_user() -> None:
    messages = agent_session()
    messages[1:1] = [{"role": "assistant", "content": "Hello! How can I help?"}]  # a greeting before the task
    out = make_engine(8_000).compress(messages, force=True)
    first = first_after_system(out)
    assert first is not None and first["role"] == "user"


def test_hermes_58753_transcript_without_user_turns_compresses_validly() -> None:
    messages = [m for m in agent_session() if m["role"] != "user"]
    messages = [m for i, m in enumerate(messages) if not (
        m["role"] == "assistant" and i + 1 < len(messages) and messages[i + 1]["role"] == "assistant")]
    out = make_engine(8_000).compress(messages, force=True)
    first = first_after_system(out)
    assert first is not None and first["role"] == "user"
    assert_alternates(out)
    assert_tool_pairs_whole(out)


def test_hermes_57814_restart_does_not_grow_the_head_or_stack_summaries() -> None:
    once = make_engine(8_000).compress(agent_session(), force=True)
    head = summaries_in(once)[0]
    grown = once + agent_session(turns=8, system=False)[1:]
    writer = RecordingWriter()
    twice = make_engine(8_000, writer=writer).compress(grown, force=True)  # a fresh engine: a restart
    assert summaries_in(twice) == [head], "the head must not grow and summaries must not stack"
    assert writer.requests[0].previous_summary and "summary 1" in writer.requests[0].previous_summary
    assert twice[:head] == once[:head]


def test_hermes_109682_recompressing_without_new_turns_is_a_noop() -> None:
    engine = make_engine(8_000, protect_last_n=1)
    once = engine.compress(agent_session(), force=True)
    again = engine.compress(once, force=True)
    assert len(summaries_in(again)) == 1
    assert len(again) <= len(once)


@pytest.mark.parametrize("note", [True, False])
def test_hermes_24778_system_prompt_is_touched_at_most_once(note: bool) -> None:
    engine = make_engine(8_000, system_note=note)
    messages = agent_session()
    once = engine.compress(messages, force=True)
    twice = engine.compress(once + agent_session(turns=6, system=False)[1:], force=True)
    assert twice[0] == once[0]
    if note:
        assert once[0]["content"].count(SYSTEM_NOTE) == 1
    else:
        assert once[0] is messages[0] and twice[0] is messages[0]


def test_hermes_42449_input_is_never_mutated_even_through_the_host() -> None:
    messages = agent_session()
    before = copy.deepcopy(messages)
    host = EngineHost(make_engine(8_000))
    out = host.compress(messages, force=True)
    assert messages == before and out is not messages
    assert host.last_report is not None and host.last_report.changed


def test_long_tool_loop_after_the_last_user_message_still_compresses() -> None:
    # One request, then a tool loop far larger than the threshold: keeping the request in the tail would keep the
    # whole loop, and every compression would be ineffective. The request goes into the summary instead.
    messages: list[Message] = [{"role": "system", "content": "agent"}, {"role": "user", "content": "Set up CI."},
                               {"role": "assistant", "content": "On it."},
                               {"role": "user", "content": "Also migrate the database schema to v2."}]
    for step in range(40):
        messages += [{"role": "assistant", "content": f"Step {step}.", "tool_calls": [
                         {"id": f"s{step}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"s{step}", "content": "migrating\n" * 300}]
    writer = RecordingWriter()
    engine = make_engine(16_000, writer=writer)
    out = engine.compress(messages, force=True)
    assert engine.last_report is not None and engine.last_report.changed
    assert any(m.get("content") == "Also migrate the database schema to v2." for m in writer.requests[0].messages)
    assert estimate_messages_tokens_rough(out) < engine.threshold_tokens
    assert_tool_pairs_whole(out)
    assert_alternates(out)
