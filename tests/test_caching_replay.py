"""Turn-by-turn replays: request timing, compaction during the replay, and the placements compared on the corpus."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import corpus_conversations

from ctxplug.cache_replay import build_requests, simulate
from ctxplug.cache_sim import BlockCounter
from ctxplug.messages import COMPACTION_MARKER, align_boundary_backward

CHARS = BlockCounter(len, framing=0)
Message = dict[str, Any]


def _session(turns: int) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": "S" * 3000},
                               {"role": "user", "content": "first task " * 50},
                               {"role": "assistant", "content": "first answer " * 40}]
    for n in range(turns):
        messages += [{"role": "user", "content": f"question {n} " * 40},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"c{n}", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{n}", "content": f"output {n} " * 120},
                     {"role": "assistant", "content": f"answer {n} " * 30}]
    return messages


def compact_keeping_head(messages: list[Message], *, rewrite_system: bool = False) -> list[Message]:
    """A small stand-in compactor: head (system + first exchange), one summary, the last 4 messages."""
    cut = align_boundary_backward(messages, len(messages) - 4)
    head = [dict(m) for m in messages[:3]]
    if rewrite_system:
        head[0]["content"] = f"{head[0]['content']}\n(compacted at message {len(messages)})"
    summary = {"role": "user", "content": f"{COMPACTION_MARKER}] summary of {cut - 3} messages " + "s" * 800}
    return [*head, summary, *messages[cut:]]


def test_requests_are_the_history_before_each_assistant_message_with_user_gaps() -> None:
    messages = _session(2)
    replay = build_requests(messages, size=lambda h: 0, turn_seconds=10.0, user_gap_seconds=360.0)
    assert [r.source_index for r in replay.requests] == [2, 4, 6, 8, 10]
    assert [len(r.messages) for r in replay.requests] == [2, 4, 6, 8, 10]
    assert [r.at for r in replay.requests] == [0.0, 360.0, 370.0, 730.0, 740.0]


def test_compaction_runs_past_the_threshold_and_the_replay_goes_on_from_its_output() -> None:
    messages = _session(6)
    size = lambda history: sum(len(str(m.get("content") or "")) for m in history)  # noqa: E731
    replay = build_requests(messages, size=size, compact_at=12_000, compact=compact_keeping_head)
    assert replay.compactions
    first = replay.compactions[0]
    assert first.tokens_before > 12_000 > first.tokens_after
    after = replay.requests[first.first_request].messages
    assert COMPACTION_MARKER in after[3]["content"]
    # later requests extend the compacted history instead of the original one
    assert replay.requests[first.first_request + 1].messages[:len(after)] == after


def test_kept_head_is_read_from_cache_after_compaction_and_a_rewritten_system_is_not() -> None:
    messages = _session(8)

    def run(rewrite: bool) -> Any:
        return simulate(messages, model="claude-sonnet-4-5", counter=CHARS, compact_at=14_000,
                        compact=lambda m: compact_keeping_head(m, rewrite_system=rewrite))

    stable, rewritten = run(False), run(True)
    assert stable.compactions and len(stable.compactions) == len(rewritten.compactions)
    head_tokens = 3000 + len("first task " * 50) + len("first answer " * 40)
    for kept, lost in zip(stable.compactions, rewritten.compactions, strict=True):
        assert kept.first_read_tokens == head_tokens  # the head's own breakpoint found it
        assert lost.first_read_tokens == 0
        assert kept.kept_prefix_tokens == head_tokens
        # the stable compaction pays only for writing its summary and tail: what an ideal compaction pays
        assert kept.penalty == pytest.approx(0.0)
        # the rewrite also pays to write the head again (its system prompt is a few characters longer)
        assert 0 <= lost.penalty - (1.25 - 0.1) * head_tokens < 1.15 * 40
        assert 0 < kept.cache_loss < lost.cache_loss
    assert stable.placements["system_and_3"].cost < rewritten.placements["system_and_3"].cost


@pytest.mark.parametrize(("conversation_id", "messages"),
                         [c for c in corpus_conversations() if c[0].startswith("tau_bench_airline:")][:2])
def test_system_and_3_is_near_the_best_placement_on_linear_replays(conversation_id: str,
                                                                   messages: list[Message]) -> None:
    report = simulate(messages, model="claude-sonnet-4-5", turn_seconds=10.0)
    none, ours, best = (report.placements[p] for p in ("none", "system_and_3", "best"))
    assert best.cost <= ours.cost < none.cost
    assert ours.cost <= best.cost * 1.02
    assert 0.5 < ours.hit_rate <= best.hit_rate


def test_auto_ttl_stays_within_5_percent_of_the_better_fixed_ttl_with_long_user_gaps() -> None:
    messages = _session(30)
    costs = {ttl: simulate(messages, model="claude-sonnet-4-5", counter=CHARS, cache_ttl=ttl, turn_seconds=10.0,
                           user_gap_seconds=360.0).placements["system_and_3"] for ttl in ("5m", "1h", "auto")}
    assert costs["1h"].cost < costs["5m"].cost  # 6-minute gaps expire every 5-minute entry
    assert costs["auto"].cost <= 1.05 * min(costs["5m"].cost, costs["1h"].cost)
    assert costs["auto"].ttl_1h_requests > 0


def test_report_to_dict_has_savings_hit_rates_and_penalties() -> None:
    report = simulate(_session(8), model="anthropic/claude-sonnet-4.5", counter=CHARS, compact_at=14_000,
                      compact=compact_keeping_head)
    data = report.to_dict()
    assert data["model_family"] == "claude-sonnet-4"
    assert set(data["placements"]) == {"none", "system_and_3", "best"}
    assert 0 < data["saving"] < 1 and 0 < data["placements"]["system_and_3"]["hit_rate"] < 1
    assert data["compactions"][0]["penalty"] == pytest.approx(report.compactions[0].penalty)
    assert data["uncompacted"]["cost"] > 0
