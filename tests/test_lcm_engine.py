"""The lossless engine end to end: nothing is lost, facts come back through the tools, every step is valid."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.conversation_strategies import assert_tool_pairs_whole, conversations
from support.lcm_engines import ShortWriter, expand_all, lcm_config, make_lcm_host, summary_nodes, tool

from ctxplug.budgets import compute_budgets
from ctxplug.config import load_config
from ctxplug.engine import EngineContext
from ctxplug.errors import ConfigError, SummaryError
from ctxplug.messages import COMPACTION_MARKER, content_text
from ctxplug.plugins.context_engine.lcm import LcmEngine
from ctxplug.plugins.context_engine.lcm.dag import CUT_NOTE
from ctxplug.registry import load_engine
from ctxplug.summarizer import SummaryRequest, SummaryResult
from ctxplug.tokens import estimate_messages_tokens_rough

FACT = "ZEBRA-7781-QUILL"


def _agent_session(turns: int, fact_turn: int = 2) -> list[dict[str, Any]]:
    """A coding-agent transcript with tool calls; one early tool output holds a fact nobody repeats."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent."},
                                      {"role": "user", "content": "Set up the deployment for the billing service."}]
    for turn in range(turns):
        call = {"id": f"call_{turn}", "type": "function",
                "function": {"name": "terminal", "arguments": json.dumps({"command": f"cat config/part{turn}.ini"})}}
        output = f"[section {turn}]\n" + "\n".join(f"key{i} = value {turn}.{i}" for i in range(60))
        if turn == fact_turn:
            output += f"\ndeploy_token_label = {FACT}\n"
        messages.append({"role": "assistant", "content": f"Reading part {turn}.", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": output})
    messages.append({"role": "assistant", "content": "All parts read."})
    messages.append({"role": "user", "content": "Now deploy it."})
    return messages


def test_a_compacted_fact_is_found_by_grep_and_restored_by_expand(tmp_path: Path) -> None:
    host = make_lcm_host(tmp_path / "lcm.db", context_length=8_000, writer=ShortWriter())
    messages = _agent_session(30)
    before = copy.deepcopy(messages)
    out = host.compress(messages)
    assert messages == before, "the input is never mutated"
    assert host.last_report is not None and host.last_report.changed
    assert FACT not in json.dumps(out), "the fact must have left the context for this test to mean anything"
    hits = tool(host, "lcm_grep", pattern=FACT.split("-")[0])["results"]
    assert [h["role"] for h in hits] == ["tool"]
    assert hits[0]["node"] in summary_nodes(out) or tool(host, "lcm_describe", node=hits[0]["node"])["parent"]
    restored = expand_all(host, hits[0]["node"])
    assert any(FACT in content_text(m) for m in restored)
    by_id = tool(host, "lcm_expand", from_id=hits[0]["id"])
    assert FACT in content_text(by_id["messages"][0]["message"])


def test_compress_leaves_a_report_and_a_marked_summary_with_expand_pointers(tmp_path: Path) -> None:
    host = make_lcm_host(tmp_path / "lcm.db", context_length=8_000, writer=ShortWriter())
    out = host.compress(_agent_session(30))
    report = host.last_report
    assert report is not None and report.outcome == "llm" and report.messages_summarized > 0
    assert report.tokens_after < report.tokens_before <= report.tokens_before
    assert report.tokens_after <= host.threshold_tokens
    (summary,) = [m for m in out if COMPACTION_MARKER in content_text(m)]
    assert content_text(summary).startswith(COMPACTION_MARKER)
    for node in summary_nodes(out):
        assert f'lcm_expand with node "{node}"' in content_text(summary)
    assert out[:2] == _agent_session(30)[:2], "system prompt and first user message stay byte-identical"
    assert_tool_pairs_whole(out)


def test_nothing_to_do_is_reported_as_skipped(tmp_path: Path) -> None:
    host = make_lcm_host(tmp_path / "lcm.db", context_length=200_000, writer=ShortWriter())
    messages = _agent_session(2)
    assert host.compress(messages) is messages
    assert host.last_report is not None and host.last_report.outcome == "skipped"


def test_the_next_compression_continues_from_the_previous_output(tmp_path: Path) -> None:
    host = make_lcm_host(tmp_path / "lcm.db", context_length=8_000, writer=ShortWriter())
    full = _agent_session(60)
    first = host.compress(full[:70])
    second = host.compress(first + full[70:])
    stats = host.engine.store.stats()  # type: ignore[attr-defined]
    assert stats.messages == len(full), "each message stored exactly once across compressions"
    assert len([m for m in second if COMPACTION_MARKER in content_text(m)]) == 1
    assert_tool_pairs_whole(second)
    # a new engine (a restarted agent) over the same file picks up the compressed conversation where it was
    restarted = make_lcm_host(tmp_path / "lcm.db", context_length=8_000, writer=ShortWriter())
    third = restarted.compress([*second, {"role": "assistant", "content": "Deployed."}])
    assert restarted.engine.store.stats().messages == len(full) + 1  # type: ignore[attr-defined]
    assert_tool_pairs_whole(third)


def test_a_retried_turn_is_stored_once(tmp_path: Path) -> None:
    host = make_lcm_host(tmp_path / "lcm.db", context_length=8_000, writer=ShortWriter())
    messages = _agent_session(5)
    host.engine.ingest(messages)  # type: ignore[attr-defined]
    host.engine.ingest(messages)  # type: ignore[attr-defined]
    host.engine.ingest([*messages, {"role": "assistant", "content": "ok"}])  # type: ignore[attr-defined]
    assert host.engine.store.stats().messages == len(messages) + 1  # type: ignore[attr-defined]


def test_different_conversations_get_different_sessions(tmp_path: Path) -> None:
    host = make_lcm_host(tmp_path / "lcm.db", writer=ShortWriter())
    one = _agent_session(3)
    other = [one[0], {"role": "user", "content": "A different task."}, *one[2:]]
    host.engine.ingest(one)  # type: ignore[attr-defined]
    first = host.engine.session  # type: ignore[attr-defined]
    host.engine.ingest(other)  # type: ignore[attr-defined]
    assert host.engine.session != first  # type: ignore[attr-defined]
    hits = tool(host, "lcm_grep", pattern="different")["results"]
    assert len(hits) == 1 and tool(host, "lcm_grep", pattern="billing")["results"] == []




@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=conversations(min_turns=4, max_turns=14),
       odd=st.text(alphabet=st.characters(blacklist_categories=()), max_size=40))
def test_expanding_every_node_returns_exactly_the_original_messages(conversation: list[dict[str, Any]],
                                                                     odd: str) -> None:
    # content with NUL bytes, lone surrogates or any other code point must round-trip as well
    conversation = [*conversation[:-1], {**conversation[-1], "content": odd or "x"}] if conversation else []
    with tempfile.TemporaryDirectory() as folder:
        host = make_lcm_host(Path(folder) / "lcm.db", context_length=4_000, writer=ShortWriter())
        out = host.compress(conversation)
        nodes = summary_nodes(out)
        if not nodes:
            return
        index = next(i for i, m in enumerate(out) if COMPACTION_MARKER in content_text(m))
        expanded = [m for node in nodes for m in expand_all(host, node)]
        assert out[:index] + expanded + out[index + 1:] == conversation
        leaves: list[dict[str, Any]] = []
        pending = list(nodes)
        while pending:
            node = pending.pop(0)
            children = [c["node"] for c in tool(host, "lcm_describe", node=node)["children"]]
            if children:
                pending = children + pending
            else:
                leaves.extend(expand_all(host, node))
        assert leaves == expanded, "the leaves under the roots cover the same messages, in order"


def test_options_are_validated_with_their_key_path(tmp_path: Path) -> None:
    config = lcm_config(tmp_path / "lcm.db")
    budgets = compute_budgets(config, context_length=8_000)
    for options, expected in (({"bogus": 1}, "context.engines.lcm.bogus"),
                              ({"condense_fanin": 1}, "context.engines.lcm.condense_fanin"),
                              ({"synchronous": "fast"}, "normal, full")):
        with pytest.raises(ConfigError, match=expected):
            LcmEngine(EngineContext(name="lcm", config=config, budgets=budgets, options=options))


def test_disabled_compression_stores_but_does_not_compress(tmp_path: Path) -> None:
    config = load_config({"compression": {"enabled": False}, "context": {
        "engine": "lcm", "strict": True, "engines": {"lcm": {"database": str(tmp_path / "lcm.db")}}}})
    host = load_engine(config, context_length=8_000)
    messages = _agent_session(30)
    assert not host.should_compress(10**9)
    assert host.compress(messages) is messages
    assert host.last_report is not None and "disabled" in str(host.last_report.reason)
    assert host.engine.store.message_count(host.engine.session) == len(messages)  # type: ignore[attr-defined]
    assert host.compress(messages, force=True) is not messages, "an explicit forced compression still runs"


class _FailingWriter:
    def write(self, request: SummaryRequest) -> SummaryResult:
        raise SummaryError("the summary model answered 503", kind="server")


class _VerboseWriter:
    def write(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(text="## Goal\n" + "much to say " * 5_000, outcome="llm", calls=1)


def test_a_failing_summary_model_falls_back_to_the_extractive_summary(tmp_path: Path) -> None:
    host = make_lcm_host(tmp_path / "lcm.db", context_length=8_000, writer=_FailingWriter())
    out = host.compress(_agent_session(30))
    report = host.last_report
    assert report is not None and report.outcome == "extractive"
    assert "server: the summary model answered 503" in str(report.error)
    assert "config/part" in content_text(next(m for m in out if COMPACTION_MARKER in content_text(m)))


def test_a_summary_longer_than_its_budget_is_cut_and_the_context_still_fits(tmp_path: Path) -> None:
    host = make_lcm_host(tmp_path / "lcm.db", context_length=8_000, writer=_VerboseWriter())
    out = host.compress(_agent_session(30))
    report = host.last_report
    assert report is not None and report.outcome == "extractive"
    assert CUT_NOTE.strip() in content_text(next(m for m in out if COMPACTION_MARKER in content_text(m)))
    assert report.tokens_after <= host.threshold_tokens


def test_a_compression_that_cannot_shrink_holds_the_trigger_until_the_prompt_grows(tmp_path: Path) -> None:
    host = make_lcm_host(tmp_path / "lcm.db", context_length=8_000, writer=ShortWriter())
    huge_system = {"role": "system", "content": "rules " * 20_000}
    messages = [huge_system, *_agent_session(3)[1:]]
    prompt = host.threshold_tokens * 10
    assert host.should_compress(prompt)
    assert host.compress(messages, current_tokens=prompt) is messages
    assert host.last_report is not None and host.last_report.outcome == "skipped"
    assert not host.should_compress(prompt), "retrying on the very next turn would change nothing"
    assert host.should_compress(prompt + host.threshold_tokens // 10)
    out = host.compress(_agent_session(30), current_tokens=prompt)
    assert out is not messages and host.should_compress(prompt), "an effective compression clears the hold"


def test_what_the_estimate_misses_in_the_real_count_is_made_room_for(tmp_path: Path) -> None:
    plain = make_lcm_host(tmp_path / "a.db", context_length=16_000, writer=ShortWriter())
    with_tools = make_lcm_host(tmp_path / "b.db", context_length=16_000, writer=ShortWriter())
    messages = _agent_session(40)
    estimate = estimate_messages_tokens_rough(messages)
    plain.compress(messages, current_tokens=estimate)
    # the real prompt also carries 3,000 tokens of tool schemas that the messages do not show
    with_tools.compress(messages, current_tokens=estimate + 3_000)
    assert plain.last_report is not None and with_tools.last_report is not None
    assert with_tools.last_report.tokens_after <= with_tools.threshold_tokens - 3_000
    assert with_tools.last_report.tokens_after < plain.last_report.tokens_after
