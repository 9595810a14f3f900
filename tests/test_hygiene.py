"""Session hygiene: the fixed 85% trigger, its guards, the token source it trusts, and that it never loops."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ctxplug.budgets import compute_budgets
from ctxplug.config import CompressionSection, Config
from ctxplug.engine import CompressionReport, ContextEngine, EngineContext
from ctxplug.host import EngineHost
from ctxplug.hygiene import SessionHygiene, apply_hygiene, assess_session
from ctxplug.tokens import estimate_messages_tokens_rough

CONTEXT = 100_000


def chat(turns: int, chars: int = 400) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"question {turn} " + "q" * chars})
        messages.append({"role": "assistant", "content": f"answer {turn} " + "a" * chars})
    return messages


class ScriptedEngine(ContextEngine):
    """Keeps the first ``keep_head`` and last ``keep_tail`` messages; records every call."""

    def __init__(self, context: EngineContext, keep_tail: int = 2, raises: bool = False) -> None:
        super().__init__(context)
        self.keep_tail = keep_tail
        self.raises = raises
        self.calls: list[dict[str, Any]] = []

    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None, force: bool = False) -> list[dict[str, Any]]:
        self.calls.append({"n": len(messages), "current_tokens": current_tokens, "force": force})
        if self.raises:
            raise RuntimeError("summary model unreachable")
        summary = {"role": "user", "content": "[CONTEXT COMPACTION] earlier turns"}
        result = [*messages[:1], summary, *messages[-self.keep_tail:]]
        self.last_report = CompressionReport(self.name, "extractive", len(messages), len(result))
        return result


def host(enabled: bool = True, context_length: int = CONTEXT, **options: Any) -> tuple[EngineHost, ScriptedEngine]:
    config = Config(compression=CompressionSection(enabled=enabled))
    context = EngineContext("scripted", config, compute_budgets(config, context_length=context_length))
    engine = ScriptedEngine(context, **options)
    return EngineHost(engine), engine


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_fires_at_85_percent_of_reported_tokens_and_not_at_84() -> None:
    messages = chat(3)
    fires = assess_session(messages, context_length=CONTEXT, reported_prompt_tokens=85_000)
    assert fires.compress and fires.reason == "over_threshold"
    assert (fires.tokens, fires.token_source, fires.threshold_tokens) == (85_000, "reported", 85_000)
    assert fires.usage_ratio == pytest.approx(0.85)
    quiet = assess_session(messages, context_length=CONTEXT, reported_prompt_tokens=84_000)
    assert not quiet.compress and quiet.reason == "under_threshold"
    assert not assess_session(messages, context_length=CONTEXT, reported_prompt_tokens=84_999).compress


def test_the_threshold_ignores_compression_threshold() -> None:
    # compression.threshold 0.5 would fire at 50,000; hygiene stays at 85% of the window.
    engine_host, _ = host()
    assert engine_host.threshold_tokens == 50_000
    hygiene = SessionHygiene.for_engine(engine_host)
    assert hygiene.threshold_tokens == 85_000
    assert not hygiene.check("s", chat(3), reported_prompt_tokens=60_000).compress


def test_fires_on_the_rough_estimate_when_nothing_was_reported() -> None:
    messages = chat(20, chars=2000)
    estimate = estimate_messages_tokens_rough(messages)
    at_85 = int(estimate / 0.85)  # 85% of this window is just at or under the estimate
    decision = assess_session(messages, context_length=at_85)
    assert decision.compress and decision.token_source == "estimate" and decision.tokens == estimate
    roomy = assess_session(messages, context_length=int(estimate / 0.84))
    assert not roomy.compress and roomy.reason == "under_threshold"


def test_reported_tokens_win_over_the_estimate_both_ways() -> None:
    huge = chat(20, chars=20_000)
    assert estimate_messages_tokens_rough(huge) > CONTEXT
    small_reported = assess_session(huge, context_length=CONTEXT, reported_prompt_tokens=40_000)
    assert not small_reported.compress and small_reported.token_source == "reported"
    tiny = chat(2)
    big_reported = assess_session(tiny, context_length=CONTEXT, reported_prompt_tokens=90_000)
    assert big_reported.compress and big_reported.tokens == 90_000


def test_messages_stored_after_the_reported_prompt_are_added_by_estimate() -> None:
    # The report covered the first 5 messages; a burst that arrived without an API call sits after them.
    messages = [*chat(2), *chat(10, chars=3000)[1:]]
    later = estimate_messages_tokens_rough(messages[5:])
    decision = assess_session(messages, context_length=CONTEXT, reported_prompt_tokens=2_000, reported_messages=5)
    assert decision.token_source == "reported" and decision.tokens == 2_000 + later
    assert assess_session(messages, context_length=CONTEXT, reported_prompt_tokens=2_000).tokens == 2_000


def test_a_reported_zero_means_unknown() -> None:
    # A response without usage (a disconnect) reports 0: that must not hide a session that grew too large.
    huge = chat(20, chars=20_000)
    decision = assess_session(huge, context_length=CONTEXT, reported_prompt_tokens=0)
    assert decision.compress and decision.token_source == "estimate"


def test_not_under_four_messages() -> None:
    three = [{"role": "system", "content": "s"}, {"role": "user", "content": "u" * 500_000},
             {"role": "assistant", "content": "a"}]
    decision = assess_session(three, context_length=CONTEXT, reported_prompt_tokens=99_000)
    assert not decision.compress and decision.reason == "too_few_messages"
    four = [*three, {"role": "user", "content": "more"}]
    assert assess_session(four, context_length=CONTEXT, reported_prompt_tokens=99_000).compress


def test_not_when_compression_is_disabled() -> None:
    engine_host, engine = host(enabled=False)
    hygiene = SessionHygiene.for_engine(engine_host)
    outcome = hygiene.run("s", chat(5), engine_host, reported_prompt_tokens=99_000)
    assert outcome.decision.reason == "disabled" and not outcome.compressed
    assert engine.calls == []


def test_apply_forces_the_engine_and_reports_the_result() -> None:
    engine_host, engine = host()
    messages = chat(30)
    before = copy.deepcopy(messages)
    decision = assess_session(messages, context_length=CONTEXT, reported_prompt_tokens=90_000)
    outcome = apply_hygiene(engine_host, messages, decision)
    # force=True: a tripped anti-thrash guard inside the engine must not turn hygiene into a no-op.
    assert engine.calls == [{"n": len(messages), "current_tokens": 90_000, "force": True}]
    assert outcome.compressed and not outcome.still_over and outcome.warning is None
    assert len(outcome.messages) == 4 and outcome.report is not None and outcome.report.outcome == "extractive"
    assert outcome.tokens_after == estimate_messages_tokens_rough(outcome.messages)
    assert messages == before


def test_no_engine_call_when_the_decision_says_no() -> None:
    engine_host, engine = host()
    decision = assess_session(chat(3), context_length=CONTEXT, reported_prompt_tokens=10)
    outcome = apply_hygiene(engine_host, chat(3), decision)
    assert engine.calls == [] and outcome.messages == chat(3) and not outcome.compressed


def stubborn_session(tail_chars: int) -> list[dict[str, Any]]:
    """A session whose last two messages alone are over 85% of a 10,000-token window."""
    return [*chat(4), {"role": "user", "content": "x" * tail_chars}, {"role": "assistant", "content": "ok"}]


def test_a_session_that_stays_over_is_reported_once_and_not_compressed_on_every_message() -> None:
    clock = Clock()
    engine_host, engine = host(context_length=10_000)
    hygiene = SessionHygiene(10_000, clock=clock, cooldown_seconds=600)
    session = stubborn_session(36_000)
    first = hygiene.run("s", session, engine_host)
    assert first.compressed and first.still_over and first.warning and "still" in first.warning
    assert len(engine.calls) == 1
    grown = first.messages
    for turn in range(10):  # ten more small messages, a minute apart
        clock.now += 60 - 1
        grown = [*grown, {"role": "user", "content": f"next {turn}"}]
        decision = hygiene.run("s", grown, engine_host).decision
        assert decision.reason == "held" and not decision.compress
    assert len(engine.calls) == 1
    # another session is not affected by this one's memory
    assert hygiene.run("other", session, engine_host).compressed
    assert len(engine.calls) == 2


def test_reported_sizes_after_a_stall_do_not_count_as_growth() -> None:
    engine_host, engine = host(context_length=10_000)
    hygiene = SessionHygiene(10_000, clock=Clock())
    first = hygiene.run("s", stubborn_session(36_000), engine_host)
    assert first.still_over and first.tokens_after is not None
    # The API's count differs from the estimate by far more than the regrowth allowance: still held.
    reported = first.tokens_after + 3 * hygiene.regrowth_tokens
    held = hygiene.run("s", first.messages, engine_host, reported_prompt_tokens=reported)
    assert held.decision.reason == "held"
    # real growth measured in the same source does allow another try
    again = hygiene.run("s", first.messages, engine_host, reported_prompt_tokens=reported + hygiene.regrowth_tokens)
    assert again.decision.reason == "over_threshold" and len(engine.calls) == 2


def test_material_growth_or_the_cooldown_allows_another_compression() -> None:
    clock = Clock()
    engine_host, engine = host(context_length=10_000, keep_tail=3)
    hygiene = SessionHygiene(10_000, clock=clock, cooldown_seconds=600)
    first = hygiene.run("s", stubborn_session(36_000), engine_host)
    assert first.still_over
    grown = [*first.messages, {"role": "user", "content": "y" * 4 * (hygiene.regrowth_tokens + 10)}]
    second = hygiene.run("s", grown, engine_host)
    assert second.decision.reason == "over_threshold" and second.still_over
    assert len(engine.calls) == 2
    clock.now += 599
    assert hygiene.run("s", second.messages, engine_host).decision.reason == "held"
    clock.now += 1
    assert hygiene.run("s", second.messages, engine_host).decision.compress
    assert len(engine.calls) == 3


def test_a_session_that_fits_again_is_forgotten() -> None:
    engine_host, engine = host(context_length=10_000)
    hygiene = SessionHygiene(10_000, clock=Clock())
    first = hygiene.run("s", stubborn_session(36_000), engine_host)
    assert first.still_over
    assert hygiene.check("s", chat(2)).reason == "under_threshold"  # e.g. the user reset the chat
    assert hygiene.run("s", stubborn_session(36_000), engine_host).compressed
    assert len(engine.calls) == 2


def test_a_failing_engine_leaves_the_session_unchanged_warns_and_is_not_retried_every_message() -> None:
    engine_host, engine = host(raises=True)
    hygiene = SessionHygiene.for_engine(engine_host, clock=Clock())
    session = chat(10)
    outcome = hygiene.run("s", session, engine_host, reported_prompt_tokens=90_000)
    assert not outcome.compressed and outcome.messages == session
    assert outcome.warning and "unchanged" in outcome.warning and "RuntimeError" in outcome.warning
    later = hygiene.run("s", [*session, {"role": "user", "content": "hi"}], engine_host,
                        reported_prompt_tokens=90_050)
    assert later.decision.reason == "held" and len(engine.calls) == 1


def test_rejects_a_nonpositive_window() -> None:
    with pytest.raises(ValueError, match="context_length"):
        assess_session(chat(3), context_length=0)
